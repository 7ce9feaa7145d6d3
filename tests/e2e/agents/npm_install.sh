# The npm install every npm kit's install.sh shares, and where its launch.sh finds it. Sourced,
# then:
#
#   npm_newest_or_continue PKG "$@"   # `install.sh --newest`: print npm's newest PKG, exit
#   verify() { …checks under "$PREFIX", calling fail on a problem… }   # optional
#   npm_install AGENT PKG@"$(npm_version AGENT)" OTHER@VERSION…
#
# installs the packages into `npm_prefix AGENT`, idempotently: a stamp holds what was
# installed, and a second run with the same packages does nothing. `verify` runs after a fresh
# install, before the stamp is written, so a broken install is tried again next time.
#
# The package a kit follows is the one pinned at its kit.toml `version`. E2E_VERSION_<KIT>
# (`E2E_VERSION_CLAUDE_ACP` for `claude-acp`; scripts/e2e.sh --latest sets it) names another
# version of it: `npm_version` gives it, and `npm_prefix` is then a folder of that version's
# own, `$E2E_CACHE/AGENT/versions/VERSION/`, so the pinned install in `$E2E_CACHE/AGENT/`
# is never replaced. launch.sh runs what `npm_prefix` names.

fail() { echo "e2e install ${AGENT:-?}: $*" >&2; exit 1; }

# The pinned version: the kit's kit.toml `version`.
npm_pinned() {
    sed -n 's/^version *= *"\(.*\)"/\1/p' "$(dirname "${BASH_SOURCE[0]}")/$1/kit.toml"
}

# The version to run: E2E_VERSION_<KIT> if set, else the pinned one.
npm_version() {
    local var="${1^^}"
    var="E2E_VERSION_${var//-/_}"
    if [[ -n "${!var:-}" ]]; then echo "${!var}"; else npm_pinned "$1"; fi
}

# Where the version to run is installed.
npm_prefix() {
    local version
    version="$(npm_version "$1")"
    if [[ "$version" == "$(npm_pinned "$1")" ]]; then
        echo "${E2E_CACHE:?E2E_CACHE is not set}/$1"
    else
        echo "${E2E_CACHE:?E2E_CACHE is not set}/$1/versions/$version"
    fi
}

# `install.sh --newest`: print the newest version of PKG the npm registry serves.
npm_newest_or_continue() {
    local pkg="$1"
    shift
    [[ "${1:-}" == "--newest" ]] || return 0
    command -v npm >/dev/null || fail "npm is not on PATH (needed to ask for $pkg's newest version)"
    npm view "$pkg" version 2>/dev/null | grep . || fail "cannot ask npm for $pkg's newest version"
    exit 0
}

npm_install() {
    AGENT="$1"
    shift
    local pkgs=("$@")
    PREFIX="$(npm_prefix "$AGENT")"
    local stamp="$PREFIX/.installed" want="${pkgs[*]}"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    command -v npm >/dev/null || fail "npm is not on PATH (needed to fetch ${pkgs[*]})"
    mkdir -p "$PREFIX"
    # A package.json of its own keeps npm from walking up into some other project.
    [[ -f "$PREFIX/package.json" ]] || echo '{"private":true}' >"$PREFIX/package.json"
    # Bounded retries: an unreachable registry fails the install in seconds, not minutes.
    npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact --fetch-retries=2 \
        --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 "${pkgs[@]}" >"$PREFIX/install.log" 2>&1 \
        || fail "npm install ${pkgs[*]} failed; see $PREFIX/install.log: $(tail -n 5 "$PREFIX/install.log")"
    if declare -F verify >/dev/null; then
        verify
    fi
    echo "$want" >"$stamp"
}
