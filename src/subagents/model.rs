//! One internal model of subagents, whatever the agent sent and whatever the client shows:
//! parent sessions → spawns → child sessions with a lifecycle, a thread and index ranges.

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};

use super::pair::{Pair, PairMap, PairRef};

use serde_json::Value;

use super::entries::{key_field, EntryCounter, EntryRules};
use super::ids::{AgentSessionId, ChildId, ClientSessionId};
use super::life::Life;
pub use super::life::{Card, ChildState};
use super::preset::detect::PresetId;
use super::preset::transcript::fold::Fold;
use super::thread::Thread;

/// The tool name given to spawn cards the proxy synthesizes (Zed's own name for subagent
/// spawns).
pub const SYNTHETIC_TOOL_NAME: &str = "spawn_agent";

/// The entry indices of one turn of a child (`end` inclusive; `None` while the turn runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnRange {
    pub start: u32,
    pub end: Option<u32>,
}

/// Where a child was spawned: the coordinates every child is created from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnSite {
    /// The agent session the child's events arrive on: the top-level session for legacy
    /// wires, the child's own agent session for standard ACP.
    pub agent_session: AgentSessionId,
    /// Client-facing id of the session whose thread holds the spawn card.
    pub parent: ClientSessionId,
    /// The top-level session (one the client created or loaded) the child belongs to.
    pub top_session: ClientSessionId,
    /// The spawn's tool call id (synthesized for standard ACP children).
    pub spawn_id: String,
}

/// Live progress: the child's steps (tool calls) so far and the latest one's title, kept
/// across the child's turns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    pub steps: u32,
    pub activity: Option<String>,
}

/// Whether the client has the child's thread open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum View {
    /// Not loaded: the child's events are recorded, and shown once the client loads it.
    #[default]
    Closed,
    /// Loaded: live updates go to the client under the child's id.
    Loaded,
}

/// How the client's Stop on the child reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopRoute {
    /// The agent cannot cancel the child alone: the parent's turn is cancelled (or nothing,
    /// as `child_cancel` says).
    #[default]
    ViaParent,
    /// The agent announced it can cancel this child on its own (standard
    /// `capabilities.cancel`): the child's own session is cancelled.
    Direct,
}

/// Whether the child's thread starts with its task prompt yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Prompt {
    #[default]
    Awaited,
    Recorded,
}

/// How the child runs beside its spawn tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Run {
    /// Its spawn tool call completes when the child does.
    #[default]
    Foreground,
    /// It runs on after its spawn tool call completed (Claude's background agents): that
    /// completion is only the launch notice.
    Background,
}

/// While the parent is reopened (the agent replays it for a client's `session/load`): whether
/// this child's events are new or already in its recorded thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum History {
    /// Record what arrives.
    #[default]
    Live,
    /// The thread already holds what the replay brings: record nothing again.
    Known,
}

/// Whether the proxy still models the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tracking {
    #[default]
    Modelled,
    /// Over a limit: the child's further events pass through to the parent unchanged.
    PassThrough,
}

/// A child session the proxy serves to the client.
///
/// Its life and its card are one value, [`Life`], changed only by the transitions below.
/// Beside it, private as well, the dimensions a child's life does not decide: how it runs
/// beside its spawn tool call (a background child stays one through its end and a
/// continuation), whether the client has its thread loaded, how a Stop reaches the agent,
/// whether its thread has its task yet, whether a reopen's replay brings anything new, and
/// whether it is modelled at all. Renderers read a child; only the engine writes one.
#[derive(Debug, Clone)]
pub struct Child {
    /// Client-facing id, derived from (parent, spawn).
    pub id: ChildId,
    /// Client-facing id of the session whose thread holds the spawn card.
    pub parent: ClientSessionId,
    /// The agent session the child's events arrive on: the top-level session for legacy
    /// wires, the child's own agent session for standard ACP (see `agent_child`).
    pub agent_session: AgentSessionId,
    /// The top-level session (one the client created or loaded) this child belongs to.
    pub top_session: ClientSessionId,
    pub spawn_id: String,
    /// The agent's own session id for this child (standard ACP subagents); set only with
    /// `agent_session` ([`Child::own_agent_session`]), before the child goes into the registry,
    /// which indexes it.
    agent_child: Option<AgentSessionId>,
    /// The agent's own id for this child as its spawn named it (a preset's
    /// `agent_child_id`), kept in the store: a reopened parent whose agent replays the spawn
    /// under a new tool call id finds the child by it.
    pub agent_id: Option<String>,
    /// The agent's name for the spawning tool.
    pub tool_name: String,
    /// The preset that claimed the spawn: the child's later signals are read through it
    /// (unknown for a child restored from the store until its spawn is seen again).
    pub preset: Option<PresetId>,
    /// The task title as the agent gave it (without live progress).
    pub title: String,
    /// What else the preset knows of the task (the agent type, say); not stored.
    pub description: Option<String>,
    /// Where the child is in its life and what its card shows.
    life: Life,
    /// The child's updates in order, as the exact JSON the proxy replays (the oldest may be
    /// held only by the store).
    pub thread: Thread,
    /// The latest title the thread gave each of its tool calls.
    tool_titles: HashMap<String, String>,
    pub entries: EntryCounter,
    pub turns: Vec<TurnRange>,
    /// Live progress; counted by [`Child::show_step`].
    progress: Progress,
    view: View,
    stop_route: StopRoute,
    prompt: Prompt,
    /// Changed only by [`Child::run_in_background`].
    run: Run,
    history: History,
    /// Changed only by [`Child::pass_through`].
    tracking: Tracking,
    /// Message ids of standard `session_message`s already recorded (they arrive twice).
    pub seen_messages: Vec<String>,
    /// The task read from a standard announcement, recorded as the prompt when the child's
    /// work starts unless a `session_message` brought it first.
    pub announced_prompt: Option<String>,
    /// Child events carried by updates of the spawn card so far (Goose's tool requests).
    pub spawn_events: u32,
    /// Events attributed to this child by timing alone (its preset's opt-in).
    pub inferred_events: u32,
    pub cwd: Option<String>,
    /// Bytes recorded in `thread`.
    pub bytes: usize,
    /// The child's work as the agent folds it into text, read so far.
    pub fold: Option<Box<Fold>>,
}

impl Child {
    pub fn new(id: ChildId, site: SpawnSite, tool_name: String) -> Child {
        let SpawnSite {
            agent_session,
            parent,
            top_session,
            spawn_id,
        } = site;
        Child {
            id,
            parent,
            agent_session,
            top_session,
            spawn_id,
            agent_child: None,
            agent_id: None,
            tool_name,
            preset: None,
            title: String::new(),
            description: None,
            life: Life::announced(),
            thread: Thread::default(),
            tool_titles: HashMap::new(),
            entries: EntryCounter::default(),
            turns: vec![TurnRange {
                start: 0,
                end: None,
            }],
            progress: Progress::default(),
            view: View::Closed,
            stop_route: StopRoute::ViaParent,
            prompt: Prompt::Awaited,
            run: Run::Foreground,
            history: History::Live,
            tracking: Tracking::Modelled,
            seen_messages: Vec::new(),
            announced_prompt: None,
            spawn_events: 0,
            inferred_events: 0,
            cwd: None,
            bytes: 0,
            fold: None,
        }
    }

    /// The agent's own session id for this child (standard ACP subagents).
    pub fn agent_child(&self) -> Option<&AgentSessionId> {
        self.agent_child.as_ref()
    }

    /// The child has a session of its own on the agent's side (a standard ACP subagent): its
    /// events arrive there. Called before the child goes into the registry
    /// ([`Children::insert`] indexes it).
    pub fn own_agent_session(&mut self, id: AgentSessionId) {
        self.agent_child = Some(id.clone());
        self.agent_session = id;
    }

    // The lifecycle: read.

    /// Where the child is in its life.
    pub fn state(&self) -> ChildState {
        self.life.state()
    }

    /// What the spawn card shows.
    pub fn card(&self) -> Card {
        self.life.card()
    }

    /// Whether the spawn card has its final status.
    pub fn card_is_final(&self) -> bool {
        self.card() == Card::Final
    }

    /// Whether the client asked to stop the child (only an open card holds the request).
    pub fn cancel_asked(&self) -> bool {
        self.life.cancel_asked()
    }

    // The lifecycle: transitions.

    /// The child's work started (or goes on): it is running, its card as it was.
    pub fn start(&mut self) {
        self.life.start();
    }

    /// The child ended in `state` after its card already had its final status (a card the
    /// agent completed at the launch): only its state is left to settle.
    pub fn settle(&mut self, state: ChildState) {
        self.life.settle(state);
    }

    /// The card shows the child's live progress (its steps so far) as its title, if it is
    /// open.
    pub fn show_progress(&mut self) {
        self.life.show_progress();
    }

    /// A child brought back from the store in `state`: a final state means the card was final
    /// when it was stored.
    pub fn restore_state(&mut self, state: ChildState) {
        self.life = Life::restored(state);
    }

    /// The client asked to stop the child: it is shown cancelled only once the agent confirms
    /// or the parent's turn ends.
    pub fn ask_cancel(&mut self) {
        self.life.ask_cancel();
    }

    /// Live progress: one more step, titled `activity`; an open card now shows it.
    pub fn show_step(&mut self, activity: Option<String>) {
        self.progress.steps += 1;
        self.progress.activity = activity;
        self.life.show_progress();
    }

    /// The child's turn ended with its card, the child in `state` (running on if it is not
    /// final): its range closes and the card is final. Returns whether the card showed live
    /// progress (its title must be the task's again).
    pub fn finish_card(&mut self, state: ChildState) -> bool {
        self.end_turn();
        self.life.finish(state)
    }

    /// A child whose card is final got new work (a continued subagent): a new turn in an open
    /// card, no cancel asked. Returns false if the card was still open.
    pub fn reopen_card(&mut self) -> bool {
        if !self.life.reopen() {
            return false;
        }
        self.start_turn();
        true
    }

    // Beside the lifecycle.

    /// How the child runs beside its spawn tool call.
    pub fn run(&self) -> Run {
        self.run
    }

    /// Whether the child runs on after its spawn tool call completed.
    pub fn is_background(&self) -> bool {
        self.run == Run::Background
    }

    /// The child runs on after its spawn tool call completed (a background agent); it stays
    /// one.
    pub fn run_in_background(&mut self) {
        self.run = Run::Background;
    }

    /// Live progress so far.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// The latest step's title as the agent reports it on the spawn card (not a new step).
    pub fn note_activity(&mut self, activity: String) {
        self.progress.activity = Some(activity);
    }

    /// Whether the client has the child's thread open.
    pub fn is_loaded(&self) -> bool {
        self.view == View::Loaded
    }

    /// The client loaded (or resumed) the child's thread: live updates go to it.
    pub fn mark_loaded(&mut self) {
        self.view = View::Loaded;
    }

    /// The client closed the child's thread.
    pub fn mark_closed(&mut self) {
        self.view = View::Closed;
    }

    /// How the client's Stop on the child reaches the agent.
    pub fn stop_route(&self) -> StopRoute {
        self.stop_route
    }

    /// The agent announced it can cancel this child on its own.
    pub fn stop_directly(&mut self) {
        self.stop_route = StopRoute::Direct;
    }

    /// Whether the child's thread still waits for its task prompt.
    pub fn prompt_awaited(&self) -> bool {
        self.prompt == Prompt::Awaited
    }

    /// The child's thread has its task prompt (or needs none recorded any more).
    pub fn mark_prompt_recorded(&mut self) {
        self.prompt = Prompt::Recorded;
    }

    /// Whether a replay of the parent brings nothing new for this child.
    pub fn history_known(&self) -> bool {
        self.history == History::Known
    }

    /// Whether what a replay of the parent brings for this child is new or already recorded.
    pub fn set_history(&mut self, history: History) {
        self.history = history;
    }

    /// Whether the child's events pass through unmodelled (it went over a limit).
    pub fn passes_through(&self) -> bool {
        self.tracking == Tracking::PassThrough
    }

    /// The child went over a limit: from now on its events pass through to the parent
    /// unmodelled.
    pub fn pass_through(&mut self) {
        self.tracking = Tracking::PassThrough;
    }

    /// The turn the card shows now (the last one).
    pub fn current_turn(&self) -> TurnRange {
        self.turns.last().copied().unwrap_or(TurnRange {
            start: 0,
            end: None,
        })
    }

    /// A legacy child (no session of its own) that may still produce events.
    pub fn is_open_legacy(&self) -> bool {
        self.agent_child.is_none() && (!self.state().is_final() || self.is_background())
    }

    /// Record one update by its kind and its [`key_field`] (what the entry rules read) and
    /// its JSON text.
    pub fn record_kind(&mut self, kind: &str, key: Option<&str>, text: Arc<str>) {
        self.entries.push(kind, key);
        self.bytes += text.len();
        self.thread.push(text);
    }

    /// The thread gave tool call `tool` this title (the latest one wins).
    pub fn note_tool_title(&mut self, tool: &str, title: &str) {
        match self.tool_titles.get_mut(tool) {
            Some(t) => title.clone_into(t),
            None => {
                self.tool_titles.insert(tool.to_owned(), title.to_owned());
            }
        }
    }

    /// The latest title the thread gave tool call `tool`.
    pub fn tool_title(&self, tool: &str) -> Option<&str> {
        self.tool_titles.get(tool).map(String::as_str)
    }

    /// Rebuild the entry counter, the size and the tool titles from the thread. Only a whole
    /// thread can be recounted (entry rules are set before any child records, and a thread
    /// restored from the store is whole): a partial one keeps its counts.
    pub fn recount(&mut self) {
        if !self.thread.is_whole() {
            return;
        }
        let mut bytes = 0;
        let mut entries = EntryCounter::new(self.entries.rules());
        let mut titles = Vec::new();
        for (_, text) in self.thread.held() {
            bytes += text.len();
            if let Ok(v) = serde_json::from_str::<Value>(text) {
                let kind = v.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
                let key = key_field(kind)
                    .and_then(|f| v.get(f))
                    .and_then(Value::as_str);
                entries.push(kind, key);
                if let (Some(tool), Some(title)) = (
                    v.get("toolCallId").and_then(Value::as_str),
                    v.get("title").and_then(Value::as_str),
                ) {
                    titles.push((tool.to_owned(), title.to_owned()));
                }
            }
        }
        self.bytes = bytes;
        self.entries = entries;
        for (tool, title) in titles {
            self.note_tool_title(&tool, &title);
        }
    }

    /// Count entries by `rules` (recounting what the thread holds if they changed).
    pub fn use_entry_rules(&mut self, rules: EntryRules) {
        if self.entries.rules() != rules {
            self.entries = EntryCounter::new(rules);
            self.recount();
        }
    }

    /// Close the current turn at the last entry so far.
    pub fn end_turn(&mut self) {
        let last = self.entries.count().saturating_sub(1);
        if let Some(turn) = self.turns.last_mut() {
            turn.end = Some(last.max(turn.start));
        }
    }

    /// Open a new turn after the entries so far (a continued child).
    pub fn start_turn(&mut self) {
        let start = self.entries.count();
        match self.turns.last_mut() {
            Some(t) if t.end.is_none() => {}
            _ => self.turns.push(TurnRange { start, end: None }),
        }
    }
}

/// Every child of one connection, with the lookups the engine needs: the one owner of the
/// children in memory. Its maps are private, so a child and the lookups that lead to it
/// change together ([`Children::insert`], [`Children::remove`]).
#[derive(Debug, Default)]
pub struct Children {
    children: HashMap<ChildId, Child>,
    /// (agent session carrying the spawn, spawn tool call id) → child id.
    by_spawn: PairMap<ChildId>,
    /// The agent's own child session id → child id (standard ACP).
    by_agent_child: HashMap<AgentSessionId, ChildId>,
    /// (agent session, tool call id) of a child's own tool calls → child id.
    tool_owner: PairMap<ChildId>,
    /// Every tool call id in `by_spawn` and `tool_owner`, for a quick byte test.
    tool_ids: HashSet<String>,
    /// Child id → the `by_spawn` and `tool_owner` keys that were pointed at it, so that
    /// forgetting a child does not scan every map.
    keys_of: HashMap<ChildId, Vec<Pair>>,
    /// The entry rules of the client's Zed: every child's indices are counted by them.
    entry_rules: EntryRules,
}

impl Children {
    /// Count every child's entries by these rules from now on.
    pub fn set_entry_rules(&mut self, rules: EntryRules) {
        self.entry_rules = rules;
        for child in self.children.values_mut() {
            child.use_entry_rules(rules);
        }
    }

    pub fn insert(&mut self, mut child: Child) {
        child.use_entry_rules(self.entry_rules);
        self.tool_ids.insert(child.spawn_id.clone());
        let key = Pair::new(child.agent_session.as_str(), &child.spawn_id);
        self.note_key(&child.id, key.clone());
        self.by_spawn.insert(key, child.id.clone());
        if let Some(agent_child) = &child.agent_child {
            self.by_agent_child
                .insert(agent_child.clone(), child.id.clone());
        }
        self.children.insert(child.id.clone(), child);
    }

    pub fn get(&self, id: &ChildId) -> Option<&Child> {
        self.children.get(id)
    }

    pub fn get_mut(&mut self, id: &ChildId) -> Option<&mut Child> {
        self.children.get_mut(id)
    }

    pub fn contains(&self, id: &ChildId) -> bool {
        self.children.contains_key(id)
    }

    /// The child a session id names, if it names one of the children (a session id the client
    /// sent, or a child's `parent`): the one way from a session id's text to a [`ChildId`].
    pub fn resolve(&self, session_id: &str) -> Option<&ChildId> {
        self.children.get_key_value(session_id).map(|(id, _)| id)
    }

    /// The child a session id names, if any (see [`Children::resolve`]).
    pub fn by_session_id(&self, session_id: &str) -> Option<&Child> {
        self.children.get(session_id)
    }

    /// The child a session id names, if any, to change it.
    pub fn by_session_id_mut(&mut self, session_id: &str) -> Option<&mut Child> {
        self.children.get_mut(session_id)
    }

    /// Every child, in no particular order (sort what reaches the output).
    pub fn iter(&self) -> impl Iterator<Item = &Child> {
        self.children.values()
    }

    /// Every child, to change them, in no particular order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Child> {
        self.children.values_mut()
    }

    /// The children of a top-level session, in no particular order.
    pub fn in_top_session<'a>(&'a self, top_session: &'a str) -> impl Iterator<Item = &'a Child> {
        self.children
            .values()
            .filter(move |c| c.top_session.as_str() == top_session)
    }

    /// The ids of the children of a top-level session that `pick` chooses, in the order of
    /// their spawn ids: the same input gives the same output (the map's order is random per
    /// process).
    pub fn ids_in_spawn_order(
        &self,
        top_session: &str,
        pick: impl Fn(&Child) -> bool,
    ) -> Vec<ChildId> {
        let mut picked: Vec<(&str, &ChildId)> = self
            .in_top_session(top_session)
            .filter(|c| pick(c))
            .map(|c| (c.spawn_id.as_str(), &c.id))
            .collect();
        picked.sort();
        picked.into_iter().map(|(_, id)| id.clone()).collect()
    }

    /// Whether a child of `parent` (a child's id as a session) has not finished.
    pub fn has_unfinished_child_of(&self, parent: &ChildId) -> bool {
        self.children
            .values()
            .any(|c| c.parent.as_str() == parent.as_str() && !c.state().is_final())
    }

    /// Take a child out to rebuild it: its lookups stay and lead to it again once it is
    /// back ([`Children::insert`]).
    pub fn take(&mut self, id: &ChildId) -> Option<Child> {
        self.children.remove(id)
    }

    pub fn by_spawn(&self, session: &str, spawn_id: &str) -> Option<&ChildId> {
        self.by_spawn.get(&PairRef(session, spawn_id))
    }

    pub fn by_agent_child(&self, agent_session: &str) -> Option<&ChildId> {
        self.by_agent_child.get(agent_session)
    }

    /// Another id under which the agent refers to a child's spawn (standard children are
    /// also tagged with the parent's tool-use id).
    pub fn alias_spawn(&mut self, session: &str, tool_call_id: &str, child: &ChildId) {
        self.tool_ids.insert(tool_call_id.to_owned());
        if !self.by_spawn.contains_key(&PairRef(session, tool_call_id)) {
            let key = Pair::new(session, tool_call_id);
            self.note_key(child, key.clone());
            self.by_spawn.insert(key, child.clone());
        }
    }

    fn note_key(&mut self, child: &ChildId, key: Pair) {
        match self.keys_of.get_mut(child) {
            Some(keys) => keys.push(key),
            None => {
                self.keys_of.insert(child.clone(), vec![key]);
            }
        }
    }

    pub fn tool_owner(&self, session: &str, tool_call_id: &str) -> Option<&ChildId> {
        self.tool_owner.get(&PairRef(session, tool_call_id))
    }

    pub fn set_tool_owner(&mut self, session: &str, tool_call_id: &str, child: &ChildId) {
        if self.tool_owner(session, tool_call_id) == Some(child) {
            return;
        }
        self.tool_ids.insert(tool_call_id.to_owned());
        let key = Pair::new(session, tool_call_id);
        self.note_key(child, key.clone());
        self.tool_owner.insert(key, child.clone());
    }

    /// Whether a session id names one of the children (see [`Children::resolve`]).
    pub fn is_child(&self, id: &str) -> bool {
        self.children.contains_key(id)
    }

    /// Whether child `cid` was spawned by another child (its card sits in a child thread).
    pub fn is_nested(&self, cid: &ChildId) -> bool {
        self.get(cid)
            .is_some_and(|c| self.is_child(c.parent.as_str()))
    }

    /// Whether any child carried on `session` may still produce events without naming its
    /// parent (a legacy child that has not finished).
    pub fn has_open_legacy_child(&self, session: &str) -> bool {
        self.children
            .values()
            .any(|c| c.top_session.as_str() == session && c.is_open_legacy())
    }

    /// The running legacy children spawned on `agent_session` (no session of their own, not
    /// settled).
    pub fn running_legacy_in<'a>(
        &'a self,
        agent_session: &'a str,
    ) -> impl Iterator<Item = &'a Child> {
        self.children.values().filter(move |c| {
            c.agent_session.as_str() == agent_session
                && c.agent_child.is_none()
                && !c.state().is_final()
        })
    }

    /// Nesting depth of a session: 0 for a top-level session, 1 for its children, ...
    pub fn depth(&self, session: &str) -> usize {
        let mut depth = 0;
        let mut cur = session;
        while let Some(c) = self.children.get(cur) {
            depth += 1;
            if depth > 1024 {
                break;
            }
            cur = c.parent.as_str();
        }
        depth
    }

    /// Forget a child and every lookup that leads to it (it stays in the durable store).
    pub fn remove(&mut self, id: &ChildId) -> Option<Child> {
        let child = self.children.remove(id)?;
        // Only keys still pointing at this child: another may have taken one over since.
        for key in self.keys_of.remove(id).unwrap_or_default() {
            let mut gone = false;
            for map in [&mut self.by_spawn, &mut self.tool_owner] {
                if map.get(&key).is_some_and(|v| v == id) {
                    map.remove(&key);
                    gone = true;
                }
            }
            if gone {
                self.tool_ids.remove(&key.1);
            }
        }
        if let Some(agent_child) = &child.agent_child {
            if self
                .by_agent_child
                .get(agent_child)
                .is_some_and(|v| v == id)
            {
                self.by_agent_child.remove(agent_child);
            }
        }
        Some(child)
    }

    /// Sizes of the registry's maps.
    pub fn footprint(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("children", self.children.len()),
            ("by_spawn", self.by_spawn.len()),
            ("by_agent_child", self.by_agent_child.len()),
            ("tool_owner", self.tool_owner.len()),
            ("tool_ids", self.tool_ids.len()),
            ("keys_of", self.keys_of.len()),
        ]
    }

    /// Whether a legacy child anywhere may still produce events.
    pub fn has_open_legacy_children(&self) -> bool {
        self.children.values().any(Child::is_open_legacy)
    }

    /// Whether a raw frame may name a tool call id the registry knows: every
    /// `"toolCallId":"..."` value in it is looked up (an escaped one counts as known, so the
    /// caller parses).
    pub fn may_know_tool_in(&self, raw: &[u8]) -> bool {
        if self.tool_ids.is_empty() {
            return false;
        }
        // Escaped, cut off or not UTF-8: let the caller parse.
        crate::wire::keys::tool_call_ids(raw).any(|id| id.is_none_or(|v| self.tool_ids.contains(v)))
    }

    /// Whether any child has a session of its own on the agent side (standard ACP).
    pub fn has_agent_children(&self) -> bool {
        !self.by_agent_child.is_empty()
    }

    /// Known agent-side ids of children (for filtering `session/list`).
    pub fn agent_child_ids(&self) -> impl Iterator<Item = &str> {
        self.by_agent_child.keys().map(AgentSessionId::as_str)
    }

    pub fn len(&self) -> usize {
        self.children.len()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }
}
