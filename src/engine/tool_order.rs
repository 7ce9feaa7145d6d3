//! Zed's rules for the tool calls a thread receives, kept for every frame the proxy sends
//! Zed: a `tool_call` carries a title, and a `tool_call_update` never comes before its tool
//! call (Zed's main branch would show a failed "Tool call not found" entry in its place, and
//! split the text around it). What an agent sends against them is repaired
//! ([`zed::repair_tool_frame`]) and noted once.
//!
//! A top-level thread's tool calls are remembered as hashes of their ids, in two bounded
//! generations (the last 16 Ki to 32 Ki of them): the parent's updates of them stay on the
//! hot path, decided on their bytes. A child's thread knows its own (its entry counter).

use std::hash::BuildHasher;

use bytes::Bytes;
use hashbrown::HashSet;
use serde_json::Value;

use super::{Action, Engine};
use crate::subagents::render::zed::{self, ToolRepair};
use crate::wire::keys::{self, kind, Found};
use crate::wire::{self, write};

/// What Zed's tool call rules read of an update: its kind, its tool call id, whether it has a
/// (string) title.
#[derive(Debug, Clone, Copy)]
pub(super) struct ToolFrame<'a> {
    pub(super) kind: &'a str,
    pub(super) tool: Option<&'a str>,
    pub(super) titled: bool,
}

impl ToolFrame<'_> {
    /// Whether Zed takes the frame as it is, given whether the thread holds the tool call.
    fn fine(&self, known: bool) -> bool {
        match self.kind {
            "tool_call" => self.titled,
            "tool_call_update" => known,
            _ => true,
        }
    }
}

/// Ids of the tool calls top-level threads hold: the recent ones, in two generations (as
/// [`super::recent::RecentSet`] keeps them, and as bounded), so a hostile flood of tool calls
/// costs fixed memory; an update of a tool call forgotten that long ago is sent as its
/// tool call.
#[derive(Debug, Default)]
pub(super) struct ThreadTools {
    hasher: hashbrown::DefaultHashBuilder,
    newer: HashSet<u64>,
    older: HashSet<u64>,
}

impl ThreadTools {
    pub(super) const CAPACITY: usize = 4096;

    fn key(&self, id: &str) -> u64 {
        self.hasher.hash_one(id)
    }

    pub(super) fn insert(&mut self, id: &str) {
        let key = self.key(id);
        if self.newer.contains(&key) || self.older.contains(&key) {
            return;
        }
        if self.newer.len() >= Self::CAPACITY {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(key);
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        let key = self.key(id);
        self.newer.contains(&key) || self.older.contains(&key)
    }

    pub(super) fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }
}

impl Engine {
    /// The hot path's part of Zed's tool call rules, for a frame about to pass untouched into
    /// a top-level thread: an update naming only tool calls the thread holds may go as it
    /// is. A new tool call (its title must be checked; the relay's reader thread has already
    /// taken it apart) or an update naming another id takes the slow path, where
    /// [`Engine::to_top_level`] decides.
    pub(super) fn tools_in_order(&self, frame: &[u8], found: Found) -> bool {
        if !self.zed() || !found.has(kind::TOOL_CALL) {
            return true;
        }
        if found.has(kind::NEW_TOOL_CALL) {
            return false;
        }
        let known = |id: Option<&str>| id.is_some_and(|id| self.thread_tools.contains(id));
        if !found.has(kind::TOOL_CALL_IDS) {
            // The key search counted one `"toolCallId"` (or none): the first search finds it,
            // near the frame's start, instead of a search through the whole frame for more.
            return keys::first_tool_call_id(frame).is_none_or(known);
        }
        keys::tool_call_ids(frame).all(known)
    }

    /// A frame on its way into a top-level thread as the agent sent it: a tool call frame Zed
    /// would refuse is repaired first, and a tool call is remembered.
    pub(super) fn pass_to_top_level(
        &mut self,
        frame: Bytes,
        tf: ToolFrame<'_>,
        out: &mut Vec<Action>,
    ) {
        let (Some(tool), true) = (tf.tool, self.zed()) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let known = self.thread_tools.contains(tool);
        if tf.kind == "tool_call" {
            self.thread_tools.insert(tool);
        }
        if tf.fine(known) {
            out.push(Action::ToClient(frame));
            return;
        }
        let Some(mut msg) = wire::parse_value(&frame) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let repair = msg
            .pointer_mut("/params/update")
            .and_then(|u| zed::repair_tool_frame(u, known));
        match repair {
            Some(repair) => {
                self.thread_tools.insert(tool);
                self.note_repair(repair, tool, out);
                out.push(Action::ToClient(write::line(&msg)));
            }
            None => out.push(Action::ToClient(frame)),
        }
    }

    /// A child's tool call frame on its way into the child's thread (`known`: the thread
    /// holds the tool call; `text`, and `value` when parsed, the update): repaired the same
    /// way when Zed would refuse it. Returns the repaired update, if it was.
    pub(super) fn repair_child_event(
        &mut self,
        tf: ToolFrame<'_>,
        known: bool,
        (text, value): (&str, Option<&Value>),
        out: &mut Vec<Action>,
    ) -> Option<Value> {
        let tool = tf.tool?;
        if !self.zed() || tf.fine(known) {
            return None;
        }
        let mut update = match value {
            Some(v) => v.clone(),
            None => serde_json::from_str::<Value>(text).ok()?,
        };
        let repair = zed::repair_tool_frame(&mut update, known)?;
        self.note_repair(repair, tool, out);
        Some(update)
    }

    fn note_repair(&mut self, repair: ToolRepair, tool: &str, out: &mut Vec<Action>) {
        let what = match repair {
            ToolRepair::Titled => "a `tool_call` without a title: given one",
            ToolRepair::AsUpdate => {
                "a `tool_call` without a title for a tool call already shown: sent as its update"
            }
            ToolRepair::AsToolCall => {
                "a `tool_call_update` before its `tool_call`: sent as the tool call"
            }
        };
        self.report_once(
            &format!("tool-order:{repair:?}"),
            out,
            format!("the agent sent {what} (tool call {tool}; Zed refuses the frame as sent; noted once)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_tools_forget_only_the_oldest_generation() {
        let mut t = ThreadTools::default();
        t.insert("first");
        for n in 0..ThreadTools::CAPACITY {
            t.insert(&format!("t{n}"));
        }
        assert!(t.contains("first"), "still in the older generation");
        for n in 0..ThreadTools::CAPACITY {
            t.insert(&format!("u{n}"));
        }
        assert!(!t.contains("first"));
        assert!(t.contains("u0") && t.len() <= 2 * ThreadTools::CAPACITY);
    }
}
