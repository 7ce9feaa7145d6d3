#!/usr/bin/env bash
# Installs OpenCode (npm ships it as a compiled binary) into $E2E_CACHE/opencode/.
# Its glob and grep tools need ripgrep on PATH; without it they try to download one and fail.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest opencode-ai;
# E2E_VERSION_OPENCODE installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue opencode-ai "$@"
AGENT=opencode
command -v rg >/dev/null || fail "ripgrep (rg) is not on PATH; install it (Debian: apt-get install ripgrep)"
verify() {
    "$PREFIX/node_modules/.bin/opencode" --version >/dev/null 2>&1 || fail "opencode --version fails after install"
}
npm_install opencode opencode-ai@"$(npm_version opencode)"
