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
pub struct Outbox {
    tx: mpsc::UnboundedSender<Bytes>,
    shared: Arc<Shared>,
    high_water: usize,
}

impl Outbox {
    /// Start a writer task for `sink`. It stops when every `Outbox` clone is dropped (after
    /// writing what was queued) or when a write fails; `done` then fires with the error, if any.
    pub fn spawn<W>(
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
    pub fn send(&self, bytes: Bytes) -> bool {
        if self.shared.closed.load(Ordering::Acquire) {
            return false;
        }
        self.shared.queued.fetch_add(bytes.len(), Ordering::AcqRel);
        self.tx.send(bytes).is_ok()
    }

    /// Whether more may be queued without passing the high-water mark.
    pub fn has_room(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
            || self.shared.queued.load(Ordering::Acquire) < self.high_water
    }

    /// Wait until the queue drains below the high-water mark (or the writer stops).
    pub async fn room(&self) {
        loop {
            let notified = self.shared.drained.notified();
            if self.has_room() {
                return;
            }
            notified.await;
        }
    }

    /// Whether the writer stopped because the peer is gone.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}

async fn write_loop<W>(
    sink: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, sink);
    let result = async {
        while let Some(first) = rx.recv().await {
            let mut written = first.len();
            out.write_all(&first).await?;
            // Coalesce whatever else is already queued, then flush once: low latency when
            // idle, few syscalls under load.
            while let Ok(more) = rx.try_recv() {
                written += more.len();
                out.write_all(&more).await?;
                if written >= 1024 * 1024 {
                    break;
                }
            }
            out.flush().await?;
            shared.queued.fetch_sub(written, Ordering::AcqRel);
            shared.drained.notify_waiters();
        }
        out.shutdown().await
    }
    .await;
    if result.is_err() {
        shared.closed.store(true, Ordering::Release);
        shared.drained.notify_waiters();
    }
    result
}
