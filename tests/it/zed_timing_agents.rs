//! GitHub Copilot CLI 1.0.102 and Cline 3.0.65 behind the proxy, as Zed shows them. Both send
//! a running child's words and tool calls on the parent session with nothing that names the
//! spawn (Copilot's tool calls carry an `agentId` of its own that the wire binds to nothing;
//! Cline's carry nothing). Their presets opt into timing attribution: while the spawn is the
//! only one open (a sync child blocks the parent's turn), those events are the child's, marked
//! as inferred (`_meta["acp-proxy"].attribution = "timing"`).
//!
//! The agent frames are the real agents': `tests/fixtures/e2e/{copilot-1.0.102,cline-3.0.65}-one
//! .dump.jsonl` (runs of the e2e kits through this proxy, the child loaded as Zed loads it).

use acp_proxy::subagents::ids::child_session_id;
use serde_json::Value;

use crate::support::engine::{dump_fixture, entry_lines, play, zed_config, Harness, StoreModel};

struct Run {
    dump: &'static str,
    parent: &'static str,
    spawn: &'static str,
    title: &'static str,
    tool_name: &'static str,
    /// The child thread, in Zed.
    thread: &'static [&'static str],
}

const COPILOT: Run = Run {
    dump: "e2e/copilot-1.0.102-one.dump.jsonl",
    parent: "9c88ed81-6aee-4121-aed3-5333446ac09f",
    spawn: "call_0001",
    title: "Survey text files (alpha)",
    tool_name: "task",
    thread: &[
        "user:SUBAGENT:alpha list the text files in the project and report what you find",
        "agent:Subagent alpha looking around.",
        "tool:call_0002:completed",
        "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
    ],
};

const CLINE: Run = Run {
    dump: "e2e/cline-3.0.65-one.dump.jsonl",
    parent: "1796164138491_s3y5r_cli",
    spawn: "call_0001",
    title: "SUBAGENT:alpha list the text files in the project and repor…",
    tool_name: "spawn_agent",
    thread: &[
        "user:SUBAGENT:alpha list the text files in the project and report what you find",
        "agent:Subagent alpha looking around.",
        "tool:call_0002:completed",
        "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
    ],
};

#[test]
fn a_lone_childs_events_go_to_its_card_by_timing() {
    for run in [COPILOT, CLINE] {
        for scan_ahead in [false, true] {
            let name = format!("{} (scan ahead: {scan_ahead})", run.dump);
            let store = StoreModel::default();
            let mut h = Harness::with_store(zed_config(), store.clone());
            h.scan_ahead = scan_ahead;
            play(&mut h, &dump_fixture(run.dump));
            let parent = &h.zed.threads[run.parent];
            assert_eq!(parent.cards().len(), 1, "{name}: one card");
            assert!(
                parent.tool_calls().all(|t| t.is_subagent()),
                "{name}: no child tool call in the parent"
            );
            assert_eq!(
                entry_lines(&parent.entries)
                    .iter()
                    .filter(|l| l.starts_with("agent:"))
                    .cloned()
                    .collect::<Vec<_>>(),
                [
                    "agent:I will delegate this.",
                    "agent:MAIN-DONE: alpha reported back."
                ],
                "{name}: only the main agent's words in the parent"
            );
            let card = parent.card(run.spawn).expect("card");
            assert_eq!(card.title, run.title, "{name}");
            assert_eq!(card.status, "completed", "{name}");
            let child = child_session_id(run.parent, run.spawn);
            let info = card.subagent.as_ref().expect("subagent info");
            assert_eq!(info.session_id, child, "{name}");
            assert_eq!(
                (info.start, info.end),
                (0, Some(run.thread.len() as u64 - 1)),
                "{name}: the card's range"
            );
            assert_eq!(
                entry_lines(&h.zed.threads[&child].entries),
                run.thread,
                "{name}: the child thread"
            );
            // The card names its tool, and what went to the child by timing says so.
            let sent: Vec<Value> = h
                .to_client
                .iter()
                .map(|l| serde_json::from_slice(l).expect("json"))
                .collect();
            assert!(
                sent.iter().any(|v| v.pointer("/params/update/toolCallId")
                    == Some(&Value::from(run.spawn))
                    && v.pointer("/params/update/_meta/tool_name")
                        == Some(&Value::from(run.tool_name))),
                "{name}: tool_name"
            );
            assert!(
                sent.iter().any(|v| v.pointer("/params/sessionId")
                    == Some(&Value::from(child.as_str()))
                    && v.pointer("/params/update/_meta/acp-proxy/attribution")
                        == Some(&Value::from("timing"))),
                "{name}: the child's events are marked as attributed by timing"
            );
            assert!(
                h.notes
                    .iter()
                    .any(|n| n.contains("attributed to it by timing")),
                "{name}: {:?}",
                h.notes
            );
            assert_eq!(
                store.child(&child).map(|c| c.state.as_str().to_owned()),
                Some("completed".to_owned()),
                "{name}"
            );
            // Copilot sends `available_commands_update` before its `session/new` answer: Zed
            // drops that one, as sent; nothing else is dropped or refused.
            assert!(
                h.zed
                    .dropped
                    .iter()
                    .all(|(_, kind)| kind == "available_commands_update"),
                "{name}: dropped {:?}",
                h.zed.dropped
            );
            assert!(h.zed.rejected.is_empty(), "{name}: {:?}", h.zed.rejected);
        }
    }
}

/// Cline's two children, with alpha's spawn ending in the middle of beta's answer (the order
/// of the kit's runs where it showed): beta's answer began in the parent while both ran, so
/// its rest stays there too instead of going to beta by timing as a tail; beta's thread
/// ends with the answer its spawn's result holds. The frames are the real run's
/// (`cline-3.0.65-two.dump.jsonl`), alpha's completion moved after `SUB-ANSWER beta: `.
#[test]
fn a_message_begun_in_the_parent_ends_there_when_the_other_child_ends() {
    const PARENT: &str = "1796176443947_Luv91_cli";
    let mut frames = dump_fixture("e2e/cline-3.0.65-two.dump.jsonl");
    let text = |m: &Value| {
        m.pointer("/params/update/content/text")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let done = frames
        .iter()
        .position(|(dir, m)| {
            dir == "in"
                && m.pointer("/params/update/toolCallId") == Some(&Value::from("call_0001"))
                && m.pointer("/params/update/status") == Some(&Value::from("completed"))
        })
        .expect("alpha's completion");
    let alpha_done = frames.remove(done);
    let beta_begun = frames
        .iter()
        .position(|(_, m)| text(m).as_deref() == Some("beta: "))
        .expect("beta's answer");
    frames.insert(beta_begun + 1, alpha_done);
    for scan_ahead in [false, true] {
        let mut h = Harness::with_store(zed_config(), StoreModel::default());
        h.scan_ahead = scan_ahead;
        play(&mut h, &frames);
        // Cline's record of each child is not found: the wire decides.
        for watch in h.records.clone() {
            h.record_read(
                &watch.child,
                acp_proxy::subagents::records::Record::default(),
            );
        }
        for (spawn, tag) in [("call_0001", "alpha"), ("call_0002", "beta")] {
            let child = child_session_id(PARENT, spawn);
            h.load_child(&child);
            let lines = entry_lines(&h.zed.threads[&child].entries);
            assert_eq!(
                lines.last().map(String::as_str),
                Some(format!("agent:SUB-ANSWER {tag}: the project holds a.txt, b.txt.").as_str()),
                "scan ahead {scan_ahead}: {lines:?}"
            );
        }
        let sent: Vec<Value> = h
            .to_client
            .iter()
            .map(|l| serde_json::from_slice(l).expect("json"))
            .collect();
        assert!(
            !sent.iter().any(|v| text(v).as_deref() == Some("the ")
                && v.pointer("/params/update/_meta/acp-proxy/attribution")
                    .is_some()),
            "scan ahead {scan_ahead}: no part of beta's answer is attributed by timing"
        );
        assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
    }
}
