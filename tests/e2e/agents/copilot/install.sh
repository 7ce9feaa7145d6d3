#!/usr/bin/env bash
# Installs GitHub Copilot CLI (its linux-x64 package: a native binary) into $E2E_CACHE/copilot/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
verify() {
    [[ -x "$PREFIX/node_modules/@github/copilot-linux-x64/copilot" ]] \
        || fail "the copilot linux-x64 binary is missing after install"
}
npm_install copilot @github/copilot@1.0.102
