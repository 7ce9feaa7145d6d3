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
