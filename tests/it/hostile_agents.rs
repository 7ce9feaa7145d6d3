//! Hostile or broken agents (engine level, judged by the Zed model): one child session id
//! announced for two children, a child with its parent's id or another top-level session's,
//! children nested in a cycle or a thousand deep, spawns past the limits without end, a
//! subagent card naming a session the agent does not own. No hang, bounded memory, no frame
//! lost, no child thread under the wrong card, one note each.

use acp_proxy::engine::{EngineConfig, Limits};
use acp_proxy::subagents::ids::{child_session_id, synthesized_spawn_id};
use serde_json::{json, Value};

use crate::support::engine::{entry_lines, line, update_msg, zed_config, Harness};
use crate::support::frames;

const S1: &str = "s1";
const S2: &str = "s2";

/// Zed with two top-level sessions, `s1` and `s2`.
fn two_sessions(cfg: EngineConfig) -> Harness {
    let mut h = Harness::new(cfg);
    let id = h.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "zed", "version": "1.18"}}),
    );
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "fake"}}}),
    );
    for s in [S1, S2] {
        let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
        h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": s}}));
    }
    h
}

fn announce(h: &mut Harness, on: &str, child: &str, title: &str, state: Value) {
    h.update(
        on,
        json!({"sessionUpdate": "subagent_update", "sessionId": child, "title": title,
            "state": state}),
    );
}

fn running() -> Value {
    json!({"state": "running"})
}

fn idle() -> Value {
    json!({"state": "idle", "stopReason": "end_turn"})
}

fn text(h: &mut Harness, session: &str, words: &str) -> Value {
    let msg = update_msg(
        session,
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": words}}),
    );
    h.agent(msg.clone());
    msg
}

/// The client-facing id of a standard child announced on a top-level session.
fn standard_child(parent: &str, agent_child: &str) -> String {
    child_session_id(parent, &synthesized_spawn_id(agent_child))
}

fn notes_with(h: &Harness, needle: &str) -> usize {
    h.notes.iter().filter(|n| n.contains(needle)).count()
}

/// Every line the client got, as parsed JSON.
fn client_lines(h: &Harness) -> Vec<Value> {
    h.to_client
        .iter()
        .flat_map(|b| b.split(|c| *c == b'\n').filter(|l| !l.is_empty()))
        .map(|l| serde_json::from_slice(l).expect("json"))
        .collect()
}

#[test]
fn one_child_session_announced_for_two_parents_stays_with_the_first() {
    let mut h = two_sessions(zed_config());
    announce(&mut h, S1, "kid", "Survey", running());
    text(&mut h, "kid", "kid words");
    // The same child id announced on another session, with another title and finished.
    announce(&mut h, S2, "kid", "Impostor", idle());
    announce(&mut h, S2, "kid", "Impostor", idle());
    text(&mut h, "kid", "more kid words");

    let cid = standard_child(S1, "kid");
    let card = h.zed.threads[S1]
        .card(&synthesized_spawn_id("kid"))
        .expect("the card in s1");
    assert_eq!(card.title, "Survey", "s2's announcement did not retitle it");
    assert_eq!(card.status, "in_progress", "nor finish it");
    assert!(h.zed.threads[S2].cards().is_empty(), "no card in s2");
    let load = h.load_child(&cid);
    assert!(h.response(load).is_some());
    assert_eq!(
        entry_lines(&h.zed.threads[&cid].entries),
        ["agent:kid wordsmore kid words"]
    );
    assert_eq!(
        notes_with(&h, "announces child session kid"),
        1,
        "{:?}",
        h.notes
    );
}

#[test]
fn a_child_with_its_parents_id_or_another_sessions_is_refused() {
    let mut h = two_sessions(zed_config());
    announce(&mut h, S1, S1, "Myself", running());
    announce(&mut h, S1, S2, "The other", running());
    announce(&mut h, S1, S2, "The other", running());
    let mine = text(&mut h, S1, "the parent's own words");
    let other = text(&mut h, S2, "the other session's words");
    assert!(h.zed.threads[S1].cards().is_empty(), "no card");
    assert_eq!(
        entry_lines(&h.zed.threads[S1].entries),
        ["agent:the parent's own words"]
    );
    assert_eq!(
        entry_lines(&h.zed.threads[S2].entries),
        ["agent:the other session's words"]
    );
    let tail = &h.to_client[h.to_client.len() - 2..];
    assert_eq!(tail, [line(&mine), line(&other)], "passed byte for byte");
    assert_eq!(notes_with(&h, "that is the session it is announced on"), 1);
    assert_eq!(
        notes_with(&h, "the client already has a session with that id"),
        1,
        "{:?}",
        h.notes
    );
    assert_eq!(h.engine.children_in_memory(), 0);
}

#[test]
fn children_nested_in_a_cycle_keep_their_first_places() {
    let mut h = two_sessions(zed_config());
    announce(&mut h, S1, "c1", "One", running());
    announce(&mut h, "c1", "c2", "Two", running());
    // The cycle: c1 announced again, now inside c2; and c2 inside itself.
    announce(&mut h, "c2", "c1", "Loop", idle());
    announce(&mut h, "c2", "c2", "Self", idle());
    text(&mut h, "c1", "one's words");
    text(&mut h, "c2", "two's words");

    let c1 = standard_child(S1, "c1");
    let c2 = child_session_id(&c1, &synthesized_spawn_id("c2"));
    let card = h.zed.threads[S1]
        .card(&synthesized_spawn_id("c1"))
        .expect("c1's card in s1");
    assert_eq!(
        (card.title.as_str(), card.status.as_str()),
        ("One", "in_progress")
    );
    h.load_child(&c1);
    h.load_child(&c2);
    let one = &h.zed.threads[&c1];
    assert_eq!(one.cards().len(), 1, "c2's card is in c1's thread");
    assert_eq!(one.cards()[0].title, "Two");
    assert!(entry_lines(&one.entries).contains(&"agent:one's words".to_owned()));
    assert_eq!(
        entry_lines(&h.zed.threads[&c2].entries),
        ["agent:two's words"]
    );
    assert_eq!(h.engine.children_in_memory(), 2);
    assert_eq!(
        notes_with(&h, "announces child session"),
        2,
        "{:?}",
        h.notes
    );
}

#[test]
fn a_thousand_deep_standard_nesting_stays_within_max_depth() {
    let mut h = two_sessions(zed_config());
    let depth = Limits::default().max_depth;
    let mut on = S1.to_owned();
    for n in 0..1000 {
        let kid = format!("deep{n}");
        announce(&mut h, &on, &kid, &format!("Level {n}"), running());
        text(&mut h, &kid, &format!("words of level {n}"));
        on = kid;
    }
    assert_eq!(h.engine.children_in_memory(), depth);
    for (name, size) in h.engine.footprint() {
        assert!(size <= 2048, "{name} holds {size}");
    }
    assert_eq!(notes_with(&h, "max_depth"), 1, "{:?}", h.notes);
    assert_eq!(notes_with(&h, "was refused as a subagent"), 1);
    // The refused levels' words went out as the agent sent them (under their own ids).
    let passed = client_lines(&h)
        .iter()
        .filter(|m| {
            m["params"]["sessionId"]
                .as_str()
                .is_some_and(|s| s.starts_with("deep"))
        })
        .count();
    assert_eq!(passed, 1000 - depth);
}

#[test]
fn a_thousand_deep_legacy_nesting_stays_within_max_depth() {
    let mut h = two_sessions(zed_config());
    let depth = Limits::default().max_depth;
    let mut parent: Option<String> = None;
    for n in 0..1000 {
        let id = format!("toolu_{n}");
        let meta = frames::spawn_meta(parent.as_deref());
        h.update(S1, frames::spawn_call(&id, &meta));
        h.update(
            S1,
            frames::spawn_task(&id, &format!("task {n}"), "go", &meta),
        );
        parent = Some(id);
    }
    assert!(h.engine.children_in_memory() <= depth);
    for (name, size) in h.engine.footprint() {
        assert!(size <= 2048, "{name} holds {size}");
    }
    assert_eq!(notes_with(&h, "max_depth"), 1, "{:?}", h.notes);
}

#[test]
fn spawns_past_a_limit_without_end_leave_memory_bounded() {
    let mut h = two_sessions(EngineConfig {
        limits: Limits {
            max_subagents_per_session: 2,
            ..Limits::default()
        },
        ..zed_config()
    });
    for n in 0..10_000 {
        let id = format!("toolu_{n}");
        let meta = frames::spawn_meta(None);
        h.update(S1, frames::spawn_call(&id, &meta));
    }
    assert_eq!(h.engine.children_in_memory(), 2);
    for (name, size) in h.engine.footprint() {
        assert!(size <= 8192, "{name} holds {size}");
    }
    assert_eq!(notes_with(&h, "max_subagents_per_session"), 1);
    assert_eq!(
        h.zed.threads[S1].tool_calls().count(),
        10_000,
        "no frame lost"
    );
}

#[test]
fn a_card_naming_a_session_the_agent_does_not_own_is_an_ordinary_tool_call() {
    let mut h = two_sessions(zed_config());
    let meta = frames::spawn_meta(None);
    h.update(S1, frames::spawn_call("toolu_real", &meta));
    let ours = child_session_id(S1, "toolu_real");
    let card = |tool: &str, names: &str| {
        update_msg(
            S1,
            json!({"sessionUpdate": "tool_call", "toolCallId": tool, "title": "Look", "kind": "read",
            "status": "pending", "_meta": {"subagent_session_info":
                {"session_id": names, "message_start_index": 0}}}),
        )
    };
    for (tool, names) in [
        ("t_ours", ours.as_str()),
        ("t_self", S1),
        ("t_other", S2),
        ("t_again", ours.as_str()),
    ] {
        h.agent(card(tool, names));
        let shown = h.zed.threads[S1].card(tool).expect("shown");
        assert!(shown.subagent.is_none(), "{tool}: no subagent link");
        assert_eq!(shown.title, "Look");
    }
    // An unknown child id is taken as the agent's own (another link's): the card stays...
    let theirs = child_session_id("elsewhere", "t");
    h.agent(card("t_theirs", &theirs));
    assert!(h.zed.threads[S1]
        .card("t_theirs")
        .is_some_and(|c| c.subagent.is_some()));
    // ...but a second card naming the same child is not.
    h.agent(card("t_copy", &theirs));
    assert!(h.zed.threads[S1]
        .card("t_copy")
        .is_some_and(|c| c.subagent.is_none()));
    assert_eq!(
        notes_with(&h, "carries a subagent card for session"),
        1,
        "{:?}",
        h.notes
    );
    // The real card still points at its child.
    let real = h.zed.threads[S1].card("toolu_real").expect("spawn card");
    assert_eq!(
        real.subagent.as_ref().map(|s| s.session_id.as_str()),
        Some(ours.as_str())
    );
}
