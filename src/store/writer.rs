//! The writer thread: applies queued writes in order, one short transaction per batch, and
//! runs retention.
//!
//! When a write to the file fails for good (disk full, read-only, I/O error), the writer
//! copies what the file holds into memory and goes on there: reads keep answering for this
//! process, a warning says once that transcripts no longer survive a restart, and `flush`
//! reports [`StoreError::Degraded`]. Should even memory fail, writes are dropped (one more
//! warning). The writer never panics and always drains its queue, so `submit` never waits
//! forever.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{params, Connection, TransactionBehavior};

use super::logs::{LogError, LogWriter};
use super::{
    encode_turns, is_busy, lock, open_memory, retention, unix_now, PruneReport, Shared, SharedConn,
    StoreConfig, StoreError, StoreLocation, StoreOp,
};
use crate::subagents::ids::ChildId;

/// How often retention runs in the background.
const RETENTION_INTERVAL: Duration = Duration::from_secs(3600);
/// Most writes in one transaction, to keep transactions short.
const MAX_BATCH: usize = 1000;
/// A child's texts are rows up to this size, and go to a transcript file beyond: most
/// children are short, and a file each would cost a file creation each.
const FILE_MIN_BYTES: i64 = 32 * 1024;
/// Under a steady stream of writes, the shortest time between two commits.
const COMMIT_INTERVAL: Duration = Duration::from_millis(2);
/// Attempts at a batch that keeps meeting another process's lock (each waits the busy
/// timeout) before the file is given up.
const BUSY_ATTEMPTS: u32 = 3;

pub(super) enum Msg {
    /// A child's update, nearly every write: not boxed, so that taking it frees nothing. A
    /// box is allocated on the relay's thread, and glibc frees a chunk of another thread's
    /// arena under that arena's lock, which the relay's thread takes in nearly every call it
    /// makes: the writer waited for it hundreds of times a run, each a sleep and a wake-up.
    Append(ChildId, Arc<str>),
    /// Any other write. Boxed: the queue's slots are allocated and touched up front
    /// (`queue_ops` of them), and a child's row (the largest op) would make each of them 190
    /// bytes instead of 48.
    Op(Box<StoreOp>),
    Flush(SyncSender<Result<(), StoreError>>),
    Prune {
        max_age: Duration,
        max_bytes: u64,
        reply: SyncSender<Result<PruneReport, StoreError>>,
    },
    #[cfg(test)]
    Exec(String, SyncSender<Result<(), StoreError>>),
    /// Tests: make transcript-file writes fail as on a full disk.
    #[cfg(test)]
    FailLogs(SyncSender<Result<(), StoreError>>),
}

impl Msg {
    /// A write as the queue carries it.
    pub(super) fn write(op: StoreOp) -> Msg {
        match op {
            StoreOp::AppendUpdate { child_id, update } => Msg::Append(child_id, update),
            other => Msg::Op(Box::new(other)),
        }
    }
}

/// Why a batch failed.
#[derive(Debug)]
pub(super) enum BatchError {
    Sql(rusqlite::Error),
    Log(LogError),
}

impl From<rusqlite::Error> for BatchError {
    fn from(e: rusqlite::Error) -> Self {
        BatchError::Sql(e)
    }
}

/// Where writes currently go.
enum Mode {
    /// The configured location (file or memory).
    Normal,
    /// The file failed; writes go to an in-memory copy.
    Fallback { reason: String },
    /// Nothing works; writes are dropped.
    Disabled { reason: String, dropped: u64 },
}

pub(super) struct Writer {
    conn: SharedConn,
    shared: Arc<Shared>,
    rx: Receiver<Msg>,
    mode: Mode,
    /// Transcript files (a file store while it writes to its file).
    logs: Option<LogWriter>,
    max_age: Duration,
    max_bytes: u64,
    background_prune: bool,
    /// The queue's capacity (writes).
    queue_ops: usize,
}

impl Writer {
    pub(super) fn new(
        conn: SharedConn,
        shared: Arc<Shared>,
        rx: Receiver<Msg>,
        cfg: &StoreConfig,
    ) -> Writer {
        let logs = shared.logs.clone().map(LogWriter::new);
        Writer {
            conn,
            shared,
            rx,
            mode: Mode::Normal,
            logs,
            max_age: cfg.max_age,
            max_bytes: cfg.max_bytes,
            background_prune: cfg.background_prune
                && (!cfg.max_age.is_zero() || cfg.max_bytes != 0),
            queue_ops: cfg.queue_ops.max(1),
        }
    }

    pub(super) fn run(mut self) {
        let mut next_prune = Instant::now();
        let mut ops: Vec<StoreOp> = Vec::new();
        let mut last_commit: Option<Instant> = None;
        loop {
            if self.background_prune && Instant::now() >= next_prune {
                self.background_retention();
                next_prune = Instant::now() + RETENTION_INTERVAL;
            }
            let first = if self.background_prune {
                let wait = next_prune.saturating_duration_since(Instant::now());
                match self.rx.recv_timeout(wait) {
                    Ok(msg) => msg,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match self.rx.recv() {
                    Ok(msg) => msg,
                    Err(_) => break,
                }
            };
            self.take(first, &mut ops);
            self.drain(&mut ops);
            // A steady stream of writes is committed every COMMIT_INTERVAL, not each time
            // the queue runs dry: a commit's fixed cost (locks, the WAL's pages for the
            // children rows, checkpoints) is paid per transaction. Not when the queue may be
            // filling up (a small queue), nor after a pause (the first write commits at once).
            if !ops.is_empty() && ops.len() < self.queue_ops / 2 {
                let since = last_commit.map_or(COMMIT_INTERVAL, |t| t.elapsed());
                if since < COMMIT_INTERVAL {
                    std::thread::sleep(COMMIT_INTERVAL - since);
                    self.drain(&mut ops);
                }
            }
            if !ops.is_empty() {
                self.commit(&mut ops);
                last_commit = Some(Instant::now());
            }
        }
        if let Mode::Disabled { dropped, .. } = self.mode {
            if dropped > 0 {
                tracing::warn!(
                    "store {}: {dropped} write(s) were not stored",
                    self.shared.location
                );
            }
        }
    }

    /// Handle one message: queue a write, or answer a request (after committing what is
    /// queued, so the answer sees it).
    fn take(&mut self, msg: Msg, ops: &mut Vec<StoreOp>) {
        match msg {
            Msg::Append(child_id, update) => ops.push(StoreOp::AppendUpdate { child_id, update }),
            Msg::Op(op) => ops.push(*op),
            Msg::Flush(reply) => {
                self.commit(ops);
                let _ = reply.send(self.durability());
            }
            Msg::Prune {
                max_age,
                max_bytes,
                reply,
            } => {
                self.commit(ops);
                let _ = reply.send(self.prune(max_age, max_bytes));
            }
            #[cfg(test)]
            Msg::Exec(sql, reply) => {
                self.commit(ops);
                let r = lock(&self.conn)
                    .execute_batch(&sql)
                    .map_err(|source| self.write_err(source));
                let _ = reply.send(r);
            }
            #[cfg(test)]
            Msg::FailLogs(reply) => {
                self.commit(ops);
                if let Some(logs) = &mut self.logs {
                    logs.fail = true;
                }
                let _ = reply.send(Ok(()));
            }
        }
    }

    /// Take whatever is queued, up to a batch.
    fn drain(&mut self, ops: &mut Vec<StoreOp>) {
        while ops.len() < MAX_BATCH {
            match self.rx.try_recv() {
                Ok(msg) => self.take(msg, ops),
                Err(_) => break,
            }
        }
    }

    fn write_err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Write {
            location: self.shared.location_text(),
            source,
        }
    }

    fn batch_err(&self, e: BatchError) -> StoreError {
        match e {
            BatchError::Sql(source) => self.write_err(source),
            BatchError::Log(LogError { path, source }) => StoreError::WriteTranscript {
                location: self.shared.location_text(),
                path,
                source,
            },
        }
    }

    /// What `flush` reports once everything before it is applied.
    fn durability(&self) -> Result<(), StoreError> {
        match &self.mode {
            Mode::Normal => Ok(()),
            Mode::Fallback { reason } | Mode::Disabled { reason, .. } => {
                Err(StoreError::Degraded {
                    location: self.shared.location_text(),
                    reason: reason.clone(),
                })
            }
        }
    }

    /// Apply the pending writes (see [`Writer::apply_ops`]) and take their bytes off the queue's
    /// count.
    fn commit(&mut self, ops: &mut Vec<StoreOp>) {
        let bytes: usize = ops
            .iter()
            .map(|op| match op {
                StoreOp::AppendUpdate { update, .. } => update.len(),
                _ => 0,
            })
            .sum();
        self.apply_ops(ops);
        self.shared.queued_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Apply the pending writes in one transaction; on failure move to the next mode down
    /// and apply them there.
    fn apply_ops(&mut self, ops: &mut Vec<StoreOp>) {
        if ops.is_empty() {
            return;
        }
        let mut busy_attempts = 0;
        loop {
            if let Mode::Disabled { dropped, .. } = &mut self.mode {
                *dropped += ops.len() as u64;
                ops.clear();
                return;
            }
            let result = apply_batch(&mut lock(&self.conn), ops, unix_now(), self.logs.as_mut());
            match result {
                Ok(()) => {
                    ops.clear();
                    return;
                }
                Err(BatchError::Sql(e)) if is_busy(&e) && busy_attempts + 1 < BUSY_ATTEMPTS => {
                    busy_attempts += 1;
                    tracing::debug!("store {}: busy, retrying: {e}", self.shared.location);
                }
                Err(e) => self.degrade(e),
            }
        }
    }

    /// A write failed: go from the file to memory, or from memory to nothing.
    fn degrade(&mut self, error: BatchError) {
        let reason = self.batch_err(error).to_string();
        // From here on updates are rows in memory; the transcript files written so far stay
        // readable.
        self.logs = None;
        match (&self.mode, &self.shared.location) {
            (Mode::Normal, StoreLocation::Path(_)) => {
                tracing::warn!(
                    "{reason}; keeping child transcripts in memory from now on (they will not \
                     survive a restart)"
                );
                let copy = copy_to_memory(&lock(&self.conn));
                match copy {
                    Ok(mem) => {
                        let mem = Arc::new(Mutex::new(mem));
                        self.conn = mem.clone();
                        *lock(&self.shared.reader) = Some(mem);
                        *lock(&self.shared.degraded) = Some(reason.clone());
                        self.mode = Mode::Fallback { reason };
                    }
                    Err(e) => self.disable(format!("{reason}; and no memory store: {e}")),
                }
            }
            _ => {
                tracing::warn!("{reason}; child transcripts are no longer stored");
                self.disable(reason);
            }
        }
    }

    fn disable(&mut self, reason: String) {
        *lock(&self.shared.degraded) = Some(reason.clone());
        self.mode = Mode::Disabled { reason, dropped: 0 };
    }

    fn prune(&mut self, max_age: Duration, max_bytes: u64) -> Result<PruneReport, StoreError> {
        if matches!(self.mode, Mode::Disabled { .. }) {
            return Err(self.durability().err().unwrap_or(StoreError::Unavailable));
        }
        let path = match (&self.mode, &self.shared.location) {
            (Mode::Normal, StoreLocation::Path(p)) => Some(p.clone()),
            _ => None,
        };
        let file_bytes_before = path.as_deref().and_then(super::disk_bytes);
        let logs = self.logs.as_ref().map(LogWriter::dir);
        let result = retention::prune(&mut lock(&self.conn), logs, unix_now(), max_age, max_bytes);
        if let Some(logs) = &mut self.logs {
            // Removed children's files may be gone now.
            logs.close_all();
        }
        let mut report = result.map_err(|source| self.write_err(source))?;
        report.file_bytes_before = file_bytes_before;
        report.file_bytes_after = path.as_deref().and_then(super::disk_bytes);
        Ok(report)
    }

    fn background_retention(&mut self) {
        match self.prune(self.max_age, self.max_bytes) {
            Ok(r) if r.removed_by_age + r.removed_by_size > 0 => tracing::info!(
                "store {}: retention removed {} child transcript(s) ({} by age, {} by size)",
                self.shared.location,
                r.removed_by_age + r.removed_by_size,
                r.removed_by_age,
                r.removed_by_size
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!("store retention failed: {e}"),
        }
    }
}

/// Copy a database into a new in-memory one (or start an empty one if it cannot be read).
fn copy_to_memory(from: &Connection) -> Result<Connection, StoreError> {
    let mut mem = Connection::open_in_memory()
        .map_err(|source| super::schema::classify_open_error("memory", source))?;
    let copied = (|| -> rusqlite::Result<()> {
        let backup = Backup::new(from, &mut mem)?;
        // Bounded: the file is ours; another process holding it busy for a minute means
        // we start from empty instead.
        for _ in 0..600 {
            match backup.step(-1)? {
                StepResult::Done => return Ok(()),
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("the file stayed busy".into()),
        ))
    })();
    match copied {
        Ok(()) => Ok(mem),
        Err(e) => {
            tracing::warn!(
                "store: cannot copy the file's transcripts into memory ({e}); starting empty"
            );
            open_memory()
        }
    }
}

/// Apply writes in one immediate transaction (`BEGIN IMMEDIATE` takes the write lock up
/// front, so a busy file is met at the start, where the busy timeout applies, not midway).
///
/// Appends are gathered per child (each child's order kept) and written after the batch's
/// other operations with one counter update per child: the batch commits as a whole, and
/// those other operations touch other columns, so the result is the same as applying in
/// order, with a third of the statements.
fn apply_batch(
    conn: &mut Connection,
    ops: &[StoreOp],
    now: i64,
    mut logs: Option<&mut LogWriter>,
) -> Result<(), BatchError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut appends: Vec<(&str, Vec<&str>)> = Vec::new();
    for op in ops {
        match op {
            StoreOp::AppendUpdate { child_id, update } => {
                match appends.iter_mut().find(|(c, _)| *c == child_id.as_str()) {
                    Some((_, bodies)) => bodies.push(update),
                    None => appends.push((child_id.as_str(), vec![update])),
                }
            }
            other => apply(&tx, other, now)?,
        }
    }
    for (child_id, bodies) in appends {
        append_run(&tx, child_id, &bodies, now, logs.as_deref_mut())?;
    }
    Ok(tx.commit()?)
}

/// Append several updates to one child: to its transcript file while the file holds its
/// latest updates, else as rows. A child's first [`FILE_MIN_BYTES`] are rows; the batch that
/// passes them starts the file.
fn append_run(
    conn: &Connection,
    child_id: &str,
    bodies: &[&str],
    now: i64,
    logs: Option<&mut LogWriter>,
) -> Result<(), BatchError> {
    ensure_child(conn, child_id, now)?;
    let bytes: i64 = bodies.iter().map(|b| b.len() as i64).sum();
    if let Some(logs) = logs {
        let (count, log, log_seq, log_count, log_bytes, stored_bytes) = conn
            .prepare_cached(
                "SELECT update_count, log, log_seq, log_count, log_bytes, update_bytes
                 FROM children WHERE child_id = ?1",
            )?
            .query_row([child_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })?;
        // A text with a raw newline (never seen on the wire) would split into two lines: it
        // and everything after it go to rows.
        let one_line_each = bodies
            .iter()
            .all(|b| memchr::memchr(b'\n', b.as_bytes()).is_none());
        // The file holds the child's latest updates (none after it in rows), or this batch
        // takes a child without a file past FILE_MIN_BYTES.
        let file_has_tail = log.is_some() && count == log_seq + log_count;
        let starts_file = log.is_none() && stored_bytes + bytes >= FILE_MIN_BYTES;
        if one_line_each && (file_has_tail || starts_file) {
            let (name, log_seq, log_count, at) = match log {
                Some(name) => (name, log_seq, log_count, log_bytes),
                None => (super::logs::LogDir::new_name(), count, 0, 0),
            };
            let at = u64::try_from(at).unwrap_or(0);
            let written = logs.append(&name, at, bodies).map_err(BatchError::Log)?;
            conn.prepare_cached(
                "UPDATE children SET update_count = update_count + ?2,
                                     update_bytes = update_bytes + ?3,
                                     log = ?4,
                                     log_seq = ?5,
                                     log_count = ?6,
                                     log_bytes = ?7
                 WHERE child_id = ?1",
            )?
            .execute(params![
                child_id,
                bodies.len() as i64,
                bytes,
                name,
                log_seq,
                log_count + bodies.len() as i64,
                (at + written) as i64
            ])?;
            return Ok(());
        }
    }
    let first: i64 = conn
        .prepare_cached(
            "UPDATE children SET update_count = update_count + ?2,
                                 update_bytes = update_bytes + ?3
             WHERE child_id = ?1 RETURNING update_count - ?2",
        )?
        .query_row(params![child_id, bodies.len() as i64, bytes], |r| r.get(0))?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO updates (child_id, seq, count, body) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut seq = first;
    for run in newline_free_runs(bodies) {
        let body = match run {
            [one] => Cow::Borrowed(*one),
            many => Cow::Owned(many.join("\n")),
        };
        insert.execute(params![child_id, seq, run.len() as i64, body])?;
        seq += run.len() as i64;
    }
    Ok(())
}

/// Split `bodies` into runs that can share a row: consecutive texts without a newline (all
/// of them, in practice); a text with one (never seen on the wire) gets a row of its own.
fn newline_free_runs<'b, 'a>(bodies: &'b [&'a str]) -> impl Iterator<Item = &'b [&'a str]> {
    let mut rest = bodies;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let len = match rest
            .iter()
            .position(|b| memchr::memchr(b'\n', b.as_bytes()).is_some())
        {
            Some(0) => 1,
            Some(n) => n,
            None => rest.len(),
        };
        let (run, tail) = rest.split_at(len);
        rest = tail;
        Some(run)
    })
}

fn apply(conn: &Connection, op: &StoreOp, now: i64) -> Result<(), BatchError> {
    match op {
        StoreOp::UpsertChild {
            child_id,
            parent_session_id,
            spawn_tool_call_id,
            agent,
            cwd,
            title,
            tool_name,
            state,
        } => {
            conn.prepare_cached(
                "INSERT INTO children (child_id, parent_session_id, spawn_tool_call_id, agent,
                                       cwd, title, state, created_at, updated_at, tool_name)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9)
                 ON CONFLICT (child_id) DO UPDATE SET
                    parent_session_id = excluded.parent_session_id,
                    spawn_tool_call_id = excluded.spawn_tool_call_id,
                    agent = excluded.agent,
                    cwd = coalesce(excluded.cwd, cwd),
                    title = coalesce(excluded.title, title),
                    tool_name = coalesce(excluded.tool_name, tool_name),
                    state = excluded.state,
                    updated_at = excluded.updated_at",
            )?
            .execute(params![
                child_id.as_str(),
                parent_session_id.as_str(),
                spawn_tool_call_id,
                agent,
                cwd,
                title,
                state.as_str(),
                now,
                tool_name
            ])?;
        }
        StoreOp::AppendUpdate { child_id, update } => {
            // Appends are gathered by `apply_batch`; one on its own goes to rows.
            append_run(conn, child_id.as_str(), &[&**update], now, None)?;
        }
        StoreOp::SetState { child_id, state } => {
            ensure_child(conn, child_id.as_str(), now)?;
            conn.prepare_cached("UPDATE children SET state = ?2 WHERE child_id = ?1")?
                .execute(params![child_id.as_str(), state.as_str()])?;
        }
        StoreOp::SetIndices {
            child_id,
            entry_count,
            turns,
        } => {
            ensure_child(conn, child_id.as_str(), now)?;
            conn.prepare_cached(
                "UPDATE children SET entry_count = ?2, turns = ?3 WHERE child_id = ?1",
            )?
            .execute(params![child_id.as_str(), entry_count, encode_turns(turns)])?;
        }
        StoreOp::SetAgentChildId {
            child_id,
            agent_child_id,
        } => {
            ensure_child(conn, child_id.as_str(), now)?;
            conn.prepare_cached("UPDATE children SET agent_child_id = ?2 WHERE child_id = ?1")?
                .execute(params![child_id.as_str(), agent_child_id])?;
        }
    }
    Ok(())
}

/// Make sure the child has a row (a placeholder if unknown) and mark it updated now.
fn ensure_child(conn: &Connection, child_id: &str, now: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO children (child_id, parent_session_id, spawn_tool_call_id, agent, state,
                               created_at, updated_at)
         VALUES (?1, '', '', '', 'announced', ?2, ?2)
         ON CONFLICT (child_id) DO UPDATE SET updated_at = excluded.updated_at",
    )?
    .execute(params![child_id, now])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_split_only_around_texts_with_newlines() {
        let runs: Vec<Vec<&str>> = super::newline_free_runs(&["a", "b", "c\nd", "e", "\n", "f"])
            .map(<[&str]>::to_vec)
            .collect();
        assert_eq!(
            runs,
            [
                vec!["a", "b"],
                vec!["c\nd"],
                vec!["e"],
                vec!["\n"],
                vec!["f"]
            ]
        );
        assert_eq!(super::newline_free_runs(&[]).count(), 0);
    }
}
