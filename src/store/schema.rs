//! The store's schema and its migrations.
//!
//! `PRAGMA user_version` holds the number of migrations applied. [`MIGRATIONS`] is append-only:
//! a released entry is never edited, a schema change is a new entry. [`migrate`] applies the
//! missing ones in one transaction, so a crash mid-migration leaves the old version intact, and
//! two processes opening the same file at once apply each migration exactly once.

use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use super::StoreError;

/// `PRAGMA application_id` of an acp-proxy store ("acpp"), so that a path pointing at some
/// other SQLite database is refused instead of altered.
pub(super) const APPLICATION_ID: i64 = 0x6163_7070;

/// Ordered migrations; entry `i` takes the schema from version `i` to `i + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: children and their updates.
    r#"
    PRAGMA application_id = 1633906800;
    CREATE TABLE children (
        child_id           TEXT PRIMARY KEY NOT NULL,
        parent_session_id  TEXT NOT NULL,
        spawn_tool_call_id TEXT NOT NULL,
        agent              TEXT NOT NULL,
        cwd                TEXT,
        title              TEXT,
        state              TEXT NOT NULL,
        entry_count        INTEGER NOT NULL DEFAULT 0,
        turns              TEXT NOT NULL DEFAULT '[]',  -- JSON [[start, end|null], ...]
        update_count       INTEGER NOT NULL DEFAULT 0,  -- also the next update's seq
        update_bytes       INTEGER NOT NULL DEFAULT 0,  -- total length of the update texts
        created_at         INTEGER NOT NULL,            -- unix seconds
        updated_at         INTEGER NOT NULL             -- unix seconds, any write to the child
    );
    CREATE INDEX children_by_parent ON children (parent_session_id, created_at);
    CREATE INDEX children_by_age ON children (updated_at);
    CREATE TABLE updates (
        child_id TEXT NOT NULL,
        seq      INTEGER NOT NULL,      -- 0-based position in the child's transcript
        body     TEXT NOT NULL,         -- the session/update `update` object, exact JSON text
        PRIMARY KEY (child_id, seq)
    );
    "#,
    // 2: a row may hold a run of `count` consecutive updates (seq, seq + 1, ...), their texts
    // joined by "\n" (an update's text is one line of the wire, so it holds no raw newline).
    // Writing a batch's updates of a child as one row costs far less than a row each.
    r#"
    ALTER TABLE updates ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
    "#,
    // 3: a file store keeps a child's update texts past its first 32 KiB in a transcript file
    // of its own, one per line (`logs.rs`): `log` names it; it holds `log_count` updates from
    // seq `log_seq` on, in its first `log_bytes` bytes. The others (before, and after if the
    // writes moved to memory) are rows.
    r#"
    ALTER TABLE children ADD COLUMN log TEXT;
    ALTER TABLE children ADD COLUMN log_seq INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE children ADD COLUMN log_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE children ADD COLUMN log_bytes INTEGER NOT NULL DEFAULT 0;
    "#,
    // 4: the agent's name for the tool that spawned the child (`_meta.tool_name` on its card),
    // so a card restored after a restart says the same as it did live. NULL in rows written
    // before: the reader falls back to what it said then.
    r#"
    ALTER TABLE children ADD COLUMN tool_name TEXT;
    "#,
    // 5: the agent's own id for the child (a preset's `agent_child_id`, such as Kimi's
    // `agent_id`), so that a reopened parent whose agent replays the spawn under a new tool
    // call id finds the stored child by it. NULL in rows written before, or when the agent
    // names none.
    r#"
    ALTER TABLE children ADD COLUMN agent_child_id TEXT;
    "#,
];

/// The schema version this build writes.
pub(super) fn latest() -> u32 {
    MIGRATIONS.len() as u32
}

/// Bring the database to [`latest`]. Returns the version found.
pub(super) fn migrate(conn: &mut Connection, location: &str) -> Result<u32, StoreError> {
    let open_err = |source: rusqlite::Error| classify_open_error(location, source);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(open_err)?;
    let found: u32 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(open_err)?;
    let app_id: i64 = tx
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(open_err)?;
    let tables: i64 = tx
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .map_err(open_err)?;
    let foreign = if found == 0 {
        app_id != 0 || tables != 0
    } else {
        app_id != APPLICATION_ID
    };
    if foreign {
        return Err(StoreError::Foreign {
            location: location.to_owned(),
        });
    }
    let supported = latest();
    if found > supported {
        return Err(StoreError::TooNew {
            location: location.to_owned(),
            found,
            supported,
        });
    }
    if found == supported {
        return Ok(found);
    }
    let migrate_err = |source| StoreError::Migrate {
        location: location.to_owned(),
        from: found,
        to: supported,
        source,
    };
    for sql in &MIGRATIONS[found as usize..] {
        tx.execute_batch(sql).map_err(migrate_err)?;
    }
    tx.pragma_update(None, "user_version", supported)
        .map_err(migrate_err)?;
    tx.commit().map_err(migrate_err)?;
    Ok(found)
}

/// Turn an SQLite error met while opening into the most helpful [`StoreError`].
pub(super) fn classify_open_error(location: &str, source: rusqlite::Error) -> StoreError {
    match source.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            location: location.to_owned(),
            source,
        },
        _ => StoreError::Open {
            location: location.to_owned(),
            source,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_id_constant_matches_the_sql() {
        assert!(MIGRATIONS[0].contains(&format!("application_id = {APPLICATION_ID};")));
    }

    #[test]
    fn fresh_database_reaches_latest() {
        let mut conn = Connection::open_in_memory().expect("memory db");
        assert_eq!(migrate(&mut conn, "memory").expect("migrates"), 0);
        let v: u32 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("user_version");
        assert_eq!(v, latest());
        // Idempotent.
        assert_eq!(migrate(&mut conn, "memory").expect("migrates"), latest());
    }

    #[test]
    fn foreign_database_is_refused() {
        let mut conn = Connection::open_in_memory().expect("memory db");
        conn.execute_batch("CREATE TABLE notes (x TEXT)")
            .expect("create");
        let e = migrate(&mut conn, "x.db").expect_err("foreign");
        assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
    }
}
