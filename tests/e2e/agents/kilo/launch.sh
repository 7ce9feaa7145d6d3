#!/usr/bin/env bash
# Kilo Code CLI in ACP mode, with one provider (OpenCode's config format, in kilo.json): the
# OpenAI chat stand-in at $E2E_MODEL_URL. Home and every XDG dir live under $E2E_HOME
# (../opencode_home.sh).
set -euo pipefail
AGENTS="$(dirname "$0")/.."
PREFIX="$(. "$AGENTS/npm_install.sh" && npm_prefix kilo)"
. "$AGENTS/opencode_home.sh"
opencode_home kilo "https://app.kilo.ai/config.json"
export KILO_DISABLE_MODELS_FETCH=1 KILO_DISABLE_AUTOUPDATE=1 KILO_DISABLE_SHARE=1 \
    KILO_DISABLE_LSP_DOWNLOAD=1 KILO_DISABLE_DEFAULT_PLUGINS=1 KILO_DISABLE_SESSION_INGEST=1 \
    KILO_TELEMETRY_LEVEL=off
cd "$E2E_WORKSPACE"
exec "$PREFIX/node_modules/@kilocode/cli-linux-x64/bin/kilo" acp
