//! The Unix side (Linux, macOS, the BSDs): process groups and signals, pipes, private files.
//! The Linux extras live in [`linux`] and are compiled only where the gate holds; each public
//! function here that uses one falls back to the portable way otherwise.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// The gate: on Linux, unless built with the `portable` feature (see [`super::LINUX_EXTRAS`]).
#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod linux;

/// Signal numbers as the relay uses them.
pub const SIGINT: i32 = libc::SIGINT;
pub const SIGTERM: i32 = libc::SIGTERM;
pub const SIGKILL: i32 = libc::SIGKILL;

// --- process groups -----------------------------------------------------------------------

/// Send a signal to a whole process group (0 only tests it). Returns false if the group no
/// longer exists.
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
/// (a plain `docker run` without `--init`) that zombie stays forever. With the Linux extras,
/// a group whose members are all zombies counts as gone (`/proc` tells); elsewhere such a
/// group stays "alive" until the caller's grace runs out, and SIGKILL to zombies is harmless.
pub fn group_alive(pgid: i32) -> bool {
    if !signal_group(pgid, 0) {
        return false;
    }
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    if let Some(n) = linux::live_members(pgid) {
        return n > 0;
    }
    true
}

/// Make a spawned agent receive SIGTERM when the proxy dies, where the system can (Linux's
/// parent-death signal); elsewhere nothing: the guardian stops the group.
pub fn term_when_parent_dies(cmd: &mut tokio::process::Command) {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    linux::term_when_parent_dies(cmd);
    #[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
    let _ = cmd;
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

/// The signal that ended a process, if one did.
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
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

// --- the guardian process -------------------------------------------------------------------

/// A pipe whose two ends are closed on exec, (read end, write end), so no process the proxy
/// starts inherits the write end (which would keep the guardian from ever seeing end-of-file).
pub fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    return Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?);
    // Two steps: a process forked by another thread in between would inherit the ends. The
    // proxy starts its processes from one thread, one after the other.
    #[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
    {
        let (read, write) = rustix::pipe::pipe()?;
        for fd in [&read, &write] {
            rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC)?;
        }
        Ok((read, write))
    }
}

/// For the guardian: ignore the terminal's hang-up and Ctrl-C (they are for the proxy; the
/// guardian stays to clean up), and take the name `name` where processes can be renamed.
pub fn detach_from_terminal_signals(name: &std::ffi::CStr) {
    // SAFETY: installing SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    linux::set_process_name(name);
    #[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
    let _ = name;
}

/// The proxy's own binary, to start the guardian from. With the Linux extras,
/// `/proc/self/exe` stands in when the file was replaced or deleted (an upgrade while the
/// proxy runs); the path is preferred where it exists, since under a tool such as valgrind
/// `/proc/self/exe` is the tool.
pub fn own_binary() -> io::Result<PathBuf> {
    let exe = std::env::current_exe();
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    if !exe.as_ref().is_ok_and(|p| p.exists()) {
        return Ok(PathBuf::from("/proc/self/exe"));
    }
    exe
}

// --- pipes ----------------------------------------------------------------------------------

/// Capacity asked for the pipes that carry the agent's output (Linux's default is 64 KiB).
pub const PIPE_CAPACITY: usize = 1024 * 1024;

/// Ask for a larger buffer on a pipe that carries bulk traffic, where the system allows it
/// (Linux's `F_SETPIPE_SZ`; elsewhere the pipe keeps its size). With the default 64 KiB, a
/// fast writer fills the pipe many times per megabyte and every fill means a wake-up of the
/// reader and the writer; a larger pipe lets each side move more per system call. Best
/// effort: not a pipe, or a refusal (over `/proc/sys/fs/pipe-max-size` or the user's pipe
/// budget), leaves the pipe as it was.
pub fn enlarge_pipe(fd: BorrowedFd<'_>) {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    linux::enlarge_pipe(fd, PIPE_CAPACITY);
    #[cfg(not(all(target_os = "linux", not(feature = "portable"))))]
    let _ = fd;
}

/// The kind of descriptor stdio is, for choosing between polled and blocking I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdKind {
    Pipe,
    Socket,
    Other,
}

/// What `fd` is; `None` if it cannot be told (a closed descriptor).
pub fn fd_kind(fd: BorrowedFd<'_>) -> Option<FdKind> {
    let st = rustix::fs::fstat(fd).ok()?;
    Some(match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::Fifo => FdKind::Pipe,
        rustix::fs::FileType::Socket => FdKind::Socket,
        _ => FdKind::Other,
    })
}

// --- the allocator ---------------------------------------------------------------------------

/// The relay reads the agent's output into 1 MiB buffers that are freed once written on. By
/// default glibc serves blocks that size with `mmap` at first and gives freed memory back to
/// the kernel, so every new buffer is faulted in page by page again (a fifth of the pure
/// relay's time in a profile). With the Linux extras on glibc, blocks up to 8 MiB stay on the
/// heap and only more than 64 MiB of free memory is trimmed, so buffers are reused as they
/// are; peak memory is unchanged. Elsewhere the allocator keeps its defaults.
pub fn keep_read_buffers_mapped() {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    linux::keep_read_buffers_mapped();
}

// --- files ----------------------------------------------------------------------------------

/// Owner-only access for files the proxy creates (the store, its transcripts, the dump):
/// mode 0600 on new files.
pub fn private_file(opts: &mut OpenOptions) -> &mut OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    opts.mode(0o600)
}

/// Tighten an existing file to owner-only (an existing file keeps its old mode on open).
pub fn make_private(file: &File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
}

/// Tighten an existing file to owner-only if others may read or write it (best effort: files
/// SQLite creates beside the database).
pub fn tighten_to_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// Create `dir` and its missing parents, owner-only (0700).
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Read into `buf` from `offset` without moving the file's position.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

/// Write all of `buf` at `offset` without moving the file's position.
pub fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

/// Wait for an exclusive advisory lock on the whole file (`flock`); [`unlock`] or closing the
/// file releases it. Processes that share a dump path take turns with it.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    loop {
        match rustix::fs::flock(file, rustix::fs::FlockOperation::LockExclusive) {
            Err(rustix::io::Errno::INTR) => continue,
            other => return other.map_err(io::Error::from),
        }
    }
}

/// Release a lock [`lock_exclusive`] took.
pub fn unlock(file: &File) -> io::Result<()> {
    rustix::fs::flock(file, rustix::fs::FlockOperation::Unlock).map_err(io::Error::from)
}

/// What tells a file apart from another one that took its name (a rotated dump): the inode.
pub fn file_identity(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.ino()
}

/// Whether `path` is a file this user may run (an executable bit is set).
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether this process may read and write `path` (`access(2)`, which honours ACLs and
/// read-only mounts, unlike the mode bits).
pub fn can_read_write(path: &Path) -> bool {
    rustix::fs::access(
        path,
        rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK,
    )
    .is_ok()
}

/// Whether this process may create files in the folder `dir`.
pub fn can_create_in(dir: &Path) -> bool {
    rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok()
}

// --- signals that end a session -------------------------------------------------------------

/// SIGINT and SIGTERM, as streams the relay selects over.
pub struct StopSignals {
    pub interrupt: tokio::signal::unix::Signal,
    pub terminate: tokio::signal::unix::Signal,
}

/// Start listening for the signals that end a session.
pub fn stop_signals() -> io::Result<StopSignals> {
    use tokio::signal::unix::{signal, SignalKind};
    Ok(StopSignals {
        interrupt: signal(SignalKind::interrupt())?,
        terminate: signal(SignalKind::terminate())?,
    })
}

/// Make `cmd` start its process as the leader of a process group of its own, so that a
/// signal to the proxy's group (a terminal's Ctrl-C) does not reach it and a signal to its
/// group reaches everything it starts.
pub fn own_process_group(cmd: &mut tokio::process::Command) {
    cmd.process_group(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn the_guardian_pipe_is_closed_on_exec_at_both_ends() {
        let (r, w) = cloexec_pipe().expect("pipe");
        for fd in [&r, &w] {
            let flags = rustix::io::fcntl_getfd(fd).expect("F_GETFD");
            assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        }
        assert_eq!(fd_kind(r.as_fd()), Some(FdKind::Pipe));
    }

    /// The pipe size follows the gate: 1 MiB with the Linux extras, the system's default
    /// with the `portable` feature.
    #[cfg(target_os = "linux")]
    #[test]
    fn pipes_are_enlarged_only_with_the_linux_extras() {
        let (r, _w) = rustix::pipe::pipe().expect("pipe");
        let before = rustix::pipe::fcntl_getpipe_size(&r).expect("F_GETPIPE_SZ");
        enlarge_pipe(r.as_fd());
        let after = rustix::pipe::fcntl_getpipe_size(&r).expect("F_GETPIPE_SZ");
        if super::super::LINUX_EXTRAS {
            // Unless the user's pipe budget is spent, which a test machine's is not.
            assert_eq!(after, PIPE_CAPACITY);
        } else {
            assert_eq!(after, before);
        }
    }

    #[test]
    fn a_regular_file_is_neither_pipe_nor_socket_and_left_alone() {
        let f = tempfile::tempfile().expect("tempfile");
        assert_eq!(fd_kind(f.as_fd()), Some(FdKind::Other));
        enlarge_pipe(f.as_fd());
    }

    #[test]
    fn private_files_and_folders_are_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("a/b");
        create_private_dir_all(&sub).expect("mkdir");
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&sub), 0o700);
        let path = sub.join("f");
        std::fs::write(&path, b"x").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        tighten_to_private(&path);
        assert_eq!(mode(&path), 0o600);
        assert!(can_read_write(&path));
        assert!(can_create_in(&sub));
        assert!(!can_read_write(&sub.join("missing")));
        let file = private_file(OpenOptions::new().write(true).create(true))
            .open(sub.join("g"))
            .expect("open");
        write_all_at(&file, b"abc", 2).expect("write at");
        assert_eq!(std::fs::read(sub.join("g")).expect("read"), b"\0\0abc");
        assert!(!is_executable(&path));
    }

    #[test]
    fn a_group_that_is_gone_is_not_alive() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("true")
            .process_group(0)
            .spawn()
            .expect("spawn true");
        let pgid = child.id() as i32;
        child.wait().expect("wait");
        assert!(!group_alive(pgid));
        assert!(!signal_group(pgid, SIGTERM));
        assert!(
            !signal_group(0, 0),
            "pgid 0 (the caller's group) is never signalled"
        );
    }
}
