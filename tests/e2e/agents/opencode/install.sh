#!/usr/bin/env bash
# Installs OpenCode (npm ships it as a compiled binary) into $E2E_CACHE/opencode/.
# Its glob and grep tools need ripgrep on PATH; without it they try to download one and fail.
set -euo pipefail
AGENT=opencode
PKGS=(opencode-ai@1.18.33)
PREFIX="${E2E_CACHE:?E2E_CACHE is not set}/$AGENT"
STAMP="$PREFIX/.installed"
WANT="${PKGS[*]}"
fail() { echo "e2e install $AGENT: $*" >&2; exit 1; }
command -v rg >/dev/null || fail "ripgrep (rg) is not on PATH; install it (Debian: apt-get install ripgrep)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    exit 0
fi
command -v npm >/dev/null || fail "npm is not on PATH (needed to fetch ${PKGS[*]})"
mkdir -p "$PREFIX"
# A package.json of its own keeps npm from walking up into some other project.
[[ -f "$PREFIX/package.json" ]] || echo '{"private":true}' >"$PREFIX/package.json"
# Bounded retries: an unreachable registry fails the install in seconds, not minutes.
npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact --fetch-retries=2 \
    --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 "${PKGS[@]}" >"$PREFIX/install.log" 2>&1 \
    || fail "npm install ${PKGS[*]} failed; see $PREFIX/install.log: $(tail -n 5 "$PREFIX/install.log")"
"$PREFIX/node_modules/.bin/opencode" --version >/dev/null 2>&1 || fail "opencode --version fails after install"
echo "$WANT" >"$STAMP"
