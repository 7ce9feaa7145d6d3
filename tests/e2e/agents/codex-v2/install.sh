#!/usr/bin/env bash
# codex-v2 runs the codex kit's install ($E2E_CACHE/codex/): the same codex-acp 2.6.0 and
# codex CLI 0.166.0, in another configuration. Its own folder only says it is installed.
set -euo pipefail
bash "$(dirname "$0")/../codex/install.sh" "$@"
if [[ "${1:-}" != "--newest" ]]; then
    mkdir -p "${E2E_CACHE:?}/codex-v2"
    echo "uses ../codex" >"$E2E_CACHE/codex-v2/.installed"
fi
