# The npm install every npm kit's install.sh shares. Sourced, then:
#
#   verify() { …checks under "$PREFIX", calling fail on a problem… }   # optional
#   npm_install AGENT PKG@VERSION…
#
# installs the packages into $E2E_CACHE/AGENT/ (PREFIX), idempotently: a stamp holds what was
# installed, and a second run with the same packages does nothing. `verify` runs after a fresh
# install, before the stamp is written, so a broken install is tried again next time.
#
# E2E_NPM_PINS="name@version …" replaces the pinned version of each package it names (e.g.
# `@github/copilot@latest`), so a run can try newer versions than the kit pins; use another
# ACP_PROXY_E2E_CACHE for such runs, or the pinned install is replaced.

fail() { echo "e2e install ${AGENT:-?}: $*" >&2; exit 1; }

# The package's name without its version: `@scope/name@1.2` -> `@scope/name`.
npm_pkg_name() {
    local spec="$1"
    if [[ "$spec" == @* ]]; then
        echo "@$(cut -d@ -f2 <<<"$spec")"
    else
        echo "${spec%%@*}"
    fi
}

npm_install() {
    AGENT="$1"
    shift
    local pkgs=() spec name pin
    for spec in "$@"; do
        name="$(npm_pkg_name "$spec")"
        for pin in ${E2E_NPM_PINS:-}; do
            [[ "$(npm_pkg_name "$pin")" == "$name" ]] && spec="$pin"
        done
        pkgs+=("$spec")
    done
    PREFIX="${E2E_CACHE:?E2E_CACHE is not set}/$AGENT"
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
