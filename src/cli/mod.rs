//! Subcommands that help a user set the proxy up.

pub mod check_config;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Write output that is the command's product (a snippet, a config, a script) to stdout: a
/// reader that went away (`| head`) is not an error, anything else is.
pub fn emit(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to stdout")
        }
        _ => Ok(()),
    }
}

/// `path` made absolute against the working directory (not resolved: it may not exist yet).
pub fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot make {} absolute", path.display()))
}
