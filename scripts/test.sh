#!/usr/bin/env bash
# The project's test command (named in README.md and run by CI).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --workspace --bins
cargo test --locked --workspace --all-targets
# The benchmark harness in its quick mode (a few MiB, debug build, ~10 s): proves it runs and
# that every relay delivers every frame. Numbers from a debug build mean nothing.
target/debug/acp-bench run --quick --workdir target/acp-bench-ci
