//! A small process that stops the agent's process group when the proxy is gone, however it
//! died.
//!
//! The proxy stops the agent itself on every path it controls (docs/lifecycle.md). But when it
//! is killed with SIGKILL (as an editor does to its agent servers when it quits), crashes or is
//! OOM-killed, nothing would stop the agent or the processes it started: the agent leads a
//! process group of its own, so no signal to the proxy's group reaches it, and an agent busy in
//! a long tool may neither read its stdin nor mind SIGTERM or SIGHUP. The guardian holds the
//! read end of a pipe whose only write end is the proxy's. When the proxy exits the kernel
//! closes that end and the guardian's read returns end-of-file; it then does what the proxy
//! does when its client leaves: it waits `stdin_grace_ms` for the group to exit (the agent's
//! stdin has closed with the proxy), sends SIGTERM to the group, and SIGKILL after
//! `term_grace_ms`. After its own orderly shutdown the proxy writes one byte first, so the
//! guardian exits without signalling a group that is gone (whose id might be reused).
//!
//! The guardian runs `acp-proxy agent-guardian` (the proxy's own binary, a hidden subcommand),
//! in a process group of its own (a signal to the proxy's group must not take it along) with
//! its stdout and stderr on /dev/null (it must not hold the editor's pipes open), and renames
//! itself `acp-guardian` on Linux, so `killall acp-proxy` leaves it to clean up after the
//! proxies.
//!
//! On Windows there is no guardian process: the agent runs in a job object that the system
//! closes, killing every process in it, when the proxy dies ([`crate::platform`]). The
//! [`Guardian`] handle is the same.

#[cfg(unix)]
use std::io::Read;
#[cfg(unix)]
use std::process::Stdio;
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

#[cfg(unix)]
use super::agent_process::{group_alive, signal_group};
use super::relay::ShutdownConfig;

/// The hidden subcommand that runs the guardian.
pub const SUBCOMMAND: &str = "agent-guardian";

/// How often the guardian looks whether the group is gone.
#[cfg(unix)]
const POLL: Duration = Duration::from_millis(20);

/// The proxy's handle on a running guardian.
#[cfg(unix)]
pub struct Guardian {
    /// The write end of the pipe; closing it (by exiting) tells the guardian to act.
    pipe: std::fs::File,
    child: tokio::process::Child,
}

/// The proxy's handle on the agent's job object, which the system closes when the proxy dies.
#[cfg(windows)]
pub struct Guardian {
    job: crate::platform::AgentJob,
}

#[cfg(windows)]
impl Guardian {
    /// Put the agent (process id `pgid`) and what it starts from now on into a job object.
    pub fn start(pgid: i32, _shutdown: &ShutdownConfig) -> std::io::Result<Guardian> {
        Ok(Guardian {
            job: crate::platform::AgentJob::assign(pgid)?,
        })
    }

    /// The proxy has stopped the agent itself: closing the job ends whatever is left in it.
    pub async fn stand_down(self) {
        drop(self.job);
    }
}

#[cfg(unix)]
impl Guardian {
    /// Start a guardian for the agent's process group `pgid`.
    pub fn start(pgid: i32, shutdown: &ShutdownConfig) -> std::io::Result<Guardian> {
        let (read, write) = crate::platform::cloexec_pipe()?;
        let child = tokio::process::Command::new(crate::platform::own_binary()?)
            .arg(SUBCOMMAND)
            .arg(pgid.to_string())
            .arg(shutdown.stdin_grace_ms.to_string())
            .arg(shutdown.term_grace_ms.to_string())
            .stdin(Stdio::from(read))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(false)
            .spawn()?;
        Ok(Guardian {
            pipe: std::fs::File::from(write),
            child,
        })
    }

    /// The proxy has stopped the agent's group itself: let the guardian exit without acting,
    /// and reap it.
    pub async fn stand_down(mut self) {
        use std::io::Write;
        // One byte into an empty pipe never blocks.
        if let Err(e) = self.pipe.write_all(b"x") {
            tracing::debug!("cannot tell the agent's guardian to stand down: {e}");
        }
        drop(self.pipe);
        if tokio::time::timeout(Duration::from_secs(1), self.child.wait())
            .await
            .is_err()
        {
            tracing::debug!("the agent's guardian did not exit within 1 s");
        }
    }
}

/// The guardian process (Windows has none: exit status 2 there). Waits until the proxy is
/// gone, then stops the group. Exit status 0.
#[cfg(windows)]
pub fn run(_pgid: i32, _stdin_grace: Duration, _term_grace: Duration) -> i32 {
    eprintln!("acp-proxy: the agent guardian is not used on Windows (a job object does its work)");
    2
}

/// The guardian process: wait until the proxy is gone, then stop the group. Exit status 0.
#[cfg(unix)]
pub fn run(pgid: i32, stdin_grace: Duration, term_grace: Duration) -> i32 {
    crate::platform::detach_from_terminal_signals(c"acp-guardian");
    let mut byte = [0u8; 1];
    let mut stdin = std::io::stdin().lock();
    loop {
        match stdin.read(&mut byte) {
            // The proxy stopped the group itself.
            Ok(1..) => return 0,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // End-of-file (or a broken pipe): the proxy is gone.
            _ => break,
        }
    }
    if pgid > 0 {
        stop_group(pgid, stdin_grace, term_grace);
    }
    0
}

/// The proxy's own escalation after its client left: wait, SIGTERM, wait, SIGKILL.
#[cfg(unix)]
fn stop_group(pgid: i32, stdin_grace: Duration, term_grace: Duration) {
    if wait_gone(pgid, stdin_grace) {
        return;
    }
    signal_group(pgid, crate::platform::SIGTERM);
    if wait_gone(pgid, term_grace) {
        return;
    }
    signal_group(pgid, crate::platform::SIGKILL);
}

/// Whether the group is gone within `limit`.
#[cfg(unix)]
fn wait_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !group_alive(pgid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}
