//! The shell's one face over the engine. Every frame from either side goes in here with the
//! time; what the engine returns is carried out here: frames leave for a peer, notes reach the
//! log and the dump, the store is written and read. The dump's taps are here, once.
//!
//! Chain mode is a layer over the same face ([`Link::Chained`]): frames from the conductor are
//! unwrapped into the engine's client or agent side, and what the engine sends either way is
//! wrapped for the conductor. The relay loop does not know which it drives.

use bytes::Bytes;
use tokio::time::{Duration, Instant};

use super::agent_reader::Chunk;
use super::framing::Frame;
use super::outbox::Outbox;
use super::records::RecordFollower;
use crate::chain::{Chain, Dialect, Route};
use crate::dump::{Direction, Dump};
use crate::engine::{Action, Engine, Millis, Note, NoteLevel};
use crate::store::Store;
use crate::wire::lines;
use crate::wire::read_ahead::{RunScan, Scanner};

/// Which peer a frame is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Client,
    Agent,
}

/// Where frames leave: the client's connection, and the agent's stdin while it is open. In
/// chain mode both sides travel on the client's connection (the conductor's).
pub(crate) struct Outputs {
    pub(crate) client: Outbox,
    pub(crate) agent: Option<Outbox>,
    /// More input is read but not yet handled: frames are queued rather than written in place,
    /// so the writer task sends them with the next ones in one write.
    pub(crate) more_read: bool,
}

impl Outputs {
    /// Hand each peer the frames staged for it, together (one write while its queue is empty).
    fn send(&self, staged: &mut Staged) {
        let in_place = !self.more_read;
        if !staged.client.is_empty() {
            self.client.send_all(&mut staged.client, in_place);
        }
        if !staged.agent.is_empty() {
            match &self.agent {
                Some(agent) => {
                    agent.send_all(&mut staged.agent, in_place);
                }
                None => {
                    tracing::debug!("agent stdin closed: dropping frames for the agent");
                    staged.agent.clear();
                }
            }
        }
    }
}

/// The frames one call into the engine made for each peer, in order, handed over at its end;
/// kept to reuse their capacity.
#[derive(Default)]
struct Staged {
    client: Vec<Bytes>,
    agent: Vec<Bytes>,
}

/// How the client's connection relates to the engine's two sides.
enum Link {
    /// A client on one side, the agent (a process of ours) on the other.
    Direct,
    /// One connection to a conductor carries both sides (`proxy/successor`).
    Chained(Chain),
}

/// The engine with everything that carries out its actions.
pub(crate) struct Shell {
    engine: Engine,
    /// The engine's output, carried out in order; kept to reuse its capacity.
    actions: Vec<Action>,
    /// Frames for the peers from the actions carried out, not yet handed to their outboxes.
    staged: Staged,
    dump: Option<Dump>,
    /// Durable child transcripts (none in a pure relay).
    store: Option<Store>,
    clock: Instant,
    /// Lines longer than this are not inspected.
    max_frame: usize,
    link: Link,
    /// No agent line of the current read was recorded yet (the dump marks the others as
    /// `same_read`).
    new_read: bool,
    /// The agents' records of background children, followed off the relay path.
    records: RecordFollower,
}

impl Shell {
    pub(crate) fn new(
        engine: Engine,
        dump: Option<Dump>,
        store: Option<Store>,
        max_frame: usize,
    ) -> Shell {
        let mut engine = engine;
        if store.is_none() {
            engine.without_store();
        }
        Shell {
            engine,
            actions: Vec::new(),
            staged: Staged::default(),
            dump,
            store,
            clock: Instant::now(),
            max_frame,
            link: Link::Direct,
            new_read: true,
            records: RecordFollower::default(),
        }
    }

    /// From now on the client's connection is a conductor's, speaking `dialect`.
    pub(crate) fn chained(&mut self, dialect: Dialect) {
        self.link = Link::Chained(Chain::new(dialect));
    }

    pub(crate) fn is_chained(&self) -> bool {
        matches!(self.link, Link::Chained(_))
    }

    fn now(&self) -> Millis {
        self.clock.elapsed().as_millis() as u64
    }

    /// When [`Shell::tick`] is due next, if ever.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let engine = self
            .engine
            .poll_timeout()
            .map(|ms| self.clock + Duration::from_millis(ms));
        // While records are followed, a tick collects the ends they tell: on a fixed grid,
        // so that a busy relay (whose every wake-up asks again) cannot put it off for good.
        let records = self.records.active().then_some(()).and_then(|()| {
            let every = self.records.every().as_millis();
            let polls = self.clock.elapsed().as_millis() / every + 1;
            let at = u64::try_from(polls * every).ok()?;
            self.clock.checked_add(Duration::from_millis(at))
        });
        engine.into_iter().chain(records).min()
    }

    /// The queue whose room decides whether the client's connection is read: what the
    /// client sends mostly goes on to the agent (to the conductor in chain mode).
    pub(crate) fn client_input_queue<'o>(&self, out: &'o Outputs) -> Option<&'o Outbox> {
        match self.link {
            Link::Direct => out.agent.as_ref(),
            Link::Chained(_) => Some(&out.client),
        }
    }

    /// What reads agent frames ahead on the reader thread, while subagents are modelled.
    pub(crate) fn scanner(&self) -> Option<Scanner> {
        self.engine
            .models_subagents()
            .then(|| self.engine.scanner())
    }

    /// Whether the engine reads new tool calls now (a hint for the reader thread).
    pub(crate) fn reads_new_tool_calls(&self) -> bool {
        self.engine.reads_new_tool_calls()
    }

    /// The dump, for what is recorded off the relay's task (the agent's stderr).
    pub(crate) fn dump(&self) -> Option<Dump> {
        self.dump.clone()
    }

    /// Record a frame in the dump.
    pub(crate) fn record(&self, dir: Direction, bytes: &Bytes) {
        if let Some(d) = &self.dump {
            d.frame(dir, bytes);
        }
    }

    /// Record a line the engine took from the agent, before what it made of it. In chain mode
    /// the conductor's frame that carried it was recorded instead.
    fn record_agent_line(&mut self, line: &Bytes) {
        if let (Some(d), Link::Direct) = (&self.dump, &self.link) {
            d.agent_line(line, !std::mem::take(&mut self.new_read));
        }
    }

    /// A diagnostic of the proxy: on stderr at `warn`, and in the dump.
    pub(crate) fn warn(&self, message: String) {
        tracing::warn!("{message}");
        if let Some(d) = &self.dump {
            d.note(message);
        }
    }

    /// A diagnostic for the dump only (the caller has logged it).
    pub(crate) fn note(&self, message: String) {
        if let Some(d) = &self.dump {
            d.note(message);
        }
    }

    /// What the client's connection delivered.
    pub(crate) fn client_frame(&mut self, frame: Frame, out: &Outputs) {
        if self.is_chained() {
            return self.conductor_frame(frame, out);
        }
        let now = self.now();
        match frame {
            Frame::Line(bytes) => {
                self.record(Direction::ClientToProxy, &bytes);
                self.engine.from_client(bytes, now, &mut self.actions);
            }
            Frame::Lines(chunk) => {
                for (a, b) in lines(&chunk) {
                    let line = chunk.slice(a..b);
                    self.record(Direction::ClientToProxy, &line);
                    self.engine.from_client(line, now, &mut self.actions);
                }
            }
            Frame::Piece { bytes, first, .. } => {
                self.record(Direction::ClientToProxy, &bytes);
                if first {
                    self.oversize_note("client");
                }
                self.actions.push(Action::ToAgent(bytes));
            }
        }
        self.flush(now, out);
    }

    /// A frame from the conductor: unwrapped into the engine's client or agent side.
    fn conductor_frame(&mut self, frame: Frame, out: &Outputs) {
        let lines_of = |chunk: &Bytes| -> Vec<Bytes> {
            lines(chunk).map(|(a, b)| chunk.slice(a..b)).collect()
        };
        let lines = match frame {
            Frame::Line(bytes) => vec![bytes],
            Frame::Lines(chunk) => lines_of(&chunk),
            Frame::Piece { first, .. } => {
                if first {
                    // A wrapped frame must be read whole to be routed.
                    tracing::error!("a line from the conductor is longer than max_frame_bytes: it cannot be routed in chain mode and is dropped");
                }
                Vec::new()
            }
        };
        for bytes in lines {
            let now = self.now();
            self.record(Direction::ClientToProxy, &bytes);
            let Link::Chained(chain) = &mut self.link else {
                return;
            };
            match chain.route_inbound(bytes) {
                Route::Client(inner) => self.engine.from_client(inner, now, &mut self.actions),
                Route::Agent(inner) => self.engine.from_agent(&inner, None, now, &mut self.actions),
                Route::Drop(why) => tracing::debug!("not forwarded: {why}"),
            }
            self.flush(now, out);
        }
    }

    /// What the agent's stdout delivered (with what the reader thread found in it).
    pub(crate) fn agent_chunk(&mut self, chunk: Chunk, out: &Outputs) {
        let now = self.now();
        let Chunk { frame, scan } = chunk;
        match frame {
            Frame::Lines(run) | Frame::Line(run) => self.agent_run(run, scan, now),
            Frame::Piece { bytes, first, .. } => {
                self.record(Direction::AgentToProxy, &bytes);
                if first {
                    self.oversize_note("agent");
                }
                self.actions.push(Action::ToClient(bytes));
            }
        }
        self.flush(now, out);
    }

    /// Complete lines of one read from the agent go to the engine as one run, with or without
    /// a dump (it records each line where the engine's actions say it was read, see
    /// [`Shell::execute`]), so that a replay of the dump takes the path that ran. A line
    /// longer than `max_frame_bytes` that happened to arrive whole is passed on unparsed, as
    /// if it had come in pieces; the lines around it go to the engine as runs of their own.
    fn agent_run(&mut self, run: Bytes, scan: Option<RunScan>, now: Millis) {
        self.new_read = true;
        if run.len() <= self.max_frame {
            self.engine.from_agent(&run, scan, now, &mut self.actions);
            return;
        }
        // What the reader thread found is placed in the whole run: not used for its parts.
        let mut rest = 0;
        for (start, end) in lines(&run) {
            if end - start <= self.max_frame {
                continue;
            }
            if rest < start {
                self.engine
                    .from_agent(&run.slice(rest..start), None, now, &mut self.actions);
            }
            let line = run.slice(start..end);
            // Recorded here, in order with what the engine's actions record.
            self.actions.push(Action::Read(line.clone()));
            self.actions.push(Action::Note(Note {
                level: NoteLevel::Warn,
                message: self.oversize_message("agent"),
            }));
            self.actions.push(Action::ToClient(line));
            rest = end;
        }
        if rest < run.len() {
            self.engine
                .from_agent(&run.slice(rest..), None, now, &mut self.actions);
        }
    }

    /// Time passed: let the engine release what waited too long.
    pub(crate) fn tick(&mut self, out: &Outputs) {
        let now = self.now();
        self.engine.handle_timeout(now, &mut self.actions);
        // What live records said as they grew, before any end they told since.
        for (child, record) in self.records.take_progress() {
            self.engine
                .record_grew(&child, record, now, &mut self.actions);
        }
        for (child, record) in self.records.take_ended() {
            self.note(match (&record.agent_id, record.ended()) {
                (Some(id), false) => {
                    format!("subagent {child}: the agent's record names its id {id}")
                }
                _ => format!(
                    "subagent {child}: the agent's record says it ended ({} updates)",
                    record.updates.len()
                ),
            });
            self.engine
                .record_read(&child, record, now, &mut self.actions);
        }
        self.flush(now, out);
    }

    /// The agent ended the session: every request the client waits for gets an error.
    pub(crate) fn agent_gone(&mut self, reason: &str, out: &Outputs) {
        let now = self.now();
        self.engine.agent_gone(reason, &mut self.actions);
        self.flush(now, out);
    }

    fn oversize_note(&self, side: &str) {
        self.warn(self.oversize_message(side));
    }

    fn oversize_message(&self, side: &str) -> String {
        format!(
            "a line from the {side} is longer than max_frame_bytes ({}): relayed unchanged in pieces, not inspected",
            self.max_frame
        )
    }

    /// Carry out the engine's actions in order; the frames they make leave together at the
    /// end, each peer's in one write while its queue is empty.
    fn flush(&mut self, now: Millis, out: &Outputs) {
        // Taken out and put back, so the vector keeps its capacity.
        let mut actions = std::mem::take(&mut self.actions);
        self.execute(now, &mut actions);
        self.actions = actions;
        out.send(&mut self.staged);
    }

    /// Store look-ups are answered right here: they feed the engine before the next action
    /// runs, so a parent load reaches the agent only after its children were restored.
    fn execute(&mut self, now: Millis, actions: &mut Vec<Action>) {
        let mut list = std::mem::take(actions);
        let mut queue = list.drain(..);
        while let Some(action) = queue.next() {
            match action {
                Action::ToClient(bytes) => {
                    self.record(Direction::ProxyToClient, &bytes);
                    self.send(Dest::Client, bytes);
                }
                Action::Untouched(bytes) => {
                    if self.dump.is_some() {
                        // Each line in the dump as it would be alone: in, and out unchanged.
                        for (a, b) in lines(&bytes) {
                            let line = bytes.slice(a..b);
                            self.record_agent_line(&line);
                            self.record(Direction::ProxyToClient, &line);
                        }
                    }
                    self.send(Dest::Client, bytes);
                }
                Action::Read(line) => self.record_agent_line(&line),
                Action::ToAgent(bytes) => {
                    self.record(Direction::ProxyToAgent, &bytes);
                    self.send(Dest::Agent, bytes);
                }
                Action::Note(note) => {
                    match note.level {
                        NoteLevel::Info => tracing::info!("{}", note.message),
                        NoteLevel::Warn => tracing::warn!("{}", note.message),
                    }
                    self.note(note.message);
                }
                Action::Store(op) => {
                    if let Some(store) = &self.store {
                        store.submit(op);
                    }
                }
                Action::FetchChildren { parent_session_id } => {
                    let children = match self
                        .store
                        .as_ref()
                        .map(|s| read_after_writes(s, |s| s.children_of(&parent_session_id)))
                    {
                        Some(Ok(children)) => children,
                        Some(Err(e)) => {
                            tracing::warn!(
                                "cannot read stored subagents of {parent_session_id}: {e}"
                            );
                            Vec::new()
                        }
                        None => Vec::new(),
                    };
                    self.engine.restore(children);
                }
                Action::FollowRecord(watch) => {
                    let child = watch.child.clone();
                    tracing::debug!(?watch, "following the agent's record of a subagent");
                    if !self.records.follow(watch) {
                        tracing::warn!("subagent {child}: too many records followed; its thread holds what the wire says");
                    }
                }
                Action::FetchChild { child_id, request } => {
                    let child = match self
                        .store
                        .as_ref()
                        .map(|s| read_after_writes(s, |s| s.child(child_id.as_str())))
                    {
                        Some(Ok(child)) => child,
                        Some(Err(e)) => {
                            tracing::warn!("cannot read stored subagent {child_id}: {e}");
                            None
                        }
                        None => None,
                    };
                    let mut more = Vec::new();
                    self.engine.child_fetched(child, request, now, &mut more);
                    // What the answer produced goes before the actions after it (rare: a
                    // child load; the rest is carried out in one more call).
                    more.extend(queue.by_ref());
                    self.execute(now, &mut more);
                    break;
                }
            }
        }
        // Every action was taken out (a child load's call took the rest), so `list` is empty.
        drop(queue);
        *actions = list;
    }

    /// A frame leaves (staged until the actions are carried out): as it is, or wrapped for
    /// the conductor in chain mode.
    fn send(&mut self, dest: Dest, bytes: Bytes) {
        let staged = &mut self.staged;
        match (&mut self.link, dest) {
            (Link::Direct, Dest::Client) => staged.client.push(bytes),
            (Link::Direct, Dest::Agent) => staged.agent.push(bytes),
            (Link::Chained(chain), Dest::Client) => {
                staged.client.push(chain.wrap_for_predecessor(bytes))
            }
            (Link::Chained(chain), Dest::Agent) => {
                staged.client.push(chain.wrap_for_successor(bytes))
            }
        }
    }
}

/// Read the store once every write given before is applied: a child's updates that left the
/// engine's memory are among them. The flush's failure is not the read's: a store that
/// stopped writing to its file still answers from what it kept in memory, and one that cannot
/// answer says so on the read.
fn read_after_writes<T>(store: &Store, read: impl FnOnce(&Store) -> T) -> T {
    if let Err(e) = store.flush() {
        tracing::debug!("reading the store without its last writes: {e}");
    }
    read(store)
}
