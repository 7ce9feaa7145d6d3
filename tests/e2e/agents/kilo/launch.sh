#!/usr/bin/env bash
# Kilo Code CLI in ACP mode, with one provider (OpenCode's config format, in kilo.json): the
# OpenAI chat stand-in at $E2E_MODEL_URL. Home and every XDG dir live under $E2E_HOME.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix kilo)"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
command -v rg >/dev/null || { echo "kilo launch: ripgrep (rg) is not on PATH" >&2; exit 1; }
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$XDG_CONFIG_HOME/kilo" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
# Without a top-level "model" a session defaults to an online model.
cat >"$XDG_CONFIG_HOME/kilo/kilo.json" <<JSON
{ "\$schema": "https://app.kilo.ai/config.json",
  "model": "fake/fake-model", "small_model": "fake/fake-model",
  "autoupdate": false, "share": "disabled",
  "provider": { "fake": { "npm": "@ai-sdk/openai-compatible", "name": "Fake local",
    "options": { "baseURL": "$E2E_MODEL_URL/v1", "apiKey": "sk-fake" },
    "models": { "fake-model": { "name": "Fake Model", "tool_call": true,
                                "limit": { "context": 128000, "output": 4096 } } } } } }
JSON
# Any npm lookup stays on loopback, where the stand-in answers 404 and Kilo carries on.
echo "registry=$E2E_MODEL_URL/npm/" >"$HOME/.npmrc"
export KILO_DISABLE_MODELS_FETCH=1 KILO_DISABLE_AUTOUPDATE=1 KILO_DISABLE_SHARE=1 \
    KILO_DISABLE_LSP_DOWNLOAD=1 KILO_DISABLE_DEFAULT_PLUGINS=1 KILO_DISABLE_SESSION_INGEST=1 \
    KILO_TELEMETRY_LEVEL=off
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/@kilocode/cli-linux-x64/bin/kilo" acp
