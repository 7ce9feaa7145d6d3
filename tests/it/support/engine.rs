//! Drive the sans-IO engine directly: a Zed model on the client side, captured frames on the
//! agent side, and a tiny store model fed by the engine's store operations (so a "restart"
//! is a new engine over the same store).

use acp_proxy::engine::{Action, Engine, EngineConfig};
use acp_proxy::store::{Store, StoreConfig, StoreLocation, StoreOp, StoredChild};
use acp_proxy::subagents::ids::ClientSessionId;
use acp_proxy::subagents::records::{Record, RecordWatch};
use bytes::Bytes;
use serde_json::{json, Value};

use super::standard::StandardClient;
use super::zed_model::{initialize_params, Entry, ZedModel, ZedRules};

/// The real store, in memory: what a "restart" (a new engine over the same store) finds.
#[derive(Clone)]
pub struct StoreModel {
    store: Store,
    /// Every child id written so far, to list them all.
    ids: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
}

impl Default for StoreModel {
    fn default() -> Self {
        let cfg = StoreConfig {
            location: Some(StoreLocation::Memory),
            ..StoreConfig::default()
        };
        StoreModel {
            store: Store::open(&cfg).expect("in-memory store"),
            ids: Default::default(),
        }
    }
}

impl StoreModel {
    pub fn apply(&self, op: StoreOp) {
        let id = match &op {
            StoreOp::UpsertChild { child_id, .. }
            | StoreOp::AppendUpdate { child_id, .. }
            | StoreOp::SetState { child_id, .. }
            | StoreOp::SetIndices { child_id, .. }
            | StoreOp::SetAgentChildId { child_id, .. } => child_id.to_string(),
        };
        if let Ok(mut ids) = self.ids.lock() {
            ids.insert(id);
        }
        self.store.submit(op);
    }

    /// Every stored child.
    pub fn children(&self) -> Vec<StoredChild> {
        let ids: Vec<String> = self
            .ids
            .lock()
            .map(|i| i.iter().cloned().collect())
            .unwrap_or_default();
        ids.iter().filter_map(|id| self.child(id)).collect()
    }

    pub fn children_of(&self, parent: &ClientSessionId) -> Vec<StoredChild> {
        self.store.flush().expect("store flush");
        self.store.children_of(parent).expect("store read")
    }

    pub fn child(&self, id: &str) -> Option<StoredChild> {
        self.store.flush().expect("store flush");
        self.store.child(id).expect("store read")
    }
}

pub struct Harness {
    pub engine: Engine,
    pub zed: ZedModel,
    /// The same traffic as a client that speaks standard subagents sees it.
    pub standard: StandardClient,
    /// Every message the agent received, parsed.
    pub to_agent: Vec<Value>,
    /// Every line the client received, raw.
    pub to_client: Vec<Bytes>,
    pub notes: Vec<String>,
    /// The agents' records the engine asked the shell to follow.
    pub records: Vec<RecordWatch>,
    pub store: StoreModel,
    /// The store answers no look-up (as when it is unavailable).
    pub store_blind: bool,
    pub now: u64,
    next_id: u64,
    /// Hand agent frames to the engine with what its scanner found first, as the relay's
    /// reader thread does.
    pub scan_ahead: bool,
    /// Hand agent frames to the engine in runs of this many lines (`Engine::from_agent`,
    /// as the relay does with each read), the run cut short by anything else that happens; 0:
    /// one by one.
    pub run_lines: usize,
    /// Agent frames of the run not handed over yet.
    pending: Vec<u8>,
    pending_lines: usize,
}

impl Harness {
    pub fn new(cfg: EngineConfig) -> Harness {
        Harness::with_store(cfg, StoreModel::default())
    }

    pub fn with_store(cfg: EngineConfig, store: StoreModel) -> Harness {
        Harness {
            engine: Engine::new(cfg),
            zed: ZedModel::default(),
            standard: StandardClient::default(),
            to_agent: Vec::new(),
            to_client: Vec::new(),
            notes: Vec::new(),
            records: Vec::new(),
            store,
            store_blind: false,
            now: 0,
            next_id: 1000,
            scan_ahead: false,
            run_lines: 0,
            pending: Vec::new(),
            pending_lines: 0,
        }
    }

    pub fn zed() -> Harness {
        Harness::new(zed_config())
    }

    /// Zed mode, after Zed's `initialize` (answered by an agent called `agent` that loads
    /// sessions) and a `session/new` the agent answers with `session`.
    pub fn zed_session(agent: &str, session: &str) -> Harness {
        let mut h = Harness::zed();
        let id = h.request(
            "initialize",
            json!({"protocolVersion": 1, "clientInfo": {"name": "zed", "version": "1.18"}}),
        );
        h.agent(
            json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
            "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": agent}}}),
        );
        let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
        h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": session}}));
        h
    }

    /// Zed mode judged by the given Zed, after that Zed's `initialize` (answered by an agent
    /// called `fake` that loads sessions) and a `session/new` the agent answers with
    /// `session`.
    pub fn zed_session_under(rules: ZedRules, session: &str) -> Harness {
        let mut h = Harness::zed_under(rules);
        let id = h.request("initialize", initialize_params(rules));
        h.agent(
            json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1,
            "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "fake"}}}),
        );
        let id = h.request("session/new", json!({"cwd": "/p", "mcpServers": []}));
        h.agent(json!({"jsonrpc": "2.0", "id": id, "result": {"sessionId": session}}));
        h
    }

    /// Zed mode, judged by the given Zed.
    pub fn zed_under(rules: ZedRules) -> Harness {
        let mut h = Harness::zed();
        h.zed = ZedModel::new(rules);
        h
    }

    /// The client (Zed) sends a message.
    pub fn client(&mut self, msg: Value) {
        self.settle();
        self.zed.client_sent(&msg);
        self.standard.client_sent(&msg);
        let mut out = Vec::new();
        self.engine.from_client(line(&msg), self.now, &mut out);
        self.run(out);
    }

    /// The client sends a request with a fresh id; returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.client(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The agent sends a message.
    pub fn agent(&mut self, msg: Value) {
        self.agent_line(line(&msg));
    }

    /// The agent sends a line as it is (escapes and key order its own).
    pub fn agent_line(&mut self, frame: Bytes) {
        let mut out = Vec::new();
        if self.run_lines > 0 {
            self.pending.extend_from_slice(&frame);
            self.pending_lines += 1;
            if self.pending_lines >= self.run_lines {
                self.settle();
            }
            return;
        }
        let ahead = self
            .scan_ahead
            .then(|| self.engine.scanner().scan_run(&frame));
        self.engine.from_agent(&frame, ahead, self.now, &mut out);
        self.run(out);
    }

    /// The agent sends a `session/update`.
    pub fn update(&mut self, session: &str, update: Value) {
        self.agent(update_msg(session, update));
    }

    /// Hand over the agent frames of an unfinished run (see `run_lines`).
    pub fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let run = Bytes::from(std::mem::take(&mut self.pending));
        self.pending_lines = 0;
        let ahead = self.scan_ahead.then(|| {
            let scanner = self.engine.scanner();
            // As the relay hints the reader thread (after the run before).
            scanner.reads_new_tool_calls(self.engine.reads_new_tool_calls());
            scanner.scan_run(&run)
        });
        let mut out = Vec::new();
        self.engine.from_agent(&run, ahead, self.now, &mut out);
        self.run(out);
    }

    /// The agent exits.
    pub fn agent_gone(&mut self, reason: &str) {
        self.settle();
        let mut out = Vec::new();
        self.engine.agent_gone(reason, &mut out);
        self.run(out);
    }

    pub fn advance(&mut self, ms: u64) {
        self.settle();
        self.now += ms;
        if self.engine.poll_timeout().is_some_and(|t| t <= self.now) {
            let mut out = Vec::new();
            self.engine.handle_timeout(self.now, &mut out);
            self.run(out);
        }
    }

    /// What the agent's record of `child` says, as the shell hands it over.
    pub fn record_read(&mut self, child: &str, record: Record) {
        self.settle();
        let mut out = Vec::new();
        self.engine.record_read(child, record, self.now, &mut out);
        self.run(out);
    }

    /// What a live record says so far, as the shell reports it while it grows.
    pub fn record_grew(&mut self, child: &str, record: Record) {
        self.settle();
        let mut out = Vec::new();
        self.engine.record_grew(child, record, self.now, &mut out);
        self.run(out);
    }

    fn run(&mut self, actions: Vec<Action>) {
        let mut queue: std::collections::VecDeque<Action> = actions.into();
        while let Some(action) = queue.pop_front() {
            match action {
                // A line the engine read: what follows is its outcome.
                Action::Read(_) => {}
                Action::ToClient(bytes) | Action::Untouched(bytes) => {
                    for l in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                        let v: Value =
                            serde_json::from_slice(l).expect("proxy sent valid JSON to the client");
                        self.zed.received(&v);
                        self.standard.received(&v);
                    }
                    self.to_client.push(bytes);
                }
                Action::ToAgent(bytes) => {
                    let v: Value =
                        serde_json::from_slice(&bytes).expect("proxy sent valid JSON to the agent");
                    self.to_agent.push(v);
                }
                Action::Note(n) => self.notes.push(n.message),
                Action::FollowRecord(watch) => self.records.push(watch),
                Action::Store(op) => self.store.apply(op),
                Action::FetchChildren { .. } if self.store_blind => self.engine.restore(Vec::new()),
                Action::FetchChildren { parent_session_id } => {
                    let kids = self.store.children_of(&parent_session_id);
                    self.engine.restore(kids);
                }
                Action::FetchChild { child_id, request } => {
                    let found = (!self.store_blind)
                        .then(|| self.store.child(child_id.as_str()))
                        .flatten();
                    let mut out = Vec::new();
                    self.engine
                        .child_fetched(found, request, self.now, &mut out);
                    for a in out.into_iter().rev() {
                        queue.push_front(a);
                    }
                }
            }
        }
    }

    /// Zed opens a child thread (as it does for a card after reopening the parent).
    pub fn load_child(&mut self, child: &str) -> u64 {
        self.request(
            "session/load",
            json!({"sessionId": child, "cwd": "/home/user/project", "mcpServers": []}),
        )
    }

    /// Zed took everything it got: no frame its decoder rejects, no update for a session or a
    /// tool call it does not have, no request it refuses or cannot place.
    pub fn assert_zed_clean(&self) {
        let z = &self.zed;
        assert!(
            z.rejected.is_empty()
                && z.orphan_tool_updates.is_empty()
                && z.refused_requests.is_empty()
                && z.dropped.is_empty()
                && z.unknown_session_requests.is_empty(),
            "{:?}: rejected {:?}, updates before their tool call {:?}, refused requests {:?}, dropped {:?}, requests for unknown sessions {:?}",
            z.rules,
            z.rejected,
            z.orphan_tool_updates,
            z.refused_requests,
            z.dropped,
            z.unknown_session_requests
        );
    }

    /// The last message the client got that answers request `id`.
    pub fn response(&self, id: u64) -> Option<Value> {
        let lines = self
            .to_client
            .iter()
            .flat_map(|b| b.split_inclusive(|c| *c == b'\n'));
        lines.rev().find_map(|b| {
            let v: Value = serde_json::from_slice(b).ok()?;
            (v.get("id") == Some(&json!(id)) && v.get("method").is_none()).then_some(v)
        })
    }
}

/// The engine's settings with subagents shown as Zed shows them.
pub fn zed_config() -> EngineConfig {
    EngineConfig {
        display: acp_proxy::engine::SubagentDisplay::Zed,
        ..EngineConfig::default()
    }
}

/// A `session/update` notification of `session`.
pub fn update_msg(session: &str, update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": session, "update": update}})
}

/// Entries of a thread as one line each: `user:…`, `agent:…`, `tool:ID:STATUS`.
/// A scripted child's thread: its task first, its answer last (the e2e stand-ins' words).
pub fn assert_task_then_answer(lines: &[String]) {
    assert!(
        lines
            .first()
            .is_some_and(|l| l.starts_with("user:SUBAGENT:")),
        "{lines:?}"
    );
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("agent:SUB-ANSWER")),
        "{lines:?}"
    );
}

pub fn entry_lines(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| match e {
            Entry::User(t) => format!("user:{t}"),
            Entry::Assistant(t) => format!("agent:{t}"),
            Entry::Tool(t) => format!("tool:{}:{}", t.id, t.status),
            other => other.to_string(),
        })
        .collect()
}

pub fn line(msg: &Value) -> Bytes {
    let mut s = msg.to_string();
    s.push('\n');
    s.into()
}

/// Messages of a capture in `tests/fixtures/` as (direction, message).
pub fn fixture(name: &str) -> Vec<(String, Value)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {} readable: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let rec: Value = serde_json::from_str(l).expect("fixture line is JSON");
            (
                rec["dir"].as_str().unwrap_or("").to_owned(),
                rec["msg"].clone(),
            )
        })
        .collect()
}

/// The frames of a proxy dump in `tests/fixtures/` (`acp-proxy --dump`, e.g. an e2e run) as
/// (direction, message), in the direction names of [`fixture`]: what the client sent as
/// `out`, what the agent sent as `in`. What the proxy wrote is left out: a test makes its own.
pub fn dump_fixture(name: &str) -> Vec<(String, Value)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("dump {} readable: {e}", path.display()));
    text.lines()
        .filter_map(|l| {
            let rec: Value = serde_json::from_str(l).expect("dump line is JSON");
            let dir = match rec["dir"].as_str()? {
                "client→proxy" => "out",
                "agent→proxy" => "in",
                _ => return None,
            };
            let msg = serde_json::from_str(rec["frame"].as_str()?).expect("frame is JSON");
            Some((dir.to_owned(), msg))
        })
        .collect()
}

/// Play a capture through the harness: `out` as the client, `in` as the agent.
pub fn play(h: &mut Harness, records: &[(String, Value)]) {
    for (dir, msg) in records {
        match dir.as_str() {
            "out" => h.client(msg.clone()),
            _ => h.agent(msg.clone()),
        }
    }
}
