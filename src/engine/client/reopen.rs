//! Reopened sessions: a parent's `session/load` replay and the children the store kept for it.

use hashbrown::HashSet;
use serde_json::Value;

use crate::engine::{Action, Engine};
use crate::subagents::ids::ChildId;
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
    /// Child ids the store was already asked about (a miss there is final).
    store_tried: HashSet<String>,
}

impl Reopen {
    /// Whether the parent `top_session` is being replayed to the client.
    pub(in crate::engine) fn replaying(&self, top_session: &str) -> bool {
        self.replaying.contains(top_session)
    }

    /// The synthesized card of `cid` is shown again in this replay: whether it was not yet.
    pub(in crate::engine) fn show_card(&mut self, cid: &ChildId) -> bool {
        self.cards_shown.insert(cid.clone())
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

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 3] {
        [
            ("replaying", self.replaying.len()),
            ("store_tried", self.store_tried.len()),
            ("replay_cards", self.cards_shown.len()),
        ]
    }
}

impl Engine {
    pub(in crate::engine) fn begin_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        self.reopen.replaying.insert(session.to_owned());
        out.push(Action::FetchChildren {
            parent_session_id: session.to_owned(),
        });
        // Children already known keep their recorded thread: the replay must not double it.
        for child in self.reg.iter_mut() {
            if child.top_session == session && !child.thread.is_empty() {
                child.history = History::Known;
            }
            if child.top_session == session {
                // The client rebuilds the parent's thread: it learns of the child again.
                if let Some(standard) = self.render.standard_mut() {
                    standard.reopened(&child.id);
                }
            }
        }
    }

    /// The agent finished replaying a parent. Cards the proxy synthesized for standard
    /// children are not in the agent's history unless it replayed the announcements: show
    /// the missing ones now, so the reopened thread has every card.
    pub(in crate::engine) fn end_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        if !self.reopen.replaying.remove(session) {
            return;
        }
        let mut missing: Vec<&Child> = self
            .reg
            .in_top_session(session)
            .filter(|c| c.parent == session && c.agent_child.is_some())
            .filter(|c| !self.reopen.cards_shown.contains(&c.id))
            .collect();
        missing.sort_by(|a, b| a.spawn_id.cmp(&b.spawn_id));
        let cards: Vec<Value> = missing
            .into_iter()
            .map(|c| self.render.synthesized_card(c))
            .collect();
        for card in cards {
            out.push(Action::ToClient(write::session_update(session, &card)));
        }
        let mut done = Vec::new();
        for child in self.reg.iter_mut() {
            if child.top_session == session {
                child.history = History::Live;
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
}
