//! Kilo Code CLI 7.7.7 behind the proxy, as Zed shows it. Its foreground `task` is OpenCode's
//! wire (the `kilo` preset fetches the child's replay when the task completes); a background
//! task (`background: true`) completes at once with a launch notice and nothing later names
//! the child or the spawn, so its card stays running. The preset's `follow_background` fetches
//! the child at its launch: Kilo then streams the running child's work on the child's session,
//! which goes into its thread.
//!
//! The agent frames are the real agent's: `tests/fixtures/e2e/kilo-7.7.7-{one,background,
//! background-followed}.dump.jsonl` (runs of the e2e kit through this proxy; the first two
//! with the child loaded as Zed loads it, the last with the proxy's fetch at the launch).

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
fn a_background_task_keeps_its_card_running() {
    const PARENT: &str = "ses_dcc421a50ffex67EBcZhmWM4gv";
    for scan_ahead in [false, true] {
        let (mut h, store) = run("e2e/kilo-7.7.7-background.dump.jsonl", scan_ahead);
        // This run was recorded before the preset fetched a background child at its launch:
        // the agent never answers that fetch here, so the client's load of the child waits
        // for it until it times out, then gets what the spawn said.
        h.advance(31_000);
        assert!(h.notes.iter().any(|n| n.contains("did not replay session")));
        let parent = &h.zed.threads[PARENT];
        let card = parent.card("call_0001").expect("card");
        assert_eq!(card.title, "Survey text files (alpha)");
        assert_eq!(card.status, "in_progress", "the launch is not the end");
        let info = card.subagent.as_ref().expect("info");
        assert_eq!(info.end, None);
        let child = child_session_id(PARENT, "call_0001");
        assert_eq!(entry_lines(&h.zed.threads[&child].entries), [TASK]);
        // Kilo's own follow-up turn, after the child ended, stays in the parent.
        assert!(
            entry_lines(&parent.entries)
                .iter()
                .any(|l| l.starts_with("agent:") && l.contains("MAIN-DONE")),
            "{:?}",
            entry_lines(&parent.entries)
        );
        assert_eq!(
            store.child(&child).map(|c| c.state.as_str().to_owned()),
            Some("running".to_owned())
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
