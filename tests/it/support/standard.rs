//! A small model of a client that speaks standard ACP subagents (v1, `clientCapabilities.
//! subagents`), to judge what the proxy sends such a client: every frame against the ACP
//! schema (the `agent-client-protocol-schema` crate), and what the client builds from them.
//!
//! The model keeps each session's thread (user and agent messages, tool calls, messages
//! between sessions) and each child's display state. It lists as problems what a standard
//! client could not place: traffic of a child it was not told of yet (a child is announced by
//! `subagent_update` on its parent before any of its events), a message or a tool call's
//! session reference naming an unknown session, an update before its tool call, a frame the
//! schema rejects, Zed's own subagent keys.

use std::collections::{HashMap, HashSet};

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

/// One entry of a session's thread.
#[derive(Debug, Clone, PartialEq)]
pub enum StdEntry {
    User(String),
    Agent(String),
    Tool {
        id: String,
        title: String,
        status: String,
        /// Sessions its content points at.
        sessions: Vec<String>,
    },
    /// A message between sessions: (message id, sender, recipient, text).
    Message(String, String, String, String),
}

impl StdEntry {
    pub fn line(&self) -> String {
        match self {
            StdEntry::User(t) => format!("user:{t}"),
            StdEntry::Agent(t) => format!("agent:{t}"),
            StdEntry::Tool { id, status, .. } => format!("tool:{id}:{status}"),
            StdEntry::Message(_, from, to, t) => format!("message:{from}->{to}:{t}"),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct StdSession {
    /// The session that announced it (`None`: a top-level session).
    pub parent: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The last `state` snapshot (`{state, stopReason?}`).
    pub state: Option<Value>,
    pub can_cancel: bool,
    pub entries: Vec<StdEntry>,
}

impl StdSession {
    pub fn lines(&self) -> Vec<String> {
        self.entries.iter().map(StdEntry::line).collect()
    }

    /// `running`, `idle:<stopReason>`, `unknown`, or `-` if never told.
    pub fn state_line(&self) -> String {
        match &self.state {
            None => "-".to_owned(),
            Some(s) => {
                let state = s.get("state").and_then(Value::as_str).unwrap_or("?");
                match s.get("stopReason").and_then(Value::as_str) {
                    Some(r) => format!("{state}:{r}"),
                    None => state.to_owned(),
                }
            }
        }
    }
}

#[derive(Debug, Default)]
pub struct StandardClient {
    pub sessions: HashMap<String, StdSession>,
    /// Children in the order they were announced.
    pub children: Vec<String>,
    new_requests: HashSet<String>,
    /// Everything the client could not place, in order.
    pub problems: Vec<String>,
    /// Frames checked against the schema.
    pub checked: usize,
}

/// Kinds the proxy writes itself for such a client: they must round-trip through the schema
/// types exactly (nothing swallowed by a lenient field).
const WRITTEN_KINDS: [&str; 3] = [
    "subagent_update",
    "session_message",
    "session_message_chunk",
];

impl StandardClient {
    /// The client sends a message to the agent side.
    pub fn client_sent(&mut self, msg: &Value) {
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let sid = msg.pointer("/params/sessionId").and_then(Value::as_str);
        match (method, sid) {
            ("session/new", _) => {
                if let Some(id) = msg.get("id") {
                    self.new_requests.insert(id.to_string());
                }
            }
            ("session/load", Some(sid)) => {
                // A reopened session is rebuilt from what follows.
                let s = self.sessions.entry(sid.to_owned()).or_default();
                s.entries.clear();
            }
            _ => {}
        }
    }

    /// The client receives a message from the agent side.
    pub fn received(&mut self, msg: &Value) {
        if contains_key(msg, "subagent_session_info") {
            self.problem(format!(
                "Zed's subagent meta reached a standard client: {msg}"
            ));
        }
        let method = msg.get("method").and_then(Value::as_str);
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        match (method, msg.get("id")) {
            (None, Some(id)) if self.new_requests.remove(&id.to_string()) => {
                if let Some(sid) = msg.pointer("/result/sessionId").and_then(Value::as_str) {
                    self.sessions.insert(sid.to_owned(), StdSession::default());
                }
            }
            (Some("session/update"), None) => {
                self.checked += 1;
                if let Err(e) =
                    acp::AgentNotification::from_method_and_params("session/update", &params)
                {
                    self.problem(format!("not an ACP v1 session/update: {e}: {msg}"));
                    return;
                }
                self.update(&params);
            }
            (Some(method), Some(_)) => {
                self.checked += 1;
                if let Err(e) = acp::AgentRequest::from_method_and_params(method, &params) {
                    self.problem(format!("not an ACP v1 request: {e}: {msg}"));
                }
                let sid = params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !sid.is_empty() && !self.sessions.contains_key(sid) {
                    self.problem(format!(
                        "`{method}` for a session the client does not know: {sid}"
                    ));
                }
            }
            (Some(method), None) => {
                self.checked += 1;
                if let Err(e) = acp::AgentNotification::from_method_and_params(method, &params) {
                    if !method.starts_with('_') {
                        self.problem(format!("not an ACP v1 notification: {e}: {msg}"));
                    }
                }
            }
            _ => {}
        }
    }

    fn problem(&mut self, p: String) {
        self.problems.push(p);
    }

    fn knows(&self, sid: &str) -> bool {
        self.sessions.contains_key(sid)
    }

    fn update(&mut self, params: &Value) {
        let sid = params
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let u = &params["update"];
        let kind = u.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
        if WRITTEN_KINDS.contains(&kind) {
            match serde_json::from_value::<acp::SessionUpdate>(u.clone()) {
                Ok(typed) => {
                    let back = serde_json::to_value(&typed).unwrap_or(Value::Null);
                    if &back != u {
                        self.problem(format!("`{kind}` does not round-trip through the schema: sent {u}, read {back}"));
                    }
                }
                Err(e) => self.problem(format!("`{kind}` does not decode: {e}: {u}")),
            }
        }
        if !self.knows(&sid) {
            self.problem(format!(
                "`{kind}` for a session the client was not told of: {sid}"
            ));
            return;
        }
        match kind {
            "subagent_update" => self.subagent_update(&sid, u),
            "session_message" => {
                let field = |k: &str| u.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                let (id, from, to) = (
                    field("messageId"),
                    field("senderSessionId"),
                    field("recipientSessionId"),
                );
                for s in [&from, &to] {
                    if !self.knows(s) {
                        self.problem(format!(
                            "a message names a session the client was not told of: {s}"
                        ));
                    }
                }
                if from != sid && to != sid {
                    self.problem(format!("a message in {sid} neither from nor to it: {u}"));
                }
                let text = texts(u.get("content"));
                let entries = &mut self.sessions.entry(sid).or_default().entries;
                // An upsert: the same message again replaces its content.
                match entries
                    .iter_mut()
                    .find(|e| matches!(e, StdEntry::Message(i, ..) if *i == id))
                {
                    Some(StdEntry::Message(_, _, _, t)) => *t = text,
                    _ => entries.push(StdEntry::Message(id, from, to, text)),
                }
            }
            "session_message_chunk" => {
                let id = u.get("messageId").and_then(Value::as_str).unwrap_or("");
                let text = texts(Some(&Value::Array(vec![u["content"].clone()])));
                let entries = &mut self.sessions.entry(sid).or_default().entries;
                match entries
                    .iter_mut()
                    .find(|e| matches!(e, StdEntry::Message(i, ..) if i == id))
                {
                    Some(StdEntry::Message(_, _, _, t)) => t.push_str(&text),
                    _ => entries.push(StdEntry::Message(
                        id.to_owned(),
                        String::new(),
                        String::new(),
                        text,
                    )),
                }
            }
            "user_message_chunk" | "agent_message_chunk" => {
                let text = u
                    .pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let entries = &mut self.sessions.entry(sid).or_default().entries;
                match (kind, entries.last_mut()) {
                    ("user_message_chunk", Some(StdEntry::User(t)))
                    | ("agent_message_chunk", Some(StdEntry::Agent(t))) => t.push_str(&text),
                    ("user_message_chunk", _) => entries.push(StdEntry::User(text)),
                    _ => entries.push(StdEntry::Agent(text)),
                }
            }
            "tool_call" | "tool_call_update" => self.tool(&sid, kind, u),
            _ => {}
        }
    }

    fn subagent_update(&mut self, parent: &str, u: &Value) {
        let Some(child) = u.get("sessionId").and_then(Value::as_str) else {
            self.problem(format!("a subagent_update without a session id: {u}"));
            return;
        };
        if child == parent {
            self.problem(format!("a session announced as its own child: {child}"));
        }
        if !self.sessions.contains_key(child) {
            self.children.push(child.to_owned());
            self.sessions.insert(
                child.to_owned(),
                StdSession {
                    parent: Some(parent.to_owned()),
                    ..StdSession::default()
                },
            );
        }
        let s = self.sessions.entry(child.to_owned()).or_default();
        if s.parent.as_deref() != Some(parent) {
            let was = s.parent.clone();
            self.problem(format!(
                "child {child} announced by {parent}, owned by {was:?}"
            ));
            return;
        }
        if let Some(t) = u.get("title") {
            s.title = t.as_str().map(str::to_owned);
        }
        if let Some(d) = u.get("description") {
            s.description = d.as_str().map(str::to_owned);
        }
        if let Some(c) = u.get("capabilities") {
            s.can_cancel = c.get("cancel").is_some_and(Value::is_object);
        }
        if let Some(st) = u.get("state") {
            s.state = (!st.is_null()).then(|| st.clone());
        }
    }

    fn tool(&mut self, sid: &str, kind: &str, u: &Value) {
        let id = u
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let refs: Vec<String> = u
            .get("content")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter(|i| i.get("type").and_then(Value::as_str) == Some("session"))
                    .filter_map(|i| {
                        i.get("sessionId")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .collect()
            })
            .unwrap_or_default();
        for r in &refs {
            if !self.knows(r) {
                self.problem(format!(
                    "tool call {id} points at a session the client was not told of: {r}"
                ));
            }
        }
        let entries = &mut self.sessions.entry(sid.to_owned()).or_default().entries;
        let existing = entries
            .iter_mut()
            .rev()
            .find(|e| matches!(e, StdEntry::Tool { id: i, .. } if *i == id));
        match (existing, kind) {
            (
                Some(StdEntry::Tool {
                    title,
                    status,
                    sessions,
                    ..
                }),
                _,
            ) => {
                if let Some(t) = u.get("title").and_then(Value::as_str) {
                    *title = t.to_owned();
                }
                if let Some(s) = u.get("status").and_then(Value::as_str) {
                    *status = s.to_owned();
                }
                if u.get("content").is_some() {
                    *sessions = refs;
                }
            }
            (_, "tool_call") => entries.push(StdEntry::Tool {
                id,
                title: u
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                status: u
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("pending")
                    .to_owned(),
                sessions: refs,
            }),
            _ => self.problem(format!(
                "an update of tool call {id} before its tool_call, in {sid}"
            )),
        }
    }

    pub fn session(&self, sid: &str) -> &StdSession {
        self.sessions
            .get(sid)
            .unwrap_or_else(|| panic!("the client knows session {sid}"))
    }

    /// The children the given session announced, in order.
    pub fn children_of(&self, parent: &str) -> Vec<String> {
        self.children
            .iter()
            .filter(|c| self.sessions.get(*c).and_then(|s| s.parent.as_deref()) == Some(parent))
            .cloned()
            .collect()
    }
}

fn texts(content: Option<&Value>) -> String {
    content
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<String>()
        })
        .unwrap_or_default()
}

fn contains_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| k == key || contains_key(v, key)),
        Value::Array(items) => items.iter().any(|v| contains_key(v, key)),
        _ => false,
    }
}
