#!/usr/bin/env bash
# claude-agent-acp 0.23.1 (Claude Code 2.1.83 inside) on stdin/stdout, talking to the Anthropic
# stand-in at $E2E_MODEL_URL with a fake key; home, config and caches under $E2E_HOME
# (../claude_home.sh).
set -euo pipefail
AGENTS="$(dirname "$0")/.."
PREFIX="$(. "$AGENTS/npm_install.sh" && npm_prefix claude-legacy)"
. "$AGENTS/claude_home.sh"
claude_home "$PREFIX"
cd "${E2E_WORKSPACE:?}"
exec node "$PREFIX/node_modules/@zed-industries/claude-agent-acp/dist/index.js"
