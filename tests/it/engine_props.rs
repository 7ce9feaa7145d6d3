//! Property tests on the engine (Zed mode) and on the line framing.
//!
//! Sessions are generated as one op list per actor: the parent, each Claude-legacy subagent
//! (spawn, refinement, tagged child tool calls and text, untagged post-hook updates,
//! permission requests, completion; one may be nested in another), each standard ACP child
//! (`subagent_update`, `session_message`, events under its own id, permission requests, end),
//! and the client (prompts, lists, loads of and prompts to child ids, Stop on children,
//! answers). The lists are interleaved arbitrarily, keeping each actor's order. Every agent
//! frame carries a unique marker, so its fate can be followed:
//! - parent frames reach the client exactly once, byte-identical, in order (spawn cards in
//!   the same order, rewritten; an update of a tool call the parent never had, as that tool
//!   call); permission requests exactly once;
//! - a child's frame is recorded in exactly one child thread, the right one, and reaches the
//!   client at most once, and then only under that child's id (after the client opened it);
//! - every client request is forwarded to the agent exactly once or answered by the proxy, and
//!   gets exactly one response; every agent request reaches the client once and its answer
//!   the agent once;
//! - Zed (1.18 or its main branch) never sees an unknown update kind, a request for a session
//!   it does not know, an update before its tool call or a permission request it refuses.

use std::collections::{HashMap, HashSet};

use acp_proxy::subagents::ids::{child_session_id, synthesized_spawn_id};
use acp_proxy::transport::framing::{Frame, LineCodec};
use bytes::BytesMut;
use proptest::prelude::*;
use serde_json::{json, Value};
use tokio_util::codec::Decoder;

use crate::support;
use crate::support::engine::{line, Harness};
use crate::support::zed_model::ZedRules;

const S: &str = "s1";

#[derive(Debug, Clone)]
enum Op {
    ParentText,
    ParentTool,
    ParentPerm,
    /// A child event naming a spawn that never happens.
    Orphan,
    Spawn {
        k: usize,
        inside: Option<usize>,
    },
    Refine {
        k: usize,
        inside: Option<usize>,
    },
    ChildTool {
        k: usize,
        j: usize,
    },
    PostHook {
        k: usize,
        j: usize,
    },
    ChildText {
        k: usize,
    },
    ChildPerm {
        k: usize,
        j: usize,
    },
    Complete {
        k: usize,
        ok: bool,
    },
    Announce {
        k: usize,
    },
    Message {
        k: usize,
    },
    StdText {
        k: usize,
    },
    StdTool {
        k: usize,
        j: usize,
    },
    StdPerm {
        k: usize,
        j: usize,
    },
    StdEnd {
        k: usize,
        ok: bool,
    },
    Prompt,
    List,
    LoadChild(usize),
    PromptChild(usize),
    CancelChild(usize),
    AgentAnswer,
    ClientAnswer,
}

fn legacy_events(k: usize) -> impl Strategy<Value = Vec<Op>> {
    let ev = prop_oneof![
        (0..3usize).prop_map(move |j| Op::ChildTool { k, j }),
        (0..3usize).prop_map(move |j| Op::PostHook { k, j }),
        Just(Op::ChildText { k }),
        (0..3usize).prop_map(move |j| Op::ChildPerm { k, j }),
    ];
    prop::collection::vec(ev, 0..8)
}

fn legacy_actor(k: usize, inside: Option<usize>) -> impl Strategy<Value = Vec<Op>> {
    (legacy_events(k), prop::option::of(any::<bool>())).prop_map(move |(events, end)| {
        let mut ops = vec![Op::Spawn { k, inside }, Op::Refine { k, inside }];
        ops.extend(events);
        if let Some(ok) = end {
            ops.push(Op::Complete { k, ok });
        }
        ops
    })
}

fn standard_actor(k: usize) -> impl Strategy<Value = Vec<Op>> {
    let ev = prop_oneof![
        Just(Op::Message { k }),
        Just(Op::StdText { k }),
        (0..3usize).prop_map(move |j| Op::StdTool { k, j }),
        (0..3usize).prop_map(move |j| Op::StdPerm { k, j }),
    ];
    (
        prop::collection::vec(ev, 0..6),
        prop::option::of(any::<bool>()),
    )
        .prop_map(move |(events, end)| {
            let mut ops = vec![Op::Announce { k }];
            ops.extend(events);
            if let Some(ok) = end {
                ops.push(Op::StdEnd { k, ok });
            }
            ops
        })
}

fn parent_actor() -> impl Strategy<Value = Vec<Op>> {
    let ev = prop_oneof![
        Just(Op::ParentText),
        Just(Op::ParentTool),
        Just(Op::ParentPerm),
        Just(Op::Orphan),
        Just(Op::AgentAnswer),
    ];
    prop::collection::vec(ev, 0..8)
}

fn client_actor() -> impl Strategy<Value = Vec<Op>> {
    let ev = prop_oneof![
        3 => Just(Op::Prompt),
        1 => Just(Op::List),
        1 => (0..6usize).prop_map(Op::LoadChild),
        1 => (0..6usize).prop_map(Op::PromptChild),
        1 => (0..6usize).prop_map(Op::CancelChild),
        3 => Just(Op::ClientAnswer),
    ];
    prop::collection::vec(ev, 0..10)
}

/// Actors, then merged keeping each actor's order (choices pick the next actor).
fn session() -> impl Strategy<Value = Vec<Op>> {
    (
        1..=3usize,
        any::<bool>(),
        0..=2usize,
        parent_actor(),
        client_actor(),
        prop::collection::vec(any::<u8>(), 0..200),
    )
        .prop_flat_map(|(n_legacy, nested, n_std, parent, client, choices)| {
            let mut legacy: Vec<BoxedStrategy<Vec<Op>>> = (0..n_legacy)
                .map(|k| legacy_actor(k, None).boxed())
                .collect();
            if nested {
                // Spawn 3 runs inside spawn 0's child: its ops follow spawn 0's spawn.
                legacy.push(legacy_actor(3, Some(0)).boxed());
            }
            let std: Vec<BoxedStrategy<Vec<Op>>> =
                (0..n_std).map(|k| standard_actor(k).boxed()).collect();
            (
                legacy,
                std,
                Just(parent),
                Just(client),
                Just(choices),
                Just(nested),
            )
        })
        .prop_map(|(legacy, std, parent, client, choices, nested)| {
            let mut actors: Vec<Vec<Op>> = Vec::new();
            let mut legacy = legacy;
            if nested {
                let inner = legacy.pop().unwrap_or_default();
                // After spawn 0 and its refinement.
                let outer = &mut legacy[0];
                let tail = outer.split_off(2);
                outer.extend(inner);
                outer.extend(tail);
            }
            actors.extend(legacy);
            actors.extend(std);
            actors.push(parent);
            actors.push(client);
            let mut next = vec![0usize; actors.len()];
            let mut merged = Vec::new();
            let mut c = choices.into_iter().cycle();
            loop {
                let live: Vec<usize> = (0..actors.len())
                    .filter(|a| next[*a] < actors[*a].len())
                    .collect();
                if live.is_empty() {
                    break;
                }
                let a = live[usize::from(c.next().unwrap_or(0)) % live.len()];
                merged.push(actors[a][next[a]].clone());
                next[a] += 1;
            }
            merged
        })
}

/// Where an agent frame must end up.
#[derive(Debug, Clone, PartialEq)]
enum Home {
    /// The client, exactly once, byte-identical, in order.
    Parent(Vec<u8>),
    /// The client, exactly once, in order, as a titled `tool_call`: an update of a tool call
    /// the parent's thread does not hold, repaired so that Zed shows it.
    Repaired,
    /// The client, exactly once as a spawn card (rewritten), in order.
    Card,
    /// The client, exactly once: a request (possibly under another session id).
    Request(String),
    /// Exactly one child thread: this one.
    Child(String),
}

struct Run {
    h: Harness,
    n: u64,
    homes: Vec<(String, Home)>,
    child_tools: HashSet<(usize, usize)>,
    /// Child tool calls whose orphan updates made them a tool call of the parent's thread.
    parent_tools: HashSet<(usize, usize)>,
    /// Client request ids sent, and those the agent saw (in order, unanswered).
    client_ids: Vec<u64>,
    agent_pending: Vec<(Value, String)>,
    /// The agent's answers, by client request id, as sent.
    agent_answers: HashMap<u64, (Vec<u8>, String)>,
    /// Agent request ids sent; those the client saw and has not answered.
    agent_ids: Vec<String>,
    client_answered: HashSet<String>,
    /// Children the client opened successfully, and every id it tried.
    loaded: HashSet<String>,
    load_tried: HashSet<String>,
}

fn legacy_child(k: usize, inside: Option<usize>) -> String {
    match inside {
        Some(o) => child_session_id(&child_session_id(S, &format!("sp{o}")), &format!("sp{k}")),
        None => child_session_id(S, &format!("sp{k}")),
    }
}

fn std_child(k: usize) -> String {
    child_session_id(S, &synthesized_spawn_id(&format!("kid{k}")))
}

/// The child ids the client may name (some never exist).
fn any_child(i: usize) -> String {
    match i {
        0..=2 => legacy_child(i, None),
        3 => legacy_child(3, Some(0)),
        4 => std_child(0),
        _ => child_session_id("elsewhere", "x"),
    }
}

impl Run {
    fn marker(&mut self, home: Home) -> String {
        self.n += 1;
        let m = format!("M{}", self.n);
        self.homes.push((m.clone(), home));
        m
    }

    fn update(&mut self, session: &str, update: Value) -> Vec<u8> {
        let msg = json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": session, "update": update}});
        self.h.agent(msg.clone());
        line(&msg).to_vec()
    }

    fn frame_of(session: &str, update: &Value) -> Vec<u8> {
        line(&json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": session, "update": update}}))
        .to_vec()
    }

    /// Send an update whose home is the parent, unchanged.
    fn parent_update(&mut self, mut update: Value) {
        self.n += 1;
        let m = format!("M{}", self.n);
        update["_meta"]["m"] = json!(m);
        let frame = Run::frame_of(S, &update);
        self.homes.push((m, Home::Parent(frame)));
        self.update(S, update);
    }

    fn child_meta(spawn: usize, m: &str, tool_name: Option<&str>) -> Value {
        let mut cc = json!({"parentToolUseId": format!("sp{spawn}")});
        if let Some(t) = tool_name {
            cc["toolName"] = json!(t);
        }
        json!({"claudeCode": cc, "m": m})
    }

    fn permission(&mut self, session: &str, tool: &str) {
        let id = format!("perm{}", self.n + 1);
        let m = self.marker(Home::Request(id.clone()));
        self.agent_ids.push(id.clone());
        self.h.agent(json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
            "params": {"sessionId": session, "toolCall": {"toolCallId": tool},
                "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}], "_meta": {"m": m}}}));
    }

    fn client_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.h.request(method, params);
        self.client_ids.push(id);
        if let Some(got) = self.h.to_agent.last() {
            if got["id"] == json!(id) && got.get("method").is_some() {
                self.agent_pending
                    .push((got["id"].clone(), method.to_owned()));
            }
        }
        id
    }

    fn step(&mut self, op: &Op) {
        match *op {
            Op::ParentText => self.parent_update(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "parent"}}),
            ),
            Op::ParentTool => {
                let t = format!("pt{}", self.n);
                self.parent_update(json!({"sessionUpdate": "tool_call", "toolCallId": t, "title": "Read", "kind": "read", "status": "completed"}));
            }
            Op::ParentPerm => {
                let t = format!("pt{}", self.n);
                self.permission(S, &t);
            }
            Op::Orphan => self.parent_update(json!({"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "orphan"}, "_meta": {"claudeCode": {"parentToolUseId": "never"}}})),
            Op::Spawn { k, inside } => {
                let home = match inside {
                    Some(o) => Home::Child(legacy_child(o, None)),
                    None => Home::Card,
                };
                let m = self.marker(home);
                let mut meta = json!({"claudeCode": {"toolName": "Agent"}, "m": m});
                if let Some(o) = inside {
                    meta["claudeCode"]["parentToolUseId"] = json!(format!("sp{o}"));
                }
                self.update(S, json!({"sessionUpdate": "tool_call", "toolCallId": format!("sp{k}"), "title": "Task",
                    "kind": "think", "status": "pending", "rawInput": {}, "_meta": meta}));
            }
            Op::Refine { k, inside } => {
                let home = match inside {
                    Some(o) => Home::Child(legacy_child(o, None)),
                    None => Home::Card,
                };
                let m = self.marker(home);
                let mut meta = json!({"claudeCode": {"toolName": "Agent"}, "m": m});
                if let Some(o) = inside {
                    meta["claudeCode"]["parentToolUseId"] = json!(format!("sp{o}"));
                }
                self.update(S, json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("sp{k}"),
                    "title": format!("task {k}"), "rawInput": {"description": format!("task {k}"), "prompt": format!("do {k}"),
                    "subagent_type": "general-purpose"}, "_meta": meta}));
            }
            Op::ChildTool { k, j } => {
                let inside = (k == 3).then_some(0);
                let m = self.marker(Home::Child(legacy_child(k, inside)));
                self.update(S, json!({"sessionUpdate": "tool_call", "toolCallId": format!("c{k}-{j}"), "title": "Glob",
                    "kind": "search", "status": "pending", "_meta": Run::child_meta(k, &m, Some("Glob"))}));
                self.child_tools.insert((k, j));
            }
            Op::PostHook { k, j } => {
                let inside = (k == 3).then_some(0);
                let update_of = |m: &str| json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("c{k}-{j}"),
                    "status": "completed", "_meta": {"claudeCode": {"toolName": "Glob", "toolResponse": {}}, "m": m}});
                if self.child_tools.contains(&(k, j)) {
                    let m = self.marker(Home::Child(legacy_child(k, inside)));
                    self.update(S, update_of(&m));
                } else if self.parent_tools.insert((k, j)) {
                    // Nothing tells whose it is: it stays in the parent, as the tool call
                    // (Zed takes no update before its tool call).
                    let m = self.marker(Home::Repaired);
                    self.update(S, update_of(&m));
                } else {
                    // The parent's thread holds it now: later updates pass as sent.
                    self.n += 1;
                    let m = format!("M{}", self.n);
                    let u = update_of(&m);
                    self.homes.push((m, Home::Parent(Run::frame_of(S, &u))));
                    self.update(S, u);
                }
            }
            Op::ChildText { k } => {
                let inside = (k == 3).then_some(0);
                let m = self.marker(Home::Child(legacy_child(k, inside)));
                self.update(S, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "child"},
                    "_meta": Run::child_meta(k, &m, None)}));
            }
            Op::ChildPerm { k, j } => self.permission(S, &format!("c{k}-{j}")),
            Op::Complete { k, ok } => {
                let inside = (k == 3).then_some(0);
                let home = match inside {
                    Some(o) => Home::Child(legacy_child(o, None)),
                    None => Home::Card,
                };
                let m = self.marker(home);
                let mut meta = json!({"claudeCode": {"toolName": "Agent"}, "m": m});
                if let Some(o) = inside {
                    meta["claudeCode"]["parentToolUseId"] = json!(format!("sp{o}"));
                }
                self.update(S, json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("sp{k}"),
                    "status": if ok { "completed" } else { "failed" },
                    "content": [{"type": "content", "content": {"type": "text", "text": "result"}}], "_meta": meta}));
            }
            Op::Announce { k } => {
                self.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": format!("kid{k}"),
                    "title": format!("std {k}"), "capabilities": {"cancel": {}}, "state": {"state": "running"}}));
            }
            Op::Message { k } => {
                // Sent on the parent and on the child, as Claude does: recorded once.
                let m = self.marker(Home::Child(std_child(k)));
                let msg = json!({"sessionUpdate": "session_message", "messageId": format!("msg-{m}"),
                    "senderSessionId": S, "recipientSessionId": format!("kid{k}"),
                    "content": [{"type": "text", "text": m}]});
                self.update(S, msg.clone());
                self.update(&format!("kid{k}"), msg);
            }
            Op::StdText { k } => {
                let m = self.marker(Home::Child(std_child(k)));
                self.update(&format!("kid{k}"), json!({"sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "std"}, "_meta": {"m": m}}));
            }
            Op::StdTool { k, j } => {
                let m = self.marker(Home::Child(std_child(k)));
                self.update(&format!("kid{k}"), json!({"sessionUpdate": "tool_call", "toolCallId": format!("k{k}-{j}"),
                    "title": "List", "kind": "read", "status": "completed", "_meta": {"m": m}}));
            }
            Op::StdPerm { k, j } => self.permission(&format!("kid{k}"), &format!("k{k}-{j}")),
            Op::StdEnd { k, ok } => {
                let state = if ok {
                    json!({"state": "idle", "stopReason": "end_turn"})
                } else {
                    json!({"state": "unknown"})
                };
                self.update(S, json!({"sessionUpdate": "subagent_update", "sessionId": format!("kid{k}"), "state": state}));
            }
            Op::Prompt => {
                self.client_request(
                    "session/prompt",
                    json!({"sessionId": S, "prompt": [{"type": "text", "text": "go"}]}),
                );
            }
            Op::List => {
                self.client_request("session/list", json!({}));
            }
            Op::LoadChild(i) => {
                let c = any_child(i);
                if self.load_tried.insert(c.clone()) {
                    let id = self.client_request(
                        "session/load",
                        json!({"sessionId": c, "cwd": "/p", "mcpServers": []}),
                    );
                    if self.h.response(id).is_some_and(|r| r.get("result").is_some()) {
                        self.loaded.insert(c);
                    }
                }
            }
            Op::PromptChild(i) => {
                self.client_request(
                    "session/prompt",
                    json!({"sessionId": any_child(i), "prompt": []}),
                );
            }
            Op::CancelChild(i) => self.h.client(
                json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": any_child(i)}}),
            ),
            Op::AgentAnswer => {
                if self.agent_pending.is_empty() {
                    return;
                }
                let (id, method) = self.agent_pending.remove(0);
                let result = match method.as_str() {
                    "session/list" => json!({"sessions": [{"sessionId": S, "cwd": "/p"}, {"sessionId": "kid0", "cwd": "/p"}]}),
                    _ => json!({"stopReason": "end_turn"}),
                };
                let msg = json!({"jsonrpc": "2.0", "id": id, "result": result});
                let n = id.as_u64().unwrap_or(0);
                self.agent_answers.insert(n, (line(&msg).to_vec(), method));
                self.h.agent(msg);
            }
            Op::ClientAnswer => {
                self.h.settle();
                let received = client_requests(&self.h);
                let Some(id) = self
                    .agent_ids
                    .iter()
                    .find(|id| received.contains_key(*id) && !self.client_answered.contains(*id))
                    .cloned()
                else {
                    return;
                };
                self.client_answered.insert(id.clone());
                self.h.client(json!({"jsonrpc": "2.0", "id": id,
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}));
            }
        }
    }
}

/// Client-facing lines, split and parsed.
fn client_lines(h: &Harness) -> Vec<(Vec<u8>, Value)> {
    h.to_client
        .iter()
        .flat_map(|b| b.split_inclusive(|c| *c == b'\n').map(<[u8]>::to_vec))
        .map(|l| {
            let v = serde_json::from_slice(&l).expect("client line is JSON");
            (l, v)
        })
        .collect()
}

/// Requests the client received, by id, with how often.
fn client_requests(h: &Harness) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    for (_, v) in client_lines(h) {
        if v.get("method").is_some() {
            if let Some(id) = v.get("id").and_then(Value::as_str) {
                *seen.entry(id.to_owned()).or_insert(0) += 1;
            }
        }
    }
    seen
}

fn check(run: &mut Run) -> Result<(), TestCaseError> {
    // Flush what may still be held, then end the session.
    run.h.advance(1_000_000);
    let lines = client_lines(&run.h);
    let mut order: Vec<usize> = Vec::new();
    for (m, home) in &run.homes {
        let needle = format!("\"{m}\"");
        let hits: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, (raw, _))| memchr::memmem::find(raw, needle.as_bytes()).is_some())
            .map(|(i, _)| i)
            .collect();
        let children = run.h.store.children();
        let stored: Vec<&str> = children
            .iter()
            .filter(|c| {
                c.updates
                    .iter()
                    .any(|u| memchr::memmem::find(u.as_bytes(), needle.as_bytes()).is_some())
            })
            .map(|c| c.child_id.as_str())
            .collect();
        let stored_times: usize = children
            .iter()
            .flat_map(|c| c.updates.iter())
            .filter(|u| memchr::memmem::find(u.as_bytes(), needle.as_bytes()).is_some())
            .count();
        match home {
            Home::Parent(frame) => {
                prop_assert_eq!(hits.len(), 1, "{} ({:?}) reaches the client once", m, home);
                prop_assert!(&lines[hits[0]].0 == frame, "{} forwarded byte-identical", m);
                prop_assert!(stored.is_empty(), "{} is in no child thread", m);
                order.push(hits[0]);
            }
            Home::Repaired => {
                prop_assert_eq!(hits.len(), 1, "{} reaches the client once", m);
                let u = &lines[hits[0]].1["params"]["update"];
                prop_assert_eq!(&u["sessionUpdate"], &json!("tool_call"), "{} repaired", m);
                prop_assert!(u["title"].is_string(), "{} titled", m);
                prop_assert!(stored.is_empty(), "{} is in no child thread", m);
                order.push(hits[0]);
            }
            Home::Card => {
                prop_assert_eq!(hits.len(), 1, "spawn frame {} reaches the client once", m);
                let v = &lines[hits[0]].1;
                prop_assert_eq!(&v["params"]["sessionId"], &json!(S));
                prop_assert!(
                    v["params"]["update"]["_meta"]["subagent_session_info"].is_object(),
                    "spawn frame {} carries Zed's card meta",
                    m
                );
                prop_assert!(stored.is_empty(), "{} is in no child thread", m);
                order.push(hits[0]);
            }
            Home::Request(id) => {
                prop_assert_eq!(hits.len(), 1, "request {} reaches the client once", id);
                let v = &lines[hits[0]].1;
                prop_assert_eq!(&v["id"], &json!(id));
                let sid = v["params"]["sessionId"].as_str().unwrap_or("");
                prop_assert!(
                    sid == S || run.loaded.contains(sid),
                    "request {} goes to a session Zed knows, not {}",
                    id,
                    sid
                );
            }
            Home::Child(cid) => {
                prop_assert_eq!(stored_times, 1, "{} recorded exactly once", m);
                prop_assert_eq!(stored, vec![cid], "{} recorded in its own child", m);
                prop_assert!(hits.len() <= 1, "{} reaches the client at most once", m);
                if let Some(i) = hits.first() {
                    prop_assert_eq!(
                        &lines[*i].1["params"]["sessionId"],
                        &json!(cid),
                        "{} reaches the client only under its child",
                        m
                    );
                    prop_assert!(run.loaded.contains(cid), "only once the child is loaded");
                }
            }
        }
    }
    prop_assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "parent frames in order: {:?}",
        order
    );

    // Requests and responses pair up. The agent leaves last: every open request gets an error.
    let mut out = Vec::new();
    run.h.engine.agent_gone("test over", &mut out);
    for a in out {
        if let acp_proxy::engine::Action::ToClient(b) = a {
            run.h.to_client.push(b);
        }
    }
    let lines = client_lines(&run.h);
    for id in &run.client_ids {
        let forwarded = run
            .h
            .to_agent
            .iter()
            .filter(|v| v["id"] == json!(id) && v.get("method").is_some())
            .count();
        prop_assert!(
            forwarded <= 1,
            "client request {} forwarded {} times",
            id,
            forwarded
        );
        let responses: Vec<&(Vec<u8>, Value)> = lines
            .iter()
            .filter(|(_, v)| v["id"] == json!(id) && v.get("method").is_none())
            .collect();
        prop_assert_eq!(responses.len(), 1, "client request {} answered once", id);
        if let Some((frame, method)) = run.agent_answers.get(id) {
            prop_assert_eq!(forwarded, 1);
            if method != "session/list" {
                prop_assert!(
                    &responses[0].0 == frame,
                    "the agent's answer to {} unchanged",
                    id
                );
            }
        }
    }
    let received = client_requests(&run.h);
    for id in &run.agent_ids {
        prop_assert_eq!(received.get(id).copied(), Some(1), "agent request {}", id);
        let answers = run
            .h
            .to_agent
            .iter()
            .filter(|v| v["id"] == json!(id) && v.get("method").is_none())
            .count();
        let want = usize::from(run.client_answered.contains(id));
        prop_assert_eq!(answers, want, "client answer to {} reaches the agent", id);
    }
    prop_assert!(
        run.h.zed.rejected.is_empty(),
        "kinds Zed rejects: {:?}",
        run.h.zed.rejected
    );
    prop_assert!(
        run.h.zed.unknown_session_requests.is_empty(),
        "requests for sessions Zed does not know: {:?}",
        run.h.zed.unknown_session_requests
    );
    prop_assert!(
        run.h.zed.orphan_tool_updates.is_empty() && run.h.zed.refused_requests.is_empty(),
        "{:?}: updates before their tool call {:?}, requests refused {:?}",
        run.h.zed.rules,
        run.h.zed.orphan_tool_updates,
        run.h.zed.refused_requests
    );
    Ok(())
}

/// A run judged by the given Zed (the sessions send nothing whose entries the two count
/// differently; the tool call and permission rules hold for both).
fn new_run(rules: ZedRules) -> Run {
    let mut h = Harness::zed_session("prop", S);
    h.zed.rules = rules;
    Run {
        h,
        n: 0,
        homes: Vec::new(),
        child_tools: HashSet::new(),
        parent_tools: HashSet::new(),
        client_ids: Vec::new(),
        agent_pending: Vec::new(),
        agent_answers: HashMap::new(),
        agent_ids: Vec::new(),
        client_answered: HashSet::new(),
        loaded: HashSet::new(),
        load_tried: HashSet::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_frame_has_exactly_one_home_and_requests_pair_up(ops in session(), main in any::<bool>()) {
        let mut run = new_run(if main { ZedRules::Main } else { ZedRules::V1_18 });
        for op in &ops {
            run.step(op);
        }
        check(&mut run)?;
    }

    /// The relay's reader thread reads agent frames ahead (byte search, `session/update`
    /// taken apart); the engine then decides exactly as if it had read them itself.
    #[test]
    fn frames_read_ahead_are_routed_the_same(ops in session()) {
        let mut plain = new_run(ZedRules::Main);
        let mut ahead = new_run(ZedRules::Main);
        ahead.h.scan_ahead = true;
        for op in &ops {
            plain.step(op);
            ahead.step(op);
        }
        prop_assert_eq!(&plain.h.to_client, &ahead.h.to_client);
        prop_assert_eq!(&plain.h.to_agent, &ahead.h.to_agent);
        prop_assert_eq!(&plain.h.notes, &ahead.h.notes);
        check(&mut ahead)?;
    }

    /// The relay hands the engine each read's lines at once; it finds the lines that need
    /// reading in one pass and passes the rest as runs: the same bytes leave, in the same
    /// order, with the same decisions, whether the lines were scanned ahead or not.
    #[test]
    fn runs_of_frames_are_routed_the_same(ops in session(), run_lines in 1..8usize, ahead in any::<bool>()) {
        let mut plain = new_run(ZedRules::Main);
        let mut runs = new_run(ZedRules::Main);
        runs.h.run_lines = run_lines;
        runs.h.scan_ahead = ahead;
        for op in &ops {
            plain.step(op);
            runs.step(op);
        }
        runs.h.settle();
        prop_assert_eq!(plain.h.to_client.concat(), runs.h.to_client.concat());
        prop_assert_eq!(&plain.h.to_agent, &runs.h.to_agent);
        prop_assert_eq!(&plain.h.notes, &runs.h.notes);
        check(&mut runs)?;
    }

    /// Any chunking of any byte stream gives the same frames, and they concatenate to the
    /// input (plus a `\n` when it ends without one).
    #[test]
    fn framing_is_independent_of_chunking(
        input in prop::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'{'), any::<u8>()], 0..400),
        chunks_a in prop::collection::vec(1..50usize, 1..20),
        chunks_b in prop::collection::vec(1..50usize, 1..20),
        max in 1..64usize,
    ) {
        let a = decode(&input, &chunks_a, 1 << 20);
        let b = decode(&input, &chunks_b, 1 << 20);
        prop_assert_eq!(&a, &b, "same lines whatever the chunking");
        for f in &a {
            prop_assert!(matches!(f, Frame::Line(_)), "no pieces below the limit");
        }
        let joined: Vec<u8> = a.iter().flat_map(|f| f.bytes().to_vec()).collect();
        let mut want = input.clone();
        if !want.is_empty() && !want.ends_with(b"\n") {
            want.push(b'\n');
        }
        prop_assert_eq!(joined, want.clone());
        // With a small limit lines may come in pieces, but the bytes are the same.
        let small = decode(&input, &chunks_a, max);
        let joined: Vec<u8> = small.iter().flat_map(|f| f.bytes().to_vec()).collect();
        prop_assert_eq!(joined, want);
    }
}

fn decode(input: &[u8], chunks: &[usize], max: usize) -> Vec<Frame> {
    let mut codec = LineCodec::new(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut pos = 0;
    for size in chunks.iter().cycle() {
        if pos >= input.len() {
            break;
        }
        let end = (pos + size).min(input.len());
        buf.extend_from_slice(&input[pos..end]);
        pos = end;
        while let Some(f) = codec.decode(&mut buf).expect("decode") {
            out.push(f);
        }
    }
    while let Some(f) = codec.decode_eof(&mut buf).expect("decode_eof") {
        out.push(f);
    }
    out
}

#[test]
fn captured_traffic_read_ahead_is_routed_the_same() {
    let names = [
        "claude-agent-acp-0.23.1-legacy-one-subagent.jsonl",
        "claude-agent-acp-0.101.0-native-one-subagent.jsonl",
        "claude-agent-acp-0.101.0-transcript-flag.jsonl",
    ];
    for name in names {
        let records = support::engine::fixture(name);
        let mut plain = Harness::zed();
        let mut ahead = Harness::zed();
        ahead.scan_ahead = true;
        support::engine::play(&mut plain, &records);
        support::engine::play(&mut ahead, &records);
        assert!(plain.to_client.len() > 10, "{name}: played");
        assert_eq!(plain.to_client, ahead.to_client, "{name}");
        assert_eq!(plain.to_agent, ahead.to_agent, "{name}");
        assert_eq!(plain.notes, ahead.notes, "{name}");
        for (run_lines, scan_ahead) in [(1, false), (3, true), (16, false), (64, true)] {
            let mut runs = Harness::zed();
            runs.run_lines = run_lines;
            runs.scan_ahead = scan_ahead;
            support::engine::play(&mut runs, &records);
            runs.settle();
            assert_eq!(
                plain.to_client.concat(),
                runs.to_client.concat(),
                "{name}, runs of {run_lines}"
            );
            assert_eq!(plain.to_agent, runs.to_agent, "{name}, runs of {run_lines}");
            assert_eq!(plain.notes, runs.notes, "{name}, runs of {run_lines}");
        }
    }
}
