#!/usr/bin/env bash
# Installs Factory Droid (its linux-x64 package: a compiled binary) into $E2E_CACHE/droid/.
# The `@factory/cli` 0.225.x wrapper pins a platform package the registry does not serve, so
# the kit installs the platform package itself.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @factory/cli-linux-x64;
# E2E_VERSION_DROID installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @factory/cli-linux-x64 "$@"
verify() {
    "$PREFIX/node_modules/@factory/cli-linux-x64/bin/droid" --version >/dev/null 2>&1 \
        || fail "droid --version fails after install"
}
npm_install droid @factory/cli-linux-x64@"$(npm_version droid)"
