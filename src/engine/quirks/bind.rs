//! An agent's own child ids bound to spawns (a preset's `child_ref`): Copilot marks a child's
//! tool calls with `_meta["github.com/copilot"].agentId`, an id of its own that is not the
//! spawn's. The id is bound to a spawn
//!
//! - from the spawn itself, where the preset's `agent_child_id` reads it (a background
//!   launch's result: `agent_id: <id>`), before any event of the child arrives;
//! - from the agent's own record of its children, where the preset reads one that ties ids
//!   (`child_record`, `ChildRecord::ties_ids`: Copilot's session log names each spawn's
//!   `agentId`): asked of the shell at the spawn's first frame and read off the relay path;
//! - else, when an id never seen arrives while exactly one spawn that could own it is open
//!   (unbound, of a preset with `child_ref`), to that spawn: a guess, so the event is marked
//!   `_meta["acp-proxy"].attribution = "inferred"` and the dump gets a note.
//!
//! With two spawns open an unseen id waits while the record of a spawn that could own it is
//! still asked for: its events are held (in order, at most [`WAITING_MAX`]) until the record
//! ties the id (they go to that child) or every such record answered without it or was given
//! up after [`TIE_WAIT_MS`] (they go where the wire alone puts them). The relay goes on
//! meanwhile; only those events wait. Without a record to wait for, an unseen id stays unbound
//! and its events stay in the parent, as the agent sent them, for good: once one of its events went to the parent, a later guess would
//! split one tool call between two threads (its `tool_call` in the parent, its updates in the
//! child, where the client knows no such call). A spawn replayed by a parent's
//! `session/load` is open from its replayed `tool_call` to its replayed end, so a reopened
//! child's replayed events go to it, not to the parent. Later frames that name the id (a
//! preset's `end` with `child_id`: Copilot's `read_agent` result) find the child through the
//! same binding.

use bytes::Bytes;
use hashbrown::HashSet;
use serde_json::Value;

use crate::engine::tool_order::ToolFrame;
use crate::engine::{Action, Engine, NoteLevel};
use crate::subagents::ids::ChildId;
use crate::subagents::pair::{Pair, PairMap, PairRef, PairSet};
use crate::subagents::preset::detect::PresetId;
use crate::subagents::records::RecordWatch;

/// How long the agent's record is followed for a spawn's child id (Copilot's log had the tie
/// ~130 ms after the spawns in the kit's runs).
const TIE_WAIT_MS: u64 = 5_000;
/// Child events held for a tie, at most: past it, they go where the wire alone puts them.
pub(in crate::engine) const WAITING_MAX: usize = 256;
/// Spawns whose record was asked for, remembered at most (past it the set starts over).
const ASKED_MAX: usize = 4096;

/// Where a child event with the agent's own child id goes.
pub(in crate::engine) enum ByRef {
    /// To this child (the update marked if the binding was inferred).
    Child(ChildId, Value),
    /// Held until the agent's record ties its id.
    Held,
    /// Nowhere the id tells: where the wire alone puts it.
    Unbound,
}

/// How an unseen id stands.
enum Tie {
    Bound(ChildId, Bound),
    Wait,
}

/// A child event held for its id's tie.
#[derive(Debug)]
struct Waiting {
    session: String,
    id: String,
    frame: Bytes,
    update: Value,
}

/// How an agent child id came to be bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine) enum Bound {
    /// The spawn's own frames said it (`agent_child_id`).
    Told,
    /// The only open spawn when the id first appeared.
    Inferred,
}

/// Agent child ids bound to children, by (agent session, id), and the spawns whose card
/// frames are open (a replayed spawn is, between its `tool_call` and its end).
#[derive(Debug, Default)]
pub(in crate::engine) struct Bindings {
    by_id: PairMap<(ChildId, Bound)>,
    /// Children with a bound id (a child owns at most one).
    bound: HashSet<ChildId>,
    /// Spawns whose last card frame was not an end.
    open: HashSet<ChildId>,
    /// Ids (agent session, id) first seen while several spawns could own them: their events
    /// went to the parent, and stay there.
    left_in_parent: PairSet,
    /// Spawns whose record was asked for their child's id.
    asked: HashSet<ChildId>,
    /// Of them, those whose record has not answered yet.
    pending: HashSet<ChildId>,
    /// Child events held while a record may still tie their id, oldest first.
    waiting: Vec<Waiting>,
}

/// Ids left in the parent remembered, at most (past it the set starts over).
const LEFT_IN_PARENT_MAX: usize = 4096;

impl Bindings {
    fn bind(&mut self, session: &str, id: &str, child: &ChildId, how: Bound) {
        self.by_id
            .insert(Pair::new(session, id), (child.clone(), how));
        self.bound.insert(child.clone());
    }

    /// The child bound to the agent's id `id` on `session`.
    pub(in crate::engine) fn child(&self, session: &str, id: &str) -> Option<&(ChildId, Bound)> {
        self.by_id.get(&PairRef(session, id))
    }

    /// The engine let go of a child.
    pub(in crate::engine) fn forget(&mut self, child: &str) {
        self.by_id.retain(|_, (c, _)| c.as_str() != child);
        self.bound.remove(child);
        self.open.remove(child);
        self.asked.remove(child);
        self.pending.remove(child);
    }

    /// Whether the agent's record is still asked for the child's id.
    pub(in crate::engine) fn tie_pending(&self, child: &str) -> bool {
        !self.pending.is_empty() && self.pending.contains(child)
    }

    /// Whether events of the id wait for a tie already (later ones wait behind them).
    fn waits(&self, session: &str, id: &str) -> bool {
        self.waiting
            .iter()
            .any(|w| w.session == session && w.id == id)
    }

    /// Every held event, oldest first (the agent is gone).
    pub(in crate::engine) fn drain_waiting(&mut self) -> Vec<Bytes> {
        self.pending.clear();
        self.waiting.drain(..).map(|w| w.frame).collect()
    }

    fn leave_in_parent(&mut self, session: &str, id: &str) {
        if self.left_in_parent.len() >= LEFT_IN_PARENT_MAX {
            self.left_in_parent.clear();
        }
        self.left_in_parent.insert(Pair::new(session, id));
    }

    fn left_in_parent(&self, session: &str, id: &str) -> bool {
        self.left_in_parent.contains(&PairRef(session, id))
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 5] {
        [
            ("bound_child_ids", self.by_id.len()),
            ("open_spawn_frames", self.open.len()),
            ("child_ids_left_in_parent", self.left_in_parent.len()),
            ("child_id_ties_asked", self.asked.len()),
            ("child_events_waiting_for_a_tie", self.waiting.len()),
        ]
    }
}

impl Engine {
    /// A frame of `cid`'s spawn card: keep whether it is open, and bind the agent's own id
    /// for the child when the preset reads one from it.
    pub(in crate::engine) fn spawn_frame_bind(
        &mut self,
        cid: &ChildId,
        status: Option<&str>,
        update: &Value,
        out: &mut Vec<Action>,
    ) {
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        let Some(preset) = child.preset else {
            return;
        };
        if !self.detector.binds_child_ids(preset) {
            return;
        }
        if matches!(status, Some("completed" | "failed")) {
            self.bindings.open.remove(cid);
        } else {
            self.bindings.open.insert(cid.clone());
            self.ask_tie(cid, preset, out);
        }
        let Some(id) = self
            .detector
            .agent_child_id_of(preset, update)
            .filter(|id| !id.is_empty())
        else {
            return;
        };
        let Some(session) = self.reg.get(cid).map(|c| c.agent_session.clone()) else {
            return;
        };
        if self
            .bindings
            .child(session.as_str(), &id)
            .is_some_and(|(c, _)| c == cid)
        {
            return;
        }
        self.bindings.bind(session.as_str(), &id, cid, Bound::Told);
        self.note(
            out,
            NoteLevel::Info,
            format!("subagent {cid}: the agent's own id {id} is bound to it (its spawn names it)"),
        );
    }

    /// Where an event on `session` goes by the agent's own child id it carries
    /// (`child_ref`): the child the id is bound to, binding an unseen id to the only open
    /// spawn that could own it (the update then marked); or held while the agent's record may
    /// still tie the id.
    pub(in crate::engine) fn child_by_ref(
        &mut self,
        session: &str,
        update: Value,
        frame: &Bytes,
        out: &mut Vec<Action>,
    ) -> ByRef {
        match self.bound_child(session, &update, out) {
            None => ByRef::Unbound,
            Some(Tie::Wait) => {
                let Some((_, id)) = self.detector.child_ref(&update) else {
                    return ByRef::Unbound;
                };
                let id = id.to_owned();
                self.bindings.waiting.push(Waiting {
                    session: session.to_owned(),
                    id,
                    frame: frame.clone(),
                    update,
                });
                ByRef::Held
            }
            Some(Tie::Bound(cid, Bound::Told)) => ByRef::Child(cid, update),
            Some(Tie::Bound(cid, Bound::Inferred)) => {
                let update = self.mark_inferred(&cid, update, "inferred", out);
                ByRef::Child(cid, update)
            }
        }
    }

    fn bound_child(&mut self, session: &str, update: &Value, out: &mut Vec<Action>) -> Option<Tie> {
        let (_, id) = self.detector.child_ref(update)?;
        if let Some((cid, how)) = self.bindings.child(session, id) {
            return self
                .reg
                .contains(cid)
                .then(|| Tie::Bound(cid.clone(), *how));
        }
        if self.bindings.left_in_parent(session, id) {
            return None;
        }
        if self.bindings.waits(session, id) {
            return Some(Tie::Wait);
        }
        let candidates: Vec<ChildId> = self
            .reg
            .iter()
            .filter(|c| {
                c.agent_session.as_str() == session
                    && c.agent_child().is_none()
                    && !self.bindings.bound.contains(&c.id)
                    && c.preset
                        .is_some_and(|p| self.detector.marks_child_events(p))
                    && (self.bindings.open.contains(&c.id)
                        || (!c.state().is_final() && !c.history_known()))
            })
            .map(|c| c.id.clone())
            .collect();
        let [only] = candidates.as_slice() else {
            if candidates.is_empty() {
                return None;
            }
            // Several could own it: the agent's record may still say which.
            let asked = candidates.iter().any(|c| self.bindings.pending.contains(c));
            if asked && self.bindings.waiting.len() < WAITING_MAX {
                return Some(Tie::Wait);
            }
            self.bindings.leave_in_parent(session, id);
            return None;
        };
        let only = only.clone();
        let id = id.to_owned();
        self.bindings.bind(session, &id, &only, Bound::Inferred);
        self.note(
            out,
            NoteLevel::Info,
            format!(
                "subagent {only}: the agent's own id {id} is bound to it as the only open spawn (inferred, marked in `_meta[\"acp-proxy\"]`)"
            ),
        );
        Some(Tie::Bound(only, Bound::Inferred))
    }

    /// A spawn's first open frame: ask the agent's record for its child's id, if its preset
    /// reads a record that ties ids.
    fn ask_tie(&mut self, cid: &ChildId, preset: PresetId, out: &mut Vec<Action>) {
        let format = self.detector.child_record_of(preset);
        if !format.ties_ids() || self.bindings.asked.contains(cid) {
            return;
        }
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        if child.spawn_id.is_empty() {
            return;
        }
        let watch = RecordWatch {
            child: cid.to_string(),
            session: child.agent_session.clone(),
            agent_id: String::new(),
            task: None,
            spawn: child.spawn_id.clone(),
            format,
            live: false,
            within_ms: TIE_WAIT_MS,
        };
        if self.bindings.asked.len() >= ASKED_MAX {
            self.bindings.asked.clear();
        }
        self.bindings.asked.insert(cid.clone());
        self.bindings.pending.insert(cid.clone());
        out.push(Action::FollowRecord(watch));
    }

    /// Whether the child's record is still asked for its id while events wait for a tie in
    /// its session (its answer then waits too, so that it stays the thread's last entry).
    pub(in crate::engine) fn tie_awaited(&self, cid: &ChildId) -> bool {
        if self.bindings.waiting.is_empty() || !self.bindings.pending.contains(cid) {
            return false;
        }
        self.reg.get(cid).is_some_and(|c| {
            self.bindings
                .waiting
                .iter()
                .any(|w| w.session == c.agent_session.as_str())
        })
    }

    /// Whether events of `session` wait for the agent's record to tie their id.
    pub(in crate::engine) fn ties_awaited_in(&self, session: &str) -> bool {
        !self.bindings.waiting.is_empty()
            && self.bindings.waiting.iter().any(|w| w.session == session)
            && self.bindings.waiting.len() < WAITING_MAX
    }

    /// An unmarked event that timing would give a child, while events of its session wait
    /// for a tie: it waits behind them (the child it is given to is decided when they go, so
    /// that a child's words do not come before its tool calls that waited).
    pub(in crate::engine) fn wait_for_ties(&mut self, session: &str, frame: &Bytes, update: Value) {
        self.bindings.waiting.push(Waiting {
            session: session.to_owned(),
            // No agent id: never bound, it goes once no tie is asked for in the session.
            id: String::new(),
            frame: frame.clone(),
            update,
        });
    }

    /// The agent's record answered the ask for `cid`'s id (`id`, or none: not found in time):
    /// bind it, and let the events that waited go on.
    pub(in crate::engine) fn tie_read(
        &mut self,
        cid: &ChildId,
        id: Option<&str>,
        out: &mut Vec<Action>,
    ) {
        if !self.bindings.pending.remove(cid) {
            // Not asked for its id (a record followed for the child's work): bind what it
            // names all the same.
            if id.is_none() {
                return;
            }
        }
        let Some(session) = self.reg.get(cid).map(|c| c.agent_session.clone()) else {
            return;
        };
        match id {
            Some(id) if self.bindings.child(session.as_str(), id).is_none() => {
                self.bindings.bind(session.as_str(), id, cid, Bound::Told);
                self.note(
                    out,
                    NoteLevel::Info,
                    format!("subagent {cid}: the agent's own id {id} is bound to it (the agent's record names it)"),
                );
            }
            Some(_) => {}
            None => self.note(
                out,
                NoteLevel::Info,
                format!("subagent {cid}: the agent's record did not name its own id for it: its events go where the wire puts them"),
            ),
        }
        self.release_waiting(session.as_str(), out);
    }

    /// Held events of `session` whose id is bound now go to their child; once no record of
    /// the session is asked for any more, the rest go where the wire alone puts them.
    fn release_waiting(&mut self, session: &str, out: &mut Vec<Action>) {
        if self.bindings.waiting.is_empty() {
            return;
        }
        let asked = self.bindings.pending.iter().any(|c| {
            self.reg
                .get(c)
                .is_some_and(|ch| ch.agent_session.as_str() == session)
        });
        let held = std::mem::take(&mut self.bindings.waiting);
        let mut rest = Vec::new();
        let mut go = Vec::new();
        for w in held {
            let bound = w.session == session
                && self
                    .bindings
                    .child(&w.session, &w.id)
                    .is_some_and(|(c, _)| self.reg.contains(c));
            if w.session == session && (bound || !asked) {
                go.push(w);
            } else {
                rest.push(w);
            }
        }
        self.bindings.waiting = rest;
        for w in go {
            let Waiting {
                session,
                id,
                frame,
                update,
            } = w;
            if id.is_empty() {
                // Timed: to the only open spawn now, if there is one.
                self.timed_released(&session, frame, update, out);
                continue;
            }
            match self.child_by_ref(&session, update.clone(), &frame, out) {
                ByRef::Child(cid, update) => {
                    self.child_event(&cid, &session, Some(update), frame, out)
                }
                ByRef::Held => {}
                ByRef::Unbound => self.pass_unbound(&session, frame, &update, out),
            }
        }
    }

    /// An unmarked event that waited behind a tie: where timing puts it now.
    fn timed_released(
        &mut self,
        session: &str,
        frame: Bytes,
        update: Value,
        out: &mut Vec<Action>,
    ) {
        let kind = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let tool = update
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match self.timed_child(session, &kind, tool.as_deref()) {
            Some(cid) => {
                let update = self.mark_inferred(&cid, update, "timing", out);
                self.child_event(&cid, session, Some(update), frame, out);
            }
            None => self.pass_unbound(session, frame, &update, out),
        }
    }

    /// A held event no child owns: to the parent's thread, as the route would have sent it.
    fn pass_unbound(&mut self, session: &str, frame: Bytes, update: &Value, out: &mut Vec<Action>) {
        let kind = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let tool = update.get("toolCallId").and_then(Value::as_str);
        let tf = ToolFrame {
            kind,
            tool,
            titled: update.get("title").is_some_and(|t| !t.is_null()),
        };
        self.pass_to_top_level(frame, tf, out);
        if let (Some(t), "tool_call") = (tool, kind) {
            self.held.parent_tool(session, t);
            self.release_held(session, t, out);
        }
    }
}
