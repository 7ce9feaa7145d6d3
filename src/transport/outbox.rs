//! A byte-bounded queue in front of a writer task.
//!
//! The relay loop checks [`Outbox::has_room`] before it reads the *opposite* side, so a slow
//! reader slows down its writer (honest backpressure) without ever dropping a frame and
//! without stalling the other direction.
//!
//! While nothing is queued, the frames for a pipe or socket are written right where they are
//! sent, without waiting (the frames one read from the other side gave, in one `writev`): the
//! writer task only takes what the pipe did not (a full pipe, a partial write). An interactive
//! exchange (a permission request and its answer) then costs no hop to the writer task and
//! back (docs/performance.md, "Round trips, the relay's loop").

use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Mutex, Notify};

type Sink = Box<dyn AsyncWrite + Unpin + Send>;

struct Shared {
    queued: AtomicUsize,
    drained: Notify,
    closed: AtomicBool,
    /// Held by the writer task while it writes a batch; taken by [`Outbox::send`] for a write
    /// in place while nothing is queued.
    sink: Mutex<Sink>,
    /// The sink writes through (a pipe or socket: vectored writes, nothing to flush), so a
    /// frame may be written in place.
    in_place: bool,
}

/// Sending half: cheap to clone, never blocks.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Bytes>,
    shared: Arc<Shared>,
    high_water: usize,
}

impl Outbox {
    /// Start a writer task for `sink`. It stops when every `Outbox` clone is dropped (after
    /// writing what was queued) or when a write fails; `done` then fires with the error, if any.
    pub(crate) fn spawn<W>(
        sink: W,
        high_water: usize,
    ) -> (Outbox, tokio::task::JoinHandle<std::io::Result<()>>)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        // Tokio's blocking stdout (a terminal, a file) buffers and is not vectored: written by
        // the task only.
        let in_place = sink.is_write_vectored();
        let shared = Arc::new(Shared {
            queued: AtomicUsize::new(0),
            drained: Notify::new(),
            closed: AtomicBool::new(false),
            sink: Mutex::new(Box::new(sink)),
            in_place,
        });
        let task = tokio::spawn(write_loop(rx, shared.clone()));
        (
            Outbox {
                tx,
                shared,
                high_water,
            },
            task,
        )
    }

    /// Queue bytes for writing. Returns false if the writer has stopped (peer gone).
    pub(crate) fn send(&self, bytes: Bytes) -> bool {
        self.send_all(&mut vec![bytes], true)
    }

    /// Queue `frames` for writing, in order, leaving the vector empty (its capacity kept);
    /// `in_place`: they may be written right here. Returns false if the writer has stopped
    /// (peer gone).
    pub(crate) fn send_all(&self, frames: &mut Vec<Bytes>, in_place: bool) -> bool {
        if self.shared.closed.load(Ordering::Acquire) {
            frames.clear();
            return false;
        }
        let written = if in_place {
            self.write_in_place(frames)
        } else {
            0
        };
        let mut sent = true;
        for bytes in frames.drain(..).skip(written) {
            self.shared.queued.fetch_add(bytes.len(), Ordering::AcqRel);
            sent &= self.tx.send(bytes).is_ok();
        }
        sent
    }

    /// Write `frames` now if nothing is queued before them and the sink takes them without
    /// waiting, in as few writes as it allows; returns how many were written whole (the next
    /// one may have been written in part: its bytes are advanced past what was). A write error
    /// is left for the writer task to meet again and report.
    fn write_in_place(&self, frames: &mut [Bytes]) -> usize {
        let shared = &*self.shared;
        if !shared.in_place || shared.queued.load(Ordering::Acquire) != 0 {
            return 0;
        }
        // A stream's reads go to the writer task, which batches them while the peer is behind.
        if frames.iter().map(Bytes::len).sum::<usize>() > IN_PLACE_MAX {
            return 0;
        }
        let Ok(mut sink) = shared.sink.try_lock() else {
            return 0;
        };
        // Nothing queued: the writer task waits for the next frame, and the sink's readiness
        // is ours to ask. A pipe that is full answers `Pending` (the no-op waker is replaced by
        // the writer task's as soon as it writes).
        let mut cx = Context::from_waker(Waker::noop());
        let mut first = 0;
        while first < frames.len() {
            let rest = &frames[first..];
            let (wrote, asked) = match rest {
                [one] => (Pin::new(&mut *sink).poll_write(&mut cx, one), one.len()),
                _ => {
                    let slices: Vec<IoSlice<'_>> = rest
                        .iter()
                        .take(BATCH_FRAMES)
                        .map(|b| IoSlice::new(b))
                        .collect();
                    let asked = slices.iter().map(|s| s.len()).sum();
                    (
                        Pin::new(&mut *sink).poll_write_vectored(&mut cx, &slices),
                        asked,
                    )
                }
            };
            match wrote {
                Poll::Ready(Ok(n)) if n > 0 => {
                    consume(frames, &mut first, n);
                    // A short write: the pipe is full, and asking again would only say so.
                    if n < asked {
                        break;
                    }
                }
                _ => break,
            }
        }
        first
    }

    /// Whether more may be queued without passing the high-water mark.
    pub(crate) fn has_room(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
            || self.shared.queued.load(Ordering::Acquire) < self.high_water
    }

    /// Wait until the queue drains below the high-water mark (or the writer stops).
    pub(crate) async fn room(&self) {
        loop {
            let notified = self.shared.drained.notified();
            if self.has_room() {
                return;
            }
            notified.await;
        }
    }

    /// Whether the writer stopped because the peer is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}

async fn write_loop(
    rx: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
) -> std::io::Result<()> {
    let result = if shared.in_place {
        write_vectored_loop(rx, &shared).await
    } else {
        write_buffered_loop(rx, &shared).await
    };
    if result.is_err() {
        shared.closed.store(true, Ordering::Release);
        shared.drained.notify_waiters();
    }
    result
}

/// The most bytes written in place at once. An exchange's frames are smaller (a permission
/// request is rarely over 16 KiB); a stream's reads are larger and go to the writer task,
/// which sends several in one `writev` while the peer is behind (64 KiB here doubled the
/// system calls of a pure relay's stream: a write per read).
const IN_PLACE_MAX: usize = 16 * 1024;

/// Frames written per batch at most (bytes, count): bounds the latency of a drained notice.
const BATCH_BYTES: usize = 1024 * 1024;
const BATCH_FRAMES: usize = 512;

/// For sinks that take `writev`: the queued frames go out as they are, with no copy into a
/// buffer, in as few system calls as the pipe allows.
async fn write_vectored_loop(
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    shared: &Shared,
) -> std::io::Result<()> {
    let mut batch: Vec<Bytes> = Vec::with_capacity(BATCH_FRAMES);
    while let Some(first) = rx.recv().await {
        let mut written = first.len();
        batch.push(first);
        // Coalesce whatever else is already queued: low latency when idle, few syscalls
        // under load.
        while written < BATCH_BYTES && batch.len() < BATCH_FRAMES {
            match rx.try_recv() {
                Ok(more) => {
                    written += more.len();
                    batch.push(more);
                }
                Err(_) => break,
            }
        }
        {
            let mut out = shared.sink.lock().await;
            write_all_vectored(&mut *out, &mut batch).await?;
            out.flush().await?;
        }
        // Released before the count drops to zero: a send that then sees nothing queued may
        // write in place.
        shared.queued.fetch_sub(written, Ordering::AcqRel);
        shared.drained.notify_waiters();
    }
    shared.sink.lock().await.shutdown().await
}

/// Write every frame of `batch` (emptying it), resuming after partial writes.
async fn write_all_vectored<W>(out: &mut W, batch: &mut Vec<Bytes>) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut first = 0;
    while first < batch.len() {
        let slices: Vec<std::io::IoSlice<'_>> = batch[first..]
            .iter()
            .map(|b| std::io::IoSlice::new(b))
            .collect();
        let n = out.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        consume(batch, &mut first, n);
    }
    batch.clear();
    Ok(())
}

/// `n` bytes of `frames[*first..]` were written: move `first` past the frames written whole
/// (and empty ones), and the next one's start past what was written of it.
fn consume(frames: &mut [Bytes], first: &mut usize, mut n: usize) {
    while n > 0 {
        let len = frames[*first].len();
        if n >= len {
            n -= len;
            *first += 1;
        } else {
            frames[*first].advance(n);
            n = 0;
        }
    }
    while *first < frames.len() && frames[*first].is_empty() {
        *first += 1;
    }
}

/// For sinks without vectored writes (tokio's blocking stdout on a terminal or file): copy
/// into one buffer and flush it once per batch.
async fn write_buffered_loop(
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    shared: &Shared,
) -> std::io::Result<()> {
    let mut sink = shared.sink.lock().await;
    let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, &mut *sink);
    while let Some(first) = rx.recv().await {
        let mut written = first.len();
        out.write_all(&first).await?;
        while let Ok(more) = rx.try_recv() {
            written += more.len();
            out.write_all(&more).await?;
            if written >= BATCH_BYTES {
                break;
            }
        }
        out.flush().await?;
        shared.queued.fetch_sub(written, Ordering::AcqRel);
        shared.drained.notify_waiters();
    }
    out.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    /// A sink that takes at most `max` bytes per call, vectored or not, and answers every
    /// `pending_every`-th call with `Pending` (waking the caller at once) when that is not 0.
    struct Trickle {
        got: Arc<StdMutex<Vec<u8>>>,
        /// Write calls made, `Pending` ones included.
        writes: Arc<AtomicUsize>,
        vectored: bool,
        max: usize,
        pending_every: usize,
        calls: usize,
    }

    impl Trickle {
        fn new(
            vectored: bool,
            max: usize,
            pending_every: usize,
        ) -> (Trickle, Arc<StdMutex<Vec<u8>>>) {
            let got = Arc::new(StdMutex::new(Vec::new()));
            let sink = Trickle {
                got: got.clone(),
                writes: Arc::new(AtomicUsize::new(0)),
                vectored,
                max,
                pending_every,
                calls: 0,
            };
            (sink, got)
        }

        /// Whether this call waits (and wakes the caller to come back).
        fn waits(&mut self, cx: &mut Context<'_>) -> bool {
            self.calls += 1;
            self.writes.fetch_add(1, Ordering::Relaxed);
            if self.pending_every != 0 && self.calls.is_multiple_of(self.pending_every) {
                cx.waker().wake_by_ref();
                return true;
            }
            false
        }
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            if self.waits(cx) {
                return Poll::Pending;
            }
            let n = buf.len().min(self.max);
            self.got.lock().expect("lock").extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[std::io::IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            if self.waits(cx) {
                return Poll::Pending;
            }
            let mut left = self.max;
            let mut got = self.got.lock().expect("lock");
            for b in bufs {
                let n = b.len().min(left);
                got.extend_from_slice(&b[..n]);
                left -= n;
                if left == 0 {
                    break;
                }
            }
            Poll::Ready(Ok(self.max - left))
        }
        fn is_write_vectored(&self) -> bool {
            self.vectored
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn frames() -> (Vec<Bytes>, Vec<u8>) {
        let mut want = Vec::new();
        let frames = (0..300u32)
            .map(|i| {
                let frame = format!("{{\"n\":{i}}}\n").repeat((i % 5) as usize + 1);
                want.extend_from_slice(frame.as_bytes());
                Bytes::from(frame)
            })
            .collect();
        (frames, want)
    }

    #[tokio::test]
    async fn partial_writes_keep_every_byte_in_order() {
        for vectored in [true, false] {
            let (tx, rx) = mpsc::unbounded_channel();
            let (frames, want) = frames();
            for frame in frames {
                tx.send(frame).expect("queue");
            }
            drop(tx);
            let (sink, got) = Trickle::new(vectored, 7, 0);
            let shared = Shared {
                queued: AtomicUsize::new(want.len()),
                drained: Notify::new(),
                closed: AtomicBool::new(false),
                sink: Mutex::new(Box::new(sink)),
                in_place: vectored,
            };
            if vectored {
                write_vectored_loop(rx, &shared).await.expect("write");
            } else {
                write_buffered_loop(rx, &shared).await.expect("write");
            }
            assert_eq!(*got.lock().expect("lock"), want);
            assert_eq!(shared.queued.load(Ordering::Acquire), 0);
        }
    }

    #[tokio::test]
    async fn a_frame_is_written_in_place_while_nothing_is_queued() {
        let (sink, got) = Trickle::new(true, usize::MAX, 0);
        let (out, writer) = Outbox::spawn(sink, 1 << 20);
        assert!(out.send(Bytes::from_static(b"{\"a\":1}\n")));
        // Before the writer task ran at all.
        assert_eq!(*got.lock().expect("lock"), b"{\"a\":1}\n");
        drop(out);
        writer.await.expect("task").expect("write");
    }

    #[tokio::test]
    async fn the_frames_of_one_send_go_out_in_one_write() {
        let (sink, got) = Trickle::new(true, usize::MAX, 0);
        let writes = sink.writes.clone();
        let (out, writer) = Outbox::spawn(sink, 1 << 20);
        let (frames, want) = frames();
        let mut batch = frames[..100].to_vec();
        let want = &want[..batch.iter().map(Bytes::len).sum::<usize>()];
        assert!(out.send_all(&mut batch, true));
        assert!(batch.is_empty());
        // All of them before the writer task ran, in one call (the sink takes any amount).
        assert_eq!(*got.lock().expect("lock"), want);
        assert_eq!(writes.load(Ordering::Relaxed), 1);
        drop(out);
        writer.await.expect("task").expect("write");
    }

    #[tokio::test]
    async fn writes_in_place_and_queued_keep_every_byte_in_order() {
        // Partial writes and full pipes (Pending) both in place and in the writer task; the
        // writer sometimes runs between sends, sometimes not.
        for (max, pending_every) in [(7, 0), (7, 3), (64, 2), (1000, 5)] {
            let (sink, got) = Trickle::new(true, max, pending_every);
            let (out, writer) = Outbox::spawn(sink, 1 << 20);
            let (frames, want) = frames();
            // Alone and in batches of up to four; the writer task sometimes runs in between.
            let mut frames = frames.into_iter();
            for i in 0.. {
                let mut batch: Vec<Bytes> = frames.by_ref().take(i % 4 + 1).collect();
                if batch.is_empty() {
                    break;
                }
                if batch.len() == 1 {
                    assert!(out.send(batch.remove(0)));
                } else {
                    assert!(out.send_all(&mut batch, i % 5 != 0));
                }
                if i % 3 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            drop(out);
            writer.await.expect("task").expect("write");
            assert_eq!(
                *got.lock().expect("lock"),
                want,
                "max {max}, pending every {pending_every}"
            );
        }
    }
}
