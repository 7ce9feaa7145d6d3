#!/usr/bin/env bash
# Installs GitHub Copilot CLI (its linux-x64 package: a native binary) into $E2E_CACHE/copilot/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @github/copilot;
# E2E_VERSION_COPILOT installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @github/copilot "$@"
verify() {
    [[ -x "$PREFIX/node_modules/@github/copilot-linux-x64/copilot" ]] \
        || fail "the copilot linux-x64 binary is missing after install"
}
npm_install copilot @github/copilot@"$(npm_version copilot)"
