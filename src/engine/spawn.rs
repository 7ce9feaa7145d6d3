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
        let claim = self.detector.spawn(&update);
        match self.reg.get_mut(&id) {
            Some(existing) => {
                existing.tool_name = tool_name;
                existing.preset = existing.preset.or(claim.as_ref().map(|s| s.preset));
            }
            None => {
                let mut child = Child::new(id.clone(), site, tool_name);
                child.state = ChildState::Running;
                child.preset = claim.as_ref().map(|s| s.preset);
                self.reg.insert(child);
                self.persist_child(&id, out);
            }
        }
        if let Some(key) = claim.and_then(|s| s.sibling_key) {
            self.siblings.set_key(&id, key);
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
        if child.preset.is_none() {
            // A child restored from the store: its replayed spawn says which preset it is.
            if let Some(claim) = self.detector.spawn(&update) {
                child.preset = Some(claim.preset);
                child.tool_name = claim.tool_name;
            }
        }
        let preset = child.preset;
        let mut prompt_entry: Option<Value> = None;
        // An agent's own title can be the same for every tool (AgentPool's `Calling task`):
        // then the preset's reading wins, and the card shows it. One that names the task
        // already (`Agent: Survey text files`) stays.
        let preset_title = preset
            .and_then(|p| self.detector.title_of(p, &update))
            .filter(|t| !t.is_empty())
            .filter(|t| !str_field(&update, "title").is_some_and(|own| own.contains(t.as_str())))
            // A replay of a child the store kept: the title it had (dsh replays no label).
            .map(|t| {
                if child.replay_known() && !child.title.is_empty() {
                    child.title.clone()
                } else {
                    t
                }
            });
        if let Some(t) = preset_title {
            if update.get("title").is_some() {
                update["title"] = json!(t);
            }
            child.title = t;
        } else if let Some(t) = str_field(&update, "title").filter(|t| !t.is_empty()) {
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
                    prompt_entry = Some(render::user_text(prompt));
                }
            }
        }
        if self.detector.is_background(&update) {
            child.run = Run::Background;
        }
        let status = str_field(&update, "status").map(str::to_owned);
        let finished =
            matches!(status.as_deref(), Some("completed" | "failed")) && !child.card_is_final();
        if !finished
            && matches!(status.as_deref(), Some("pending" | "in_progress"))
            && child.state == ChildState::Announced
        {
            child.state = ChildState::Running;
        }
        if let Some(u) = &prompt_entry {
            self.record_in(cid, u, out);
        }
        // The child's work folded into the card (dsh): into the child thread; the card keeps
        // only the child's answer.
        let folded = self.spawn_transcript(cid, &mut update, status.as_deref(), out);
        // The agent replays this child itself (OpenCode): its real work is fetched, and the
        // answer is only what the thread gets if that fails. A replayed completion (the parent
        // reopened) fetches too when the thread lacks the work.
        let fetch = matches!(status.as_deref(), Some("completed" | "failed"))
            .then(|| self.replay_to_fetch(cid, &update))
            .flatten();
        let mut answer: Option<Value> = None;
        if status.as_deref() == Some("completed") && (finished || fetch.is_some()) {
            let Some(child) = self.reg.get(cid) else {
                return;
            };
            if !child.is_background() && (fetch.is_some() || !child.replay_known()) {
                let last_folded = child.fold.as_ref().and_then(|f| f.last_text());
                // Agents that do not stream the child's prose still report its answer: it
                // closes the child thread. A folded transcript's last prose is not always
                // the answer (dsh settles with a block of its own).
                let after_prose = child.entries.last_is_assistant();
                let text = match &folded {
                    // After the child's own last words it would run on in the same message.
                    Some(answer) => answer
                        .clone()
                        .filter(|a| Some(a.as_str()) != last_folded)
                        .map(|a| if after_prose { format!("\n\n{a}") } else { a }),
                    None if !child.entries.last_is_assistant() => {
                        self.detector.result_text(&update)
                    }
                    None => None,
                };
                answer = text.map(|t| render::agent_text(&t));
            }
        }
        match (&fetch, answer) {
            (Some(_), answer) => self.agent_replays.fallback(cid, answer),
            (None, Some(u)) => self.record_in(cid, &u, out),
            (None, None) => {}
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
        // A card update that only carried the folded transcript has nothing left to show.
        let empty = folded.is_some()
            && !finished
            && kind != "tool_call"
            && ["status", "title", "content"]
                .iter()
                .all(|k| update.get(*k).is_none());
        self.render
            .spawn_update(child, &mut update, kind == "tool_call");
        let parent = child.parent.clone();
        if finished {
            // The title it ended with, for a reopen whose replay lacks it.
            self.persist_child(cid, out);
        }
        if finished || prompt_entry.is_some() {
            self.persist_state(cid, out);
        }
        if !empty {
            self.emit(&parent, update, out);
        }
        if let Some(agent_child) = fetch {
            self.fetch_replay(cid, &agent_child, out);
        }
        if finished {
            self.retire(cid);
        }
    }
}
