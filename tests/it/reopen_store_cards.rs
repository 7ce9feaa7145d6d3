//! A parent reopened after a restart gets the cards of the children the store kept, for every
//! wire: when the agent's own `session/load` replay does not bring them back, the proxy shows
//! them before the load's answer; when it does, once. Judged by the Zed model under both rule
//! sets and by a client that speaks standard subagents.

use acp_proxy::engine::{EngineConfig, SubagentDisplay};
use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{dump_fixture, entry_lines, play, zed_config, Harness, StoreModel};
use crate::support::frames;
use crate::support::zed_model::{initialize_params, ZedModel, ZedRules};

const S: &str = "sess-1";

/// initialize (as `rules`' Zed sends it, or a standard client) + `session/load` of `S`.
fn reopen(h: &mut Harness, init: Value) -> u64 {
    let id = h.request("initialize", init);
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "fake"}}}),
    );
    h.request(
        "session/load",
        json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
    )
}

fn start(h: &mut Harness, init: Value) {
    let id = h.request("initialize", init);
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "fake"}}}),
    );
    let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": S}}));
}

/// A turn of `S` with two legacy children (Claude's legacy wire), each with a tool call and
/// an answer, and the parent's own words around them.
fn two_children_turn(h: &mut Harness) {
    h.update(S, user("survey"));
    h.update(S, words("I will delegate."));
    for (spawn, task) in [("sp-a", "alpha"), ("sp-b", "beta")] {
        let meta = frames::spawn_meta(None);
        h.update(S, frames::spawn_call(spawn, &meta));
        h.update(
            S,
            frames::spawn_task(spawn, task, &format!("do {task}"), &meta),
        );
    }
    for (spawn, task) in [("sp-a", "alpha"), ("sp-b", "beta")] {
        h.update(
            S,
            frames::child_tool(spawn, &format!("{spawn}-t"), "Read a", "completed"),
        );
        h.update(S, frames::child_text(spawn, &format!("{task} done")));
        h.update(
            S,
            frames::spawn_result(spawn, "completed", &format!("{task} done")),
        );
    }
    h.update(S, words("Both done."));
}

fn user(text: &str) -> Value {
    json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}})
}

fn words(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}

/// What the agent replays of the parent on `session/load`.
#[derive(Debug, Clone, Copy)]
enum Replay {
    /// Nothing (AgentPool).
    Nothing,
    /// The parent's words, not its subagent calls (fast-agent).
    Words,
    /// The whole turn, spawns included (Claude).
    Everything,
    /// The words and each spawn under a new tool call id, nothing of the children (Kimi).
    SpawnsRenamed,
}

fn replay(h: &mut Harness, how: Replay) {
    match how {
        Replay::Nothing => {}
        Replay::Words => {
            h.update(S, user("survey"));
            h.update(S, words("I will delegate."));
            h.update(S, words("Both done."));
        }
        Replay::Everything => two_children_turn(h),
        Replay::SpawnsRenamed => {
            h.update(S, user("survey"));
            for (spawn, task) in [("new-a", "alpha"), ("new-b", "beta")] {
                let meta = frames::spawn_meta(None);
                h.update(S, frames::spawn_call(spawn, &meta));
                h.update(
                    S,
                    frames::spawn_task(spawn, task, &format!("do {task}"), &meta),
                );
                h.update(
                    S,
                    frames::spawn_result(spawn, "completed", &format!("{task} done")),
                );
            }
            h.update(S, words("Both done."));
        }
    }
}

#[test]
fn a_reopened_parent_shows_every_stored_card_once_whatever_the_agent_replays() {
    for rules in ZedRules::ALL {
        for how in [
            Replay::Nothing,
            Replay::Words,
            Replay::Everything,
            Replay::SpawnsRenamed,
        ] {
            let store = StoreModel::default();
            let mut live = Harness::with_store(zed_config(), store.clone());
            live.zed = ZedModel::new(rules);
            start(&mut live, initialize_params(rules));
            two_children_turn(&mut live);
            let live_cards: Vec<(String, String, String)> = live.zed.threads[S]
                .cards()
                .iter()
                .map(|c| (c.id.clone(), c.title.clone(), c.status.clone()))
                .collect();
            assert_eq!(live_cards.len(), 2);

            // A restart: a new proxy over the same store, Zed reopens the parent.
            let mut h = Harness::with_store(zed_config(), store);
            h.zed = ZedModel::new(rules);
            let load = reopen(&mut h, initialize_params(rules));
            replay(&mut h, how);
            h.agent(json!({"jsonrpc": "2.0", "id": load, "result": {}}));
            let thread = &h.zed.threads[S];
            let cards: Vec<(String, String, String)> = thread
                .cards()
                .iter()
                .map(|c| (c.id.clone(), c.title.clone(), c.status.clone()))
                .collect();
            let ctx = format!("{rules:?} {how:?}: {:#?}", thread.entries);
            match how {
                Replay::SpawnsRenamed => {
                    // The agent brings its cards back itself, under ids the store does not
                    // know: no stored card beside them.
                    let ids: Vec<&str> = cards.iter().map(|c| c.0.as_str()).collect();
                    assert_eq!(ids, ["new-a", "new-b"], "{ctx}");
                }
                _ => assert_eq!(cards, live_cards, "{ctx}"),
            }
            if matches!(how, Replay::Words) {
                // The cards come after what the agent replayed, before the load's answer.
                let lines = entry_lines(&thread.entries);
                assert_eq!(lines[0], "user:survey", "{ctx}");
                assert!(lines[1].starts_with("agent:"), "{ctx}");
                assert!(lines[2].starts_with("tool:sp-a"), "{ctx}");
                assert!(lines[3].starts_with("tool:sp-b"), "{ctx}");
            }
            if !matches!(how, Replay::SpawnsRenamed) {
                for (spawn, task) in [("sp-a", "alpha"), ("sp-b", "beta")] {
                    let child = child_session_id(S, spawn);
                    h.load_child(&child);
                    assert_eq!(
                        entry_lines(&h.zed.threads[&child].entries),
                        [
                            format!("user:do {task}"),
                            format!("tool:{spawn}-t:completed"),
                            format!("agent:{task} done"),
                        ],
                        "{ctx}"
                    );
                }
            }
            h.assert_zed_clean();
        }
    }
}

#[test]
fn a_second_load_of_the_same_parent_shows_the_stored_cards_again() {
    // Zed reopens the thread twice on one connection (two windows, or closed and opened
    // again): each replay is a new thread in Zed, and each needs the cards.
    let store = StoreModel::default();
    let mut live = Harness::with_store(zed_config(), store.clone());
    start(&mut live, initialize_params(ZedRules::V1_18));
    two_children_turn(&mut live);
    let mut h = Harness::with_store(zed_config(), store);
    let load = reopen(&mut h, initialize_params(ZedRules::V1_18));
    h.agent(json!({"jsonrpc": "2.0", "id": load, "result": {}}));
    assert_eq!(h.zed.threads[S].cards().len(), 2);
    h.zed = ZedModel::new(ZedRules::V1_18);
    let load = h.request(
        "session/load",
        json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
    );
    h.agent(json!({"jsonrpc": "2.0", "id": load, "result": {}}));
    assert_eq!(h.zed.threads[S].cards().len(), 2);
    h.assert_zed_clean();
}

#[test]
fn fast_agent_reopened_parent_has_its_cards_from_the_store() {
    // fast-agent 0.10.48 replays the parent's words on `session/load`, not its subagent calls
    // (docs/agents/new-families.md): the live run's children come back from the store.
    let live = dump_fixture("e2e/fast-agent-0.10.48-two.dump.jsonl");
    let parent = "2612012213-3gTYo2";
    let spawns = [
        ("0cffdefc846242aea84696bdd14562dc", "alpha"),
        ("d30fcc21896a46aca20d9259ffbb61c9", "beta"),
    ];
    for rules in ZedRules::ALL {
        let store = StoreModel::default();
        let mut h = Harness::with_store(zed_config(), store.clone());
        h.zed = ZedModel::new(rules);
        play(&mut h, &live);
        let mut h = Harness::with_store(zed_config(), store);
        h.zed = ZedModel::new(rules);
        let id = h.request("initialize", initialize_params(rules));
        h.agent(
            json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
            "agentCapabilities": {"loadSession": true},
            "agentInfo": {"name": "fast-agent-acp", "version": "0.10.48"}}}),
        );
        let load = h.request(
            "session/load",
            json!({"sessionId": parent, "cwd": "/p", "mcpServers": []}),
        );
        h.update(parent, user("SCENARIO:two survey the text files"));
        h.update(parent, words("MAIN-DONE: both surveys are in."));
        h.agent(json!({"jsonrpc": "2.0", "id": load, "result": {}}));
        let thread = &h.zed.threads[parent];
        let cards: Vec<(String, String, String)> = thread
            .cards()
            .iter()
            .map(|c| (c.id.clone(), c.title.clone(), c.status.clone()))
            .collect();
        let want: Vec<(String, String, String)> = spawns
            .iter()
            .map(|(id, tag)| {
                (
                    (*id).to_owned(),
                    format!("Survey text files {tag}"),
                    "completed".to_owned(),
                )
            })
            .collect();
        assert_eq!(cards, want, "{rules:?}: {:#?}", thread.entries);
        for (spawn, tag) in spawns {
            let child = child_session_id(parent, spawn);
            h.load_child(&child);
            assert_eq!(
                entry_lines(&h.zed.threads[&child].entries),
                [
                    format!("user:SUBAGENT:{tag} list the text files in the project and report what you find"),
                    format!("agent:SUB-ANSWER {tag}: the project holds a.txt, b.txt."),
                ],
                "{rules:?}"
            );
        }
        h.assert_zed_clean();
    }
}

#[test]
fn a_standard_client_is_told_of_the_stored_legacy_children_of_a_reopened_parent() {
    let cfg = || EngineConfig {
        display: SubagentDisplay::Acp,
        ..EngineConfig::default()
    };
    let init = || {
        json!({"protocolVersion": 1, "clientInfo": {"name": "std-client"},
            "clientCapabilities": {"subagents": {}}})
    };
    for how in [Replay::Nothing, Replay::Words, Replay::Everything] {
        let store = StoreModel::default();
        let mut live = Harness::with_store(cfg(), store.clone());
        start(&mut live, init());
        two_children_turn(&mut live);
        let mut h = Harness::with_store(cfg(), store);
        let load = reopen(&mut h, init());
        replay(&mut h, how);
        h.agent(json!({"jsonrpc": "2.0", "id": load, "result": {}}));
        let std = &h.standard;
        assert!(std.problems.is_empty(), "{how:?}: {:#?}", std.problems);
        let mut children = std.children_of(S);
        children.sort();
        let mut want = vec![child_session_id(S, "sp-a"), child_session_id(S, "sp-b")];
        want.sort();
        assert_eq!(children, want, "{how:?}");
        for (spawn, task) in [("sp-a", "alpha"), ("sp-b", "beta")] {
            let child = child_session_id(S, spawn);
            assert_eq!(std.session(&child).title.as_deref(), Some(task), "{how:?}");
            assert_eq!(std.session(&child).state_line(), "idle:end_turn", "{how:?}");
        }
    }
}
