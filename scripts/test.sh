#!/usr/bin/env bash
# The project's test command (named in README.md and run by CI).
#
#   scripts/test.sh          everything
#   scripts/test.sh --fast   the inner loop: the library, the binary and the integration tests
#                            without the modules that start a browser or hundreds of processes
#                            (and no benchmark); run the full command before committing
#
# Works with CARGO_TARGET_DIR set anywhere: the built binaries are run through cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") ;;
  --fast)
    exec cargo test --locked --lib --bins --test it -- \
      --skip dump_html:: --skip lifecycle:: --skip faults:: --skip store_processes:: \
      --skip store_restart:: --skip hostile_agents:: --skip chain:: --skip chain_links:: \
      --skip engine_props:: --skip zed_limits::
    ;;
  *) echo "usage: $0 [--fast]" >&2; exit 2 ;;
esac
cargo build --locked --workspace --bins
cargo test --locked --workspace --all-targets
# The benchmark harness in its quick mode (a few MiB, debug build, ~10 s): proves it runs and
# that every relay delivers every frame. Numbers from a debug build mean nothing (it says so).
cargo run --locked -q -p acp-bench -- run --quick --workdir "${CARGO_TARGET_DIR:-target}/acp-bench-ci"
