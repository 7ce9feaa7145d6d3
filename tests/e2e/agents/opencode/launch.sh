#!/usr/bin/env bash
# OpenCode in ACP mode, with one provider: the OpenAI chat stand-in at $E2E_MODEL_URL. Home and
# every XDG dir live under $E2E_HOME (../opencode_home.sh).
set -euo pipefail
AGENTS="$(dirname "$0")/.."
PREFIX="$(. "$AGENTS/npm_install.sh" && npm_prefix opencode)"
. "$AGENTS/opencode_home.sh"
opencode_home opencode "https://opencode.ai/config.json"
export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_SHARE=1 \
    OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/.bin/opencode" acp
