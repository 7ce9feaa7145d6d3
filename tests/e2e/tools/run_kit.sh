#!/usr/bin/env bash
# Runs one agent kit by hand, offline, behind the real proxy, driven by the suite's Zed client
# (one run of the e2e suite, as Zed's main branch, with its checks: tests/e2e/by_hand.rs):
#   tests/e2e/tools/run_kit.sh AGENT SCENARIO [OUT_DIR]
# It builds the proxy and the e2e tests (cargo), then runs in a fresh network namespace with
# only loopback up (root, or unprivileged user namespaces). OUT_DIR (default: a new temp dir;
# else a new or empty one) keeps the project, the agent's home, the proxy's dumps
# (dump-live.jsonl, and dump-reopen.jsonl of a second proxy reopening the parent), its store
# (store.sqlite3), the client's transcripts (client-*.jsonl) and summary (summary.json: the
# verdict, each failed check, what Zed showed), the stand-in's log and requests (model.log,
# requests/) and the proxy's and agent's stderr (stderr-*.log). Exits non-zero when the run
# failed. Env: E2E_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/acp-proxy-e2e), PROXY (another
# acp-proxy binary than the one cargo builds), ZED=1.18 (play Zed 1.18), DIRECT=1 (the agent
# without the proxy: the run passes when the turn ended with MAIN-DONE).
set -euo pipefail
AGENT=${1:?usage: run_kit.sh AGENT SCENARIO [OUT_DIR]}
SCENARIO=${2:?usage: run_kit.sh AGENT SCENARIO [OUT_DIR]}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
[[ -d "$ROOT/tests/e2e/agents/$AGENT" ]] || { echo "run_kit: no kit tests/e2e/agents/$AGENT" >&2; exit 2; }
OUT="${3:-$(mktemp -d "/tmp/e2e-$AGENT-$SCENARIO.XXXXXX")}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
export E2E_CACHE="${E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/acp-proxy-e2e}"
netns=(unshare --net)
if [[ "$(id -u)" != 0 ]]; then netns=(unshare --map-root-user --net); fi

cd "$ROOT"
# Built outside the namespace, where the registry is reachable; inside it cargo only runs.
cargo test --locked --quiet --test e2e --no-run
set +e
RUN_KIT_AGENT="$AGENT" RUN_KIT_SCENARIO="$SCENARIO" RUN_KIT_OUT="$OUT" RUN_KIT_ZED="${ZED:-main}" \
    RUN_KIT_DIRECT="${DIRECT:-}" RUN_KIT_PROXY="${PROXY:-}" "${netns[@]}" bash -c \
    'ip link set lo up && exec cargo test --locked --offline --quiet --test e2e -- --ignored --exact --nocapture by_hand::run_kit'
rc=$?
set -e
echo "run_kit: $AGENT $SCENARIO rc=$rc out=$OUT" >&2
exit $rc
