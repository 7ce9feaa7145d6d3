#!/usr/bin/env bash
# fast-agent as an ACP server (`fast-agent-acp`), offline: its `generic` provider (any OpenAI
# chat-completions endpoint) pointed at the stand-in at $E2E_MODEL_URL. Its home (sessions,
# logs) and config live under $E2E_HOME.
set -euo pipefail
VERSION="${E2E_VERSION_FAST_AGENT:-0.10.48}"
VENV="${E2E_CACHE:?}/fast-agent/$VERSION/venv"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR" \
    "$E2E_HOME/fast-agent"
cat >"$E2E_HOME/fast-agent.yaml" <<YAML
default_model: generic.fake-model
generic:
  api_key: sk-fake
  base_url: $E2E_MODEL_URL/v1
logger:
  progress_display: false
  show_chat: false
  show_tools: false
YAML
export PYTHONWARNINGS=ignore PYTHONDONTWRITEBYTECODE=1 DO_NOT_TRACK=1
cd "$E2E_WORKSPACE"
exec "$VENV/bin/fast-agent-acp" -c "$E2E_HOME/fast-agent.yaml" --home "$E2E_HOME/fast-agent" --shell --subagents
