//! `acp-proxy store stats` and `acp-proxy store prune`.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::proxy::BIN;
use crate::support::store::backdate;
use crate::support::store_writer::{committed_counts, Writer};

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("XDG_STATE_HOME")
        .output()
        .expect("run acp-proxy")
}

fn ok_stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

fn write_child(path: &Path, child: &str, count: u64) {
    let mut writer = Writer {
        path,
        child,
        count,
        batch: 7,
        duration: None,
    }
    .spawn();
    let counts = committed_counts(&mut writer);
    let status = writer.wait().expect("wait for the writer");
    assert!(status.success(), "store writer: {status}");
    assert_eq!(counts.last(), Some(&count), "{counts:?}");
}

#[test]
fn stats_and_prune() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.sqlite3");
    let p = path.to_str().expect("utf-8 path");

    let out = ok_stdout(&["store", "stats", "--store", p]);
    assert!(out.contains("does not exist yet"), "{out}");
    assert!(!path.exists(), "stats created the store");

    write_child(&path, "old", 20);
    write_child(&path, "new", 30);
    backdate(&path, "old", 2 * 86_400);

    let out = ok_stdout(&["store", "stats", "--store", p]);
    for line in [
        format!("store: {p}\n"),
        "schema version: 5\n".into(),
        "children: 2\n".into(),
        "updates: 50\n".into(),
        "file size: ".into(),
        "oldest update: 2 days ago".into(),
        "newest update: ".into(),
    ] {
        assert!(out.contains(&line), "missing {line:?} in:\n{out}");
    }

    let out = ok_stdout(&["store", "prune", "--store", p, "--max-age", "1d"]);
    assert!(
        out.contains("removed: 1 child(ren) (1 by age, 0 by size), 20 update(s)"),
        "{out}"
    );
    assert!(out.contains("on disk: "), "{out}");
    let out = ok_stdout(&["store", "stats", "--store", p]);
    assert!(out.contains("children: 1\nupdates: 30\n"), "{out}");
    // Global flags may also come before the subcommand.
    let before = ok_stdout(&["--store", p, "--log-level", "warn", "store", "stats"]);
    assert!(before.contains(&format!("store: {p}\n")), "{before}");
    assert!(before.contains("children: 1\nupdates: 30\n"), "{before}");

    let by_size = [
        "store",
        "prune",
        "--store",
        p,
        "--max-age",
        "0",
        "--max-bytes",
        "1KiB",
    ];
    // A child updated within the last hour may still be running: never removed for size.
    let out = ok_stdout(&by_size);
    assert!(out.contains("removed: 0 child(ren)"), "{out}");
    assert!(
        out.contains(
            "still over --max-bytes 1.0 KiB (1024 bytes): 1 child(ren) written to within the last \
             hour are never removed for size"
        ),
        "a prune that removes nothing says why: {out}"
    );
    backdate(&path, "new", 2 * 3600);
    let out = ok_stdout(&by_size);
    assert!(out.contains("(0 by age, 1 by size), 30 update(s)"), "{out}");
    assert!(!out.contains("within the last hour"), "{out}");
    let out = ok_stdout(&["store", "stats", "--store", p]);
    assert!(out.contains("children: 0\nupdates: 0\n"), "{out}");
}

#[test]
fn an_in_memory_store_has_nothing_to_show_or_prune() {
    for args in [
        &["store", "stats", "--store", "memory"][..],
        &["store", "prune", "--store", "memory", "--max-bytes", "1KiB"],
    ] {
        let out = ok_stdout(args);
        assert_eq!(
            out,
            "store: memory (nothing is stored: an in-memory store lives and ends with the proxy \
             that uses it)\n",
            "{args:?}"
        );
    }
}

#[test]
fn the_config_file_places_the_store_and_sets_retention() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("from-config.sqlite3");
    let config = dir.path().join("proxy.toml");
    std::fs::write(
        &config,
        format!(
            "[store]\npath = {:?}\nmax_age = \"12h\"\n",
            path.display().to_string()
        ),
    )
    .expect("write config");
    let config = config.to_str().expect("utf-8 path");
    write_child(&path, "a", 3);
    write_child(&path, "b", 3);
    backdate(&path, "a", 13 * 3600);
    let out = ok_stdout(&["store", "prune", "--config", config]);
    assert!(out.contains(&format!("store: {}", path.display())), "{out}");
    assert!(out.contains("(1 by age, 0 by size)"), "{out}");
}

#[test]
fn bad_arguments_and_bad_stores_fail_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.sqlite3");
    let p = path.to_str().expect("utf-8 path");

    // The store tests' writer is theirs alone: the shipped binary has no such command.
    let out = run(&[
        "store",
        "bench-writer",
        "--path",
        p,
        "--child",
        "c",
        "--count",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(
        !path.exists(),
        "a test helper in the shipped binary wrote {p}"
    );

    // --dump belongs to the proxy run, not to a subcommand.
    let out = run(&["--dump", p, "store", "stats"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--dump"), "{err}");
    assert!(!path.exists(), "a rejected command touched {p}");

    let out = run(&["store", "prune", "--store", p, "--max-bytes", "5MB"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--max-bytes") && err.contains("5MB"), "{err}");

    std::fs::write(&path, b"this is not an sqlite database, not even close....").expect("write");
    let out = run(&["store", "stats", "--store", p]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(p) && err.contains("corrupt"), "{err}");
}
