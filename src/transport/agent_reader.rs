//! The agent's output, read on a thread of its own once the engine models subagents: reading
//! the pipe, splitting lines and the engine's state-free reading of each frame ([`Scanner`])
//! then run beside the engine instead of in turn with it.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use bytes::BytesMut;
use futures::StreamExt;
use tokio::process::ChildStdout;
use tokio::sync::mpsc;
use tokio_util::codec::{Decoder, FramedRead};

use crate::engine::prescan::{AgentScan, Scanner};
use crate::transport::framing::{lines, Frame, LineCodec};

/// Reads in flight between the reader and the relay: with reads of up to `read_buf` bytes,
/// this bounds what the proxy holds of the agent's output while the client reads slowly
/// (the relay stops taking chunks when the client's queue is full, as it stopped reading).
const IN_FLIGHT: usize = 1;

/// One decoded frame and, for each of its lines, what the scanner found (empty for frames
/// read on the relay's thread and for pieces of oversized lines).
pub struct Chunk {
    pub frame: Frame,
    pub scans: Vec<AgentScan>,
}

/// The agent's output as frames: read on the relay's own thread until the engine models
/// subagents, then on a thread of its own that also scans every frame. (A pure relay keeps
/// reading in turn with its writes: one thread hop less per frame, and no read-ahead buffer.)
pub enum AgentOutput {
    Inline(FramedRead<ChildStdout, LineCodec>),
    Thread(mpsc::Receiver<io::Result<Chunk>>),
    /// The output could not be handed to the reader thread: read as ended.
    Ended,
}

impl AgentOutput {
    pub fn inline(stdout: ChildStdout, codec: LineCodec, read_buf: usize) -> AgentOutput {
        AgentOutput::Inline(FramedRead::with_capacity(stdout, codec, read_buf))
    }

    pub fn is_threaded(&self) -> bool {
        !matches!(self, AgentOutput::Inline(_))
    }

    /// Continue on a reader thread that scans each frame with `scanner`. Bytes already read
    /// and the decoder's state move along, so no frame is lost or split differently.
    pub fn start_thread(&mut self, scanner: Scanner, read_buf: usize) {
        let AgentOutput::Inline(framed) = std::mem::replace(self, AgentOutput::Ended) else {
            return;
        };
        let parts = framed.into_parts();
        let started = parts.io.into_owned_fd().and_then(|fd| {
            set_blocking(&fd)?;
            let (tx, rx) = mpsc::channel(IN_FLIGHT);
            let (buf, codec) = (parts.read_buf, parts.codec);
            std::thread::Builder::new()
                .name("acp-proxy-reader".into())
                .spawn(move || read_loop(fd, buf, codec, read_buf, &scanner, &tx))?;
            Ok(rx)
        });
        match started {
            Ok(rx) => *self = AgentOutput::Thread(rx),
            Err(e) => tracing::error!(
                "cannot read the agent's output on a thread of its own: {e}; ending the session"
            ),
        }
    }

    pub async fn next(&mut self) -> Option<io::Result<Chunk>> {
        match self {
            AgentOutput::Inline(framed) => framed.next().await.map(|r| {
                r.map(|frame| Chunk {
                    frame,
                    scans: Vec::new(),
                })
            }),
            AgentOutput::Thread(rx) => rx.recv().await,
            AgentOutput::Ended => None,
        }
    }
}

fn set_blocking(fd: &OwnedFd) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(raw, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn read_loop(
    fd: OwnedFd,
    mut buf: BytesMut,
    mut codec: LineCodec,
    read_buf: usize,
    scanner: &Scanner,
    tx: &mpsc::Sender<io::Result<Chunk>>,
) {
    let mut at_end = false;
    // Frames already complete in what the relay had read go first, then each read's.
    loop {
        loop {
            let decoded = if at_end {
                codec.decode_eof(&mut buf)
            } else {
                codec.decode(&mut buf)
            };
            let frame = match decoded {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            };
            let scans = match &frame {
                Frame::Lines(chunk) => lines(chunk)
                    .map(|(start, end)| scanner.scan(&chunk[start..end]))
                    .collect(),
                Frame::Line(line) => vec![scanner.scan(line)],
                Frame::Piece { .. } => Vec::new(),
            };
            // The relay is gone: nothing more to read for.
            if tx.blocking_send(Ok(Chunk { frame, scans })).is_err() {
                return;
            }
        }
        if at_end {
            return;
        }
        if buf.capacity() - buf.len() < read_buf / 4 {
            buf.reserve(read_buf);
        }
        match read_some(&fd, &mut buf) {
            Ok(0) => at_end = true,
            Ok(_) => {}
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        }
    }
}

/// One `read(2)` into the spare capacity of `buf`; 0 at the end of the output.
fn read_some(fd: &OwnedFd, buf: &mut BytesMut) -> io::Result<usize> {
    loop {
        let spare = buf.spare_capacity_mut();
        // SAFETY: read(2) writes at most `spare.len()` bytes into the spare capacity, and only
        // the `n` bytes it reports are marked as initialised below.
        let n = unsafe { libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let n = n as usize;
        // SAFETY: the kernel initialised `n` bytes of the spare capacity.
        unsafe { buf.set_len(buf.len() + n) };
        return Ok(n);
    }
}
