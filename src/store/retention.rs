//! Retention: drop child transcripts by age, then oldest first by size (never one updated
//! within the last hour), and give the freed pages back to the file system.
//!
//! "Size" is the pages the database uses (page count minus free pages, times page size), so
//! it does not depend on when the last checkpoint ran. Deletions run in short transactions of
//! at most [`CHUNK`] children, so writers and readers in other processes are never held up
//! for long.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::logs::LogDir;
use super::PruneReport;

/// Children deleted per transaction.
const CHUNK: usize = 200;
/// Children updated within this many seconds are never removed for size: one of them may
/// still be running, and deleting it would leave its later updates without their beginning.
pub(super) const SIZE_PRUNE_MIN_IDLE_SECS: i64 = 3600;
/// Rough per-child cost beyond its update texts (rows, index entries), used only to pick how
/// many children to drop per round; the loop measures again after each round.
const CHILD_OVERHEAD: u64 = 256;
/// The oldest children last written before `?1`, at most `?2`, with their update bytes: the
/// order both prunings take them in.
const OLDEST_UPDATED_BEFORE: &str =
    "SELECT child_id, update_bytes FROM children WHERE updated_at < ?1
     ORDER BY updated_at, created_at, rowid LIMIT ?2";

#[derive(Debug, Clone, Copy)]
pub(super) struct PageUsage {
    page_size: u64,
    page_count: u64,
    freelist: u64,
}

impl PageUsage {
    pub(super) fn used_bytes(&self) -> u64 {
        self.page_count.saturating_sub(self.freelist) * self.page_size
    }
    pub(super) fn free_bytes(&self) -> u64 {
        self.freelist * self.page_size
    }
}

/// What the store uses: the database's pages in use plus the transcript files' committed
/// lengths.
pub(super) fn used_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    let logs: i64 = conn.query_row(
        "SELECT coalesce(sum(log_bytes), 0) FROM children",
        [],
        |r| r.get(0),
    )?;
    Ok(page_usage(conn)?.used_bytes() + logs.max(0) as u64)
}

pub(super) fn page_usage(conn: &Connection) -> rusqlite::Result<PageUsage> {
    let get = |name: &str| -> rusqlite::Result<u64> {
        let v: i64 = conn.pragma_query_value(None, name, |r| r.get(0))?;
        Ok(v.max(0) as u64)
    };
    Ok(PageUsage {
        page_size: get("page_size")?,
        page_count: get("page_count")?,
        freelist: get("freelist_count")?,
    })
}

/// Prune as of `now` (unix seconds). A zero `max_age` or `max_bytes` disables that limit.
pub(super) fn prune(
    conn: &mut Connection,
    logs: Option<&LogDir>,
    now: i64,
    max_age: Duration,
    max_bytes: u64,
) -> rusqlite::Result<PruneReport> {
    let mut report = PruneReport {
        used_bytes_before: used_bytes(conn)?,
        ..PruneReport::default()
    };

    if !max_age.is_zero() {
        let cutoff = now.saturating_sub(i64::try_from(max_age.as_secs()).unwrap_or(i64::MAX));
        loop {
            let ids = select_ids(conn, OLDEST_UPDATED_BEFORE, params![cutoff, CHUNK as i64])?;
            if ids.is_empty() {
                break;
            }
            report.updates_removed += delete_children(conn, logs, ids.iter().map(|(id, _)| id))?;
            report.removed_by_age += ids.len() as u64;
        }
    }

    if max_bytes != 0 {
        report.max_bytes = Some(max_bytes);
        let idle_cutoff = now.saturating_sub(SIZE_PRUNE_MIN_IDLE_SECS);
        loop {
            let used = used_bytes(conn)?;
            if used <= max_bytes {
                break;
            }
            let candidates = select_ids(
                conn,
                OLDEST_UPDATED_BEFORE,
                params![idle_cutoff, CHUNK as i64],
            )?;
            if candidates.is_empty() {
                report.kept_recent = conn
                    .query_row(
                        "SELECT count(*) FROM children WHERE updated_at >= ?1",
                        [idle_cutoff],
                        |r| r.get::<_, i64>(0),
                    )?
                    .max(0) as u64;
                break;
            }
            // Take the oldest children until their size covers the excess (at least one).
            // Pages hold more than the update texts (row headers, indexes, half-empty
            // pages), so the excess is scaled by the measured ratio of texts to pages.
            let payload: i64 = conn.query_row(
                "SELECT coalesce(sum(update_bytes), 0) + count(*) * ?1 FROM children",
                [CHILD_OVERHEAD as i64],
                |r| r.get(0),
            )?;
            let payload = payload.max(0) as u64;
            let excess = ((used - max_bytes) as u128 * payload as u128 / used as u128) as u64;
            let mut covered = 0u64;
            let mut take = 0;
            for (_, bytes) in &candidates {
                take += 1;
                covered += bytes + CHILD_OVERHEAD;
                if covered >= excess {
                    break;
                }
            }
            let chosen = &candidates[..take];
            report.updates_removed += delete_children(conn, logs, chosen.iter().map(|(id, _)| id))?;
            report.removed_by_size += chosen.len() as u64;
        }
    }

    shrink(conn)?;
    if let Some(logs) = logs {
        sweep_orphans(conn, logs)?;
    }
    report.used_bytes_after = used_bytes(conn)?;
    Ok(report)
}

/// Remove transcript files no child names any more (see [`LogDir::sweep`]).
fn sweep_orphans(conn: &Connection, logs: &LogDir) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare("SELECT log FROM children WHERE log IS NOT NULL")?;
    let named = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<HashSet<String>>>()?;
    let removed = logs.sweep(&named, SystemTime::now());
    if removed > 0 {
        tracing::info!("store: removed {removed} transcript file(s) no child names");
    }
    Ok(())
}

fn select_ids(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params, |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
    })?;
    rows.collect()
}

/// Delete children and their updates in one transaction, then their transcript files;
/// returns the updates removed.
fn delete_children<'a>(
    conn: &mut Connection,
    logs: Option<&LogDir>,
    ids: impl Iterator<Item = &'a String>,
) -> rusqlite::Result<u64> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut updates = 0u64;
    let mut files = Vec::new();
    for id in ids {
        // A row may hold a run of updates: count them, not the rows.
        let mut delete =
            tx.prepare_cached("DELETE FROM updates WHERE child_id = ?1 RETURNING count")?;
        let counts = delete.query_map([id], |r| r.get::<_, i64>(0))?;
        for count in counts {
            updates += count?.max(0) as u64;
        }
        drop(delete);
        let (log, log_count): (Option<String>, i64) = tx
            .prepare_cached("DELETE FROM children WHERE child_id = ?1 RETURNING log, log_count")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .unwrap_or((None, 0));
        updates += log_count.max(0) as u64;
        files.extend(log);
    }
    tx.commit()?;
    // After the commit: a crash in between leaves files no row names, which a later prune
    // sweeps; the other order could leave rows naming missing files.
    if let Some(logs) = logs {
        logs.remove(files.iter().map(String::as_str));
    }
    Ok(updates)
}

/// Give free pages back to the file system: incremental vacuum (full VACUUM for a file made
/// without auto_vacuum), then a truncating checkpoint so the main file and the WAL shrink.
fn shrink(conn: &Connection) -> rusqlite::Result<()> {
    if page_usage(conn)?.freelist == 0 {
        return Ok(());
    }
    let auto_vacuum: i64 = conn.pragma_query_value(None, "auto_vacuum", |r| r.get(0))?;
    if auto_vacuum == 0 {
        conn.execute_batch("VACUUM")?;
    } else {
        // Frees one page per step: run it to the end.
        let mut stmt = conn.prepare("PRAGMA incremental_vacuum")?;
        let mut rows = stmt.query([])?;
        while rows.next()?.is_some() {}
    }
    // Busy readers in other processes may keep part of the WAL; that is fine, the next
    // checkpoint finishes the job.
    let _busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema;

    /// A migrated database with `n` children, child `i` updated at `i * 100`, each with
    /// `per_child` updates of `size` bytes.
    fn db_with_children(n: usize, per_child: usize, size: usize) -> Connection {
        let mut conn = Connection::open_in_memory().expect("memory db");
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .expect("auto_vacuum");
        schema::migrate(&mut conn, "memory").expect("migrate");
        let body = format!("{{\"text\":\"{}\"}}", "x".repeat(size.saturating_sub(11)));
        let tx = conn.transaction().expect("tx");
        for i in 0..n {
            let id = format!("c{i:03}");
            tx.execute(
                "INSERT INTO children (child_id, parent_session_id, spawn_tool_call_id, agent,
                    state, update_count, update_bytes, created_at, updated_at)
                 VALUES (?1, 'p', 't', 'a', 'completed', ?2, ?3, ?4, ?4)",
                params![
                    id,
                    per_child as i64,
                    (per_child * body.len()) as i64,
                    i as i64 * 100
                ],
            )
            .expect("child");
            for seq in 0..per_child {
                tx.execute(
                    "INSERT INTO updates (child_id, seq, body) VALUES (?1, ?2, ?3)",
                    params![id, seq as i64, body],
                )
                .expect("update");
            }
        }
        tx.commit().expect("commit");
        conn
    }

    /// A "now" at which every child of `db_with_children(20, ..)` is idle long enough to be
    /// removed for size.
    const ALL_IDLE: i64 = 1900 + SIZE_PRUNE_MIN_IDLE_SECS + 1;

    fn remaining(conn: &Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT child_id FROM children ORDER BY child_id")
            .expect("prepare");
        let rows = stmt.query_map([], |r| r.get(0)).expect("query");
        rows.collect::<Result<_, _>>().expect("rows")
    }

    fn update_rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM updates", [], |r| r.get(0))
            .expect("count")
    }

    #[test]
    fn by_age_removes_exactly_the_stale_children() {
        let mut conn = db_with_children(10, 3, 100);
        // now = 1000, max_age = 450 s: cutoff 550, children updated at 0..=500 go.
        let report = prune(&mut conn, None, 1000, Duration::from_secs(450), 0).expect("prune");
        assert_eq!(report.removed_by_age, 6);
        assert_eq!(report.removed_by_size, 0);
        assert_eq!(report.updates_removed, 18);
        assert_eq!(remaining(&conn), ["c006", "c007", "c008", "c009"]);
        assert_eq!(update_rows(&conn), 12);
    }

    #[test]
    fn zero_limits_remove_nothing() {
        let mut conn = db_with_children(5, 2, 100);
        let report = prune(&mut conn, None, i64::MAX, Duration::ZERO, 0).expect("prune");
        assert_eq!(report.removed_by_age + report.removed_by_size, 0);
        assert_eq!(remaining(&conn).len(), 5);
    }

    #[test]
    fn by_size_removes_oldest_first_until_under_the_limit() {
        // 20 children × 10 updates × 2 KiB ≈ 400 KiB.
        let mut conn = db_with_children(20, 10, 2048);
        let before = page_usage(&conn).expect("usage").used_bytes();
        let limit = before / 2;
        let report = prune(&mut conn, None, ALL_IDLE, Duration::ZERO, limit).expect("prune");
        let after = page_usage(&conn).expect("usage").used_bytes();
        assert!(after <= limit, "used {after} > limit {limit}");
        assert_eq!(report.used_bytes_before, before);
        assert_eq!(report.used_bytes_after, after);
        assert!(report.removed_by_size >= 9, "{report:?}");
        assert!(report.removed_by_size < 20, "{report:?}");
        let kept = remaining(&conn);
        assert_eq!(kept.len() as u64, 20 - report.removed_by_size);
        // Exactly the newest ones survive.
        let expected: Vec<String> = (report.removed_by_size as usize..20)
            .map(|i| format!("c{i:03}"))
            .collect();
        assert_eq!(kept, expected);
        // Freed pages went back (incremental vacuum), not just onto the free list.
        assert_eq!(page_usage(&conn).expect("usage").freelist, 0);
    }

    #[test]
    fn age_then_size() {
        let mut conn = db_with_children(20, 10, 2048);
        let limit = page_usage(&conn).expect("usage").used_bytes() / 4;
        let report = prune(
            &mut conn,
            None,
            ALL_IDLE,
            Duration::from_secs(ALL_IDLE as u64 - 500),
            limit,
        )
        .expect("prune");
        // Updated at 0..=400 are stale (cutoff 500).
        assert_eq!(report.removed_by_age, 5);
        assert!(report.removed_by_size > 0, "{report:?}");
        assert!(page_usage(&conn).expect("usage").used_bytes() <= limit);
    }

    #[test]
    fn a_limit_below_an_empty_database_empties_it_and_stops() {
        let mut conn = db_with_children(3, 2, 100);
        let report = prune(&mut conn, None, ALL_IDLE, Duration::ZERO, 1).expect("prune");
        assert_eq!(report.removed_by_size, 3);
        assert!(remaining(&conn).is_empty());
        assert_eq!(update_rows(&conn), 0);
    }

    #[test]
    fn size_never_removes_a_recently_updated_child() {
        // Updated at 0, 100, ..., 900; at now = 500 + the idle time, only those updated
        // before 500 may go, however far over the limit the rest keeps the database.
        let mut conn = db_with_children(10, 3, 100);
        let now = 500 + SIZE_PRUNE_MIN_IDLE_SECS;
        let report = prune(&mut conn, None, now, Duration::ZERO, 1).expect("prune");
        assert_eq!(report.removed_by_size, 5);
        assert_eq!(remaining(&conn), ["c005", "c006", "c007", "c008", "c009"]);
        assert_eq!(update_rows(&conn), 15);
    }
}
