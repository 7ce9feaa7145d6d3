//! A spawn tool call of a legacy wire (Claude's `Task`, Qwen's and OpenCode's `task`): the
//! child it creates, and its card in the parent's thread.

use serde_json::{json, Value};

use super::{str_field, Action, Engine};
use crate::subagents::ids::ChildId;
use crate::subagents::model::{Child, ChildState, Prompt, Run, SpawnSite};
use crate::subagents::render;

impl Engine {
    /// A spawn tool call: create (or find, after a restart or in a replay) its child.
    pub(super) fn new_spawn(
        &mut self,
        site: SpawnSite,
        tool_name: String,
        update: Value,
        out: &mut Vec<Action>,
    ) {
        let id = ChildId::derive(&site.parent, &site.spawn_id);
        match self.reg.get_mut(&id) {
            Some(existing) => existing.tool_name = tool_name,
            None => {
                let mut child = Child::new(id.clone(), site, tool_name);
                child.state = ChildState::Running;
                self.reg.insert(child);
                self.persist_child(&id, out);
            }
        }
        self.spawn_event(&id, "tool_call", Some(update), out);
    }

    /// A frame of the spawn tool call itself: keep the card current on the parent.
    pub(super) fn spawn_event(
        &mut self,
        cid: &ChildId,
        kind: &str,
        update: Option<Value>,
        out: &mut Vec<Action>,
    ) {
        let Some(mut update) = update else { return };
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let mut to_record: Vec<Value> = Vec::new();
        if let Some(t) = str_field(&update, "title").filter(|t| !t.is_empty()) {
            // Claude first titles the card with the tool's name, then with the task.
            if child.title.is_empty() || t != child.tool_name {
                child.title = t.to_owned();
            }
        }
        if child.title.is_empty() || child.title == child.tool_name {
            if let Some(d) = self.detector.description(&update) {
                child.title = d.to_owned();
            }
        }
        if child.prompt == Prompt::Awaited {
            if let Some(prompt) = self.detector.prompt(&update) {
                child.prompt = Prompt::Recorded;
                if !child.replay_known() {
                    to_record.push(render::user_text(prompt));
                }
            }
        }
        if self.detector.is_background(&update) {
            child.run = Run::Background;
        }
        let status = str_field(&update, "status").map(str::to_owned);
        let mut finished = false;
        match status.as_deref() {
            Some("completed" | "failed") if !child.card_is_final() => {
                let completed = status.as_deref() == Some("completed");
                if completed
                    && !child.is_background()
                    && !child.replay_known()
                    && !child.entries.last_is_assistant()
                {
                    // Agents that do not stream the child's prose still report its answer:
                    // it closes the child thread.
                    if let Some(text) = self.detector.result_text(&update) {
                        to_record.push(render::agent_text(&text));
                    }
                }
                finished = true;
            }
            Some("pending" | "in_progress") if child.state == ChildState::Announced => {
                child.state = ChildState::Running;
            }
            _ => {}
        }
        for u in &to_record {
            self.record_in(cid, u, out);
        }
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if finished {
            let state = if child.is_background() {
                // The agent completed the card at launch; the child runs on.
                ChildState::Running
            } else if child.cancel_asked() {
                ChildState::Cancelled
            } else if status.as_deref() == Some("completed") {
                ChildState::Completed
            } else {
                ChildState::Failed
            };
            if child.finish_card(state) {
                update["title"] = json!(child.title);
            }
        }
        self.render
            .spawn_update(child, &mut update, kind == "tool_call");
        let parent = child.parent.clone();
        if finished || !to_record.is_empty() {
            self.persist_state(cid, out);
        }
        self.emit(&parent, update, out);
        if finished {
            self.retire(cid);
        }
    }
}
