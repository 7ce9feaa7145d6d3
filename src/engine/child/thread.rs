//! A child's thread: updates recorded in order, sent live once the client loaded the child,
//! and persisted.

use std::sync::Arc;

use serde_json::Value;

use crate::engine::{str_field, Action, Engine, NoteLevel};
use crate::subagents::entries::key_field;
use crate::subagents::ids::ChildId;
use crate::subagents::persist::StoreOp;
use crate::wire::write;

impl Engine {
    /// Put an update into a session's thread: a child's is recorded (and sent live if the
    /// client loaded it), a top-level session's goes to the client.
    pub(in crate::engine) fn emit(&mut self, session: &str, update: Value, out: &mut Vec<Action>) {
        if let Some(cid) = self.reg.resolve(session).cloned() {
            self.record_in(&cid, &update, out);
        } else {
            if str_field(&update, "sessionUpdate") == Some("tool_call") {
                if let Some(t) = str_field(&update, "toolCallId") {
                    // A card in a top-level thread: its later updates find it there.
                    self.thread_tools.insert(t);
                }
            }
            out.push(Action::ToClient(write::session_update(session, &update)));
        }
    }

    pub(in crate::engine) fn record_in(
        &mut self,
        cid: &ChildId,
        update: &Value,
        out: &mut Vec<Action>,
    ) {
        let kind = str_field(update, "sessionUpdate").unwrap_or("").to_owned();
        let tool = ToolRef {
            id: str_field(update, "toolCallId"),
            title: str_field(update, "title"),
        };
        self.record_text_in(cid, &kind, tool, &update.to_string(), Some(update), out);
    }

    /// Append one update (its JSON text, and the parsed value when at hand) to a child's
    /// thread, persist it, and send it live if the client loaded the child.
    pub(in crate::engine) fn record_text_in(
        &mut self,
        cid: &ChildId,
        kind: &str,
        tool: ToolRef<'_>,
        text: &str,
        value: Option<&Value>,
        out: &mut Vec<Action>,
    ) {
        let max = self.cfg.limits.max_transcript_bytes;
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.passes_through() {
            return;
        }
        if child.bytes + text.len() > max {
            child.pass_through();
            let msg = format!(
                "subagent {cid}: transcript reached max_transcript_bytes ({max}); its further events pass through to the parent unchanged"
            );
            self.note(out, NoteLevel::Warn, msg);
            return;
        }
        let shown = if self.render.reads_child_events() {
            match value {
                Some(v) => self.render.recorded(child, v),
                None => serde_json::from_str::<Value>(text)
                    .map(|v| self.render.recorded(child, &v))
                    .unwrap_or_default(),
            }
        } else {
            Vec::new()
        };
        // What the flavour shows of the event in the parent's thread (the folded view's steps).
        let shown_in = (!shown.is_empty()).then(|| child.parent.clone());
        // What the entry rules read: the tool call id is at hand; a user message's or a
        // compaction's id is read from the update (rare kinds in a child's thread).
        let parsed;
        let key = match key_field(kind) {
            Some("toolCallId") | None => tool.id,
            Some(field) => {
                parsed = match value {
                    Some(v) => v.get(field).cloned(),
                    None => serde_json::from_str::<Value>(text)
                        .ok()
                        .and_then(|v| v.get(field).cloned()),
                };
                parsed.as_ref().and_then(Value::as_str)
            }
        };
        // One copy, shared by the thread in memory and the store.
        let text: Arc<str> = Arc::from(text);
        let index = child.thread.len();
        child.record_kind(kind, key, text.clone());
        if let (Some(id), Some(title)) = (tool.id, tool.title) {
            // What a permission request of the child is titled by.
            child.note_tool_title(id, title);
        }
        let replaying = self.reopen.replaying(child.top_session.as_str());
        if let (Some(keep), None, false) = (self.spill_over, self.render.standard(), replaying) {
            // The store is given every update (the action below): the oldest may leave memory,
            // read back before a load or a replay needs them. The standard output reads the
            // thread as it goes, so it keeps all of it; a parent's replay reads its children's
            // threads, read back when it began.
            child.thread.spill(keep);
        }
        if child.is_loaded() {
            out.push(Action::ToClient(
                match self
                    .render
                    .standard()
                    .and_then(|s| s.child_line(child, index, &text))
                {
                    Some(line) => write::session_update(cid.as_str(), &line),
                    None => write::session_update_raw(cid.as_str(), &text),
                },
            ));
        }
        out.push(Action::Store(StoreOp::AppendUpdate {
            child_id: cid.clone(),
            update: text,
        }));
        if let Some(parent) = shown_in {
            let session = self.visible_session(parent.as_str());
            for update in shown {
                self.emit(&session, update, out);
            }
        }
    }

    pub(in crate::engine) fn persist_child(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        let Some(c) = self.reg.get(cid) else { return };
        out.push(Action::Store(StoreOp::UpsertChild {
            child_id: c.id.clone(),
            parent_session_id: c.parent.clone(),
            spawn_tool_call_id: c.spawn_id.clone(),
            agent: self.agent_name.clone(),
            cwd: c.cwd.clone(),
            title: (!c.title.is_empty()).then(|| c.title.clone()),
            tool_name: Some(c.tool_name.clone()),
            state: c.state(),
        }));
    }

    pub(in crate::engine) fn persist_state(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        let Some(c) = self.reg.get(cid) else { return };
        out.push(Action::Store(StoreOp::SetState {
            child_id: c.id.clone(),
            state: c.state(),
        }));
        out.push(Action::Store(StoreOp::SetIndices {
            child_id: c.id.clone(),
            entry_count: c.entries.count(),
            turns: c.turns.clone(),
        }));
    }

    /// The session the client knows for a child: the child once loaded, else the nearest
    /// loaded ancestor, else the top-level session.
    pub(in crate::engine) fn visible_session(&self, session: &str) -> String {
        let mut cur = session.to_owned();
        for _ in 0..64 {
            match self.reg.by_session_id(&cur) {
                Some(c) if c.is_loaded() => return cur,
                Some(c) => cur = c.parent.as_str().to_owned(),
                None => return cur,
            }
        }
        cur
    }
}

/// The tool call an update is about, as read from it: its `toolCallId` and `title`.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::engine) struct ToolRef<'a> {
    pub id: Option<&'a str>,
    pub title: Option<&'a str>,
}
