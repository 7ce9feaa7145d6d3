//! Everything the proxy does differently per operating system, in one place.
//!
//! The rest of the crate calls these functions and never names an OS: a Unix side (Linux,
//! macOS, the BSDs) and a Windows side with the same functions. docs/platforms.md describes
//! both, and what each platform was built and tested with.
//!
//! **Linux extras.** A few things only Linux offers make the proxy faster or its cleanup
//! quicker, each with a portable fallback that keeps the behaviour:
//!
//! | extra | Linux | elsewhere |
//! |---|---|---|
//! | parent-death signal for the agent | `PR_SET_PDEATHSIG` | the guardian alone |
//! | 1 MiB pipes for bulk output | `F_SETPIPE_SZ` | the system's pipe size |
//! | close-on-exec pipe in one call | `pipe2` | `pipe`, then `FD_CLOEXEC` |
//! | allocator thresholds | glibc `mallopt` | the allocator's defaults |
//! | the guardian's process name | `PR_SET_NAME` | the binary's name |
//! | zombie-only groups count as gone | `/proc/PID/stat` | `kill(-pgid, 0)` alone |
//! | the own binary when its file was replaced | `/proc/self/exe` | `current_exe()` |
//!
//! They are on when [`LINUX_EXTRAS`] is true: on Linux, unless the crate is built with the
//! `portable` feature, which runs the fallbacks on Linux so that what macOS runs is tested
//! here too (CI runs the lifecycle tests that way).

pub mod paths;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// Whether the Linux extras (see the module's documentation) are in use.
pub const LINUX_EXTRAS: bool = cfg!(all(target_os = "linux", not(feature = "portable")));

/// A short name of the platform as built, for `doctor`: `linux`, `linux (portable)`, `macos`,
/// `windows`.
pub fn name() -> String {
    if cfg!(target_os = "linux") && !LINUX_EXTRAS {
        "linux (portable build)".to_owned()
    } else {
        std::env::consts::OS.to_owned()
    }
}
