//! The Linux extras (the table in [`crate::platform`]): compiled only on Linux without the
//! `portable` feature. Each has a portable fallback in the parent module.

use std::os::fd::BorrowedFd;

/// Ask the kernel to send the agent SIGTERM when the proxy dies (`PR_SET_PDEATHSIG`).
///
/// SIGTERM rather than SIGKILL: editors kill agent servers as their normal way to stop them,
/// and the agent should get to exit cleanly; the guardian sends SIGKILL if it does not.
/// The signal is tied to the *thread* that forks, not the process: it fires when that thread
/// exits. A tokio blocking-pool thread exits after some idle seconds, which would kill a
/// healthy agent, so it is only set when forking from the main thread (as the relay does: it
/// runs on a current-thread runtime in `main`), which lives as long as the process.
pub(super) fn term_when_parent_dies(cmd: &mut tokio::process::Command) {
    let parent = rustix::process::getpid();
    if rustix::thread::gettid() != parent {
        tracing::debug!("agent spawned off the main thread: no parent-death signal");
        return;
    }
    // SAFETY: the closure only makes async-signal-safe calls (prctl, getppid) and allocates
    // nothing.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
            // Had the proxy died before the prctl, no signal would ever come.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// `F_SETPIPE_SZ` on `fd` if it is a pipe.
pub(super) fn enlarge_pipe(fd: BorrowedFd<'_>, capacity: usize) {
    if super::fd_kind(fd) != Some(super::FdKind::Pipe) {
        return;
    }
    if let Err(e) = rustix::pipe::fcntl_setpipe_size(fd, capacity) {
        tracing::debug!("pipe buffer left at its size: {e}");
    }
}

/// The calling thread's name (for the guardian, which has one thread: its process name).
pub(super) fn set_process_name(name: &std::ffi::CStr) {
    if let Err(e) = rustix::thread::set_name(name) {
        tracing::debug!("cannot rename the process: {e}");
    }
}

/// glibc's thresholds for `mmap` and trimming; other C libraries keep theirs.
pub(super) fn keep_read_buffers_mapped() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes allocator thresholds; called before the relay allocates.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 8 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Number of processes of the group that are not zombies, or None if `/proc` cannot tell.
pub(super) fn live_members(pgid: i32) -> Option<usize> {
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
