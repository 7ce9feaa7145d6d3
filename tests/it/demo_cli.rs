//! `acp-proxy demo` runs the real proxy over the demo agent and prints what Zed would show.

use std::process::Command;

use crate::support::proxy::BIN;

#[test]
fn demo_prints_cards_and_child_threads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(BIN)
        .arg("demo")
        .current_dir(dir.path())
        .env("XDG_STATE_HOME", dir.path())
        .output()
        .expect("run acp-proxy demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("== Child thread of").count(), 2, "{stdout}");
    assert!(
        stdout.contains("subagent card \"Survey text files\" [completed]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Survey text files · Find `*.txt` · 1 step"),
        "live progress: {stdout}"
    );
    assert!(stdout
        .contains("0 rejected notifications, 0 dropped updates, 0 requests for unknown sessions"));
    // The child's tool calls are in the child thread, never in the parent.
    let parent = stdout.split("== Child thread").next().unwrap_or("");
    assert!(!parent.contains("tool call \"Find"), "{parent}");
}

fn demo(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("demo")
        .args(args)
        .current_dir(dir)
        .env("XDG_STATE_HOME", dir)
        .env("XDG_CONFIG_HOME", dir)
        .output()
        .expect("run acp-proxy demo")
}

#[test]
fn demo_beside_a_proxy_toml_is_quiet() {
    // As in a checkout of this repository, whose documented example config is ./proxy.toml.
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("proxy.toml"), "display = \"off\"\n").expect("write");
    let out = demo(dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, "", "the demo says nothing on stderr");
}

#[test]
fn demo_takes_the_proxy_flags_after_the_separator() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = demo(dir.path(), &["--", "--display", "transcript"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Folded into the spawn cards: no child threads.
    assert!(
        stdout.contains("tool call \"Survey text files\" [completed]"),
        "{stdout}"
    );
    assert!(!stdout.contains("== Child thread of"), "{stdout}");

    let store = dir.path().join("mine.sqlite3");
    let out = demo(
        dir.path(),
        &["--", "--store", store.to_str().expect("utf-8")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = Command::new(BIN)
        .args(["store", "stats", "--store"])
        .arg(&store)
        .output()
        .expect("store stats");
    let stats = String::from_utf8_lossy(&stats.stdout);
    assert!(stats.contains("children: 2\n"), "{stats}");
}

#[test]
fn demo_with_a_flag_the_proxy_does_not_take_says_which_it_takes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = demo(dir.path(), &["--", "--colour", "blue"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unexpected argument '--colour'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("which takes --config, --display, --dump, --store and --log-level"),
        "{stderr}"
    );
    assert!(!stderr.contains("channel"), "no internal error: {stderr}");
}
