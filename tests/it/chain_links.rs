//! Two acp-proxy links in one chain (engine level, with the frames the reference conductor
//! 3.6.0 delivers; `chain::two_links_…` runs the real conductors). 3.6.0 re-serialises
//! `initialize` and drops `clientCapabilities.subagents`, so the inner link (towards the
//! agent) sees only the outer link's `_meta["subagent-transcript"]`; it must relay. And when
//! the inner link rewrites anyway (the outer one did not opt in), the outer link must pass
//! its cards on and leave their child threads to it.

use acp_proxy::engine::{EngineConfig, Mode, SubagentDisplay};
use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{entry_lines, line, update_msg, zed_config, Harness};
use crate::support::frames;

/// The `initialize` the inner link gets from conductor 3.6.0 behind an outer link that opted
/// in (captured): `subagents` is gone, the outer link's flag is kept.
const INITIALIZE_FROM_3_6: &str = r#"{"jsonrpc":"2.0","id":"1c4e01c8-8615-4d9f-b961-4106d527dffe","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"auth":{"terminal":false},"_meta":{"terminal_output":true,"terminal-auth":true,"subagent-transcript":true}},"clientInfo":{"name":"zed","title":"Zed","version":"0.232.0"}}}"#;

const S: &str = "demo-session-1";

#[test]
fn a_link_behind_one_that_opted_in_relays_whatever_its_display() {
    for display in [
        SubagentDisplay::Auto,
        SubagentDisplay::Zed,
        SubagentDisplay::Transcript,
    ] {
        let mut h = Harness::new(EngineConfig {
            display,
            ..EngineConfig::default()
        });
        h.client(serde_json::from_str(INITIALIZE_FROM_3_6).expect("json"));
        assert_eq!(h.engine.mode(), Some(Mode::Off), "{display:?}");
        let sent: Value = serde_json::from_str(INITIALIZE_FROM_3_6).expect("json");
        assert_eq!(h.to_agent, vec![sent], "passed on unchanged");
        assert!(
            h.notes
                .iter()
                .any(|n| n.contains("already rewrites subagents")),
            "{:?}",
            h.notes
        );
        h.agent(
            json!({"jsonrpc": "2.0", "id": "1c4e01c8-8615-4d9f-b961-4106d527dffe",
            "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}),
        );
        let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
        h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": S}}));
        let spawn = update_msg(S, frames::spawn_call("toolu_1", &frames::spawn_meta(None)));
        let before = h.to_client.len();
        h.agent(spawn.clone());
        assert_eq!(h.to_client[before..], [line(&spawn)], "relayed as sent");
        assert_eq!(h.engine.children_in_memory(), 0);
    }
}

/// A card as an inner acp-proxy link sends it: the agent's spawn with Zed's keys added.
fn inner_card(kind: &str, tool: &str, child: &str, extra: Value) -> Value {
    let mut update = json!({"sessionUpdate": kind, "toolCallId": tool,
        "_meta": {"claudeCode": {"toolName": "Agent"}, "tool_name": "Agent",
            "subagent_session_info": {"session_id": child, "message_start_index": 0}}});
    if let (Some(u), Some(e)) = (update.as_object_mut(), extra.as_object()) {
        u.extend(e.clone());
    }
    update_msg(S, update)
}

#[test]
fn cards_another_link_made_pass_untouched_and_their_threads_load_from_it() {
    let mut h = Harness::zed_session("acp-proxy-demo-agent", S);
    // The inner link derives its child ids as this one would: the same id for the same spawn.
    let child = child_session_id(S, "toolu_demo_0001");
    let frames = [
        inner_card(
            "tool_call",
            "toolu_demo_0001",
            &child,
            json!({"title": "Task", "kind": "think", "status": "pending", "rawInput": {}}),
        ),
        inner_card(
            "tool_call_update",
            "toolu_demo_0001",
            &child,
            json!({"title": "Survey text files", "rawInput": {"description": "Survey text files",
                "prompt": "List the text files.", "subagent_type": "general-purpose"}}),
        ),
        update_msg(
            S,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "toolu_demo_0001",
            "title": "Survey text files · Find `*.txt` · 1 step",
            "_meta": {"subagent_session_info": {"session_id": child, "message_start_index": 0}}}),
        ),
        inner_card(
            "tool_call_update",
            "toolu_demo_0001",
            &child,
            json!({"status": "completed", "content": [{"type": "content",
                "content": {"type": "text", "text": "Two text files."}}]}),
        ),
    ];
    let before = h.to_client.len();
    for f in &frames {
        h.agent(f.clone());
    }
    let sent: Vec<_> = frames.iter().map(line).collect();
    assert_eq!(
        h.to_client[before..],
        sent[..],
        "every card frame untouched"
    );
    assert_eq!(
        h.engine.children_in_memory(),
        0,
        "not claimed as a spawn here"
    );
    let card = h.zed.threads[S].card("toolu_demo_0001").expect("the card");
    assert_eq!(card.status, "completed");

    // Zed opens the child: the request goes on to the inner link, which replays the thread.
    let asked = h.to_agent.len();
    let load = h.load_child(&child);
    assert_eq!(
        h.to_agent.len(),
        asked + 1,
        "the load went on to the agent side"
    );
    assert_eq!(h.to_agent[asked]["method"], "session/load");
    for update in [
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "List the text files."}}),
        json!({"sessionUpdate": "tool_call", "toolCallId": "toolu_demo_0002", "title": "Find `*.txt`",
            "kind": "search", "status": "completed"}),
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Two text files."}}),
    ] {
        h.update(&child, update);
    }
    h.agent(json!({"jsonrpc": "2.0", "id": load, "result": {}}));
    assert_eq!(h.response(load).expect("answered")["result"], json!({}));
    assert_eq!(
        entry_lines(&h.zed.threads[&child].entries),
        [
            "user:List the text files.",
            "tool:toolu_demo_0002:completed",
            "agent:Two text files."
        ]
    );
}

#[test]
fn a_link_that_opted_in_still_claims_the_agents_own_spawns() {
    // The outer link with the agent's plain spawn (no Zed keys): its own card, as always.
    let mut h = Harness::new(zed_config());
    h.client(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": 1, "clientInfo": {"name": "zed"}, "clientCapabilities": {}}}),
    );
    assert_eq!(
        h.to_agent[0]["params"]["clientCapabilities"]["_meta"]["subagent-transcript"], true,
        "the flag the next link stands down on"
    );
    assert_eq!(h.engine.mode(), Some(Mode::Zed));
}
