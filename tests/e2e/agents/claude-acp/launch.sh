#!/usr/bin/env bash
# claude-agent-acp 0.101.0 (Claude Code as the SDK's native binary) on stdin/stdout, talking to the Anthropic
# stand-in at $E2E_MODEL_URL with a fake key; home, config and caches under $E2E_HOME
# (../claude_home.sh).
set -euo pipefail
AGENTS="$(dirname "$0")/.."
PREFIX="$(. "$AGENTS/npm_install.sh" && npm_prefix claude-acp)"
. "$AGENTS/claude_home.sh"
claude_home "$PREFIX"
cd "${E2E_WORKSPACE:?}"
exec node "$PREFIX/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js"
