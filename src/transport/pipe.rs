//! The client's stdin and stdout as non-blocking descriptors driven by the runtime's reactor.
//!
//! `tokio::io::stdin()`/`stdout()` do every read and write on the blocking thread pool: each
//! one is a hand-off to another thread and back (futex wake-ups, a copy into the pool's own
//! buffer). For the pipes an editor gives its agent that costs more than the relaying itself.
//! When stdin/stdout are pipes or sockets they are put in non-blocking mode and polled with
//! [`AsyncFd`], like the agent's pipes already are. Anything else (a terminal, a file, /dev/null)
//! keeps tokio's blocking implementation: non-blocking mode on a shared terminal would leak into
//! the shell, and epoll does not accept regular files. The original file status flags are put
//! back when the wrapper is dropped.
//!
//! This is the Unix implementation; `pipe_windows.rs` is the Windows one (tokio's own pipes).

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client's stdin: non-blocking when it is a pipe or socket.
pub(crate) fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    match Pipe::new(io::stdin().as_fd()) {
        Some(p) => Box::new(p),
        None => Box::new(tokio::io::stdin()),
    }
}

/// The client's stdout: non-blocking when it is a pipe or socket (a pipe is also enlarged,
/// see [`enlarge`]).
pub(crate) fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    enlarge(io::stdout().as_fd());
    match Pipe::new(io::stdout().as_fd()) {
        Some(p) => Box::new(p),
        None => Box::new(tokio::io::stdout()),
    }
}

/// Ask for a larger buffer on a pipe that carries bulk traffic, where the platform allows it
/// ([`crate::platform::enlarge_pipe`]).
pub(crate) fn enlarge(fd: std::os::fd::BorrowedFd<'_>) {
    crate::platform::enlarge_pipe(fd);
}

/// The agent's end of a pipe as the reader moves it between threads.
pub(crate) type PipeEnd = OwnedFd;

/// The agent's stdout as a plain descriptor.
pub(crate) fn into_pipe_end(stdout: tokio::process::ChildStdout) -> io::Result<PipeEnd> {
    stdout.into_owned_fd()
}

/// A duplicated pipe or socket descriptor in non-blocking mode.
pub(crate) struct Pipe {
    fd: AsyncFd<OwnedFd>,
    /// File status flags before we set `O_NONBLOCK` (they belong to the shared open file).
    original_flags: libc::c_int,
}

impl Pipe {
    /// `None` when `fd` is not a pipe or socket, or cannot be set up; the caller then falls
    /// back to blocking I/O.
    pub(crate) fn new(fd: std::os::fd::BorrowedFd<'_>) -> Option<Pipe> {
        use crate::platform::FdKind;
        if !matches!(crate::platform::fd_kind(fd)?, FdKind::Pipe | FdKind::Socket) {
            return None;
        }
        let owned = fd.try_clone_to_owned().ok()?;
        let flags = set_nonblocking(&owned, true).ok()?;
        // SAFETY: `owned` is an open descriptor that the AsyncFd owns until it is dropped.
        match unsafe { AsyncFd::register(owned) } {
            Ok(fd) => Some(Pipe {
                fd,
                original_flags: flags,
            }),
            Err(e) => {
                let (owned, cause) = e.into_parts();
                tracing::debug!("stdio is not pollable ({cause}): using blocking I/O");
                // SAFETY: restoring the flags read above on the descriptor we duplicated.
                unsafe { libc::fcntl(owned.as_raw_fd(), libc::F_SETFL, flags) };
                None
            }
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: fcntl on the descriptor we still own.
        unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, self.original_flags) };
    }
}

fn cvt(n: libc::ssize_t) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

impl AsyncRead for Pipe {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        poll_read_fd(&self.fd, cx, buf)
    }
}

/// `read(2)` on a non-blocking descriptor once the reactor says it is readable.
fn poll_read_fd(
    fd: &AsyncFd<OwnedFd>,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    loop {
        let mut guard = ready!(fd.poll_read_ready(cx))?;
        // SAFETY: read(2) only writes initialised bytes into the unfilled part, and we
        // only mark as filled what it reports to have written.
        let unfilled = unsafe { buf.unfilled_mut() };
        let room = unfilled.len();
        let res = guard.try_io(|fd| read_uninit(fd.as_raw_fd(), unfilled));
        match res {
            Ok(Ok(n)) => {
                // SAFETY: the kernel initialised n bytes.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                // A pipe or stream socket returns less than asked only when it holds no
                // more: wait for the next readiness event instead of a read that would find
                // nothing (one system call less per frame of an interactive exchange). Bytes
                // that arrive meanwhile raise a new edge-triggered event, so none is missed.
                if n > 0 && n < room {
                    guard.clear_ready();
                }
                return Poll::Ready(Ok(()));
            }
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Ok(Err(e)) => return Poll::Ready(Err(e)),
            Err(_would_block) => continue,
        }
    }
}

/// A pipe we own outright (the agent's stdout), read in non-blocking mode by the reactor and
/// given back as a plain descriptor when another thread takes over reading it.
pub(crate) struct OwnedPipe(AsyncFd<OwnedFd>);

impl OwnedPipe {
    pub(crate) fn new(fd: OwnedFd) -> io::Result<OwnedPipe> {
        set_nonblocking(&fd, true)?;
        // SAFETY: `fd` is an open descriptor that the AsyncFd owns until it is dropped or
        // given back by `into_blocking`.
        match unsafe { AsyncFd::register(fd) } {
            Ok(fd) => Ok(OwnedPipe(fd)),
            Err(e) => Err(e.into_parts().1),
        }
    }

    /// The descriptor, in blocking mode.
    pub(crate) fn into_blocking(self) -> io::Result<OwnedFd> {
        let fd = self.0.into_inner();
        set_nonblocking(&fd, false)?;
        Ok(fd)
    }
}

impl AsyncRead for OwnedPipe {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        poll_read_fd(&self.0, cx, buf)
    }
}

/// One `read(2)` into the spare capacity of `buf`, retried when interrupted; 0 at the end of
/// the input.
pub(crate) fn read_into(fd: &OwnedFd, buf: &mut bytes::BytesMut) -> io::Result<usize> {
    loop {
        match read_uninit(fd.as_raw_fd(), buf.spare_capacity_mut()) {
            Ok(n) => {
                // SAFETY: the kernel initialised `n` bytes of the spare capacity.
                unsafe { buf.set_len(buf.len() + n) };
                return Ok(n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `read(2)` into memory that need not be initialised; how many bytes it wrote there (the
/// caller marks those as initialised).
fn read_uninit(fd: std::os::fd::RawFd, dst: &mut [std::mem::MaybeUninit<u8>]) -> io::Result<usize> {
    // SAFETY: read(2) writes at most `dst.len()` bytes into `dst`, a valid writable slice.
    cvt(unsafe { libc::read(fd, dst.as_mut_ptr().cast(), dst.len()) })
}

/// Set or clear `O_NONBLOCK` on a descriptor we own; the file status flags it had before.
fn set_nonblocking(fd: &OwnedFd, on: bool) -> io::Result<libc::c_int> {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    let want = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(raw, libc::F_SETFL, want) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(flags)
}

impl AsyncWrite for Pipe {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            let res = guard.try_io(|fd| {
                // SAFETY: write(2) reads buf.len() bytes from a valid slice.
                cvt(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
            });
            match res {
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(r) => return Poll::Ready(r),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            let count = bufs.len().min(1024) as libc::c_int;
            let res = guard.try_io(|fd| {
                // SAFETY: IoSlice is ABI-compatible with iovec; count does not exceed
                // bufs.len().
                cvt(unsafe { libc::writev(fd.as_raw_fd(), bufs.as_ptr().cast(), count) })
            });
            match res {
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(r) => return Poll::Ready(r),
                Err(_would_block) => continue,
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A new pipe, (read end, write end), for tests.
#[cfg(test)]
pub(crate) fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills the two descriptors we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    use std::os::fd::FromRawFd;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn relays_bytes_through_a_pipe_and_restores_flags() {
        let (r, w) = pipe();
        let mut reader = Pipe::new(r.as_fd()).expect("a pipe is pollable");
        let mut writer = Pipe::new(w.as_fd()).expect("a pipe is pollable");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let expect = data.clone();
        let send = tokio::spawn(async move {
            writer.write_all(&data).await.expect("write");
            drop(writer);
        });
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.len() < expect.len() {
            let n = reader.read(&mut buf).await.expect("read");
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        send.await.expect("writer task");
        assert_eq!(got, expect);
        drop(reader);
        // SAFETY: F_GETFL on a descriptor we own.
        let flags = unsafe { libc::fcntl(r.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0, "blocking mode restored");
    }

    #[test]
    fn regular_files_are_left_alone() {
        let f = tempfile::tempfile().expect("tempfile");
        assert!(Pipe::new(f.as_fd()).is_none());
    }
}
