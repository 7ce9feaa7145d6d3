#!/usr/bin/env bash
# Installs Cline's CLI (its linux-x64 package: a compiled binary) into $E2E_CACHE/cline/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest cline;
# E2E_VERSION_CLINE installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue cline "$@"
verify() {
    "$PREFIX/node_modules/@cline/cli-linux-x64/bin/cline" --version >/dev/null 2>&1 \
        || fail "cline --version fails after install"
}
npm_install cline cline@"$(npm_version cline)"
