//! The sans-IO core: frames in, actions out.
//!
//! The engine owns all protocol state (pending requests, output mode, subagents) and never does
//! I/O or reads a clock: the shell passes each frame with a timestamp and carries out the
//! returned [`Action`]s in order. Frames it does not change are forwarded as the same `Bytes`.
//!
//! Routing is split by concern: [`agent_side`] handles what the agent sends (updates,
//! requests to the client), [`client_side`] what the client sends about child sessions, and
//! [`frames`] builds the few JSON-RPC lines the proxy writes itself.

mod agent_side;
mod client_side;
pub mod envelope;
pub mod frames;
mod json_walk;
pub mod pending;
pub mod prescan;
pub mod scan;
pub mod update_parts;

use hashbrown::HashSet;
use std::borrow::Cow;

use crate::subagents::pair::{Pair, PairRef, PairSet};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::config::Display;
use crate::subagents::detect::Detector;
use crate::subagents::model::{Child, Registry};
use crate::subagents::persist::{StoreOp, StoredChild};
use crate::subagents::select::{AgentInfo, PresetChoice};
use crate::subagents::{transcript, zed};
use envelope::{Kind, Parsed};
use pending::PendingRequests;

/// Milliseconds on a monotonic clock chosen by the shell.
pub type Millis = u64;

/// What the shell must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write these bytes (one or more complete lines) to the client.
    ToClient(Bytes),
    /// Write these bytes (one or more complete lines) to the agent.
    ToAgent(Bytes),
    /// A diagnostic worth a line on stderr and a record in the dump.
    Note(Note),
    /// Persist this in the durable store (off the hot path).
    Store(StoreOp),
    /// Look up every stored child of this parent session and hand them to
    /// [`Engine::restore`] before carrying out the next action.
    FetchChildren { parent_session_id: String },
    /// Look up one stored child and hand it to [`Engine::child_fetched`] with this request.
    FetchChild { child_id: String, request: Bytes },
}

/// A diagnostic from the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub level: NoteLevel,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteLevel {
    Info,
    Warn,
}

/// Where child events may also appear live in the parent thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LiveChildEvents {
    #[default]
    Hide,
    Flat,
}

/// What a client's Stop on a child does when the agent cannot cancel that child alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ChildCancel {
    #[default]
    Parent,
    Ignore,
}

/// Engine settings (from `proxy.toml`).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub display: Display,
    /// Opt in to standard subagents and the child transcript on the client's behalf.
    pub opt_in: bool,
    pub live_child_events: LiveChildEvents,
    pub live_progress: bool,
    pub child_cancel: ChildCancel,
    /// How long a permission request that may belong to a child waits for attribution.
    pub permission_hold_ms: Millis,
    pub max_held_permissions: usize,
    /// Subagent presets: named by the config, or chosen from the agent's `initialize`.
    pub presets: PresetChoice,
    pub limits: Limits,
}

/// Bounds against runaway or hostile agents. Past a limit the proxy stops modelling that
/// child and relays its frames unchanged; it never drops a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_subagents_per_session: usize,
    pub max_depth: usize,
    pub max_transcript_bytes: usize,
    /// Finished children kept in memory; older ones are served from the store.
    pub max_finished_in_memory: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_subagents_per_session: 1000,
            max_depth: 8,
            max_transcript_bytes: 16 * 1024 * 1024,
            max_finished_in_memory: 16,
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            display: Display::Auto,
            opt_in: true,
            live_child_events: LiveChildEvents::Hide,
            live_progress: true,
            child_cancel: ChildCancel::Parent,
            permission_hold_ms: 500,
            max_held_permissions: 64,
            presets: PresetChoice::default(),
            limits: Limits::default(),
        }
    }
}

/// The output flavour in force once the client's `initialize` was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Pure relay.
    Off,
    /// Zed's `_meta.subagent_session_info` cards and proxy-served child threads.
    Zed,
    /// The client speaks standard ACP subagents: relay them as they are.
    Acp,
    /// Neither: the child's work is folded into its spawn card as a bounded log.
    Transcript,
}

/// The spawn card the proxy creates for a child announced without a tool call, in the
/// flavour of `mode`.
fn synthesized_card_for(mode: Option<Mode>, child: &Child) -> Value {
    match mode {
        Some(Mode::Transcript) => transcript::synthesized_card(child),
        _ => zed::synthesized_card(child),
    }
}

/// A spawn card update in the flavour of `mode`.
fn card_for(mode: Option<Mode>, child: &Child, status: Option<&str>, title: Option<&str>) -> Value {
    match mode {
        Some(Mode::Transcript) => transcript::card_update(child, status, title),
        _ => zed::card_update(child, status, title),
    }
}

/// A permission request waiting to learn which session it belongs to.
#[derive(Debug)]
struct HeldRequest {
    session: String,
    tool_call_id: String,
    frame: Bytes,
    deadline: Millis,
}

/// The protocol state machine between one client and one agent.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    mode: Option<Mode>,
    /// Client requests the agent has not answered yet.
    client_requests: PendingRequests,
    detector: Detector,
    reg: Registry,
    /// The agent itself supports `session/load` (we advertise it to Zed either way).
    agent_loads: bool,
    agent_name: String,
    /// Parent sessions whose `session/load` replay is under way.
    replaying: HashSet<String>,
    held: Vec<HeldRequest>,
    /// Child ids the store was already asked about (a miss there is final).
    store_tried: HashSet<String>,
    /// Mismatch reports already made (each kind once per connection).
    reported: HashSet<String>,
    /// Spawns over a limit, as (agent session, tool call id): their events pass through.
    passthrough_spawns: PairSet,
    /// Finished children in the order they finished (the oldest leave memory first).
    finished: std::collections::VecDeque<String>,
    /// Synthesized cards already shown again during the current parent replays.
    replay_cards: HashSet<String>,
    /// Recent tool calls that went to a top-level thread: their permission requests are the
    /// parent's and never wait for attribution.
    parent_tools: RecentSet,
}

/// Child ids remembered as already looked up in the store, at most.
const STORE_TRIED_MAX: usize = 4096;

/// A bounded set that forgets its oldest members: the last [`RecentSet::CAPACITY`] to
/// [`RecentSet::CAPACITY`] × 2 inserted, kept as two generations (when the newer one is full
/// it becomes the older, and the older is dropped), so an insert is one hash insert, with no
/// queue of keys beside the set.
#[derive(Debug, Default)]
struct RecentSet {
    newer: PairSet,
    older: PairSet,
}

impl RecentSet {
    const CAPACITY: usize = 4096;

    fn insert(&mut self, session: &str, id: &str) {
        if self.contains(session, id) {
            return;
        }
        if self.newer.len() >= Self::CAPACITY {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(Pair::new(session, id));
    }

    fn contains(&self, session: &str, id: &str) -> bool {
        let key = PairRef(session, id);
        self.newer.contains(&key) || self.older.contains(&key)
    }

    fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new(EngineConfig::default())
    }
}

/// `params` of a request or notification that names a session.
#[derive(Deserialize)]
struct SessionParams<'a> {
    #[serde(borrow, rename = "sessionId", default)]
    session_id: Option<Cow<'a, str>>,
}

fn session_of(params: Option<&RawValue>) -> Option<String> {
    let p: SessionParams<'_> = serde_json::from_str(params?.get()).ok()?;
    p.session_id.map(Cow::into_owned)
}

impl Engine {
    pub fn new(cfg: EngineConfig) -> Self {
        let detector = Detector::new(cfg.presets.initial());
        let mode = (cfg.display == Display::Off).then_some(Mode::Off);
        Engine {
            cfg,
            mode,
            client_requests: PendingRequests::default(),
            detector,
            reg: Registry::default(),
            agent_loads: false,
            agent_name: String::new(),
            replaying: HashSet::new(),
            held: Vec::new(),
            store_tried: HashSet::new(),
            reported: HashSet::new(),
            passthrough_spawns: PairSet::default(),
            finished: std::collections::VecDeque::new(),
            replay_cards: HashSet::new(),
            parent_tools: RecentSet::default(),
        }
    }

    /// The output flavour, once the client's `initialize` decided it.
    pub fn mode(&self) -> Option<Mode> {
        self.mode
    }

    fn zed(&self) -> bool {
        self.mode == Some(Mode::Zed)
    }

    /// Whether the proxy models subagents for this client (Zed cards or folded transcripts).
    pub fn models_subagents(&self) -> bool {
        matches!(self.mode, Some(Mode::Zed | Mode::Transcript))
    }

    /// A frame (one line, terminator included) arrived from the client.
    pub fn from_client(&mut self, frame: Bytes, now: Millis, out: &mut Vec<Action>) {
        let Parsed::Message(env) = envelope::parse(&frame) else {
            out.push(Action::ToAgent(frame));
            return;
        };
        let kind = env.kind();
        let method = env.method().unwrap_or("").to_owned();
        if self.mode == Some(Mode::Off) {
            if let (Kind::Request, Some(id)) = (kind, env.id) {
                self.client_requests.insert(id, &method, None);
            }
            out.push(Action::ToAgent(frame));
            return;
        }
        match kind {
            Kind::Request => {
                let Some(id) = env.id.map(RawValue::to_owned) else {
                    return;
                };
                if method == "initialize" {
                    self.client_requests.insert(&id, &method, None);
                    drop(env);
                    self.client_initialize(frame, out);
                    return;
                }
                let session = session_of(env.params);
                drop(env);
                if self.models_subagents() {
                    if let Some(sid) = &session {
                        if client_side::is_child_id(&self.reg, sid) {
                            self.client_child_request(&id, &method, sid, frame, now, out);
                            return;
                        }
                    }
                    if method == "session/load" {
                        if let Some(sid) = &session {
                            if !self.agent_loads {
                                out.push(Action::ToClient(frames::error(
                                    &id,
                                    -32601,
                                    "acp-proxy: the agent does not support session/load, so this session cannot be reopened",
                                )));
                                return;
                            }
                            self.begin_replay(sid, out);
                        }
                    }
                }
                self.client_requests
                    .insert(&id, &method, session.as_deref());
                out.push(Action::ToAgent(frame));
            }
            Kind::Notification if self.models_subagents() => {
                let session = session_of(env.params);
                drop(env);
                match session {
                    Some(sid) if client_side::is_child_id(&self.reg, &sid) => {
                        self.client_child_notification(&method, &sid, out);
                    }
                    _ => out.push(Action::ToAgent(frame)),
                }
            }
            _ => out.push(Action::ToAgent(frame)),
        }
    }

    /// A frame (one line, terminator included) arrived from the agent.
    pub fn from_agent(&mut self, frame: Bytes, now: Millis, out: &mut Vec<Action>) {
        self.from_agent_scanned(frame, None, now, out);
    }

    /// What reads agent frames ahead for this engine (its presets' byte tests).
    pub fn scanner(&self) -> prescan::Scanner {
        prescan::Scanner::new(self.detector.clone())
    }

    /// [`Engine::from_agent`] for a frame a [`prescan::Scanner`] may have read already (on
    /// another thread): the same decisions, without searching and parsing the frame again.
    pub fn from_agent_scanned(
        &mut self,
        frame: Bytes,
        scan: Option<prescan::AgentScan>,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        let (found, pre) = match scan {
            Some(s) => (Some(s.found), s.update),
            None => (None, prescan::Pre::NotTried),
        };
        let found = if self.models_subagents() {
            // Every key the decisions below test for, found in one pass over the frame.
            found.unwrap_or_else(|| self.detector.scan(&frame))
        } else {
            // Without subagents only responses to the client's requests matter (they are
            // answered by the proxy if the agent dies, and `initialize` is read).
            if self.client_requests.is_empty() || !scan::has(&scan::ID_KEY, &frame) {
                out.push(Action::ToClient(frame));
                return;
            }
            scan::Found::new(scan::kind::ID)
        };
        let has_id = found.has(scan::kind::ID);
        if !has_id && self.passes_untouched(&frame, found) {
            out.push(Action::ToClient(frame));
            return;
        }
        // The envelope borrows from a second handle on the same bytes, so that `frame`
        // itself can still be moved on untouched.
        let body = frame.clone();
        let maybe_update = match pre {
            prescan::Pre::NotTried => scan::has(&scan::SESSION_UPDATE, &body),
            prescan::Pre::Refused => false,
            prescan::Pre::Parsed(_) => true,
        };
        if self.models_subagents() && !has_id && maybe_update {
            // A notification that is most likely a session/update: take it apart in one pass
            // (or take the parts the scanner found).
            let text = std::str::from_utf8(crate::transport::framing::line_body(&body)).ok();
            let parsed = text.and_then(|text| match &pre {
                prescan::Pre::Parsed(spans) => spans
                    .view(text)
                    .or_else(|| update_parts::UpdateFrame::parse(text)),
                _ => update_parts::UpdateFrame::parse(text),
            });
            if let Some(f) = parsed {
                self.agent_update_parts(frame, &f.session_id, f.update, found, now, out);
                return;
            }
        }
        let Parsed::Message(env) = envelope::parse(&body) else {
            out.push(Action::ToClient(frame));
            return;
        };
        match env.kind() {
            Kind::Response => {
                let Some(req) = env.id.and_then(|id| self.client_requests.remove(id)) else {
                    out.push(Action::ToClient(frame));
                    return;
                };
                if self.mode == Some(Mode::Off) {
                    out.push(Action::ToClient(frame));
                    return;
                }
                self.agent_response(req, frame, out);
            }
            Kind::Notification
                if self.models_subagents() && env.method() == Some("session/update") =>
            {
                match env.params {
                    Some(p) => self.agent_update(frame, p.get(), found, now, out),
                    None => out.push(Action::ToClient(frame)),
                }
            }
            // With no subagent known and no parent key in the frame, a request cannot belong
            // to a child nor wait for one: it passes without being read further.
            Kind::Request
                if self.models_subagents()
                    && self.reg.is_empty()
                    && !found.has(scan::kind::PARENT) =>
            {
                out.push(Action::ToClient(frame));
            }
            Kind::Request if self.models_subagents() => {
                self.route_agent_request(frame, now, true, out);
            }
            _ => out.push(Action::ToClient(frame)),
        }
    }

    /// The hot path: most agent frames (message chunks, plans, usage) need no parse at all.
    /// A frame without an `"id"` key is no request or response; one that also names no tool
    /// call, no subagent kind, no parent reference (and no standard child is known, whose
    /// traffic is told apart by session id) cannot concern a subagent. The byte tests can
    /// only err towards the slow path: inside JSON strings quotes are escaped, so these keys
    /// cannot hide, while look-alikes in text merely cost a parse. The caller has already
    /// checked that the frame has no `"id"` key.
    fn passes_untouched(&self, frame: &[u8], found: scan::Found) -> bool {
        use scan::kind;
        match self.mode {
            None | Some(Mode::Off) | Some(Mode::Acp) => true,
            Some(Mode::Zed | Mode::Transcript) => {
                if self.reg.has_agent_children()
                    || found.has(kind::SUBAGENT | kind::SESSION_MESSAGE | kind::PARENT)
                {
                    return false;
                }
                if !found.has(kind::TOOL_CALL) {
                    return true;
                }
                if !found.has(kind::NEW_TOOL_CALL) {
                    // Only updates of tool calls: one concerns a subagent only when it names a
                    // spawn or a child's tool call (no spawn starts, nothing held is released).
                    // The parent's updates while children run, most bytes of a delegating
                    // turn, pass without a parse.
                    return !self.reg.may_know_tool_in(frame);
                }
                // A tool call: it may start a subagent, belong to a child, or be waited for
                // by a held permission request (then the parent's tool calls are tracked).
                self.held.is_empty()
                    && !self.reg.has_open_legacy_children()
                    && !found.has(kind::SPAWN)
                    && !self.reg.may_know_tool_in(frame)
            }
        }
    }

    /// The agent is gone: answer every request the client still waits for with an error
    /// that says why, oldest first.
    pub fn agent_gone(&mut self, reason: &str, out: &mut Vec<Action>) {
        for held in std::mem::take(&mut self.held) {
            // The client may still answer nothing useful, but it must not lose the frame.
            out.push(Action::ToClient(held.frame));
        }
        for req in self.client_requests.drain_in_order() {
            let line = frames::error(
                &req.id,
                -32603,
                &format!(
                    "acp-proxy: the agent exited before answering `{}`: {reason}",
                    req.method
                ),
            );
            out.push(Action::ToClient(line));
        }
    }

    /// Children currently held in memory (finished ones beyond the limit live in the store).
    pub fn children_in_memory(&self) -> usize {
        self.reg.len()
    }

    /// Sizes of every collection the engine keeps, to check that long sessions stay bounded.
    pub fn footprint(&self) -> Vec<(&'static str, usize)> {
        let mut sizes = self.reg.footprint();
        sizes.extend([
            ("pending_client_requests", self.client_requests.len()),
            ("replaying", self.replaying.len()),
            ("held", self.held.len()),
            ("store_tried", self.store_tried.len()),
            ("reported", self.reported.len()),
            ("passthrough_spawns", self.passthrough_spawns.len()),
            ("finished", self.finished.len()),
            ("replay_cards", self.replay_cards.len()),
            ("parent_tools", self.parent_tools.len()),
        ]);
        sizes
    }

    /// Number of client requests still waiting for the agent.
    pub fn pending_client_requests(&self) -> usize {
        self.client_requests.len()
    }

    /// When [`Engine::handle_timeout`] must next be called, if ever.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.held.iter().map(|h| h.deadline).min()
    }

    /// Time passed: release what waited too long.
    pub fn handle_timeout(&mut self, now: Millis, out: &mut Vec<Action>) {
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.deadline <= now);
        self.held = keep;
        for h in due {
            self.note(
                out,
                NoteLevel::Info,
                format!(
                    "permission request for tool call {} could not be attributed within {} ms: shown in its session as sent",
                    h.tool_call_id, self.cfg.permission_hold_ms
                ),
            );
            self.route_agent_request(h.frame, now, false, out);
        }
    }

    /// Children the store kept for a parent session (after a restart).
    pub fn restore(&mut self, children: Vec<StoredChild>) {
        for stored in children {
            let id = stored.child_id.clone();
            client_side::restore_child(&mut self.reg, stored);
            let replaying = &self.replaying;
            if let Some(child) = self.reg.get_mut(&id) {
                child.replay_skip = replaying.contains(&child.top) && !child.thread.is_empty();
            }
        }
    }

    /// The store's answer to [`Action::FetchChild`]: serve or refuse the held request.
    pub fn child_fetched(
        &mut self,
        child: Option<StoredChild>,
        request: Bytes,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        if self.store_tried.len() >= STORE_TRIED_MAX {
            // Only a cache of answers: forgetting it means asking the store again.
            self.store_tried.clear();
        }
        let restored = child.map(|stored| {
            let id = stored.child_id.clone();
            self.store_tried.insert(id.clone());
            client_side::restore_child(&mut self.reg, stored);
            id
        });
        if let Parsed::Message(env) = envelope::parse(&request) {
            if let Some(sid) = session_of(env.params) {
                self.store_tried.insert(sid);
            }
        }
        self.from_client(request, now, out);
        if let Some(id) = restored {
            // Served: a finished child leaves memory again in its turn, like any other.
            self.retire(&id);
        }
    }

    fn note(&mut self, out: &mut Vec<Action>, level: NoteLevel, message: String) {
        out.push(Action::Note(Note { level, message }));
    }

    /// Report a shape mismatch once per kind: "agent changed" must be told from "proxy bug".
    fn report_once(&mut self, key: &str, out: &mut Vec<Action>, message: String) {
        if self.reported.insert(key.to_owned()) {
            self.note(out, NoteLevel::Warn, message);
        }
    }

    fn client_initialize(&mut self, frame: Bytes, out: &mut Vec<Action>) {
        let Ok(mut msg) =
            serde_json::from_slice::<Value>(crate::transport::framing::line_body(&frame))
        else {
            out.push(Action::ToAgent(frame));
            return;
        };
        let params = &msg["params"];
        let advertises_subagents = params.pointer("/clientCapabilities/subagents").is_some();
        let client_name = params
            .pointer("/clientInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let is_zed = client_name.to_ascii_lowercase().contains("zed");
        let mode = match self.cfg.display {
            Display::Off => Mode::Off,
            Display::Zed => Mode::Zed,
            Display::Acp => Mode::Acp,
            Display::Transcript => Mode::Transcript,
            Display::Auto if advertises_subagents => Mode::Acp,
            Display::Auto if is_zed => Mode::Zed,
            Display::Auto => Mode::Transcript,
        };
        self.mode = Some(mode);
        self.note(
            out,
            NoteLevel::Info,
            format!(
                "client `{client_name}`: subagents shown as {mode:?} (display = {:?})",
                self.cfg.display
            ),
        );
        if !matches!(mode, Mode::Zed | Mode::Transcript) {
            out.push(Action::ToAgent(frame));
            return;
        }
        let mut changed = false;
        if let Some(v) = msg.pointer_mut("/params/protocolVersion") {
            if v.as_u64().is_some_and(|n| n > 1) {
                // The proxy understands v1 shapes only: negotiate v1 rather than let a newer
                // version through silently.
                *v = Value::from(1);
                changed = true;
            }
        }
        if self.cfg.opt_in {
            if let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) {
                let caps = params
                    .entry("clientCapabilities")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(caps) = caps.as_object_mut() {
                    if !caps.contains_key("subagents") {
                        caps.insert("subagents".into(), Value::Object(Default::default()));
                        changed = true;
                    }
                    let meta = caps
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(Default::default()));
                    if let Some(meta) = meta.as_object_mut() {
                        meta.insert("subagent-transcript".into(), Value::Bool(true));
                        changed = true;
                    }
                }
            }
        }
        out.push(Action::ToAgent(if changed {
            frames::line(&msg)
        } else {
            frame
        }));
    }

    fn agent_response(
        &mut self,
        req: pending::PendingRequest,
        frame: Bytes,
        out: &mut Vec<Action>,
    ) {
        if req.method == "initialize" && self.models_subagents() {
            self.choose_presets(&frame, out);
        }
        match req.method.as_str() {
            "initialize" if self.zed() => self.agent_initialized(frame, out),
            "session/load" => {
                if let Some(sid) = &req.session {
                    self.end_replay(sid, out);
                }
                out.push(Action::ToClient(frame));
            }
            "session/list" if self.models_subagents() => out.push(Action::ToClient(
                client_side::filter_session_list(&self.reg, frame),
            )),
            "session/prompt" if self.models_subagents() => {
                out.push(Action::ToClient(frame));
                if let Some(sid) = req.session {
                    self.turn_ended(&sid, out);
                }
            }
            _ => out.push(Action::ToClient(frame)),
        }
    }

    /// The subagent presets for this agent, chosen from its `initialize` answer (unless the
    /// config names them), and a note saying which and why.
    fn choose_presets(&mut self, frame: &[u8], out: &mut Vec<Action>) {
        let info = AgentInfo::from_initialize_response(crate::transport::framing::line_body(frame));
        let chosen = self.cfg.presets.choose(info.as_ref());
        self.detector = Detector::new(chosen.presets);
        self.note(out, NoteLevel::Info, chosen.reason);
    }

    fn agent_initialized(&mut self, frame: Bytes, out: &mut Vec<Action>) {
        let Ok(mut msg) =
            serde_json::from_slice::<Value>(crate::transport::framing::line_body(&frame))
        else {
            out.push(Action::ToClient(frame));
            return;
        };
        let Some(result) = msg.get_mut("result").and_then(Value::as_object_mut) else {
            out.push(Action::ToClient(frame));
            return;
        };
        self.agent_name = result
            .get("agentInfo")
            .and_then(|i| i.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("agent")
            .to_owned();
        let caps = result
            .entry("agentCapabilities")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(caps) = caps.as_object_mut() {
            self.agent_loads = caps.get("loadSession").and_then(Value::as_bool) == Some(true);
            // Zed loads child threads only from agents that advertise loadSession; the proxy
            // serves child loads itself and answers parent loads with an error when the
            // agent cannot.
            caps.insert("loadSession".into(), Value::Bool(true));
        }
        out.push(Action::ToClient(frames::line(&msg)));
    }

    fn begin_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        self.replaying.insert(session.to_owned());
        out.push(Action::FetchChildren {
            parent_session_id: session.to_owned(),
        });
        // Children already known keep their recorded thread: the replay must not double it.
        for child in self.reg.children.values_mut() {
            if child.top == session && !child.thread.is_empty() {
                child.replay_skip = true;
            }
        }
    }

    /// The agent finished replaying a parent. Cards the proxy synthesized for standard
    /// children are not in the agent's history unless it replayed the announcements: show
    /// the missing ones now, so the reopened thread has every card.
    fn end_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        if !self.replaying.remove(session) {
            return;
        }
        let mut missing: Vec<&Child> = self
            .reg
            .children
            .values()
            .filter(|c| c.top == session && c.parent == session && c.agent_child.is_some())
            .filter(|c| !self.replay_cards.contains(&c.id))
            .collect();
        missing.sort_by(|a, b| a.spawn_id.cmp(&b.spawn_id));
        let cards: Vec<Value> = missing
            .into_iter()
            .map(|c| synthesized_card_for(self.mode, c))
            .collect();
        for card in cards {
            out.push(Action::ToClient(zed::notification(session, &card)));
        }
        let mut done = Vec::new();
        for child in self.reg.children.values_mut() {
            if child.top == session {
                child.replay_skip = false;
                done.push(child.id.clone());
            }
        }
        // A fixed order (the map's is random per process): the same children leave memory.
        done.sort();
        for id in done {
            self.replay_cards.remove(&id);
            // Children restored for the replay leave memory again in their turn.
            self.retire(&id);
        }
    }
}

#[cfg(test)]
mod tests;
