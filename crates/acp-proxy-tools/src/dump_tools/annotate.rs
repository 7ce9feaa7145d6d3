//! What a dump's records mean, read in order: each message's JSON-RPC kind, id, method,
//! session and a one-line summary; and what only the stream around it tells: the request a
//! response answers (and how long it took), the prompt turn it is part of, the subagent it
//! belongs to, and the input the proxy was handling when it wrote an output.
//!
//! Memory is bounded by the number of open requests, sessions, subagents and turns (each
//! capped), never by the size of the frames.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use serde_json::Value;

use acp_proxy::chain::{Chain, Route};
use acp_proxy::dump::reader::Record;
use acp_proxy::dump::Direction;
use acp_proxy::subagents::ids::synthesized_spawn_id;
use acp_proxy::subagents::preset::detect::Detector;
use acp_proxy::subagents::preset::set::PresetSet;

/// Open requests remembered per connection side; past this the oldest are forgotten.
const MAX_PENDING: usize = 65_536;
/// Subagents and turns remembered; past this new ones are counted but not kept.
pub const MAX_NODES: usize = 100_000;
pub const MAX_TURNS: usize = 100_000;
/// Tool calls of subagents remembered.
const MAX_TOOL_OWNERS: usize = 1_000_000;

/// The JSON-RPC kind of a message (or what else a record is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Request,
    Response,
    Error,
    Notification,
    /// A frame that is not a JSON-RPC message (not JSON, or JSON of another shape).
    Invalid,
    Stderr,
    Note,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Response => "response",
            Kind::Error => "error",
            Kind::Notification => "notification",
            Kind::Invalid => "invalid",
            Kind::Stderr => "stderr",
            Kind::Note => "note",
        }
    }

    /// Four letters for the timeline.
    pub fn short(self) -> &'static str {
        match self {
            Kind::Request => "req",
            Kind::Response => "resp",
            Kind::Error => "ERR",
            Kind::Notification => "notif",
            Kind::Invalid => "BAD",
            Kind::Stderr => "log",
            Kind::Note => "note",
        }
    }
}

/// The two connections of the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Conn {
    /// Between the client (editor) and the proxy.
    Client,
    /// Between the proxy and the agent.
    Agent,
}

impl Conn {
    pub fn of(dir: Direction) -> Option<Conn> {
        match dir {
            Direction::ClientToProxy | Direction::ProxyToClient => Some(Conn::Client),
            Direction::ProxyToAgent | Direction::AgentToProxy => Some(Conn::Agent),
            _ => None,
        }
    }
}

/// One message of a record, understood.
#[derive(Debug, Clone)]
pub struct Msg {
    /// Where it went: the record's direction, except in proxy-chain mode, where a frame
    /// from the conductor that came from the next link is taken as the agent's.
    pub dir: Direction,
    pub kind: Kind,
    /// The id as JSON text (`1`, `"abc"`).
    pub id: Option<String>,
    /// The method; for a response, the method of the request it answers.
    pub method: Option<String>,
    /// `sessionUpdate` of a `session/update`.
    pub update: Option<String>,
    /// The session it names (for a response: its request's session).
    pub session: Option<String>,
    pub tool_call: Option<String>,
    pub summary: String,
    /// For a response: seconds since its request, and the request's line.
    pub latency: Option<f64>,
    pub request_line: Option<u64>,
    /// The subagent whose work this is (its node), if any.
    pub node: Option<usize>,
    /// A frame that spawns or reports on this subagent (in the parent's thread).
    pub spawn_of: Option<usize>,
    /// Nesting: 0 for a top-level session, 1 for a subagent's work, …
    pub depth: usize,
    /// The prompt turn (index into [`Tracker::turns`]).
    pub turn: Option<usize>,
    /// An error response, a frame that is not JSON-RPC, a failed tool call, a loss.
    pub is_error: bool,
    /// A request whose id is already used by an open request on its connection.
    pub reused_id: bool,
    /// The parsed message (None for text that is not JSON).
    pub value: Option<Value>,
}

impl Msg {
    /// What the message is, in a word or two: its `sessionUpdate`, else its method.
    pub fn what(&self) -> String {
        match (self.kind, &self.update, &self.method) {
            (Kind::Note, ..) => "proxy note".to_owned(),
            (Kind::Stderr, ..) => "agent stderr".to_owned(),
            (_, Some(u), _) => u.clone(),
            (_, None, Some(method)) => method.clone(),
            _ => String::new(),
        }
    }
}

/// A subagent as seen in the dump.
#[derive(Debug, Clone)]
pub struct Node {
    pub parent_session: String,
    /// The spawn's tool call id (the agent's, or the card the proxy made).
    pub spawn: Option<String>,
    pub child: Option<String>,
    /// Which signature told it: a preset name, `acp` for standard subagents, `card` when
    /// only the proxy's Zed card showed it.
    pub preset: String,
    pub title: String,
    pub status: String,
    /// The child's own frames from the agent.
    pub events: u64,
    pub first_ts: f64,
    pub last_ts: f64,
    pub end_ts: Option<f64>,
    /// The depth of the child's work (1 under a top-level session).
    pub depth: usize,
    pub parent_node: Option<usize>,
    /// Where it was first seen.
    pub file: usize,
    pub line: u64,
}

impl Node {
    pub fn duration(&self) -> f64 {
        self.end_ts.unwrap_or(self.last_ts) - self.first_ts
    }
}

/// A prompt turn: a `session/prompt` request and its response.
#[derive(Debug, Clone)]
pub struct Turn {
    pub session: String,
    pub prompt: String,
    pub start_ts: f64,
    pub end_ts: Option<f64>,
    pub stop_reason: Option<String>,
    pub frames: u64,
    pub file: usize,
    pub line: u64,
}

#[derive(Debug, Clone)]
struct Pending {
    method: String,
    ts: f64,
    file: usize,
    line: u64,
    dir: Direction,
    session: Option<String>,
    turn: Option<usize>,
}

/// A map that forgets its oldest keys past a capacity.
#[derive(Debug)]
struct Bounded<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    cap: usize,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    fn new(cap: usize) -> Self {
        Bounded {
            map: HashMap::new(),
            order: VecDeque::new(),
            cap,
        }
    }

    fn insert(&mut self, k: K, v: V) {
        if self.map.insert(k.clone(), v).is_none() {
            self.order.push_back(k);
        }
        while self.map.len() > self.cap {
            match self.order.pop_front() {
                Some(old) => {
                    self.map.remove(&old);
                }
                None => break,
            }
        }
        if self.order.len() > 2 * self.cap.max(16) {
            let map = &self.map;
            self.order.retain(|k| map.contains_key(k));
        }
    }

    fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k)
    }

    fn get(&self, k: &K) -> Option<&V> {
        self.map.get(k)
    }
}

/// Reads records in order and annotates their messages.
pub struct Tracker {
    detector: Detector,
    /// (connection, asked by the client or agent end, id) → the request.
    pending: Bounded<(Conn, bool, String), Pending>,
    /// Child session → its node.
    sessions: HashMap<String, usize>,
    /// (session, spawn tool call id or `subagent:<child>`) → node.
    spawns: HashMap<(String, String), usize>,
    /// (session, tool call id) → the subagent whose tool call it is (so that an update
    /// without a parent reference is still placed).
    tool_owner: Bounded<(String, String), usize>,
    pub nodes: Vec<Node>,
    /// Subagents seen past [`MAX_NODES`].
    pub nodes_dropped: u64,
    pub turns: Vec<Turn>,
    pub turns_dropped: u64,
    active_turn: HashMap<String, usize>,
    /// The input being handled: outputs after it are its results.
    pub step: u64,
    /// The last input record (file, line, text) of the current step.
    pub step_input: Option<(usize, u64, Direction)>,
    /// Directions whose last record was a `partial` piece.
    continuing: [bool; 6],
    /// Proxy-chain mode: the conductor's wrapping, as the proxy undid it.
    chain: Option<Chain>,
    chain_decided: bool,
    /// The run whose records come now (another run is another proxy process).
    run: Option<Option<String>>,
}

impl Default for Tracker {
    fn default() -> Self {
        Tracker::new(Detector::new(
            PresetSet::builtin().iter().cloned().collect(),
        ))
    }
}

/// What is wrong with text that does not read as a JSON value: JSON with a number no
/// reader can hold (`1e400`) is JSON all the same.
pub fn not_json_why(text: &str) -> &'static str {
    if is_json_out_of_range(text) {
        "JSON with a number out of range"
    } else {
        "not JSON"
    }
}

/// Well-formed JSON that does not read as a value: a number beyond what a float holds.
pub fn is_json_out_of_range(text: &str) -> bool {
    // Skipping a value checks its grammar without converting its numbers.
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
        && serde_json::from_str::<Value>(text).is_err()
}

fn dir_index(d: Direction) -> usize {
    Direction::ALL.iter().position(|x| *x == d).unwrap_or(0)
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

/// At most `max` characters of `s` on one line, with an ellipsis when cut.
pub fn preview(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n == max {
            out.push('…');
            return out;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

fn id_text(v: &Value) -> Option<String> {
    v.get("id").map(|id| id.to_string())
}

impl Tracker {
    pub fn new(detector: Detector) -> Tracker {
        Tracker {
            detector,
            pending: Bounded::new(MAX_PENDING),
            sessions: HashMap::new(),
            spawns: HashMap::new(),
            tool_owner: Bounded::new(MAX_TOOL_OWNERS),
            nodes: Vec::new(),
            nodes_dropped: 0,
            turns: Vec::new(),
            turns_dropped: 0,
            active_turn: HashMap::new(),
            step: 0,
            step_input: None,
            continuing: [false; 6],
            chain: None,
            chain_decided: false,
            run: None,
        }
    }

    /// A dump file (or the next run in it) starts. Another run is another proxy process,
    /// whose requests, turns and tool calls have nothing to do with the last one's: what was
    /// open is dropped. The subagents and turns seen so far are kept.
    pub fn file(&mut self, info: &acp_proxy::dump::reader::FileInfo) {
        let run = Some(info.run.clone());
        if self.run.is_some() && self.run != run {
            self.pending = Bounded::new(MAX_PENDING);
            // Tool call ids are the run's own (the same ones come again in a rerun); a child
            // session reopened by the next run keeps its node.
            self.spawns.clear();
            self.tool_owner = Bounded::new(MAX_TOOL_OWNERS);
            self.active_turn.clear();
            self.step_input = None;
            self.continuing = [false; 6];
            self.chain = None;
            self.chain_decided = false;
        }
        self.run = run;
    }

    /// Whether this record continues an oversized line begun in an earlier record.
    pub fn is_continuation(&self, rec: &Record) -> bool {
        self.continuing[dir_index(rec.dir)]
    }

    /// Annotate every message of a record (one for most records).
    pub fn record(&mut self, rec: &Record) -> Vec<Msg> {
        let continuation = self.continuing[dir_index(rec.dir)];
        self.continuing[dir_index(rec.dir)] = rec.partial;
        if rec.dir.is_input() && !continuation {
            self.step += 1;
            self.step_input = Some((rec.file, rec.line, rec.dir));
        }
        match rec.dir {
            Direction::ProxyNote => {
                let text = rec.note.as_deref().unwrap_or("");
                return vec![self.plain(
                    rec.dir,
                    Kind::Note,
                    preview(text, 200),
                    rec.lost_frames > 0,
                )];
            }
            Direction::AgentStderr => {
                let m = self.plain(rec.dir, Kind::Stderr, preview(rec.text(), 200), false);
                return vec![m];
            }
            _ => {}
        }
        if rec.invalid_json || rec.partial || continuation {
            let what = if rec.partial || continuation {
                "piece of an oversized line"
            } else if rec.invalid_utf8 {
                "not UTF-8"
            } else {
                not_json_why(rec.text())
            };
            let m = self.plain(
                rec.dir,
                Kind::Invalid,
                format!("{what}: {}", preview(rec.text(), 80)),
                !(rec.partial || continuation),
            );
            return vec![m];
        }
        let texts: Vec<&str> = rec.messages().collect();
        texts
            .into_iter()
            .map(|t| match self.through_chain(rec.dir, t) {
                Some((dir, inner)) => {
                    let unwrapped = Record {
                        dir,
                        frame: None,
                        raw: String::new(),
                        ..rec.clone()
                    };
                    self.message(&unwrapped, &inner)
                }
                None => self.message(rec, t),
            })
            .collect()
    }

    /// In proxy-chain mode (the first frame from the client is a conductor's
    /// `proxy/initialize`), what the engine saw: frames from the conductor unwrapped and
    /// routed as the proxy routes them. None: take the frame as it is.
    fn through_chain(&mut self, dir: Direction, text: &str) -> Option<(Direction, String)> {
        if dir.is_input()
            && !std::mem::replace(&mut self.chain_decided, true)
            && dir == Direction::ClientToProxy
        {
            self.chain = acp_proxy::chain::chain_initialize(text.as_bytes()).map(Chain::new);
        }
        let chain = self.chain.as_mut()?;
        let bytes = bytes::Bytes::from(format!("{text}\n"));
        let body =
            |b: &bytes::Bytes| String::from_utf8_lossy(acp_proxy::wire::line_body(b)).into_owned();
        match dir {
            Direction::ClientToProxy => match chain.route_inbound(bytes) {
                Route::Client(b) => Some((Direction::ClientToProxy, body(&b))),
                Route::Agent(b) => Some((Direction::AgentToProxy, body(&b))),
                Route::Drop(_) => None,
            },
            // The chain's id maps follow what the proxy wrote.
            Direction::ProxyToClient => {
                chain.wrap_for_predecessor(bytes);
                None
            }
            Direction::ProxyToAgent => {
                chain.wrap_for_successor(bytes);
                None
            }
            _ => None,
        }
    }

    fn plain(&self, dir: Direction, kind: Kind, summary: String, is_error: bool) -> Msg {
        Msg {
            dir,
            kind,
            id: None,
            method: None,
            update: None,
            session: None,
            tool_call: None,
            summary,
            latency: None,
            request_line: None,
            node: None,
            spawn_of: None,
            depth: 0,
            turn: None,
            is_error,
            reused_id: false,
            value: None,
        }
    }

    fn message(&mut self, rec: &Record, text: &str) -> Msg {
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            let m = self.plain(
                rec.dir,
                Kind::Invalid,
                format!("{}: {}", not_json_why(text), preview(text, 80)),
                true,
            );
            return m;
        };
        let Some(obj) = value.as_object() else {
            let what = if value.is_array() {
                "a batch (JSON array)"
            } else {
                "JSON that is not an object"
            };
            let mut m = self.plain(
                rec.dir,
                Kind::Invalid,
                format!("{what}: {}", preview(text, 80)),
                true,
            );
            m.value = Some(value);
            return m;
        };
        let method = obj.get("method").and_then(Value::as_str).map(str::to_owned);
        let has_id = obj.contains_key("id");
        let kind = match (&method, has_id) {
            (Some(_), true) => Kind::Request,
            (Some(_), false) => Kind::Notification,
            (None, true) if obj.contains_key("error") => Kind::Error,
            (None, true) if obj.contains_key("result") => Kind::Response,
            _ => Kind::Invalid,
        };
        let mut m = self.plain(
            rec.dir,
            kind,
            String::new(),
            matches!(kind, Kind::Error | Kind::Invalid),
        );
        m.id = id_text(&value);
        m.method = method;
        let conn = Conn::of(rec.dir);
        // Who asked, for this direction: requests are asked by the sending end.
        let sender_is_outer = matches!(rec.dir, Direction::ClientToProxy | Direction::AgentToProxy);
        match kind {
            Kind::Request | Kind::Notification => {
                let params = value.get("params").unwrap_or(&Value::Null);
                m.session = str_at(params, "/sessionId").map(str::to_owned);
                if let Some(update) = params.get("update") {
                    m.update = update
                        .get("sessionUpdate")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    m.tool_call = str_at(update, "/toolCallId").map(str::to_owned);
                } else if let Some(tc) = params.get("toolCall") {
                    m.tool_call = str_at(tc, "/toolCallId").map(str::to_owned);
                }
                self.attribute(rec, &value, &mut m);
                if kind == Kind::Request {
                    if let (Some(c), Some(id)) = (conn, &m.id) {
                        let method = m.method.clone().unwrap_or_default();
                        let turn =
                            if method == "session/prompt" && rec.dir == Direction::ClientToProxy {
                                self.start_turn(rec, &value, m.session.as_deref())
                            } else {
                                None
                            };
                        let key = (c, sender_is_outer, id.clone());
                        m.reused_id = self.pending.map.contains_key(&key);
                        self.pending.insert(
                            key,
                            Pending {
                                method,
                                ts: rec.ts,
                                file: rec.file,
                                line: rec.line,
                                dir: rec.dir,
                                session: m.session.clone(),
                                turn,
                            },
                        );
                    }
                }
                m.summary = summarize_call(
                    m.method.as_deref().unwrap_or(""),
                    &value,
                    m.update.as_deref(),
                );
                if m.update
                    .as_deref()
                    .is_some_and(|u| u == "tool_call" || u == "tool_call_update")
                    && str_at(&value, "/params/update/status") == Some("failed")
                {
                    m.is_error = true;
                }
            }
            Kind::Response | Kind::Error => {
                // A response answers a request the other end of its connection asked.
                if let (Some(c), Some(id)) = (conn, &m.id) {
                    if let Some(p) = self.pending.remove(&(c, !sender_is_outer, id.clone())) {
                        m.latency = Some(rec.ts - p.ts);
                        m.request_line = Some(p.line);
                        m.session = p.session.clone();
                        m.method = Some(p.method.clone());
                        if let Some(t) = p.turn {
                            if rec.dir == Direction::ProxyToClient {
                                self.end_turn(t, rec.ts, &value);
                            }
                        }
                        m.turn = p.turn;
                    }
                }
                m.summary = summarize_result(m.method.as_deref(), &value);
                if let Some(s) = &m.session {
                    m.node = self.sessions.get(s).copied();
                    m.depth = m.node.map(|n| self.nodes[n].depth).unwrap_or(0);
                }
            }
            _ => {
                m.summary = format!("not JSON-RPC: {}", preview(text, 80));
            }
        }
        if m.turn.is_none() {
            m.turn = self.turn_of(m.session.as_deref(), m.node);
        }
        if let Some(t) = m.turn {
            if let Some(turn) = self.turns.get_mut(t) {
                turn.frames += 1;
            }
        }
        m.value = Some(value);
        m
    }

    fn start_turn(&mut self, rec: &Record, value: &Value, session: Option<&str>) -> Option<usize> {
        let session = session?.to_owned();
        if self.turns.len() >= MAX_TURNS {
            self.turns_dropped += 1;
            return None;
        }
        let prompt = value
            .pointer("/params/prompt")
            .and_then(Value::as_array)
            .and_then(|blocks| {
                blocks
                    .iter()
                    .find_map(|b| b.get("text").and_then(Value::as_str))
            })
            .unwrap_or("");
        self.turns.push(Turn {
            session: session.clone(),
            prompt: preview(prompt, 80),
            start_ts: rec.ts,
            end_ts: None,
            stop_reason: None,
            frames: 0,
            file: rec.file,
            line: rec.line,
        });
        let t = self.turns.len() - 1;
        self.active_turn.insert(session, t);
        Some(t)
    }

    fn end_turn(&mut self, t: usize, ts: f64, value: &Value) {
        let Some(turn) = self.turns.get_mut(t) else {
            return;
        };
        turn.end_ts = Some(ts);
        turn.stop_reason = Some(
            match (str_at(value, "/result/stopReason"), value.get("error")) {
                (Some(r), _) => r.to_owned(),
                (None, Some(e)) => format!(
                    "error {}",
                    e.get("code").map(|c| c.to_string()).unwrap_or_default()
                ),
                _ => "?".to_owned(),
            },
        );
        if self.active_turn.get(&turn.session) == Some(&t) {
            self.active_turn.remove(&turn.session);
        }
    }

    /// The turn of the top-level session a message belongs to.
    fn turn_of(&self, session: Option<&str>, node: Option<usize>) -> Option<usize> {
        let mut top = session.map(str::to_owned);
        let mut n = node.or_else(|| session.and_then(|s| self.sessions.get(s).copied()));
        let mut hops = 0;
        while let Some(i) = n {
            let node = &self.nodes[i];
            top = Some(node.parent_session.clone());
            n = node.parent_node;
            hops += 1;
            if hops > 64 {
                break;
            }
        }
        self.active_turn.get(top.as_deref()?).copied()
    }

    /// The top-level session of a session (itself unless it is a known child).
    pub fn top_session(&self, session: &str) -> String {
        let mut s = session.to_owned();
        let mut hops = 0;
        while let Some(&n) = self.sessions.get(&s) {
            s = self.nodes[n].parent_session.clone();
            hops += 1;
            if hops > 64 {
                break;
            }
        }
        s
    }

    fn new_node(
        &mut self,
        rec: &Record,
        parent_session: &str,
        owner: Option<usize>,
        preset: &str,
    ) -> Option<usize> {
        if self.nodes.len() >= MAX_NODES {
            self.nodes_dropped += 1;
            return None;
        }
        let base = owner.map(|o| self.nodes[o].depth).unwrap_or(0);
        self.nodes.push(Node {
            parent_session: parent_session.to_owned(),
            spawn: None,
            child: None,
            preset: preset.to_owned(),
            title: String::new(),
            status: String::new(),
            events: 0,
            first_ts: rec.ts,
            last_ts: rec.ts,
            end_ts: None,
            depth: base + 1,
            parent_node: owner,
            file: rec.file,
            line: rec.line,
        });
        Some(self.nodes.len() - 1)
    }

    /// Which subagent a session/update or a request about a tool call belongs to, and
    /// which subagent it spawns or reports on.
    fn attribute(&mut self, rec: &Record, value: &Value, m: &mut Msg) {
        let Some(sid) = m.session.clone() else {
            return;
        };
        let params = &value["params"];
        let subject = params.get("update").or_else(|| params.get("toolCall"));
        let ctx = self.sessions.get(&sid).copied();
        let mut owner = ctx;
        if let Some(subject) = subject {
            // A child event that names its spawn.
            let parent = self.detector.parent_ref(subject).map(|spawn| {
                let preset = self
                    .detector
                    .presets()
                    .iter()
                    .find(|p| {
                        p.parent
                            .iter()
                            .any(|ptr| str_at(subject, ptr) == Some(spawn))
                    })
                    .map_or("", |p| p.name.as_str())
                    .to_owned();
                (preset, spawn.to_owned())
            });
            if let Some((preset, spawn)) = parent {
                let key = (sid.clone(), spawn.clone());
                let node = match self
                    .spawns
                    .get(&key)
                    .copied()
                    .or_else(|| self.spawn_above(ctx, &spawn))
                {
                    Some(n) => Some(n),
                    // In a child's own session, a reference to a spawn not seen is to the
                    // child's own (standard subagents that still carry the legacy parent id).
                    None if ctx.is_some() => {
                        if let Some(c) = ctx {
                            let parent = self.nodes[c].parent_session.clone();
                            self.spawns.insert((parent, spawn), c);
                        }
                        ctx
                    }
                    None => {
                        let n = self.new_node(rec, &sid, ctx, &preset);
                        if let Some(n) = n {
                            self.nodes[n].spawn = Some(spawn);
                            self.spawns.insert(key, n);
                        }
                        n
                    }
                };
                if node.is_some() {
                    owner = node;
                }
            }
        }
        if let Some(tool) = &m.tool_call {
            let key = (sid.clone(), tool.clone());
            match owner {
                Some(n) if owner != ctx => self.tool_owner.insert(key, n),
                None => owner = self.tool_owner.get(&key).copied(),
                _ => {}
            }
        }
        m.node = owner;
        m.depth = owner.map(|n| self.nodes[n].depth).unwrap_or(0);
        if let Some(n) = owner {
            let node = &mut self.nodes[n];
            node.last_ts = rec.ts;
            if rec.dir == Direction::AgentToProxy {
                node.events += 1;
            }
        }
        let Some(update) = params.get("update") else {
            return;
        };
        match m.update.as_deref() {
            Some("subagent_update") => {
                let Some(child) = str_at(update, "/sessionId").map(str::to_owned) else {
                    return;
                };
                let key = (sid.clone(), format!("subagent:{child}"));
                let node = match self.sessions.get(&child).or_else(|| self.spawns.get(&key)) {
                    Some(&n) => Some(n),
                    None => {
                        let n = self.new_node(rec, &sid, owner, "acp");
                        if let Some(n) = n {
                            self.nodes[n].child = Some(child.clone());
                            self.sessions.insert(child.clone(), n);
                            self.spawns.insert(key, n);
                            // The card the proxy makes for it in Zed mode has this id.
                            self.spawns
                                .insert((sid.clone(), synthesized_spawn_id(&child)), n);
                        }
                        n
                    }
                };
                let Some(n) = node else { return };
                m.spawn_of = Some(n);
                let node = &mut self.nodes[n];
                node.last_ts = rec.ts;
                if node.title.is_empty() {
                    if let Some(t) =
                        str_at(update, "/title").or_else(|| str_at(update, "/description"))
                    {
                        node.title = preview(t, 80);
                    }
                }
                if let Some(state) = str_at(update, "/state/state") {
                    node.status = match str_at(update, "/state/stopReason") {
                        Some(r) => format!("{state} ({r})"),
                        None => state.to_owned(),
                    };
                    if state != "running" {
                        node.end_ts = Some(rec.ts);
                    }
                }
            }
            Some("tool_call") | Some("tool_call_update") => {
                let Some(tool) = m.tool_call.clone() else {
                    return;
                };
                let key = (sid.clone(), tool.clone());
                let card_child = update
                    .pointer("/_meta/subagent_session_info/session_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let mut node = self.spawns.get(&key).copied();
                if node.is_none() {
                    if let Some(child) = &card_child {
                        // The proxy's card for a child the agent announced otherwise.
                        node = self.sessions.get(child).copied();
                    }
                }
                if node.is_none() {
                    let preset = match &card_child {
                        Some(_) => Some("card".to_owned()),
                        None => self.spawn_preset(update),
                    };
                    if let Some(p) = preset {
                        node = self.new_node(rec, &sid, owner, &p);
                    }
                }
                let Some(n) = node else { return };
                self.spawns.insert(key, n);
                if let Some(child) = card_child {
                    self.sessions.entry(child.clone()).or_insert(n);
                    self.nodes[n].child.get_or_insert(child);
                }
                m.spawn_of = Some(n);
                let node = &mut self.nodes[n];
                node.spawn.get_or_insert(tool);
                node.last_ts = rec.ts;
                if let Some(t) = str_at(update, "/title").filter(|t| !t.is_empty()) {
                    if node.title.is_empty() || rec.dir == Direction::AgentToProxy {
                        node.title = preview(t, 80);
                    }
                }
                if let Some(s) = str_at(update, "/status") {
                    node.status = s.to_owned();
                    if matches!(s, "completed" | "failed") {
                        node.end_ts = Some(rec.ts);
                    }
                }
            }
            _ => {}
        }
    }

    /// In a child's own session, a parent reference names a spawn of the child itself or of
    /// a session above it.
    fn spawn_above(&self, ctx: Option<usize>, spawn: &str) -> Option<usize> {
        let mut n = ctx;
        let mut hops = 0;
        while let Some(i) = n {
            let node = &self.nodes[i];
            if node.spawn.as_deref() == Some(spawn) {
                return Some(i);
            }
            if let Some(&found) = self
                .spawns
                .get(&(node.parent_session.clone(), spawn.to_owned()))
            {
                return Some(found);
            }
            n = node.parent_node;
            hops += 1;
            if hops > 64 {
                break;
            }
        }
        None
    }

    /// The preset whose spawn signature this tool call has.
    fn spawn_preset(&self, update: &Value) -> Option<String> {
        let spawn = self.detector.spawn(update)?;
        Some(self.detector.preset(spawn.preset)?.name.clone())
    }

    /// Requests still waiting for an answer, oldest first: (file, line, direction, id,
    /// method).
    pub fn open_requests(&self) -> Vec<(usize, u64, Direction, String, String)> {
        let mut open: Vec<_> = self
            .pending
            .map
            .iter()
            .map(|((_, _, id), p)| (p.file, p.line, p.dir, id.clone(), p.method.clone()))
            .collect();
        open.sort_by_key(|o| (o.0, o.1));
        open
    }

    /// Whether `node` is `target` or lies under it.
    pub fn within(&self, node: Option<usize>, mut pred: impl FnMut(&Node) -> bool) -> bool {
        let mut n = node;
        let mut hops = 0;
        while let Some(i) = n {
            let node = &self.nodes[i];
            if pred(node) {
                return true;
            }
            n = node.parent_node;
            hops += 1;
            if hops > 64 {
                break;
            }
        }
        false
    }
}

fn text_of_content(c: &Value) -> Option<&str> {
    c.get("text").and_then(Value::as_str)
}

/// The one-line summary of a request or notification.
fn summarize_call(method: &str, v: &Value, update: Option<&str>) -> String {
    let p = &v["params"];
    match method {
        "initialize" | "proxy/initialize" | "_proxy/initialize" => {
            let who = str_at(p, "/clientInfo/name").unwrap_or("?");
            let ver = str_at(p, "/clientInfo/version").unwrap_or("");
            format!(
                "{who} {ver} protocol {}",
                p.get("protocolVersion")
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            )
        }
        "session/new" => format!("cwd {}", str_at(p, "/cwd").unwrap_or("?")),
        "session/load" | "session/resume" => format!(
            "load {}",
            short_session(str_at(p, "/sessionId").unwrap_or("?"))
        ),
        "session/prompt" => {
            let text = p
                .get("prompt")
                .and_then(Value::as_array)
                .and_then(|b| b.iter().find_map(text_of_content))
                .unwrap_or("");
            format!("\"{}\"", preview(text, 70))
        }
        "session/request_permission" => {
            let title = str_at(p, "/toolCall/title").unwrap_or("");
            let options: Vec<&str> = p
                .get("options")
                .and_then(Value::as_array)
                .map(|o| o.iter().filter_map(|x| str_at(x, "/optionId")).collect())
                .unwrap_or_default();
            format!("{} [{}]", preview(title, 60), options.join(", "))
        }
        "fs/read_text_file" | "fs/write_text_file" => str_at(p, "/path").unwrap_or("").to_owned(),
        "terminal/create" => str_at(p, "/command").unwrap_or("").to_owned(),
        "session/update" => summarize_update(update.unwrap_or("?"), &p["update"]),
        "proxy/successor" | "_proxy/successor" => {
            format!("wraps {}", str_at(p, "/method").unwrap_or("a response"))
        }
        _ => String::new(),
    }
}

fn summarize_update(kind: &str, u: &Value) -> String {
    match kind {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
            format!(
                "\"{}\"",
                preview(u.get("content").and_then(text_of_content).unwrap_or(""), 70)
            )
        }
        "tool_call" | "tool_call_update" => {
            let mut s = String::new();
            if let Some(t) = str_at(u, "/title") {
                s.push_str(&preview(t, 60));
            }
            if let Some(st) = str_at(u, "/status") {
                s.push_str(&format!(" [{st}]"));
            }
            if let Some(info) = u.pointer("/_meta/subagent_session_info") {
                s.push_str(&format!(
                    " → subagent {}",
                    short_session(
                        info.get("session_id")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                    )
                ));
            }
            s.push_str(&format!(" ({})", str_at(u, "/toolCallId").unwrap_or("?")));
            s.trim_start().to_owned()
        }
        "plan" => format!(
            "{} entries",
            u.get("entries")
                .and_then(Value::as_array)
                .map(Vec::len)
                .unwrap_or(0)
        ),
        "subagent_update" => {
            let mut s = format!(
                "subagent {}",
                short_session(str_at(u, "/sessionId").unwrap_or("?"))
            );
            if let Some(t) = str_at(u, "/title").or_else(|| str_at(u, "/description")) {
                s.push_str(&format!(" \"{}\"", preview(t, 50)));
            }
            if let Some(st) = str_at(u, "/state/state") {
                s.push_str(&format!(" [{st}]"));
            }
            s
        }
        "session_message" => {
            let text = u
                .get("content")
                .and_then(Value::as_array)
                .and_then(|b| b.iter().find_map(text_of_content))
                .unwrap_or("");
            format!(
                "{} → {} \"{}\"",
                short_session(str_at(u, "/senderSessionId").unwrap_or("?")),
                short_session(str_at(u, "/recipientSessionId").unwrap_or("?")),
                preview(text, 50)
            )
        }
        "current_mode_update" => str_at(u, "/currentModeId").unwrap_or("").to_owned(),
        "session_info_update" => str_at(u, "/title").unwrap_or("").to_owned(),
        _ => String::new(),
    }
}

/// The one-line summary of a response.
fn summarize_result(method: Option<&str>, v: &Value) -> String {
    if let Some(e) = v.get("error") {
        return format!(
            "{} {}",
            e.get("code").map(|c| c.to_string()).unwrap_or_default(),
            preview(e.get("message").and_then(Value::as_str).unwrap_or(""), 100)
        );
    }
    let r = &v["result"];
    match method.unwrap_or("") {
        "initialize" => {
            let who = str_at(r, "/agentInfo/name").unwrap_or("");
            format!(
                "{who} protocol {}",
                r.get("protocolVersion")
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            )
            .trim_start()
            .to_owned()
        }
        "session/new" => format!("session {}", str_at(r, "/sessionId").unwrap_or("?")),
        "session/prompt" => format!("stop: {}", str_at(r, "/stopReason").unwrap_or("?")),
        "session/request_permission" => {
            let outcome = str_at(r, "/outcome/outcome").unwrap_or("?");
            match str_at(r, "/outcome/optionId") {
                Some(o) => format!("{outcome}: {o}"),
                None => outcome.to_owned(),
            }
        }
        _ => String::new(),
    }
}

/// A session id short enough for a column: whole when short, else its two ends.
pub fn short_session(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= 12 {
        return s.to_owned();
    }
    let head: String = chars[..5].iter().collect();
    let tail: String = chars[chars.len() - 5..].iter().collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(line: u64, ts: f64, dir: Direction, frame: &str) -> Record {
        acp_proxy::dump::reader::parse_record(
            0,
            line,
            &serde_json::json!({"ts": ts, "dir": dir, "frame": frame}).to_string(),
        )
        .expect("record")
    }

    #[test]
    fn responses_pair_with_their_request_per_connection_and_time_the_turn() {
        let mut t = Tracker::default();
        let prompt = r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi there"}]}}"#;
        let m = t.record(&rec(2, 10.0, Direction::ClientToProxy, prompt));
        assert_eq!(
            (m[0].kind, m[0].summary.as_str()),
            (Kind::Request, "\"hi there\"")
        );
        assert_eq!(m[0].turn, Some(0));
        // The agent's answer with the same id does not close the client's request.
        let answer = r#"{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}"#;
        t.record(&rec(3, 10.1, Direction::ProxyToAgent, prompt));
        let a = t.record(&rec(4, 10.5, Direction::AgentToProxy, answer));
        assert_eq!(a[0].method.as_deref(), Some("session/prompt"));
        assert!((a[0].latency.expect("latency") - 0.4).abs() < 1e-9);
        assert!(
            t.turns[0].end_ts.is_none(),
            "the turn ends when the client gets the answer"
        );
        let c = t.record(&rec(5, 10.6, Direction::ProxyToClient, answer));
        assert_eq!(c[0].request_line, Some(2));
        assert_eq!(c[0].summary, "stop: end_turn");
        assert_eq!(t.turns[0].stop_reason.as_deref(), Some("end_turn"));
        assert_eq!(t.turns[0].frames, 4);
        // Two inputs so far: two steps.
        assert_eq!(t.step, 2);
    }

    #[test]
    fn legacy_children_nest_under_their_spawn_and_the_card_names_the_child() {
        let mut t = Tracker::default();
        let up = |u: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"P","update":{u}}}}}"#
            )
        };
        let spawn = up(
            r#"{"sessionUpdate":"tool_call","toolCallId":"T1","title":"Task","status":"pending","_meta":{"claudeCode":{"toolName":"Agent"}}}"#,
        );
        let m = t.record(&rec(2, 1.0, Direction::AgentToProxy, &spawn));
        assert_eq!((m[0].depth, m[0].spawn_of), (0, Some(0)));
        assert_eq!(t.nodes[0].preset, "claude");
        let child = up(
            r#"{"sessionUpdate":"tool_call","toolCallId":"T2","title":"Glob","_meta":{"claudeCode":{"parentToolUseId":"T1","toolName":"Agent"}}}"#,
        );
        let m = t.record(&rec(3, 2.0, Direction::AgentToProxy, &child));
        assert_eq!((m[0].node, m[0].depth), (Some(0), 1));
        // A nested spawn inside the child: its own children are two levels down.
        assert_eq!(m[0].spawn_of, Some(1));
        assert_eq!(t.nodes[1].depth, 2);
        let card = up(
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"T1","status":"completed","_meta":{"subagent_session_info":{"session_id":"P-child","message_start_index":0}}}"#,
        );
        t.record(&rec(4, 3.0, Direction::ProxyToClient, &card));
        assert_eq!(t.nodes[0].child.as_deref(), Some("P-child"));
        assert_eq!(t.nodes[0].status, "completed");
        assert_eq!(t.nodes[0].events, 1);
        assert!((t.nodes[0].duration() - 2.0).abs() < 1e-9);
        let replay = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"P-child","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#;
        let m = t.record(&rec(5, 4.0, Direction::ProxyToClient, replay));
        assert_eq!((m[0].node, m[0].depth), (Some(0), 1));
        assert_eq!(t.top_session("P-child"), "P");
    }

    #[test]
    fn standard_subagents_are_nodes_of_their_child_session() {
        let mut t = Tracker::default();
        let ann = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"P","update":{"sessionUpdate":"subagent_update","sessionId":"C","title":"Survey","state":{"state":"running"}}}}"#;
        let m = t.record(&rec(2, 1.0, Direction::AgentToProxy, ann));
        assert_eq!(m[0].spawn_of, Some(0));
        let ev = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"C","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#;
        let m = t.record(&rec(3, 2.0, Direction::AgentToProxy, ev));
        assert_eq!((m[0].node, m[0].depth), (Some(0), 1));
        let done = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"P","update":{"sessionUpdate":"subagent_update","sessionId":"C","state":{"state":"idle","stopReason":"end_turn"}}}}"#;
        t.record(&rec(4, 5.0, Direction::AgentToProxy, done));
        let n = &t.nodes[0];
        assert_eq!(
            (n.preset.as_str(), n.title.as_str(), n.status.as_str()),
            ("acp", "Survey", "idle (end_turn)")
        );
        assert_eq!(n.events, 1);
        // The proxy's card for it (Zed mode) is the same subagent, under the proxy's ids.
        let card = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"P","update":{{"sessionUpdate":"tool_call","toolCallId":"{}","title":"Survey","_meta":{{"subagent_session_info":{{"session_id":"proxy-child","message_start_index":0}}}}}}}}}}"#,
            synthesized_spawn_id("C")
        );
        let m = t.record(&rec(5, 5.5, Direction::ProxyToClient, &card));
        assert_eq!((m[0].spawn_of, t.nodes.len()), (Some(0), 1));
        let load = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"proxy-child","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#;
        assert_eq!(
            t.record(&rec(6, 6.0, Direction::ProxyToClient, load))[0].node,
            Some(0)
        );
    }

    #[test]
    fn garbage_is_invalid_and_pieces_continue() {
        let mut t = Tracker::default();
        let mut r = rec(2, 1.0, Direction::AgentToProxy, "{\"a\":");
        r.partial = true;
        r.invalid_json = true;
        assert_eq!(t.record(&r)[0].kind, Kind::Invalid);
        let r2 = rec(3, 1.0, Direction::AgentToProxy, "1}");
        assert!(t.is_continuation(&r2));
        let m = t.record(&r2);
        assert!(m[0].summary.contains("oversized"), "{}", m[0].summary);
        assert_eq!(t.step, 1, "one line, one step");
        let m = t.record(&rec(4, 1.0, Direction::ClientToProxy, "[1,2]"));
        assert!(m[0].summary.contains("batch") && m[0].is_error);
    }
}
