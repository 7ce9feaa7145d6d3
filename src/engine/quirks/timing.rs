//! Timing attribution: an event that names no spawn, sent while exactly one spawn of a preset
//! that opts in (`timing = true`) is open on its session, is taken as that child's. It is a
//! guess, so the update is marked (`_meta["acp-proxy"].attribution = "timing"`) and the
//! dump gets a note the first time per child.
//!
//! A message is one producer's: words whose message began in the parent's thread (timing
//! could not choose, two children being open) stay there to the message's end, even once one
//! of the children ended and timing would give the rest to the other (`ParentMessages`).

use std::collections::HashMap;

use serde::Deserialize;
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

/// The kinds of chunk a message is streamed in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Chunk {
    Message,
    Thought,
}

impl Chunk {
    fn of(kind: &str) -> Option<Chunk> {
        match kind {
            "agent_message_chunk" => Some(Chunk::Message),
            "agent_thought_chunk" => Some(Chunk::Thought),
            _ => None,
        }
    }
}

/// How much of a message's end is kept to compare with a spawn's answer.
const TAIL_BYTES: usize = 8 * 1024;

/// A message whose start went to the parent's thread: its kind and the end of its text.
#[derive(Debug)]
struct Message {
    chunk: Chunk,
    tail: String,
    /// The text was longer than the tail holds.
    cut: bool,
}

impl Message {
    fn push(&mut self, text: &str) {
        self.tail.push_str(text);
        if self.tail.len() > TAIL_BYTES {
            let mut from = self.tail.len() - TAIL_BYTES;
            while !self.tail.is_char_boundary(from) {
                from += 1;
            }
            self.tail.drain(..from);
            self.cut = true;
        }
    }

    /// Whether the message's text ends with `answer` (as far as the tail tells).
    fn ends_with(&self, answer: &str) -> bool {
        let (tail, answer) = (self.tail.trim_end(), answer.trim());
        !answer.is_empty() && (tail.ends_with(answer) || (self.cut && answer.ends_with(tail)))
    }
}

/// Per agent session, the message whose start was left in the parent's thread while a child
/// attributed by timing was open, until the message ends: a chunk of another kind, any other
/// update but a tool call's update (Zed's thread runs on in the same message past one), the
/// completion of a spawn whose answer the message ends with (the child's last words were
/// its answer), or the turn's end. At most one entry per session with such a message.
#[derive(Default, Debug)]
pub(in crate::engine) struct ParentMessages {
    open: HashMap<String, Message>,
}

impl ParentMessages {
    /// An update of `kind` on `session` came: a message it does not continue is over.
    pub(in crate::engine) fn see(&mut self, session: &str, kind: &str) {
        if self.open.is_empty() || kind == "tool_call_update" {
            return;
        }
        if self.open.get(session).map(|m| m.chunk) != Chunk::of(kind) {
            self.open.remove(session);
        }
    }

    /// A chunk of `kind` went to the parent's thread of `session`.
    fn left(&mut self, session: &str, kind: &str, text: &str) {
        let Some(chunk) = Chunk::of(kind) else { return };
        let message = self
            .open
            .entry(session.to_owned())
            .or_insert_with(|| Message {
                chunk,
                tail: String::new(),
                cut: false,
            });
        message.push(text);
    }

    /// Whether a chunk of `kind` continues a message the parent's thread holds.
    fn continues(&self, session: &str, kind: &str) -> bool {
        Chunk::of(kind).is_some_and(|c| self.open.get(session).is_some_and(|m| m.chunk == c))
    }

    /// A spawn on `session` completed with `answer`: a message that ends with it was the
    /// child's last words, and is over.
    fn answered(&mut self, session: &str, answer: &str) {
        if self.open.get(session).is_some_and(|m| m.ends_with(answer)) {
            self.open.remove(session);
        }
    }

    /// The parent's turn on `session` is over, and any message with it.
    pub(in crate::engine) fn turn_over(&mut self, session: &str) {
        self.open.remove(session);
    }
}

/// A chunk's text, read from its update's JSON.
fn chunk_text(raw: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Content {
        text: Option<String>,
    }
    #[derive(Deserialize)]
    struct Update {
        content: Option<Content>,
    }
    serde_json::from_str::<Update>(raw).ok()?.content?.text
}

impl Engine {
    /// An unmarked event of `agent_session` that timing gave no child goes to the parent's
    /// thread (`raw`: its update's JSON): a chunk there, while a timed child is open, starts
    /// (or continues) a message that stays the parent's to its end.
    pub(in crate::engine) fn left_in_parent(&mut self, agent_session: &str, kind: &str, raw: &str) {
        if Chunk::of(kind).is_none() || self.reg.running_legacy_in(agent_session).next().is_none() {
            return;
        }
        let text = chunk_text(raw).unwrap_or_default();
        self.parent_messages.left(agent_session, kind, &text);
    }

    /// An update of the spawn of `cid` on `agent_session`: its completion's answer may end a
    /// message the parent's thread holds.
    pub(in crate::engine) fn spawn_update_seen(
        &mut self,
        agent_session: &str,
        cid: &ChildId,
        update: &Value,
    ) {
        if self.parent_messages.open.is_empty()
            || update.get("status").and_then(Value::as_str) != Some("completed")
        {
            return;
        }
        let answer = match self.reg.get(cid).and_then(|c| c.preset) {
            Some(p) => self.detector.answer_of(p, update),
            None => self.detector.result_text(update),
        };
        if let Some(answer) = answer {
            self.parent_messages.answered(agent_session, &answer);
        }
    }

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
        // The rest of a message begun in the parent's thread is the parent's.
        if self.parent_messages.continues(agent_session, kind) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_runs_on_past_tool_call_updates_and_ends_with_its_answer() {
        let mut m = ParentMessages::default();
        m.left("s", "agent_message_chunk", "SUB-ANSWER alpha: ");
        m.see("s", "tool_call_update");
        assert!(m.continues("s", "agent_message_chunk"));
        assert!(!m.continues("s", "agent_thought_chunk"));
        assert!(!m.continues("t", "agent_message_chunk"));
        // Another child's answer does not end it; its own does.
        m.answered("s", "SUB-ANSWER beta: done.");
        assert!(m.continues("s", "agent_message_chunk"));
        m.left("s", "agent_message_chunk", "done.\n");
        m.answered("s", " SUB-ANSWER alpha: done.");
        assert!(!m.continues("s", "agent_message_chunk"));
        // A tool call, another kind of update or the turn's end ends it too.
        for end in ["tool_call", "plan", "agent_thought_chunk"] {
            m.left("s", "agent_message_chunk", "x");
            m.see("s", end);
            assert!(!m.continues("s", "agent_message_chunk"), "{end}");
        }
        m.left("s", "agent_message_chunk", "x");
        m.turn_over("s");
        assert!(!m.continues("s", "agent_message_chunk"));
    }

    #[test]
    fn a_long_message_keeps_its_end_only() {
        let mut m = ParentMessages::default();
        let long = "é".repeat(TAIL_BYTES);
        m.left("s", "agent_message_chunk", &long);
        m.left("s", "agent_message_chunk", " the end.");
        let kept = &m.open["s"];
        assert!(kept.tail.len() <= TAIL_BYTES && kept.cut);
        assert!(kept.ends_with("the end."));
        // An answer longer than what is kept: compared on what is kept.
        assert!(kept.ends_with(&format!("{long}{long} the end.")));
        assert!(!kept.ends_with("another end."));
    }
}
