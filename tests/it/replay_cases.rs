//! Every regression case in `tests/replay/` replays to exactly its expected outputs, and a
//! case whose expected output is changed fails, at the input concerned.

use std::path::{Path, PathBuf};
use std::process::Command;

use acp_proxy_tools::dump_tools::replay;

const BIN: &str = env!("CARGO_BIN_EXE_acp-proxy");

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/replay")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    cases.sort();
    cases
}

#[test]
fn every_case_replays_to_its_expected_outputs() {
    let cases = cases();
    assert!(cases.len() >= 5, "the cases are there: {cases:?}");
    let mut failed = Vec::new();
    for case in &cases {
        let (report, _) = replay::replay_files(std::slice::from_ref(case), None, true, |_| Ok(()))
            .unwrap_or_else(|e| panic!("{}: {e:#}", case.display()));
        assert!(report.to_client > 10, "{}: {report:?}", case.display());
        if !report.differences.is_empty() {
            failed.push(format!(
                "{}:\n{}",
                case.display(),
                replay::render_report(&report)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn a_case_whose_expected_frame_is_edited_fails_at_that_input() {
    let case = &cases()[0];
    let text = std::fs::read_to_string(case).expect("case");
    // Change one expected frame to the client, the way a user writes the fix they want.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let (n, edited) = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, l)| {
            (l.contains("\"dir\":\"proxy→client\"") && l.contains("session/update"))
                .then(|| (i, l.replacen("session/update", "session/updat", 1)))
        })
        .expect("an expected frame to the client");
    lines[n] = edited;
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("edited.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").expect("write");
    let (report, _) =
        replay::replay_files(std::slice::from_ref(&bad), None, true, |_| Ok(())).expect("replay");
    assert_eq!(
        report.differences.len(),
        1,
        "{}",
        replay::render_report(&report)
    );
    let d = &report.differences[0];
    assert!(
        d.recorded.iter().any(|(line, _)| *line == n as u64 + 1),
        "{d:?}"
    );
    let out = Command::new(BIN)
        .arg("replay")
        .arg("--diff")
        .arg(&bad)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("the replay DIFFERS from the dump"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("- line {}", n + 1)), "{stdout}");
}

#[test]
fn emit_test_writes_a_case_the_suite_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = &cases()[0];
    let out = Command::new(BIN)
        .args(["replay", "--emit-test"])
        .arg(dir.path())
        .args(["--name", "made-here"])
        .arg(source)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let case = dir.path().join("made-here.jsonl");
    let text = std::fs::read_to_string(&case).expect("the case is written");
    assert!(!text.contains("agent-stderr"));
    let (report, _) =
        replay::replay_files(std::slice::from_ref(&case), None, true, |_| Ok(())).expect("replay");
    assert!(
        report.differences.is_empty(),
        "{}",
        replay::render_report(&report)
    );
    let bad = Command::new(BIN)
        .args(["replay", "--emit-test"])
        .arg(dir.path())
        .args(["--name", "../escape"])
        .arg(source)
        .output()
        .expect("run");
    assert_eq!(
        bad.status.code(),
        Some(2),
        "a name that is a path is refused"
    );
}

/// Toad (PyPI `batrachian-toad` 0.6.20) needs Python >= 3.14, so its session is kept as a
/// replay case: its `initialize` as its source sends it (`toad/acp/agent.py`: fs, terminal,
/// `clientInfo` toad), Claude 0.23.1 with one subagent behind the proxy, `display = "auto"`.
/// Toad drops `subagent_update`, `session_message` and `session` content items (its cards
/// would stay pending for ever): a client that advertises nothing must get the folded view.
#[test]
fn toad_gets_the_folded_view_never_the_standard_stream() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/replay/toad-claude-legacy-one-subagent-auto.jsonl");
    let text = std::fs::read_to_string(&case).expect("the Toad case");
    let records: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let frames = |dir: &str| -> Vec<serde_json::Value> {
        records
            .iter()
            .filter(|r| r["dir"] == dir)
            .filter_map(|r| serde_json::from_str(r["frame"].as_str()?).ok())
            .collect()
    };
    let init = &frames("client→proxy")[0];
    assert_eq!(init["params"]["clientInfo"]["name"], "toad");
    assert!(init["params"]["clientCapabilities"]
        .get("subagents")
        .is_none());
    assert!(
        records.iter().any(|r| r["dir"] == "proxy-note"
            && r["note"]
                .as_str()
                .is_some_and(|n| n.contains("client `toad`: subagents shown as Transcript"))),
        "auto chose the folded view"
    );
    let to_client = frames("proxy→client");
    for f in &to_client {
        let t = f.to_string();
        assert!(
            !t.contains("subagent_update")
                && !t.contains("session_message")
                && !t.contains(r#""type":"session""#),
            "the standard stream reached Toad: {t}"
        );
    }
    let updates: Vec<&serde_json::Value> = to_client
        .iter()
        .filter_map(|f| f.pointer("/params/update"))
        .collect();
    // The child's step in the main thread, attributed, with its output.
    assert!(updates
        .iter()
        .any(|u| u["toolCallId"] == "toolu_0001/toolu_0002"
            && u["status"] == "completed"
            && u.to_string().contains("a.txt")));
    // The card's end: the answer once, without Claude's footer, then the step.
    let end = updates
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == "toolu_0001" && u["status"] == "completed")
        .expect("the card ended");
    let shown = end.to_string();
    assert_eq!(shown.matches("SUB-ANSWER alpha").count(), 1, "{shown}");
    assert!(!shown.contains("agentId:"), "{shown}");
    assert!(shown.contains("✓ Find"), "{shown}");
}
