//! What the client sees of a subagent: its spawn card in the parent's thread, in the output
//! flavour chosen for the client. Every flavour reads the same [model](super::model) and is
//! reached through [`Output`]; the engine decides *when* a card changes, a renderer *how* it
//! looks. A renderer reads the model (`&Child`) and returns what to send; only the engine
//! writes the model.
//!
//! - [`zed`]: Zed's `_meta.subagent_session_info` cards, titled with live progress;
//! - [`acp`]: standard ACP subagents (`subagent_update`, child sessions, `session_message`),
//!   for clients that advertise them;
//! - [`transcript`]: the child's work folded into the card as a bounded log, for clients with
//!   neither Zed's convention nor standard ACP subagents.
//!
//! The card styles implement [`Render`]; the standard output is a type of its own ([`Acp`]),
//! since it is a second protocol rather than a way of drawing a card. The engine holds either
//! as an [`Output`]. A new card style is one more module implementing [`Render`], and one more
//! arm where the engine picks the output for a client.
//!
//! The child's own thread is recorded the same in every flavour (the store keeps it for any
//! client): ACP `session/update`s the proxy serves on the child's `session/load`
//! ([`user_text`] and [`agent_text`] build the entries it adds itself); a flavour may show a
//! line of it differently on its way out ([`Acp::child_line`]).

pub mod acp;
pub mod transcript;
pub mod zed;

use std::fmt;

use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::ids::ChildId;
use super::model::{Child, ChildState, TurnRange};
use acp::Acp;

/// What the client is sent of subagents: cards in the parent's thread drawn in one style, or
/// standard ACP subagents (child sessions the client follows, [`acp`]). The engine holds one
/// and asks it; the standard output's own parts (announcements, the child's session kept in
/// step) are reached through [`Output::standard`] / [`Output::standard_mut`].
#[derive(Debug)]
pub enum Output {
    /// Spawn cards in the parent's thread, in a card style ([`zed`], [`transcript`]).
    Cards(Box<dyn Render>),
    /// Standard ACP subagents.
    Standard(Acp),
}

impl Output {
    /// The spawn card the proxy creates for a child the agent announced without a tool call
    /// of its own (standard ACP subagents on the agent's side); the standard output announces
    /// the child instead.
    pub fn synthesized_card(&self, child: &Child) -> Value {
        match self {
            Output::Cards(style) => style.synthesized_card(child),
            Output::Standard(acp) => acp.synthesized_card(child),
        }
    }

    /// A `tool_call_update` of the child's card: `status` and `title` if given, and what the
    /// output shows of the child (a cancelled child's card says so). `None` when the output
    /// shows no card for it.
    pub fn card_update(
        &self,
        child: &Child,
        status: Option<&str>,
        title: Option<&str>,
    ) -> Option<Value> {
        match self {
            Output::Cards(style) => Some(style.card_update(child, status, title)),
            Output::Standard(acp) => acp.card_update(child, status, title),
        }
    }

    /// The agent's own spawn tool call (`tool_call` when `is_new`, else an update of it) on
    /// its way to the parent's thread.
    pub fn spawn_update(&self, child: &Child, update: &mut Value, is_new: bool) {
        match self {
            Output::Cards(style) => style.spawn_update(child, update, is_new),
            Output::Standard(acp) => acp.spawn_update(child, update, is_new),
        }
    }

    /// What [`Output::spawn_update`] adds to an update of an open spawn card that has no
    /// `_meta`, as members to set on it after the card's title; `None` when the output reads
    /// the update itself (a progress frame then needs its tree).
    pub fn spawn_patch(&self, child: &Child) -> Option<SpawnPatch> {
        match self {
            Output::Cards(style) => style.spawn_patch(child),
            Output::Standard(_) => None,
        }
    }

    /// The change of an open card for one step of its child ([`Render::child_step`]); the
    /// standard output has no card to change (the client follows the child itself).
    pub fn child_step(&mut self, child: &Child, step: &Step<'_>) -> Option<CardChange> {
        match self {
            Output::Cards(style) => style.child_step(child, step),
            Output::Standard(_) => None,
        }
    }

    /// Whether open cards are titled with the child's live progress ([`Render::live_progress`]).
    pub fn live_progress(&self) -> bool {
        match self {
            Output::Cards(style) => style.live_progress(),
            Output::Standard(_) => false,
        }
    }

    /// The card's title while it shows the child's live progress, if cards are titled so.
    pub fn progress_title(&self, child: &Child) -> Option<String> {
        match self {
            Output::Cards(style) => style.progress_title(child),
            Output::Standard(_) => None,
        }
    }

    /// Whether the output reads the fields of a child's events ([`Render::recorded`]).
    /// Without, the engine records most of them as raw text, without building a tree.
    pub fn reads_child_events(&self) -> bool {
        match self {
            Output::Cards(style) => style.reads_child_events(),
            Output::Standard(_) => false,
        }
    }

    /// An update was recorded in the child's thread (only called when
    /// [`Output::reads_child_events`]): updates for the parent's thread that show it there.
    pub fn recorded(&mut self, child: &Child, update: &Value) -> Vec<Value> {
        match self {
            Output::Cards(style) => style.recorded(child, update),
            Output::Standard(_) => Vec::new(),
        }
    }

    /// The parent's prompt turn is about to end while the child's card is open
    /// ([`Render::turn_ending`]).
    pub fn turn_ending(&mut self, child: &Child, stop_reason: Option<&str>) -> Vec<Value> {
        match self {
            Output::Cards(style) => style.turn_ending(child, stop_reason),
            Output::Standard(_) => Vec::new(),
        }
    }

    /// A reopened parent's replay shows the card of a child already recorded
    /// ([`Render::replayed`]); the standard output replays the child's own session instead.
    pub fn replayed(&mut self, child: &Child, closes: bool) -> Vec<Value> {
        match self {
            Output::Cards(style) => style.replayed(child, closes),
            Output::Standard(_) => Vec::new(),
        }
    }

    /// A reopened parent's replay ended without this legacy child's card
    /// ([`Render::unreplayed`]).
    pub fn unreplayed(&mut self, child: &Child) -> Vec<Value> {
        match self {
            Output::Cards(style) => style.unreplayed(child),
            Output::Standard(_) => Vec::new(),
        }
    }

    /// The standard output, when the client is shown standard ACP subagents.
    pub fn standard(&self) -> Option<&Acp> {
        match self {
            Output::Standard(acp) => Some(acp),
            Output::Cards(_) => None,
        }
    }

    /// The standard output, to tell the client of a child ([`Acp::announce`], [`Acp::sync`]).
    pub fn standard_mut(&mut self) -> Option<&mut Acp> {
        match self {
            Output::Standard(acp) => Some(acp),
            Output::Cards(_) => None,
        }
    }

    /// The engine let go of a child: drop what is kept for it.
    pub fn forget(&mut self, child_id: &ChildId) {
        match self {
            Output::Cards(style) => style.forget(child_id),
            Output::Standard(acp) => acp.forget(child_id),
        }
    }

    /// Sizes of what the output keeps per child, to check that long sessions stay bounded.
    pub fn footprint(&self) -> Vec<(&'static str, usize)> {
        match self {
            Output::Cards(style) => style.footprint(),
            Output::Standard(acp) => acp.footprint(),
        }
    }
}

/// The members a card style sets on an update of an open spawn card without `_meta`, after
/// the card's title ([`Render::spawn_patch`]): the child's state they show, taken when the
/// agent's frame is read, so they are built (or written) only for an update that goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnPatch {
    /// Zed's `_meta.subagent_session_info` ([`zed::inject_meta`]) for the child's turn.
    ZedSessionInfo(TurnRange),
}

impl SpawnPatch {
    /// The keys it sets, in order.
    pub fn keys(&self) -> &'static [&'static str] {
        match self {
            SpawnPatch::ZedSessionInfo(_) => &["_meta"],
        }
    }

    /// Its members for the child `id`, in order.
    pub fn members(&self, id: &ChildId) -> Map<String, Value> {
        let mut members = Map::new();
        match *self {
            SpawnPatch::ZedSessionInfo(turn) => {
                let mut meta = Map::new();
                meta.insert(
                    "subagent_session_info".into(),
                    zed::session_info_of(id, turn),
                );
                members.insert("_meta".into(), Value::Object(meta));
            }
        }
        members
    }

    /// Its members for the child `id` as serde_json writes them compact (`"key":value`,
    /// comma-separated, in order).
    pub fn write_members(&self, id: &ChildId, out: &mut Vec<u8>) {
        match *self {
            SpawnPatch::ZedSessionInfo(turn) => zed::write_meta_member(id, turn, out),
        }
    }
}

/// A style of spawn cards in the parent's thread: what a card shows of its child. A style
/// reads the model and returns what to send; the engine decides when, and writes the model.
pub trait Render: fmt::Debug + Send {
    /// The spawn card the proxy creates for a child the agent announced without a tool call
    /// of its own (standard ACP subagents on the agent's side).
    fn synthesized_card(&self, child: &Child) -> Value;

    /// A `tool_call_update` of the child's card: `status` and `title` if given, and what the
    /// style shows of the child (a cancelled child's card says so).
    fn card_update(&self, child: &Child, status: Option<&str>, title: Option<&str>) -> Value;

    /// The agent's own spawn tool call (`tool_call` when `is_new`, else an update of it) on
    /// its way to the parent's thread.
    fn spawn_update(&self, child: &Child, update: &mut Value, is_new: bool);

    /// [`Render::spawn_update`] of an open card's update without `_meta` (not a `tool_call`),
    /// as the members it sets: `None` when the style reads the update itself.
    fn spawn_patch(&self, _child: &Child) -> Option<SpawnPatch> {
        None
    }

    /// The child's thread grew by one event while its card is open (not during a replay):
    /// the change of the card to show for it, if any. The engine has already counted the
    /// step into the child's live progress (when [`Render::live_progress`]).
    fn child_step(&mut self, child: &Child, step: &Step<'_>) -> Option<CardChange>;

    /// Live progress (Zed's cards): whether open cards are titled with the child's latest
    /// step; the engine then counts each new tool call of the child as a step of it.
    fn live_progress(&self) -> bool {
        false
    }

    /// The card's title while it shows the child's live progress (`child.progress()`), for a
    /// style with [`Render::live_progress`].
    fn progress_title(&self, _child: &Child) -> Option<String> {
        None
    }

    /// The child's events shown in the parent's thread (the folded view): whether the style
    /// reads their fields ([`Render::recorded`]). Without, the engine records most of them as
    /// raw text, without building a tree.
    fn reads_child_events(&self) -> bool {
        false
    }

    /// An update was recorded in the child's thread (only called when
    /// [`Render::reads_child_events`]): updates for the parent's thread that show it there,
    /// sent at once (the folded view's attributed steps).
    fn recorded(&mut self, _child: &Child, _update: &Value) -> Vec<Value> {
        Vec::new()
    }

    /// The parent's replay shows the card of a child whose thread is already recorded (kept
    /// in memory or restored from the store): updates for the parent's thread that show the
    /// recorded work with it, as it was shown live (the folded view's attributed steps); with
    /// `closes`, also the card's end, which no frame of the agent's replay will bring (a card
    /// the proxy synthesized). The style rebuilds its view of the child from the thread.
    fn replayed(&mut self, _child: &Child, _closes: bool) -> Vec<Value> {
        Vec::new()
    }

    /// The parent's replay ended without the card of this legacy child (the agent replays
    /// none of it): updates for the parent's thread that show the card and its recorded work
    /// from the store, if the style does.
    fn unreplayed(&mut self, _child: &Child) -> Vec<Value> {
        Vec::new()
    }

    /// The parent's prompt turn is about to end (its answer to `session/prompt`, with
    /// `stop_reason`, goes out next) while the child's card is open: updates for the parent's
    /// session that close it, for a style that does (a client that stops reading at the
    /// answer sees them).
    fn turn_ending(&mut self, _child: &Child, _stop_reason: Option<&str>) -> Vec<Value> {
        Vec::new()
    }

    /// The engine let go of a child: drop what the style keeps for it, if anything.
    fn forget(&mut self, _child_id: &ChildId) {}

    /// Sizes of what the style keeps per child, to check that long sessions stay bounded.
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
    if status.is_some() && child.state() == ChildState::Cancelled {
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
        "status": child.state().card_status(),
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
