#!/usr/bin/env bash
# End-to-end tests with real agents (tests/e2e/README.md): install each agent kit at its pinned
# version (once; the cache is reused), build the proxy and the e2e test binary, then run the
# agents' tests offline, in a network namespace where only loopback is up.
#
#   scripts/e2e.sh                 every kit under tests/e2e/agents/
#   scripts/e2e.sh codex qwen      only these
#   scripts/e2e.sh --latest [AGENT...]
#                                  the same against the newest versions the registries serve,
#                                  then a matrix: agent, pinned, newest, verdict per check.
#                                  Kits whose install.sh answers `--newest` (and installs what
#                                  E2E_VERSION_<KIT> names into a folder of that version's own:
#                                  the npm kits through agents/npm_install.sh, the PyPI ones
#                                  through tools/pyvenv.sh) take part; the others are listed as
#                                  not followed, a newest version that fails to install as such.
#                                  A tool for maintainers, not part of CI.
#   scripts/e2e.sh acpx            a client in front of the kits it uses (tests/e2e/clients/)
#
# Environment:
#   ACP_PROXY_E2E_CACHE   where the agents are installed
#                         (default ${XDG_CACHE_HOME:-$HOME/.cache}/acp-proxy-e2e)
#   E2E_JOBS              agents run in parallel (default 2)
#   E2E_RELAY=cat         replace the proxy with a plain `cat` relay: every test must fail
#   E2E_KEEP=1, E2E_SHOW=1  keep every run's folder / print what Zed showed for every run
#   E2E_STANDARD_SCENARIOS=all  the standard client runs every scenario (default: `two`)
# Needs: npm (installs), python3 (the model stand-ins), unshare and ip (util-linux,
# iproute2), root or unprivileged user namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."

kits_dir=tests/e2e/agents
# Real clients other than Zed (tests/e2e/clients.rs), each run in front of these kits.
clients_dir=tests/e2e/clients
client_kits=(claude-legacy gemini)
export E2E_CACHE="${ACP_PROXY_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/acp-proxy-e2e}"
jobs="${E2E_JOBS:-2}"

fail() { echo "e2e: $*" >&2; exit 1; }

latest=0
if [ "${1:-}" = "--latest" ]; then latest=1; shift; fi

all=()
for d in "$kits_dir"/*/; do all+=("$(basename "$d")"); done
all_clients=()
for d in "$clients_dir"/*/; do all_clients+=("$(basename "$d")"); done
agents=()
clients=()
if [ "$#" -gt 0 ]; then
  for a in "$@"; do
    if [ -f "$clients_dir/$a/install.sh" ]; then clients+=("$a"); else agents+=("$a"); fi
  done
else
  agents=("${all[@]}")
  clients=("${all_clients[@]}")
fi
# A client's tests need the kits it runs in front of (installed; their own tests run only if
# asked for).
tested_kits=("${agents[@]}")
if [ "${#clients[@]}" -gt 0 ]; then
  for k in "${client_kits[@]}"; do
    [[ " ${agents[*]} " == *" $k "* ]] || agents+=("$k")
  done
fi
for a in "${agents[@]}"; do
  [ -f "$kits_dir/$a/kit.toml" ] || fail "no agent kit or client \`$a\` (kits: ${all[*]}; clients: ${all_clients[*]})"
done

# --latest: each following kit's newest version, into E2E_VERSION_<KIT> (install.sh and
# launch.sh read it); the pinned version is kit.toml's.
version_var() { local v="${1^^}"; echo "E2E_VERSION_${v//-/_}"; }
pinned_version() { sed -n 's/^version *= *"\(.*\)"/\1/p' "$kits_dir/$1/kit.toml"; }
declare -A newest=()
if [ "$latest" = 1 ]; then
  followed=()
  for a in "${agents[@]}"; do
    if ! grep -q -- '--newest' "$kits_dir/$a/install.sh"; then
      newest[$a]="(not followed)"
      continue
    fi
    v="$(bash "$kits_dir/$a/install.sh" --newest)" || fail "cannot ask the registry for $a's newest version"
    newest[$a]="$v"
    export "$(version_var "$a")=$v"
    followed+=("$a")
  done
  [ "${#followed[@]}" -gt 0 ] || fail "none of ${agents[*]} follows the registry (install.sh --newest)"
  unfollowed=()
  for a in "${agents[@]}"; do [[ " ${followed[*]} " == *" $a "* ]] || unfollowed+=("$a"); done
  agents=("${followed[@]}")
  tested_kits=("${followed[@]}")
fi

for tool in unshare ip python3; do
  command -v "$tool" >/dev/null || fail "\`$tool\` is not on PATH (Debian: apt-get install util-linux iproute2 python3)"
done
# A network namespace (only loopback) and a PID namespace: whatever an agent leaves running
# dies with the test binary. bash stays the namespace's init, so orphans are reaped.
netns=(unshare --net --pid --fork --mount-proc)
if [ "$(id -u)" != 0 ]; then netns=(unshare --map-root-user --net --pid --fork --mount-proc); fi
"${netns[@]}" true 2>/dev/null \
  || fail "cannot create a network namespace with \`${netns[*]}\` (run as root, or enable unprivileged user namespaces)"

# Installs, in parallel: each kit's install.sh is idempotent and says what went wrong.
echo "== e2e: installing ${agents[*]} ${clients[*]} into $E2E_CACHE"
mkdir -p "$E2E_CACHE"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
pids=()
installs=("${agents[@]}" "${clients[@]}")
for a in "${installs[@]}"; do
  (
    start=$SECONDS
    dir="$kits_dir/$a"
    [ -f "$dir/install.sh" ] || dir="$clients_dir/$a"
    if bash "$dir/install.sh" >"$logs/$a.log" 2>&1; then
      echo "   $a: ready ($((SECONDS - start)) s)"
    else
      echo "   $a: INSTALL FAILED"
      exit 1
    fi
  ) &
  pids+=("$!")
done
failed=()
for i in "${!installs[@]}"; do
  wait "${pids[$i]}" || failed+=("${installs[$i]}")
done
for a in "${failed[@]}"; do
  echo "--- install of $a failed:" >&2
  tail -n 20 "$logs/$a.log" >&2
done
install_failed=()
if [ "$latest" = 1 ] && [ "${#failed[@]}" -gt 0 ]; then
  # A newest version that does not install is a verdict of its own: the matrix says so, the
  # other kits run.
  install_failed=("${failed[@]}")
  kept=()
  for a in "${agents[@]}"; do [[ " ${failed[*]} " == *" $a "* ]] || kept+=("$a"); done
  agents=("${kept[@]}")
  tested_kits=("${kept[@]}")
  failed=()
fi
[ "${#failed[@]}" -eq 0 ] || fail "install failed for: ${failed[*]}"

echo "== e2e: building the proxy and the e2e tests"
cargo build --locked --bins
cargo test --locked --test e2e --no-run
bin="$(cargo test --locked --test e2e --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "e2e" and m.get("executable"):
        print(m["executable"])')"
[ -x "$bin" ] || fail "could not build the e2e test binary (cargo test --test e2e --no-run)"

# One test per kit (tests/e2e/main.rs); a kit without one would pass by running nothing.
listed="$("$bin" --ignored --list 2>/dev/null)"
tests=()
for a in "${tested_kits[@]}"; do
  t="${a//-/_}"
  grep -qx "$t: test" <<<"$listed" || fail "kit \`$a\` has no test \`$t\` in tests/e2e/main.rs (kit_tests!)"
  tests+=("$t")
  # The same kit for a client of standard ACP subagents (tests/e2e/standard.rs).
  grep -qx "standard_client::$t: test" <<<"$listed" || fail "kit \`$a\` has no test standard_client::$t"
  tests+=("standard_client::$t")
done
# Each client's side-by-side tests (tests/e2e/clients.rs): clients::<client>_<agent>.
for c in "${clients[@]}"; do
  found="$(sed -n "s/^\(clients::${c//-/_}_[a-z_]*\): test\$/\1/p" <<<"$listed")"
  [ -n "$found" ] || fail "client \`$c\` has no tests clients::${c//-/_}_* in tests/e2e/clients.rs"
  while read -r t; do tests+=("$t"); done <<<"$found"
done
start=$SECONDS
: >"$logs/run.log"
status=1
if [ "${#tests[@]}" -gt 0 ]; then
  echo "== e2e: running ${tests[*]} offline (loopback only), $jobs at a time"
  set +e
  "${netns[@]}" bash -c 'ip link set lo up && "$@"' e2e-netns \
    "$bin" --ignored --exact --nocapture --test-threads="$jobs" "${tests[@]}" 2>&1 | tee "$logs/run.log"
  status=${PIPESTATUS[0]}
  set -e
fi
[ "${#install_failed[@]}" -eq 0 ] || status=1
echo "== e2e: ${agents[*]} ${clients[*]}: $([ "$status" = 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
if [ "$latest" = 1 ]; then
  echo "== e2e --latest: each kit against the newest version its registry serves"
  {
    for a in "${unfollowed[@]}"; do echo "$a $(pinned_version "$a") (not followed)"; done
    for a in "${install_failed[@]}"; do
      echo "$a $(pinned_version "$a") ${newest[$a]} (install failed)"
    done
  } >"$logs/unfollowed"
  for a in "${agents[@]}"; do echo "$a $(pinned_version "$a") ${newest[$a]}"; done \
    | python3 tests/e2e/tools/latest_matrix.py "$logs/run.log" "$logs/unfollowed"
fi
exit "$status"
