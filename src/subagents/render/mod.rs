//! What the client sees of a subagent: its spawn card in the parent's thread, in the output
//! flavour chosen for the client. Every flavour reads the same [model](super::model) and is
//! reached through [`Render`]; the engine decides *when* a card changes, a renderer *how* it
//! looks. A renderer reads the model (`&Child`) and returns what to send; only the engine
//! writes the model.
//!
//! - [`zed`]: Zed's `_meta.subagent_session_info` cards, titled with live progress;
//! - [`acp`]: standard ACP subagents (`subagent_update`, child sessions, `session_message`),
//!   for clients that advertise them;
//! - [`transcript`]: the child's work folded into the card as a bounded log, for clients with
//!   neither Zed's convention nor standard ACP subagents.
//!
//! A new flavour is one more module implementing [`Render`], and one more arm where the engine
//! picks the renderer for a client.
//!
//! The child's own thread is recorded the same in every flavour (the store keeps it for any
//! client): ACP `session/update`s the proxy serves on the child's `session/load`
//! ([`user_text`] and [`agent_text`] build the entries it adds itself); a flavour may show a
//! line of it differently on its way out ([`Render::child_line`]).

pub mod acp;
pub mod transcript;
pub mod zed;

use std::fmt;

use bytes::Bytes;
use serde_json::{json, Value};

use super::model::{Child, ChildState};

/// One output flavour of subagent cards.
pub trait Render: fmt::Debug + Send {
    /// The spawn card the proxy creates for a child the agent announced without a tool call
    /// of its own (standard ACP subagents).
    fn synthesized_card(&self, child: &Child) -> Value;

    /// A `tool_call_update` of the child's card: `status` and `title` if given, and what the
    /// flavour shows of the child (a cancelled child's card says so). `None` when the flavour
    /// shows no card for it.
    fn card_update(
        &self,
        child: &Child,
        status: Option<&str>,
        title: Option<&str>,
    ) -> Option<Value>;

    /// The agent's own spawn tool call (`tool_call` when `is_new`, else an update of it) on
    /// its way to the parent's thread.
    fn spawn_update(&self, child: &Child, update: &mut Value, is_new: bool);

    /// Whether the flavour reads the fields of a child's events ([`Render::recorded`]).
    /// Without, the engine records most of them as raw text, without building a tree.
    fn reads_child_events(&self) -> bool {
        false
    }

    /// An update was recorded in the child's thread (only called when
    /// [`Render::reads_child_events`]): updates for the parent's thread that show it there,
    /// sent at once (the folded view's attributed steps).
    fn recorded(&mut self, _child: &Child, _update: &Value) -> Vec<Value> {
        Vec::new()
    }

    /// The child's thread grew by one event while its card is open (not during a replay):
    /// the change of the card to show for it, if any. The engine has already counted the
    /// step into the child's live progress (when [`Render::live_progress`]).
    fn child_step(&mut self, child: &Child, step: &Step<'_>) -> Option<CardChange>;

    /// Whether this flavour titles an open card with the child's live progress: the engine
    /// then counts each new tool call of the child as a step of it.
    fn live_progress(&self) -> bool {
        false
    }

    /// The card's title while it shows the child's live progress (`child.progress`), if this
    /// flavour titles cards with it.
    fn progress_title(&self, _child: &Child) -> Option<String> {
        None
    }

    /// The engine let go of a child: drop what is kept for it.
    fn forget(&mut self, _child_id: &str) {}

    /// Updates for the parent's session that bring the client's view of the child up to
    /// date (standard subagents: the announcement before anything else of the child, then its
    /// title, task and state). The engine calls it wherever the child may have changed; the
    /// flavour returns only what changed.
    fn sync(&mut self, _child: &Child) -> Vec<Value> {
        Vec::new()
    }

    /// The part of [`Render::sync`] that must come before a frame of the child: its
    /// announcement (or a new title). The rest (its task, its end) follows the frame.
    fn announce(&mut self, _child: &Child) -> Vec<Value> {
        Vec::new()
    }

    /// The parent's thread is being rebuilt (its `session/load` replay): what the client was
    /// told of this child is gone.
    fn reopened(&mut self, _child_id: &str) {}

    /// Whether the client follows every child's session from its announcement on (its events
    /// go to the client live without a `session/load`).
    fn follows_children(&self) -> bool {
        false
    }

    /// Line `index` of the child's thread on its way to the client under the child's id (live
    /// or on a `session/load`): what the flavour sends instead, if anything.
    fn child_line(&self, _child: &Child, _index: usize, _text: &str) -> Option<Value> {
        None
    }

    /// The parent's prompt turn ended while the child is open: updates for the parent's
    /// session, if the flavour shows that.
    fn turn_ended(&mut self, _child: &Child) -> Vec<Value> {
        Vec::new()
    }

    /// The parent's prompt turn is about to end (its answer to `session/prompt`, with
    /// `stop_reason`, goes out next) while the child's card is open: updates for the parent's
    /// session that close it, if the flavour does (a client that stops reading at the answer
    /// sees them).
    fn turn_ending(&mut self, _child: &Child, _stop_reason: Option<&str>) -> Vec<Value> {
        Vec::new()
    }

    /// Sizes of what the renderer keeps per child, to check that long sessions stay bounded.
    fn footprint(&self) -> Vec<(&'static str, usize)> {
        Vec::new()
    }
}

/// One event of a child, as [`Render::child_step`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    /// The update's `sessionUpdate`.
    pub kind: &'a str,
    /// A tool call the child thread did not have yet.
    pub new_tool_call: bool,
    /// A `tool_call_update` that carries a status.
    pub tool_status: bool,
    /// The event added an entry to the child thread (Zed's entry rules).
    pub new_entry: bool,
    /// The event's title, if it has one.
    pub title: Option<&'a str>,
    /// The card lives in another child's thread, not in a top-level session's.
    pub nested: bool,
}

/// A change of a child's card.
#[derive(Debug, Clone, PartialEq)]
pub enum CardChange {
    /// This card update goes into the parent's thread.
    Update(Value),
    /// The `session/update` line for a top-level parent, already written (it is sent at
    /// every step of every child, so it is written without building a tree first).
    Line(Bytes),
}

/// A `tool_call_update` of the child's card with a status and a title, each if given: what
/// every flavour's card update starts from.
pub fn card_base(child: &Child, status: Option<&str>, title: Option<&str>) -> Value {
    let mut upd = json!({"sessionUpdate": "tool_call_update", "toolCallId": child.spawn_id});
    if let Some(s) = status {
        upd["status"] = json!(s);
    }
    if let Some(t) = title {
        upd["title"] = json!(t);
    }
    upd
}

/// A final card of a cancelled child says so: Zed shows the first text content of a failed
/// card as its error.
pub fn mark_cancelled(child: &Child, status: Option<&str>, card: &mut Value) {
    if status.is_some() && child.state == ChildState::Cancelled {
        card["content"] =
            json!([{"type": "content", "content": {"type": "text", "text": "Cancelled"}}]);
    }
}

/// A `tool_call` for a spawn card the proxy creates itself, before any flavour's additions.
pub fn synthesized_base(child: &Child) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": child.spawn_id,
        "title": child.title,
        "kind": "other",
        "status": child.state.card_status(),
    })
}

/// Take Zed's subagent keys off one of a child's own tool calls, in every flavour: a child's
/// tool call is never shown as a subagent card of its own.
pub fn strip_subagent_info(update: &mut Value) {
    zed::strip_meta(update);
}

/// A user message entry for the child thread.
pub fn user_text(text: &str) -> Value {
    json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}})
}

/// An assistant message entry for the child thread.
pub fn agent_text(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}
