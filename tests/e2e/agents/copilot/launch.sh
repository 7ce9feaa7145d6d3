#!/usr/bin/env bash
# GitHub Copilot CLI in ACP mode, in its documented bring-your-own-key offline mode: the model
# is the OpenAI chat stand-in at $E2E_MODEL_URL, no login. Its home (COPILOT_HOME: config,
# session state) is under $E2E_HOME. On its first run the binary unpacks its JS bundle into
# COPILOT_PKG_CACHE_HOME (~235 MB): that is kept in the install cache, shared between runs.
set -euo pipefail
PREFIX="$(. "$(dirname "$0")/../npm_install.sh" && npm_prefix copilot)"
: "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR" "$PREFIX/pkg-cache"
export COPILOT_HOME="$E2E_HOME/.copilot" COPILOT_PKG_CACHE_HOME="$PREFIX/pkg-cache" \
    COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL="$E2E_MODEL_URL/v1" COPILOT_PROVIDER_API_KEY=sk-fake \
    COPILOT_MODEL=gpt-4.1 COPILOT_AUTO_UPDATE=false COPILOT_ALLOW_ALL=true
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/@github/copilot-linux-x64/copilot" --acp --no-auto-update --disable-builtin-mcps
