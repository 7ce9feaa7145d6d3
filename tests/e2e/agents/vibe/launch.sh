#!/usr/bin/env bash
# Mistral Vibe in ACP mode (`vibe-acp`), offline: its default provider (`mistral`, the Mistral
# backend) and default model, with the provider's api_base pointed at the stand-in at
# $E2E_MODEL_URL. VIBE_HOME (config, sessions, logs) lives under $E2E_HOME.
set -euo pipefail
VERSION="${E2E_VERSION_VIBE:-3.0.3}"
VENV="${E2E_CACHE:?}/vibe/$VERSION/venv"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp" \
    VIBE_HOME="$E2E_HOME/.vibe"
mkdir -p "$VIBE_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
cat >"$VIBE_HOME/config.toml" <<TOML
enable_telemetry = false
enable_otel = false
enable_update_checks = false
enable_auto_update = false
experimental_enable_model_catalog = false

[[providers]]
name = "mistral"
api_base = "$E2E_MODEL_URL/v1"
api_key_env_var = "MISTRAL_API_KEY"
backend = "mistral"
TOML
export MISTRAL_API_KEY=sk-fake PYTHONWARNINGS=ignore PYTHONDONTWRITEBYTECODE=1
cd "$E2E_WORKSPACE"
exec "$VENV/bin/vibe-acp"
