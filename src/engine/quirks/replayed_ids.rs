//! Children whose agent replays their spawn under a new tool call id, found again by the
//! agent's own id for the child (a preset's `agent_child_id`): Kimi's parent `session/load`
//! replays each spawn under a new turn uuid, while the `agent_id` its end names is the one the
//! live spawn named.
//!
//! Live, the id a spawn names is kept with the child and in the store. In a parent's replay, a
//! spawn whose tool call id no child has is held (its first frame only) while a child of that
//! parent restored from the store has such an id and no card yet in this replay; so are the
//! spawns that follow it at once (Kimi replays a turn's spawns, then their ends). A held
//! spawn's end that names a stored child's id makes that child take the replayed spawn (its
//! card comes back under the new tool call id and opens the stored thread; the replay adds
//! nothing to it); an end that names none lets it go on as a new spawn, as it would have. Any
//! other frame on the session, the end of the replay or of the agent lets every held spawn go
//! on first, in order, as new spawns.

use serde_json::Value;

use crate::engine::{Action, Engine, NoteLevel};
use crate::subagents::ids::ChildId;
use crate::subagents::model::SpawnSite;
use crate::subagents::persist::StoreOp;
use crate::subagents::preset::detect::PresetId;

/// A replayed spawn's first frame, held until the agent's next frame on its session.
#[derive(Debug)]
struct Held {
    site: SpawnSite,
    tool_name: String,
    preset: PresetId,
    update: Value,
}

/// Replayed spawns held at once, at most (past it a spawn goes on at once).
const HELD_MAX: usize = 64;

/// Replayed spawns held, oldest first.
#[derive(Debug, Default)]
pub(in crate::engine) struct ReplayedSpawns {
    held: Vec<Held>,
}

impl ReplayedSpawns {
    /// Whether any spawn is held (every agent frame is read then: nothing may overtake it).
    pub(in crate::engine) fn any(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether a spawn of `session` is held.
    pub(in crate::engine) fn holds(&self, session: &str) -> bool {
        !self.held.is_empty()
            && self
                .held
                .iter()
                .any(|h| h.site.agent_session.as_str() == session)
    }

    /// Whether the spawn `spawn` of `session` is held.
    pub(in crate::engine) fn holds_spawn(&self, session: &str, spawn: &str) -> bool {
        self.held
            .iter()
            .any(|h| h.site.agent_session.as_str() == session && h.site.spawn_id == spawn)
    }

    fn take_spawn(&mut self, session: &str, spawn: &str) -> Option<Held> {
        let i = self
            .held
            .iter()
            .position(|h| h.site.agent_session.as_str() == session && h.site.spawn_id == spawn)?;
        Some(self.held.remove(i))
    }

    fn take_session(&mut self, session: &str) -> Vec<Held> {
        let (taken, kept) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.site.agent_session.as_str() == session);
        self.held = kept;
        taken
    }

    fn take_in_top(&mut self, top_session: &str) -> Vec<Held> {
        let (taken, kept) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.site.top_session.as_str() == top_session);
        self.held = kept;
        taken
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 1] {
        [("replayed_spawns_held", self.held.len())]
    }
}

impl Engine {
    /// A spawn frame: keep the agent's own id for the child if the frame names it (and store
    /// it, once).
    pub(in crate::engine) fn keep_agent_id(
        &mut self,
        cid: &ChildId,
        preset: Option<PresetId>,
        update: &Value,
        out: &mut Vec<Action>,
    ) {
        let Some(p) = preset else { return };
        let Some(id) = self
            .detector
            .agent_child_id_of(p, update)
            .filter(|id| !id.is_empty())
        else {
            return;
        };
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.agent_id.as_deref() == Some(id.as_str()) {
            return;
        }
        child.agent_id = Some(id.clone());
        out.push(Action::Store(StoreOp::SetAgentChildId {
            child_id: cid.clone(),
            agent_child_id: id,
        }));
    }

    /// A new spawn's first frame: held (true) while a parent's replay is under way and a
    /// stored child of that parent, not shown again yet, has an agent id its end may name.
    pub(in crate::engine) fn hold_replayed_spawn(
        &mut self,
        site: &SpawnSite,
        tool_name: &str,
        preset: PresetId,
        update: &Value,
    ) -> bool {
        if !self.reopen.replaying(site.top_session.as_str())
            || !self.detector.reads_agent_child_id(preset)
            || self.replayed_spawns.held.len() >= HELD_MAX
        {
            return false;
        }
        let awaited = self.reg.in_top_session(site.top_session.as_str()).any(|c| {
            c.parent == site.parent && c.agent_id.is_some() && !self.reopen.card_shown(&c.id)
        });
        if !awaited {
            return false;
        }
        self.replayed_spawns.held.push(Held {
            site: site.clone(),
            tool_name: tool_name.to_owned(),
            preset,
            update: update.clone(),
        });
        true
    }

    /// The end (`update`) of the spawn `spawn` held on `session`: the spawn goes to the
    /// stored child whose agent id the end names, or on as a new spawn.
    pub(in crate::engine) fn held_spawn_ended(
        &mut self,
        session: &str,
        spawn: &str,
        update: Value,
        out: &mut Vec<Action>,
    ) {
        let Some(held) = self.replayed_spawns.take_spawn(session, spawn) else {
            return;
        };
        let stored = self
            .detector
            .agent_child_id_of(held.preset, &update)
            .filter(|id| !id.is_empty())
            .and_then(|id| {
                self.reg
                    .in_top_session(held.site.top_session.as_str())
                    .find(|c| {
                        c.parent == held.site.parent
                            && c.agent_id.as_deref() == Some(id.as_str())
                            && !self.reopen.card_shown(&c.id)
                    })
                    .map(|c| (c.id.clone(), id))
            });
        let cid = match stored {
            Some((cid, id)) => {
                self.reg.alias_spawn(session, spawn, &cid);
                if let Some(c) = self.reg.get_mut(&cid) {
                    // Its card is the replayed tool call now.
                    c.spawn_id = spawn.to_owned();
                }
                self.note(
                    out,
                    NoteLevel::Info,
                    format!(
                        "subagent {cid}: replayed as spawn {spawn}, whose end names the agent's id {id} of this stored child: its card opens it"
                    ),
                );
                self.spawn_event(&cid, "tool_call", Some(held.update), out);
                self.release_held(session, spawn, out);
                cid
            }
            None => {
                self.release_spawn(held, out);
                let Some(cid) = self.reg.by_spawn(session, spawn).cloned() else {
                    return;
                };
                cid
            }
        };
        self.spawn_event(&cid, "tool_call_update", Some(update), out);
    }

    /// Another frame on `session`: its held spawns go on first, in order, as new spawns.
    pub(in crate::engine) fn release_held_spawns(&mut self, session: &str, out: &mut Vec<Action>) {
        if self.replayed_spawns.held.is_empty() {
            return;
        }
        for held in self.replayed_spawns.take_session(session) {
            self.release_spawn(held, out);
        }
    }

    /// A parent's replay ended (or the agent did): its held spawns go on as new spawns.
    pub(in crate::engine) fn release_replayed_spawns(
        &mut self,
        top_session: &str,
        out: &mut Vec<Action>,
    ) {
        if self.replayed_spawns.held.is_empty() {
            return;
        }
        for held in self.replayed_spawns.take_in_top(top_session) {
            self.release_spawn(held, out);
        }
    }

    /// The agent is gone: every held spawn goes on as a new spawn.
    pub(in crate::engine) fn release_every_replayed_spawn(&mut self, out: &mut Vec<Action>) {
        for held in std::mem::take(&mut self.replayed_spawns.held) {
            self.release_spawn(held, out);
        }
    }

    fn release_spawn(&mut self, held: Held, out: &mut Vec<Action>) {
        let Held {
            site,
            tool_name,
            preset,
            update,
        } = held;
        let (session, spawn) = (site.agent_session.clone(), site.spawn_id.clone());
        self.new_spawn(site, tool_name, preset, update, out);
        self.release_held(session.as_str(), &spawn, out);
    }
}
