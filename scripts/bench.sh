#!/usr/bin/env bash
# Benchmark acp-proxy against a direct pipe and `cat`, on the same generated ACP traffic.
#
#   scripts/bench.sh --quick           a few MiB, 2 repetitions (CI: proves the harness works)
#   scripts/bench.sh                   full: 1 GiB per stream run, 5 repetitions
#   scripts/bench.sh --memory          peak RSS: short vs long streams, few vs many subagents
#   scripts/bench.sh --bytes 256M --reps 3 --relays cat,off
#
# Every option is listed by `scripts/bench.sh --help`. Method and results: docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# The `profiling` profile is the release build with debug info kept, so `perf` can name
# functions in what is measured (the installed release binary is stripped of it).
cargo build --profile profiling --locked -p acp-proxy -p acp-bench >&2
# Wherever cargo puts its builds (CARGO_TARGET_DIR, a config's target-dir, or ./target).
target_dir="$(cargo metadata --format-version 1 --no-deps --locked \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
exec "$target_dir/profiling/acp-bench" run "$@"
