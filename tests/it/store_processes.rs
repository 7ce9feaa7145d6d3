//! The store across real processes: concurrent writers on one file, and writers killed with
//! SIGKILL at random moments. Both use the test writer process ([`Writer`]), which appends
//! `{"n":1,...}`, `{"n":2,...}`, ... to one child and prints `committed N` after each
//! committed batch.

use std::path::Path;
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use acp_proxy::store::Store;

use crate::support::rng::Rng;
use crate::support::store::open_store;
use crate::support::store_writer::{committed_counts, Writer};

fn spawn_writer(path: &Path, child: &str, batch: u64, duration_ms: Option<u64>) -> Child {
    Writer {
        path,
        child,
        count: 1_000_000_000,
        batch,
        duration: duration_ms.map(Duration::from_millis),
    }
    .spawn()
}

/// Read the writer's stdout to the end; the highest `committed N` it printed.
fn last_committed(child: &mut Child) -> u64 {
    let counts = committed_counts(child);
    for pair in counts.windows(2) {
        assert!(
            pair[1] > pair[0],
            "committed counts go backwards: {} then {}",
            pair[0],
            pair[1]
        );
    }
    counts.last().copied().unwrap_or(0)
}

fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut s);
    }
    s
}

/// The `n` of each stored update of `child`, checking each is the writer's exact text.
fn stored_ns(store: &Store, child: &str) -> Vec<u64> {
    let Some(stored) = store.child(child).expect("read") else {
        return Vec::new();
    };
    stored
        .updates
        .iter()
        .map(|u| {
            let v: serde_json::Value = serde_json::from_str(u).expect("stored update is JSON");
            let n = v["n"].as_u64().expect("n");
            assert_eq!(
                v["content"]["text"],
                format!("update {n} of {child}"),
                "stored text differs"
            );
            n
        })
        .collect()
}

/// Stored updates are exactly 1, 2, ..., len (nothing lost, duplicated or reordered), and at
/// least `committed` of them.
fn assert_prefix(ns: &[u64], committed: u64, what: &str) {
    for (i, n) in ns.iter().enumerate() {
        assert_eq!(*n, i as u64 + 1, "{what}: update {} is n={n}", i + 1);
    }
    assert!(
        ns.len() as u64 >= committed,
        "{what}: {committed} reported committed but only {} stored",
        ns.len()
    );
}

#[test]
fn two_processes_write_one_store_concurrently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.sqlite3");
    let mut writers = [
        spawn_writer(&path, "one", 5, Some(10_000)),
        spawn_writer(&path, "two", 13, Some(10_000)),
    ];

    // Meanwhile, read from this process: every snapshot is a clean prefix.
    let started = Instant::now();
    let mut reads = 0;
    while started.elapsed() < Duration::from_secs(9) {
        thread::sleep(Duration::from_millis(250));
        if !path.exists() {
            continue;
        }
        let store = open_store(&path);
        for child in ["one", "two"] {
            assert_prefix(&stored_ns(&store, child), 0, child);
        }
        reads += 1;
    }
    assert!(reads > 0, "never read while writing");

    for (w, child) in writers.iter_mut().zip(["one", "two"]) {
        let committed = last_committed(w);
        let status = w.wait().expect("wait");
        assert!(status.success(), "{child}: {status}: {}", stderr_of(w));
        assert!(committed > 0, "{child} committed nothing");
        let ns = stored_ns(&open_store(&path), child);
        assert_prefix(&ns, committed, child);
        // It exited normally after its last flush: exactly what it reported.
        assert_eq!(ns.len() as u64, committed, "{child}");
    }
}

#[test]
fn a_writer_killed_at_random_moments_never_loses_a_committed_update() {
    const SEED: u64 = 0x5eed_acd0_2024_0001;
    const RUNS: usize = 50;
    let mut rng = Rng(SEED);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.sqlite3");
    let mut reported = Vec::with_capacity(RUNS);
    for run in 0..RUNS {
        let child = format!("crash-{run}");
        let batch = rng.range(1, 20);
        let after = Duration::from_millis(rng.range(50, 300));
        let mut writer = spawn_writer(&path, &child, batch, None);
        thread::sleep(after);
        // `Child::kill` sends SIGKILL on Unix: no destructor, no flush, no goodbye.
        writer.kill().expect("kill");
        let committed = last_committed(&mut writer);
        let status = writer.wait().expect("wait");
        assert!(
            status.code().is_none(),
            "run {run}: writer exited by itself ({status}): {}",
            stderr_of(&mut writer)
        );
        let what = format!("run {run} (seed {SEED:#x}, batch {batch}, killed after {after:?})");
        let store = open_store(&path);
        assert_prefix(&stored_ns(&store, &child), committed, &what);
        reported.push((child, committed));
    }
    // Later runs and recoveries did not disturb earlier children.
    let store = open_store(&path);
    for (child, committed) in &reported {
        assert_prefix(&stored_ns(&store, child), *committed, child);
    }
    let total: u64 = reported.iter().map(|(_, c)| c).sum();
    assert!(
        total > 0,
        "no run committed anything: the test proves nothing"
    );
}
