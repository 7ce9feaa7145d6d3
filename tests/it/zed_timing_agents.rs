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
