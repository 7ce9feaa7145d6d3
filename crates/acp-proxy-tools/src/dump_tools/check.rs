//! `acp-proxy dump check`: every frame judged on both sides of the proxy, against the ACP
//! schema (the `agent-client-protocol-schema` crate) and against what Zed does with what it
//! receives (the model in [`crate::zed_model`]), each finding with its position.

use std::collections::HashSet;
use std::io::Write;

use serde_json::Value;

use super::annotate::{Kind, Msg, Tracker};
use crate::zed_model::{Entry, Thread, ToolCall, ZedModel};
use acp_proxy::dump::reader::{Item, Reader, Record};
use acp_proxy::dump::Direction;
use agent_client_protocol_schema::v1 as acp;
use agent_client_protocol_schema::MethodDispatchError;

/// Tool calls remembered per side for Zed's rules; past this the orphan-update check stops.
const MAX_TOOL_CALLS: usize = 1_000_000;
/// Sessions remembered per side.
const MAX_SESSIONS: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SideArg {
    Client,
    Agent,
    Both,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub side: SideArg,
    /// Report what Zed would make of the agent's own frames (as information).
    pub agent_as_zed: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            side: SideArg::Both,
            agent_as_zed: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem found, at one record.
#[derive(Debug, Clone)]
pub struct Finding {
    pub file: usize,
    pub line: u64,
    pub dir: Option<Direction>,
    pub severity: Severity,
    /// A short stable name: `schema`, `zed-unknown-session`, …
    pub rule: &'static str,
    pub message: String,
    /// Whose doing it is: `client`, `proxy` or `agent`. A frame the proxy passed on
    /// unchanged is its sender's; a request nobody answered is the answerer's.
    pub origin: Option<&'static str>,
    /// The frame is one the proxy relayed byte for byte.
    pub relayed: bool,
}

/// Who wrote frames of this direction.
fn writer_of(dir: Direction) -> Option<&'static str> {
    match dir {
        Direction::ClientToProxy => Some("client"),
        Direction::AgentToProxy => Some("agent"),
        Direction::ProxyToAgent | Direction::ProxyToClient => Some("proxy"),
        _ => None,
    }
}

/// Who answers a request sent in this direction.
fn answerer_of(dir: Direction) -> Option<&'static str> {
    match dir {
        Direction::ClientToProxy | Direction::AgentToProxy => Some("proxy"),
        Direction::ProxyToAgent => Some("agent"),
        Direction::ProxyToClient => Some("client"),
        _ => None,
    }
}

impl Finding {
    pub fn origin(&self) -> Option<&'static str> {
        self.origin
    }

    pub fn side(&self) -> Option<&'static str> {
        match self.dir? {
            Direction::ClientToProxy | Direction::ProxyToClient => Some("client"),
            Direction::ProxyToAgent | Direction::AgentToProxy => Some("agent"),
            _ => None,
        }
    }

    pub fn to_json(&self, position: &str) -> Value {
        serde_json::json!({
            "position": position,
            "line": self.line,
            "dir": self.dir.map(|d| d.as_str()),
            "side": self.side(),
            "origin": self.origin,
            "relayed": self.relayed,
            "severity": self.severity.as_str(),
            "rule": self.rule,
            "message": self.message,
        })
    }
}

/// Who sends a frame, for the schema: the client's role or the agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Client,
    Agent,
}

fn role(dir: Direction) -> Option<Role> {
    match dir {
        Direction::ClientToProxy | Direction::ProxyToAgent => Some(Role::Client),
        Direction::AgentToProxy | Direction::ProxyToClient => Some(Role::Agent),
        _ => None,
    }
}

/// A schema problem: (rule, severity, message).
type Problem = (&'static str, Severity, String);

fn dispatch_problem(e: MethodDispatchError, what: &str) -> Problem {
    match e {
        MethodDispatchError::UnknownMethod { method } => (
            "unknown-method",
            Severity::Warning,
            format!("`{method}` is not a method of ACP v1 for {what} (and not an `_` extension)"),
        ),
        MethodDispatchError::InvalidPayload { method, source } => (
            "schema",
            Severity::Error,
            format!("{what} `{method}` does not match the ACP schema: {source}"),
        ),
        other => ("schema", Severity::Error, other.to_string()),
    }
}

/// Why an id is not one ACP takes (a string, a 64-bit integer or null).
fn bad_id(id: &Value) -> String {
    match id {
        // Past i64 but within u64.
        Value::Number(n) if n.is_u64() => {
            format!("id {id} is an integer beyond 64 bits (signed): not an ACP id")
        }
        // A JSON reader holds an integer past u64 as a float.
        Value::Number(n)
            if n.as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.abs() >= 9.2e18) =>
        {
            format!(
                "the id is an integer beyond 64 bits (a JSON reader holds it only as the float \
                 {id}): not an ACP id"
            )
        }
        Value::Number(_) => format!("id {id} is a number that is not an integer: not an ACP id"),
        _ => format!("id {id} is not a string, an integer or null"),
    }
}

/// The envelope and the payload of one message, against the schema.
fn schema_problems(role: Role, m: &Msg, v: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    if v.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        out.push((
            "jsonrpc",
            Severity::Error,
            "no `\"jsonrpc\": \"2.0\"`".to_owned(),
        ));
    }
    if let Some(id) = v.get("id") {
        if serde_json::from_value::<acp::RequestId>(id.clone()).is_err() {
            out.push(("jsonrpc", Severity::Error, bad_id(id)));
        }
    }
    let method = m.method.as_deref().unwrap_or("");
    let params = v.get("params").cloned().unwrap_or(Value::Null);
    let (side_name, other_name) = match role {
        Role::Client => ("client", "agent"),
        Role::Agent => ("agent", "client"),
    };
    match m.kind {
        Kind::Request => {
            let r = match role {
                Role::Client => {
                    acp::ClientRequest::from_method_and_params(method, &params).map(drop)
                }
                Role::Agent => acp::AgentRequest::from_method_and_params(method, &params).map(drop),
            };
            if let Err(e) = r {
                out.push(dispatch_problem(
                    e,
                    &format!("a request from the {side_name}"),
                ));
            }
        }
        Kind::Notification => {
            let r = if method == "$/cancel_request" {
                acp::ProtocolLevelNotification::from_method_and_params(method, &params).map(drop)
            } else {
                match role {
                    Role::Client => {
                        acp::ClientNotification::from_method_and_params(method, &params).map(drop)
                    }
                    Role::Agent => {
                        acp::AgentNotification::from_method_and_params(method, &params).map(drop)
                    }
                }
            };
            if let Err(e) = r {
                out.push(dispatch_problem(
                    e,
                    &format!("a notification from the {side_name}"),
                ));
            }
        }
        Kind::Response => {
            if v.get("error").is_some() {
                out.push((
                    "jsonrpc",
                    Severity::Error,
                    "a response with both `result` and `error`".to_owned(),
                ));
            }
            match &m.method {
                Some(method) => {
                    let result = v.get("result").cloned().unwrap_or(Value::Null);
                    let r = match role {
                        Role::Agent => {
                            acp::AgentResponse::from_method_and_result(method, result).map(drop)
                        }
                        Role::Client => {
                            acp::ClientResponse::from_method_and_result(method, result).map(drop)
                        }
                    };
                    if let Err(e) = r {
                        out.push(dispatch_problem(e, &format!("the {side_name}'s answer to")));
                    }
                }
                None => out.push((
                    "unmatched-response",
                    Severity::Warning,
                    format!(
                        "an answer to id {} that no open request from the {other_name} has",
                        m.id.as_deref().unwrap_or("?")
                    ),
                )),
            }
        }
        Kind::Error => {
            if let Err(e) = serde_json::from_value::<acp::Error>(v["error"].clone()) {
                out.push((
                    "schema",
                    Severity::Error,
                    format!("an error object that does not match JSON-RPC's: {e}"),
                ));
            }
            if m.method.is_none() && v.get("id") != Some(&Value::Null) {
                out.push((
                    "unmatched-response",
                    Severity::Warning,
                    format!(
                        "an error answer to id {} that no open request from the {other_name} has",
                        m.id.as_deref().unwrap_or("?")
                    ),
                ));
            }
        }
        Kind::Invalid => out.push((
            "not-jsonrpc",
            Severity::Error,
            "JSON that is neither a request, a response nor a notification".to_owned(),
        )),
        Kind::Stderr | Kind::Note => {}
    }
    if m.reused_id {
        out.push((
            "reused-id",
            Severity::Warning,
            format!(
                "request id {} is already used by an open request on this connection",
                m.id.as_deref().unwrap_or("?")
            ),
        ));
    }
    out
}

/// What one Zed (the model in `zed_model`) knows, at the scale of a long dump: the sessions
/// it has and the tool calls in their threads. Each frame is judged by a fresh
/// [`ZedModel`] holding just what the frame touches, so the rules are zed_model's own.
#[derive(Debug, Default)]
struct ZedSide {
    sessions: HashSet<String>,
    tools: HashSet<(String, String)>,
    /// Ids of `session/new` requests Zed sent and awaits.
    new_requests: HashSet<String>,
    tools_full: bool,
}

impl ZedSide {
    /// Zed sends this.
    fn sent(&mut self, v: &Value) {
        let mut model = ZedModel::default();
        model.client_sent(v);
        for sid in model.threads.into_keys() {
            if self.sessions.len() < MAX_SESSIONS {
                self.sessions.insert(sid);
            }
        }
        if v.get("method").and_then(Value::as_str) == Some("session/new") {
            if let Some(id) = v.get("id") {
                self.new_requests.insert(id.to_string());
            }
        }
    }

    /// Zed receives this: what goes wrong, as (rule, message).
    fn received(&mut self, v: &Value) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if v.get("method").is_none() {
            if let Some(id) = v.get("id") {
                if self.new_requests.remove(&id.to_string()) {
                    if let Some(sid) = v.pointer("/result/sessionId").and_then(Value::as_str) {
                        if self.sessions.len() < MAX_SESSIONS {
                            self.sessions.insert(sid.to_owned());
                        }
                    }
                }
            }
            return out;
        }
        let sid = v
            .pointer("/params/sessionId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let update = v.pointer("/params/update");
        let kind = update
            .and_then(|u| u.get("sessionUpdate"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let tool = update
            .and_then(|u| u.get("toolCallId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut model = ZedModel::default();
        let known_tool = tool
            .as_ref()
            .is_some_and(|t| self.tools.contains(&(sid.clone(), t.clone())));
        if self.sessions.contains(&sid) {
            let mut thread = Thread::default();
            if let (true, Some(t)) = (known_tool, &tool) {
                thread.entries.push(Entry::Tool(ToolCall {
                    id: t.clone(),
                    ..Default::default()
                }));
            }
            model.threads.insert(sid.clone(), thread);
        }
        model.received(v);
        for k in &model.rejected {
            out.push((
                "zed-rejected-kind",
                format!(
                    "Zed does not know the update kind `{k}`: it rejects the whole notification"
                ),
            ));
        }
        for (s, k) in &model.dropped {
            out.push((
                "zed-unknown-session",
                format!("a `{k}` update for session {s}, which Zed does not have: dropped"),
            ));
        }
        for t in &model.orphan_tool_updates {
            if !self.tools_full {
                out.push((
                    "zed-orphan-tool-update",
                    format!("a tool_call_update for {t} before its tool_call: Zed drops it"),
                ));
            }
        }
        for r in &model.unknown_session_requests {
            out.push((
                "zed-unknown-session-request",
                format!(
                    "a `{}` request for session {sid}, which Zed does not have: Zed answers it with an error",
                    r.get("method").and_then(Value::as_str).unwrap_or("?")
                ),
            ));
        }
        let (Some(thread), Some(t), Some(update)) = (model.threads.get(&sid), &tool, update) else {
            return out;
        };
        let Some(card) = thread.card(t) else {
            return out;
        };
        if kind == "tool_call" && !known_tool {
            let title = update.get("title").and_then(Value::as_str).unwrap_or("");
            if title.trim().is_empty() {
                out.push((
                    "zed-untitled-tool-call",
                    format!("the first tool_call of {t} has no title: Zed shows an empty card"),
                ));
            }
        }
        if update.pointer("/_meta/subagent_session_info").is_some() && card.subagent.is_none() {
            out.push((
                "zed-bad-subagent-info",
                format!(
                    "`_meta.subagent_session_info` of {t} is not {{session_id: string, message_start_index: unsigned, message_end_index?: unsigned}}: Zed ignores it and shows no subagent card"
                ),
            ));
        }
        if self.tools.len() >= MAX_TOOL_CALLS {
            self.tools_full = true;
        } else {
            self.tools.insert((sid, t.clone()));
        }
        out
    }
}

/// What a Zed client is, by its `initialize` (the proxy's own rule for `display = "auto"`).
/// A client that advertises standard subagents gets them as they are (the proxy's
/// `display = "auto"` does the same), so Zed's rules for Zed without them do not apply.
fn is_zed_initialize(v: &Value) -> Option<bool> {
    (v.get("method").and_then(Value::as_str) == Some("initialize")).then(|| {
        let zed = v
            .pointer("/params/clientInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase()
            .contains("zed");
        zed && v.pointer("/params/clientCapabilities/subagents").is_none()
    })
}

/// Judges records one by one.
pub struct Checker {
    opts: Options,
    client_zed: ZedSide,
    agent_zed: ZedSide,
    /// The client is Zed (decided by its `initialize`; until then: yes).
    client_is_zed: Option<bool>,
    pub frames_checked: u64,
    told_not_zed: bool,
    /// The input being handled: (direction, hash and length of its text).
    step_input: Option<(Direction, u64, usize)>,
    /// The schema problems of that input: the same problem in a frame the proxy rewrote
    /// from it is in a field its sender wrote.
    input_problems: std::collections::HashSet<(&'static str, String)>,
}

fn text_hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

impl Checker {
    pub fn new(opts: Options) -> Checker {
        Checker {
            opts,
            client_zed: ZedSide::default(),
            agent_zed: ZedSide::default(),
            client_is_zed: None,
            frames_checked: 0,
            told_not_zed: false,
            step_input: None,
            input_problems: Default::default(),
        }
    }

    fn wants(&self, dir: Direction) -> bool {
        matches!(
            (self.opts.side, dir),
            (SideArg::Both, _)
                | (
                    SideArg::Client,
                    Direction::ClientToProxy | Direction::ProxyToClient
                )
                | (
                    SideArg::Agent,
                    Direction::ProxyToAgent | Direction::AgentToProxy
                )
        )
    }

    /// The findings at one record (its messages already annotated).
    pub fn record(&mut self, rec: &Record, msgs: &[Msg], continuation: bool) -> Vec<Finding> {
        let text = rec.text();
        if rec.dir.is_input() && !continuation {
            self.step_input = Some((rec.dir, text_hash(text), text.len()));
            self.input_problems.clear();
        }
        let relayed = rec.dir.is_output()
            && self
                .step_input
                .is_some_and(|(_, h, len)| len == text.len() && h == text_hash(text));
        let origin = match self.step_input {
            Some((input, ..)) if relayed => writer_of(input),
            _ => writer_of(rec.dir),
        };
        let mut out = Vec::new();
        let mut push = |severity, rule, message| {
            out.push(Finding {
                file: rec.file,
                line: rec.line,
                dir: Some(rec.dir),
                severity,
                rule,
                message,
                origin,
                relayed,
            })
        };
        if rec.dir == Direction::ProxyNote {
            if rec.lost_frames > 0 {
                push(
                    Severity::Warning,
                    "dump-lost-frames",
                    format!(
                        "the dump lost {} frame(s) here: what follows is incomplete",
                        rec.lost_frames
                    ),
                );
            }
            return out;
        }
        if rec.dir == Direction::AgentStderr || !self.wants(rec.dir) {
            return out;
        }
        if rec.partial || continuation {
            if rec.partial && !continuation {
                push(
                    Severity::Info,
                    "oversized",
                    "a line longer than max_frame_bytes, relayed in pieces: not checked".to_owned(),
                );
            }
            return out;
        }
        self.frames_checked += 1;
        if rec.invalid_json {
            push(
                Severity::Error,
                "not-json",
                if rec.invalid_utf8 {
                    "a frame that is not UTF-8".to_owned()
                } else if super::annotate::is_json_out_of_range(rec.text()) {
                    format!(
                        "a frame that is JSON but has a number out of range (no JSON-RPC peer reads it): {}",
                        super::annotate::preview(rec.text(), 60)
                    )
                } else {
                    format!(
                        "a frame that is not JSON: {}",
                        super::annotate::preview(rec.text(), 60)
                    )
                },
            );
            return out;
        }
        for m in msgs {
            let Some(role) = role(m.dir) else {
                continue;
            };
            // In chain mode a frame from the conductor may carry the agent's message.
            let origin = std::cell::Cell::new(if m.dir == rec.dir {
                origin
            } else {
                writer_of(m.dir)
            });
            let mut push = |severity, rule, message| {
                out.push(Finding {
                    file: rec.file,
                    line: rec.line,
                    dir: Some(rec.dir),
                    severity,
                    rule,
                    message,
                    origin: origin.get(),
                    relayed,
                })
            };
            let Some(v) = &m.value else {
                push(Severity::Error, "not-json", m.summary.clone());
                continue;
            };
            if !v.is_object() {
                push(Severity::Error, "not-jsonrpc", m.summary.clone());
                continue;
            }
            let sender = self.step_input.and_then(|(input, ..)| writer_of(input));
            for (rule, severity, message) in schema_problems(role, m, v) {
                let key = (rule, message);
                if rec.dir.is_input() && m.dir == rec.dir {
                    self.input_problems.insert(key.clone());
                }
                let (rule, message) = key;
                if rec.dir.is_output() && !relayed && origin.get() == Some("proxy") {
                    if let Some(who) =
                        sender.filter(|_| self.input_problems.contains(&(rule, message.clone())))
                    {
                        // The proxy rewrote the frame (its opt-ins in an `initialize`) but
                        // the field is as the sender wrote it.
                        let mine = origin.replace(Some(who));
                        push(
                            severity,
                            rule,
                            format!(
                                "{message} (as the {who} sent it, in a frame the proxy rewrote)"
                            ),
                        );
                        origin.set(mine);
                        continue;
                    }
                }
                push(severity, rule, message);
            }
            // What Zed makes of it.
            match m.dir {
                Direction::ClientToProxy => {
                    if let Some(zed) = is_zed_initialize(v) {
                        self.client_is_zed = Some(zed);
                    }
                    self.client_zed.sent(v);
                }
                Direction::ProxyToClient => {
                    let findings = self.client_zed.received(v);
                    if self.client_is_zed == Some(false) {
                        if !findings.is_empty() && !self.told_not_zed {
                            self.told_not_zed = true;
                            push(
                                Severity::Info,
                                "not-zed",
                                "the client is not Zed, or advertises standard subagents (by its initialize): Zed's rules are not applied to what it receives".to_owned(),
                            );
                        }
                    } else {
                        for (rule, message) in findings {
                            push(Severity::Error, rule, message);
                        }
                    }
                }
                Direction::ProxyToAgent => self.agent_zed.sent(v),
                Direction::AgentToProxy => {
                    let findings = self.agent_zed.received(v);
                    if self.opts.agent_as_zed {
                        for (rule, message) in findings {
                            push(
                                Severity::Info,
                                rule,
                                format!("without the proxy: {message}"),
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Findings that only the end of the dump shows: requests never answered.
    pub fn finish(&self, tracker: &Tracker) -> Vec<Finding> {
        tracker
            .open_requests()
            .into_iter()
            .filter(|(_, _, dir, _, _)| self.wants(*dir))
            .map(|(file, line, dir, id, method)| Finding {
                file,
                line,
                dir: Some(dir),
                severity: Severity::Warning,
                rule: "unanswered",
                message: format!("request {id} (`{method}`) was never answered in this dump"),
                origin: answerer_of(dir),
                relayed: false,
            })
            .collect()
    }
}

/// Totals of a check.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    pub errors: u64,
    pub warnings: u64,
    pub infos: u64,
    pub frames: u64,
}

/// Check the whole dump, printing each finding as it is found.
pub fn run(
    reader: &mut Reader,
    tracker: &mut Tracker,
    opts: &Options,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<Summary> {
    let mut checker = Checker::new(opts.clone());
    let mut summary = Summary::default();
    let mut print = |reader: &Reader, f: &Finding, summary: &mut Summary| -> std::io::Result<()> {
        match f.severity {
            Severity::Error => summary.errors += 1,
            Severity::Warning => summary.warnings += 1,
            Severity::Info => summary.infos += 1,
        }
        let pos = reader.position(f.file, f.line);
        if json {
            writeln!(out, "{}", f.to_json(&pos))
        } else {
            writeln!(
                out,
                "{pos}: {} {} [{}] {}{}",
                f.dir.map(|d| d.as_str()).unwrap_or("-"),
                f.severity.as_str(),
                f.rule,
                f.message,
                match (f.relayed, f.origin) {
                    (true, Some(o)) => format!(" (relayed unchanged from the {o})"),
                    _ => String::new(),
                }
            )
        }
    };
    while let Some(item) = reader.next_item()? {
        match item {
            Item::File(info) => tracker.file(&info),
            Item::Bad(b) => {
                let f = Finding {
                    file: b.file,
                    line: b.line,
                    dir: None,
                    severity: Severity::Warning,
                    rule: "dump-damaged",
                    message: b.why,
                    origin: None,
                    relayed: false,
                };
                print(reader, &f, &mut summary)?;
            }
            Item::Record(rec) => {
                let continuation = tracker.is_continuation(&rec);
                let msgs = tracker.record(&rec);
                for f in checker.record(&rec, &msgs, continuation) {
                    print(reader, &f, &mut summary)?;
                }
            }
        }
    }
    for f in checker.finish(tracker) {
        print(reader, &f, &mut summary)?;
    }
    summary.frames = checker.frames_checked;
    if !json {
        writeln!(
            out,
            "{} frame(s) checked: {} error(s), {} warning(s), {} note(s)",
            summary.frames, summary.errors, summary.warnings, summary.infos
        )?;
    }
    out.flush()?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(frames: &[(Direction, Value)]) -> Vec<Finding> {
        let mut t = Tracker::default();
        let mut c = Checker::new(Options::default());
        let mut all = Vec::new();
        for (i, (dir, v)) in frames.iter().enumerate() {
            let rec = acp_proxy::dump::reader::parse_record(
                0,
                i as u64 + 2,
                &json!({"ts": i as f64, "dir": dir, "frame": v.to_string()}).to_string(),
            )
            .expect("record");
            let cont = t.is_continuation(&rec);
            let msgs = t.record(&rec);
            all.extend(c.record(&rec, &msgs, cont));
        }
        all.extend(c.finish(&t));
        all
    }

    const ZED_INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"zed","version":"0.200.0"},"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":false}}}"#;

    fn zed_start() -> Vec<(Direction, Value)> {
        let init: Value = serde_json::from_str(ZED_INIT).expect("json");
        vec![
            (Direction::ClientToProxy, init),
            (
                Direction::ProxyToClient,
                json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}),
            ),
            (
                Direction::ClientToProxy,
                json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
            ),
            (
                Direction::ProxyToClient,
                json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}),
            ),
        ]
    }

    fn update(session: &str, u: Value) -> (Direction, Value) {
        (
            Direction::ProxyToClient,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":session,"update":u}}),
        )
    }

    #[test]
    fn a_clean_exchange_has_no_findings() {
        let mut f = zed_start();
        f.push(update("s1", json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read","status":"pending"})));
        f.push(update(
            "s1",
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}),
        ));
        f.push(update(
            "s1",
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ok"}}),
        ));
        let found = check(&f);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn every_zed_problem_class_is_found_where_it_is() {
        let mut f = zed_start();
        f.push(update(
            "nope",
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}),
        ));
        f.push(update(
            "s1",
            json!({"sessionUpdate":"subagent_update","sessionId":"c1"}),
        ));
        f.push(update(
            "s1",
            json!({"sessionUpdate":"tool_call","toolCallId":"t1"}),
        ));
        f.push(update(
            "s1",
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t9","status":"completed"}),
        ));
        f.push(update("s1", json!({"sessionUpdate":"tool_call","toolCallId":"t2","title":"Agent","_meta":{"subagent_session_info":{"sessionId":"c1","messageStartIndex":0}}})));
        f.push((
            Direction::ProxyToClient,
            json!({"jsonrpc":"2.0","id":"r1","method":"session/request_permission","params":{"sessionId":"ghost","toolCall":{"toolCallId":"t1"},"options":[]}}),
        ));
        let found = check(&f);
        let by_line = |line: u64| -> Vec<&'static str> {
            found
                .iter()
                .filter(|x| x.line == line)
                .map(|x| x.rule)
                .collect()
        };
        assert!(by_line(6).contains(&"zed-unknown-session"), "{found:#?}");
        assert!(by_line(7).contains(&"zed-rejected-kind"), "{found:#?}");
        assert!(by_line(8).contains(&"zed-untitled-tool-call"), "{found:#?}");
        // The schema requires a title too.
        assert!(by_line(8).contains(&"schema"), "{found:#?}");
        assert_eq!(by_line(9), ["zed-orphan-tool-update"]);
        assert_eq!(by_line(10), ["zed-bad-subagent-info"]);
        assert!(
            by_line(11).contains(&"zed-unknown-session-request"),
            "{found:#?}"
        );
        assert!(by_line(11).contains(&"unanswered"), "{found:#?}");
        assert!(found.iter().all(|x| x.severity != Severity::Info));
        // The proxy wrote every frame; a request nobody answered is the answerer's.
        for x in &found {
            let who = if x.rule == "unanswered" {
                "client"
            } else {
                "proxy"
            };
            assert_eq!(x.origin(), Some(who), "{x:?}");
        }
    }

    #[test]
    fn schema_and_envelope_problems_on_both_sides() {
        let f = vec![
            (
                Direction::ClientToProxy,
                json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"mcpServers":[]}}),
            ),
            (
                Direction::ProxyToAgent,
                json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
            ),
            (
                Direction::AgentToProxy,
                json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":7}}),
            ),
            (
                Direction::ProxyToAgent,
                json!({"id":2.5,"method":"session/cancel_all","params":{}}),
            ),
            (
                Direction::AgentToProxy,
                json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}}),
            ),
            (
                Direction::AgentToProxy,
                json!({"jsonrpc":"2.0","id":99,"result":{}}),
            ),
            (Direction::ProxyToClient, json!([1, 2])),
        ];
        let found = check(&f);
        let at = |line: u64| -> Vec<&'static str> {
            found
                .iter()
                .filter(|x| x.line == line)
                .map(|x| x.rule)
                .collect()
        };
        assert_eq!(at(2), ["schema", "unanswered"], "missing cwd: {found:#?}");
        assert!(at(3).is_empty(), "{found:#?}");
        assert_eq!(at(4), ["schema"], "a session id that is not a string");
        assert_eq!(
            at(5),
            ["jsonrpc", "jsonrpc", "unknown-method", "unanswered"]
        );
        assert_eq!(at(6), ["schema"]);
        assert_eq!(at(7), ["unmatched-response"]);
        assert_eq!(at(8), ["not-jsonrpc"]);
        // Lines 4, 6 and 7 are the agent's, and so is the answer it never gave to line 5.
        assert_eq!(
            found.iter().filter(|x| x.origin() == Some("agent")).count(),
            4
        );
    }
}
