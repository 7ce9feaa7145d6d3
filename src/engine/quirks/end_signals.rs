//! Preset signals that arrive outside the spawn card: the later frame that ends a background
//! child (Qwen's `_meta.backgroundTask`), and the task a standard announcement carries when
//! no `session_message` brings it (Codex).

use serde_json::Value;

use crate::engine::{Action, Engine};
use crate::subagents::ids::ChildId;
use crate::subagents::model::{ChildState, Prompt};
use crate::subagents::preset::detect::EndStatus;
use crate::subagents::render;

impl Engine {
    /// A frame on `session` that may end a background child: if it names an open child of
    /// the preset that says so, the frame goes into that child's thread (instead of the
    /// parent's: Qwen repeats the notice in the follow-up turn it starts there) and ends the
    /// child. Returns whether it did; otherwise the caller routes the frame on.
    pub(in crate::engine) fn end_signal(
        &mut self,
        session: &str,
        update: &Value,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some(end) = self.detector.end_signal(update) else {
            return false;
        };
        let Some(cid) = self.reg.by_spawn(session, &end.spawn_id).cloned() else {
            return false;
        };
        let Some(child) = self.reg.get(&cid) else {
            return false;
        };
        let ends_it = child.preset.is_none_or(|p| p == end.preset)
            && child.is_background()
            && !child.state.is_final()
            && !child.history_known();
        if !ends_it {
            return false;
        }
        let state = match end.status {
            EndStatus::Completed => ChildState::Completed,
            EndStatus::Failed(_) => ChildState::Failed,
            EndStatus::Running => return false,
        };
        self.record_in(&cid, update, out);
        if self.reg.get(&cid).is_some_and(|c| c.card_is_final()) {
            // The card completed at the launch (a preset that does not keep it open): the
            // child's state is all that is left to settle.
            if let Some(c) = self.reg.get_mut(&cid) {
                c.state = state;
            }
            self.persist_state(&cid, out);
            self.retire(&cid);
            return true;
        }
        self.finish_child(&cid, state, out);
        true
    }

    /// The task a standard announcement carried, as the child thread's first message, once
    /// the child's work starts (or it ends) and no `session_message` brought the task.
    pub(in crate::engine) fn record_announced_prompt(
        &mut self,
        cid: &ChildId,
        out: &mut Vec<Action>,
    ) {
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.announced_prompt.is_none() {
            return;
        }
        let prompt = child.announced_prompt.take();
        if child.prompt != Prompt::Awaited || child.history_known() {
            return;
        }
        if let Some(prompt) = prompt {
            child.prompt = Prompt::Recorded;
            self.record_in(cid, &render::user_text(&prompt), out);
        }
    }
}
