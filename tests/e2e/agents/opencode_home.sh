# The home OpenCode and its fork Kilo Code CLI run in, offline. Sourced by their launch.sh,
# then:
#
#   opencode_home NAME SCHEMA_URL
#
# checks that ripgrep is on PATH (their glob and grep tools need it), puts HOME and every XDG
# dir (config, data with the session database, cache, state) under $E2E_HOME, and writes
# `$XDG_CONFIG_HOME/NAME/NAME.json` with one provider, the OpenAI chat stand-in at
# $E2E_MODEL_URL, as the model of every session (without a top-level "model" a session
# defaults to an online one). Both npm-install packages in the background whatever their
# flags say: `~/.npmrc` keeps that on loopback, where the stand-in answers 404 and the agent
# carries on.

opencode_home() {
    local name="$1" schema="$2"
    : "${E2E_HOME:?}" "${E2E_MODEL_URL:?}" "${E2E_WORKSPACE:?}"
    command -v rg >/dev/null || { echo "$name launch: ripgrep (rg) is not on PATH" >&2; exit 1; }
    export HOME="$E2E_HOME" XDG_CONFIG_HOME="$E2E_HOME/.config" XDG_CACHE_HOME="$E2E_HOME/.cache" \
        XDG_DATA_HOME="$E2E_HOME/.local/share" XDG_STATE_HOME="$E2E_HOME/.local/state" TMPDIR="$E2E_HOME/tmp"
    mkdir -p "$XDG_CONFIG_HOME/$name" "$XDG_CACHE_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$TMPDIR"
    cat >"$XDG_CONFIG_HOME/$name/$name.json" <<JSON
{ "\$schema": "$schema",
  "model": "fake/fake-model", "small_model": "fake/fake-model",
  "autoupdate": false, "share": "disabled",
  "provider": { "fake": { "npm": "@ai-sdk/openai-compatible", "name": "Fake local",
    "options": { "baseURL": "$E2E_MODEL_URL/v1", "apiKey": "sk-fake" },
    "models": { "fake-model": { "name": "Fake Model", "tool_call": true,
                                "limit": { "context": 128000, "output": 4096 } } } } } }
JSON
    echo "registry=$E2E_MODEL_URL/npm/" >"$HOME/.npmrc"
}
