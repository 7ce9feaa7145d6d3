//! A child's work the agent folds into text (`subagents::preset::transcript::fold`): in the spawn card itself
//! (DeepSeek Harness) or in a call beside it (AgentPool, `sibling`). What each version changed
//! goes into the child thread like the child's own events, with the card's live progress.

use serde_json::{json, Value};

use crate::engine::{str_field, Action, Engine};
use crate::subagents::ids::ChildId;
use crate::subagents::preset::spec::TranscriptOn;
use crate::subagents::preset::transcript::fold::Fold;
use crate::subagents::render::Step;

impl Engine {
    /// Updates read out of a folded transcript, recorded in the child's thread.
    pub(in crate::engine) fn record_folded(
        &mut self,
        cid: &ChildId,
        updates: Vec<Value>,
        out: &mut Vec<Action>,
    ) {
        let replaying = self
            .reg
            .get(cid)
            .is_some_and(|c| self.reopen.replaying(c.top_session.as_str()));
        let nested = self.reg.is_nested(cid);
        for update in updates {
            let Some(child) = self.reg.get(cid) else {
                return;
            };
            if child.history_known() || child.passes_through() {
                return;
            }
            let kind = str_field(&update, "sessionUpdate").unwrap_or("").to_owned();
            let new_tool_call = kind == "tool_call"
                && str_field(&update, "toolCallId").is_some_and(|t| !child.entries.knows_tool(t));
            let before = child.entries.count();
            self.record_in(cid, &update, out);
            let Some(child) = self.reg.get_mut(cid) else {
                return;
            };
            let card = if child.card_is_final() {
                // Work after the card settled (a box that outlived its spawn): the range grows.
                crate::engine::child::events::settled_card_grown(&self.render, child, before)
            } else if replaying {
                None
            } else {
                let step = Step {
                    kind: &kind,
                    new_tool_call,
                    tool_status: kind == "tool_call_update" && update.get("status").is_some(),
                    new_entry: before != child.entries.count(),
                    title: str_field(&update, "title"),
                    nested,
                };
                crate::engine::child::events::stepped_card(&mut self.render, child, &step)
            };
            // On an open card: live progress, paced (AgentPool re-sends its box on every step).
            let (parent, settled) = (child.parent.clone(), child.card_is_final());
            self.card_changed(cid, parent, settled, card, out);
        }
    }

    /// A spawn card that carries the child's folded transcript (`transcript.on = "spawn"`):
    /// what changed goes into the child thread, and the card keeps only the child's answer
    /// (or, failed without one, how the child ended). `None` when the card carries none;
    /// else the answer it gave, if any.
    pub(in crate::engine) fn spawn_transcript(
        &mut self,
        cid: &ChildId,
        update: &mut Value,
        status: Option<&str>,
        out: &mut Vec<Action>,
    ) -> Option<Option<String>> {
        let pid = self
            .reg
            .get(cid)
            .filter(|c| !c.passes_through())
            .and_then(|c| c.preset)?;
        let detector = self.detector.clone();
        if detector.transcript_on(pid) != Some(TranscriptOn::Spawn) {
            return None;
        }
        let answer = detector.result_of(pid, update);
        let Some((grammar, text)) = detector.transcript_text_of(pid, update) else {
            return Some(answer);
        };
        if !grammar.is_transcript(&text) {
            // Not the transcript (a reopened parent's settled card holds only the answer).
            return None;
        }
        let Some(child) = self.reg.get_mut(cid) else {
            return Some(answer);
        };
        let base = format!("{}-fold", child.spawn_id);
        let fold = child.fold.get_or_insert_with(|| Box::new(Fold::new(&base)));
        let updates = fold.replaced(grammar, &text, false);
        let end = fold.end_line();
        drop(text);
        let shown = match &answer {
            Some(answer) => Some(answer.clone()),
            None if status == Some("failed") => end,
            None => None,
        };
        match shown {
            Some(text) => {
                update["content"] =
                    json!([{"type": "content", "content": {"type": "text", "text": text}}]);
            }
            None => {
                if let Some(obj) = update.as_object_mut() {
                    obj.remove("content");
                }
            }
        }
        self.record_folded(cid, updates, out);
        Some(answer)
    }
}
