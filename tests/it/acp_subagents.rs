//! Standard ACP subagents out (`display = "acp"`, or `auto` for a client that advertises
//! `clientCapabilities.subagents`): every input preset's captured traffic, played through the
//! engine for such a client, validates against the ACP schema and a model of a client that
//! speaks standard subagents (`support::standard`).

use acp_proxy::engine::{EngineConfig, Mode};
use acp_proxy::subagents::ids::child_session_id;
use serde_json::{json, Value};

use crate::support::engine::{fixture, line, Harness};
use crate::support::frames;
use crate::support::standard::{StandardClient, StdEntry};

/// The `initialize` of a client that speaks standard subagents.
fn acp_initialize() -> Value {
    json!({"protocolVersion": 1, "clientCapabilities": {
        "fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true, "subagents": {}},
        "clientInfo": {"name": "std-client", "version": "1.0.0"}})
}

/// A capture as such a client would have played it.
fn as_standard_client(records: &[(String, Value)]) -> Vec<(String, Value)> {
    records
        .iter()
        .map(|(dir, msg)| {
            let mut msg = msg.clone();
            if dir == "out" && msg["method"] == "initialize" {
                msg["params"] = acp_initialize();
            }
            (dir.clone(), msg)
        })
        .collect()
}

fn every_fixture() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut names = Vec::new();
    for (sub, prefix) in [(dir.clone(), ""), (dir.join("agents"), "agents/")] {
        for e in std::fs::read_dir(sub).expect("fixtures") {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            if name.ends_with(".jsonl") {
                names.push(format!("{prefix}{name}"));
            }
        }
    }
    names.sort();
    names
}

fn play_as_standard_client(name: &str) -> Harness {
    let records = fixture(name);
    let mut h = Harness::new(EngineConfig::default());
    crate::support::engine::play(&mut h, &as_standard_client(&records));
    assert_eq!(h.engine.mode(), Some(Mode::Acp), "{name}");
    h
}

/// What a standard client finds wrong in the agent's own traffic, without the proxy: the
/// proxy relays those frames as they are, so its output may have these problems and no other.
fn problems_without_proxy(records: &[(String, Value)]) -> Vec<String> {
    let mut c = StandardClient::default();
    for (dir, msg) in as_standard_client(records) {
        match dir.as_str() {
            "out" => c.client_sent(&msg),
            _ => c.received(&msg),
        }
    }
    c.problems
}

/// The proxy's output to a standard client: valid, and nothing it could not place, apart from
/// what the agent itself sent wrong.
fn check_valid(name: &str, h: &Harness) {
    let mut own = problems_without_proxy(&fixture(name));
    let mut extra = Vec::new();
    for p in &h.standard.problems {
        match own.iter().position(|o| o == p) {
            Some(i) => {
                own.remove(i);
            }
            None => extra.push(p.clone()),
        }
    }
    assert!(extra.is_empty(), "{name}: {extra:#?}");
    assert!(h.standard.checked > 0, "{name}: nothing reached the client");
}

/// A child as a standard client ends up seeing it.
struct WantChild {
    title: Option<&'static str>,
    state: &'static str,
    /// The first entry of its thread (its task), if it has one.
    task: Option<&'static str>,
    /// Its last entry starts with this (its answer), if it has one.
    answer: Option<&'static str>,
    /// Its `description`, where checked.
    description: Option<&'static str>,
}

const fn child(title: &'static str, state: &'static str) -> WantChild {
    WantChild {
        title: Some(title),
        state,
        task: None,
        answer: None,
        description: None,
    }
}

impl WantChild {
    const fn task(mut self, t: &'static str) -> WantChild {
        self.task = Some(t);
        self
    }
    const fn answer(mut self, a: &'static str) -> WantChild {
        self.answer = Some(a);
        self
    }
    const fn described(mut self, d: &'static str) -> WantChild {
        self.description = Some(d);
        self
    }
}

fn check_children(name: &str, h: &Harness, want: &[WantChild]) {
    let std = &h.standard;
    assert_eq!(
        std.children.len(),
        want.len(),
        "{name}: children {:?}",
        std.children
    );
    for (id, w) in std.children.iter().zip(want) {
        let s = std.session(id);
        let lines = s.lines();
        assert_eq!(s.title.as_deref(), w.title, "{name} {id}");
        if let Some(d) = w.description {
            assert_eq!(s.description.as_deref(), Some(d), "{name} {id}");
        }
        assert_eq!(s.state_line(), w.state, "{name} {id}: {lines:?}");
        let parent = s.parent.clone().expect("a child has a parent");
        if let Some(task) = w.task {
            assert_eq!(
                lines.first(),
                Some(&format!("message:{parent}->{id}:{task}")),
                "{name} {id}: the task opens the child's thread"
            );
            let sent = std.session(&parent).lines();
            assert!(
                sent.contains(&format!("message:{parent}->{id}:{task}")),
                "{name} {id}: the parent's thread has the task it sent: {sent:?}"
            );
        }
        if let Some(answer) = w.answer {
            assert!(
                lines
                    .last()
                    .is_some_and(|l| l.starts_with(&format!("agent:{answer}"))),
                "{name} {id}: the child's thread ends with its answer: {lines:?}"
            );
        }
        // A child the proxy made out of a spawn tool call: the tool call points at it and,
        // once the child ended with an answer to its task, the parent got it as a message.
        if id.starts_with("acp-proxy-sub-") {
            let parent_thread = &std.session(&parent).entries;
            let pointing = parent_thread
                .iter()
                .any(|e| matches!(e, StdEntry::Tool { sessions, .. } if sessions.contains(id)));
            assert!(
                pointing,
                "{name} {id}: the spawn tool call points at the child"
            );
            let replies = parent_thread
                .iter()
                .filter(|e| matches!(e, StdEntry::Message(_, from, ..) if from == id))
                .count();
            // An answer goes back as a message when it answers a task the client saw.
            if w.answer.is_none() || w.task.is_none() {
                assert_eq!(replies, 0, "{name} {id}: no message to the parent");
            }
            if let (Some(answer), Some(_), "idle:end_turn") = (w.answer, w.task, w.state) {
                let reply = parent_thread.iter().any(|e| {
                    matches!(e, StdEntry::Message(_, from, to, t) if from == id && *to == parent && t.starts_with(answer))
                });
                assert!(reply, "{name} {id}: the answer reached the parent");
            }
        }
    }
}

const ALPHA: &str = "SUBAGENT:alpha list the text files";
const ALPHA_FOUND: &str = "Subagent alpha found the files";

#[test]
fn every_fixture_validates_as_standard_subagents() {
    // Every capture with subagents, as a standard client ends up seeing its children.
    const PI_A: &str = "SUB-ANSWER a: the folder holds a.txt and b.txt; a.txt was read.";
    // AgentPool's children each read one file.
    let read = |file: &str| match file {
        "a" => child("Read a.txt", "idle:end_turn")
            .task("Read the file a.txt and tell me what it says.")
            .answer("The file a.txt says: hello from a"),
        _ => child("Read b.txt", "idle:end_turn")
            .task("Read the file b.txt and tell me what it says.")
            .answer("The file b.txt says: hello from b"),
    };
    let modelled: Vec<(&str, Vec<WantChild>)> = vec![
        (
            "claude-agent-acp-0.23.1-legacy-one-subagent.jsonl",
            vec![child("Survey text files", "idle:end_turn")
                .described("general-purpose")
                .task(ALPHA)
                .answer(ALPHA_FOUND)],
        ),
        (
            "claude-agent-acp-0.101.0-native-one-subagent.jsonl",
            vec![child("Survey text files", "idle:end_turn")
                .task(ALPHA)
                .answer(ALPHA_FOUND)],
        ),
        (
            // A background child: this wire reports no end of it.
            "claude-agent-acp-0.101.0-transcript-flag.jsonl",
            vec![child("Survey text files", "running")
                .task(ALPHA)
                .answer(ALPHA_FOUND)],
        ),
        (
            "agents/qwen-0.24.4-foreground-one-subagent.jsonl",
            vec![child("Survey text files", "idle:end_turn")
                .described("general-purpose")
                .task(ALPHA)
                .answer(ALPHA_FOUND)],
        ),
        (
            "agents/qwen-0.24.4-foreground-two-subagents.jsonl",
            vec![
                child("First survey", "idle:end_turn")
                    .task(ALPHA)
                    .answer(ALPHA_FOUND),
                child("Second survey", "idle:end_turn")
                    .task("SUBAGENT:beta list the text files")
                    .answer("Subagent beta found the files"),
            ],
        ),
        (
            "agents/qwen-0.24.4-foreground-parent-reload.jsonl",
            vec![child("Survey text files", "idle:end_turn")
                .task(ALPHA)
                .answer(ALPHA_FOUND)],
        ),
        (
            // The agent's end notice closes each background child's thread.
            "agents/qwen-0.24.4-background-one-subagent.jsonl",
            vec![child("Survey text files", "idle:end_turn")
                .task(ALPHA)
                .answer("Background agent")],
        ),
        (
            "agents/qwen-0.24.4-background-two-subagents.jsonl",
            vec![
                child("First survey", "idle:end_turn")
                    .task(ALPHA)
                    .answer("Background agent"),
                child("Second survey", "idle:end_turn")
                    .task("SUBAGENT:beta list the text files")
                    .answer("Background agent"),
            ],
        ),
        (
            // The child's work comes from the agent's replay, which the proxy asks for once the
            // child ended; this capture holds no answer to that request (the replay dumps do:
            // `opencode_children_come_from_the_agents_replay`).
            "agents/opencode-1.18.33-one-subagent.jsonl",
            vec![child("Survey text files", "idle:end_turn")
                .described("general")
                .task(ALPHA)],
        ),
        (
            "agents/opencode-1.18.33-two-subagents.jsonl",
            vec![
                child("First survey", "idle:end_turn").task(ALPHA),
                child("Second survey", "idle:end_turn").task("SUBAGENT:beta list the text files"),
            ],
        ),
        ("agents/opencode-1.18.33-child-load.jsonl", vec![]),
        (
            "agents/pi-0.87.1-one-subagent.jsonl",
            vec![child("Survey a.txt", "idle:end_turn")
                .described("general-purpose")
                .task("SUBAGENT:a List the folder, read a.txt and report.")
                .answer(PI_A)],
        ),
        (
            "agents/pi-0.87.1-two-subagents.jsonl",
            vec![
                child("Survey a.txt", "idle:end_turn")
                    .task("SUBAGENT:a List the folder, read a.txt and report.")
                    .answer(PI_A),
                child("Survey b.txt", "idle:end_turn")
                    .task("SUBAGENT:b List the folder, read b.txt and report.")
                    .answer("SUB-ANSWER b: the folder holds a.txt and b.txt; b.txt was read."),
            ],
        ),
        (
            "agents/pi-0.87.1-background.jsonl",
            vec![child("Survey a.txt", "running")
                .task("SUBAGENT:a SLOW List the folder, read a.txt and report.")],
        ),
        (
            // The agent's replay carries the answer, not the task.
            "agents/pi-0.87.1-parent-reload.jsonl",
            vec![child("Survey a.txt", "idle:end_turn").answer(PI_A)],
        ),
        (
            "agents/agentpool-2.9.18-inline-one-subagent.jsonl",
            vec![read("a")],
        ),
        (
            "agents/agentpool-2.9.18-inline-two-subagents.jsonl",
            vec![
                read("a").described("helper"),
                read("b").described("helper2"),
            ],
        ),
        (
            "agents/agentpool-2.9.18-tool_box-one-subagent.jsonl",
            vec![read("a")],
        ),
        (
            "agents/agentpool-2.9.18-tool_box-two-subagents.jsonl",
            vec![read("a"), read("b")],
        ),
        (
            "agents/agentpool-2.9.18-tool_box-same-agent-twice.jsonl",
            vec![read("a"), read("b")],
        ),
        (
            // Gemini runs its subagents out of sight: no task, no answer, the proxy's note.
            "agents/gemini-0.61.0-one-subagent.jsonl",
            vec![child("codebase_investigator", "idle:end_turn")
                .described("Delegating to agent 'codebase_investigator'")],
        ),
        (
            "agents/gemini-0.61.0-two-subagents-yolo.jsonl",
            vec![
                child("codebase_investigator", "idle:end_turn"),
                child("generalist", "idle:end_turn"),
            ],
        ),
        (
            "agents/goose-written-one-subagent.jsonl",
            vec![child("Survey the text files", "idle:end_turn")
                .task("Survey the text files\nand report what they hold.")
                .answer("a.txt says hello; b.txt is empty.")],
        ),
        (
            "agents/cursor-written-two-subagents.jsonl",
            vec![
                child("Survey text files", "idle:end_turn")
                    .task("List the text files and say what they hold.")
                    .answer("a.txt and b.txt; a.txt says hello."),
                child("Watch the build", "running").task("Watch the build and report failures."),
            ],
        ),
        (
            "agents/dsh-1.3-written-two-subagents.jsonl",
            vec![
                child("Auth scout", "idle:end_turn")
                    .described("spawn")
                    .task("Look for the auth code and check its tests.")
                    .answer("Auth is in src/auth.rs and tested."),
                child("Try a fix", "idle:error")
                    .described("fork")
                    .task("Try the fix in a fork."),
            ],
        ),
        (
            "agents/codex-2.6.0-standard-one-subagent.jsonl",
            // The agent's own children, described but untitled, relayed as they are.
            vec![WantChild {
                title: None,
                ..child("", "idle:end_turn").answer("Subagent alpha found a.txt and b.txt.")
            }],
        ),
        (
            "agents/codex-2.6.0-standard-two-subagents.jsonl",
            vec![
                WantChild {
                    title: None,
                    ..child("", "idle:end_turn").answer("Subagent alpha found a.txt and b.txt.")
                },
                WantChild {
                    title: None,
                    ..child("", "idle:end_turn").answer("Subagent beta found a.txt and b.txt.")
                },
            ],
        ),
        (
            "agents/codex-2.6.0-hidden-one-subagent.jsonl",
            vec![child(
                "SUBAGENT:alpha list the text files in the project",
                "idle:end_turn",
            )
            .task("SUBAGENT:alpha list the text files in the project")],
        ),
        ("agents/codex-0.16.0-zed-adapter-one-subagent.jsonl", vec![]),
    ];
    let mut seen = Vec::new();
    for name in every_fixture() {
        let h = play_as_standard_client(&name);
        check_valid(&name, &h);
        if let Some((_, want)) = modelled.iter().find(|(n, _)| *n == name) {
            check_children(&name, &h, want);
            seen.push(name.clone());
        }
        for c in &h.standard.children {
            let s = h.standard.session(c);
            assert!(
                s.title.is_some() || !c.starts_with("acp-proxy-sub-"),
                "{name} {c}: titled"
            );
            assert!(s.state.is_some(), "{name} {c}: a state");
        }
    }
    assert_eq!(
        seen.len(),
        modelled.len(),
        "every modelled fixture was played: {seen:?}"
    );
    assert_eq!(
        seen,
        every_fixture(),
        "every capture has its expectations here"
    );
}

#[test]
fn native_standard_subagents_pass_byte_for_byte() {
    for name in [
        "claude-agent-acp-0.101.0-native-one-subagent.jsonl",
        "agents/codex-2.6.0-standard-one-subagent.jsonl",
        "agents/codex-2.6.0-standard-two-subagents.jsonl",
    ] {
        let records = as_standard_client(&fixture(name));
        let h = play_as_standard_client(name);
        let from_agent: Vec<bytes::Bytes> = records
            .iter()
            .filter(|(d, _)| d == "in")
            .map(|(_, m)| line(m))
            .collect();
        assert_eq!(
            h.to_client, from_agent,
            "{name}: the client got the agent's frames, as sent"
        );
        let to_agent: Vec<&Value> = records
            .iter()
            .filter(|(d, _)| d == "out")
            .map(|(_, m)| m)
            .collect();
        assert_eq!(
            h.to_agent.iter().collect::<Vec<_>>(),
            to_agent,
            "{name}: and the agent the client's"
        );
    }
}

const S: &str = "sess-1";

/// A standard client's session with an agent called `agent` that loads sessions.
fn standard_session(display: acp_proxy::engine::SubagentDisplay) -> Harness {
    let mut h = Harness::new(EngineConfig {
        display,
        ..EngineConfig::default()
    });
    let id = h.request("initialize", acp_initialize());
    h.agent(
        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "fake"}}}),
    );
    let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": S}}));
    h
}

fn legacy_spawn(h: &mut Harness, id: &str, task: &str) {
    let meta = frames::spawn_meta(None);
    h.update(S, frames::spawn_call(id, &meta));
    h.update(
        S,
        frames::spawn_task(id, task, &format!("do {task}"), &meta),
    );
}

#[test]
fn a_legacy_child_is_a_child_session_the_client_follows() {
    let mut h = standard_session(acp_proxy::engine::SubagentDisplay::Auto);
    assert_eq!(h.engine.mode(), Some(Mode::Acp));
    assert!(
        h.to_agent[0]["params"]["clientCapabilities"]["_meta"].is_null(),
        "the client's own initialize: no opt-in added"
    );
    legacy_spawn(&mut h, "sp", "survey");
    h.update(S, frames::child_tool("sp", "c1", "Read a.txt", "pending"));
    h.update(
        S,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
        "_meta": {"claudeCode": {"toolName": "Read", "toolResponse": {}}}}),
    );
    // The child asks for permission: the client gets it under the child's session.
    h.agent(
        json!({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission",
        "params": {"sessionId": S, "toolCall": {"toolCallId": "c1"}, "options": []}}),
    );
    let child = child_session_id(S, "sp");
    assert_eq!(
        h.zed.requests.last(),
        Some(&("session/request_permission".to_owned(), child.clone()))
    );
    h.update(S, frames::child_text("sp", "a.txt says hi"));
    h.update(S, frames::spawn_result("sp", "completed", "a.txt says hi"));
    let std = &h.standard;
    assert!(std.problems.is_empty(), "{:#?}", std.problems);
    assert_eq!(std.children, std::slice::from_ref(&child));
    let kid = std.session(&child);
    assert_eq!(kid.title.as_deref(), Some("survey"));
    assert_eq!(kid.state_line(), "idle:end_turn");
    assert_eq!(
        kid.lines(),
        [
            format!("message:{S}->{child}:do survey"),
            "tool:c1:completed".to_owned(),
            "agent:a.txt says hi".to_owned(),
        ]
    );
    // The parent: the spawn tool call pointing at the child, the task, the answer.
    let parent = std.session(S).lines();
    assert_eq!(
        parent,
        [
            "tool:sp:completed".to_owned(),
            format!("message:{S}->{child}:do survey"),
            format!("message:{child}->{S}:a.txt says hi"),
        ]
    );
    // Nothing of the child is in the parent's session.
    assert!(!h.to_client.iter().any(|l| {
        let v: Value = serde_json::from_slice(l).expect("JSON");
        v["params"]["sessionId"] == S && v["params"]["update"]["toolCallId"] == "c1"
    }));
}

#[test]
fn a_standard_client_loads_stops_and_closes_a_legacy_child_as_zed_does() {
    let mut h = standard_session(acp_proxy::engine::SubagentDisplay::Acp);
    let prompt = h.request("session/prompt", json!({"sessionId": S, "prompt": []}));
    legacy_spawn(&mut h, "sp", "survey");
    h.update(S, frames::child_text("sp", "working"));
    let child = child_session_id(S, "sp");
    // session/load: served by the proxy, the task as the incoming message.
    let sent = h.to_agent.len();
    let mut reader = crate::support::standard::StandardClient::default();
    let id = h.load_child(&child);
    assert_eq!(h.response(id).expect("answered")["result"], json!({}));
    assert_eq!(h.to_agent.len(), sent, "never forwarded");
    let served: Vec<Value> = h
        .to_client
        .iter()
        .rev()
        .take(3)
        .map(|l| serde_json::from_slice(l).expect("JSON"))
        .collect();
    assert_eq!(
        served[2]["params"]["update"]["sessionUpdate"],
        "session_message"
    );
    assert_eq!(
        served[2]["params"]["update"]["recipientSessionId"],
        json!(child)
    );
    assert_eq!(served[1]["params"]["update"]["content"]["text"], "working");
    for v in served.iter().rev() {
        reader.received(v);
    }
    // Stop: the agent cannot stop this child alone; the parent's turn is cancelled.
    h.client(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": child}}));
    let cancel = h.to_agent.last().expect("sent");
    assert_eq!(
        (
            cancel["method"].as_str(),
            cancel["params"]["sessionId"].as_str()
        ),
        (Some("session/cancel"), Some(S))
    );
    h.agent(json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "cancelled"}}));
    assert_eq!(h.standard.session(&child).state_line(), "idle:cancelled");
    // Prompting a child is refused; closing it is answered.
    let id = h.request("session/prompt", json!({"sessionId": child, "prompt": []}));
    assert_eq!(h.response(id).expect("answered")["error"]["code"], -32602);
    let id = h.request("session/close", json!({"sessionId": child}));
    assert_eq!(h.response(id).expect("answered")["result"], json!({}));
    assert!(h.standard.problems.is_empty(), "{:#?}", h.standard.problems);
}

#[test]
fn a_child_whose_end_never_came_is_unknown_when_the_turn_ends() {
    let mut h = standard_session(acp_proxy::engine::SubagentDisplay::Acp);
    let prompt = h.request("session/prompt", json!({"sessionId": S, "prompt": []}));
    legacy_spawn(&mut h, "sp", "survey");
    h.agent(json!({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "end_turn"}}));
    let child = child_session_id(S, "sp");
    assert_eq!(h.standard.session(&child).state_line(), "unknown");
    // A late end still arrives.
    h.update(S, frames::spawn_result("sp", "failed", "gave up"));
    assert_eq!(h.standard.session(&child).state_line(), "idle:error");
    assert!(h.standard.problems.is_empty(), "{:#?}", h.standard.problems);
}

#[test]
fn a_nested_child_is_announced_in_its_parent_childs_session() {
    let mut h = standard_session(acp_proxy::engine::SubagentDisplay::Acp);
    legacy_spawn(&mut h, "outer", "outer task");
    let meta = frames::spawn_meta(Some("outer"));
    h.update(S, frames::spawn_call("inner", &meta));
    h.update(
        S,
        frames::spawn_task("inner", "inner task", "do inner", &meta),
    );
    h.update(S, frames::child_text("inner", "deep"));
    h.update(S, frames::spawn_result("inner", "completed", "deep"));
    h.update(S, frames::child_text("outer", "outer done"));
    h.update(S, frames::spawn_result("outer", "completed", "outer done"));
    let outer = child_session_id(S, "outer");
    let inner = child_session_id(&outer, "inner");
    let std = &h.standard;
    assert!(std.problems.is_empty(), "{:#?}", std.problems);
    assert_eq!(std.children_of(S), std::slice::from_ref(&outer));
    assert_eq!(std.children_of(&outer), std::slice::from_ref(&inner));
    assert_eq!(std.session(&inner).state_line(), "idle:end_turn");
    assert!(std
        .session(&inner)
        .lines()
        .contains(&"agent:deep".to_owned()));
    let outer_lines = std.session(&outer).lines();
    assert!(
        outer_lines.contains(&"tool:inner:completed".to_owned()),
        "{outer_lines:?}"
    );
    assert!(
        outer_lines.contains(&format!("message:{inner}->{outer}:deep")),
        "{outer_lines:?}"
    );
}

#[test]
fn a_reopened_parent_announces_its_children_again_with_their_final_state() {
    let mut h = standard_session(acp_proxy::engine::SubagentDisplay::Acp);
    let run = |h: &mut Harness| {
        legacy_spawn(h, "sp", "survey");
        h.update(S, frames::child_text("sp", "found it"));
        h.update(S, frames::spawn_result("sp", "completed", "found it"));
    };
    run(&mut h);
    let id = h.request(
        "session/load",
        json!({"sessionId": S, "cwd": "/p", "mcpServers": []}),
    );
    run(&mut h);
    h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    let child = child_session_id(S, "sp");
    let std = &h.standard;
    assert!(std.problems.is_empty(), "{:#?}", std.problems);
    assert_eq!(std.session(&child).state_line(), "idle:end_turn");
    assert_eq!(
        std.session(S).lines(),
        [
            "tool:sp:completed".to_owned(),
            format!("message:{S}->{child}:do survey"),
            format!("message:{child}->{S}:found it"),
        ],
        "the reopened parent has the child's task and answer once"
    );
    assert_eq!(
        std.session(&child).lines(),
        [
            format!("message:{S}->{child}:do survey"),
            "agent:found it".to_owned()
        ],
        "the replay did not double the child"
    );
}

#[test]
fn draft_announcements_become_standard_ones() {
    let mut h = standard_session(acp_proxy::engine::SubagentDisplay::Acp);
    h.update(
        S,
        json!({"sessionUpdate": "subagent_spawned", "subagentSessionId": "old-1",
        "name": "Scout", "task": "scout the repo"}),
    );
    let child_event = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "old-1",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "scouted"},
            "_meta": {"claudeCode": {"parentToolUseId": "whatever"}}}}});
    h.agent(child_event.clone());
    assert_eq!(
        h.to_client.last(),
        Some(&line(&child_event)),
        "the child's own traffic, as sent"
    );
    h.update(S, json!({"sessionUpdate": "subagent_state_update", "subagentSessionId": "old-1", "state": "completed"}));
    let std = &h.standard;
    assert!(std.problems.is_empty(), "{:#?}", std.problems);
    let kid = std.session("old-1");
    assert_eq!(kid.title.as_deref(), Some("Scout"));
    assert_eq!(kid.state_line(), "idle:end_turn");
    assert_eq!(
        kid.lines(),
        [
            format!("message:{S}->old-1:scout the repo"),
            "agent:scouted".to_owned()
        ]
    );
    assert!(
        h.notes.iter().all(|n| !n.contains("whatever")),
        "{:?}",
        h.notes
    );
    // The agent's own child is the agent's to load, stop and close: the requests go to it.
    for (method, params) in [
        (
            "session/load",
            json!({"sessionId": "old-1", "cwd": "/p", "mcpServers": []}),
        ),
        ("session/close", json!({"sessionId": "old-1"})),
    ] {
        let id = h.request(method, params.clone());
        let sent = h.to_agent.last().expect("forwarded");
        assert_eq!(
            (&sent["id"], &sent["method"], &sent["params"]),
            (&json!(id), &json!(method), &params)
        );
    }
    let cancel =
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "old-1"}});
    h.client(cancel.clone());
    assert_eq!(h.to_agent.last(), Some(&cancel));
}

#[test]
fn opencode_children_come_from_the_agents_replay() {
    // Runs of this proxy in which OpenCode answered the proxy's replay requests: the answer
    // reaches the standard client after the child's end, in the child's thread and as its
    // message to the parent.
    for (dump, answers) in [
        (
            "e2e/opencode-1.18.33-one-replay.dump.jsonl",
            &["SUB-ANSWER alpha: the project holds a.txt, b.txt."][..],
        ),
        (
            "e2e/opencode-1.18.33-two-replay.dump.jsonl",
            &[
                "SUB-ANSWER alpha: the project holds a.txt, b.txt.",
                "SUB-ANSWER beta: the project holds a.txt, b.txt.",
            ][..],
        ),
    ] {
        let records = as_standard_client(&crate::support::engine::dump_fixture(dump));
        let mut h = Harness::new(EngineConfig::default());
        crate::support::engine::play(&mut h, &records);
        assert_eq!(h.engine.mode(), Some(Mode::Acp), "{dump}");
        let std = &h.standard;
        assert!(std.problems.is_empty(), "{dump}: {:#?}", std.problems);
        assert_eq!(std.children.len(), answers.len(), "{dump}");
        for (id, answer) in std.children.iter().zip(answers) {
            let kid = std.session(id);
            let parent = kid.parent.clone().expect("a parent");
            assert_eq!(kid.state_line(), "idle:end_turn", "{dump} {id}");
            let lines = kid.lines();
            assert_eq!(
                lines.last(),
                Some(&format!("agent:{answer}")),
                "{dump} {id}"
            );
            assert!(
                std.session(&parent)
                    .lines()
                    .contains(&format!("message:{id}->{parent}:{answer}")),
                "{dump} {id}: the answer reached the parent"
            );
        }
    }
}
