#!/usr/bin/env bash
# The codex kit's agent (its install, its configuration) with multi-agent V2 turned on.
set -euo pipefail
CODEX_MULTI_AGENT_V2=1 exec bash "$(dirname "$0")/../codex/launch.sh"
