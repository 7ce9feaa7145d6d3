//! Factory Droid 0.225.2 behind the proxy, as Zed shows it. Droid sends nothing of a child
//! while it runs; the completed `Task` names the child's own session (`session_id: <uuid>`),
//! which Droid replays on `session/load`, as OpenCode does. Unlike OpenCode, a load of the
//! child while the parent's turn runs makes Droid finish that turn with the child's
//! conversation, so the `droid` preset says `child_replay = "session_load_after_turn"`: the
//! proxy asks only once the client's `session/prompt` is answered.
//!
//! The agent frames are the real agent's: `tests/fixtures/e2e/droid-0.225.2-one.dump.jsonl`
//! (a run of the e2e kit through this proxy, which asked for the replay itself).

use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{dump_fixture, entry_lines, play, zed_config, Harness, StoreModel};

const DUMP: &str = "e2e/droid-0.225.2-one.dump.jsonl";
const PARENT: &str = "6e901afb-c907-4649-ad6a-63e634e20644";
const AGENT_CHILD: &str = "77aa0b85-b0c2-441a-bdca-16180f11a5c8";
/// The child thread: the task, then Droid's replay of the child: its own framing of the task
/// (a user message, so Zed joins it to the task's entry), the child's words, its `LS` call,
/// its answer. Each entry's text up to Droid's framing.
const THREAD: &[&str] = &[
    "user:SUBAGENT:alpha list the text files in the project and report what you find",
    "agent:Subagent alpha looking around.",
    "tool:call_0002:completed",
    "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
];

/// The proxy's replay requests the agent got: (request id, agent session).
fn fetches(h: &Harness) -> Vec<(String, String)> {
    h.to_agent
        .iter()
        .filter(|m| m["method"] == "session/load")
        .filter_map(|m| {
            let id = m["id"].as_str()?;
            id.starts_with("acp-proxy-replay-").then(|| {
                (
                    id.to_owned(),
                    m["params"]["sessionId"].as_str().unwrap_or("").to_owned(),
                )
            })
        })
        .collect()
}

type Records = Vec<(String, Value)>;

/// The dump up to the agent's answer to the client's prompt (excluded), and the rest.
fn split_at_turn_end() -> (Records, Records) {
    let records = dump_fixture(DUMP);
    let at = records
        .iter()
        .position(|(d, m)| d == "in" && m["id"] == json!(3) && m.get("result").is_some())
        .expect("the prompt's answer");
    let (a, b) = records.split_at(at);
    (a.to_vec(), b.to_vec())
}

#[test]
fn the_childs_replay_is_asked_for_only_after_the_parents_turn() {
    for scan_ahead in [false, true] {
        let (turn, after) = split_at_turn_end();
        let store = StoreModel::default();
        let mut h = Harness::with_store(zed_config(), store.clone());
        h.scan_ahead = scan_ahead;
        play(&mut h, &turn);
        let card = h.zed.threads[PARENT].card("call_0001").cloned();
        let card = card.expect("the Task's card");
        assert_eq!(card.title, "Survey text files (alpha)");
        assert!(
            fetches(&h).is_empty(),
            "no load of the child while the turn runs: {:?}",
            fetches(&h)
        );
        play(&mut h, &after);
        assert_eq!(
            fetches(&h),
            [("acp-proxy-replay-1".to_owned(), AGENT_CHILD.to_owned())],
            "asked once, when the turn was over"
        );
        let parent = &h.zed.threads[PARENT];
        assert_eq!(parent.cards().len(), 1);
        assert!(parent.tool_calls().all(|t| t.is_subagent()));
        let card = parent.card("call_0001").expect("card");
        assert_eq!(card.status, "completed");
        let info = card.subagent.as_ref().expect("subagent info");
        let child = child_session_id(PARENT, "call_0001");
        assert_eq!(info.session_id, child);
        assert_eq!((info.start, info.end), (0, Some(THREAD.len() as u64 - 1)));
        // The dump's client loaded the child after the turn, as Zed does.
        let entries = entry_lines(&h.zed.threads[&child].entries);
        assert!(
            entries[0].contains("---BEGIN TASK FROM PARENT AGENT---"),
            "Droid's framing of the task follows it: {entries:?}"
        );
        let lines: Vec<String> = entries
            .into_iter()
            .map(|l| {
                l.split("# Task Tool Invocation")
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect();
        assert_eq!(lines, THREAD, "scan ahead: {scan_ahead}");
        assert_eq!(
            store.child(&child).map(|c| c.state.as_str().to_owned()),
            Some("completed".to_owned())
        );
        for line in &h.to_client {
            let v: Value = serde_json::from_slice(line).expect("json");
            assert_ne!(
                v.pointer("/params/sessionId").and_then(Value::as_str),
                Some(AGENT_CHILD),
                "the client never sees the agent's child session: {v}"
            );
        }
        h.assert_zed_clean();
    }
}
