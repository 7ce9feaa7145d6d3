//! The agent as a child process in its own process group.
//!
//! Agents are often `npx`/`uvx` wrappers around the real process, so every signal goes to the
//! whole group, not just the pid we spawned.
//!
//! Should the proxy die without stopping the agent (SIGKILL, a crash), two things stop it
//! (docs/lifecycle.md): the agent gets SIGTERM from the kernel as its parent dies
//! (`PR_SET_PDEATHSIG`), and an [`agent_guardian`](super::agent_guardian) process stops the
//! whole group, SIGKILL included.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::agent_guardian::Guardian;
use super::relay::ShutdownConfig;

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
    /// Stops the group if the proxy dies; told to stand down once the proxy has stopped it.
    /// None if it could not be started (a warning says so).
    pub guardian: Option<Guardian>,
}

impl Agent {
    pub fn spawn(command: &[String], shutdown: &ShutdownConfig) -> Result<Agent, SpawnError> {
        let (program, args) = command.split_first().ok_or(SpawnError::Empty)?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(false);
        term_when_parent_dies(&mut cmd);
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
        crate::transport::pipe::enlarge(std::os::fd::AsFd::as_fd(&stdout));
        let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        let guardian = match Guardian::start(pgid, shutdown) {
            Ok(g) => Some(g),
            Err(e) => {
                tracing::warn!(
                    "cannot start the agent's guardian: {e}; should acp-proxy be killed, \
                     processes the agent started may outlive it"
                );
                None
            }
        };
        Ok(Agent {
            child,
            stdin,
            stdout,
            stderr,
            pgid,
            guardian,
        })
    }
}

/// Ask the kernel to send the agent SIGTERM when the proxy dies (`PR_SET_PDEATHSIG`).
///
/// SIGTERM rather than SIGKILL: editors kill agent servers as their normal way to stop them,
/// and the agent should get to exit cleanly; the guardian sends SIGKILL if it does not.
/// The signal is tied to the *thread* that forks, not the process: it fires when that thread
/// exits. A tokio blocking-pool thread exits after some idle seconds, which would kill a
/// healthy agent, so it is only set when forking from the main thread (as the relay does: it
/// runs on a current-thread runtime in `main`), which lives as long as the process.
fn term_when_parent_dies(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: gettid has no preconditions.
        if unsafe { libc::gettid() } != parent {
            tracing::debug!("agent spawned off the main thread: no parent-death signal");
            return;
        }
        // SAFETY: the closure only makes async-signal-safe calls (prctl, getppid).
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Had the proxy died before the prctl, no signal would ever come.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// Send a signal to a whole process group. Returns false if the group no longer exists.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale pgid only yields ESRCH.
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// Whether any process of the group is still alive.
///
/// `killpg(pgid, 0)` also succeeds while the group holds only zombies: a grandchild that died
/// after its parent is reparented to PID 1, and in a container whose PID 1 does not reap
/// (a plain `docker run` without `--init`) that zombie stays forever. So where `/proc` is
/// available, a group whose members are all zombies counts as gone.
pub fn group_alive(pgid: i32) -> bool {
    if !signal_group(pgid, 0) {
        return false;
    }
    match live_members(pgid) {
        Some(n) => n > 0,
        None => true,
    }
}

/// Number of processes of the group that are not zombies, or None if `/proc` cannot tell.
fn live_members(pgid: i32) -> Option<usize> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut live = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // A process may exit between listing and reading: skip what cannot be read.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((state, group)) = parse_stat(&stat) {
            if group == pgid && state != 'Z' && state != 'X' {
                live += 1;
            }
        }
    }
    Some(live)
}

/// State and process group from a `/proc/PID/stat` line: `pid (comm) state ppid pgrp ...`.
/// `comm` may hold spaces and parentheses, so fields are counted after the last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat_lines() {
        assert_eq!(
            parse_stat("4242 (sleep) S 1 4240 4240 0 -1 4194560"),
            Some(('S', 4240))
        );
        assert_eq!(parse_stat("77 (a) b (c)) Z 1 70 70 0"), Some(('Z', 70)));
        assert_eq!(parse_stat("garbage"), None);
    }
}
