#!/usr/bin/env bash
# Fuzz smoke test for CI.
#
# With a nightly toolchain and cargo-fuzz: build the fuzz targets (fuzz/) and run each for
# FUZZ_SMOKE_SECS seconds (default 20), starting from the checked-in seeds and regressions.
# Without them: run the seed corpus and the crash regressions through the same functions as
# plain tests (tests/it/fuzz_corpus.rs), which `cargo test` also does.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${FUZZ_SMOKE_SECS:-20}"
targets=(framing envelope engine)

if cargo +nightly --version >/dev/null 2>&1 && cargo +nightly fuzz --help >/dev/null 2>&1; then
  cd fuzz
  cargo +nightly fuzz build -O
  for t in "${targets[@]}"; do
    # Work on a scratch copy so the smoke run never changes the checked-in corpus.
    work="$(mktemp -d)"
    cp corpus-seed/"$t"/* "$work"/
    if [ -d regressions/"$t" ]; then cp regressions/"$t"/* "$work"/ 2>/dev/null || true; fi
    dict=()
    if [ "$t" != framing ]; then dict=(-dict=engine.dict); fi
    echo "== fuzz $t for ${secs}s"
    log="$work.log"
    set +e
    cargo +nightly fuzz run -O "$t" "$work" -- -max_total_time="$secs" -max_len=8192 ${dict[@]+"${dict[@]}"} \
      -print_final_stats=1 >"$log" 2>&1
    status=$?
    set -e
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" || true
    if [ "$status" -ne 0 ]; then tail -n 60 "$log" >&2; fi
    rm -rf "$work" "$log"
    if [ "$status" -ne 0 ]; then
      echo "fuzz-smoke: $t failed (see fuzz/artifacts/$t/)" >&2
      exit "$status"
    fi
  done
else
  echo "fuzz-smoke: no nightly toolchain or cargo-fuzz; running the seed corpus as tests"
  cargo test --locked --test it fuzz_corpus::
fi
