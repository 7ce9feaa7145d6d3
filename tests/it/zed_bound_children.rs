//! An agent's own child ids bound to spawns (a preset's `child_ref`), over GitHub Copilot CLI
//! 1.0.102's real frames: its children's tool calls carry `_meta["github.com/copilot"].agentId`.
//! A background launch names that id in its result (`agent_id: <id>`), so the id is bound to
//! the spawn before the child's first event; a sync child's id is bound to the only open spawn
//! when it first appears (inferred, and marked so); with two spawns open, Copilot's session log
//! (`events.jsonl`, `subagent.started {toolCallId, agentId}`) ties each id to its spawn, and
//! the children's tool calls wait for it; without the log nothing binds it and they stay in
//! the parent. The main agent's `read_agent` result names the id too: it ends the background
//! child (a preset `end` rule with `child_id`), and stays the parent's own tool call.
//!
//! The agent frames: `tests/fixtures/e2e/copilot-1.0.102-{one,two,two-log,background}.dump.jsonl`
//! (runs of the e2e kit through this proxy), and the session log of the `two-log` run.

use acp_proxy::subagents::ids::child_session_id;
use acp_proxy::subagents::records::{self, Record};
use serde_json::Value;

use crate::support::engine::{
    assert_task_then_answer, dump_fixture, entry_lines, play, zed_config, Harness, StoreModel,
};

fn sent(h: &Harness) -> Vec<Value> {
    h.to_client
        .iter()
        .map(|l| serde_json::from_slice(l).expect("json"))
        .collect()
}

fn agent_words(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.starts_with("agent:"))
        .cloned()
        .collect()
}

#[test]
fn a_background_childs_events_go_to_its_card_and_read_agent_ends_it() {
    const PARENT: &str = "7d24e96a-d3f8-4e6d-97fc-8d1d4ab12d52";
    for scan_ahead in [false, true] {
        let store = StoreModel::default();
        let mut h = Harness::with_store(zed_config(), store.clone());
        h.scan_ahead = scan_ahead;
        play(
            &mut h,
            &dump_fixture("e2e/copilot-1.0.102-background.dump.jsonl"),
        );
        let parent = &h.zed.threads[PARENT];
        assert_eq!(parent.cards().len(), 1);
        // The parent keeps its own `read_agent` call, completed; the child's `glob` is not there.
        let calls: Vec<(String, String)> = parent
            .tool_calls()
            .map(|t| (t.id.clone(), t.status.clone()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_0001".to_owned(), "completed".to_owned()),
                ("call_0002".to_owned(), "completed".to_owned())
            ],
            "scan ahead {scan_ahead}"
        );
        assert_eq!(
            agent_words(&entry_lines(&parent.entries)),
            [
                "agent:I will delegate this.",
                "agent:MAIN-DONE: alpha reported back."
            ],
            "only the main agent's words in the parent"
        );
        let card = parent.card("call_0001").expect("card");
        assert_eq!(card.title, "Survey text files (alpha)");
        assert_eq!(card.status, "completed");
        let child = child_session_id(PARENT, "call_0001");
        h.load_child(&child);
        assert_eq!(
            entry_lines(&h.zed.threads[&child].entries),
            [
                "user:SUBAGENT:alpha list the text files in the project and report what you find",
                "agent:Subagent alpha looking around.",
                "tool:call_0003:completed",
                "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
            ]
        );
        // Bound by the launch result: the child's tool call is not marked as a guess.
        assert!(h.notes.iter().any(|n| n
            .contains("1c51c94e-c24e-4568-a306-b8f27823c0a9 is bound to it (its spawn names it)")));
        assert!(!sent(&h).iter().any(|v| {
            v.pointer("/params/update/toolCallId") == Some(&Value::from("call_0003"))
                && v.pointer("/params/update/_meta/acp-proxy/attribution")
                    .is_some()
        }));
        assert_eq!(
            store.child(&child).map(|c| c.state.as_str().to_owned()),
            Some("completed".to_owned()),
            "read_agent's result ended the child"
        );
        assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
    }
}

#[test]
fn a_lone_sync_childs_id_is_bound_by_inference_and_marked() {
    const PARENT: &str = "9c88ed81-6aee-4121-aed3-5333446ac09f";
    let mut h = Harness::with_store(zed_config(), StoreModel::default());
    play(&mut h, &dump_fixture("e2e/copilot-1.0.102-one.dump.jsonl"));
    let child = child_session_id(PARENT, "call_0001");
    assert!(h
        .notes
        .iter()
        .any(|n| n.contains("is bound to it as the only open spawn (inferred")));
    assert!(sent(&h).iter().any(|v| {
        v.pointer("/params/sessionId") == Some(&Value::from(child.as_str()))
            && v.pointer("/params/update/toolCallId") == Some(&Value::from("call_0002"))
            && v.pointer("/params/update/_meta/acp-proxy/attribution")
                == Some(&Value::from("inferred"))
    }));
}

/// Plays a dump; each record the engine asks for is answered, as the shell's follower
/// answers it, from `log` (Copilot's session log of the run; none: not found), once a frame
/// that `answer_after` picks was played (until then the asks stay unanswered).
fn play_with_log(
    h: &mut Harness,
    frames: &[(String, Value)],
    log: Option<&[u8]>,
    answer_after: impl Fn(&Value) -> bool,
) {
    let mut answered = 0;
    let mut due = false;
    for (dir, msg) in frames {
        match dir.as_str() {
            "out" => h.client(msg.clone()),
            _ => h.agent(msg.clone()),
        }
        due = due || answer_after(msg);
        while due && answered < h.records.len() {
            let watch = h.records[answered].clone();
            answered += 1;
            let record = log.map_or_else(Record::default, |l| records::parse(&watch, l));
            h.record_read(&watch.child, record);
        }
    }
}

fn copilot_log() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/e2e/copilot-1.0.102-two-log.events.jsonl");
    std::fs::read(&path).expect("the session log fixture")
}

/// A child's tool call, carrying Copilot's agentId.
fn is_child_call(msg: &Value) -> bool {
    msg.pointer("/params/update/_meta/github.com~1copilot/agentId")
        .is_some()
}

#[test]
fn copilots_session_log_ties_each_open_spawns_child_id() {
    const PARENT: &str = "c51ad475-44f7-47aa-a1d4-d5cfbc7eaa7f";
    let log = copilot_log();
    let frames = dump_fixture("e2e/copilot-1.0.102-two-log.dump.jsonl");
    // The log read before the children's first tool call, and read only once the first one
    // came (which then waits for it).
    let at_once = |_: &Value| true;
    for (late, answer_after) in [
        (false, &at_once as &dyn Fn(&Value) -> bool),
        (true, &is_child_call),
    ] {
        let mut h = Harness::with_store(zed_config(), StoreModel::default());
        play_with_log(&mut h, &frames, Some(&log), answer_after);
        assert_eq!(h.records.len(), 2, "one ask per spawn: {:?}", h.records);
        assert!(h.records.iter().all(|w| w.session.as_str() == PARENT));
        let parent = h.zed.threads[PARENT].clone();
        assert_eq!(parent.cards().len(), 2);
        let calls: Vec<String> = parent.tool_calls().map(|t| t.id.clone()).collect();
        assert_eq!(
            calls,
            ["call_0001", "call_0002"],
            "late {late}: only the spawns"
        );
        for (spawn, id) in [
            ("call_0001", "b563eda7-ce31-4dfa-b1bc-e14c3acc5ed5"),
            ("call_0002", "f41c67c8-c5b3-48b8-9465-92b3b7559357"),
        ] {
            let child = child_session_id(PARENT, spawn);
            assert!(
                h.notes.iter().any(|n| n.contains(&format!(
                    "{child}: the agent's own id {id} is bound to it (the agent's record names it)"
                ))),
                "{:?}",
                h.notes
            );
        }
        // Alpha's `glob` is call_0004, beta's call_0003: each in its own thread, before the
        // answer, not marked as a guess.
        for (spawn, call) in [("call_0001", "call_0004"), ("call_0002", "call_0003")] {
            let child = child_session_id(PARENT, spawn);
            h.load_child(&child);
            let lines = entry_lines(&h.zed.threads[&child].entries);
            let tag = if spawn == "call_0001" {
                "alpha"
            } else {
                "beta"
            };
            assert!(
                lines[0].starts_with(&format!("user:SUBAGENT:{tag} ")),
                "{lines:?}"
            );
            assert!(
                lines.contains(&format!("tool:{call}:completed")),
                "late {late}: {lines:?}"
            );
            // The answer its spawn's result holds. Alpha's words began in the parent while
            // both ran (they carry no id); once beta's spawn ended, the rest of that message
            // stays in the parent too, not given to alpha by timing as a tail.
            assert_eq!(
                lines.last().map(String::as_str),
                Some(format!("agent:SUB-ANSWER {tag}: the project holds a.txt, b.txt.").as_str()),
                "late {late}: {lines:?}"
            );
        }
        let words = agent_words(&entry_lines(&parent.entries));
        assert!(
            words
                .iter()
                .any(|w| w.contains("SUB-ANSWER alpha: the project holds a.txt, b.txt.")),
            "late {late}: alpha's message whole in the parent: {words:?}"
        );
        assert!(!sent(&h).iter().any(|v| {
            v.pointer("/params/update/_meta/acp-proxy/attribution")
                .is_some_and(|a| a == "inferred" || a == "timing")
        }));
        assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
    }
}

/// The main agent's last words, after both children ended.
fn is_main_done(msg: &Value) -> bool {
    msg.pointer("/params/update/content/text")
        .and_then(Value::as_str)
        .is_some_and(|t| t.starts_with("MAIN-DONE"))
}

#[test]
fn a_tie_read_after_the_children_ran_keeps_each_thread_in_order() {
    // As in the kit's runs: Copilot's log had the ties only once both children had finished
    // on the wire. Their tool calls, the words timing would have given a child meanwhile and
    // the spawns' answers wait; then each thread reads task, tool call, answer.
    const PARENT: &str = "c51ad475-44f7-47aa-a1d4-d5cfbc7eaa7f";
    let log = copilot_log();
    let frames = dump_fixture("e2e/copilot-1.0.102-two-log.dump.jsonl");
    let mut h = Harness::with_store(zed_config(), StoreModel::default());
    play_with_log(&mut h, &frames, Some(&log), is_main_done);
    for (spawn, tag, call) in [
        ("call_0001", "alpha", "call_0004"),
        ("call_0002", "beta", "call_0003"),
    ] {
        let child = child_session_id(PARENT, spawn);
        assert_eq!(
            thread_of(&mut h, &child),
            [
                format!("user:SUBAGENT:{tag} list the text files in the project and report what you find"),
                format!("tool:{call}:completed"),
                format!("agent:SUB-ANSWER {tag}: the project holds a.txt, b.txt."),
            ]
        );
    }
    let parent = &h.zed.threads[PARENT];
    let calls: Vec<&str> = parent.tool_calls().map(|t| t.id.as_str()).collect();
    assert_eq!(calls, ["call_0001", "call_0002"]);
    assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
}

fn thread_of(h: &mut Harness, child: &str) -> Vec<String> {
    h.load_child(child);
    entry_lines(&h.zed.threads[child].entries)
}

#[test]
fn without_the_session_log_two_open_spawns_leave_an_unseen_id_unbound() {
    // The ask answered, not found: the wire alone decides, as before the log was read.
    let frames = dump_fixture("e2e/copilot-1.0.102-two-log.dump.jsonl");
    let mut h = Harness::with_store(zed_config(), StoreModel::default());
    play_with_log(&mut h, &frames, None, is_child_call);
    let parent = &h.zed.threads["c51ad475-44f7-47aa-a1d4-d5cfbc7eaa7f"];
    assert!(parent.card("call_0003").is_some() && parent.card("call_0004").is_some());
    assert!(!h.notes.iter().any(|n| n.contains("is bound to it")));
    assert!(h
        .notes
        .iter()
        .any(|n| n.contains("the agent's record did not name its own id")));
    assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
}

#[test]
fn two_open_spawns_leave_an_unseen_id_unbound() {
    const PARENT: &str = "a2f9c948-ca2b-45ef-8a30-564262d8fca0";
    let mut h = Harness::with_store(zed_config(), StoreModel::default());
    // No session log of this run: each ask is answered as not found.
    play_with_log(
        &mut h,
        &dump_fixture("e2e/copilot-1.0.102-two.dump.jsonl"),
        None,
        |_| true,
    );
    let parent = h.zed.threads[PARENT].clone();
    assert_eq!(parent.cards().len(), 2);
    // Neither child's `glob` can be told apart on the wire: both stay in the parent.
    assert!(parent.card("call_0003").is_some() && parent.card("call_0004").is_some());
    assert!(!h.notes.iter().any(|n| n.contains("is bound to it")));
    for spawn in ["call_0001", "call_0002"] {
        h.load_child(&child_session_id(PARENT, spawn));
        let lines = entry_lines(&h.zed.threads[&child_session_id(PARENT, spawn)].entries);
        assert_task_then_answer(&lines);
    }
}

/// Recorded when beta's `glob` began while both spawns were open and its result came after
/// alpha's spawn had ended: the id stays unbound, so the update follows its tool call into the
/// parent instead of going to beta's thread, where Zed would know no such call.
#[test]
fn an_id_first_seen_with_two_spawns_open_stays_in_the_parent_after_one_ends() {
    const PARENT: &str = "72860d70-1a10-4cd4-9abd-72f2cef098ed";
    for scan_ahead in [false, true] {
        let mut h = Harness::with_store(zed_config(), StoreModel::default());
        h.scan_ahead = scan_ahead;
        play_with_log(
            &mut h,
            &dump_fixture("e2e/copilot-1.0.102-two-late.dump.jsonl"),
            None,
            |_| true,
        );
        let parent = &h.zed.threads[PARENT];
        assert_eq!(parent.cards().len(), 2);
        let late = parent
            .tool_calls()
            .find(|t| t.id == "call_0004")
            .expect("beta's glob in the parent");
        assert_eq!(late.status, "completed", "its result reached it");
        assert!(
            !h.notes.iter().any(|n| n.contains("is bound to it")),
            "{:?}",
            h.notes
        );
        let beta = child_session_id(PARENT, "call_0002");
        h.load_child(&beta);
        let lines = entry_lines(&h.zed.threads[&beta].entries);
        assert!(
            !lines.iter().any(|l| l.starts_with("tool:call_0004")),
            "{lines:?}"
        );
    }
}

#[test]
fn a_reopened_parents_replayed_child_calls_go_to_the_child() {
    // The e2e kit's `one` run as Zed main: live, then the parent reopened by a new proxy
    // (Copilot replays the spawn, the child's tool call and the spawn's end on the parent).
    const PARENT: &str = "0778024b-fa79-4594-b7e0-80a231ea6056";
    let child = child_session_id(PARENT, "call_0001");
    let thread = [
        "user:SUBAGENT:alpha list the text files in the project and report what you find",
        "agent:Subagent alpha looking around.",
        "tool:call_0002:completed",
        "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
    ];
    let store = StoreModel::default();
    let mut live = Harness::with_store(zed_config(), store.clone());
    play(
        &mut live,
        &dump_fixture("e2e/copilot-1.0.102-one-live.dump.jsonl"),
    );
    assert_eq!(entry_lines(&live.zed.threads[&child].entries), thread);
    // With the store (the child restored, its thread known) and without it (the replay
    // makes the child again): either way the replayed `glob` is the child's, not the parent's.
    for (with_store, store) in [(true, store), (false, StoreModel::default())] {
        let mut h = Harness::with_store(zed_config(), store);
        play(
            &mut h,
            &dump_fixture("e2e/copilot-1.0.102-one-reopen.dump.jsonl"),
        );
        let parent = &h.zed.threads[PARENT];
        assert_eq!(parent.cards().len(), 1, "store {with_store}");
        assert!(
            parent.card("call_0002").is_none(),
            "store {with_store}: the child's call is not in the parent"
        );
        assert!(
            h.notes
                .iter()
                .any(|n| n.contains("is bound to it as the only open spawn")),
            "store {with_store}: {:?}",
            h.notes
        );
        let lines = entry_lines(&h.zed.threads[&child].entries);
        if with_store {
            assert_eq!(lines, thread, "the stored thread, not doubled");
        } else {
            assert!(
                lines.contains(&"tool:call_0002:completed".to_owned()),
                "{lines:?}"
            );
        }
        assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
    }
}
