//! The client's stdio and the agent's stdout on Windows: tokio's own implementations.
//!
//! Anonymous pipes on Windows cannot be polled (no overlapped I/O), so tokio reads and writes
//! them on its blocking pool; this is what `pipe.rs` does by hand on Unix, where it is faster.
//! The agent's stdout moves between the relay and the reader thread as a plain `File`.

use std::fs::File;
use std::io::{self, Read};
use std::os::windows::io::OwnedHandle;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client's stdin.
pub(crate) fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    Box::new(tokio::io::stdin())
}

/// The client's stdout.
pub(crate) fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    Box::new(tokio::io::stdout())
}

/// The agent's end of a pipe as the reader moves it between threads.
pub(crate) type PipeEnd = File;

/// The agent's stdout as a plain handle.
pub(crate) fn into_pipe_end(stdout: tokio::process::ChildStdout) -> io::Result<PipeEnd> {
    Ok(File::from(stdout.into_owned_handle()?))
}

/// The agent's stdout, read through tokio.
pub(crate) struct OwnedPipe(tokio::process::ChildStdout);

impl OwnedPipe {
    pub(crate) fn new(end: PipeEnd) -> io::Result<OwnedPipe> {
        let std = std::process::ChildStdout::from(OwnedHandle::from(end));
        tokio::process::ChildStdout::from_std(std).map(OwnedPipe)
    }

    /// The handle, for blocking reads on another thread.
    pub(crate) fn into_blocking(self) -> io::Result<PipeEnd> {
        into_pipe_end(self.0)
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

/// One read into the spare capacity of `buf`, retried when interrupted; 0 at the end of the
/// input.
pub(crate) fn read_into(end: &PipeEnd, buf: &mut bytes::BytesMut) -> io::Result<usize> {
    let start = buf.len();
    // `Read` wants initialised memory: zero the spare capacity, keep what was read.
    buf.resize(buf.capacity(), 0);
    let result = loop {
        match (&*end).read(&mut buf[start..]) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other,
        }
    };
    buf.truncate(start + *result.as_ref().unwrap_or(&0));
    result
}
