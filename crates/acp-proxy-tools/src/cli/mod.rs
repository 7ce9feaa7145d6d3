//! Subcommands that help a user set the proxy up: `setup zed`, `doctor`, `check-config`; and
//! what `store stats` and `store prune` print.

/// `println!` for the report lines: a closed stdout (`| head`) cuts the report short instead
/// of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub mod agents;
pub mod check_config;
pub mod doctor;
pub mod setup_zed;
pub mod store;
pub mod zed_settings;

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

/// A command line as a user would type it: words with shell metacharacters single-quoted.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./-_".contains(&b));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `path` made absolute against the working directory (not resolved: it may not exist yet).
pub fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot make {} absolute", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_lines_quote_what_needs_it() {
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shell_line(&w(&["npx", "@agentclientprotocol/claude-agent-acp"])),
            "npx @agentclientprotocol/claude-agent-acp"
        );
        assert_eq!(
            shell_line(&w(&["sh", "-c", "echo it's"])),
            r"sh -c 'echo it'\''s'"
        );
        assert_eq!(shell_line(&w(&[""])), "''");
    }
}
