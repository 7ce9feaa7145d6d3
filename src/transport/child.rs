//! The agent as a child process in its own process group.
//!
//! Agents are often `npx`/`uvx` wrappers around the real process, so every signal goes to the
//! whole group, not just the pid we spawned.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("no agent command given")]
    Empty,
    #[error("cannot start agent `{program}`: {source}")]
    Io {
        program: String,
        source: std::io::Error,
    },
    #[error("agent `{program}` started without a {pipe} pipe")]
    MissingPipe { program: String, pipe: &'static str },
}

/// A running agent and its pipes.
pub struct Agent {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    /// Process group id (= the child's pid, since it leads its own group).
    pub pgid: i32,
}

impl Agent {
    pub fn spawn(command: &[String]) -> Result<Agent, SpawnError> {
        let (program, args) = command.split_first().ok_or(SpawnError::Empty)?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        let mut child = cmd.spawn().map_err(|source| SpawnError::Io {
            program: program.clone(),
            source,
        })?;
        let missing = |pipe| SpawnError::MissingPipe {
            program: program.clone(),
            pipe,
        };
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        Ok(Agent {
            child,
            stdin,
            stdout,
            stderr,
            pgid,
        })
    }
}

/// Send a signal to a whole process group. Returns false if the group no longer exists.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale pgid only yields ESRCH.
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// Whether any process of the group is still alive (zombies of our own child count until reaped).
pub fn group_alive(pgid: i32) -> bool {
    signal_group(pgid, 0)
}

/// Wait for the child to exit; after `term_after` send SIGTERM to its group, after a further
/// `kill_after` SIGKILL. Returns the child's exit status once reaped. Afterwards any process
/// left in the group (grandchildren) is terminated the same way, so nothing is orphaned.
pub async fn stop(
    child: &mut Child,
    pgid: i32,
    term_after: Duration,
    kill_after: Duration,
) -> std::io::Result<ExitStatus> {
    let status = match tokio::time::timeout(term_after, child.wait()).await {
        Ok(status) => status?,
        Err(_) => {
            tracing::debug!(pgid, "agent still running: SIGTERM to its process group");
            signal_group(pgid, libc::SIGTERM);
            match tokio::time::timeout(kill_after, child.wait()).await {
                Ok(status) => status?,
                Err(_) => {
                    tracing::warn!(pgid, "agent ignored SIGTERM: SIGKILL to its process group");
                    signal_group(pgid, libc::SIGKILL);
                    child.wait().await?
                }
            }
        }
    };
    reap_group(pgid, kill_after).await;
    Ok(status)
}

/// Terminate whatever is left of the group after its leader exited.
pub async fn reap_group(pgid: i32, kill_after: Duration) {
    if !group_alive(pgid) {
        return;
    }
    signal_group(pgid, libc::SIGTERM);
    let deadline = tokio::time::Instant::now() + kill_after;
    while group_alive(pgid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if group_alive(pgid) {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// A human description of an exit status: `exit status 3`, `killed by signal 9 (SIGKILL)`.
pub fn describe_status(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    match status.signal() {
        Some(sig) => format!("killed by signal {sig} ({})", signal_name(sig)),
        None => "unknown exit status".to_owned(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}
