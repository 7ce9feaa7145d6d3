#!/usr/bin/env bash
# Installs Kilo Code CLI (npm ships it as a compiled binary, OpenCode's) into $E2E_CACHE/kilo/.
# Its glob and grep tools need ripgrep on PATH. 7.7.7: 7.8.1's linux-x64 package is missing
# from the registry.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @kilocode/cli;
# E2E_VERSION_KILO installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @kilocode/cli "$@"
AGENT=kilo
command -v rg >/dev/null || fail "ripgrep (rg) is not on PATH; install it (Debian: apt-get install ripgrep)"
verify() {
    "$PREFIX/node_modules/@kilocode/cli-linux-x64/bin/kilo" --version >/dev/null 2>&1 \
        || fail "kilo --version fails after install"
}
npm_install kilo @kilocode/cli@"$(npm_version kilo)"
