//! Kilo Code CLI 7.7.7 behind the proxy, as Zed shows it. Its foreground `task` is OpenCode's
//! wire (the `kilo` preset fetches the child's replay when the task completes); a background
//! task (`background: true`) completes at once with a launch notice and nothing later names
//! the child or the spawn. The preset's `follow_background` fetches the child at its launch:
//! Kilo then streams the running child's work on the child's session, which goes into its
//! thread. When the child is done, Kilo answers the notice it injects into the parent in a
//! turn of its own there (no prompt pending): the preset's `end_on_agent_turn` takes that turn
//! as the end of the one background child open (inferred).
//!
//! The agent frames are the real agent's: `tests/fixtures/e2e/kilo-7.7.7-{one,background,
//! background-followed,background-ended}.dump.jsonl` (runs of the e2e kit through this proxy;
//! the first two with the child loaded as Zed loads it, the others with the proxy's fetch at
//! the launch, the last up to Kilo's own turn after the child).

use acp_proxy::subagents::ids::child_session_id;

use crate::support::engine::{dump_fixture, entry_lines, play, zed_config, Harness, StoreModel};

const TASK: &str =
    "user:SUBAGENT:alpha list the text files in the project and report what you find";

fn run(dump: &str, scan_ahead: bool) -> (Harness, StoreModel) {
    let store = StoreModel::default();
    let mut h = Harness::with_store(zed_config(), store.clone());
    h.scan_ahead = scan_ahead;
    play(&mut h, &dump_fixture(dump));
    (h, store)
}

#[test]
fn a_foreground_task_shows_the_childs_replayed_work() {
    const PARENT: &str = "ses_dcc43b9ebffetTdq1RbCMy3YRg";
    for scan_ahead in [false, true] {
        let (h, _) = run("e2e/kilo-7.7.7-one.dump.jsonl", scan_ahead);
        let parent = &h.zed.threads[PARENT];
        assert_eq!(parent.cards().len(), 1);
        let card = parent.card("call_0001").expect("card");
        assert_eq!(card.title, "Survey text files (alpha)");
        assert_eq!(card.status, "completed");
        let child = child_session_id(PARENT, "call_0001");
        let lines = entry_lines(&h.zed.threads[&child].entries);
        assert_eq!(lines.first().map(String::as_str), Some(TASK));
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("tool:") && l.ends_with(":completed")),
            "the child's glob, from Kilo's replay: {lines:?}"
        );
        assert_eq!(
            lines.last().map(String::as_str),
            Some("agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.")
        );
        let info = card.subagent.as_ref().expect("info");
        assert_eq!(info.end, Some(lines.len() as u64 - 1));
        h.assert_zed_clean();
    }
}

#[test]
fn a_background_task_runs_until_kilos_own_turn() {
    const PARENT: &str = "ses_dcc421a50ffex67EBcZhmWM4gv";
    for scan_ahead in [false, true] {
        let frames = dump_fixture("e2e/kilo-7.7.7-background.dump.jsonl");
        // Up to the parent's turn's end; Kilo's own turn follows.
        let end = frames
            .iter()
            .position(|(_, m)| m["result"]["stopReason"] == "end_turn")
            .expect("end_turn");
        let store = StoreModel::default();
        let mut h = Harness::with_store(zed_config(), store.clone());
        h.scan_ahead = scan_ahead;
        play(&mut h, &frames[..=end]);
        // This run was recorded before the preset fetched a background child at its launch:
        // the agent never answers that fetch here, so the client's load of the child waits
        // for it until it times out, then gets what the spawn said.
        h.advance(31_000);
        assert!(h.notes.iter().any(|n| n.contains("did not replay session")));
        let card = h.zed.threads[PARENT].card("call_0001").expect("card");
        assert_eq!(card.title, "Survey text files (alpha)");
        assert_eq!(card.status, "in_progress", "the launch is not the end");
        let info = card.subagent.as_ref().expect("info");
        assert_eq!(info.end, None);
        let child = child_session_id(PARENT, "call_0001");
        assert_eq!(entry_lines(&h.zed.threads[&child].entries), [TASK]);
        assert_eq!(
            store.child(&child).map(|c| c.state.as_str().to_owned()),
            Some("running".to_owned())
        );
        // Kilo's own follow-up turn, after the child ended: it stays in the parent, and ends
        // the one background child open (inferred).
        play(&mut h, &frames[end + 1..]);
        let parent = &h.zed.threads[PARENT];
        assert!(
            entry_lines(&parent.entries)
                .iter()
                .any(|l| l.starts_with("agent:") && l.contains("MAIN-DONE")),
            "{:?}",
            entry_lines(&parent.entries)
        );
        let card = parent.card("call_0001").expect("card");
        assert_eq!(card.status, "completed");
        assert_eq!(card.title, "Survey text files (alpha)");
        assert_eq!(
            store.child(&child).map(|c| c.state.as_str().to_owned()),
            Some("completed".to_owned())
        );
        h.assert_zed_clean();
    }
}

#[test]
fn a_background_child_fetched_at_its_launch_is_followed_live() {
    const PARENT: &str = "ses_dcbadabb9ffeNxVyIcPs3DkVF5";
    for scan_ahead in [false, true] {
        let (mut h, store) = run("e2e/kilo-7.7.7-background-followed.dump.jsonl", scan_ahead);
        // The proxy's own load of the running child, at the launch.
        let fetched = h.to_agent.iter().any(|v| {
            v["method"] == "session/load"
                && v["params"]["sessionId"] == "ses_dcbada3e0ffefvwXNo1Np09VC2"
        });
        assert!(fetched, "scan ahead {scan_ahead}");
        let parent = h.zed.threads[PARENT].clone();
        let card = parent.card("call_0001").expect("card");
        assert_eq!(card.status, "in_progress", "nothing live ends it");
        assert!(
            card.title.starts_with("Survey text files (alpha)"),
            "{}",
            card.title
        );
        // The child's live work is not in the parent.
        assert_eq!(parent.tool_calls().count(), 1);
        assert!(!entry_lines(&parent.entries)
            .iter()
            .any(|l| l.contains("SUB-ANSWER")));
        let child = child_session_id(PARENT, "call_0001");
        h.load_child(&child);
        assert_eq!(
            entry_lines(&h.zed.threads[&child].entries),
            [
                TASK,
                "agent:Subagent alpha looking around.",
                "tool:call_0002:completed",
                "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
            ]
        );
        assert_eq!(
            store.child(&child).map(|c| c.state.as_str().to_owned()),
            Some("running".to_owned())
        );
    }
}

/// Kilo's own follow-up turn (`MAIN-DONE …`), which it starts on the parent once the child is
/// done and no prompt asked for: the real frames of the `background` run, on this run's parent.
fn follow_up_turn(parent: &str) -> Vec<(String, serde_json::Value)> {
    let mut frames: Vec<_> = dump_fixture("e2e/kilo-7.7.7-background.dump.jsonl")
        .into_iter()
        .skip_while(|(_, m)| m["result"]["stopReason"] != "end_turn")
        .skip(1)
        .collect();
    assert!(!frames.is_empty());
    for (_, m) in &mut frames {
        m["params"]["sessionId"] = parent.into();
    }
    frames
}

#[test]
fn kilos_own_turn_after_the_child_went_quiet_ends_the_followed_child() {
    // A whole followed run: the launch, the parent's `end_turn`, the child's live work on its
    // own session, then Kilo's own turn on the parent (`MAIN-DONE …`, no prompt pending).
    const PARENT: &str = "ses_dca5431aafferNPuyUwVjg9VD8";
    let frames = dump_fixture("e2e/kilo-7.7.7-background-ended.dump.jsonl");
    let own_turn = frames
        .iter()
        .position(|(_, m)| m["params"]["update"]["content"]["text"] == "MAIN-DONE: ")
        .expect("Kilo's own turn");
    for scan_ahead in [false, true] {
        let store = StoreModel::default();
        let mut h = Harness::with_store(zed_config(), store.clone());
        h.scan_ahead = scan_ahead;
        let child = child_session_id(PARENT, "call_0001");
        play(&mut h, &frames[..own_turn]);
        let card = h.zed.threads[PARENT].card("call_0001").expect("card");
        assert_eq!(
            card.status, "in_progress",
            "the parent's words while its prompt was pending (MAIN-WAITING) and the child's \
             quiet end nothing"
        );
        assert!(card.title.contains("glob"), "live progress: {}", card.title);
        play(&mut h, &frames[own_turn..]);
        let parent = h.zed.threads[PARENT].clone();
        let card = parent.card("call_0001").expect("card");
        assert_eq!(card.status, "completed", "scan ahead {scan_ahead}");
        assert_eq!(
            card.title, "Survey text files (alpha)",
            "the task's title again"
        );
        assert!(
            h.notes.iter().any(|n| n.contains(&format!(
                "subagent {child}: the agent started a turn of its own"
            )) && n.contains("inferred")),
            "{:?}",
            h.notes
        );
        // The follow-up stays the parent's, after the card's end.
        let words = entry_lines(&parent.entries);
        assert!(
            words
                .last()
                .is_some_and(|l| l.ends_with("MAIN-DONE: alpha reported back.")),
            "{words:?}"
        );
        let lines = entry_lines(&h.zed.threads[&child].entries);
        assert_eq!(
            lines,
            [
                TASK,
                "agent:Subagent alpha looking around.",
                "tool:call_0002:completed",
                "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
            ]
        );
        let info = card.subagent.as_ref().expect("info");
        assert_eq!(info.end, Some(lines.len() as u64 - 1), "the card's range");
        assert_eq!(
            store.child(&child).map(|c| c.state.as_str().to_owned()),
            Some("completed".to_owned())
        );
        h.assert_zed_clean();
    }
}

#[test]
fn two_background_children_open_are_not_ended_by_the_agents_turn() {
    // The followed run with a second launch beside the first: nothing says which one Kilo's
    // own turn answers, so both stay open.
    const PARENT: &str = "ses_dcbadabb9ffeNxVyIcPs3DkVF5";
    let mut frames = dump_fixture("e2e/kilo-7.7.7-background-followed.dump.jsonl");
    let launch: Vec<_> = frames
        .iter()
        .filter(|(dir, m)| dir == "in" && m["params"]["update"]["toolCallId"] == "call_0001")
        .map(|(dir, m)| {
            let text = serde_json::to_string(m)
                .expect("json")
                .replace("call_0001", "call_0009")
                .replace("(alpha)", "(beta)");
            (dir.clone(), serde_json::from_str(&text).expect("json"))
        })
        .collect();
    let at = frames
        .iter()
        .position(|(_, m)| m["params"]["update"]["content"]["text"] == "MAIN-WAITING: ")
        .expect("the parent's words");
    frames.splice(at..at, launch);
    let mut h = Harness::with_store(zed_config(), StoreModel::default());
    play(&mut h, &frames);
    play(&mut h, &follow_up_turn(PARENT));
    let parent = &h.zed.threads[PARENT];
    for spawn in ["call_0001", "call_0009"] {
        assert_eq!(
            parent.card(spawn).map(|c| c.status.as_str()),
            Some("in_progress"),
            "{spawn}"
        );
    }
    assert!(!h.notes.iter().any(|n| n.contains("turn of its own")));
}
