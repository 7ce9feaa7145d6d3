//! A small model of what Zed does with the frames it receives from an ACP agent (here: the
//! proxy), following Zed's rules for external agents. The tests judge the proxy's output
//! with it, and `acp-proxy demo` uses it to print what Zed would show:
//! - a `session/update` for a session id Zed does not know is dropped;
//! - a session is known after its `session/new` response, or from the moment Zed *sends*
//!   `session/load` / `session/resume` for it;
//! - `subagent_session_info` is parsed strictly (object, snake_case, `session_id` string,
//!   `message_start_index` unsigned) or ignored; `tool_name` is read from `tool_call` only;
//! - an unknown `sessionUpdate` kind makes the typed decoder reject the whole notification;
//! - entries: user chunks merge into one user entry, agent message/thought chunks into one
//!   assistant entry, each new tool call id is an entry, updates patch.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentInfo {
    pub session_id: String,
    pub start: u64,
    pub end: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    pub id: String,
    pub title: String,
    pub status: String,
    pub tool_name: Option<String>,
    pub subagent: Option<SubagentInfo>,
    pub text: String,
}

impl ToolCall {
    pub fn is_subagent(&self) -> bool {
        self.subagent.is_some() || self.tool_name.as_deref() == Some("spawn_agent")
    }
}

#[derive(Debug, Clone)]
pub enum Entry {
    User(String),
    Assistant(String),
    Tool(ToolCall),
}

impl Entry {
    pub fn tool(&self) -> Option<&ToolCall> {
        match self {
            Entry::Tool(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Thread {
    pub entries: Vec<Entry>,
}

impl Thread {
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.entries.iter().filter_map(Entry::tool)
    }

    pub fn cards(&self) -> Vec<&ToolCall> {
        self.tool_calls().filter(|t| t.is_subagent()).collect()
    }

    pub fn card(&self, id: &str) -> Option<&ToolCall> {
        self.tool_calls().find(|t| t.id == id)
    }

    fn tool_mut(&mut self, id: &str) -> Option<&mut ToolCall> {
        self.entries.iter_mut().find_map(|e| match e {
            Entry::Tool(t) if t.id == id => Some(t),
            _ => None,
        })
    }

    /// Entries `start..=end` (end absent: to the end).
    pub fn slice(&self, start: u64, end: Option<u64>) -> &[Entry] {
        let s = start as usize;
        let e = end.map(|e| e as usize + 1).unwrap_or(self.entries.len());
        &self.entries[s.min(self.entries.len())..e.min(self.entries.len())]
    }
}

#[derive(Debug, Default)]
pub struct ZedModel {
    pub threads: HashMap<String, Thread>,
    /// Ids of `session/new` requests Zed sent and awaits.
    new_requests: HashSet<String>,
    /// Updates dropped because their session was unknown: (session, kind).
    pub dropped: Vec<(String, String)>,
    /// Notifications the typed decoder rejected (unknown kind).
    pub rejected: Vec<String>,
    /// Requests for unknown sessions (Zed answers them with an error).
    pub unknown_session_requests: Vec<Value>,
    /// Requests the agent side made of Zed, in order (method, sessionId).
    pub requests: Vec<(String, String)>,
    /// Update for a tool call Zed does not have.
    pub orphan_tool_updates: Vec<String>,
}

const KNOWN_KINDS: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
];

impl ZedModel {
    /// Zed sends a message to the agent.
    pub fn client_sent(&mut self, msg: &Value) {
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        match method {
            "session/new" => {
                if let Some(id) = msg.get("id") {
                    self.new_requests.insert(id.to_string());
                }
            }
            "session/load" | "session/resume" => {
                if let Some(sid) = msg.pointer("/params/sessionId").and_then(Value::as_str) {
                    // Registered before the request goes out: replayed updates land.
                    self.threads.insert(sid.to_owned(), Thread::default());
                }
            }
            _ => {}
        }
    }

    /// Zed receives a message from the agent side.
    pub fn received(&mut self, msg: &Value) {
        if let Some(id) = msg.get("id") {
            if msg.get("method").is_none() {
                if self.new_requests.remove(&id.to_string()) {
                    if let Some(sid) = msg.pointer("/result/sessionId").and_then(Value::as_str) {
                        self.threads.insert(sid.to_owned(), Thread::default());
                    }
                }
                return;
            }
        }
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let sid = msg
            .pointer("/params/sessionId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if method == "session/update" {
            let update = &msg["params"]["update"];
            let kind = update
                .get("sessionUpdate")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !KNOWN_KINDS.contains(&kind) {
                self.rejected.push(kind.to_owned());
                return;
            }
            let Some(thread) = self.threads.get_mut(&sid) else {
                self.dropped.push((sid, kind.to_owned()));
                return;
            };
            apply(thread, update, &mut self.orphan_tool_updates);
        } else if msg.get("id").is_some() && !method.is_empty() {
            self.requests.push((method.to_owned(), sid.clone()));
            if !self.threads.contains_key(&sid) {
                self.unknown_session_requests.push(msg.clone());
            }
        }
    }
}

fn text_of(content: &Value) -> String {
    content
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn parse_info(meta: &Value) -> Option<Option<SubagentInfo>> {
    let raw = meta.get("subagent_session_info")?;
    // Strict: anything but the exact shape is silently dropped, as Zed does.
    let obj = raw.as_object();
    let info = obj.and_then(|o| {
        Some(SubagentInfo {
            session_id: o.get("session_id")?.as_str()?.to_owned(),
            start: o.get("message_start_index")?.as_u64()?,
            end: match o.get("message_end_index") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64()?),
            },
        })
    });
    Some(info)
}

fn tool_text(update: &Value) -> Option<String> {
    let items = update.get("content")?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|i| i.pointer("/content/text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn apply(thread: &mut Thread, update: &Value, orphans: &mut Vec<String>) {
    let kind = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or("");
    match kind {
        "user_message_chunk" => {
            let t = text_of(&update["content"]);
            match thread.entries.last_mut() {
                Some(Entry::User(s)) => s.push_str(&t),
                _ => thread.entries.push(Entry::User(t)),
            }
        }
        "agent_message_chunk" | "agent_thought_chunk" => {
            let t = text_of(&update["content"]);
            match thread.entries.last_mut() {
                Some(Entry::Assistant(s)) => s.push_str(&t),
                _ => thread.entries.push(Entry::Assistant(t)),
            }
        }
        "tool_call" | "tool_call_update" => {
            let id = update
                .get("toolCallId")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let meta = update.get("_meta").cloned().unwrap_or(Value::Null);
            if thread.tool_mut(&id).is_none() {
                if kind == "tool_call_update" {
                    orphans.push(id);
                    return;
                }
                thread.entries.push(Entry::Tool(ToolCall {
                    id: id.clone(),
                    ..Default::default()
                }));
            }
            let Some(tc) = thread.tool_mut(&id) else {
                return;
            };
            if kind == "tool_call" {
                tc.tool_name = meta
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            if let Some(info) = parse_info(&meta) {
                tc.subagent = info;
            }
            if let Some(t) = update.get("title").and_then(Value::as_str) {
                tc.title = t.to_owned();
            }
            if let Some(s) = update.get("status").and_then(Value::as_str) {
                tc.status = s.to_owned();
            }
            if let Some(t) = tool_text(update) {
                tc.text = t;
            }
        }
        _ => {}
    }
}
