#!/usr/bin/env bash
# AgentPool's ACP server with a pool of three agents whose models are the scripted
# FunctionModels in model.py (imported by agentpool: no model server). Home, history database
# and logs live under $E2E_HOME.
set -euo pipefail
KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION="${E2E_VERSION_AGENTPOOL:-2.9.18}"
VENV="${E2E_CACHE:?}/agentpool/venv"
[[ "$VERSION" == 2.9.18 ]] || VENV="$E2E_CACHE/agentpool/versions/$VERSION/venv"
: "${E2E_HOME:?}" "${E2E_WORKSPACE:?}"
export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
    XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
# `main` delegates with the `task` tool (toolset `subagent`); the children read the project
# with the file_access toolset. The children are named after the scenario's task tags.
cat >"$E2E_HOME/agentpool.yml" <<YAML
default_agent: main
agents:
  main:
    model: {type: import, model: model.MAIN}
    tools: [{type: subagent}]
  alpha:
    description: Surveys the project's text files.
    model: {type: import, model: model.CHILD}
    tools: [{type: file_access}]
  beta:
    description: Surveys the project's text files.
    model: {type: import, model: model.CHILD}
    tools: [{type: file_access}]
YAML
export PYTHONPATH="$KIT${PYTHONPATH:+:$PYTHONPATH}"
export LOGFIRE_SEND_TO_LOGFIRE=false DO_NOT_TRACK=1 PYTHONWARNINGS=ignore PYTHONDONTWRITEBYTECODE=1
cd "$E2E_WORKSPACE"
exec "$VENV/bin/agentpool" serve-acp "$E2E_HOME/agentpool.yml"
