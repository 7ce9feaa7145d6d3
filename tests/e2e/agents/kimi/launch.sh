#!/usr/bin/env bash
# Kimi Code CLI in ACP mode (`kimi acp`, as Zed's agent settings run it), offline: its default
# provider type (`kimi`, the OpenAI chat-completions dialect of Moonshot's API) pointed at the
# stand-in at $E2E_MODEL_URL. Home, config, sessions and logs live under $E2E_HOME/.kimi.
set -euo pipefail
VERSION="${E2E_VERSION_KIMI:-1.51.0}"
VENV="${E2E_CACHE:?}/kimi/$VERSION/venv"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$HOME/.kimi/credentials" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" \
    "$XDG_STATE_HOME" "$TMPDIR"
cat >"$HOME/.kimi/config.toml" <<TOML
default_model = "scripted"
telemetry = false

[providers.local]
type = "kimi"
base_url = "$E2E_MODEL_URL/v1"
api_key = "sk-fake"

[models.scripted]
provider = "local"
model = "fake-model"
max_context_size = 128000
TOML
# `kimi acp` refuses session/new (AUTH_REQUIRED) unless a Kimi Code login token is on file,
# whichever provider the config names; the token is never sent to the stand-in's provider.
cat >"$HOME/.kimi/credentials/kimi-code.json" <<JSON
{"access_token": "offline", "refresh_token": "", "expires_at": 0, "scope": "", "token_type": "Bearer"}
JSON
export KIMI_DISABLE_TELEMETRY=1 KIMI_CLI_NO_AUTO_UPDATE=1 PYTHONWARNINGS=ignore PYTHONDONTWRITEBYTECODE=1
cd "$E2E_WORKSPACE"
exec "$VENV/bin/kimi" acp
