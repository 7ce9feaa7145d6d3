//! A small model of what Zed does with the frames it receives from an ACP agent (here: the
//! proxy), following Zed's rules for external agents. The tests judge the proxy's output
//! with it, and `acp-proxy demo` uses it to print what Zed would show.
//!
//! Two rule sets, chosen by [`ZedRules`] (docs/subagents.md, "Zed's rules", says where each
//! rule lives in Zed's source):
//! - [`ZedRules::V1_18`] (the default): Zed 1.18 as the tests have always judged it;
//! - [`ZedRules::Main`]: Zed's main branch after 1.18.
//!
//! Common to both:
//! - a `session/update` for a session id Zed does not know is dropped;
//! - a session is known after its `session/new` response, or from the moment Zed *sends*
//!   `session/load` / `session/resume` for it;
//! - `subagent_session_info` is parsed strictly (object, snake_case, `session_id` string,
//!   `message_start_index` unsigned) or ignored;
//! - an unknown `sessionUpdate` kind makes the typed decoder reject the whole notification
//!   (each rule set has its own list of kinds);
//! - entries: user chunks merge into one user entry, agent message/thought chunks into one
//!   assistant entry, each new tool call id is an entry, updates patch.
//!
//! Only under `Main`: a `tool_call` without a `title` is rejected; a `tool_call_update` for an
//! unknown id inserts a failed "Tool call not found" entry; the tool call's `name` field wins
//! over `_meta.tool_name`, which is also read from updates while no name is set; adjacent
//! chunks with different `messageId`s start a new chunk (a new entry for user chunks);
//! session-scoped `elicitation/create` and context compaction make entries; a permission
//! request upserts its tool call. Only under `V1_18`: a plan with no pending item when a
//! prompted turn ends is kept as a "completed plan" entry.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::{json, Value};

/// Which Zed the model plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZedRules {
    /// Zed 1.18.
    #[default]
    V1_18,
    /// Zed's main branch after 1.18.
    Main,
}

impl ZedRules {
    /// Every rule set, oldest first.
    pub const ALL: [ZedRules; 2] = [ZedRules::V1_18, ZedRules::Main];

    /// The `sessionUpdate` kinds the typed v1 decoder accepts; any other kind rejects the
    /// whole notification.
    pub fn known_kinds(self) -> &'static [&'static str] {
        const V1_18: &[&str] = &[
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
        const MAIN: &[&str] = &[
            "user_message_chunk",
            "agent_message_chunk",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "compaction_update",
            "compaction_summary_chunk",
            "plan",
            "notice",
            "session_info_update",
            "available_commands_update",
            "current_mode_update",
            "config_option_update",
            "usage_update",
        ];
        match self {
            ZedRules::V1_18 => V1_18,
            ZedRules::Main => MAIN,
        }
    }

    fn is_main(self) -> bool {
        self == ZedRules::Main
    }
}

/// The `initialize` params Zed sends, as the given Zed sends them (a stable build; the main
/// branch as a nightly build). Zed always offers protocol version 1 and never advertises
/// `clientCapabilities.subagents`.
pub fn initialize_params(rules: ZedRules) -> Value {
    let mut caps = json!({
        "fs": {"readTextFile": true, "writeTextFile": true},
        "terminal": true,
        "auth": {"terminal": true},
        "_meta": {"terminal_output": true, "terminal-auth": true},
    });
    let client_info = match rules {
        ZedRules::V1_18 => json!({"name": "zed", "title": "Zed", "version": "1.18.0"}),
        ZedRules::Main => {
            caps["session"] = json!({"configOptions": {"boolean": {}}});
            caps["elicitation"] = json!({"form": {}, "url": {}});
            json!({"name": "zed", "title": "Zed Nightly", "version": "1.19.0"})
        }
    };
    json!({"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": client_info})
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentInfo {
    pub session_id: String,
    pub start: u64,
    pub end: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct ToolCall {
    pub id: String,
    /// The title as sent (empty when none was).
    pub title: String,
    /// What Zed shows as the tool call's label.
    pub label: String,
    pub kind: String,
    pub status: String,
    /// The tool name Zed attributes the call to (`name`, else `_meta.tool_name`).
    pub tool_name: Option<String>,
    /// The tool call's own `name` field (read by `Main` only).
    pub name: Option<String>,
    pub subagent: Option<SubagentInfo>,
    pub text: String,
}

impl ToolCall {
    pub fn is_subagent(&self) -> bool {
        self.subagent.is_some() || self.tool_name.as_deref() == Some("spawn_agent")
    }

    fn relabel(&mut self, rules: ZedRules) {
        self.label = label_text(&self.title, self.tool_name.as_deref(), &self.kind, rules);
    }
}

/// The label Zed shows: the title's first line (commands and edits keep theirs whole); on
/// `Main` a blank title falls back to the tool name, then to "Tool call".
fn label_text(title: &str, tool_name: Option<&str>, kind: &str, rules: ZedRules) -> String {
    if rules.is_main() && title.trim().is_empty() {
        return match tool_name.filter(|n| !n.trim().is_empty()) {
            Some(name) => name.to_owned(),
            None => "Tool call".to_owned(),
        };
    }
    if kind == "execute" || kind == "edit" {
        return title.to_owned();
    }
    match title.split_once('\n') {
        Some((first, _)) => format!("{first}…"),
        None => title.to_owned(),
    }
}

/// A session-scoped `elicitation/create` (`Main`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elicitation {
    /// The JSON-RPC id of the request, as JSON text.
    pub request_id: String,
    pub mode: String,
    pub message: String,
    pub tool_call_id: Option<String>,
}

/// A context compaction (`Main`), keyed by its `compactionId`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    pub id: String,
    pub status: String,
    pub summary: String,
}

#[derive(Debug, Clone)]
pub enum Entry {
    User(String),
    Assistant(String),
    Tool(ToolCall),
    /// `Main` only.
    Elicitation(Elicitation),
    /// `Main` only.
    Compaction(Compaction),
    /// `V1_18` only: the plan's entries when a prompted turn ended with none pending.
    CompletedPlan(Vec<String>),
}

impl Entry {
    pub fn tool(&self) -> Option<&ToolCall> {
        match self {
            Entry::Tool(t) => Some(t),
            _ => None,
        }
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::User(t) => write!(f, "user:{t}"),
            Entry::Assistant(t) => write!(f, "agent:{t}"),
            Entry::Tool(t) => write!(f, "tool:{}:{}", t.id, t.status),
            Entry::Elicitation(e) => write!(f, "elicitation:{}:{}", e.mode, e.message),
            Entry::Compaction(c) => write!(f, "compaction:{}:{}", c.id, c.status),
            Entry::CompletedPlan(items) => write!(f, "completed plan:{}", items.join("; ")),
        }
    }
}

/// One chunk of an assistant entry: Zed renders each as its own block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssistantChunk {
    pub thought: bool,
    pub message_id: Option<String>,
    pub text: String,
}

/// What Zed keeps about an entry besides its text (parallel to `Thread::entries`).
#[derive(Debug, Clone, Default)]
struct EntryState {
    message_id: Option<String>,
    chunks: Vec<AssistantChunk>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct PlanItem {
    content: String,
    status: String,
}

#[derive(Debug, Clone, Default)]
pub struct Thread {
    pub entries: Vec<Entry>,
    state: Vec<EntryState>,
    plan: Vec<PlanItem>,
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

    /// The chunks of the assistant entry at `ix` (empty for any other entry).
    pub fn assistant_chunks(&self, ix: usize) -> &[AssistantChunk] {
        self.state
            .get(ix)
            .map(|s| s.chunks.as_slice())
            .unwrap_or(&[])
    }

    fn tool_mut(&mut self, id: &str) -> Option<&mut ToolCall> {
        // Zed searches from the end: the newest entry with the id wins.
        self.entries.iter_mut().rev().find_map(|e| match e {
            Entry::Tool(t) if t.id == id => Some(t),
            _ => None,
        })
    }

    /// Keeps `state` as long as `entries` (which callers may change directly).
    fn sync_state(&mut self) {
        self.state
            .resize_with(self.entries.len(), EntryState::default);
    }

    fn push(&mut self, entry: Entry, state: EntryState) {
        self.sync_state();
        self.entries.push(entry);
        self.state.push(state);
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
    /// The Zed being played; set it before any traffic.
    pub rules: ZedRules,
    pub threads: HashMap<String, Thread>,
    /// Ids of `session/new` requests Zed sent and awaits.
    new_requests: HashSet<String>,
    /// `session/prompt` requests Zed sent and awaits: id → session.
    prompts: HashMap<String, String>,
    /// Updates dropped because their session was unknown: (session, kind).
    pub dropped: Vec<(String, String)>,
    /// Notifications the typed decoder rejected: the unknown kind, or why the frame did not
    /// decode.
    pub rejected: Vec<String>,
    /// Requests for unknown sessions (Zed answers them with an error).
    pub unknown_session_requests: Vec<Value>,
    /// Requests the agent side made of Zed, in order (method, sessionId).
    pub requests: Vec<(String, String)>,
    /// Requests for a known session Zed answers with an error: (method, why).
    pub refused_requests: Vec<(String, String)>,
    /// Update for a tool call Zed does not have.
    pub orphan_tool_updates: Vec<String>,
}

impl ZedModel {
    pub fn new(rules: ZedRules) -> ZedModel {
        ZedModel {
            rules,
            ..ZedModel::default()
        }
    }

    /// Zed sends a message to the agent.
    pub fn client_sent(&mut self, msg: &Value) {
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let sid = msg.pointer("/params/sessionId").and_then(Value::as_str);
        match method {
            "session/new" => {
                if let Some(id) = msg.get("id") {
                    self.new_requests.insert(id.to_string());
                }
            }
            "session/load" | "session/resume" => {
                if let Some(sid) = sid {
                    // Registered before the request goes out: replayed updates land.
                    self.threads.insert(sid.to_owned(), Thread::default());
                }
            }
            "session/prompt" => {
                if let (Some(id), Some(sid)) = (msg.get("id"), sid) {
                    self.prompts.insert(id.to_string(), sid.to_owned());
                    if self.rules == ZedRules::V1_18 {
                        // A new turn drops the plan's finished items (`run_turn`).
                        if let Some(thread) = self.threads.get_mut(sid) {
                            thread.plan.retain(|p| p.status != "completed");
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Zed receives a message from the agent side.
    pub fn received(&mut self, msg: &Value) {
        if let Some(id) = msg.get("id") {
            if msg.get("method").is_none() {
                self.response(&id.to_string(), msg);
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
            if !self.rules.known_kinds().contains(&kind) {
                self.rejected.push(kind.to_owned());
                return;
            }
            if kind == "tool_call"
                && self.rules.is_main()
                && !update.get("title").is_some_and(Value::is_string)
            {
                // v1 `ToolCall.title` is a required string: the frame does not decode.
                self.rejected.push("tool_call without a title".to_owned());
                return;
            }
            let rules = self.rules;
            let Some(thread) = self.threads.get_mut(&sid) else {
                self.dropped.push((sid, kind.to_owned()));
                return;
            };
            apply(thread, update, rules, &mut self.orphan_tool_updates);
        } else if msg.get("id").is_some() && !method.is_empty() {
            self.request(method, sid, msg);
        }
    }

    fn response(&mut self, id: &str, msg: &Value) {
        if self.new_requests.remove(id) {
            if let Some(sid) = msg.pointer("/result/sessionId").and_then(Value::as_str) {
                self.threads.insert(sid.to_owned(), Thread::default());
            }
            return;
        }
        let Some(sid) = self.prompts.remove(id) else {
            return;
        };
        let stop = msg.pointer("/result/stopReason").and_then(Value::as_str);
        if self.rules != ZedRules::V1_18 || matches!(stop, None | Some("cancelled" | "max_tokens"))
        {
            return;
        }
        // `snapshot_completed_plan`: a plan with nothing pending becomes an entry.
        if let Some(thread) = self.threads.get_mut(&sid) {
            if !thread.plan.is_empty() && thread.plan.iter().all(|p| p.status != "pending") {
                let items = std::mem::take(&mut thread.plan)
                    .into_iter()
                    .map(|p| p.content)
                    .collect();
                thread.push(Entry::CompletedPlan(items), EntryState::default());
            }
        }
    }

    fn request(&mut self, method: &str, sid: String, msg: &Value) {
        // A session-scoped elicitation names its session inside the scope.
        let sid = if method == "elicitation/create" && sid.is_empty() {
            msg.pointer("/params/scope/sessionId")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        } else {
            sid
        };
        self.requests.push((method.to_owned(), sid.clone()));
        let rules = self.rules;
        if method == "elicitation/create" && !rules.is_main() {
            // 1.18 advertises no elicitation and has no handler for it.
            self.refused_requests
                .push((method.to_owned(), "method not found".to_owned()));
            return;
        }
        let Some(thread) = self.threads.get_mut(&sid) else {
            // A request-scoped elicitation belongs to no session: no entry, no error.
            let request_scoped =
                method == "elicitation/create" && msg.pointer("/params/requestId").is_some();
            if !request_scoped {
                self.unknown_session_requests.push(msg.clone());
            }
            return;
        };
        let refusal = match method {
            "session/request_permission" if rules.is_main() => {
                request_permission(thread, &msg["params"]["toolCall"], rules)
            }
            "elicitation/create" => elicitation(thread, msg),
            _ => Ok(()),
        };
        if let Err(why) = refusal {
            self.refused_requests.push((method.to_owned(), why));
        }
    }
}

/// `request_tool_call_authorization`: the permission's tool call is upserted into the thread
/// before the buttons show; a new one needs a title.
fn request_permission(
    thread: &mut Thread,
    tool_call: &Value,
    rules: ZedRules,
) -> Result<(), String> {
    let id = str_field(tool_call, "toolCallId").unwrap_or_default();
    if thread.tool_mut(&id).is_none() {
        if !tool_call.get("title").is_some_and(Value::is_string) {
            return Err("title is required for a tool call".to_owned());
        }
        thread.push(
            Entry::Tool(ToolCall {
                id: id.clone(),
                status: "pending".to_owned(),
                kind: "other".to_owned(),
                ..ToolCall::default()
            }),
            EntryState::default(),
        );
    }
    if let Some(tc) = thread.tool_mut(&id) {
        patch_tool_main(tc, tool_call, false, rules);
    }
    Ok(())
}

/// `request_elicitation_with_id`: a session-scoped elicitation in form or http(s) URL mode
/// becomes an entry.
fn elicitation(thread: &mut Thread, msg: &Value) -> Result<(), String> {
    let params = &msg["params"];
    let mode = str_field(params, "mode").unwrap_or_default();
    match mode.as_str() {
        "form" => {}
        "url" => {
            let url = str_field(params, "url").unwrap_or_default();
            let host = url
                .strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://"))
                .and_then(|rest| rest.split(['/', '?', '#']).next())
                .unwrap_or("");
            if host.is_empty() {
                return Err("elicitation URL must use HTTP or HTTPS and include a host".to_owned());
            }
        }
        _ => return Err("unsupported elicitation mode".to_owned()),
    }
    let tool_call_id = str_field(params, "toolCallId").or_else(|| {
        params
            .pointer("/scope/toolCallId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    thread.push(
        Entry::Elicitation(Elicitation {
            request_id: msg.get("id").map(Value::to_string).unwrap_or_default(),
            mode,
            message: str_field(params, "message").unwrap_or_default(),
            tool_call_id,
        }),
        EntryState::default(),
    );
    Ok(())
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn text_of(content: &Value) -> String {
    content
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// `None`: no `subagent_session_info` key; `Some(None)`: present but not the exact shape.
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

/// Two adjacent chunks belong together unless both carry a `messageId` and they differ
/// (`can_merge_message_chunks`).
fn can_merge(existing: Option<&str>, incoming: Option<&str>) -> bool {
    match (existing, incoming) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

fn apply(thread: &mut Thread, update: &Value, rules: ZedRules, orphans: &mut Vec<String>) {
    let kind = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or("");
    let message_id = if rules.is_main() {
        str_field(update, "messageId")
    } else {
        None
    };
    match kind {
        "user_message_chunk" => user_chunk(thread, text_of(&update["content"]), message_id),
        "agent_message_chunk" | "agent_thought_chunk" => assistant_chunk(
            thread,
            text_of(&update["content"]),
            kind == "agent_thought_chunk",
            message_id,
        ),
        "tool_call" | "tool_call_update" if rules.is_main() => tool_main(thread, update, orphans),
        "tool_call" | "tool_call_update" => tool_v1_18(thread, update, orphans),
        "plan" => {
            thread.plan = update
                .get("entries")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|i| PlanItem {
                            content: str_field(i, "content").unwrap_or_default(),
                            status: str_field(i, "status").unwrap_or_else(|| "pending".to_owned()),
                        })
                        .collect()
                })
                .unwrap_or_default();
        }
        "compaction_update" | "compaction_summary_chunk" => compaction(thread, update, kind),
        _ => {}
    }
}

fn user_chunk(thread: &mut Thread, text: String, message_id: Option<String>) {
    thread.sync_state();
    let last = thread.entries.len().checked_sub(1);
    if let (Some(ix), Some(Entry::User(s))) = (last, thread.entries.last_mut()) {
        let state = &mut thread.state[ix];
        if can_merge(state.message_id.as_deref(), message_id.as_deref()) {
            s.push_str(&text);
            if state.message_id.is_none() {
                state.message_id = message_id;
            }
            return;
        }
    }
    thread.push(
        Entry::User(text),
        EntryState {
            message_id,
            chunks: Vec::new(),
        },
    );
}

fn assistant_chunk(thread: &mut Thread, text: String, thought: bool, message_id: Option<String>) {
    let chunk = AssistantChunk {
        thought,
        message_id,
        text: text.clone(),
    };
    thread.sync_state();
    let last = thread.entries.len().checked_sub(1);
    if let (Some(ix), Some(Entry::Assistant(s))) = (last, thread.entries.last_mut()) {
        s.push_str(&text);
        let chunks = &mut thread.state[ix].chunks;
        match chunks.last_mut() {
            Some(c)
                if c.thought == thought
                    && can_merge(c.message_id.as_deref(), chunk.message_id.as_deref()) =>
            {
                c.text.push_str(&text);
                if c.message_id.is_none() {
                    c.message_id = chunk.message_id;
                }
            }
            _ => chunks.push(chunk),
        }
        return;
    }
    thread.push(
        Entry::Assistant(text),
        EntryState {
            message_id: None,
            chunks: vec![chunk],
        },
    );
}

/// Zed 1.18 as the tests have always judged it.
fn tool_v1_18(thread: &mut Thread, update: &Value, orphans: &mut Vec<String>) {
    let kind = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or("");
    let id = str_field(update, "toolCallId").unwrap_or_default();
    let meta = update.get("_meta").cloned().unwrap_or(Value::Null);
    if thread.tool_mut(&id).is_none() {
        if kind == "tool_call_update" {
            orphans.push(id);
            return;
        }
        thread.push(
            Entry::Tool(ToolCall {
                id: id.clone(),
                kind: "other".to_owned(),
                ..Default::default()
            }),
            EntryState::default(),
        );
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
    if let Some(k) = update.get("kind").and_then(Value::as_str) {
        tc.kind = k.to_owned();
    }
    if let Some(s) = update.get("status").and_then(Value::as_str) {
        tc.status = s.to_owned();
    }
    if let Some(t) = tool_text(update) {
        tc.text = t;
    }
    tc.relabel(ZedRules::V1_18);
}

/// Zed's main branch: `upsert_tool_call` / `update_tool_call` with v1 ("legacy") metadata.
fn tool_main(thread: &mut Thread, update: &Value, orphans: &mut Vec<String>) {
    let is_call = update.get("sessionUpdate").and_then(Value::as_str) == Some("tool_call");
    let id = str_field(update, "toolCallId").unwrap_or_default();
    if thread.tool_mut(&id).is_none() {
        if !is_call {
            // `tool_call_index_for_update`: a failed stand-in takes the update's place.
            orphans.push(id.clone());
            let mut failed = ToolCall {
                id,
                title: "Tool call not found".to_owned(),
                kind: "fetch".to_owned(),
                status: "failed".to_owned(),
                text: "Tool call not found".to_owned(),
                ..ToolCall::default()
            };
            failed.relabel(ZedRules::Main);
            thread.push(Entry::Tool(failed), EntryState::default());
            return;
        }
        let meta = update.get("_meta").cloned().unwrap_or(Value::Null);
        let name = str_field(update, "name");
        let mut created = ToolCall {
            id: id.clone(),
            kind: "other".to_owned(),
            status: "pending".to_owned(),
            tool_name: name.clone().or_else(|| str_field(&meta, "tool_name")),
            name,
            subagent: parse_info(&meta).flatten(),
            ..ToolCall::default()
        };
        patch_tool_main(&mut created, update, true, ZedRules::Main);
        thread.push(Entry::Tool(created), EntryState::default());
        return;
    }
    if let Some(tc) = thread.tool_mut(&id) {
        patch_tool_main(tc, update, is_call, ZedRules::Main);
    }
}

/// `ToolCall::apply_patch` for a v1 frame. A `tool_call` carries every field (absent ones at
/// their defaults), so repeating one resets status and content; an update patches only the
/// fields it has.
fn patch_tool_main(tc: &mut ToolCall, frame: &Value, whole: bool, rules: ZedRules) {
    let meta = frame.get("_meta").cloned().unwrap_or(Value::Null);
    if let Some(t) = frame.get("title").and_then(Value::as_str) {
        tc.title = t.to_owned();
    }
    match frame.get("kind").and_then(Value::as_str) {
        Some(k) => tc.kind = k.to_owned(),
        None if whole => tc.kind = "other".to_owned(),
        None => {}
    }
    match frame.get("status").and_then(Value::as_str) {
        Some(s) => tc.status = s.to_owned(),
        None if whole => tc.status = "pending".to_owned(),
        None => {}
    }
    match tool_text(frame) {
        Some(t) => tc.text = t,
        None if whole => tc.text.clear(),
        None => {}
    }
    if let Some(name) = str_field(frame, "name") {
        tc.name = Some(name.clone());
        tc.tool_name = Some(name);
    } else if tc.tool_name.is_none() {
        tc.tool_name = str_field(&meta, "tool_name");
    }
    // v1 extension hints are sticky: a missing or malformed one keeps the earlier value.
    if let Some(Some(info)) = parse_info(&meta) {
        tc.subagent = Some(info);
    }
    tc.relabel(rules);
}

fn compaction(thread: &mut Thread, update: &Value, kind: &str) {
    let id = str_field(update, "compactionId").unwrap_or_default();
    let existing = thread.entries.iter_mut().rev().find_map(|e| match e {
        Entry::Compaction(c) if c.id == id => Some(c),
        _ => None,
    });
    let summary_text = |blocks: &Value| -> String {
        blocks
            .as_array()
            .map(|b| b.iter().map(text_of).collect())
            .unwrap_or_default()
    };
    if kind == "compaction_summary_chunk" {
        let text = text_of(&update["content"]);
        match existing {
            Some(c) => c.summary.push_str(&text),
            None => thread.push(
                Entry::Compaction(Compaction {
                    id,
                    status: "in_progress".to_owned(),
                    summary: text,
                }),
                EntryState::default(),
            ),
        }
        return;
    }
    let status = str_field(update, "status").unwrap_or_default();
    let summary = match update.get("summary") {
        None => None,
        Some(Value::Null) => Some(String::new()),
        Some(blocks) => Some(summary_text(blocks)),
    };
    match existing {
        Some(c) => {
            c.status = status;
            if let Some(s) = summary {
                c.summary = s;
            }
        }
        None => thread.push(
            Entry::Compaction(Compaction {
                id,
                status,
                summary: summary.unwrap_or_default(),
            }),
            EntryState::default(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "s1";

    /// A model with session `S` open, as after a `session/new`.
    fn zed(rules: ZedRules) -> ZedModel {
        let mut z = ZedModel::new(rules);
        z.client_sent(&json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}));
        z.received(&json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": S}}));
        z
    }

    fn update(z: &mut ZedModel, update: Value) {
        z.received(&json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": S, "update": update}}));
    }

    fn entries(z: &ZedModel) -> Vec<String> {
        z.threads[S].entries.iter().map(Entry::to_string).collect()
    }

    fn chunk(kind: &str, text: &str, message_id: Option<&str>) -> Value {
        let mut u = json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
        if let Some(id) = message_id {
            u["messageId"] = json!(id);
        }
        u
    }

    #[test]
    fn a_tool_call_without_a_title_is_rejected_on_main_only() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "read"}),
            );
            match rules {
                ZedRules::V1_18 => {
                    assert!(z.rejected.is_empty());
                    assert_eq!(entries(&z), ["tool:t1:"]);
                }
                ZedRules::Main => {
                    assert_eq!(z.rejected, ["tool_call without a title"]);
                    assert!(entries(&z).is_empty());
                }
            }
        }
    }

    #[test]
    fn an_update_for_an_unknown_tool_call_makes_a_failed_entry_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                "status": "completed", "title": "Read"}),
            );
            update(&mut z, chunk("agent_message_chunk", "done", None));
            assert_eq!(z.orphan_tool_updates, ["t1"]);
            match rules {
                ZedRules::V1_18 => assert_eq!(entries(&z), ["agent:done"]),
                ZedRules::Main => {
                    // The update itself is not applied; the stand-in shifts the count.
                    assert_eq!(entries(&z), ["tool:t1:failed", "agent:done"]);
                    let tc = z.threads[S].card("t1").expect("stand-in");
                    assert_eq!(tc.label, "Tool call not found");
                    assert_eq!(tc.text, "Tool call not found");
                }
            }
        }
    }

    #[test]
    fn the_name_field_wins_over_meta_tool_name_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Task",
                "name": "Agent", "_meta": {"tool_name": "spawn_agent"}}),
            );
            let tc = z.threads[S].card("t1").expect("tool call");
            match rules {
                ZedRules::V1_18 => {
                    assert_eq!(tc.tool_name.as_deref(), Some("spawn_agent"));
                    assert!(tc.is_subagent());
                }
                ZedRules::Main => {
                    assert_eq!(tc.tool_name.as_deref(), Some("Agent"));
                    assert_eq!(tc.name.as_deref(), Some("Agent"));
                    assert!(!tc.is_subagent(), "a name hides the meta's spawn_agent");
                }
            }
        }
    }

    #[test]
    fn meta_tool_name_is_read_from_updates_while_none_is_set_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Task"}),
            );
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                "_meta": {"tool_name": "spawn_agent"}}),
            );
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                "_meta": {"tool_name": "Read"}}),
            );
            let tc = z.threads[S].card("t1").expect("tool call");
            match rules {
                ZedRules::V1_18 => assert_eq!(tc.tool_name, None),
                // The first name sticks: later meta names do not replace it.
                ZedRules::Main => assert_eq!(tc.tool_name.as_deref(), Some("spawn_agent")),
            }
        }
    }

    #[test]
    fn a_name_in_an_update_replaces_the_tool_name_on_main() {
        let mut z = zed(ZedRules::Main);
        update(
            &mut z,
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x",
            "_meta": {"tool_name": "Read"}}),
        );
        update(
            &mut z,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "name": "Grep"}),
        );
        let tc = z.threads[S].card("t1").expect("tool call");
        assert_eq!(tc.tool_name.as_deref(), Some("Grep"));
    }

    #[test]
    fn a_blank_title_shows_the_tool_name_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": " ",
                "_meta": {"tool_name": "Glob"}}),
            );
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": ""}),
            );
            let label = |id: &str| z.threads[S].card(id).expect("tool call").label.clone();
            match rules {
                ZedRules::V1_18 => assert_eq!((label("t1"), label("t2")), (" ".into(), "".into())),
                ZedRules::Main => {
                    assert_eq!(
                        (label("t1"), label("t2")),
                        ("Glob".into(), "Tool call".into())
                    )
                }
            }
        }
    }

    #[test]
    fn a_repeated_tool_call_resets_status_and_content_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read",
                "status": "in_progress",
                "content": [{"type": "content", "content": {"type": "text", "text": "half"}}]}),
            );
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"}),
            );
            let tc = z.threads[S].card("t1").expect("tool call");
            match rules {
                ZedRules::V1_18 => assert_eq!(
                    (tc.status.as_str(), tc.text.as_str()),
                    ("in_progress", "half")
                ),
                ZedRules::Main => {
                    assert_eq!((tc.status.as_str(), tc.text.as_str()), ("pending", ""))
                }
            }
        }
    }

    #[test]
    fn a_malformed_subagent_info_in_an_update_keeps_the_card_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Task",
                "_meta": {"subagent_session_info": {"session_id": "c", "message_start_index": 0}}}),
            );
            update(
                &mut z,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                "_meta": {"subagent_session_info": "c"}}),
            );
            let card = z.threads[S].card("t1").expect("tool call");
            match rules {
                ZedRules::V1_18 => assert!(card.subagent.is_none()),
                ZedRules::Main => assert!(card.subagent.is_some(), "v1 hints are sticky"),
            }
        }
    }

    #[test]
    fn a_session_scoped_elicitation_is_an_entry_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            z.received(
                &json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
                "params": {"sessionId": S, "mode": "form", "message": "Which branch?",
                    "requestedSchema": {"type": "object", "properties": {}}}}),
            );
            // Request-scoped: answered, but no entry in any thread.
            z.received(
                &json!({"jsonrpc": "2.0", "id": 8, "method": "elicitation/create",
                "params": {"requestId": 3, "mode": "form", "message": "Sure?",
                    "requestedSchema": {"type": "object", "properties": {}}}}),
            );
            update(&mut z, chunk("agent_message_chunk", "ok", None));
            match rules {
                ZedRules::V1_18 => {
                    assert_eq!(entries(&z), ["agent:ok"]);
                    assert_eq!(z.refused_requests[0].1, "method not found");
                }
                ZedRules::Main => {
                    assert_eq!(entries(&z), ["elicitation:form:Which branch?", "agent:ok"]);
                    assert!(z.unknown_session_requests.is_empty());
                }
            }
        }
    }

    #[test]
    fn an_elicitation_with_a_bad_url_is_refused_without_an_entry() {
        let mut z = zed(ZedRules::Main);
        z.received(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
            "params": {"sessionId": S, "mode": "url", "message": "Sign in",
                "url": "file:///etc/passwd", "elicitationId": "e1"}}),
        );
        assert!(entries(&z).is_empty());
        assert_eq!(z.refused_requests.len(), 1);
    }

    #[test]
    fn compaction_updates_and_summary_chunks_make_one_entry_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(
                &mut z,
                json!({"sessionUpdate": "compaction_update", "compactionId": "c1",
                "status": "in_progress"}),
            );
            update(
                &mut z,
                json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
                "content": {"type": "text", "text": "so far"}}),
            );
            update(
                &mut z,
                json!({"sessionUpdate": "compaction_update", "compactionId": "c1",
                "status": "completed"}),
            );
            match rules {
                ZedRules::V1_18 => {
                    assert!(entries(&z).is_empty());
                    assert_eq!(z.rejected.len(), 3, "unknown kinds: {:?}", z.rejected);
                }
                ZedRules::Main => {
                    assert_eq!(entries(&z), ["compaction:c1:completed"]);
                    let Entry::Compaction(c) = &z.threads[S].entries[0] else {
                        panic!("compaction entry");
                    };
                    assert_eq!(c.summary, "so far");
                }
            }
        }
    }

    #[test]
    fn a_finished_plan_is_an_entry_at_the_end_of_a_turn_on_1_18_only() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            z.client_sent(
                &json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                "params": {"sessionId": S, "prompt": []}}),
            );
            update(
                &mut z,
                json!({"sessionUpdate": "plan", "entries": [
                {"content": "look", "priority": "high", "status": "completed"},
                {"content": "fix", "priority": "high", "status": "completed"}]}),
            );
            z.received(&json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}));
            match rules {
                ZedRules::V1_18 => assert_eq!(entries(&z), ["completed plan:look; fix"]),
                ZedRules::Main => assert!(entries(&z).is_empty()),
            }
        }
    }

    #[test]
    fn a_plan_with_a_pending_item_or_a_cancelled_turn_makes_no_entry() {
        for (items, stop) in [
            (
                json!([{"content": "a", "priority": "low", "status": "pending"}]),
                "end_turn",
            ),
            (
                json!([{"content": "a", "priority": "low", "status": "completed"}]),
                "cancelled",
            ),
        ] {
            let mut z = zed(ZedRules::V1_18);
            z.client_sent(
                &json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                "params": {"sessionId": S, "prompt": []}}),
            );
            update(&mut z, json!({"sessionUpdate": "plan", "entries": items}));
            z.received(&json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": stop}}));
            assert!(entries(&z).is_empty(), "{stop}");
        }
    }

    #[test]
    fn chunks_with_different_message_ids_start_a_new_chunk_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(&mut z, chunk("agent_message_chunk", "a", Some("m1")));
            update(&mut z, chunk("agent_message_chunk", "b", Some("m1")));
            update(&mut z, chunk("agent_message_chunk", "c", None));
            update(&mut z, chunk("agent_message_chunk", "d", Some("m2")));
            update(&mut z, chunk("agent_thought_chunk", "e", Some("m2")));
            let texts: Vec<_> = z.threads[S]
                .assistant_chunks(0)
                .iter()
                .map(|c| c.text.as_str())
                .collect();
            assert_eq!(
                entries(&z),
                ["agent:abcde"],
                "one assistant entry either way"
            );
            match rules {
                ZedRules::V1_18 => assert_eq!(texts, ["abcd", "e"]),
                ZedRules::Main => assert_eq!(texts, ["abc", "d", "e"]),
            }
        }
    }

    #[test]
    fn user_chunks_with_different_message_ids_are_two_entries_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            update(&mut z, chunk("user_message_chunk", "first", Some("u1")));
            update(&mut z, chunk("user_message_chunk", " more", None));
            update(&mut z, chunk("user_message_chunk", "second", Some("u2")));
            match rules {
                ZedRules::V1_18 => assert_eq!(entries(&z), ["user:first moresecond"]),
                ZedRules::Main => assert_eq!(entries(&z), ["user:first more", "user:second"]),
            }
        }
    }

    #[test]
    fn each_rule_set_decodes_its_own_kinds() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            for kind in [
                "notice",
                "compaction_update",
                "subagent_update",
                "session_message",
            ] {
                update(&mut z, json!({"sessionUpdate": kind}));
            }
            match rules {
                ZedRules::V1_18 => assert_eq!(
                    z.rejected,
                    [
                        "notice",
                        "compaction_update",
                        "subagent_update",
                        "session_message"
                    ]
                ),
                ZedRules::Main => assert_eq!(z.rejected, ["subagent_update", "session_message"]),
            }
            assert!(
                z.dropped.is_empty(),
                "rejected before the session is looked up"
            );
        }
    }

    #[test]
    fn a_permission_request_upserts_its_tool_call_on_main() {
        for rules in ZedRules::ALL {
            let mut z = zed(rules);
            z.received(
                &json!({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission",
                "params": {"sessionId": S, "options": [],
                    "toolCall": {"toolCallId": "p1", "title": "Write notes.txt", "kind": "edit"}}}),
            );
            z.received(
                &json!({"jsonrpc": "2.0", "id": 6, "method": "session/request_permission",
                "params": {"sessionId": S, "options": [], "toolCall": {"toolCallId": "p2"}}}),
            );
            assert_eq!(z.requests.len(), 2);
            match rules {
                ZedRules::V1_18 => assert!(entries(&z).is_empty()),
                ZedRules::Main => {
                    assert_eq!(entries(&z), ["tool:p1:pending"]);
                    assert_eq!(
                        z.refused_requests,
                        [(
                            "session/request_permission".to_owned(),
                            "title is required for a tool call".to_owned()
                        )]
                    );
                }
            }
        }
    }

    #[test]
    fn initialize_params_are_zeds() {
        let old = initialize_params(ZedRules::V1_18);
        let new = initialize_params(ZedRules::Main);
        for p in [&old, &new] {
            assert_eq!(p["protocolVersion"], json!(1));
            assert_eq!(p["clientInfo"]["name"], json!("zed"));
            assert!(p.pointer("/clientCapabilities/subagents").is_none());
            assert_eq!(
                p["clientCapabilities"]["_meta"]["terminal-auth"],
                json!(true)
            );
        }
        assert!(old.pointer("/clientCapabilities/elicitation").is_none());
        assert_eq!(
            new["clientCapabilities"]["session"],
            json!({"configOptions": {"boolean": {}}})
        );
        assert_eq!(
            new["clientCapabilities"]["elicitation"],
            json!({"form": {}, "url": {}})
        );
    }
}
