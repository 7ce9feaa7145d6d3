//! The client's stdin and stdout as non-blocking descriptors driven by the runtime's reactor.
//!
//! `tokio::io::stdin()`/`stdout()` do every read and write on the blocking thread pool: each
//! one is a hand-off to another thread and back (futex wake-ups, a copy into the pool's own
//! buffer). For the pipes an editor gives its agent that costs more than the relaying itself.
//! When stdin/stdout are pipes or sockets, a duplicate of each is polled by the reactor as
//! tokio's own pipe types (`tokio::net::unix::pipe`), as the agent's stdout is. Anything else
//! (a terminal, a file, /dev/null) keeps tokio's blocking implementation: non-blocking mode on
//! a shared terminal would leak into the shell, and epoll does not accept regular files. The
//! original file status flags are put back when the wrapper is dropped (they belong to the
//! open file, which the editor shares).
//!
//! The hand-written polling this replaced was measured against these types on the bench's
//! traffic (docs/performance.md, "Pipes and the reader thread").
//!
//! This is the Unix implementation; `pipe_windows.rs` is the Windows one (tokio's own pipes).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use rustix::fs::OFlags;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// The client's stdin: non-blocking when it is a pipe or socket.
pub(crate) fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    match Restoring::new(io::stdin().as_fd(), pipe::Receiver::from_owned_fd_unchecked) {
        Some(p) => Box::new(p),
        None => Box::new(tokio::io::stdin()),
    }
}

/// The client's stdout: non-blocking when it is a pipe or socket (a pipe is also enlarged,
/// see [`enlarge`]).
pub(crate) fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    enlarge(io::stdout().as_fd());
    match Restoring::new(io::stdout().as_fd(), pipe::Sender::from_owned_fd_unchecked) {
        Some(p) => Box::new(p),
        None => Box::new(tokio::io::stdout()),
    }
}

/// Ask for a larger buffer on a pipe that carries bulk traffic, where the platform allows it
/// ([`crate::platform::enlarge_pipe`]).
pub(crate) fn enlarge(fd: BorrowedFd<'_>) {
    crate::platform::enlarge_pipe(fd);
}

/// The agent's end of a pipe as the reader moves it between threads.
pub(crate) type PipeEnd = OwnedFd;

/// The agent's stdout as a plain descriptor.
pub(crate) fn into_pipe_end(stdout: tokio::process::ChildStdout) -> io::Result<PipeEnd> {
    stdout.into_owned_fd()
}

/// A duplicated pipe or socket descriptor in non-blocking mode, as one of tokio's pipe
/// types; its original file status flags are put back when it is dropped.
pub(crate) struct Restoring<T: AsFd> {
    io: T,
    /// File status flags before `O_NONBLOCK` was set (they belong to the shared open file).
    original_flags: OFlags,
}

impl<T: AsFd> Restoring<T> {
    /// `None` when `fd` is not a pipe or socket, or cannot be set up; the caller then falls
    /// back to blocking I/O.
    fn new(fd: BorrowedFd<'_>, open: fn(OwnedFd) -> io::Result<T>) -> Option<Restoring<T>> {
        use crate::platform::FdKind;
        if !matches!(crate::platform::fd_kind(fd)?, FdKind::Pipe | FdKind::Socket) {
            return None;
        }
        let original_flags = rustix::fs::fcntl_getfl(fd).ok()?;
        let owned = fd.try_clone_to_owned().ok()?;
        // tokio's `*_unchecked` constructors leave the mode to the caller.
        rustix::fs::fcntl_setfl(&owned, original_flags | OFlags::NONBLOCK).ok()?;
        match open(owned) {
            Ok(io) => Some(Restoring { io, original_flags }),
            Err(cause) => {
                tracing::debug!("stdio is not pollable ({cause}): using blocking I/O");
                // The duplicate is gone; the flags are the open file's, shared with `fd`.
                let _ = rustix::fs::fcntl_setfl(fd, original_flags);
                None
            }
        }
    }
}

impl<T: AsFd> Drop for Restoring<T> {
    fn drop(&mut self) {
        let _ = rustix::fs::fcntl_setfl(self.io.as_fd(), self.original_flags);
    }
}

impl<T: AsFd + AsyncRead + Unpin> AsyncRead for Restoring<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsFd + AsyncWrite + Unpin> AsyncWrite for Restoring<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A pipe we own outright (the agent's stdout), read in non-blocking mode by the reactor and
/// given back as a plain descriptor when another thread takes over reading it.
pub(crate) struct OwnedPipe(pipe::Receiver);

impl OwnedPipe {
    pub(crate) fn new(fd: OwnedFd) -> io::Result<OwnedPipe> {
        pipe::Receiver::from_owned_fd(fd).map(OwnedPipe)
    }

    /// The descriptor, in blocking mode.
    pub(crate) fn into_blocking(self) -> io::Result<OwnedFd> {
        self.0.into_blocking_fd()
    }
}

impl AsyncRead for OwnedPipe {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

/// One `read(2)` into the spare capacity of `buf`, retried when interrupted; 0 at the end of
/// the input.
pub(crate) fn read_into(fd: &OwnedFd, buf: &mut bytes::BytesMut) -> io::Result<usize> {
    loop {
        match rustix::io::read(fd, buf.spare_capacity_mut()) {
            Ok((filled, _)) => {
                let n = filled.len();
                // SAFETY: the kernel initialised `n` bytes of the spare capacity.
                unsafe { buf.set_len(buf.len() + n) };
                return Ok(n);
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A new pipe, (read end, write end), for tests.
#[cfg(test)]
pub(crate) fn pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe().expect("pipe(2)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn relays_bytes_through_a_pipe_and_restores_flags() {
        let (r, w) = pipe();
        let mut reader = Restoring::new(r.as_fd(), pipe::Receiver::from_owned_fd_unchecked)
            .expect("a pipe is pollable");
        let mut writer = Restoring::new(w.as_fd(), pipe::Sender::from_owned_fd_unchecked)
            .expect("a pipe is pollable");
        assert!(rustix::fs::fcntl_getfl(&r)
            .expect("flags")
            .contains(OFlags::NONBLOCK));
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
        let flags = rustix::fs::fcntl_getfl(&r).expect("flags");
        assert!(!flags.contains(OFlags::NONBLOCK), "blocking mode restored");
    }

    #[tokio::test]
    async fn a_socket_is_polled_too() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("socketpair");
        assert!(Restoring::new(a.as_fd(), pipe::Receiver::from_owned_fd_unchecked).is_some());
    }

    #[test]
    fn regular_files_are_left_alone() {
        let f = tempfile::tempfile().expect("tempfile");
        assert!(Restoring::new(f.as_fd(), pipe::Receiver::from_owned_fd_unchecked).is_none());
    }
}
