#!/usr/bin/env bash
# Two acp-proxy links in one chain under the reference conductor, end to end.
#
# Installs `agent-client-protocol-conductor` 3.6.0 (the last release with the `_proxy/*`
# dialect, which re-serialises `initialize`) and 5.0.0 from crates.io, pinned and --locked,
# under $E2E_CACHE/conductor-<version>/ (default ~/.cache/acp-proxy-e2e, shared with the
# real-agent kits; idempotent), then runs the ignored tests `chain::two_links_under_…`: Zed
# through conductor → acp-proxy → acp-proxy → demo agent must see exactly what it sees
# through one acp-proxy. Building each conductor takes several minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export E2E_CACHE="${E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/acp-proxy-e2e}"
for v in 3.6.0 5.0.0; do
  root="$E2E_CACHE/conductor-$v"
  if [[ -x "$root/bin/agent-client-protocol-conductor" ]]; then
    continue
  fi
  echo "== installing agent-client-protocol-conductor $v into $root"
  build="$(mktemp -d)"
  CARGO_TARGET_DIR="$build" CARGO_INCREMENTAL=0 cargo install agent-client-protocol-conductor \
    --version "$v" --locked --root "$root" || { rm -rf "$build"; echo "chain-e2e: installing conductor $v failed" >&2; exit 1; }
  rm -rf "$build"
done
cargo test --test it two_links_under_conductor -- --ignored
