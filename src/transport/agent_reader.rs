//! The agent's output as frames, read where it costs least.
//!
//! While the agent streams (a read returns a large backlog) and the engine models subagents,
//! a thread of its own reads the pipe, splits lines and does the engine's state-free reading
//! of each frame ([`Scanner`]): that work then runs beside the engine instead of in turn with
//! it. While the agent is quiet or interactive (small reads, the relay keeping up), the relay
//! reads on its own thread: one thread hop less per frame, which is what an editor waiting for
//! a permission request feels. The descriptor, the bytes read but not yet split and the line
//! decoder's state move with each switch, so no frame is lost, reordered or split differently.

use std::io;

use bytes::BytesMut;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::codec::{Decoder, FramedRead};

use crate::transport::framing::{Frame, LineCodec};
use crate::transport::pipe::{read_into, OwnedPipe, PipeEnd};
use crate::wire::read_ahead::{RunScan, Scanner};

/// Chunks in flight between the reader thread and the relay: one, so the thread reads ahead
/// by at most one read while the relay works (and nothing while the client's queue is full:
/// the relay then stops taking chunks, as it stops reading inline).
const IN_FLIGHT: usize = 1;
/// An inline read of at least this much means the agent is streaming: reading moves to the
/// thread.
const STREAMING_READ: usize = 256 * 1024;
/// Bytes asked for per read on the thread: half the relay's inline reads, so the buffers that
/// queued frames keep alive are half the size (no loss of speed measured against 1 MiB).
const THREAD_READ: usize = 512 * 1024;
/// Reads on the thread below this size, with the relay waiting for them ...
const SPARSE_READ: usize = 16 * 1024;
/// ... this many times in a row, and reading moves back to the relay's thread.
const SPARSE_READS: u32 = 4;

/// One decoded frame and the lines of it that hold a key, with what the scanner found in
/// them (none for frames read inline and for pieces of oversized lines).
pub(crate) struct Chunk {
    pub frame: Frame,
    pub scan: Option<RunScan>,
}

enum Msg {
    Chunk(io::Result<Chunk>),
    /// The thread stops: reading continues inline from this state.
    Handback(PipeEnd, BytesMut, LineCodec),
}

/// Where the agent's output is read now (see the module documentation).
pub(crate) struct AgentOutput {
    state: State,
    /// The reader thread's scanner (a clone), to pass it the engine's hints.
    scanner: Option<Scanner>,
    /// Bytes asked for per read.
    read_buf: usize,
    /// The last frame came from an inline read of at least [`STREAMING_READ`] bytes.
    streaming: bool,
}

enum State {
    Inline(FramedRead<OwnedPipe, LineCodec>),
    Thread(mpsc::Receiver<Msg>),
    /// The output could not be moved between threads: read as ended.
    Ended,
}

impl AgentOutput {
    pub(crate) fn new(
        stdout: PipeEnd,
        codec: LineCodec,
        read_buf: usize,
    ) -> io::Result<AgentOutput> {
        let pipe = OwnedPipe::new(stdout)?;
        Ok(AgentOutput {
            state: State::Inline(FramedRead::with_capacity(pipe, codec, read_buf)),
            scanner: None,
            read_buf,
            streaming: false,
        })
    }

    /// After the relay handled a frame: move reading to a thread if the agent is streaming and
    /// a scanner is at hand (the engine models subagents). `new_tool_calls`: whether the
    /// engine reads new tool calls now (a hint for the thread's scanner).
    pub(crate) fn after_chunk(
        &mut self,
        scanner: impl FnOnce() -> Option<Scanner>,
        new_tool_calls: bool,
    ) {
        if let Some(s) = &self.scanner {
            s.reads_new_tool_calls(new_tool_calls);
        }
        if !std::mem::take(&mut self.streaming) {
            return;
        }
        let Some(scanner) = scanner() else { return };
        scanner.reads_new_tool_calls(new_tool_calls);
        let State::Inline(framed) = std::mem::replace(&mut self.state, State::Ended) else {
            return;
        };
        let read_buf = THREAD_READ.min(self.read_buf);
        let hints = scanner.clone();
        let parts = framed.into_parts();
        let started = parts.io.into_blocking().and_then(|fd| {
            let (tx, rx) = mpsc::channel(IN_FLIGHT);
            let (buf, codec) = (parts.read_buf, parts.codec);
            std::thread::Builder::new()
                .name("acp-proxy-reader".into())
                .spawn(move || read_loop(fd, buf, codec, read_buf, &scanner, &tx))?;
            Ok(rx)
        });
        match started {
            Ok(rx) => {
                tracing::debug!("the agent streams: its output is read on a thread of its own");
                self.state = State::Thread(rx);
                self.scanner = Some(hints);
            }
            Err(e) => tracing::error!(
                "cannot read the agent's output on a thread of its own: {e}; ending the session"
            ),
        }
    }

    /// The next frame; `None` after the end of the output.
    pub(crate) async fn next(&mut self) -> Option<io::Result<Chunk>> {
        loop {
            match &mut self.state {
                State::Inline(framed) => {
                    let frame = framed.next().await?;
                    self.streaming = frame
                        .as_ref()
                        .is_ok_and(|f| f.bytes().len() >= STREAMING_READ);
                    return Some(frame.map(|frame| Chunk { frame, scan: None }));
                }
                State::Thread(rx) => match rx.recv().await? {
                    Msg::Chunk(chunk) => return Some(chunk),
                    Msg::Handback(fd, buf, codec) => {
                        self.state = inline_again(fd, buf, codec, self.read_buf)
                    }
                },
                State::Ended => return None,
            }
        }
    }
}

fn inline_again(fd: PipeEnd, buf: BytesMut, codec: LineCodec, read_buf: usize) -> State {
    match OwnedPipe::new(fd) {
        Ok(pipe) => {
            tracing::debug!("the agent's output slowed down: read on the relay's thread again");
            let mut framed = FramedRead::with_capacity(pipe, codec, read_buf);
            // The start of a line the thread read but could not split yet.
            framed.read_buffer_mut().extend_from_slice(&buf);
            State::Inline(framed)
        }
        Err(e) => {
            tracing::error!("cannot read the agent's output again on the relay's thread: {e}; ending the session");
            State::Ended
        }
    }
}

fn read_loop(
    fd: PipeEnd,
    mut buf: BytesMut,
    mut codec: LineCodec,
    read_buf: usize,
    scanner: &Scanner,
    tx: &mpsc::Sender<Msg>,
) {
    let mut at_end = false;
    let mut sparse = 0;
    let mut buffers = Buffers::default();
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
                    let _ = tx.blocking_send(Msg::Chunk(Err(e)));
                    return;
                }
            };
            let scan = match &frame {
                Frame::Lines(run) | Frame::Line(run) => Some(scanner.scan_run(run)),
                Frame::Piece { .. } => None,
            };
            // The relay is gone: nothing more to read for.
            if tx
                .blocking_send(Msg::Chunk(Ok(Chunk { frame, scan })))
                .is_err()
            {
                return;
            }
        }
        if at_end {
            return;
        }
        if sparse >= SPARSE_READS {
            let _ = tx.blocking_send(Msg::Handback(fd, buf, codec));
            return;
        }
        if buf.capacity() - buf.len() < read_buf / 4 {
            buf = buffers.next(buf, read_buf);
        }
        match read_into(&fd, &mut buf) {
            Ok(0) => at_end = true,
            // A small read while the relay has taken everything sent so far (it waits for
            // this one): the agent is not streaming.
            Ok(n) if n < SPARSE_READ && tx.capacity() == tx.max_capacity() => sparse += 1,
            Ok(_) => sparse = 0,
            Err(e) => {
                let _ = tx.blocking_send(Msg::Chunk(Err(e)));
                return;
            }
        }
    }
}

/// Read buffers the thread cycles through. A buffer's frames stay alive until the client's
/// writer has sent them, so the buffer just filled is rarely free again by the next read;
/// one of the few before it usually is, and is reused instead of allocating a new one: the
/// allocator's heap for this thread then stays the same size however long the stream.
#[derive(Default)]
struct Buffers {
    /// Buffers handed out earlier, oldest first; each may still be shared with frames.
    used: std::collections::VecDeque<BytesMut>,
}

/// Buffers kept for reuse; past that the oldest is let go.
const KEPT_BUFFERS: usize = 2;

impl Buffers {
    /// A buffer with room for at least a quarter of `read_buf` more bytes, holding
    /// `current`'s unsplit bytes (the start of a line); `current` is kept for reuse.
    fn next(&mut self, mut current: BytesMut, read_buf: usize) -> BytesMut {
        let tail = current.split();
        self.used.push_back(current);
        let size = buffer_size(tail.len(), read_buf);
        // Only a buffer no frame refers to any more gets its whole capacity back.
        let reused = (0..self.used.len()).find(|&i| self.used[i].try_reclaim(size));
        let mut buf = match reused.and_then(|i| self.used.remove(i)) {
            Some(b) => b,
            None => BytesMut::with_capacity(size),
        };
        buf.extend_from_slice(&tail);
        while self.used.len() > KEPT_BUFFERS {
            self.used.pop_front();
        }
        buf
    }
}

/// The capacity of a new read buffer that starts with `tail` bytes: `read_buf`, or a power
/// of two times it for the start of a long line. Few, equal sizes let the allocator reuse a
/// freed buffer's memory for the next one; sizes that follow each tail's length leave the
/// heap in pieces too small for the next buffer (a snapshot of this thread's heap on
/// rewrite-heavy traffic: 9.8 of 15.1 MiB free, in 38 pieces, before; 5.6 of 12.9 after).
fn buffer_size(tail: usize, read_buf: usize) -> usize {
    let read_buf = read_buf.max(1);
    let needed = tail + read_buf / 4;
    read_buf * needed.div_ceil(read_buf).next_power_of_two()
}

// The tests drive a Unix pipe by hand.
#[cfg(all(test, unix))]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::engine::{Engine, EngineConfig};

    fn pipe() -> (PipeEnd, std::fs::File) {
        let (r, w) = crate::transport::pipe::pipe();
        (r, std::fs::File::from(w))
    }

    async fn next_line(out: &mut AgentOutput) -> (Vec<u8>, bool, bool) {
        let chunk = out.next().await.expect("a frame").expect("read");
        // Read inline exactly when reading is inline once the frame is out.
        let inline = matches!(out.state, State::Inline(_));
        (chunk.frame.bytes().to_vec(), inline, chunk.scan.is_some())
    }

    #[tokio::test]
    #[cfg_attr(
        not(all(target_os = "linux", not(feature = "portable"))),
        ignore = "needs a pipe that holds the whole burst (Linux's F_SETPIPE_SZ)"
    )]
    async fn a_partial_line_moves_with_the_reading_both_ways() {
        tokio::time::timeout(std::time::Duration::from_secs(20), switch_both_ways())
            .await
            .expect("no hang");
    }

    async fn switch_both_ways() {
        let scanner = Engine::new(EngineConfig::default()).scanner();
        let (r, mut w) = pipe();
        // Room for the whole burst, written before it is read.
        crate::transport::pipe::enlarge(std::os::fd::AsFd::as_fd(&w));
        let mut out = AgentOutput::new(r, LineCodec::batched(1 << 20), 1 << 20).expect("pipe");
        // A large read (the agent streams) that ends inside a line.
        let big = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(STREAMING_READ));
        w.write_all(format!("{big}{{\"partial\":").as_bytes())
            .expect("write");
        let (line, inline, _) = next_line(&mut out).await;
        assert_eq!((line, inline), (big.clone().into_bytes(), true));
        out.after_chunk(|| Some(scanner), true);
        assert!(
            matches!(out.state, State::Thread(_)),
            "reading moved to the thread"
        );
        // The thread finishes the line the relay had started reading.
        w.write_all(b"1}\n").expect("write");
        assert_eq!(
            next_line(&mut out).await,
            (b"{\"partial\":1}\n".to_vec(), false, true)
        );
        for line in [&b"{\"a\":1}\n"[..], b"{\"a\":2}\n"] {
            w.write_all(line).expect("write");
            assert_eq!(next_line(&mut out).await, (line.to_vec(), false, true));
        }
        // A fourth small read in a row, again inside a line: the relay reads again, from the
        // bytes the thread had.
        w.write_all(b"{\"b\":").expect("write");
        std::thread::sleep(std::time::Duration::from_millis(100));
        w.write_all(b"2}\n").expect("write");
        assert_eq!(
            next_line(&mut out).await,
            (b"{\"b\":2}\n".to_vec(), true, false)
        );
        drop(w);
        assert!(out.next().await.is_none(), "end of the output");
    }

    #[test]
    fn buffers_come_in_few_sizes_with_room_for_a_read() {
        let mb = 1 << 20;
        for (tail, size) in [
            (0, mb),
            (mb / 2, mb),
            (3 * mb / 4, mb),
            (3 * mb / 4 + 1, 2 * mb),
            (2 * mb, 4 * mb),
        ] {
            assert_eq!(buffer_size(tail, mb), size, "tail {tail}");
            assert!(size - tail >= mb / 4);
        }
    }
}
