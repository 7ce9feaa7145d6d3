//! Reopened sessions: a parent's `session/load` replay and the children the store kept for it.

use hashbrown::HashSet;
use serde_json::Value;

use crate::engine::{Action, Engine};
use crate::subagents::ids::{ChildId, ClientSessionId};
use crate::subagents::model::{Child, History};
use crate::wire::write;

/// Child ids remembered as already looked up in the store, at most.
const STORE_TRIED_MAX: usize = 4096;

/// What reopening keeps: the parents whose `session/load` replay is under way, the cards
/// shown again during it, and the child ids the store was asked about.
#[derive(Debug, Default)]
pub(in crate::engine) struct Reopen {
    /// Parent sessions whose `session/load` replay is under way.
    replaying: HashSet<String>,
    /// Synthesized cards already shown again during the current parent replays.
    cards_shown: HashSet<ChildId>,
    /// Parents under replay whose agent replayed a spawn tool call of its own: such an agent
    /// brings its cards back itself.
    spawns_replayed: HashSet<String>,
    /// Child ids the store was already asked about (a miss there is final).
    store_tried: HashSet<String>,
}

impl Reopen {
    /// Whether the parent `top_session` is being replayed to the client.
    pub(in crate::engine) fn replaying(&self, top_session: &str) -> bool {
        self.replaying.contains(top_session)
    }

    /// Whether the card of `cid` was shown again in the current replay.
    pub(in crate::engine) fn card_shown(&self, cid: &ChildId) -> bool {
        self.cards_shown.contains(cid)
    }

    /// The synthesized card of `cid` is shown again in this replay: whether it was not yet.
    pub(in crate::engine) fn show_card(&mut self, cid: &ChildId) -> bool {
        self.cards_shown.insert(cid.clone())
    }

    /// The agent replayed the spawn tool call of `cid` (whose parent thread is `top_session`):
    /// its card is back if a replay is under way there.
    pub(in crate::engine) fn spawn_replayed(&mut self, top_session: &str, cid: &ChildId) {
        if self.replaying.contains(top_session) {
            self.cards_shown.insert(cid.clone());
            if !self.spawns_replayed.contains(top_session) {
                self.spawns_replayed.insert(top_session.to_owned());
            }
        }
    }

    /// Whether the store was asked about this session id already.
    pub(in crate::engine) fn store_tried(&self, id: &str) -> bool {
        self.store_tried.contains(id)
    }

    /// The store answered about these ids (a bounded cache: past its size it starts over,
    /// and forgetting means asking the store again).
    pub(in crate::engine) fn store_answered(&mut self, ids: impl IntoIterator<Item = String>) {
        if self.store_tried.len() >= STORE_TRIED_MAX {
            self.store_tried.clear();
        }
        self.store_tried.extend(ids);
    }

    /// A child left memory.
    pub(in crate::engine) fn forget(&mut self, id: &str) {
        self.store_tried.remove(id);
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 4] {
        [
            ("replaying", self.replaying.len()),
            ("spawns_replayed", self.spawns_replayed.len()),
            ("store_tried", self.store_tried.len()),
            ("replay_cards", self.cards_shown.len()),
        ]
    }
}

impl Engine {
    pub(in crate::engine) fn begin_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        self.reopen.replaying.insert(session.to_owned());
        out.push(Action::FetchChildren {
            parent_session_id: ClientSessionId::new(session.to_owned()),
        });
        // Children already known keep their recorded thread: the replay must not double it.
        for child in self.reg.iter_mut() {
            if child.top_session.as_str() == session && !child.thread.is_empty() {
                child.set_history(History::Known);
            }
            if child.top_session.as_str() == session {
                // The client rebuilds the parent's thread: it learns of the child again.
                if let Some(standard) = self.render.standard_mut() {
                    standard.reopened(&child.id);
                }
            }
        }
    }

    /// The agent finished replaying a parent. The cards of the children the proxy knows
    /// (from memory or its store) are in the agent's history only if it replayed them: show
    /// the missing ones now, so the reopened thread has every card, with what the flavour
    /// shows of each child's recorded work (the folded view's steps and end). A standard
    /// child's card is the proxy's own, so it is always owed; a legacy child's card is the
    /// agent's spawn tool call, owed only when the agent replayed no spawn at all (AgentPool
    /// replays nothing, fast-agent only words): an agent that replays spawns brings its cards
    /// back itself, possibly under new tool call ids, and a second card would double them.
    pub(in crate::engine) fn end_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        if !self.reopen.replaying.contains(session) {
            return;
        }
        // A replayed spawn held for its end goes on as a new spawn, during the replay.
        self.release_replayed_spawns(session, out);
        self.reopen.replaying.remove(session);
        let agent_replays_spawns = self.reopen.spawns_replayed.remove(session);
        let mut missing: Vec<&Child> = self
            .reg
            .in_top_session(session)
            .filter(|c| c.parent.as_str() == session)
            .filter(|c| c.agent_child().is_some() || !agent_replays_spawns)
            .filter(|c| !self.reopen.cards_shown.contains(&c.id))
            .collect();
        missing.sort_by(|a, b| a.spawn_id.cmp(&b.spawn_id));
        let missing: Vec<ChildId> = missing.into_iter().map(|c| c.id.clone()).collect();
        for cid in missing {
            let Some(c) = self.reg.get(&cid) else {
                continue;
            };
            if c.agent_child().is_none() {
                // A flavour that shows a legacy child's work opens its card with it.
                let work = self.render.unreplayed(c);
                if !work.is_empty() {
                    self.show_replayed(&cid, work, out);
                    continue;
                }
            }
            let card = self.render.synthesized_card(c);
            out.push(Action::ToClient(write::session_update(session, &card)));
            let work = self.replayed_work(&cid, true);
            self.show_replayed(&cid, work, out);
        }
        let mut done = Vec::new();
        for child in self.reg.iter_mut() {
            if child.top_session.as_str() == session {
                child.set_history(History::Live);
                done.push(child.id.clone());
            }
        }
        // A fixed order (the map's is random per process): the same children leave memory.
        done.sort();
        for id in done {
            self.reopen.cards_shown.remove(&id);
            // Children restored for the replay leave memory again in their turn.
            self.retire(&id);
        }
    }

    /// A replay of the parent shows the card of `cid` again: what the flavour shows of the
    /// child's recorded work with it (the folded view's steps; with `closes`, the card's end),
    /// for a child whose thread the replay does not bring again and whose card is in the
    /// reopened session's own thread.
    pub(in crate::engine) fn replayed_work(&mut self, cid: &ChildId, closes: bool) -> Vec<Value> {
        match self.reg.get(cid) {
            Some(c)
                if c.history_known()
                    && c.parent == c.top_session
                    && self.reopen.replaying(c.top_session.as_str()) =>
            {
                self.render.replayed(c, closes)
            }
            _ => Vec::new(),
        }
    }

    /// The agent's replay of the parent shows the spawn card of `cid` (a legacy wire): the
    /// first time in this replay, what the flavour shows of the child's recorded work with it.
    pub(in crate::engine) fn replayed_spawn(&mut self, cid: &ChildId) -> Vec<Value> {
        let first = self.reg.get(cid).is_some_and(|c| {
            c.history_known()
                && c.agent_child().is_none()
                && self.reopen.replaying(c.top_session.as_str())
        }) && self.reopen.show_card(cid);
        if first {
            self.replayed_work(cid, false)
        } else {
            Vec::new()
        }
    }

    /// Updates that show a child's recorded work, into its card's thread.
    pub(in crate::engine) fn show_replayed(
        &mut self,
        cid: &ChildId,
        work: Vec<Value>,
        out: &mut Vec<Action>,
    ) {
        let Some(parent) = self.reg.get(cid).map(|c| c.parent.clone()) else {
            return;
        };
        for update in work {
            self.emit(parent.as_str(), update, out);
        }
    }
}
