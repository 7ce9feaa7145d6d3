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
//! itself `acp-guardian`, so `killall acp-proxy` leaves it to clean up after the proxies.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::agent_process::{group_alive, signal_group};
use super::relay::ShutdownConfig;

/// The hidden subcommand that runs the guardian.
pub const SUBCOMMAND: &str = "agent-guardian";

/// How often the guardian looks whether the group is gone.
const POLL: Duration = Duration::from_millis(20);

/// The proxy's handle on a running guardian.
pub struct Guardian {
    /// The write end of the pipe; closing it (by exiting) tells the guardian to act.
    pipe: std::fs::File,
    child: tokio::process::Child,
}

impl Guardian {
    /// Start a guardian for the agent's process group `pgid`.
    pub fn start(pgid: i32, shutdown: &ShutdownConfig) -> std::io::Result<Guardian> {
        let (read, write) = cloexec_pipe()?;
        let child = tokio::process::Command::new(own_binary())
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

/// The proxy's binary. `/proc/self/exe` still works when the file was replaced or deleted
/// (an upgrade while the proxy runs); the path is preferred where it exists, since under a
/// tool such as valgrind `/proc/self/exe` is the tool.
fn own_binary() -> PathBuf {
    match std::env::current_exe() {
        Ok(path) if path.exists() => path,
        _ => PathBuf::from("/proc/self/exe"),
    }
}

/// A pipe whose two ends are closed on exec, so no process the proxy starts inherits the
/// write end (which would keep the guardian from ever seeing end-of-file).
fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The guardian process: wait until the proxy is gone, then stop the group. Exit status 0.
pub fn run(pgid: i32, stdin_grace: Duration, term_grace: Duration) -> i32 {
    // SAFETY: installing SIG_IGN and naming the calling thread have no preconditions.
    unsafe {
        // A terminal's hang-up or Ctrl-C is for the proxy; the guardian stays to clean up.
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_NAME, c"acp-guardian".as_ptr());
    }
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
fn stop_group(pgid: i32, stdin_grace: Duration, term_grace: Duration) {
    if wait_gone(pgid, stdin_grace) {
        return;
    }
    signal_group(pgid, libc::SIGTERM);
    if wait_gone(pgid, term_grace) {
        return;
    }
    signal_group(pgid, libc::SIGKILL);
}

/// Whether the group is gone within `limit`.
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
