//! OpenCode 1.18.33 behind the proxy, as Zed shows it. OpenCode sends nothing of a child while
//! it runs; the completed spawn names the child's own session (`ses_…`), which OpenCode
//! replays on `session/load`. The proxy fetches that replay with a request of its own and
//! serves it as the child thread, under its own child id.
//!
//! Every agent frame here is the real agent's: the captures
//! `tests/fixtures/agents/opencode-1.18.33-{one-subagent,child-load}.jsonl` (the child-load
//! capture is the replay of the one-subagent run's child), and the `agent→proxy` records of
//! proxy dumps in `tests/fixtures/e2e/opencode-1.18.33-*` (runs of this proxy, which asked for
//! the replays itself).

use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{
    dump_fixture, entry_lines, fixture, play, zed_config, Harness, StoreModel,
};

/// The proxy's replay requests the agent got: (request id, agent session, cwd).
fn fetches(h: &Harness) -> Vec<(String, String, String)> {
    h.to_agent
        .iter()
        .filter(|m| m["method"] == "session/load")
        .filter_map(|m| {
            let id = m["id"].as_str()?;
            id.starts_with("acp-proxy-replay-").then(|| {
                (
                    id.to_owned(),
                    m["params"]["sessionId"].as_str().unwrap_or("").to_owned(),
                    m["params"]["cwd"].as_str().unwrap_or("").to_owned(),
                )
            })
        })
        .collect()
}

/// Nothing the client got names an agent session it does not know, and Zed dropped or
/// refused nothing.
fn client_saw_no_agent_child(h: &Harness, agent_children: &[&str]) {
    for line in &h.to_client {
        let v: Value = serde_json::from_slice(line).expect("json");
        let sid = v.pointer("/params/sessionId").and_then(Value::as_str);
        assert!(
            sid.is_none_or(|s| !agent_children.contains(&s)),
            "the client got a frame of the agent's child session: {v}"
        );
        assert!(
            v.get("id").is_none_or(|id| !id
                .as_str()
                .is_some_and(|i| i.starts_with("acp-proxy-replay-"))),
            "the client got the answer to the proxy's own request: {v}"
        );
    }
    assert!(h.zed.dropped.is_empty(), "dropped: {:?}", h.zed.dropped);
    assert!(h.zed.rejected.is_empty(), "rejected: {:?}", h.zed.rejected);
}

struct LiveRun {
    dump: &'static str,
    parent: &'static str,
    /// (spawn id, card title, the agent's child session, the child thread in Zed).
    cards: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
    )],
}

const ALPHA: &[&str] = &[
    "user:SUBAGENT:alpha list the text files in the project and report what you find",
    "agent:Subagent alpha looking around.",
    "tool:call_0002:completed",
    "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
];

#[test]
fn real_runs_show_each_childs_replayed_work_in_its_card() {
    let runs = [
        LiveRun {
            dump: "e2e/opencode-1.18.33-one-replay.dump.jsonl",
            parent: "ses_dce8b4edaffeb7nKttNmmQ6bjQ",
            cards: &[(
                "call_0001",
                "Survey text files (alpha)",
                "ses_dce8b4c74ffeb8yqK23gZMQ83G",
                ALPHA,
            )],
        },
        LiveRun {
            dump: "e2e/opencode-1.18.33-two-replay.dump.jsonl",
            parent: "ses_dce899fa0ffekPlQnSDLLvl0tE",
            cards: &[
                (
                    "call_0001",
                    "Survey text files (alpha)",
                    "ses_dce899de8ffeAgqHHn4gJ9kymx",
                    &[
                        "user:SUBAGENT:alpha list the text files in the project and report what you find",
                        "agent:Subagent alpha looking around.",
                        "tool:call_0003:completed",
                        "agent:SUB-ANSWER alpha: the project holds a.txt, b.txt.",
                    ],
                ),
                (
                    "call_0002",
                    "Survey text files (beta)",
                    "ses_dce899db5ffeNAmyVI7Y7sXUtr",
                    &[
                        "user:SUBAGENT:beta list the text files in the project and report what you find",
                        "agent:Subagent beta looking around.",
                        "tool:call_0004:completed",
                        "agent:SUB-ANSWER beta: the project holds a.txt, b.txt.",
                    ],
                ),
            ],
        },
    ];
    for run in runs {
        for scan_ahead in [false, true] {
            let name = format!("{} (scan ahead: {scan_ahead})", run.dump);
            let store = StoreModel::default();
            let mut h = Harness::with_store(zed_config(), store.clone());
            h.scan_ahead = scan_ahead;
            play(&mut h, &dump_fixture(run.dump));
            let parent = &h.zed.threads[run.parent];
            assert_eq!(parent.cards().len(), run.cards.len(), "{name}: cards");
            assert!(
                parent.tool_calls().all(|t| t.is_subagent()),
                "{name}: only cards in the parent"
            );
            let agent_children: Vec<&str> = run.cards.iter().map(|c| c.2).collect();
            client_saw_no_agent_child(&h, &agent_children);
            // Asked in the order the children finished.
            let mut asked: Vec<(String, String)> = fetches(&h)
                .into_iter()
                .map(|(_, agent, cwd)| (agent, cwd))
                .collect();
            asked.sort();
            let mut wanted: Vec<(String, String)> = agent_children
                .iter()
                .map(|a| ((*a).to_owned(), "/home/user/project".to_owned()))
                .collect();
            wanted.sort();
            assert_eq!(
                asked, wanted,
                "{name}: one replay asked per child, in the session's cwd"
            );
            for (spawn, title, _, thread) in run.cards {
                let card = parent.card(spawn).expect("card");
                let child = child_session_id(run.parent, spawn);
                assert_eq!(card.title, *title, "{name} {spawn}");
                assert_eq!(card.status, "completed", "{name} {spawn}");
                let info = card.subagent.as_ref().expect("subagent info");
                assert_eq!(info.session_id, child);
                assert_eq!(
                    (info.start, info.end),
                    (0, Some(thread.len() as u64 - 1)),
                    "{name} {spawn}: the card's range is the replayed thread's"
                );
                // The dump's client loaded every card's child after the turn, as Zed does.
                assert_eq!(
                    entry_lines(&h.zed.threads[&child].entries),
                    *thread,
                    "{name} {spawn}: the child thread"
                );
                let stored = store.child(&child).expect("stored");
                assert_eq!(stored.entry_count as usize, thread.len(), "{name} {spawn}");
                assert_eq!(stored.state.as_str(), "completed");
            }
        }
    }
}

/// The one-subagent capture up to (and including) the spawn's completion, and the rest.
type Records = Vec<(String, Value)>;

fn capture_split() -> (Records, Records) {
    let records = fixture("agents/opencode-1.18.33-one-subagent.jsonl");
    let at = records
        .iter()
        .position(|(d, m)| {
            d == "in" && m.pointer("/params/update/status") == Some(&json!("completed"))
        })
        .expect("completion");
    let (a, b) = records.split_at(at + 1);
    (a.to_vec(), b.to_vec())
}

/// The agent's replay of that child (the child-load capture), answering request `id`.
fn replay_answering(id: &str) -> Records {
    fixture("agents/opencode-1.18.33-child-load.jsonl")
        .into_iter()
        .skip_while(|(d, m)| !(d == "out" && m["method"] == "session/load"))
        .skip(1)
        .filter(|(d, _)| d == "in")
        .map(|(d, mut m)| {
            if m.get("method").is_none() && m["id"] == json!(2) {
                m["id"] = json!(id);
            }
            (d, m)
        })
        .collect()
}

const PARENT: &str = "ses_dcf559746ffevtOq4O0Em9uLE2";
const AGENT_CHILD: &str = "ses_dcf559239ffewZUp4EqV5n8EUr";
const REPLAYED: &[&str] = &[
    "user:SUBAGENT:alpha list the text files",
    "agent:Subagent alpha looking around.",
    "tool:call_0005:completed",
    "agent:Subagent alpha found the files; reporting back.",
];
/// What the spawn itself says of the child: its task, and its answer out of `<task_result>`.
const TOLD: &[&str] = &[
    "user:SUBAGENT:alpha list the text files",
    "agent:Subagent alpha found the files; reporting back.",
];

#[derive(Clone, Copy, Debug)]
enum Answer {
    /// The replay comes while the parent's turn goes on.
    DuringTurn,
    /// After the turn ended.
    AfterTurn,
    /// Zed opens the child first: its load waits for the replay.
    AfterZedLoads,
    /// The agent refuses.
    Error,
    /// No answer within the fetch's time.
    Never,
    /// The agent exits with the fetch under way (Zed's load waiting).
    AgentGone,
}

#[test]
fn when_the_replay_comes_and_when_it_does_not() {
    let cases: [(Answer, &[&str], &str); 6] = [
        (Answer::DuringTurn, REPLAYED, ""),
        (Answer::AfterTurn, REPLAYED, ""),
        (Answer::AfterZedLoads, REPLAYED, ""),
        (
            Answer::Error,
            TOLD,
            "not replayed (the agent answered its session/load with an error: Session not found)",
        ),
        (Answer::Never, TOLD, "did not replay session"),
        (Answer::AgentGone, TOLD, ""),
    ];
    for (answer, thread, note) in cases {
        let (head, tail) = capture_split();
        let mut h = Harness::zed();
        play(&mut h, &head);
        let child = child_session_id(PARENT, "call_0003");
        let asked = fetches(&h);
        assert_eq!(asked.len(), 1, "{answer:?}: asked at the completion");
        let (id, agent, cwd) = asked[0].clone();
        assert_eq!(
            (agent.as_str(), cwd.as_str()),
            (AGENT_CHILD, "/home/user/project")
        );
        let mut load = None;
        match answer {
            Answer::DuringTurn => {
                play(&mut h, &replay_answering(&id));
                play(&mut h, &tail);
            }
            Answer::AfterTurn => {
                play(&mut h, &tail);
                play(&mut h, &replay_answering(&id));
            }
            Answer::AfterZedLoads => {
                play(&mut h, &tail);
                let l = h.load_child(&child);
                assert!(h.response(l).is_none(), "the load waits for the replay");
                play(&mut h, &replay_answering(&id));
                load = Some(l);
            }
            Answer::Error => {
                play(&mut h, &tail);
                h.agent(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32603, "message": "Session not found"}}));
            }
            Answer::Never => {
                play(&mut h, &tail);
                let l = h.load_child(&child);
                assert!(h.response(l).is_none());
                h.advance(30_000);
                // The answer after all, too late: still the proxy's, not the client's.
                play(&mut h, &replay_answering(&id));
                load = Some(l);
            }
            Answer::AgentGone => {
                play(&mut h, &tail);
                let l = h.load_child(&child);
                h.agent_gone("exit status 1");
                load = Some(l);
            }
        }
        let l = load.unwrap_or_else(|| h.load_child(&child));
        assert_eq!(
            h.response(l).map(|r| r["result"].clone()),
            Some(json!({})),
            "{answer:?}: the child's load is answered"
        );
        assert_eq!(
            entry_lines(&h.zed.threads[&child].entries),
            thread,
            "{answer:?}: the child thread"
        );
        let card = h.zed.threads[PARENT]
            .card("call_0003")
            .cloned()
            .expect("card");
        let info = card.subagent.expect("info");
        assert_eq!(
            info.end,
            Some(thread.len() as u64 - 1),
            "{answer:?}: the card's range"
        );
        assert_eq!(card.status, "completed");
        client_saw_no_agent_child(&h, &[AGENT_CHILD]);
        if !note.is_empty() {
            assert!(
                h.notes.iter().any(|n| n.contains(note)),
                "{answer:?}: {:?}",
                h.notes
            );
        }
        // The agent's session keeps its own frames out of the client after the replay too.
        let before = h.to_client.len();
        h.update(
            AGENT_CHILD,
            json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
        );
        assert_eq!(h.to_client.len(), before, "{answer:?}");
    }
}

#[test]
fn a_reopened_parent_is_served_from_the_store_or_replayed_again() {
    let parent = "ses_dce8b4edaffeb7nKttNmmQ6bjQ";
    let child = child_session_id(parent, "call_0001");
    let live = dump_fixture("e2e/opencode-1.18.33-one-replay.dump.jsonl");
    // (what the store holds, the reopen dump, whether the proxy asks the agent again)
    let stored_live = {
        let store = StoreModel::default();
        let mut h = Harness::with_store(zed_config(), store.clone());
        play(&mut h, &live);
        store
    };
    // The proxy stopped with the fetch under way: the store has the task, not the work.
    let stored_midway = {
        let store = StoreModel::default();
        let mut h = Harness::with_store(zed_config(), store.clone());
        let at = live
            .iter()
            .position(|(d, m)| {
                d == "in" && m.pointer("/params/update/status") == Some(&json!("completed"))
            })
            .expect("completion");
        play(&mut h, &live[..=at]);
        assert_eq!(fetches(&h).len(), 1);
        store
    };
    let cases = [
        (
            "with the store",
            stored_live,
            "e2e/opencode-1.18.33-one-reopen.dump.jsonl",
            false,
        ),
        (
            "without the store",
            StoreModel::default(),
            "e2e/opencode-1.18.33-one-reopen-nostore.dump.jsonl",
            true,
        ),
        (
            "stopped mid-fetch",
            stored_midway,
            "e2e/opencode-1.18.33-one-reopen-nostore.dump.jsonl",
            true,
        ),
    ];
    for (name, store, reopen, asks) in cases {
        let mut h = Harness::with_store(zed_config(), store);
        play(&mut h, &dump_fixture(reopen));
        assert_eq!(
            fetches(&h).len(),
            usize::from(asks),
            "{name}: asked the agent"
        );
        let card = h.zed.threads[parent]
            .card("call_0001")
            .cloned()
            .expect(name);
        let info = card.subagent.expect("card info");
        assert_eq!(
            (info.session_id.as_str(), info.end),
            (child.as_str(), Some(3)),
            "{name}"
        );
        assert_eq!(card.tool_name.as_deref(), Some("task"), "{name}");
        assert_eq!(entry_lines(&h.zed.threads[&child].entries), ALPHA, "{name}");
        client_saw_no_agent_child(&h, &["ses_dce8b4c74ffeb8yqK23gZMQ83G"]);
    }
}
