//! The Windows side: the agent's process tree in a job object, console control events,
//! files. docs/platforms.md has the design; this side is type-checked in CI but has not been
//! run (no Windows machine in CI).

use std::collections::HashMap;
use std::ffi::c_void;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Mutex, PoisonError};

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Console::{GenerateConsoleCtrlEvent, CTRL_BREAK_EVENT};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, OpenProcess, TerminateProcess, CREATE_NEW_PROCESS_GROUP,
    PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SET_QUOTA, PROCESS_TERMINATE,
};

/// The Unix numbers, as the relay names what ends an agent; [`signal_group`] maps them to
/// what Windows offers.
pub const SIGINT: i32 = 2;
pub const SIGTERM: i32 = 15;
pub const SIGKILL: i32 = 9;

/// `GetExitCodeProcess`'s answer for a process still running.
const STILL_ACTIVE: u32 = 259;

// --- the agent's job object ----------------------------------------------------------------

/// The job objects of running agents by process id, for [`signal_group`] and [`group_alive`].
/// Raw handles as integers; each stays open while it is listed (its [`AgentJob`] removes it
/// under the lock before closing it).
static JOBS: Mutex<Option<HashMap<i32, isize>>> = Mutex::new(None);

fn with_job<T>(pid: i32, f: impl FnOnce(HANDLE) -> T) -> Option<T> {
    let jobs = JOBS.lock().unwrap_or_else(PoisonError::into_inner);
    let raw = *jobs.as_ref()?.get(&pid)?;
    Some(f(raw as HANDLE))
}

/// A job object holding the agent and every process it starts, closed with
/// `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: when the proxy's last handle goes, however the proxy
/// ended, the system kills them all. This is what the guardian process does on Unix.
pub struct AgentJob {
    pid: i32,
    job: OwnedHandle,
}

impl AgentJob {
    /// Put the running process `pid` into a new job object. Processes it started before
    /// this call are not in the job (docs/platforms.md).
    pub fn assign(pid: i32) -> io::Result<AgentJob> {
        // SAFETY: no security attributes (the handle is not inherited) and no name.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a handle just created and owned by nobody else.
        let job = unsafe { OwnedHandle::from_raw_handle(raw) };
        // SAFETY: an all-zero limit structure is valid; only the flag below is set.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the pointer and size describe `limits`, which outlives the call.
        let set = unsafe {
            SetInformationJobObject(
                job.as_raw_handle(),
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast::<c_void>(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if set == 0 {
            return Err(io::Error::last_os_error());
        }
        let process = open_process(pid, PROCESS_SET_QUOTA | PROCESS_TERMINATE)?;
        // SAFETY: both handles are open for the duration of the call.
        if unsafe { AssignProcessToJobObject(job.as_raw_handle(), process.as_raw_handle()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut jobs = JOBS.lock().unwrap_or_else(PoisonError::into_inner);
        jobs.get_or_insert_with(HashMap::new)
            .insert(pid, job.as_raw_handle() as isize);
        Ok(AgentJob { pid, job })
    }
}

impl Drop for AgentJob {
    fn drop(&mut self) {
        let mut jobs = JOBS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(jobs) = jobs.as_mut() {
            jobs.remove(&self.pid);
        }
        // `self.job` closes after the lock is released: no lookup can see a closed handle.
        let _ = &self.job;
    }
}

fn open_process(pid: i32, access: u32) -> io::Result<OwnedHandle> {
    // SAFETY: OpenProcess has no memory-safety preconditions.
    let raw = unsafe { OpenProcess(access, 0, pid as u32) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just opened and owned by nobody else.
    Ok(unsafe { OwnedHandle::from_raw_handle(raw) })
}

// --- process "groups" ----------------------------------------------------------------------

/// Ask the agent's tree to stop: SIGINT and SIGTERM become a Ctrl-Break event to the agent's
/// console process group (it was started as one, [`own_process_group`]); SIGKILL ends every
/// process of its job (or the process alone if it has no job); 0 tests whether it is alive.
/// Returns false if nothing was there to signal.
pub fn signal_group(pid: i32, signal: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    match signal {
        0 => group_alive(pid),
        SIGKILL => with_job(pid, |job| {
            // SAFETY: the job handle stays open while the registry lock is held.
            unsafe { TerminateJobObject(job, 1) != 0 }
        })
        .unwrap_or_else(|| {
            open_process(pid, PROCESS_TERMINATE).is_ok_and(|p| {
                // SAFETY: `p` is an open process handle with terminate access.
                unsafe { TerminateProcess(p.as_raw_handle(), 1) != 0 }
            })
        }),
        // SAFETY: GenerateConsoleCtrlEvent has no memory-safety preconditions.
        _ => unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, pid as u32) != 0 },
    }
}

/// Whether any process of the agent's job (or the process, without a job) is running.
pub fn group_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    let in_job = with_job(pid, |job| {
        // SAFETY: an all-zero accounting structure is valid for the call to fill.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the pointer and size describe `info`; the job handle is open (lock held).
        let ok = unsafe {
            QueryInformationJobObject(
                job,
                JobObjectBasicAccountingInformation,
                (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast::<c_void>(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        ok != 0 && info.ActiveProcesses > 0
    });
    in_job.unwrap_or_else(|| {
        open_process(pid, PROCESS_QUERY_LIMITED_INFORMATION).is_ok_and(|p| {
            let mut code = 0u32;
            // SAFETY: `p` is open with query access; `code` is a valid out pointer.
            let ok = unsafe { GetExitCodeProcess(p.as_raw_handle(), &mut code) };
            ok != 0 && code == STILL_ACTIVE
        })
    })
}

/// Nothing on Windows: the job object ends the agent when the proxy dies.
pub fn term_when_parent_dies(cmd: &mut tokio::process::Command) {
    let _ = cmd;
}

/// Start the process as the root of a console process group of its own, so that a Ctrl-Break
/// event can be sent to it and its children alone.
pub fn own_process_group(cmd: &mut tokio::process::Command) {
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP);
}

/// A human description of an exit status: `exit status 3`.
pub fn describe_status(status: &ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => "unknown exit status".to_owned(),
    }
}

/// Windows processes are not ended by signals.
pub fn exit_signal(_status: &ExitStatus) -> Option<i32> {
    None
}

// --- console control events that end a session --------------------------------------------

/// Ctrl-C, and the events that mean "stop" (Ctrl-Break, the console closing, log-off,
/// shutdown), as streams the relay selects over.
pub struct StopSignals {
    pub interrupt: Interrupt,
    pub terminate: Terminate,
}

pub struct Interrupt(tokio::signal::windows::CtrlC);

impl Interrupt {
    pub async fn recv(&mut self) -> Option<()> {
        self.0.recv().await
    }
}

pub struct Terminate {
    ctrl_break: tokio::signal::windows::CtrlBreak,
    close: tokio::signal::windows::CtrlClose,
    logoff: tokio::signal::windows::CtrlLogoff,
    shutdown: tokio::signal::windows::CtrlShutdown,
}

impl Terminate {
    pub async fn recv(&mut self) -> Option<()> {
        tokio::select! {
            r = self.ctrl_break.recv() => r,
            r = self.close.recv() => r,
            r = self.logoff.recv() => r,
            r = self.shutdown.recv() => r,
        }
    }
}

/// Start listening for the events that end a session.
pub fn stop_signals() -> io::Result<StopSignals> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown};
    Ok(StopSignals {
        interrupt: Interrupt(ctrl_c()?),
        terminate: Terminate {
            ctrl_break: ctrl_break()?,
            close: ctrl_close()?,
            logoff: ctrl_logoff()?,
            shutdown: ctrl_shutdown()?,
        },
    })
}

// --- the allocator -------------------------------------------------------------------------

/// The system allocator keeps its defaults.
pub fn keep_read_buffers_mapped() {}

// --- files ---------------------------------------------------------------------------------

/// Files under the user's profile (where the proxy keeps its own) inherit an access list
/// that admits the user, administrators and the system only: nothing to add.
pub fn private_file(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts
}

/// See [`private_file`]: the inherited access list already makes the file private.
pub fn make_private(_file: &File) -> io::Result<()> {
    Ok(())
}

/// See [`private_file`].
pub fn tighten_to_private(_path: &Path) {}

/// Create `dir` and its missing parents (private by inheritance, see [`private_file`]).
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Read into `buf` from `offset` (moves the file's position, which no caller relies on).
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

/// Write all of `buf` at `offset` (moves the file's position, which no caller relies on).
pub fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_write(file, buf, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What tells a file apart from another one that took its name (a rotated dump): its
/// creation time (std offers no file index on stable Rust; NTFS "tunnelling" can carry a
/// Wait for an exclusive lock on the whole file (`LockFileEx`); [`unlock`] or closing the
/// file releases it.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    use windows_sys::Win32::Storage::FileSystem::{LockFileEx, LOCKFILE_EXCLUSIVE_LOCK};
    use windows_sys::Win32::System::IO::OVERLAPPED;
    // SAFETY: OVERLAPPED is plain data; all zeroes is the offset 0 it must say.
    let mut at: OVERLAPPED = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is `file`'s, open for the whole call; `at` outlives the call (the
    // handle is synchronous, so the call returns only once the lock is held).
    let ok = unsafe {
        LockFileEx(
            file.as_raw_handle(),
            LOCKFILE_EXCLUSIVE_LOCK,
            0,
            u32::MAX,
            u32::MAX,
            &mut at,
        )
    };
    if ok != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Release a lock [`lock_exclusive`] took.
pub fn unlock(file: &File) -> io::Result<()> {
    use windows_sys::Win32::Storage::FileSystem::UnlockFileEx;
    use windows_sys::Win32::System::IO::OVERLAPPED;
    // SAFETY: as in `lock_exclusive`.
    let mut at: OVERLAPPED = unsafe { std::mem::zeroed() };
    // SAFETY: as in `lock_exclusive`.
    let ok = unsafe { UnlockFileEx(file.as_raw_handle(), 0, u32::MAX, u32::MAX, &mut at) };
    if ok != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// creation time over to a file recreated under the same name within 15 s).
pub fn file_identity(meta: &std::fs::Metadata) -> u64 {
    std::os::windows::fs::MetadataExt::creation_time(meta)
}

/// Whether `path` is a file with an extension Windows runs (`PATHEXT`, else the usual ones).
pub fn is_executable(path: &Path) -> bool {
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
        return false;
    };
    let exts = std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".to_owned());
    path.is_file()
        && exts
            .split(';')
            .any(|e| e.trim_start_matches('.').eq_ignore_ascii_case(ext))
}

/// Whether this process may read and write `path` (opening it so is the test).
pub fn can_read_write(path: &Path) -> bool {
    OpenOptions::new().read(true).write(true).open(path).is_ok()
}

/// Whether files can be created in the folder `dir` (its read-only flag; access lists are
/// not evaluated).
pub fn can_create_in(dir: &Path) -> bool {
    std::fs::metadata(dir).is_ok_and(|m| m.is_dir() && !m.permissions().readonly())
}
