//! A child's lifecycle: running, finished (its card final), continued, cancelled at the end
//! of the parent's turn, within the limits, and let go of once finished.

use serde_json::Value;

use crate::engine::{Action, Engine};
use crate::subagents::ids::ChildId;
use crate::subagents::model::ChildState;

impl Engine {
    /// A finished child got new work (a continued subagent): open a new turn.
    pub(in crate::engine) fn resume_child(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        self.settle_progress(cid, out);
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if !child.reopen_card() {
            return;
        }
        let card = self.render.card_update(child, Some("in_progress"), None);
        let parent = child.parent.clone();
        self.persist_state(cid, out);
        self.sync_child(cid, out);
        if let Some(card) = card {
            self.emit(parent.as_str(), card, out);
        }
    }

    /// Bring the client's view of a child up to date, where the flavour keeps one apart from
    /// the card (standard subagents). Once it knows of the child, the client follows its
    /// session if the flavour says so.
    pub(in crate::engine) fn sync_child(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        self.show_child(cid, false, out);
    }

    /// Only what the client must know of a child before a frame of it: the child itself.
    pub(in crate::engine) fn announce_child(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        self.show_child(cid, true, out);
    }

    fn show_child(&mut self, cid: &ChildId, announce_only: bool, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        // Only the standard output shows a child apart from its card; once told of the
        // child, the client follows its session.
        let Some(standard) = self.render.standard_mut() else {
            return;
        };
        let updates = if announce_only {
            standard.announce(child)
        } else {
            standard.sync(child)
        };
        if updates.is_empty() {
            return;
        }
        child.mark_loaded();
        let parent = child.parent.clone();
        for update in updates {
            self.emit(parent.as_str(), update, out);
        }
    }

    /// The child's turn ended: final status and index range on the card.
    pub(in crate::engine) fn finish_child(
        &mut self,
        cid: &ChildId,
        state: ChildState,
        out: &mut Vec<Action>,
    ) {
        if self.reg.get(cid).is_none_or(|c| c.card_is_final()) {
            return;
        }
        // A child that ended before any work of its own still shows its task.
        self.record_announced_prompt(cid, out);
        // Its final update supersedes any progress the card held.
        self.end_progress(cid);
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let state = if child.cancel_asked() && state != ChildState::Completed {
            ChildState::Cancelled
        } else {
            state
        };
        let title = child.finish_card(state).then(|| child.title.clone());
        let card = self
            .render
            .card_update(child, Some(state.card_status()), title.as_deref());
        let parent = child.parent.clone();
        self.persist_state(cid, out);
        self.sync_child(cid, out);
        if let Some(card) = card {
            self.emit(parent.as_str(), card, out);
        }
        self.retire(cid);
    }

    /// The parent's prompt turn is about to end (its answer `frame` goes out next): what the
    /// flavour shows of the children still open, before the answer.
    pub(in crate::engine) fn turn_ending(
        &mut self,
        session: &str,
        frame: &[u8],
        out: &mut Vec<Action>,
    ) {
        let open = self.reg.ids_in_spawn_order(session, |c| !c.card_is_final());
        if open.is_empty() {
            return;
        }
        let stop_reason = serde_json::from_slice::<Value>(crate::wire::line_body(frame))
            .ok()
            .and_then(|v| v.pointer("/result/stopReason")?.as_str().map(str::to_owned));
        for cid in open {
            let Some(child) = self.reg.get(&cid) else {
                continue;
            };
            let parent = child.parent.clone();
            for update in self.render.turn_ending(child, stop_reason.as_deref()) {
                self.emit(parent.as_str(), update, out);
            }
        }
    }

    /// The parent's prompt turn ended: children whose cancel was asked for are cancelled now.
    pub(in crate::engine) fn turn_ended(&mut self, session: &str, out: &mut Vec<Action>) {
        let cancelled = self
            .reg
            .ids_in_spawn_order(session, |c| c.cancel_asked() && !c.card_is_final());
        for cid in cancelled {
            self.finish_child(&cid, ChildState::Cancelled, out);
        }
        // What the flavour shows of children still open when the turn is over.
        let open = self.reg.ids_in_spawn_order(session, |c| !c.card_is_final());
        for cid in open {
            let Some(child) = self.reg.get(&cid) else {
                continue;
            };
            let Some(standard) = self.render.standard_mut() else {
                return;
            };
            let parent = child.parent.clone();
            for update in standard.turn_ended(child) {
                self.emit(parent.as_str(), update, out);
            }
        }
    }

    /// A child finished: keep only the most recent finished children in memory. The others
    /// are in the store, which serves their loads and restores them for parent replays. A
    /// child already waiting in the queue (one restored from the store, or finished earlier
    /// on this connection) keeps its place.
    pub(in crate::engine) fn retire(&mut self, cid: &ChildId) {
        if !self.reg.get(cid).is_some_and(|c| c.state().is_final())
            || self.finished.iter().any(|f| f == cid)
        {
            return;
        }
        self.finished.push_back(cid.clone());
        while self.finished.len() > self.cfg.limits.max_finished_in_memory {
            let Some(old) = self.finished.pop_front() else {
                break;
            };
            let busy = self.agent_replays.pending(&old)
                || self.child_records.awaited(old.as_str())
                || self.bindings.tie_pending(old.as_str())
                || self.reg.has_unfinished_child_of(&old);
            if busy || !self.reg.get(&old).is_some_and(|c| c.state().is_final()) {
                continue;
            }
            self.reg.remove(&old);
            self.render.forget(&old);
            self.end_progress(&old);
            self.agent_replays.forget(&old);
            self.siblings.forget(&old);
            self.bindings.forget(old.as_str());
            self.child_records.forget(old.as_str());
            self.untold_tasks.forget(old.as_str());
            self.reopen.forget(old.as_str());
        }
    }

    /// Whether a new child under `parent` stays within the limits; says why not, once per
    /// session and limit.
    pub(in crate::engine) fn spawn_allowed(
        &mut self,
        parent: &str,
        top: &str,
        spawn_id: &str,
        out: &mut Vec<Action>,
    ) -> bool {
        let limits = self.cfg.limits;
        let depth = self.reg.depth(parent) + 1;
        let siblings = self.reg.in_top_session(top).count();
        let problem = if depth > limits.max_depth {
            Some(("max_depth", limits.max_depth))
        } else if siblings >= limits.max_subagents_per_session {
            Some((
                "max_subagents_per_session",
                limits.max_subagents_per_session,
            ))
        } else {
            None
        };
        let Some((limit, value)) = problem else {
            return true;
        };
        if top == parent {
            self.passthrough_spawns.insert(top, spawn_id);
        }
        self.report_once(
            &format!("{limit}:{top}"),
            out,
            format!("session {top}: {limit} ({value}) reached; spawn {spawn_id} and its events pass through unchanged"),
        );
        false
    }
}
