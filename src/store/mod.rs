//! Durable child transcripts, so that a child `session/load` works after the editor and the
//! proxy restart.
//!
//! An SQLite database (WAL mode), with long transcripts in append-only files beside it
//! (`logs.rs`), kept off the relay's hot path: [`Store::submit`] queues a write for a
//! dedicated writer thread, which applies queued writes in order, one short transaction per
//! batch. Reads ([`Store::child`], [`Store::children_of`]) use their own
//! connection and are meant for the `session/load` path only. [`StoreLocation::Memory`] gives
//! the same API without a file, so the engine never has to care which one it has.
//!
//! Failure never stops the relay: a store that cannot be opened is replaced by a memory store
//! ([`Store::open_or_memory`]), and a write that fails (disk full, file gone read-only) moves
//! the store to memory, with one warning on stderr. See `docs/store.md`.

mod logs;
mod retention;
mod schema;
mod settings;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::subagents::ids::{ChildId, ClientSessionId};

pub use settings::{
    default_path, StoreConfig, StoreLocation, DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES,
    DEFAULT_QUEUE_BYTES, DEFAULT_QUEUE_OPS,
};

pub use crate::subagents::model::{ChildState, TurnRange};
pub use crate::subagents::persist::{StoreOp, StoredChild};

use logs::LogDir;
use writer::{Msg, Writer};

/// How long a connection waits for another connection's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// What `acp-proxy store stats` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreStats {
    /// `memory` or the file path.
    pub location: String,
    pub schema_version: u32,
    /// Size of the database file on disk (`None` in memory).
    pub file_bytes: Option<u64>,
    /// Size of the write-ahead log on disk (`None` in memory or when absent).
    pub wal_bytes: Option<u64>,
    /// Pages in use × page size.
    pub used_bytes: u64,
    /// Free pages × page size (given back to the file system by pruning).
    pub free_bytes: u64,
    pub children: u64,
    pub updates: u64,
    /// Total length of the stored update JSON texts.
    pub update_bytes: u64,
    /// Committed length of the transcript files (included in `used_bytes`).
    pub transcript_bytes: u64,
    /// Unix seconds of the least recently updated child.
    pub oldest_updated_at: Option<i64>,
    /// Unix seconds of the most recently updated child.
    pub newest_updated_at: Option<i64>,
    /// Why this store no longer writes to its file, if it stopped.
    pub degraded: Option<String>,
}

/// What a prune removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Children removed because they were not updated within `max_age`.
    pub removed_by_age: u64,
    /// Children removed, oldest first, to bring the database under `max_bytes`.
    pub removed_by_size: u64,
    /// Updates removed with those children.
    pub updates_removed: u64,
    /// Pages in use × page size, before and after.
    pub used_bytes_before: u64,
    pub used_bytes_after: u64,
    /// Bytes on disk (database file plus write-ahead log), before and after (`None` in
    /// memory).
    pub file_bytes_before: Option<u64>,
    pub file_bytes_after: Option<u64>,
    /// The size limit, when one was given.
    pub max_bytes: Option<u64>,
    /// Children kept although the store is still over `max_bytes`: each was written to within
    /// the last hour, so it may still be running and is never removed for size.
    pub kept_recent: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "cannot place the store: {} (set it, or give --store PATH or [store] path)",
        crate::platform::paths::Os::CURRENT.state_vars()
    )]
    NoStateDir,
    #[error("cannot create store directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create store file {path}: {source}")]
    CreateFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open store {location}: {source}")]
    Open {
        location: String,
        source: rusqlite::Error,
    },
    #[error(
        "store {location} is corrupt or not a database ({source}); move the file away or give \
         another --store path"
    )]
    Corrupt {
        location: String,
        source: rusqlite::Error,
    },
    #[error(
        "{location} is an SQLite database but not an acp-proxy store; refusing to change it \
         (give another --store path)"
    )]
    Foreign { location: String },
    #[error(
        "store {location} has schema version {found}, newer than this acp-proxy understands \
         ({supported}); use a newer acp-proxy or another --store path"
    )]
    TooNew {
        location: String,
        found: u32,
        supported: u32,
    },
    #[error("cannot migrate store {location} from schema version {from} to {to}: {source}")]
    Migrate {
        location: String,
        from: u32,
        to: u32,
        source: rusqlite::Error,
    },
    #[error("cannot read store {location}: {source}")]
    Read {
        location: String,
        source: rusqlite::Error,
    },
    #[error("cannot write store {location}: {source}")]
    Write {
        location: String,
        source: rusqlite::Error,
    },
    #[error("cannot write store {location}: transcript file {path}: {source}")]
    WriteTranscript {
        location: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("store {location}: child {child_id} has malformed {what}: {problem}")]
    Malformed {
        location: String,
        child_id: String,
        what: &'static str,
        problem: String,
    },
    #[error(
        "store {location} is not persisting any more ({reason}); recent child transcripts are \
         kept in memory only"
    )]
    Degraded { location: String, reason: String },
    #[error("the store's writer has stopped; nothing more is stored")]
    WriterGone,
    #[error("cannot start the store's writer thread: {0}")]
    Spawn(std::io::Error),
    #[error("the store is unavailable (not even memory could be used)")]
    Unavailable,
}

/// A connection shared between threads.
type SharedConn = Arc<Mutex<Connection>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves the value usable for us: SQLite rolls
    // back an unfinished transaction itself.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// State shared by the handle and the writer.
struct Shared {
    location: StoreLocation,
    /// The transcript files of a file store (still read after a move to memory).
    logs: Option<LogDir>,
    /// The connection reads go to. The writer swaps it when it moves to memory.
    reader: Mutex<Option<SharedConn>>,
    /// Why the store stopped writing to its file, once it did.
    degraded: Mutex<Option<String>>,
    /// Bytes of transcript updates submitted and not yet written (or dropped).
    queued_bytes: AtomicUsize,
}

impl Shared {
    fn location_text(&self) -> String {
        self.location.to_string()
    }
}

struct Inner {
    shared: Arc<Shared>,
    tx: Option<SyncSender<Msg>>,
    thread: Option<std::thread::JoinHandle<()>>,
    queue_ops: usize,
    /// Bytes of updates queued past which `submit` waits for the writer (0: no limit).
    queue_bytes: usize,
    /// Set while the queue is full (one warning per episode).
    queue_full: AtomicBool,
    /// The queue went over `queue_bytes` once (one warning).
    bytes_full_reported: AtomicBool,
    writer_gone_reported: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue lets the writer commit what is queued and stop.
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The child-transcript store. Cheap to clone; the last clone dropped lets the writer finish
/// the queue and waits for it.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

// The engine shares one store between tasks and threads.
const _: fn() = || {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<Store>();
};

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.inner.shared.location)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Open the store: create missing directories (0700) and the file (0600), set WAL mode
    /// and a busy timeout, apply migrations, and start the writer (which prunes by the
    /// configured retention at once and every hour, if `background_prune`).
    pub fn open(cfg: &StoreConfig) -> Result<Store, StoreError> {
        let location = match &cfg.location {
            Some(loc) => loc.clone(),
            None => StoreLocation::Path(default_path()?),
        };
        let (writer_conn, reader_conn) = match &location {
            StoreLocation::Memory => {
                let conn = Arc::new(Mutex::new(open_memory()?));
                (conn.clone(), conn)
            }
            StoreLocation::Path(path) => {
                prepare_file(path)?;
                let (conn, reader) = open_connections(path)?;
                (Arc::new(Mutex::new(conn)), Arc::new(Mutex::new(reader)))
            }
        };
        Self::start(location, writer_conn, Some(reader_conn), cfg)
    }

    /// [`Store::open`], or, if that fails, an in-memory store and a warning saying why (for
    /// the caller to log).
    pub fn open_or_memory(cfg: &StoreConfig) -> (Store, Option<String>) {
        let err = match Store::open(cfg) {
            Ok(store) => return (store, None),
            Err(e) => e,
        };
        let memory_cfg = StoreConfig {
            location: Some(StoreLocation::Memory),
            ..cfg.clone()
        };
        let warning = format!(
            "{err}; keeping child transcripts in memory instead (they will not survive a restart)"
        );
        match Store::open(&memory_cfg) {
            Ok(store) => (store, Some(warning)),
            Err(e2) => (
                Store::unavailable(),
                Some(format!("{err}; and no memory store either: {e2}")),
            ),
        }
    }

    /// A store that stores nothing (only when not even memory could be had).
    fn unavailable() -> Store {
        Store {
            inner: Arc::new(Inner {
                shared: Arc::new(Shared {
                    location: StoreLocation::Memory,
                    logs: None,
                    reader: Mutex::new(None),
                    degraded: Mutex::new(Some("unavailable".into())),
                    queued_bytes: AtomicUsize::new(0),
                }),
                tx: None,
                thread: None,
                queue_ops: 0,
                queue_bytes: 0,
                queue_full: AtomicBool::new(false),
                bytes_full_reported: AtomicBool::new(false),
                writer_gone_reported: AtomicBool::new(true),
            }),
        }
    }

    fn start(
        location: StoreLocation,
        writer_conn: SharedConn,
        reader_conn: Option<SharedConn>,
        cfg: &StoreConfig,
    ) -> Result<Store, StoreError> {
        let logs = match &location {
            StoreLocation::Path(p) => Some(LogDir::of_store(p)),
            StoreLocation::Memory => None,
        };
        let shared = Arc::new(Shared {
            location,
            logs,
            reader: Mutex::new(reader_conn),
            degraded: Mutex::new(None),
            queued_bytes: AtomicUsize::new(0),
        });
        let queue_ops = cfg.queue_ops.max(1);
        let (tx, rx) = mpsc::sync_channel(queue_ops);
        let writer = Writer::new(writer_conn, shared.clone(), rx, cfg);
        let thread = std::thread::Builder::new()
            .name("acp-proxy-store".into())
            .spawn(move || writer.run())
            .map_err(StoreError::Spawn)?;
        Ok(Store {
            inner: Arc::new(Inner {
                shared,
                tx: Some(tx),
                thread: Some(thread),
                queue_ops,
                queue_bytes: usize::try_from(cfg.queue_bytes).unwrap_or(usize::MAX),
                queue_full: AtomicBool::new(false),
                bytes_full_reported: AtomicBool::new(false),
                writer_gone_reported: AtomicBool::new(false),
            }),
        })
    }

    /// Where this store lives.
    pub fn location(&self) -> &StoreLocation {
        &self.inner.shared.location
    }

    /// Queue a write. Returns at once while the queue has room; when it is full, waits for
    /// the writer (the relay then waits on the disk) and logs a warning once per episode.
    pub fn submit(&self, op: StoreOp) {
        let Some(tx) = &self.inner.tx else { return };
        let bytes = match &op {
            StoreOp::AppendUpdate { update, .. } => update.len(),
            _ => 0,
        };
        // Counted before the writer may see it (it takes the count back once written).
        let queued = self
            .inner
            .shared
            .queued_bytes
            .fetch_add(bytes, Ordering::Relaxed)
            + bytes;
        self.send(tx, op, bytes);
        if self.inner.queue_bytes > 0 && queued > self.inner.queue_bytes {
            // The disk lags by more than the queue may hold in bytes: wait until it took
            // everything, as a full queue waits (an error is the writer's to report).
            if !self.inner.bytes_full_reported.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "store {}: more than {} bytes of transcript queued; the relay waits for \
                     the disk each time (said once)",
                    self.inner.shared.location,
                    self.inner.queue_bytes
                );
            }
            let _ = self.flush();
        }
    }

    fn send(&self, tx: &SyncSender<Msg>, op: StoreOp, bytes: usize) {
        match tx.try_send(Msg::write(op)) {
            Ok(()) => {
                if self.inner.queue_full.load(Ordering::Relaxed) {
                    self.inner.queue_full.store(false, Ordering::Relaxed);
                }
            }
            Err(TrySendError::Full(msg)) => {
                if !self.inner.queue_full.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "store {}: write queue full ({} writes); waiting for the disk, which \
                         slows the relay",
                        self.inner.shared.location,
                        self.inner.queue_ops
                    );
                }
                if tx.send(msg).is_err() {
                    self.inner
                        .shared
                        .queued_bytes
                        .fetch_sub(bytes, Ordering::Relaxed);
                    self.report_writer_gone();
                }
            }
            Err(TrySendError::Disconnected(_)) => {
                self.inner
                    .shared
                    .queued_bytes
                    .fetch_sub(bytes, Ordering::Relaxed);
                self.report_writer_gone();
            }
        }
    }

    fn report_writer_gone(&self) {
        if !self
            .inner
            .writer_gone_reported
            .swap(true, Ordering::Relaxed)
        {
            tracing::error!("{}", StoreError::WriterGone);
        }
    }

    /// Send a request to the writer and wait for its answer.
    fn ask<T>(
        &self,
        make: impl FnOnce(SyncSender<Result<T, StoreError>>) -> Msg,
    ) -> Result<T, StoreError> {
        let tx = self.inner.tx.as_ref().ok_or(StoreError::Unavailable)?;
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        tx.send(make(reply_tx))
            .map_err(|_| StoreError::WriterGone)?;
        reply_rx.recv().map_err(|_| StoreError::WriterGone)?
    }

    /// Wait until every write submitted so far is committed. Fails with
    /// [`StoreError::Degraded`] if the store has stopped writing to its file (the writes are
    /// then held in memory).
    pub fn flush(&self) -> Result<(), StoreError> {
        self.ask(Msg::Flush)
    }

    /// Remove children not updated within `max_age`, then the least recently updated ones
    /// until the database uses at most `max_bytes` (never one updated within the last hour,
    /// which may still be running), and give the freed space back to the file system. A zero
    /// `max_age` or `max_bytes` disables that limit. Runs in the writer, after the writes
    /// submitted before it.
    pub fn prune(&self, max_age: Duration, max_bytes: u64) -> Result<PruneReport, StoreError> {
        self.ask(|reply| Msg::Prune {
            max_age,
            max_bytes,
            reply,
        })
    }

    /// Run `f` on the read connection inside one read transaction (a consistent snapshot).
    fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = lock(&self.inner.shared.reader)
            .clone()
            .ok_or(StoreError::Unavailable)?;
        let conn = lock(&conn);
        let read_err = |source| StoreError::Read {
            location: self.inner.shared.location_text(),
            source,
        };
        let tx = conn.unchecked_transaction().map_err(read_err)?;
        let out = f(&tx)?;
        tx.finish().map_err(read_err)?;
        Ok(out)
    }

    /// One child with its whole transcript, if stored.
    pub fn child(&self, child_id: &str) -> Result<Option<StoredChild>, StoreError> {
        let location = self.inner.shared.location_text();
        let logs = self.inner.shared.logs.as_ref();
        self.read(|conn| load_child(conn, &location, logs, child_id))
    }

    /// Every stored child of a parent session, oldest first, with their transcripts.
    pub fn children_of(
        &self,
        parent_session_id: &ClientSessionId,
    ) -> Result<Vec<StoredChild>, StoreError> {
        let location = self.inner.shared.location_text();
        let logs = self.inner.shared.logs.as_ref();
        self.read(|conn| {
            let read_err = |source| StoreError::Read {
                location: location.clone(),
                source,
            };
            let ids = {
                let mut stmt = conn
                    .prepare_cached(
                        "SELECT child_id FROM children WHERE parent_session_id = ?1
                         ORDER BY created_at, rowid",
                    )
                    .map_err(read_err)?;
                let rows = stmt
                    .query_map([parent_session_id.as_str()], |r| r.get::<_, String>(0))
                    .map_err(read_err)?;
                rows.collect::<Result<Vec<_>, _>>().map_err(read_err)?
            };
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(child) = load_child(conn, &location, logs, &id)? {
                    out.push(child);
                }
            }
            Ok(out)
        })
    }

    /// Sizes and counts.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let location = self.inner.shared.location_text();
        let degraded = lock(&self.inner.shared.degraded).clone();
        let (file_bytes, wal_bytes) = match &self.inner.shared.location {
            StoreLocation::Memory => (None, None),
            StoreLocation::Path(p) => (file_len(p), file_len(&wal_path(p))),
        };
        self.read(|conn| {
            let read_err = |source| StoreError::Read {
                location: location.clone(),
                source,
            };
            let schema_version: u32 = conn
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(read_err)?;
            let pages = retention::page_usage(conn).map_err(read_err)?;
            let used_bytes = retention::used_bytes(conn).map_err(read_err)?;
            let (children, updates, update_bytes, transcript_bytes, oldest, newest) = conn
                .query_row(
                    "SELECT count(*), coalesce(sum(update_count), 0),
                            coalesce(sum(update_bytes), 0), coalesce(sum(log_bytes), 0),
                            min(updated_at), max(updated_at)
                     FROM children",
                    [],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, i64>(2)?,
                            r.get::<_, i64>(3)?,
                            r.get::<_, Option<i64>>(4)?,
                            r.get::<_, Option<i64>>(5)?,
                        ))
                    },
                )
                .map_err(read_err)?;
            let transcript_bytes = transcript_bytes.max(0) as u64;
            Ok(StoreStats {
                location: location.clone(),
                schema_version,
                file_bytes,
                wal_bytes,
                used_bytes,
                free_bytes: pages.free_bytes(),
                children: children.max(0) as u64,
                updates: updates.max(0) as u64,
                update_bytes: update_bytes.max(0) as u64,
                transcript_bytes,
                oldest_updated_at: oldest,
                newest_updated_at: newest,
                degraded,
            })
        })
    }

    /// Make the writer's transcript-file writes fail as on a full disk (tests only).
    #[cfg(test)]
    fn fail_transcript_writes(&self) -> Result<(), StoreError> {
        self.ask(Msg::FailLogs)
    }

    /// Run one SQL batch on the writer's connection (tests only: e.g. to make the disk
    /// "full" with `PRAGMA max_page_count`).
    #[cfg(test)]
    fn exec_in_writer(&self, sql: &str) -> Result<(), StoreError> {
        let sql = sql.to_owned();
        self.ask(|reply| Msg::Exec(sql, reply))
    }
}

fn load_child(
    conn: &Connection,
    location: &str,
    logs: Option<&LogDir>,
    child_id: &str,
) -> Result<Option<StoredChild>, StoreError> {
    let read_err = |source| StoreError::Read {
        location: location.to_owned(),
        source,
    };
    let row = conn
        .prepare_cached(
            "SELECT parent_session_id, spawn_tool_call_id, agent, cwd, title, state,
                    entry_count, turns, updated_at, log, log_seq, log_count, log_bytes,
                    tool_name, agent_child_id
             FROM children WHERE child_id = ?1",
        )
        .and_then(|mut stmt| {
            stmt.query_row([child_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, String>(7)?,
                    r.get::<_, i64>(8)?,
                    (
                        r.get::<_, Option<String>>(9)?,
                        r.get::<_, i64>(10)?,
                        r.get::<_, i64>(11)?,
                        r.get::<_, i64>(12)?,
                    ),
                    r.get::<_, Option<String>>(13)?,
                    r.get::<_, Option<String>>(14)?,
                ))
            })
            .optional()
        })
        .map_err(read_err)?;
    let Some((
        parent,
        spawn,
        agent,
        cwd,
        title,
        state,
        entry_count,
        turns,
        updated_at,
        log,
        tool_name,
        agent_child_id,
    )) = row
    else {
        return Ok(None);
    };
    let malformed = |what, problem: String| StoreError::Malformed {
        location: location.to_owned(),
        child_id: child_id.to_owned(),
        what,
        problem,
    };
    let state = ChildState::from_stored(&state)
        .ok_or_else(|| malformed("state", format!("`{state}` is not a child state")))?;
    let turns = decode_turns(&turns).map_err(|p| malformed("turns", p))?;
    let entry_count = u32::try_from(entry_count)
        .map_err(|_| malformed("entry_count", format!("{entry_count} is out of range")))?;
    // A file's updates, if any, from seq `log_seq` on.
    let (log_name, log_seq, log_count, log_bytes) = log;
    let file = match log_name {
        Some(name) if log_count > 0 => {
            let dir = logs.ok_or_else(|| {
                malformed(
                    "transcript file",
                    format!("{name}: no transcript directory"),
                )
            })?;
            let (count, bytes) = (log_count.max(0) as u64, log_bytes.max(0) as u64);
            dir.read(&name, count, bytes)
                .map_err(|p| malformed("transcript file", p))?
        }
        _ => Vec::new(),
    };
    // Rows: the updates before the file's, and any after them.
    let mut updates = Vec::new();
    let mut file = Some(file);
    {
        let mut stmt = conn
            .prepare_cached("SELECT seq, count, body FROM updates WHERE child_id = ?1 ORDER BY seq")
            .map_err(read_err)?;
        let rows = stmt
            .query_map([child_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(read_err)?;
        for row in rows {
            let (seq, count, body) = row.map_err(read_err)?;
            if seq >= log_seq {
                if let Some(file) = file.take() {
                    updates.extend(file);
                }
            }
            if count == 1 {
                updates.push(body);
                continue;
            }
            // A run of updates joined by newlines (schema version 2).
            let parts: Vec<&str> = body.split('\n').collect();
            if i64::try_from(parts.len()) != Ok(count) {
                return Err(malformed(
                    "updates",
                    format!(
                        "the row at seq {seq} should hold {count} updates, not {}",
                        parts.len()
                    ),
                ));
            }
            updates.extend(parts.into_iter().map(str::to_owned));
        }
    }
    if let Some(file) = file {
        updates.extend(file);
    }
    Ok(Some(StoredChild {
        child_id: ChildId::known(child_id.to_owned()),
        parent_session_id: ClientSessionId::new(parent),
        spawn_tool_call_id: spawn,
        agent,
        cwd,
        title,
        tool_name,
        agent_child_id,
        state,
        updates,
        entry_count,
        turns,
        updated_at,
    }))
}

/// Turns as stored: `[[start, end|null], ...]`.
fn encode_turns(turns: &[TurnRange]) -> String {
    let pairs: Vec<(u32, Option<u32>)> = turns.iter().map(|t| (t.start, t.end)).collect();
    serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".to_owned())
}

fn decode_turns(text: &str) -> Result<Vec<TurnRange>, String> {
    let pairs: Vec<(u32, Option<u32>)> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(pairs
        .into_iter()
        .map(|(start, end)| TurnRange { start, end })
        .collect())
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn wal_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push("-wal");
    PathBuf::from(s)
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// The database file, its write-ahead log and its transcript files.
fn disk_bytes(path: &Path) -> Option<u64> {
    let logs = LogDir::of_store(path).disk_bytes();
    file_len(path).map(|n| n + file_len(&wal_path(path)).unwrap_or(0) + logs)
}

/// Create the missing parent directories (0700) and the file (0600); tighten an existing
/// file (and its WAL files) to 0600.
fn prepare_file(path: &Path) -> Result<(), StoreError> {
    use crate::platform::{create_private_dir_all, make_private, private_file};
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            create_private_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_owned(),
                source,
            })?;
        }
    }
    let create_err = |source| StoreError::CreateFile {
        path: path.to_owned(),
        source,
    };
    let file = private_file(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .open(path)
    .map_err(create_err)?;
    make_private(&file).map_err(create_err)?;
    // SQLite creates the -wal and -shm files with the database's mode; older ones may be
    // looser.
    for suffix in ["-wal", "-shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        crate::platform::tighten_to_private(Path::new(&side));
    }
    Ok(())
}

/// The writer's and the reader's connections to the file, its schema brought up to date.
///
/// SQLite waits out another connection's lock (the busy timeout) except where a connection
/// holding a read lock needs the write lock: there it answers "locked" at once, as waiting
/// could deadlock. Switching a new file to WAL is such a step, so two proxies creating one
/// store at the same moment could see one fail. An open that meets a lock starts over, until
/// the busy timeout has passed.
fn open_connections(path: &Path) -> Result<(Connection, Connection), StoreError> {
    let location = path.display().to_string();
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        let attempt = open_file(path).and_then(|mut conn| {
            schema::migrate(&mut conn, &location)?;
            Ok((conn, open_file(path)?))
        });
        match attempt {
            Err(StoreError::Open { source, .. } | StoreError::Migrate { source, .. })
                if is_busy(&source) && Instant::now() < deadline =>
            {
                tracing::debug!("store {location}: locked while opening, retrying: {source}");
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Another connection's lock stood in the way.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Open a connection to the file and set it up (WAL, busy timeout, incremental vacuum for
/// new files).
fn open_file(path: &Path) -> Result<Connection, StoreError> {
    let location = path.display().to_string();
    let err = |source| schema::classify_open_error(&location, source);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    // Takes effect only before the first table exists, i.e. on a new file; lets pruning
    // hand freed pages back to the file system.
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
        .map_err(err)?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .map_err(err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(
            "store {location}: cannot use WAL mode (got `{mode}`); writes may wait on readers"
        );
    }
    // In WAL mode NORMAL keeps every commit across a process crash; only a power loss may
    // take back the last commits (never corrupting the file).
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    // 256 KiB of pages per connection instead of SQLite's 2 000 KiB: a write touches few
    // pages (a child's row, the end of the updates table), and the cache is the part of a
    // busy store's memory that grows up to its limit (measured: 1 MiB saved 1.9 MiB of peak
    // RSS against the default, 256 KiB another 0.5-0.8 MiB, neither slower).
    conn.pragma_update(None, "cache_size", -256).map_err(err)?;
    Ok(conn)
}

/// A fresh in-memory database with the current schema.
fn open_memory() -> Result<Connection, StoreError> {
    let err = |source| schema::classify_open_error("memory", source);
    let mut conn = Connection::open_in_memory().map_err(err)?;
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
        .map_err(err)?;
    schema::migrate(&mut conn, "memory")?;
    Ok(conn)
}

#[cfg(test)]
mod tests;
