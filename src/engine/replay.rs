//! Reopened sessions: a parent's `session/load` replay and the children the store kept for it.

use bytes::Bytes;
use serde_json::Value;

use super::{child_sessions, session_of, Action, Engine, Millis};
use crate::subagents::ids::ChildId;
use crate::subagents::model::{Child, Replay};
use crate::subagents::persist::StoredChild;
use crate::wire::envelope::{self, Parsed};
use crate::wire::write;

/// Child ids remembered as already looked up in the store, at most.
const STORE_TRIED_MAX: usize = 4096;

impl Engine {
    /// Children the store kept for a parent session (after a restart).
    pub fn restore(&mut self, children: Vec<StoredChild>) {
        for stored in children {
            let id = stored.child_id.clone();
            child_sessions::restore_child(&mut self.reg, stored);
            let replaying = &self.replaying;
            if let Some(child) = self.reg.get_mut(&id) {
                child.replay = if replaying.contains(&child.top_session) && !child.thread.is_empty()
                {
                    Replay::Known
                } else {
                    Replay::Live
                };
            }
        }
    }

    /// The store's answer to [`Action::FetchChild`]: serve or refuse the held request.
    pub fn child_fetched(
        &mut self,
        child: Option<StoredChild>,
        request: Bytes,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        if self.store_tried.len() >= STORE_TRIED_MAX {
            // Only a cache of answers: forgetting it means asking the store again.
            self.store_tried.clear();
        }
        let restored = child.map(|stored| {
            let id = ChildId::known(stored.child_id.clone());
            self.store_tried.insert(stored.child_id.clone());
            child_sessions::restore_child(&mut self.reg, stored);
            id
        });
        if let Parsed::Message(env) = envelope::parse(&request) {
            if let Some(sid) = session_of(env.params) {
                self.store_tried.insert(sid);
            }
        }
        self.from_client(request, now, out);
        if let Some(id) = restored {
            // Served: a finished child leaves memory again in its turn, like any other.
            self.retire(&id);
        }
    }

    pub(super) fn begin_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        self.replaying.insert(session.to_owned());
        out.push(Action::FetchChildren {
            parent_session_id: session.to_owned(),
        });
        // Children already known keep their recorded thread: the replay must not double it.
        for child in self.reg.children.values_mut() {
            if child.top_session == session && !child.thread.is_empty() {
                child.replay = Replay::Known;
            }
        }
    }

    /// The agent finished replaying a parent. Cards the proxy synthesized for standard
    /// children are not in the agent's history unless it replayed the announcements: show
    /// the missing ones now, so the reopened thread has every card.
    pub(super) fn end_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        if !self.replaying.remove(session) {
            return;
        }
        let mut missing: Vec<&Child> = self
            .reg
            .children
            .values()
            .filter(|c| c.top_session == session && c.parent == session && c.agent_child.is_some())
            .filter(|c| !self.replay_cards.contains(&c.id))
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
        for child in self.reg.children.values_mut() {
            if child.top_session == session {
                child.replay = Replay::Live;
                done.push(child.id.clone());
            }
        }
        // A fixed order (the map's is random per process): the same children leave memory.
        done.sort();
        for id in done {
            self.replay_cards.remove(&id);
            // Children restored for the replay leave memory again in their turn.
            self.retire(&id);
        }
    }
}
