//! Timing attribution: an event that names no spawn, sent while exactly one spawn of a preset
//! that opts in (`timing = true`) is open on its session, is taken as that child's. It is a
//! guess, so the update is marked (`_meta["acp-proxy"].attribution = "timing"`) and the
//! dump gets a note the first time per child.

use serde_json::{json, Value};

use crate::engine::{Engine, NoteLevel};
use crate::subagents::ids::ChildId;

/// The kinds a child's work consists of; anything else (plans, usage, modes) stays the
/// parent's.
const CHILD_KINDS: [&str; 4] = [
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
];

impl Engine {
    /// The child an unmarked event of `agent_session` is attributed to by timing, if any.
    pub(in crate::engine) fn timed_child(
        &self,
        agent_session: &str,
        kind: &str,
        tool: Option<&str>,
    ) -> Option<ChildId> {
        if !CHILD_KINDS.contains(&kind) {
            return None;
        }
        // An update of a tool call the parent started stays the parent's.
        if kind == "tool_call_update"
            && tool.is_some_and(|t| self.held.is_parent_tool(agent_session, t))
        {
            return None;
        }
        let mut open = self.reg.running_legacy_in(agent_session);
        let only = open.next()?;
        if open.next().is_some() || only.history_known() {
            return None;
        }
        let preset = only.preset?;
        // An agent that marks its children's tool calls with its own child id (`child_ref`):
        // an unmarked one is the parent's (Copilot's `read_agent` while a background child runs).
        if matches!(kind, "tool_call" | "tool_call_update")
            && self.detector.marks_child_events(preset)
        {
            return None;
        }
        self.detector.timing_of(preset).then(|| only.id.clone())
    }

    /// Mark an update attributed by a guess (`attribution`: `timing`, or `inferred` for an
    /// agent child id bound to the only open spawn), and say so once per child.
    pub(in crate::engine) fn mark_inferred(
        &mut self,
        cid: &ChildId,
        mut update: Value,
        attribution: &str,
        out: &mut Vec<crate::engine::Action>,
    ) -> Value {
        if let Some(o) = update.as_object_mut() {
            let meta = o.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert("acp-proxy".into(), json!({ "attribution": attribution }));
            }
        }
        let first = self.reg.get_mut(cid).is_some_and(|c| {
            c.inferred_events += 1;
            c.inferred_events == 1
        });
        if first {
            self.note(
                out,
                NoteLevel::Info,
                if attribution == "timing" {
                    format!(
                        "subagent {cid}: events that name no spawn are attributed to it by timing (the only open spawn; inferred, marked in `_meta[\"acp-proxy\"]`)"
                    )
                } else {
                    format!(
                        "subagent {cid}: events are attributed to it by an id bound to it as the only open spawn ({attribution}, marked in `_meta[\"acp-proxy\"]`)"
                    )
                },
            );
        }
        update
    }
}
