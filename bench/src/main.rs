//! `acp-bench`: throughput, latency and memory of acp-proxy against `cat` and a direct pipe,
//! on the same generated ACP traffic, in one run. See `docs/performance.md`.
//!
//! The binary plays every part: `run` is the measuring client and orchestrator, `agent` is the
//! agent it (or the relay under test) spawns, `gen` writes a traffic stream.

// The harness measures pipes and processes with Unix calls (docs/platforms.md): all of it is
// one module, built on Unix only.
#[cfg(unix)]
mod harness;

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    harness::main()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("acp-bench runs on Unix only");
    std::process::ExitCode::from(2)
}
