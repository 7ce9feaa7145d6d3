#!/usr/bin/env bash
# OpenCode in ACP mode, with one provider: the OpenAI chat stand-in at $E2E_MODEL_URL. Home and
# every XDG dir (config, data with the session database, cache, state) live under $E2E_HOME.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix opencode)"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
command -v rg >/dev/null || { echo "opencode launch: ripgrep (rg) is not on PATH" >&2; exit 1; }
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$XDG_CONFIG_HOME/opencode" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
# Without a top-level "model" a session defaults to an online model.
cat >"$XDG_CONFIG_HOME/opencode/opencode.json" <<JSON
{ "\$schema": "https://opencode.ai/config.json",
  "model": "fake/fake-model", "small_model": "fake/fake-model",
  "autoupdate": false, "share": "disabled",
  "provider": { "fake": { "npm": "@ai-sdk/openai-compatible", "name": "Fake local",
    "options": { "baseURL": "$E2E_MODEL_URL/v1", "apiKey": "sk-fake" },
    "models": { "fake-model": { "name": "Fake Model", "tool_call": true,
                                "limit": { "context": 128000, "output": 4096 } } } } } }
JSON
# OpenCode npm-installs a plugin package in the background whatever the flags say: keep that
# on loopback, where the stand-in answers 404 and OpenCode carries on.
echo "registry=$E2E_MODEL_URL/npm/" >"$HOME/.npmrc"
export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_SHARE=1 \
    OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/.bin/opencode" acp
