//! A reopened parent in the folded view (a client with neither Zed's cards nor standard
//! subagents, as acpx and Toad): each child the store kept shows again as it did live, its
//! card with the answer once and its log, and its steps as tool calls of the parent's
//! thread, whatever the agent replays of it (Claude's legacy wire replays the spawn only,
//! Qwen the spawn and its result, OpenCode the spawn with the child fetched apart, dsh each
//! card settled at once, AgentPool nothing, Codex the standard announcements and the
//! children's events).

use acp_proxy::engine::{EngineConfig, SubagentDisplay};

use serde_json::Value;

use crate::support::engine::{dump_fixture, fixture, play, Harness, StoreModel};

fn folded() -> EngineConfig {
    EngineConfig {
        display: SubagentDisplay::Transcript,
        ..EngineConfig::default()
    }
}

/// A tool call of the parent's thread as the client last saw it: id, title, status, text.
type Shown = (String, String, String, String);

fn shown(h: &Harness, parent: &str) -> Vec<Shown> {
    let mut calls: Vec<Shown> = h.zed.threads[parent]
        .tool_calls()
        .map(|t| {
            (
                t.id.clone(),
                t.title.clone(),
                t.status.clone(),
                t.text.clone(),
            )
        })
        .collect();
    calls.sort();
    calls
}

/// The parent's tool calls live, then after a restart and the reopen capture: with the store
/// the live run left, and with an empty one.
fn live_and_reopened(live: &str, reopen: &str, parent: &str) -> (Vec<Shown>, [Vec<Shown>; 2]) {
    let store = StoreModel::default();
    let mut h = Harness::with_store(folded(), store.clone());
    play(&mut h, &dump_fixture(live));
    assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
    let live = shown(&h, parent);
    let reopened = [store, StoreModel::default()].map(|store| {
        let mut h = Harness::with_store(folded(), store);
        play(&mut h, &dump_fixture(reopen));
        assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
        assert!(
            h.zed.orphan_tool_updates.is_empty(),
            "{:?}",
            h.zed.orphan_tool_updates
        );
        shown(&h, parent)
    });
    (live, reopened)
}

/// Each answer shown once in the parent's thread.
fn answers_once(what: &str, calls: &[Shown], tags: &[&str]) {
    for tag in tags {
        let answer = format!("SUB-ANSWER {tag}:");
        let n: usize = calls.iter().map(|c| c.3.matches(&answer).count()).sum();
        assert_eq!(n, 1, "{what}: `{answer}` shown {n} times: {calls:#?}");
    }
}

/// The attributed steps (`<spawn>/<tool>`) of a thread.
fn steps(calls: &[Shown]) -> Vec<Shown> {
    calls
        .iter()
        .filter(|c| c.0.contains('/'))
        .cloned()
        .collect()
}

#[test]
fn claude_legacy_children_reopen_with_their_steps_from_the_store() {
    // Claude 0.23.1 replays the two spawn cards with their results, nothing of the children.
    let (live, [stored, bare]) = live_and_reopened(
        "e2e/claude-agent-acp-0.23.1-two.dump.jsonl",
        "e2e/claude-agent-acp-0.23.1-two-reopen.dump.jsonl",
        "e0562b23-d124-4ddb-ae45-b938122c3612",
    );
    assert_eq!(steps(&live).len(), 2, "{live:#?}");
    assert_eq!(stored, live, "from the store, as live");
    answers_once("stored", &stored, &["alpha", "beta"]);
    // Without the store: what the agent replays (its cards, each with its answer once).
    assert!(steps(&bare).is_empty(), "{bare:#?}");
    assert_eq!(bare.len(), 2, "{bare:#?}");
    answers_once("without the store", &bare, &["alpha", "beta"]);
}

#[test]
fn opencode_children_reopen_with_their_steps_from_the_store_or_the_agents_replay() {
    let parent = "ses_dce8b4edaffeb7nKttNmmQ6bjQ";
    let live_dump = "e2e/opencode-1.18.33-one-replay.dump.jsonl";
    // With the store: the agent replays the spawn with its wrapped result; the steps and the
    // log come from the store.
    let (live, [stored, _]) = live_and_reopened(
        live_dump,
        "e2e/opencode-1.18.33-one-reopen.dump.jsonl",
        parent,
    );
    assert_eq!(steps(&live).len(), 1, "{live:#?}");
    assert_eq!(steps(&stored), steps(&live), "the steps as live");
    let card = stored
        .iter()
        .find(|c| c.0 == "call_0001")
        .expect("the card");
    assert_eq!(
        (card.1.as_str(), card.2.as_str()),
        ("Survey text files (alpha)", "completed")
    );
    assert!(
        card.3.starts_with("SUB-ANSWER alpha:"),
        "without the agent's wrapper: {}",
        card.3
    );
    assert!(card.3.contains("- ✓ home/user/project"), "{}", card.3);
    answers_once("stored", &stored, &["alpha"]);
    // Without the store the proxy fetches the child from the agent: as live.
    let (_, [_, fetched]) = live_and_reopened(
        live_dump,
        "e2e/opencode-1.18.33-one-reopen-nostore.dump.jsonl",
        parent,
    );
    assert_eq!(
        fetched, live,
        "from the agent's replay of the child, as live"
    );
}

#[test]
fn agentpool_children_reopen_from_the_store_though_the_agent_replays_nothing() {
    let (live, [stored, bare]) = live_and_reopened(
        "e2e/agentpool-2.9.18-one-box.dump.jsonl",
        "e2e/agentpool-2.9.18-one-reopen.dump.jsonl",
        "ses_23176a9b4001oAhcSWehQCCib6",
    );
    assert_eq!(steps(&live).len(), 1, "{live:#?}");
    assert_eq!(stored, live, "from the store, as live");
    answers_once("stored", &stored, &["alpha"]);
    assert!(bare.is_empty(), "nothing to show: {bare:#?}");
}

#[test]
fn standard_children_reopen_with_their_steps_once() {
    // Codex replays the announcements and the children's events: from the store they are
    // known (shown from the thread, not twice), without it recorded again.
    let (live, [stored, bare]) = live_and_reopened(
        "e2e/codex-acp-2.6.0-two.dump.jsonl",
        "e2e/codex-acp-2.6.0-two-reopen.dump.jsonl",
        "01a23140-a4aa-72a1-b30d-ce6ebe84756e",
    );
    assert_eq!(steps(&live).len(), 2, "{live:#?}");
    assert_eq!(stored, live, "from the store, as live");
    assert_eq!(bare, live, "from the agent's replay, as live");
    answers_once("stored", &stored, &["alpha", "beta"]);
}

/// A capture's messages as (direction, message).
type Records = Vec<(String, Value)>;

/// A capture of `tests/fixtures/agents/` and the reload capture made after it (a fresh agent
/// process replaying the parent), aimed at the live run's session; and that session.
fn agent_captures(live: &str, reload: &str) -> (Records, Records, String) {
    let live = fixture(live);
    let reload = fixture(reload);
    let session = |recs: &Records| {
        recs.iter()
            .find_map(|(_, m)| m.pointer("/params/sessionId").and_then(Value::as_str))
            .map(str::to_owned)
            .expect("a session")
    };
    let (from, to) = (session(&reload), session(&live));
    let reload = reload
        .into_iter()
        .map(|(d, m)| {
            let m = serde_json::from_str(&m.to_string().replace(&from, &to)).expect("JSON");
            (d, m)
        })
        .collect();
    (live, reload, to)
}

#[test]
fn qwen_foreground_children_reopen_with_their_steps_from_the_store() {
    // Qwen replays the prompt, the spawn and its result, nothing of the child.
    let (live_recs, reload, parent) = agent_captures(
        "agents/qwen-0.24.4-foreground-one-subagent.jsonl",
        "agents/qwen-0.24.4-foreground-parent-reload.jsonl",
    );
    let store = StoreModel::default();
    let mut h = Harness::with_store(folded(), store.clone());
    play(&mut h, &live_recs);
    let live = shown(&h, &parent);
    assert_eq!(steps(&live).len(), 2, "{live:#?}");
    let mut h = Harness::with_store(folded(), store);
    play(&mut h, &reload);
    assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
    let reopened = shown(&h, &parent);
    assert_eq!(reopened, live, "from the store, as live");
}

#[test]
fn dsh_folded_children_reopen_from_the_store() {
    // dsh folds each child's work into its card; its replay settles each card at once, plain.
    use crate::zed_dsh::{parent_replay, PARENT, TRACE};
    let store = StoreModel::default();
    let mut h = Harness::with_store(folded(), store.clone());
    play(&mut h, &fixture(TRACE));
    let live = shown(&h, PARENT);
    let mut h = Harness::with_store(folded(), store);
    play(&mut h, &parent_replay());
    assert!(h.zed.rejected.is_empty(), "{:?}", h.zed.rejected);
    let reopened = shown(&h, PARENT);
    assert_eq!(steps(&live).len(), 3, "{live:#?}");
    assert_eq!(reopened, live, "from the store, as live");
    // A card replayed already ended comes after its steps (as live, where each step ends
    // before its card does).
    let order: Vec<&str> = h.zed.threads[PARENT]
        .tool_calls()
        .map(|t| t.id.as_str())
        .collect();
    let at = |id: &str| order.iter().position(|o| *o == id).expect(id);
    assert!(at("call_c1/call_c1-fold-0") < at("call_c1"), "{order:?}");
    assert!(at("call_c2/call_c2-fold-0") < at("call_c2"), "{order:?}");
}
