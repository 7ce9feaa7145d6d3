//! A byte-bounded queue in front of a writer task.
//!
//! The relay loop checks [`Outbox::has_room`] before it reads the *opposite* side, so a slow
//! reader slows down its writer (honest backpressure) without ever dropping a frame and
//! without stalling the other direction.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};

struct Shared {
    queued: AtomicUsize,
    drained: Notify,
    closed: AtomicBool,
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
        let shared = Arc::new(Shared {
            queued: AtomicUsize::new(0),
            drained: Notify::new(),
            closed: AtomicBool::new(false),
        });
        let task = tokio::spawn(write_loop(sink, rx, shared.clone()));
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
        if self.shared.closed.load(Ordering::Acquire) {
            return false;
        }
        self.shared.queued.fetch_add(bytes.len(), Ordering::AcqRel);
        self.tx.send(bytes).is_ok()
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

async fn write_loop<W>(
    sink: W,
    rx: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let result = if sink.is_write_vectored() {
        write_vectored_loop(sink, rx, &shared).await
    } else {
        write_buffered_loop(sink, rx, &shared).await
    };
    if result.is_err() {
        shared.closed.store(true, Ordering::Release);
        shared.drained.notify_waiters();
    }
    result
}

/// Frames written per batch at most (bytes, count): bounds the latency of a drained notice.
const BATCH_BYTES: usize = 1024 * 1024;
const BATCH_FRAMES: usize = 512;

/// For sinks that take `writev`: the queued frames go out as they are, with no copy into a
/// buffer, in as few system calls as the pipe allows.
async fn write_vectored_loop<W>(
    mut out: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    shared: &Shared,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
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
        write_all_vectored(&mut out, &mut batch).await?;
        out.flush().await?;
        shared.queued.fetch_sub(written, Ordering::AcqRel);
        shared.drained.notify_waiters();
    }
    out.shutdown().await
}

/// Write every frame of `batch` (emptying it), resuming after partial writes.
async fn write_all_vectored<W>(out: &mut W, batch: &mut Vec<Bytes>) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    use bytes::Buf;
    let mut first = 0;
    while first < batch.len() {
        let slices: Vec<std::io::IoSlice<'_>> = batch[first..]
            .iter()
            .map(|b| std::io::IoSlice::new(b))
            .collect();
        let mut n = out.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 {
            let len = batch[first].len();
            if n >= len {
                n -= len;
                first += 1;
            } else {
                batch[first].advance(n);
                n = 0;
            }
        }
        while first < batch.len() && batch[first].is_empty() {
            first += 1;
        }
    }
    batch.clear();
    Ok(())
}

/// For sinks without vectored writes (tokio's blocking stdout on a terminal or file): copy
/// into one buffer and flush it once per batch.
async fn write_buffered_loop<W>(
    sink: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    shared: &Shared,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, sink);
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
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A sink that takes at most 7 bytes per call, vectored or not.
    struct Trickle {
        got: Vec<u8>,
        vectored: bool,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(7);
            self.got.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            bufs: &[std::io::IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            let mut left = 7;
            for b in bufs {
                let n = b.len().min(left);
                self.got.extend_from_slice(&b[..n]);
                left -= n;
                if left == 0 {
                    break;
                }
            }
            Poll::Ready(Ok(7 - left))
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

    #[tokio::test]
    async fn partial_writes_keep_every_byte_in_order() {
        for vectored in [true, false] {
            let (tx, rx) = mpsc::unbounded_channel();
            let mut want = Vec::new();
            for i in 0..300u32 {
                let frame = format!("{{\"n\":{i}}}\n").repeat((i % 5) as usize + 1);
                want.extend_from_slice(frame.as_bytes());
                tx.send(Bytes::from(frame)).expect("queue");
            }
            drop(tx);
            let shared = Shared {
                queued: AtomicUsize::new(want.len()),
                drained: Notify::new(),
                closed: AtomicBool::new(false),
            };
            let mut sink = Trickle {
                got: Vec::new(),
                vectored,
            };
            if vectored {
                write_vectored_loop(&mut sink, rx, &shared)
                    .await
                    .expect("write");
            } else {
                write_buffered_loop(&mut sink, rx, &shared)
                    .await
                    .expect("write");
            }
            assert_eq!(sink.got, want);
            assert_eq!(shared.queued.load(Ordering::Acquire), 0);
        }
    }
}
