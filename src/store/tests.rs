//! Store behaviour through its public API (plus a test hook into the writer).

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::*;

fn file_cfg(path: &Path) -> StoreConfig {
    StoreConfig {
        location: Some(StoreLocation::Path(path.to_owned())),
        background_prune: false,
        ..StoreConfig::default()
    }
}

fn memory_cfg() -> StoreConfig {
    StoreConfig {
        location: Some(StoreLocation::Memory),
        ..StoreConfig::default()
    }
}

fn upsert(child: &str, parent: &str, title: Option<&str>, state: &str) -> StoreOp {
    let state = ChildState::from_stored(state).expect("a child state");
    StoreOp::UpsertChild {
        child_id: ChildId::known(child.into()),
        parent_session_id: ClientSessionId::new(parent.into()),
        spawn_tool_call_id: format!("call-{child}"),
        agent: "demo".into(),
        cwd: Some("/work".into()),
        title: title.map(Into::into),
        tool_name: Some("Agent".into()),
        state,
    }
}

fn append(child: &str, update: &str) -> StoreOp {
    StoreOp::AppendUpdate {
        child_id: ChildId::known(child.into()),
        update: update.into(),
    }
}

/// Writes a small child through every op and checks it reads back exactly.
fn round_trip(store: &Store) {
    // Key order, spacing and number spelling must survive: transcripts replay byte for byte.
    let updates = [
        r#"{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"Survey"}}"#,
        r#"{ "sessionUpdate": "agent_message_chunk", "content": {"text": "é \u00e9 1.0e3", "type":"text"} }"#,
        r#"{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Glob *.txt","status":"pending"}"#,
    ];
    store.submit(upsert("c1", "p1", Some("Survey text files"), "announced"));
    store.submit(StoreOp::SetState {
        child_id: ChildId::known("c1".into()),
        state: ChildState::Running,
    });
    for u in updates {
        store.submit(append("c1", u));
    }
    let turns = vec![
        TurnRange {
            start: 0,
            end: Some(2),
        },
        TurnRange {
            start: 3,
            end: None,
        },
    ];
    store.submit(StoreOp::SetIndices {
        child_id: ChildId::known("c1".into()),
        entry_count: 3,
        turns: turns.clone(),
    });
    store.flush().expect("flush");
    let before = unix_now();
    let child = store.child("c1").expect("read").expect("stored");
    assert_eq!(child.child_id.as_str(), "c1");
    assert_eq!(child.parent_session_id.as_str(), "p1");
    assert_eq!(child.spawn_tool_call_id, "call-c1");
    assert_eq!(child.agent, "demo");
    assert_eq!(child.cwd.as_deref(), Some("/work"));
    assert_eq!(child.title.as_deref(), Some("Survey text files"));
    assert_eq!(child.state.as_str(), "running");
    assert_eq!(child.updates, updates);
    assert_eq!(child.entry_count, 3);
    assert_eq!(child.turns, turns);
    assert!(
        (before - child.updated_at).abs() < 120,
        "{}",
        child.updated_at
    );
    assert_eq!(store.child("nope").expect("read"), None);
    assert_eq!(
        store
            .children_of(&ClientSessionId::new("p1".into()))
            .expect("read"),
        vec![child]
    );
    assert!(store
        .children_of(&ClientSessionId::new("p2".into()))
        .expect("read")
        .is_empty());
}

#[test]
fn round_trip_in_memory() {
    let store = Store::open(&memory_cfg()).expect("open");
    assert_eq!(store.location(), &StoreLocation::Memory);
    round_trip(&store);
}

#[test]
fn round_trip_in_a_file_and_after_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.sqlite3");
    let store = Store::open(&file_cfg(&path)).expect("open");
    round_trip(&store);
    let first = store.child("c1").expect("read");
    drop(store);
    let store = Store::open(&file_cfg(&path)).expect("reopen");
    assert_eq!(store.child("c1").expect("read"), first);
}

#[test]
fn a_file_store_keeps_long_transcripts_in_files_and_short_ones_in_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.sqlite3");
    let store = Store::open(&file_cfg(&path)).expect("open");
    let mut want = Vec::new();
    let pad = "p".repeat(600);
    for i in 0..300 {
        let text =
            format!(r#"{{"sessionUpdate":"agent_message_chunk","n":{i},"t":"a\"b\nc{pad}"}}"#);
        store.submit(append(if i % 3 == 0 { "x" } else { "y" }, &text));
        if i % 3 == 0 {
            want.push(text);
        }
        // Several batches: the first ones are rows (a child's first 32 KiB), the one that
        // passes them starts the file, later ones meet a file holding some.
        if i % 20 == 0 {
            store.flush().expect("flush");
        }
    }
    // A short child stays in rows.
    store.submit(append("z", "{}"));
    store.submit(append("z", "[1]"));
    store.flush().expect("flush");
    let stats = store.stats().expect("stats");
    assert_eq!(stats.updates, 302);
    drop(store);

    let conn = Connection::open(&path).expect("raw open");
    let in_rows = |child: &str| -> i64 {
        conn.query_row(
            "SELECT coalesce(sum(count), 0) FROM updates WHERE child_id = ?1",
            [child],
            |r| r.get(0),
        )
        .expect("rows")
    };
    // ~640 bytes each: about 51 updates make the first 32 KiB.
    let (x_rows, y_rows) = (in_rows("x"), in_rows("y"));
    assert!((40..=60).contains(&x_rows), "x: {x_rows} updates in rows");
    assert!((40..=60).contains(&y_rows), "y: {y_rows} updates in rows");
    assert_eq!(in_rows("z"), 2, "a short child is rows only");
    let (in_files, file_bytes): (i64, i64) = conn
        .query_row(
            "SELECT sum(log_count), sum(log_bytes) FROM children",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("files");
    assert_eq!(x_rows + y_rows + in_files, 300);
    assert_eq!(stats.transcript_bytes as i64, file_bytes);
    let files = std::fs::read_dir(LogDir::of_store(&path).path())
        .expect("transcripts")
        .count();
    assert_eq!(files, 2, "one file per long child");
    drop(conn);

    let store = Store::open(&file_cfg(&path)).expect("reopen");
    assert_eq!(
        store.child("x").expect("read").expect("stored").updates,
        want
    );
    assert_eq!(
        store
            .child("y")
            .expect("read")
            .expect("stored")
            .updates
            .len(),
        200
    );
    assert_eq!(
        store.child("z").expect("read").expect("stored").updates,
        ["{}", "[1]"]
    );
}

#[test]
fn a_missing_transcript_file_is_reported_not_misread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.sqlite3");
    let store = Store::open(&file_cfg(&path)).expect("open");
    store.submit(append("c", &format!("\"{}\"", "x".repeat(40 * 1024))));
    store.flush().expect("flush");
    std::fs::remove_dir_all(LogDir::of_store(&path).path()).expect("rm");
    let err = store.child("c").expect_err("malformed");
    assert!(
        matches!(
            err,
            StoreError::Malformed {
                what: "transcript file",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn order_is_kept_across_many_batches_and_children() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.sqlite3");
    // A tiny queue forces many small batches; flushes cut batches at odd places.
    let cfg = StoreConfig {
        queue_ops: 3,
        ..file_cfg(&path)
    };
    let store = Store::open(&cfg).expect("open");
    let children = ["a", "b", "c"];
    for c in children {
        store.submit(upsert(c, "p", None, "running"));
    }
    for i in 0..600 {
        for c in children {
            store.submit(append(c, &format!(r#"{{"n":{i},"c":"{c}"}}"#)));
        }
        if i % 97 == 0 {
            store.flush().expect("flush");
        }
    }
    drop(store); // Dropping the last handle commits the queue.
    let store = Store::open(&file_cfg(&path)).expect("reopen");
    let all = store
        .children_of(&ClientSessionId::new("p".into()))
        .expect("read");
    assert_eq!(all.len(), 3);
    for child in all {
        let expected: Vec<String> = (0..600)
            .map(|i| format!(r#"{{"n":{i},"c":"{}"}}"#, child.child_id))
            .collect();
        assert_eq!(child.updates, expected, "child {}", child.child_id);
    }
}

#[test]
fn a_full_queue_waits_and_loses_nothing() {
    let store = Store::open(&StoreConfig {
        queue_ops: 1,
        ..memory_cfg()
    })
    .expect("open");
    let producer = {
        let store = store.clone();
        std::thread::spawn(move || {
            for i in 0..2000 {
                store.submit(append("q", &i.to_string()));
            }
        })
    };
    producer.join().expect("producer");
    store.flush().expect("flush");
    let child = store.child("q").expect("read").expect("stored");
    let expected: Vec<String> = (0..2000).map(|i: i32| i.to_string()).collect();
    assert_eq!(child.updates, expected);
}

/// Submits three 100-byte updates while the writer is stuck on the connection: whether the
/// producer was still waiting after a while, and what the store holds once it is let go.
fn submit_with_a_stuck_writer(queue_bytes: u64) -> (bool, Vec<String>, usize) {
    let store = Store::open(&StoreConfig {
        queue_bytes,
        ..memory_cfg()
    })
    .expect("open");
    let conn = lock(&store.inner.shared.reader)
        .clone()
        .expect("a memory store's connection");
    let stuck = lock(&conn);
    let producer = {
        let store = store.clone();
        std::thread::spawn(move || {
            for i in 0..3 {
                store.submit(append("b", &format!("{i}{}", "x".repeat(99))));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let waiting = !producer.is_finished();
    drop(stuck);
    producer.join().expect("producer");
    store.flush().expect("flush");
    let updates = store.child("b").expect("read").expect("stored").updates;
    let queued = store.inner.shared.queued_bytes.load(Ordering::Relaxed);
    (waiting, updates, queued)
}

#[test]
fn past_queue_bytes_submit_waits_for_the_disk_and_loses_nothing() {
    let (waiting, updates, queued) = submit_with_a_stuck_writer(150);
    assert!(waiting, "the producer went on past 150 queued bytes");
    assert_eq!(updates.len(), 3);
    assert!(updates[2].starts_with('2'));
    assert_eq!(queued, 0, "every written byte is taken off the count");
    // Without the bound only the queue's length holds the producer back.
    let (waiting, updates, _) = submit_with_a_stuck_writer(0);
    assert!(!waiting);
    assert_eq!(updates.len(), 3);
}

#[test]
fn a_queue_slot_stays_small() {
    // The queue's slots are allocated and touched up front: a child's row is boxed.
    assert!(
        std::mem::size_of::<Msg>() <= 64,
        "{}",
        std::mem::size_of::<Msg>()
    );
}

#[test]
fn an_update_is_queued_without_a_box() {
    // The writer frees what it takes off the queue: an update (nearly every write) must
    // leave nothing for it to free that the relay's thread allocated.
    assert!(matches!(Msg::write(append("c", "u")), Msg::Append(..)));
    let state = StoreOp::SetState {
        child_id: ChildId::known("c".into()),
        state: ChildState::Running,
    };
    assert!(matches!(Msg::write(state), Msg::Op(_)));
}

#[test]
fn writes_before_upsert_land_in_a_placeholder_that_upsert_completes() {
    let store = Store::open(&memory_cfg()).expect("open");
    store.submit(append("early", "{}"));
    store.submit(StoreOp::SetState {
        child_id: ChildId::known("early".into()),
        state: ChildState::Running,
    });
    store.flush().expect("flush");
    let placeholder = store.child("early").expect("read").expect("stored");
    assert_eq!(placeholder.parent_session_id.as_str(), "");
    assert_eq!(placeholder.state.as_str(), "running");
    assert_eq!(placeholder.updates, ["{}"]);
    store.submit(upsert("early", "p", Some("Task"), "running"));
    // Upserting again without cwd/title keeps the stored ones.
    store.submit(StoreOp::UpsertChild {
        child_id: ChildId::known("early".into()),
        parent_session_id: ClientSessionId::new("p".into()),
        spawn_tool_call_id: "call-early".into(),
        agent: "demo".into(),
        cwd: None,
        title: None,
        tool_name: None,
        state: ChildState::Completed,
    });
    store.flush().expect("flush");
    let child = store.child("early").expect("read").expect("stored");
    assert_eq!(child.parent_session_id.as_str(), "p");
    assert_eq!(child.title.as_deref(), Some("Task"));
    assert_eq!(
        child.tool_name.as_deref(),
        Some("Agent"),
        "kept when not given"
    );
    assert_eq!(child.cwd.as_deref(), Some("/work"));
    assert_eq!(child.state.as_str(), "completed");
    assert_eq!(child.updates, ["{}"]);
}

#[test]
fn children_of_lists_only_that_parent() {
    let store = Store::open(&memory_cfg()).expect("open");
    for (c, p) in [("x1", "p"), ("y1", "q"), ("x2", "p")] {
        store.submit(upsert(c, p, None, "running"));
    }
    store.flush().expect("flush");
    let ids: Vec<String> = store
        .children_of(&ClientSessionId::new("p".into()))
        .expect("read")
        .into_iter()
        .map(|c| c.child_id.to_string())
        .collect();
    assert_eq!(ids, ["x1", "x2"]);
}

#[cfg(unix)] // modes; on Windows the profile's access list (docs/platforms.md)
#[test]
fn new_files_and_directories_are_private() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state/acp-proxy/store.sqlite3");
    let store = Store::open(&file_cfg(&path)).expect("open");
    store.submit(upsert("c", "p", None, "running"));
    store.submit(append("c", &format!("\"{}\"", "x".repeat(40 * 1024))));
    store.flush().expect("flush");
    let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&wal_path(&path)), 0o600);
    let logs = LogDir::of_store(&path);
    assert_eq!(mode(logs.path()), 0o700);
    for file in std::fs::read_dir(logs.path()).expect("transcripts") {
        assert_eq!(mode(&file.expect("entry").path()), 0o600);
    }
    assert_eq!(mode(path.parent().expect("dir")), 0o700);
    assert_eq!(mode(&dir.path().join("state")), 0o700);
    drop(store);
    // A loose existing file is tightened on open.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let _store = Store::open(&file_cfg(&path)).expect("reopen");
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_corrupt_file_gives_a_memory_store_and_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.sqlite3");
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&path, &garbage).expect("write garbage");

    let err = Store::open(&file_cfg(&path)).expect_err("garbage opens");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");

    let (store, warning) = Store::open_or_memory(&file_cfg(&path));
    let warning = warning.expect("a warning");
    assert!(warning.contains(&path.display().to_string()), "{warning}");
    assert!(warning.contains("in memory"), "{warning}");
    assert_eq!(store.location(), &StoreLocation::Memory);
    round_trip(&store);
    // The file is left as it was for the user to look at.
    assert_eq!(std::fs::read(&path).expect("read"), garbage);
}

#[test]
fn open_or_memory_without_trouble_has_no_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, warning) = Store::open_or_memory(&file_cfg(&dir.path().join("s.db")));
    assert_eq!(warning, None);
    assert!(matches!(store.location(), StoreLocation::Path(_)));
}

#[test]
fn a_store_from_a_newer_proxy_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    drop(Store::open(&file_cfg(&path)).expect("open"));
    let conn = Connection::open(&path).expect("raw open");
    conn.pragma_update(None, "user_version", schema::latest() + 1)
        .expect("bump");
    drop(conn);
    let err = Store::open(&file_cfg(&path)).expect_err("too new");
    assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
    assert!(err.to_string().contains("newer"), "{err}");
}

#[test]
fn a_child_with_a_state_this_proxy_does_not_know_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    let store = Store::open(&file_cfg(&path)).expect("open");
    store.submit(upsert("c1", "p1", Some("Task"), "completed"));
    store.flush().expect("flush");
    drop(store);
    let conn = Connection::open(&path).expect("raw open");
    conn.execute(
        "UPDATE children SET state = 'paused' WHERE child_id = 'c1'",
        [],
    )
    .expect("update");
    drop(conn);
    let store = Store::open(&file_cfg(&path)).expect("reopen");
    // Read as "running" it would be shown as still working: an error says what is wrong.
    let err = store.child("c1").expect_err("unknown state");
    assert!(
        matches!(err, StoreError::Malformed { what: "state", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("`paused`"), "{err}");
    assert!(store
        .children_of(&ClientSessionId::new("p1".into()))
        .is_err());
}

#[test]
fn another_programs_database_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("other.db");
    let conn = Connection::open(&path).expect("raw open");
    conn.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('mine');")
        .expect("create");
    drop(conn);
    let err = Store::open(&file_cfg(&path)).expect_err("foreign");
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    let conn = Connection::open(&path).expect("raw open");
    let t: String = conn
        .query_row("SELECT t FROM notes", [], |r| r.get(0))
        .expect("untouched");
    assert_eq!(t, "mine");
}

/// Data written by each schema version, to check that it survives later migrations. Entry
/// `i` is valid at schema version `i + 1`; add one with each migration.
const FIXTURES: &[&str] = &[
    // Version 1.
    r#"INSERT INTO children (child_id, parent_session_id, spawn_tool_call_id, agent, cwd,
            title, state, entry_count, turns, update_count, update_bytes, created_at, updated_at)
       VALUES ('old-child', 'old-parent', 'call-1', 'demo', '/w', 'Old task', 'completed', 2,
               '[[0,1]]', 2, 4, 1700000000, 1700000000);
       INSERT INTO updates (child_id, seq, body) VALUES ('old-child', 0, '{"a"'), ('old-child', 1, ':1}');"#,
    // Version 2: the same child, its two updates in one row.
    r#"INSERT INTO children (child_id, parent_session_id, spawn_tool_call_id, agent, cwd,
            title, state, entry_count, turns, update_count, update_bytes, created_at, updated_at)
       VALUES ('old-child', 'old-parent', 'call-1', 'demo', '/w', 'Old task', 'completed', 2,
               '[[0,1]]', 2, 4, 1700000000, 1700000000);
       INSERT INTO updates (child_id, seq, count, body)
       VALUES ('old-child', 0, 2, '{"a"' || char(10) || ':1}');"#,
    // Version 3: the same child, its first update in its transcript file (written by the
    // test: `V3_FILE`), the second in a row.
    r#"INSERT INTO children (child_id, parent_session_id, spawn_tool_call_id, agent, cwd,
            title, state, entry_count, turns, update_count, update_bytes, created_at, updated_at,
            log, log_count, log_bytes)
       VALUES ('old-child', 'old-parent', 'call-1', 'demo', '/w', 'Old task', 'completed', 2,
               '[[0,1]]', 2, 4, 1700000000, 1700000000, '00ab.jsonl', 1, 5);
       INSERT INTO updates (child_id, seq, count, body) VALUES ('old-child', 1, 1, ':1}');"#,
    // Version 4: the same child, its spawning tool named, both updates in one row.
    r#"INSERT INTO children (child_id, parent_session_id, spawn_tool_call_id, agent, cwd,
            title, state, entry_count, turns, update_count, update_bytes, created_at, updated_at,
            tool_name)
       VALUES ('old-child', 'old-parent', 'call-1', 'demo', '/w', 'Old task', 'completed', 2,
               '[[0,1]]', 2, 4, 1700000000, 1700000000, 'task');
       INSERT INTO updates (child_id, seq, count, body)
       VALUES ('old-child', 0, 2, '{"a"' || char(10) || ':1}');"#,
    // Version 5: the same child, with the agent's own id for it.
    r#"INSERT INTO children (child_id, parent_session_id, spawn_tool_call_id, agent, cwd,
            title, state, entry_count, turns, update_count, update_bytes, created_at, updated_at,
            tool_name, agent_child_id)
       VALUES ('old-child', 'old-parent', 'call-1', 'demo', '/w', 'Old task', 'completed', 2,
               '[[0,1]]', 2, 4, 1700000000, 1700000000, 'task', 'a705fd8f5');
       INSERT INTO updates (child_id, seq, count, body)
       VALUES ('old-child', 0, 2, '{"a"' || char(10) || ':1}');"#,
];

/// The transcript file the version 3 fixture names, and its text.
const V3_FILE: (&str, &str) = ("00ab.jsonl", "{\"a\"\n");

#[test]
fn a_store_at_any_earlier_version_migrates_to_the_latest() {
    assert_eq!(
        FIXTURES.len(),
        schema::MIGRATIONS.len(),
        "add a fixture per migration"
    );
    for version in 0..=schema::latest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        let conn = Connection::open(&path).expect("raw open");
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .expect("auto_vacuum");
        for sql in &schema::MIGRATIONS[..version as usize] {
            conn.execute_batch(sql).expect("old migration");
        }
        conn.pragma_update(None, "user_version", version)
            .expect("user_version");
        if version > 0 {
            conn.execute_batch(FIXTURES[version as usize - 1])
                .expect("fixture");
        }
        if version == 3 {
            let logs = LogDir::of_store(&path);
            std::fs::create_dir_all(logs.path()).expect("mkdir");
            std::fs::write(logs.path().join(V3_FILE.0), V3_FILE.1).expect("write");
        }
        drop(conn);

        let store = Store::open(&file_cfg(&path)).expect("open migrates");
        let stats = store.stats().expect("stats");
        assert_eq!(stats.schema_version, schema::latest(), "from {version}");
        if version > 0 {
            let child = store
                .child("old-child")
                .expect("read")
                .unwrap_or_else(|| panic!("fixture of version {version} lost"));
            assert_eq!(child.updates, [r#"{"a""#, ":1}"]);
            // Only rows written at version 4 on know the tool; older ones read as unknown.
            let tool = (version >= 4).then_some("task");
            assert_eq!(child.tool_name.as_deref(), tool, "from {version}");
            // Only rows written at version 5 on know the agent's own id for the child.
            let agent_id = (version >= 5).then_some("a705fd8f5");
            assert_eq!(child.agent_child_id.as_deref(), agent_id, "from {version}");
            assert_eq!(
                child.turns,
                [TurnRange {
                    start: 0,
                    end: Some(1)
                }]
            );
        }
        // And it is writable at the new version, an old child too (after what it holds).
        store.submit(append("new-child", "{}"));
        store.submit(append("old-child", "[2]"));
        store.flush().expect("flush");
        assert!(store.child("new-child").expect("read").is_some());
        if version > 0 {
            let child = store.child("old-child").expect("read").expect("stored");
            assert_eq!(child.updates, [r#"{"a""#, ":1}", "[2]"], "from {version}");
        }
    }
}

/// How a test makes the disk fail: the database, or the transcript files.
#[derive(Debug, Clone, Copy)]
enum DiskFault {
    Database,
    TranscriptFiles,
}

#[test]
fn a_failing_disk_moves_the_store_to_memory_without_losing_or_blocking() {
    failing_disk(DiskFault::Database);
    failing_disk(DiskFault::TranscriptFiles);
}

fn failing_disk(fault: DiskFault) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    let store = Store::open(&StoreConfig {
        queue_ops: 4,
        ..file_cfg(&path)
    })
    .expect("open");
    store.submit(upsert("c", "p", None, "running"));
    for i in 0..5 {
        store.submit(append("c", &format!("{{\"i\":{i}}}")));
    }
    store.flush().expect("flush");
    let big = format!("{{\"text\":\"{}\"}}", "z".repeat(64 * 1024));
    match fault {
        // The file may not grow by a single page any more: a new child with a long title
        // meets SQLITE_FULL.
        DiskFault::Database => {
            store
                .exec_in_writer("PRAGMA max_page_count = 1")
                .expect("limit");
            store.submit(upsert("d", "p", Some(&"t".repeat(64 * 1024)), "running"));
        }
        DiskFault::TranscriptFiles => store.fail_transcript_writes().expect("hook"),
    }
    store.submit(append("c", &big));
    let err = store.flush().expect_err("not durable any more");
    assert!(matches!(err, StoreError::Degraded { .. }), "{err}");
    let why = match fault {
        DiskFault::Database => "full",
        DiskFault::TranscriptFiles => "No space left on device",
    };
    assert!(err.to_string().contains(why), "{fault:?}: {err}");

    // Reads still see everything, old and new, from the memory copy.
    let child = store.child("c").expect("read").expect("stored");
    assert_eq!(child.updates.len(), 6);
    assert_eq!(child.updates[5], big);
    let stats = store.stats().expect("stats");
    assert!(stats.degraded.is_some());

    // Many more writes than the queue holds: nothing blocks, nothing is lost.
    for i in 0..50 {
        store.submit(append("c", &format!("{{\"after\":{i}}}")));
    }
    assert!(store.flush().is_err());
    let child = store.child("c").expect("read").expect("stored");
    assert_eq!(child.updates.len(), 56);
    assert_eq!(child.updates[55], "{\"after\":49}");

    // The file holds what was committed before the failure, intact.
    let other = Store::open(&file_cfg(&path)).expect("file still opens");
    let on_disk = other.child("c").expect("read").expect("stored");
    assert_eq!(on_disk.updates.len(), 5);
}

fn fill(store: &Store, children: usize, updates: usize, size: usize) {
    let body = format!("{{\"text\":\"{}\"}}", "y".repeat(size));
    for c in 0..children {
        let id = format!("c{c:03}");
        store.submit(upsert(&id, "p", None, "completed"));
        for _ in 0..updates {
            store.submit(append(&id, &body));
        }
    }
    store.flush().expect("flush");
}

fn backdate(path: &Path, child: &str, secs: i64) {
    let conn = Connection::open(path).expect("raw open");
    conn.busy_timeout(Duration::from_secs(5)).expect("busy");
    let n = conn
        .execute(
            "UPDATE children SET updated_at = updated_at - ?2 WHERE child_id = ?1",
            rusqlite::params![child, secs],
        )
        .expect("backdate");
    assert_eq!(n, 1);
}

#[test]
fn prune_by_size_shrinks_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    let store = Store::open(&file_cfg(&path)).expect("open");
    fill(&store, 30, 20, 4096);
    let before = store.stats().expect("stats");
    assert_eq!(before.children, 30);
    assert_eq!(before.updates, 600);
    assert!(before.update_bytes > 600 * 4096);
    // Children updated within the last hour are never removed for size.
    let limit = 256 * 1024;
    let report = store.prune(Duration::ZERO, limit).expect("prune");
    assert_eq!(report.removed_by_size, 0, "{report:?}");
    for c in 0..30 {
        backdate(&path, &format!("c{c:03}"), 2 * 3600);
    }
    let report = store.prune(Duration::ZERO, limit).expect("prune");
    assert!(
        report.removed_by_size > 0 && report.removed_by_size < 30,
        "{report:?}"
    );
    assert_eq!(report.removed_by_age, 0);
    assert!(report.used_bytes_after <= limit, "{report:?}");
    let (fb, fa) = (
        report.file_bytes_before.expect("file size"),
        report.file_bytes_after.expect("file size"),
    );
    assert!(fa < fb / 2, "file did not shrink: {fb} -> {fa}");
    let after = store.stats().expect("stats");
    assert_eq!(after.children, 30 - report.removed_by_size);
    assert_eq!(after.updates, 600 - report.updates_removed);
    // The newest child is kept.
    assert!(store.child("c029").expect("read").is_some());
    assert!(store.child("c000").expect("read").is_none());
}

#[test]
fn retention_runs_in_the_background_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    let store = Store::open(&file_cfg(&path)).expect("open");
    fill(&store, 2, 3, 10);
    drop(store);
    backdate(&path, "c000", 31 * 86_400);

    // Without background pruning the stale child is still there...
    let store = Store::open(&file_cfg(&path)).expect("open");
    store.flush().expect("flush");
    assert!(store.child("c000").expect("read").is_some());
    drop(store);

    // ...with it (the default), the writer prunes before anything else.
    let store = Store::open(&StoreConfig {
        background_prune: true,
        ..file_cfg(&path)
    })
    .expect("open");
    store.flush().expect("flush");
    assert!(store.child("c000").expect("read").is_none());
    assert!(store.child("c001").expect("read").is_some());
    let stats = store.stats().expect("stats");
    assert_eq!((stats.children, stats.updates), (1, 3));
}

#[test]
fn prune_by_age_through_the_api() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    let store = Store::open(&file_cfg(&path)).expect("open");
    fill(&store, 3, 2, 10);
    backdate(&path, "c001", 3 * 3600);
    let report = store.prune(Duration::from_secs(3600), 0).expect("prune");
    assert_eq!(report.removed_by_age, 1);
    assert_eq!(report.updates_removed, 2);
    assert!(store.child("c001").expect("read").is_none());
    assert!(store.child("c000").expect("read").is_some());
    assert!(store.child("c002").expect("read").is_some());
}

#[test]
fn a_batch_of_appends_shares_rows_and_reads_back_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    let store = Store::open(&file_cfg(&path)).expect("open");
    let mut want = Vec::new();
    for i in 0..40 {
        for child in ["a", "b"] {
            let text =
                format!(r#"{{"sessionUpdate":"agent_message_chunk","n":{i},"c":"{child}\n"}}"#);
            store.submit(append(child, &text));
            if child == "a" {
                want.push(text);
            }
        }
    }
    // A text with a raw newline (never seen on the wire) still round-trips.
    store.submit(append("a", "{\n}"));
    want.push("{\n}".to_owned());
    store.submit(append("a", "{}"));
    want.push("{}".to_owned());
    store.flush().expect("flush");
    assert_eq!(
        store.child("a").expect("read").expect("stored").updates,
        want
    );
    assert_eq!(
        store
            .child("b")
            .expect("read")
            .expect("stored")
            .updates
            .len(),
        40
    );
    drop(store);
    let conn = Connection::open(&path).expect("raw open");
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM updates", [], |r| r.get(0))
        .expect("count");
    assert!(
        rows < 20,
        "{rows} rows for 83 updates: appends were not gathered"
    );
}

#[test]
fn a_run_row_with_the_wrong_count_is_reported_not_misread() {
    let store = Store::open(&memory_cfg()).expect("open");
    store.submit(append("c", "{}"));
    store.flush().expect("flush");
    store
        .exec_in_writer("UPDATE updates SET count = 3, body = '{}' || char(10) || '{}'")
        .expect("corrupt");
    let err = store.child("c").expect_err("malformed");
    assert!(
        err.to_string().contains("should hold 3 updates, not 2"),
        "{err}"
    );
}

/// Proxies started together may create one store at the same moment. SQLite answers one of
/// them "locked" without waiting while both switch the new file to WAL (before opening
/// retried, this failed within the first hundred rounds on every run); every open must
/// succeed.
#[test]
fn opening_a_new_store_from_many_connections_at_once_never_fails() {
    const ROUNDS: usize = 300;
    const OPENERS: usize = 6;
    for _ in 0..ROUNDS {
        // In memory where there is a tmpfs: the race is in the locks, not the disk.
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .expect("tempdir");
        let path = dir.path().join("s.db");
        let start = Arc::new(std::sync::Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    prepare_file(&path)?;
                    open_connections(&path).map(drop)
                })
            })
            .collect();
        for opener in openers {
            if let Err(e) = opener.join().expect("opener thread") {
                panic!("a concurrent open failed: {e}");
            }
        }
    }
}
