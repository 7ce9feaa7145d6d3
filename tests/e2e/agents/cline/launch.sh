#!/usr/bin/env bash
# Cline's CLI in ACP mode, with one provider: the OpenAI chat stand-in at $E2E_MODEL_URL,
# written as `cline auth -p openai-compatible …` writes it. Its home (~/.cline: settings,
# sessions) is under $E2E_HOME. CLINE_SESSION_BACKEND_MODE=local keeps sessions in this
# process instead of a detached hub daemon that would outlive the agent.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix cline)"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$HOME/.cline/data/settings" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
cat >"$HOME/.cline/data/settings/providers.json" <<JSON
{ "version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
  "providers": { "openai-compatible": {
    "settings": { "provider": "openai-compatible", "apiKey": "sk-fake", "model": "fake-model",
                  "baseUrl": "$E2E_MODEL_URL/v1" },
    "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual" } } }
JSON
echo "registry=$E2E_MODEL_URL/npm/" >"$HOME/.npmrc"
export CLINE_API_KEY=sk-fake CLINE_PROVIDER=openai-compatible CLINE_SESSION_BACKEND_MODE=local
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/@cline/cli-linux-x64/bin/cline" --acp
