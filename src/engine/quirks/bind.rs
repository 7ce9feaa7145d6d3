//! An agent's own child ids bound to spawns (a preset's `child_ref`): Copilot marks a child's
//! tool calls with `_meta["github.com/copilot"].agentId`, an id of its own that is not the
//! spawn's. The id is bound to a spawn
//!
//! - from the spawn itself, where the preset's `agent_child_id` reads it (a background
//!   launch's result: `agent_id: <id>`), before any event of the child arrives;
//! - else, when an id never seen arrives while exactly one spawn that could own it is open
//!   (unbound, of a preset with `child_ref`), to that spawn: a guess, so the event is marked
//!   `_meta["acp-proxy"].attribution = "inferred"` and the dump gets a note.
//!
//! With two spawns open an unseen id stays unbound and its events stay in the parent, as the
//! agent sent them, for good: once one of its events went to the parent, a later guess would
//! split one tool call between two threads (its `tool_call` in the parent, its updates in the
//! child, where the client knows no such call). A spawn replayed by a parent's
//! `session/load` is open from its replayed `tool_call` to its replayed end, so a reopened
//! child's replayed events go to it, not to the parent. Later frames that name the id (a
//! preset's `end` with `child_id`: Copilot's `read_agent` result) find the child through the
//! same binding.

use hashbrown::HashSet;
use serde_json::Value;

use crate::engine::{Action, Engine, NoteLevel};
use crate::subagents::ids::ChildId;
use crate::subagents::pair::{Pair, PairMap, PairRef, PairSet};

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

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 3] {
        [
            ("bound_child_ids", self.by_id.len()),
            ("open_spawn_frames", self.open.len()),
            ("child_ids_left_in_parent", self.left_in_parent.len()),
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
        }
        let Some(id) = self
            .detector
            .agent_child_id_of(preset, update)
            .filter(|id| !id.is_empty())
        else {
            return;
        };
        let session = child.agent_session.clone();
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

    /// The child an event on `session` belongs to by the agent's own child id it carries
    /// (`child_ref`), binding an unseen id to the only open spawn that could own it; with the
    /// update, marked when the binding was inferred.
    pub(in crate::engine) fn child_by_ref(
        &mut self,
        session: &str,
        update: Value,
        out: &mut Vec<Action>,
    ) -> Option<(ChildId, Value)> {
        let (cid, how) = self.bound_child(session, &update, out)?;
        let update = match how {
            Bound::Told => update,
            Bound::Inferred => self.mark_inferred(&cid, update, "inferred", out),
        };
        Some((cid, update))
    }

    fn bound_child(
        &mut self,
        session: &str,
        update: &Value,
        out: &mut Vec<Action>,
    ) -> Option<(ChildId, Bound)> {
        let (_, id) = self.detector.child_ref(update)?;
        if let Some((cid, how)) = self.bindings.child(session, id) {
            return self.reg.contains(cid).then(|| (cid.clone(), *how));
        }
        if self.bindings.left_in_parent(session, id) {
            return None;
        }
        let mut candidates = self.reg.iter().filter(|c| {
            c.agent_session.as_str() == session
                && c.agent_child().is_none()
                && !self.bindings.bound.contains(&c.id)
                && c.preset
                    .is_some_and(|p| self.detector.marks_child_events(p))
                && (self.bindings.open.contains(&c.id)
                    || (!c.state().is_final() && !c.history_known()))
        });
        let only = candidates.next()?.id.clone();
        if candidates.next().is_some() {
            drop(candidates);
            self.bindings.leave_in_parent(session, id);
            return None;
        }
        drop(candidates);
        let id = id.to_owned();
        self.bindings.bind(session, &id, &only, Bound::Inferred);
        self.note(
            out,
            NoteLevel::Info,
            format!(
                "subagent {only}: the agent's own id {id} is bound to it as the only open spawn (inferred, marked in `_meta[\"acp-proxy\"]`)"
            ),
        );
        Some((only, Bound::Inferred))
    }
}
