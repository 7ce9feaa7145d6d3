#!/usr/bin/env bash
# claude-agent-acp 0.49.0 on stdin/stdout with node 20 (from npm), talking to the Anthropic
# stand-in at $E2E_MODEL_URL with a fake key; home, config and caches under $E2E_HOME
# (../claude_home.sh).
set -euo pipefail
PREFIX="${E2E_CACHE:?}/claude-node20"
. "$(dirname "$0")/../claude_home.sh"
claude_home "$PREFIX"
cd "${E2E_WORKSPACE:?}"
exec node "$PREFIX/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js"
