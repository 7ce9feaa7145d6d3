//! The sans-IO core: frames in, actions out.
//!
//! The engine owns all protocol state (pending requests, output mode, subagents) and never does
//! I/O or reads a clock: the shell passes each frame with a timestamp and carries out the
//! returned [`Action`]s in order. Frames it does not change are forwarded as the same `Bytes`.
//!
//! Its whole API is the one `impl Engine` here: frames from the client
//! ([`Engine::from_client`]), runs of lines from the agent ([`Engine::from_agent`]), time
//! ([`Engine::poll_timeout`], [`Engine::handle_timeout`]), the store's answers
//! ([`Engine::restore`], [`Engine::child_fetched`]), the agent's records of children
//! ([`Engine::record_read`]) and the agent's end. The work is split by
//! concern, the main flow apart from what single agent families need:
//! - `handshake`: `initialize`, which decides the output flavour (and its renderer);
//! - `runs`: a run of agent lines, the ones the state cannot concern passed untouched;
//! - `route`: where an agent's `session/update` goes (most pass on the bytes alone);
//! - `tool_order`: Zed's rules for the tool calls of a thread;
//! - `child`: a child's life (spawned or announced, its events and thread, its end, its
//!   card's paced progress);
//! - `client`: the client's side (child sessions it opens, parents it reopens, the agent's
//!   requests to it, requests for a session it is still creating);
//! - `quirks`: mechanisms of single agent families (children the agent replays, sibling
//!   calls, folded work, timing, end signals, foreign cards, refused announcements);
//! - `pending`, `recent`: the bounded collections the rest keeps.
//!
//! The engine imports only [`crate::wire`] and [`crate::subagents`]; the shell, the store and
//! the config depend on it, never the other way round.

mod action;
mod child;
mod client;
mod config;
mod handshake;
mod pending;
mod quirks;
mod recent;
mod route;
mod runs;
mod tool_order;

pub use action::{Action, Note, NoteLevel};
pub use config::{ChildCancel, EngineConfig, Limits, LiveChildEvents, SubagentDisplay, ZedOptions};

use std::borrow::Cow;

use bytes::Bytes;
use hashbrown::HashSet;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::subagents::ids::ChildId;
use crate::subagents::model::{Children, History};
use crate::subagents::persist::StoredChild;
use crate::subagents::preset::detect::Detector;
use crate::subagents::records::Record;
use crate::subagents::render::Output;
use crate::wire::envelope::{self, Kind, Parsed, RawJson};
use crate::wire::keys;
use crate::wire::read_ahead::{AgentScan, Pre, RunScan, Scanner};
use crate::wire::request_view::RequestView;
use crate::wire::update_view::UpdateFrame;
use crate::wire::{self, write};
use client::permissions::Held;
use client::reopen::Reopen;
use pending::PendingRequests;
use quirks::bind::Bindings;
use quirks::child_fetch::AgentReplays;
use quirks::sibling::Siblings;
use recent::RecentSet;
use runs::Fate;

/// Milliseconds on a monotonic clock chosen by the shell.
pub type Millis = u64;

/// The output flavour in force once the client's `initialize` was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Pure relay.
    Off,
    /// Zed's `_meta.subagent_session_info` cards and proxy-served child threads.
    Zed,
    /// The client speaks standard ACP subagents: the agent's own are relayed as they are, the
    /// others translated into them.
    Acp,
    /// Neither: the child's work is folded into its spawn card as a bounded log.
    Transcript,
}

/// The protocol state machine between one client and one agent.
#[derive(Debug)]
pub struct Engine {
    cfg: EngineConfig,
    mode: Option<Mode>,
    /// Client requests the agent has not answered yet.
    client_requests: PendingRequests,
    detector: Detector,
    reg: Children,
    /// What this client is shown of subagents: cards in a style, or standard subagents
    /// (decided with the output flavour).
    render: Output,
    /// The agent itself supports `session/load` (we advertise it to Zed either way).
    agent_loads: bool,
    agent_name: String,
    /// Parents being reopened, and what the store was asked.
    reopen: Reopen,
    /// Permission requests held for attribution, and the parents' recent tool calls.
    held: Held,
    /// Mismatch reports already made (each kind once per connection).
    reported: HashSet<String>,
    /// Spawns over a limit, as (agent session, tool call id): their events pass through.
    /// Bounded: an agent that goes on spawning past a limit cannot grow it.
    passthrough_spawns: RecentSet,
    /// Finished children in the order they finished (the oldest leave memory first).
    finished: std::collections::VecDeque<ChildId>,
    /// The tool calls top-level threads hold, for Zed's order rules (`tool_order`).
    thread_tools: tool_order::ThreadTools,
    /// Child sessions the agent announced itself, for a client that speaks standard subagents:
    /// their traffic passes as it is. Keyed by ("", child session id).
    native_children: RecentSet,
    /// The sessions the client knows, for agent requests while one is being created.
    sessions: client::early_requests::SessionsKnown,
    /// Child sessions named by subagent cards from the agent side (another link's).
    foreign: quirks::foreign::ForeignCards,
    /// Standard child sessions whose announcement was refused.
    refused: quirks::guards::Refused,
    /// The time of the frame (or timeout) being handled.
    now: Millis,
    /// Live progress of cards, paced.
    pace: child::pace::Pacer,
    /// Children the agent replays itself, fetched by the proxy.
    agent_replays: AgentReplays,
    /// Calls beside spawns that carry their children's work.
    siblings: Siblings,
    /// The agent's own child ids bound to spawns (`child_ref`).
    bindings: Bindings,
    replayed_spawns: quirks::replayed_ids::ReplayedSpawns,
    /// Announced children whose task no frame carries, with the preset's note.
    untold_tasks: quirks::end_signals::UntoldTasks,
    /// Agent ids of children whose agent keeps a record of them on disk.
    child_records: quirks::records::ChildRecords,
    /// Messages begun in a parent's thread while timing could not choose a child.
    parent_messages: quirks::timing::ParentMessages,
    /// Bytes of a child's thread kept in memory when a store holds the rest (`None`: all).
    spill_over: Option<usize>,
    /// A child load is being answered after the store was read for it: what memory holds is
    /// served even if the store could not give back all of the thread.
    store_read: bool,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new(EngineConfig::default())
    }
}

/// A string field of a JSON object.
pub(super) fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// `params` of a request or notification that names a session.
#[derive(Deserialize)]
struct SessionParams<'a> {
    #[serde(borrow, rename = "sessionId", default)]
    session_id: Option<Cow<'a, str>>,
}

fn session_of(params: Option<RawJson<'_>>) -> Option<String> {
    let p: SessionParams<'_> = serde_json::from_str(params?.get()).ok()?;
    p.session_id.map(Cow::into_owned)
}

impl Engine {
    pub fn new(cfg: EngineConfig) -> Self {
        let detector = Detector::new(cfg.presets.initial());
        let mode = (cfg.display == SubagentDisplay::Off).then_some(Mode::Off);
        let render = handshake::renderer_for(None, &cfg);
        Engine {
            cfg,
            mode,
            client_requests: PendingRequests::default(),
            detector,
            reg: Children::default(),
            render,
            agent_loads: false,
            agent_name: String::new(),
            reopen: Reopen::default(),
            held: Held::default(),
            reported: HashSet::new(),
            passthrough_spawns: RecentSet::default(),
            finished: std::collections::VecDeque::new(),
            thread_tools: tool_order::ThreadTools::default(),
            native_children: RecentSet::default(),
            sessions: Default::default(),
            foreign: Default::default(),
            refused: Default::default(),
            now: 0,
            pace: child::pace::Pacer::default(),
            agent_replays: AgentReplays::default(),
            siblings: Siblings::default(),
            bindings: Bindings::default(),
            replayed_spawns: Default::default(),
            untold_tasks: Default::default(),
            child_records: Default::default(),
            parent_messages: Default::default(),
            spill_over: None,
            store_read: false,
        }
        .with_spill()
    }

    /// Children's older updates leave memory as the limits say (the store keeps them).
    fn with_spill(mut self) -> Self {
        let keep = self.cfg.limits.max_thread_bytes_in_memory;
        self.spill_over = (keep > 0).then_some(keep);
        self
    }

    /// There is no store to read children's threads back from: every update stays in memory.
    pub fn without_store(&mut self) {
        self.spill_over = None;
    }

    /// The output flavour, once the client's `initialize` decided it.
    pub fn mode(&self) -> Option<Mode> {
        self.mode
    }

    fn zed(&self) -> bool {
        self.mode == Some(Mode::Zed)
    }

    /// Whether the proxy models subagents for this client (Zed cards, standard subagents or
    /// folded transcripts).
    pub fn models_subagents(&self) -> bool {
        matches!(self.mode, Some(Mode::Zed | Mode::Acp | Mode::Transcript))
    }

    /// A frame (one line, terminator included) arrived from the client.
    pub fn from_client(&mut self, frame: Bytes, now: Millis, out: &mut Vec<Action>) {
        self.now = self.now.max(now);
        // A pure relay only notes the client's requests: a frame that names no method (an
        // answer to the agent) goes on unread.
        if self.mode == Some(Mode::Off) && !keys::has(&keys::METHOD_KEY, &frame) {
            out.push(Action::ToAgent(frame));
            return;
        }
        // In any mode, a frame with no `"method"` key, written plainly or escaped, is an
        // answer (or no message): it matters only while a request waits on a card.
        if !self.held.any_on_cards() && keys::names_no_method(&frame) {
            out.push(Action::ToAgent(frame));
            return;
        }
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
                    if matches!(method.as_str(), "session/new" | "session/load") {
                        self.agent_replays.client_opens(&id, &method, &frame);
                    }
                    if let Some(sid) = &session {
                        if self.serves_child(sid) {
                            self.client_child_request(&id, &method, sid, frame, now, out);
                            return;
                        }
                    }
                    if method == "session/load" {
                        if let Some(sid) = &session {
                            if !self.agent_loads {
                                out.push(Action::ToClient(write::error(
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
                self.sessions.client_request(&method, session.as_deref());
                self.client_requests
                    .insert(&id, &method, session.as_deref());
                out.push(Action::ToAgent(frame));
            }
            Kind::Response if self.held.any_on_cards() => {
                if let Some(id) = env.id.map(|id| id.get().to_owned()) {
                    drop(env);
                    self.card_request_answered(&id, out);
                }
                out.push(Action::ToAgent(frame));
            }
            Kind::Notification if self.models_subagents() => {
                let session = session_of(env.params);
                drop(env);
                match session {
                    Some(sid) if self.serves_child(&sid) => {
                        self.client_child_notification(&method, &sid, out);
                    }
                    _ => out.push(Action::ToAgent(frame)),
                }
            }
            _ => out.push(Action::ToAgent(frame)),
        }
    }

    /// Agent output: `run` is one or more complete lines (terminators included), in order, as
    /// one read delivered them; a single frame is a run of one. Each line gets the decisions
    /// of its own; the actions say explicitly what became of each: lines that go on as they
    /// came, with nothing else produced for them, leave as [`Action::Untouched`] slices of
    /// `run` (consecutive ones as one slice),
    /// every other line is announced by an [`Action::Read`] followed by what the engine made
    /// of it. Lines the engine's state cannot concern are found by one pass over the run's
    /// bytes and never read one by one (`runs`).
    ///
    /// `ahead` is what a [`Scanner`] found in `run` (on the reader thread); it is used only
    /// while it searched for this engine's keys, and saves time, never changes a decision.
    /// Agent frames never ask for a store look-up, so the caller may carry the actions out
    /// after the whole run.
    pub fn from_agent(
        &mut self,
        run: &Bytes,
        ahead: Option<RunScan>,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        self.now = self.now.max(now);
        self.agent_run(run, ahead, now, out);
    }

    /// What reads agent frames ahead for this engine (its presets' byte tests).
    pub fn scanner(&self) -> Scanner {
        Scanner::new(self.detector.key_set().clone())
    }

    /// Whether a new tool call that names no spawn, parent or child kind may be read (not
    /// passed on its bytes alone): always for Zed (its thread's tool calls are remembered, to
    /// keep Zed's tool call rules), else while a legacy child runs or a permission request
    /// waits. The reader thread takes such frames apart ahead only then
    /// ([`Scanner::reads_new_tool_calls`]).
    pub fn reads_new_tool_calls(&self) -> bool {
        self.zed() || !self.held.is_empty() || self.reg.has_open_legacy_children()
    }

    /// One agent line (terminator included), with what a [`Scanner`] found in it if one
    /// looked: [`Fate::Untouched`] if it goes on as it came with nothing else done (the
    /// caller passes it), else the actions it produced are in `out`.
    fn agent_frame(
        &mut self,
        frame: Bytes,
        scan: Option<AgentScan>,
        now: Millis,
        out: &mut Vec<Action>,
    ) -> Fate {
        let (found, pre) = match scan {
            Some(s) => (Some(s.found), s.update),
            None => (None, Pre::NotTried),
        };
        // Whether the key search is put off: see `defers_scan`.
        let mut deferred = false;
        let mut found = if self.models_subagents() {
            // Every key the decisions below test for, found in one pass over the frame.
            found.unwrap_or_else(|| {
                if self.defers_scan(&frame) {
                    deferred = true;
                    // What its first members showed; the rest is searched if it is needed.
                    keys::Found::new(keys::kind::ID)
                } else {
                    self.detector.scan(&frame)
                }
            })
        } else {
            // Without subagents only responses to the client's requests matter (they are
            // answered by the proxy if the agent dies, and `initialize` is read).
            if self.client_requests.is_empty()
                || !keys::has(&keys::ID_KEY, &frame)
                || !keys::may_be_response(&frame)
            {
                return Fate::Untouched;
            }
            keys::Found::new(keys::kind::ID)
        };
        let has_id = found.has(keys::kind::ID);
        if !has_id && self.passes_untouched(&frame, found) && self.tools_in_order(&frame, found) {
            return Fate::Untouched;
        }
        // The envelope borrows from a second handle on the same bytes, so that `frame`
        // itself can still be moved on.
        let body = frame.clone();
        let maybe_update = || match pre {
            Pre::NotTried => keys::has(&keys::SESSION_UPDATE, &body),
            Pre::Refused => false,
            Pre::Parsed(_) => true,
        };
        if self.models_subagents() && !has_id && maybe_update() {
            // A notification that is most likely a session/update: take it apart in one pass
            // (or take the parts the scanner found).
            let text = std::str::from_utf8(wire::line_body(&body)).ok();
            let parsed = text.and_then(|text| match &pre {
                Pre::Parsed(spans) => spans.view(text).or_else(|| UpdateFrame::parse(text)),
                _ => UpdateFrame::parse(text),
            });
            if let Some(f) = parsed {
                self.agent_update_parts(frame, &f.session_id, f.update, found, out);
                return Fate::Handled;
            }
        }
        // A request's fields are read in the same pass as its envelope (a permission request
        // carries a whole tool call).
        let (parsed, view) = if self.models_subagents() {
            RequestView::read_message(&body)
        } else {
            (envelope::parse(&body), None)
        };
        let Parsed::Message(env) = parsed else {
            return Fate::Untouched;
        };
        let permission =
            env.kind() == Kind::Request && env.method() == Some("session/request_permission");
        if deferred && !permission {
            found = self.detector.scan(&frame);
            deferred = false;
        }
        if self.sessions.creating()
            && env.kind() == Kind::Request
            && self.answer_early_request(&env, out)
        {
            return Fate::Handled;
        }
        match env.kind() {
            Kind::Response => {
                if let Some(id) = env.id.filter(|id| self.agent_replays.owns(id)) {
                    let id = id.to_owned();
                    drop(env);
                    self.replay_answered(&id, &frame, out);
                    return Fate::Handled;
                }
                let Some(req) = env.id.and_then(|id| self.client_requests.remove(id)) else {
                    return Fate::Untouched;
                };
                self.sessions.response(&req.method, &frame);
                if self.mode == Some(Mode::Off) {
                    return Fate::Untouched;
                }
                self.agent_response(req, frame, out);
                Fate::Handled
            }
            Kind::Notification
                if self.models_subagents() && env.method() == Some("session/update") =>
            {
                match env.params {
                    Some(p) => {
                        self.agent_update(frame, p.get(), found, out);
                        Fate::Handled
                    }
                    None => Fate::Untouched,
                }
            }
            // With no subagent known and no parent key in the frame, a request cannot belong
            // to a child nor wait for one: it passes without being read further.
            Kind::Request
                if self.models_subagents()
                    && self.reg.is_empty()
                    && !found.has(keys::kind::PARENT)
                    && !(self.zed() && permission) =>
            {
                Fate::Untouched
            }
            Kind::Request if self.models_subagents() => {
                drop(env);
                let found = (!deferred).then_some(found);
                self.route_agent_request(frame, view, found, now, out);
                Fate::Handled
            }
            _ => Fate::Untouched,
        }
    }

    /// Whether an agent frame's key search may wait until its envelope is read: a permission
    /// request for Zed while no subagent is known (its first members say so) needs no key
    /// but `"id"`, which they showed; any other frame is searched as soon as it is read
    /// (`agent_frame`).
    fn defers_scan(&self, frame: &[u8]) -> bool {
        // The method's name among the first bytes first: most frames are not such requests,
        // and a search is cheaper than a walk.
        self.zed()
            && self.reg.is_empty()
            && keys::has(
                &keys::PERMISSION_METHOD,
                &frame[..frame.len().min(envelope::HEAD)],
            )
            && envelope::request_method(frame) == Some("session/request_permission")
    }

    /// When [`Engine::handle_timeout`] must next be called, if ever.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.held
            .deadline()
            .into_iter()
            .chain(self.pace.next_due())
            .chain(self.agent_replays.deadline())
            .min()
    }

    /// Time passed: release what waited too long, send the card progress that is due.
    pub fn handle_timeout(&mut self, now: Millis, out: &mut Vec<Action>) {
        self.now = self.now.max(now);
        self.progress_due(now, out);
        self.replay_timeouts(now, out);
        self.release_held_due(now, out);
    }

    /// Children the store kept for a parent session (after a restart).
    pub fn restore(&mut self, children: Vec<StoredChild>) {
        for stored in children {
            let id = stored.child_id.clone();
            // A child in memory gets back the updates that left it; should the store have lost
            // some, the replay shows what memory holds.
            client::child_sessions::restore_child(&mut self.reg, stored);
            let reopen = &self.reopen;
            if let Some(child) = self.reg.get_mut(&id) {
                child.set_history(
                    if reopen.replaying(child.top_session.as_str()) && !child.thread.is_empty() {
                        History::Known
                    } else {
                        History::Live
                    },
                );
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
        let asked = match envelope::parse(&request) {
            Parsed::Message(env) => session_of(env.params),
            _ => None,
        };
        let found = child.as_ref().map(|stored| stored.child_id.to_string());
        self.reopen
            .store_answered(found.into_iter().chain(asked.clone()));
        let restored = child.map(|stored| {
            let id = stored.child_id.clone();
            client::child_sessions::restore_child(&mut self.reg, stored);
            id
        });
        let partial = asked
            .as_deref()
            .and_then(|s| self.reg.resolve(s))
            .and_then(|cid| self.reg.get(cid))
            .filter(|c| !c.thread.is_whole())
            .map(|c| c.id.clone());
        if let Some(id) = partial {
            let msg = format!("subagent {id}: the store could not give back all of its thread; its load shows what memory still holds");
            self.note(out, NoteLevel::Warn, msg);
        }
        self.store_read = true;
        self.from_client(request, now, out);
        self.store_read = false;
        if let Some(id) = restored {
            // Served: a finished child leaves memory again in its turn, like any other.
            self.retire(&id);
        }
    }

    /// The shell's answer to [`Action::FollowRecord`]: what the agent's record says of a
    /// child that ended.
    pub fn record_read(&mut self, child: &str, record: Record, now: Millis, out: &mut Vec<Action>) {
        self.now = self.now.max(now);
        let Some(cid) = self.reg.resolve(child).cloned() else {
            return;
        };
        self.record_arrived(&cid, record, out);
    }

    /// What a live record ([`RecordWatch::live`]) says so far, as it grew: the child's work
    /// while it runs.
    ///
    /// [`RecordWatch::live`]: crate::subagents::records::RecordWatch::live
    pub fn record_grew(&mut self, child: &str, record: Record, now: Millis, out: &mut Vec<Action>) {
        self.now = self.now.max(now);
        let Some(cid) = self.reg.resolve(child).cloned() else {
            return;
        };
        self.record_grown(&cid, &record, out);
    }

    /// The agent is gone: answer every request the client still waits for with an error
    /// that says why, oldest first.
    pub fn agent_gone(&mut self, reason: &str, out: &mut Vec<Action>) {
        self.sessions.agent_gone();
        self.flush_progress(out);
        // Children waiting for the agent's replay get what their spawn said.
        self.replays_abandoned(out);
        self.release_every_replayed_spawn(out);
        for frame in self.held.drain() {
            // The client may still answer nothing useful, but it must not lose the frame.
            out.push(Action::ToClient(frame));
        }
        // Child events that waited for the agent's record to tie their id: as they came.
        for frame in self.bindings.drain_waiting() {
            out.push(Action::ToClient(frame));
        }
        for req in self.client_requests.drain_in_order() {
            let line = write::error(
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

    /// Children's updates held in memory (the older ones of a long thread are in the store).
    pub fn thread_updates_in_memory(&self) -> usize {
        self.reg.iter().map(|c| c.thread.held().count()).sum()
    }

    /// Sizes of every collection the engine keeps, to check that long sessions stay bounded.
    pub fn footprint(&self) -> Vec<(&'static str, usize)> {
        let mut sizes = self.reg.footprint();
        sizes.extend(self.render.footprint());
        sizes.extend([
            ("pending_client_requests", self.client_requests.len()),
            ("reported", self.reported.len()),
            ("passthrough_spawns", self.passthrough_spawns.len()),
            ("finished", self.finished.len()),
            ("thread_tools", self.thread_tools.len()),
            ("native_children", self.native_children.len()),
            ("known_sessions", self.sessions.len()),
            ("foreign_cards", self.foreign.len()),
            ("refused_children", self.refused.len()),
            ("paced_cards", self.pace.len()),
        ]);
        sizes.extend(self.held.footprint());
        sizes.extend(self.reopen.footprint());
        sizes.extend(self.agent_replays.footprint());
        sizes.extend(self.siblings.footprint());
        sizes.extend(self.bindings.footprint());
        sizes.extend(self.replayed_spawns.footprint());
        sizes.extend(self.child_records.footprint());
        sizes.extend(self.untold_tasks.footprint());
        sizes
    }

    /// Number of client requests still waiting for the agent.
    pub fn pending_client_requests(&self) -> usize {
        self.client_requests.len()
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

    fn agent_response(
        &mut self,
        req: pending::PendingRequest,
        frame: Bytes,
        out: &mut Vec<Action>,
    ) {
        if req.method == "initialize" && self.models_subagents() {
            self.choose_presets(&frame, out);
            self.read_agent_caps(&frame);
        }
        if req.method == "session/new" && self.models_subagents() {
            self.agent_replays.session_created(&req.id, &frame);
        }
        match req.method.as_str() {
            "initialize" if self.zed() => self.agent_initialized(frame, out),
            "session/load" => {
                if let Some(sid) = &req.session {
                    self.end_replay(sid, out);
                }
                out.push(Action::ToClient(frame));
                if let Some(sid) = &req.session {
                    self.parent_turn_over(sid, out);
                }
            }
            "session/list" if self.models_subagents() => out.push(Action::ToClient(
                client::child_sessions::filter_session_list(&self.reg, frame),
            )),
            "session/prompt" if self.models_subagents() => {
                if let Some(sid) = &req.session {
                    self.turn_ending(sid, &frame, out);
                }
                out.push(Action::ToClient(frame));
                if let Some(sid) = req.session {
                    self.parent_messages.turn_over(&sid);
                    self.turn_ended(&sid, out);
                    self.parent_turn_over(&sid, out);
                }
            }
            _ => out.push(Action::ToClient(frame)),
        }
    }
}

#[cfg(test)]
mod tests;
