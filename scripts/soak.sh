#!/usr/bin/env bash
# Soak: run a long generated session (many subagents, permission requests, child loads)
# through the release build of the proxy, sample its RSS and open file descriptors, print a
# table, and fail if either grew between the first and the last quarter after warm-up.
#
#   scripts/soak.sh [SECONDS]      default 600; `scripts/soak.sh 60` for CI
#
# Subagents are spawned in every turn (three per turn, for the whole run); SOAK_SUBAGENTS=warmup
# spawns them only during the warm-up (see docs/reliability.md).
#
# Environment: SOAK_PROFILE=debug runs the debug build instead (no release build needed, e.g.
# in CI right after `cargo test`); ACP_PROXY_WRAPPER runs the proxy under a profiler, e.g.
# ACP_PROXY_WRAPPER="valgrind --tool=massif --massif-out-file=/tmp/massif.%p" (RSS is then
# the profiler's); and the SOAK_* settings at the top of tests/it/soak.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
case "$secs" in
  ''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
if [ "$secs" -lt 20 ]; then
  echo "soak: at least 20 s" >&2; exit 2
fi
export SOAK_SECS="$secs"
# The soak is a test target; built with --release, the proxy it runs is the release binary.
profile=(--release)
if [ "${SOAK_PROFILE:-release}" = debug ]; then profile=(); fi
exec nice -n 10 cargo test ${profile[@]+"${profile[@]}"} --locked --test it -- soak::soak --exact --ignored --nocapture --test-threads=1
