//! Reopened sessions: a parent's `session/load` replay and the children the store kept for it.

use serde_json::Value;

use crate::engine::{Action, Engine};
use crate::subagents::model::{Child, Replay};
use crate::wire::write;

impl Engine {
    pub(in crate::engine) fn begin_replay(&mut self, session: &str, out: &mut Vec<Action>) {
        self.replaying.insert(session.to_owned());
        out.push(Action::FetchChildren {
            parent_session_id: session.to_owned(),
        });
        // Children already known keep their recorded thread: the replay must not double it.
        for child in self.reg.children.values_mut() {
            if child.top_session == session && !child.thread.is_empty() {
                child.replay = Replay::Known;
            }
            if child.top_session == session {
                // The client rebuilds the parent's thread: it learns of the child again.
                self.render.reopened(&child.id);
            }
        }
    }

    /// The agent finished replaying a parent. Cards the proxy synthesized for standard
    /// children are not in the agent's history unless it replayed the announcements: show
    /// the missing ones now, so the reopened thread has every card.
    pub(in crate::engine) fn end_replay(&mut self, session: &str, out: &mut Vec<Action>) {
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
