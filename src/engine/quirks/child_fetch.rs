//! Children the agent replays itself. OpenCode answers `session/load` of a child's own
//! session id (`ses_…`, read from the completed spawn: `agent_child_id` with
//! `child_replay = "session_load"`) with the child's real work. The proxy fetches that replay
//! upstream with a request of its own, keeps the replayed updates out of the client, and
//! records them as the child's thread (stored like any child's), under the proxy's child id.
//!
//! When: at the spawn's completion. The child has finished and the agent has saved it by
//! then, and ACP requests are answered concurrently, so the parent's running turn is not held
//! up. Fetching then (not when the client first opens the child) gives the card its true range
//! (`message_end_index`) at once, and puts the child's work in the store while the agent still
//! has it: a reopen after a restart is served from the store. A replayed completion (the parent
//! reopened) fetches again only when the child thread lacks the work (no store, or the proxy
//! stopped mid-fetch). A client that loads the child while its fetch is under way is answered
//! once it is done. At most [`MAX_IN_FLIGHT`] fetches run at once (a reopened parent with many
//! children); the rest wait their turn. A fetch that fails, times out or exceeds the child's
//! transcript limit leaves the child thread as the spawn told it: prompt and answer.
//!
//! A preset with `follow_background` (Kilo) fetches a background child at its launch instead:
//! once that replay is answered, the agent streams the running child's work on the child's
//! session, and those updates are the child's live events (recorded in its thread, shown in
//! its card), not replayed ones.
//!
//! Droid cannot serve a child's load while it works on the parent (it finishes the parent's
//! turn with the child's conversation): with `child_replay = "session_load_after_turn"` a
//! fetch asked for while the client's `session/prompt` (or `session/load`) of the parent's
//! session is pending waits until it is answered.

use std::collections::{HashMap, VecDeque};
use std::sync::LazyLock;

use bytes::Bytes;
use memchr::memmem::Finder;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::engine::child::thread::ToolRef;
use crate::engine::{str_field, Action, Engine, Millis, NoteLevel};
use crate::subagents::ids::ChildId;
use crate::subagents::preset::spec::ChildReplay;
use crate::wire::keys::string_after_key_bytes;
use crate::wire::update_view::UpdateParts;
use crate::wire::{self, write};

/// Fetches under way at once.
const MAX_IN_FLIGHT: usize = 4;
/// How long the agent has to replay a child.
const FETCH_TIMEOUT_MS: Millis = 30_000;
/// Agent session ids remembered, at most (the oldest mappings are dropped past it).
const MAX_KNOWN: usize = 4096;
/// Fetches given up on whose late answers are still recognised.
const MAX_ABANDONED: usize = 64;
/// Sessions whose working directory is remembered.
const MAX_CWDS: usize = 32;
/// The proxy's own request ids start with this (the client's, pending, are skipped).
const ID_PREFIX: &str = "acp-proxy-replay-";

static SESSION_ID_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"sessionId\""));

/// The kinds a child thread keeps from the agent's replay; the rest (commands, modes, usage,
/// config) describe the agent's session, not the child's work.
const THREAD_KINDS: [&str; 6] = [
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
];

/// One replayed update, kept until the replay is complete.
#[derive(Debug)]
struct Replayed {
    kind: String,
    tool: Option<String>,
    text: String,
}

#[derive(Debug)]
struct Fetch {
    child: ChildId,
    agent_id: String,
    updates: Vec<Replayed>,
    bytes: usize,
    /// The replay went over the child's transcript limit: it is not used.
    over: bool,
    deadline: Millis,
}

/// Fetches of agent-replayed children, and what they need.
#[derive(Debug, Default)]
pub(in crate::engine) struct AgentReplays {
    /// The agent's session id of each child whose replay was asked for → the child.
    by_agent_id: HashMap<String, ChildId>,
    /// Fetches under way, by the JSON text of their request id.
    in_flight: HashMap<String, Fetch>,
    /// Children waiting for a slot, with their agent session id.
    queued: VecDeque<(ChildId, String)>,
    /// Children waiting for their parent session's turn to end: (top session, child, agent
    /// session id), oldest first.
    after_turn: Vec<(String, ChildId, String)>,
    /// What each child's thread gets if its fetch fails (the answer on its spawn).
    fallback: HashMap<ChildId, Option<Value>>,
    /// Client loads of a child whose fetch is not done, answered when it is.
    waiting: HashMap<ChildId, Vec<Bytes>>,
    /// The working directory of the sessions the client opened last (the agent loads a
    /// session in its project), newest last; older ones fall back to the last one seen.
    cwd: VecDeque<(String, String)>,
    last_cwd: Option<String>,
    /// `session/new` requests waiting for their session id: request id → cwd.
    new_sessions: HashMap<String, String>,
    /// Agent sessions whose late events were already reported.
    reported: hashbrown::HashSet<String>,
    /// Ids of fetches given up on (timed out): their late answers are still the proxy's.
    abandoned: VecDeque<String>,
    next_id: u64,
}

#[derive(Deserialize)]
struct CwdParams<'a> {
    #[serde(borrow, default)]
    params: Option<CwdOf<'a>>,
}

#[derive(Deserialize)]
struct CwdOf<'a> {
    #[serde(borrow, rename = "sessionId", default)]
    session_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<std::borrow::Cow<'a, str>>,
}

impl AgentReplays {
    /// The child an agent session id is replayed for.
    pub(in crate::engine) fn child_of(&self, agent_session: &str) -> Option<&ChildId> {
        if self.by_agent_id.is_empty() {
            return None;
        }
        self.by_agent_id.get(agent_session)
    }

    /// Whether no agent session is replayed for a child (then no frame names one).
    pub(in crate::engine) fn is_empty(&self) -> bool {
        self.by_agent_id.is_empty()
    }

    /// Whether a raw frame may name one of the agent sessions replayed for a child: every
    /// `"sessionId"` value in it is looked up (an escaped one counts, so the caller parses).
    pub(in crate::engine) fn may_name_one(&self, raw: &[u8]) -> bool {
        if self.by_agent_id.is_empty() {
            return false;
        }
        let key_len = b"\"sessionId\"".len();
        let mut rest = raw;
        while let Some(pos) = SESSION_ID_KEY.find(rest) {
            rest = &rest[pos + key_len..];
            let window = &rest[..rest.len().min(512)];
            match string_after_key_bytes(window).map(std::str::from_utf8) {
                Some(Ok(v)) if !self.by_agent_id.contains_key(v) => {}
                _ => return true,
            }
        }
        false
    }

    /// Whether this response id is one of the proxy's fetches (under way, or given up on).
    pub(in crate::engine) fn owns(&self, id: &RawValue) -> bool {
        (!self.in_flight.is_empty() && self.in_flight.contains_key(id.get()))
            || (!self.abandoned.is_empty() && self.abandoned.iter().any(|a| a == id.get()))
    }

    /// Whether the child's replay is asked for and not done yet.
    pub(in crate::engine) fn pending(&self, child: &ChildId) -> bool {
        self.fallback.contains_key(child)
    }

    /// What the child's thread gets if the agent cannot replay it.
    pub(in crate::engine) fn fallback(&mut self, child: &ChildId, answer: Option<Value>) {
        self.fallback.insert(child.clone(), answer);
    }

    /// Hold a client's `session/load` of the child until its fetch is done.
    pub(in crate::engine) fn hold_load(&mut self, child: &ChildId, request: Bytes) {
        if self.fallback.contains_key(child) {
            self.waiting.entry(child.clone()).or_default().push(request);
        }
    }

    /// The earliest deadline of a fetch under way.
    pub(in crate::engine) fn deadline(&self) -> Option<Millis> {
        self.in_flight.values().map(|f| f.deadline).min()
    }

    /// A client request that opens a session: remember its working directory.
    pub(in crate::engine) fn client_opens(&mut self, id: &RawValue, method: &str, frame: &[u8]) {
        let Ok(p) = serde_json::from_slice::<CwdParams<'_>>(wire::line_body(frame)) else {
            return;
        };
        let Some(CwdOf {
            session_id,
            cwd: Some(cwd),
        }) = p.params
        else {
            return;
        };
        self.last_cwd = Some(cwd.clone().into_owned());
        match (method, session_id) {
            ("session/new", _) => {
                if self.new_sessions.len() >= MAX_CWDS {
                    self.new_sessions.clear();
                }
                self.new_sessions
                    .insert(id.get().to_owned(), cwd.into_owned());
            }
            (_, Some(sid)) => self.note_cwd(sid.into_owned(), cwd.into_owned()),
            _ => {}
        }
    }

    /// The agent answered a `session/new`: its session's working directory is known.
    pub(in crate::engine) fn session_created(&mut self, id: &RawValue, frame: &[u8]) {
        let Some(cwd) = self.new_sessions.remove(id.get()) else {
            return;
        };
        let sid = wire::parse_value(frame).and_then(|v| {
            v.pointer("/result/sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        if let Some(sid) = sid {
            self.note_cwd(sid, cwd);
        }
    }

    fn note_cwd(&mut self, sid: String, cwd: String) {
        self.cwd.retain(|(s, _)| *s != sid);
        if self.cwd.len() >= MAX_CWDS {
            self.cwd.pop_front();
        }
        self.cwd.push_back((sid, cwd));
    }

    /// The working directory to load a child of `session` in.
    fn cwd_for(&self, session: &str) -> Option<&String> {
        self.cwd
            .iter()
            .rev()
            .find(|(s, _)| s == session)
            .map(|(_, c)| c)
            .or(self.last_cwd.as_ref())
    }

    /// The engine let go of a child.
    pub(in crate::engine) fn forget(&mut self, child: &ChildId) {
        if self.pending(child) {
            return;
        }
        self.by_agent_id.retain(|_, c| c != child);
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 5] {
        [
            ("replay_agent_ids", self.by_agent_id.len()),
            ("replay_in_flight", self.in_flight.len()),
            ("replay_queued", self.queued.len() + self.after_turn.len()),
            ("replay_waiting", self.waiting.len()),
            ("replay_cwds", self.cwd.len() + self.new_sessions.len()),
        ]
    }
}

impl Engine {
    /// The agent session id to fetch a finished child's replay from, if its preset says the
    /// agent replays children and the child thread does not hold its work yet.
    pub(in crate::engine) fn replay_to_fetch(
        &self,
        cid: &ChildId,
        update: &Value,
    ) -> Option<String> {
        let child = self.reg.get(cid)?;
        let preset = child.preset?;
        if !self.detector.child_replay_of(preset).replays()
            || !self.agent_loads
            || child.passes_through()
            || self.agent_replays.pending(cid)
        {
            return None;
        }
        // Only the prompt (or nothing): a store that holds the replay answers for it.
        if child.entries.count() > 1 {
            return None;
        }
        self.detector
            .agent_child_id_of(preset, update)
            .filter(|id| !id.is_empty())
    }

    /// Whether this spawn's launch fetches its child at once (a preset's
    /// `follow_background`).
    pub(in crate::engine) fn follows_launch(&self, cid: &ChildId) -> bool {
        self.reg
            .get(cid)
            .and_then(|c| c.preset)
            .is_some_and(|p| self.detector.follows_background(p))
    }

    /// Whether an update of `kind` on `agent_session`, fetched for `cid`, is the running
    /// child's live work: its fetch is done, the child runs in the background, and the
    /// update is work (not the agent's commands, modes or usage for that session). A child
    /// whose end was inferred (`end_on_agent_turn`) keeps what it still sends, its card
    /// staying final.
    pub(in crate::engine) fn followed_live(
        &self,
        cid: &ChildId,
        agent_session: &str,
        kind: &str,
    ) -> bool {
        THREAD_KINDS.contains(&kind)
            && !self
                .agent_replays
                .in_flight
                .values()
                .any(|f| f.agent_id == agent_session)
            && self.follows_launch(cid)
            && self.reg.get(cid).is_some_and(|c| c.is_background())
    }

    /// Ask the agent for the child's replay (now, or when a slot frees up).
    pub(in crate::engine) fn fetch_replay(
        &mut self,
        cid: &ChildId,
        agent_id: &str,
        out: &mut Vec<Action>,
    ) {
        let r = &mut self.agent_replays;
        if r.by_agent_id.len() >= MAX_KNOWN {
            // Only routing of late events is lost; a child being fetched keeps its mapping.
            let pending: Vec<String> = r
                .by_agent_id
                .iter()
                .filter(|(_, c)| r.fallback.contains_key(c.as_str()))
                .map(|(a, _)| a.clone())
                .collect();
            r.by_agent_id.retain(|a, _| pending.contains(a));
        }
        r.by_agent_id.insert(agent_id.to_owned(), cid.clone());
        r.fallback.entry(cid.clone()).or_insert(None);
        if let Some(top) = self.parent_busy(cid) {
            self.agent_replays
                .after_turn
                .push((top, cid.clone(), agent_id.to_owned()));
            return;
        }
        let r = &mut self.agent_replays;
        if r.in_flight.len() >= MAX_IN_FLIGHT {
            r.queued.push_back((cid.clone(), agent_id.to_owned()));
            return;
        }
        self.send_fetch(cid.clone(), agent_id.to_owned(), out);
    }

    /// The child's top session, when its preset fetches only after the parent's turn and
    /// the client's turn (or load) of that session is still pending.
    fn parent_busy(&self, cid: &ChildId) -> Option<String> {
        let child = self.reg.get(cid)?;
        let preset = child.preset?;
        if self.detector.child_replay_of(preset) != ChildReplay::SessionLoadAfterTurn {
            return None;
        }
        let top = child.top_session.as_str();
        (self.client_requests.has("session/prompt", top)
            || self.client_requests.has("session/load", top))
        .then(|| top.to_owned())
    }

    /// The client's turn (or load) of `session` was answered: the fetches that waited for it
    /// go ahead.
    pub(in crate::engine) fn parent_turn_over(&mut self, session: &str, out: &mut Vec<Action>) {
        if self.agent_replays.after_turn.is_empty() {
            return;
        }
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.agent_replays.after_turn)
            .into_iter()
            .partition(|(top, _, _)| top == session);
        self.agent_replays.after_turn = rest;
        for (_, cid, agent_id) in due {
            self.fetch_replay(&cid, &agent_id, out);
        }
    }

    fn send_fetch(&mut self, child: ChildId, agent_id: String, out: &mut Vec<Action>) {
        let top = self
            .reg
            .get(&child)
            .map(|c| c.top_session.as_str())
            .unwrap_or("");
        let cwd = self.agent_replays.cwd_for(top).cloned();
        let Some(cwd) = cwd else {
            let msg = format!(
                "subagent {child}: the agent could replay it (session {agent_id}), but no working directory is known to ask with; its thread holds what the spawn said"
            );
            self.note(out, NoteLevel::Warn, msg);
            self.replay_done(&child, None, out);
            return;
        };
        let r = &mut self.agent_replays;
        let id = loop {
            r.next_id += 1;
            let id = format!("{ID_PREFIX}{}", r.next_id);
            let text = serde_json::to_string(&id).unwrap_or_default();
            if !self.client_requests.contains(&text) && !r.in_flight.contains_key(&text) {
                break id;
            }
        };
        let key = serde_json::to_string(&id).unwrap_or_default();
        r.in_flight.insert(
            key,
            Fetch {
                child,
                agent_id: agent_id.clone(),
                updates: Vec::new(),
                bytes: 0,
                over: false,
                deadline: self.now + FETCH_TIMEOUT_MS,
            },
        );
        out.push(Action::ToAgent(write::line(&json!({
            "jsonrpc": "2.0", "id": id, "method": "session/load",
            "params": {"sessionId": agent_id, "cwd": cwd, "mcpServers": []}
        }))));
    }

    /// An update under an agent session replayed for `cid`: kept for the child thread while
    /// the fetch runs; never sent to the client, which does not know that session.
    pub(in crate::engine) fn replayed_update(
        &mut self,
        cid: &ChildId,
        agent_session: &str,
        fields: &UpdateParts<'_>,
        out: &mut Vec<Action>,
    ) {
        let max = self.cfg.limits.max_transcript_bytes;
        let fetch = self
            .agent_replays
            .in_flight
            .values_mut()
            .find(|f| f.agent_id == agent_session);
        let kind = fields.kind.as_ref();
        if !THREAD_KINDS.contains(&kind) {
            return;
        }
        let Some(f) = fetch else {
            // The agent keeps a loaded child in its ACP layer: it could run again under that
            // id. Its spawn (a new one) is where its work shows; these are left out.
            let reported = &mut self.agent_replays.reported;
            if reported.len() >= MAX_KNOWN {
                reported.clear();
            }
            if reported.insert(agent_session.to_owned()) {
                let msg = format!(
                    "`{kind}` of agent session {agent_session} (replayed for subagent {cid}) after its replay: not shown"
                );
                self.note(out, NoteLevel::Info, msg);
            }
            return;
        };
        if f.over {
            return;
        }
        let base = self.reg.get(cid).map_or(0, |c| c.bytes);
        f.bytes += fields.raw.len();
        if base + f.bytes > max {
            f.over = true;
            f.updates.clear();
            return;
        }
        f.updates.push(Replayed {
            kind: kind.to_owned(),
            tool: fields.tool_call_id.as_deref().map(str::to_owned),
            text: fields.raw.to_owned(),
        });
    }

    /// The agent answered one of the proxy's fetches.
    pub(in crate::engine) fn replay_answered(
        &mut self,
        id: &RawValue,
        frame: &Bytes,
        out: &mut Vec<Action>,
    ) {
        let Some(fetch) = self.agent_replays.in_flight.remove(id.get()) else {
            // The late answer of a fetch given up on: nobody else asked for it.
            self.agent_replays.abandoned.retain(|a| a != id.get());
            return;
        };
        let error = wire::parse_value(frame).and_then(|v| {
            let e = v.get("error")?;
            Some(
                str_field(e, "message")
                    .map(str::to_owned)
                    .unwrap_or_else(|| e.to_string()),
            )
        });
        let why = match (&error, fetch.over) {
            (Some(e), _) => Some(format!(
                "the agent answered its session/load with an error: {e}"
            )),
            (None, true) => Some(format!(
                "its replay exceeds max_transcript_bytes ({})",
                self.cfg.limits.max_transcript_bytes
            )),
            (None, false) => None,
        };
        match why {
            None => self.replay_done(&fetch.child, Some(fetch.updates), out),
            Some(why) => {
                let msg = format!(
                    "subagent {}: agent session {} not replayed ({why}); its thread holds what the spawn said",
                    fetch.child, fetch.agent_id
                );
                self.note(out, NoteLevel::Warn, msg);
                self.replay_done(&fetch.child, None, out);
            }
        }
        self.next_fetch(out);
    }

    /// Fetches that took too long: the child thread keeps what the spawn said.
    pub(in crate::engine) fn replay_timeouts(&mut self, now: Millis, out: &mut Vec<Action>) {
        let due: Vec<String> = self
            .agent_replays
            .in_flight
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            let Some(f) = self.agent_replays.in_flight.remove(&key) else {
                continue;
            };
            let abandoned = &mut self.agent_replays.abandoned;
            if abandoned.len() >= MAX_ABANDONED {
                abandoned.pop_front();
            }
            abandoned.push_back(key);
            let msg = format!(
                "subagent {}: the agent did not replay session {} within {} s; its thread holds what the spawn said",
                f.child,
                f.agent_id,
                FETCH_TIMEOUT_MS / 1000
            );
            self.note(out, NoteLevel::Warn, msg);
            self.replay_done(&f.child, None, out);
            self.next_fetch(out);
        }
    }

    /// The agent is gone: no fetch will be answered.
    pub(in crate::engine) fn replays_abandoned(&mut self, out: &mut Vec<Action>) {
        let keys: Vec<String> = self.agent_replays.in_flight.keys().cloned().collect();
        let mut children: Vec<ChildId> = keys
            .iter()
            .filter_map(|k| self.agent_replays.in_flight.remove(k))
            .map(|f| f.child)
            .collect();
        children.extend(self.agent_replays.queued.drain(..).map(|(c, _)| c));
        children.extend(self.agent_replays.after_turn.drain(..).map(|(_, c, _)| c));
        children.sort();
        for child in children {
            self.replay_done(&child, None, out);
        }
    }

    fn next_fetch(&mut self, out: &mut Vec<Action>) {
        while self.agent_replays.in_flight.len() < MAX_IN_FLIGHT {
            let Some((child, agent_id)) = self.agent_replays.queued.pop_front() else {
                return;
            };
            self.send_fetch(child, agent_id, out);
        }
    }

    /// A child's fetch is over: its thread gets the replay (or, without one, the spawn's
    /// answer), the card its range, and held loads their answer.
    fn replay_done(&mut self, cid: &ChildId, replay: Option<Vec<Replayed>>, out: &mut Vec<Action>) {
        let answer = self.agent_replays.fallback.remove(cid).flatten();
        let waiting = self.agent_replays.waiting.remove(cid).unwrap_or_default();
        if self.reg.get(cid).is_some() {
            match replay.filter(|r| r.iter().any(|u| u.kind != "user_message_chunk")) {
                Some(updates) => {
                    let skip = self.prompt_already_recorded(cid, &updates);
                    for u in updates.iter().skip(skip) {
                        // A replay is rare: its titles are read from the parsed update.
                        let parsed = u
                            .text
                            .contains("\"title\"")
                            .then(|| serde_json::from_str::<Value>(&u.text).ok())
                            .flatten();
                        let tool = ToolRef {
                            id: u.tool.as_deref(),
                            title: parsed.as_ref().and_then(|v| str_field(v, "title")),
                        };
                        self.record_text_in(cid, &u.kind, tool, &u.text, None, out);
                    }
                }
                None => {
                    if let Some(answer) = answer {
                        self.record_in(cid, &answer, out);
                    }
                }
            }
            if let Some(child) = self.reg.get_mut(cid) {
                if child.card_is_final() {
                    child.end_turn();
                    let card = self.render.card_update(child, None, None);
                    let parent = child.parent.clone();
                    self.persist_state(cid, out);
                    if let Some(card) = card {
                        self.emit(parent.as_str(), card, out);
                    }
                }
            }
            // What the replay brought of the child (its answer) for a flavour that shows it.
            self.sync_child(cid, out);
        }
        let now = self.now;
        for request in waiting {
            self.from_client(request, now, out);
        }
        self.retire(cid);
    }

    /// How many leading user chunks of a replay repeat the prompt the child thread already
    /// starts with (the spawn's task, recorded when it started).
    fn prompt_already_recorded(&self, cid: &ChildId, updates: &[Replayed]) -> usize {
        let Some(child) = self.reg.get(cid) else {
            return 0;
        };
        let (1, Some(first)) = (child.thread.len(), child.thread.first()) else {
            return 0;
        };
        let recorded = serde_json::from_str::<Value>(first).ok().and_then(|v| {
            (str_field(&v, "sessionUpdate") == Some("user_message_chunk"))
                .then(|| v.pointer("/content/text")?.as_str().map(str::to_owned))?
        });
        let Some(recorded) = recorded else {
            return 0;
        };
        let mut text = String::new();
        for (n, u) in updates.iter().enumerate() {
            if u.kind != "user_message_chunk" {
                return if text.trim() == recorded.trim() { n } else { 0 };
            }
            let v: Option<Value> = serde_json::from_str(&u.text).ok();
            match v
                .as_ref()
                .and_then(|v| v.pointer("/content/text")?.as_str())
            {
                Some(t) => text.push_str(t),
                None => return 0,
            }
        }
        0
    }
}
