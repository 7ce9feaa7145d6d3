//! Preset signals that arrive outside the spawn card: the later frame that ends a background
//! child (Qwen's `_meta.backgroundTask` naming the spawn, Copilot's `read_agent` result naming
//! the agent's own child id), the agent's own turn on the parent that a preset takes as a
//! background child's end when nothing names it (`end_on_agent_turn`, Kilo), and the task a standard announcement carries when
//! no `session_message` brings it (Codex), or the preset's note that none does (Codex's
//! multi-agent V2).

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::{str_field, Action, Engine, NoteLevel};
use crate::subagents::ids::ChildId;
use crate::subagents::model::ChildState;
use crate::subagents::preset::detect::{EndNames, EndStatus};
use crate::subagents::render;

/// Children announced with no task, until their thread opens with the preset's note.
const MAX_UNTOLD: usize = 4096;

/// The preset's note per announced child whose task no frame carries (`announce.no_prompt`).
#[derive(Debug, Default)]
pub(in crate::engine) struct UntoldTasks(HashMap<ChildId, String>);

impl UntoldTasks {
    pub(in crate::engine) fn insert(&mut self, child: &ChildId, note: String) {
        if self.0.len() >= MAX_UNTOLD {
            self.0.clear();
        }
        self.0.insert(child.clone(), note);
    }

    pub(in crate::engine) fn forget(&mut self, child: &str) {
        if !self.0.is_empty() {
            self.0.remove(child);
        }
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 1] {
        [("untold_tasks", self.0.len())]
    }
}

impl Engine {
    /// A frame on `session` that may end a background child: if it names an open child of
    /// the preset that says so, the frame goes into that child's thread (instead of the
    /// parent's: Qwen repeats the notice in the follow-up turn it starts there) and ends the
    /// child. Returns whether it took the frame; otherwise the caller routes the frame on.
    /// An update of one of the parent's own tool calls (Copilot's `read_agent`, waiting on
    /// the child) ends the child but stays the parent's: the caller routes it on.
    pub(in crate::engine) fn end_signal(
        &mut self,
        session: &str,
        update: &Value,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some(end) = self.detector.end_signal(update) else {
            return false;
        };
        let found = match &end.names {
            EndNames::Spawn(spawn_id) => self.reg.by_spawn(session, spawn_id).cloned(),
            EndNames::AgentChild(id) => self.bindings.child(session, id).map(|(c, _)| c.clone()),
        };
        let Some(cid) = found else {
            return false;
        };
        let Some(child) = self.reg.get(&cid) else {
            return false;
        };
        let ends_it = child.preset.is_none_or(|p| p == end.preset)
            && child.is_background()
            && !child.state().is_final()
            && !child.history_known();
        if !ends_it {
            return false;
        }
        let state = match end.status {
            EndStatus::Completed => ChildState::Completed,
            EndStatus::Failed(_) => ChildState::Failed,
            EndStatus::Running => return false,
        };
        let parents_own = str_field(update, "sessionUpdate") == Some("tool_call_update")
            && str_field(update, "toolCallId").is_some_and(|t| {
                self.reg.by_spawn(session, t).is_none() && self.reg.tool_owner(session, t).is_none()
            });
        if !parents_own {
            self.record_in(&cid, update, out);
        }
        self.end_background(&cid, state, out);
        !parents_own
    }

    /// A background child's end: its card finishes (its title the task's again), or, when
    /// it completed at the launch, its state is settled.
    fn end_background(&mut self, cid: &ChildId, state: ChildState, out: &mut Vec<Action>) {
        if self.reg.get(cid).is_some_and(|c| c.card_is_final()) {
            // The card completed at the launch (a preset that does not keep it open): the
            // child's state is all that is left to settle.
            if let Some(c) = self.reg.get_mut(cid) {
                c.settle(state);
            }
            self.persist_state(cid, out);
            self.retire(cid);
            return;
        }
        self.finish_child(cid, state, out);
    }

    /// An update of `kind` on `session` (the caller checked that a preset ends children by
    /// the agent's own turn): if it is work no prompt of the client's asked for, the agent
    /// started a turn of its own there. Agents that tell a background child's end only to
    /// their model (Kilo injects the notice into the parent as a user message, seen only on
    /// `session/load`) then answer it: with `end_on_agent_turn`, that turn ends the one
    /// background child still open on the session, as completed (inferred, noted). With
    /// more than one open nothing says which ended, and they stay open.
    pub(in crate::engine) fn agent_turn(
        &mut self,
        session: &str,
        kind: &str,
        out: &mut Vec<Action>,
    ) {
        const TURN_KINDS: [&str; 4] = [
            "agent_message_chunk",
            "agent_thought_chunk",
            "user_message_chunk",
            "tool_call",
        ];
        if !TURN_KINDS.contains(&kind)
            || self.client_requests.has("session/prompt", session)
            || self.client_requests.has("session/load", session)
        {
            return;
        }
        let detector = &self.detector;
        let open: Vec<ChildId> = self
            .reg
            .iter()
            .filter(|c| {
                c.agent_session.as_str() == session
                    && c.is_background()
                    && !c.state().is_final()
                    && !c.history_known()
                    && c.preset.is_some_and(|p| detector.ends_on_agent_turn(p))
            })
            .map(|c| c.id.clone())
            .take(2)
            .collect();
        let [cid] = open.as_slice() else {
            return;
        };
        let cid = cid.clone();
        self.note(
            out,
            NoteLevel::Info,
            format!(
                "subagent {cid}: the agent started a turn of its own on {session} (no prompt pending): taken as the end of this background child, the only one open (inferred, `end_on_agent_turn`)"
            ),
        );
        self.end_background(&cid, ChildState::Completed, out);
    }

    /// The task a standard announcement carried, as the child thread's first message, once
    /// the child's work starts (or it ends) and no `session_message` brought the task.
    pub(in crate::engine) fn record_announced_prompt(
        &mut self,
        cid: &ChildId,
        out: &mut Vec<Action>,
    ) {
        let note = self.untold_tasks.0.remove(cid.as_str());
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.announced_prompt.is_none() {
            // Nothing carries the task: the thread opens with why, before the child's work.
            if let Some(note) = note {
                if child.prompt_awaited() && !child.history_known() && child.thread.is_empty() {
                    // A paragraph of its own: the child's first words join the same message.
                    self.record_in(cid, &render::agent_text(&format!("{note}\n\n")), out);
                }
            }
            return;
        }
        let prompt = child.announced_prompt.take();
        if !child.prompt_awaited() || child.history_known() {
            return;
        }
        if let Some(prompt) = prompt {
            child.mark_prompt_recorded();
            self.record_in(cid, &render::user_text(&prompt), out);
        }
    }
}
