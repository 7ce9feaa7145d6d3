#!/usr/bin/env bash
# Runs one agent kit by hand, offline, behind the real proxy, driven by zed_client.py:
#   tests/e2e/tools/run_kit.sh AGENT SCENARIO [OUT_DIR]
# Everything runs in a fresh network namespace with only loopback up (needs root). OUT_DIR
# (default: a new temp dir) gets the proxy's dump, its store, the client's trace and summary,
# the stand-in's log and the agent's stderr. Env: E2E_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/acp-proxy-e2e), PROXY (default target/debug/acp-proxy),
# CLIENT_ARGS (extra zed_client.py options), DIRECT=1 to run the agent without the proxy.
set -euo pipefail
AGENT=${1:?usage: run_kit.sh AGENT SCENARIO [OUT_DIR]}
SCENARIO=${2:?usage: run_kit.sh AGENT SCENARIO [OUT_DIR]}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
KIT="$ROOT/tests/e2e/agents/$AGENT"
[[ -d "$KIT" ]] || { echo "run_kit: no kit $KIT" >&2; exit 2; }
OUT="${3:-$(mktemp -d "/tmp/e2e-$AGENT-$SCENARIO.XXXXXX")}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
export E2E_CACHE="${E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/acp-proxy-e2e}"
PROXY="${PROXY:-$ROOT/target/debug/acp-proxy}"

if [[ "${RUN_KIT_INSIDE:-}" != 1 ]]; then
    exec unshare -n env RUN_KIT_INSIDE=1 bash "$0" "$AGENT" "$SCENARIO" "$OUT"
fi
ip link set lo up

export E2E_WORKSPACE="$OUT/project" E2E_HOME="$OUT/home"
rm -rf "$E2E_WORKSPACE" "$E2E_HOME"
mkdir -p "$E2E_WORKSPACE" "$E2E_HOME"
echo "hello from a" >"$E2E_WORKSPACE/a.txt"
echo "hello from b" >"$E2E_WORKSPACE/b.txt"

MODEL_PID=
cleanup() { [[ -n "$MODEL_PID" ]] && kill "$MODEL_PID" 2>/dev/null; true; }
trap cleanup EXIT
if grep -q '^model_server *= *true' "$KIT/kit.toml"; then
    rm -f "$OUT/port"
    python3 "$KIT/model.py" --scenario "$SCENARIO" --workspace "$E2E_WORKSPACE" \
        --port-file "$OUT/port" --log-dir "$OUT/model-requests" 2>"$OUT/model.log" &
    MODEL_PID=$!
    for _ in $(seq 100); do [[ -s "$OUT/port" ]] && break; sleep 0.1; done
    [[ -s "$OUT/port" ]] || { echo "run_kit: the $AGENT stand-in did not start:" >&2; cat "$OUT/model.log" >&2; exit 1; }
    export E2E_MODEL_URL="http://127.0.0.1:$(cat "$OUT/port")"
fi

if [[ "${DIRECT:-}" == 1 ]]; then
    CMD=(bash "$KIT/launch.sh")
else
    rm -f "$OUT/dump.jsonl" "$OUT/store.sqlite"
    CMD=("$PROXY" --dump "$OUT/dump.jsonl" --store "$OUT/store.sqlite" -- bash "$KIT/launch.sh")
fi
set +e
# shellcheck disable=SC2086
python3 "$ROOT/tests/e2e/tools/zed_client.py" --workspace "$E2E_WORKSPACE" --scenario "$SCENARIO" \
    --trace "$OUT/client.jsonl" --stderr "$OUT/agent.stderr" ${CLIENT_ARGS:-} -- "${CMD[@]}" >"$OUT/summary.json"
rc=$?
set -e
echo "run_kit: $AGENT $SCENARIO rc=$rc out=$OUT" >&2
exit $rc
