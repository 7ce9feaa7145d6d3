#!/usr/bin/env bash
# Factory Droid in ACP mode (`droid exec --output-format acp`), air-gapped, with one custom
# model: the OpenAI chat stand-in at $E2E_MODEL_URL. Its home (settings, sessions) is $E2E_HOME.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix droid)"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$HOME/.factory" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
cat >"$HOME/.factory/settings.json" <<JSON
{ "customModels": [ { "model": "fake-model", "displayName": "Fake Model",
    "baseUrl": "$E2E_MODEL_URL/v1", "apiKey": "sk-fake",
    "provider": "generic-chat-completion-api", "maxOutputTokens": 4096 } ] }
JSON
export FACTORY_AIRGAP_ENABLED=true
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/@factory/cli-linux-x64/bin/droid" exec --output-format acp \
    -m custom:fake-model --skip-permissions-unsafe
