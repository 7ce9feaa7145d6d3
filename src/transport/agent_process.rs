//! The agent as a child process in its own process group.
//!
//! Agents are often `npx`/`uvx` wrappers around the real process, so every signal goes to the
//! whole group, not just the pid we spawned.
//!
//! Should the proxy die without stopping the agent (SIGKILL, a crash), two things stop it
//! (docs/lifecycle.md): on Linux the agent gets SIGTERM from the kernel as its parent dies
//! (`PR_SET_PDEATHSIG`), and an [`agent_guardian`](super::agent_guardian) stops the whole
//! group, SIGKILL included (on Windows a job object does; docs/platforms.md).

use std::future::Future;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

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
    pub process: Child,
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
            .kill_on_drop(false);
        crate::platform::own_process_group(&mut cmd);
        crate::platform::term_when_parent_dies(&mut cmd);
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
        #[cfg(unix)]
        crate::platform::enlarge_pipe(std::os::fd::AsFd::as_fd(&stdout));
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
            process: child,
            stdin,
            stdout,
            stderr,
            pgid,
            guardian,
        })
    }
}

pub use crate::platform::{describe_status, group_alive, signal_group};

/// What can be waited on for the agent's exit: its process, or an [`Exit`] watching it.
pub trait WaitExit {
    /// The exit status, once the process has exited and was reaped.
    fn wait_exit(&mut self) -> impl Future<Output = std::io::Result<ExitStatus>> + Send + '_;
}

impl WaitExit for Child {
    fn wait_exit(&mut self) -> impl Future<Output = std::io::Result<ExitStatus>> + Send + '_ {
        self.wait()
    }
}

/// The agent's exit, waited for by a task of its own. The relay's loop polls this receiver on
/// every pass instead of the process itself: polling tokio's `Child::wait` there was a twelfth
/// of a pure relay's work per round trip of a permission request.
pub struct Exit {
    rx: oneshot::Receiver<std::io::Result<ExitStatus>>,
    /// Kept once received: a receiver gives its value only once.
    status: Option<ExitStatus>,
}

impl Exit {
    /// Watch `child` until it exits (it is reaped then).
    pub fn watch(mut child: Child) -> Exit {
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let _ = tx.send(child.wait().await);
        });
        Exit { rx, status: None }
    }

    async fn status(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = (&mut self.rx).await.unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the agent's process is no longer watched",
            ))
        })?;
        self.status = Some(status);
        Ok(status)
    }
}

impl WaitExit for Exit {
    fn wait_exit(&mut self) -> impl Future<Output = std::io::Result<ExitStatus>> + Send + '_ {
        self.status()
    }
}

/// Wait for the child to exit; after `term_after` send SIGTERM to its group, after a further
/// `kill_after` SIGKILL. Returns the child's exit status once reaped. Afterwards any process
/// left in the group (grandchildren) is terminated the same way, so nothing is orphaned.
pub async fn stop(
    child: &mut impl WaitExit,
    pgid: i32,
    term_after: Duration,
    kill_after: Duration,
) -> std::io::Result<ExitStatus> {
    let status = match tokio::time::timeout(term_after, child.wait_exit()).await {
        Ok(status) => status?,
        Err(_) => {
            tracing::debug!(pgid, "agent still running: SIGTERM to its process group");
            signal_group(pgid, crate::platform::SIGTERM);
            match tokio::time::timeout(kill_after, child.wait_exit()).await {
                Ok(status) => status?,
                Err(_) => {
                    tracing::warn!(pgid, "agent ignored SIGTERM: SIGKILL to its process group");
                    signal_group(pgid, crate::platform::SIGKILL);
                    child.wait_exit().await?
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
    signal_group(pgid, crate::platform::SIGTERM);
    let deadline = tokio::time::Instant::now() + kill_after;
    while group_alive(pgid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if group_alive(pgid) {
        signal_group(pgid, crate::platform::SIGKILL);
    }
}
