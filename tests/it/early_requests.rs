//! Agent requests for a session before the `session/new` response that creates it (engine
//! level; `faults::requests_for_a_session_before_its_session_new_response_…` drives the
//! binary): answered by the proxy, never shown to the client, and only those.

use acp_proxy::engine::{EngineConfig, SubagentDisplay};
use serde_json::{json, Value};

use crate::support::engine::{zed_config, Harness};

/// Zed's `initialize` with the given terminal capability, answered by an agent.
fn initialized(cfg: EngineConfig, terminal: bool, client: &str) -> Harness {
    let mut h = Harness::new(cfg);
    let id = h.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": client, "version": "0.232.0"},
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": false},
                "terminal": terminal}}),
    );
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "agentpool"}}}),
    );
    h
}

fn new_session(h: &mut Harness) -> u64 {
    h.request("session/new", json!({"cwd": "/p", "mcpServers": []}))
}

fn answer_new(h: &mut Harness, id: u64, session: &str) {
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": session}}));
}

fn agent_request(h: &mut Harness, id: u64, method: &str, session: &str) {
    h.agent(json!({"jsonrpc": "2.0", "id": id, "method": method,
        "params": {"sessionId": session, "command": "uname -s", "path": "/p/a.txt"}}));
}

/// The proxy's answers to agent requests, as (id, error code).
fn answers(h: &Harness) -> Vec<(Value, i64)> {
    h.to_agent
        .iter()
        .filter(|m| m.get("method").is_none())
        .map(|m| (m["id"].clone(), m["error"]["code"].as_i64().unwrap_or(0)))
        .collect()
}

/// Requests the client received, as (method, session).
fn client_requests(h: &Harness) -> Vec<(String, String)> {
    h.zed.requests.clone()
}

#[test]
fn requests_for_the_session_being_created_are_answered_with_what_the_client_would_say() {
    let mut h = initialized(zed_config(), false, "zed");
    let new = new_session(&mut h);
    agent_request(&mut h, 0, "terminal/create", "ses_new");
    agent_request(&mut h, 1, "fs/read_text_file", "ses_new");
    agent_request(&mut h, 2, "fs/write_text_file", "ses_new");
    agent_request(&mut h, 3, "session/request_permission", "ses_new");
    assert_eq!(
        answers(&h),
        vec![
            (json!(0), -32601),
            (json!(1), -32002),
            (json!(2), -32601),
            (json!(3), -32002)
        ]
    );
    let err = &h.to_agent.last().expect("an answer")["error"]["message"];
    assert!(err.as_str().is_some_and(|m| m.contains("ses_new")), "{err}");
    assert!(client_requests(&h).is_empty(), "{:?}", h.zed.requests);
    let notes: Vec<_> = h
        .notes
        .iter()
        .filter(|n| n.contains("before the response that creates the session"))
        .collect();
    assert_eq!(notes.len(), 1, "one note per connection: {:?}", h.notes);

    // Once the response went out, the session is the client's: its requests reach it.
    answer_new(&mut h, new, "ses_new");
    agent_request(&mut h, 4, "terminal/create", "ses_new");
    assert_eq!(
        client_requests(&h),
        vec![("terminal/create".to_owned(), "ses_new".to_owned())]
    );
    assert!(h.zed.unknown_session_requests.is_empty());
    assert_eq!(answers(&h).len(), 4, "the proxy answered nothing more");
}

#[test]
fn requests_for_sessions_the_client_knows_pass_while_another_is_created() {
    let mut h = initialized(zed_config(), true, "zed");
    let first = new_session(&mut h);
    answer_new(&mut h, first, "s1");
    // A standard child of s1, so that its session is one the proxy serves the client.
    h.update(
        "s1",
        json!({"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "Survey",
            "state": {"state": "running"}}),
    );
    // A reopened session: Zed knows it from the moment it asks.
    let load = h.request(
        "session/load",
        json!({"sessionId": "old", "cwd": "/p", "mcpServers": []}),
    );
    h.agent(json!({"jsonrpc": "2.0", "id": load, "result": {}}));

    let second = new_session(&mut h);
    agent_request(&mut h, 10, "session/request_permission", "s1");
    agent_request(&mut h, 11, "session/request_permission", "kid");
    agent_request(&mut h, 12, "terminal/create", "old");
    agent_request(&mut h, 13, "terminal/create", "ses_2");
    assert_eq!(answers(&h), vec![(json!(13), -32002)]);
    // The child's request is shown in its parent's thread (the child is not open).
    let got: Vec<String> = client_requests(&h).into_iter().map(|(_, s)| s).collect();
    assert_eq!(got, ["s1", "s1", "old"]);
    assert!(h.zed.unknown_session_requests.is_empty());
    answer_new(&mut h, second, "ses_2");
    // s1 and ses_2 from the responses, `old` from the load: nothing per agent request.
    assert!(h.engine.footprint().contains(&("known_sessions", 3)));
}

#[test]
fn the_agent_leaving_ends_the_check_and_a_relay_is_untouched() {
    // `display = "off"`: a pure relay; and `acp`, where the proxy reads no updates.
    for display in [SubagentDisplay::Off, SubagentDisplay::Acp] {
        let cfg = EngineConfig {
            display,
            ..EngineConfig::default()
        };
        let mut h = initialized(cfg, false, "zed");
        new_session(&mut h);
        agent_request(&mut h, 0, "terminal/create", "ses_new");
        assert!(answers(&h).is_empty(), "{display:?}: {:?}", h.to_agent);
        assert_eq!(client_requests(&h).len(), 1, "{display:?}");
    }

    // The agent leaves with the session/new pending: its error goes out, and a later
    // request (from a restarted agent on the same engine, say) is not judged by it.
    let mut h = initialized(zed_config(), false, "zed");
    new_session(&mut h);
    let mut out = Vec::new();
    h.engine.agent_gone("exit status 1", &mut out);
    agent_request(&mut h, 0, "session/request_permission", "ses_new");
    assert!(answers(&h).is_empty());
}
