#!/usr/bin/env bash
# The project's test command (named in README.md and run by CI).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --bins
cargo test --locked --all-targets
