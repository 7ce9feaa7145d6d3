//! A child's own events: recorded in its thread (never in the parent's), raw where that is
//! enough, with its card kept current.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::Value;

use crate::engine::child::thread::ToolRef;
use crate::engine::tool_order::ToolFrame;
use crate::engine::{str_field, Action, Engine, LiveChildEvents};
use crate::subagents::ids::{AgentSessionId, ChildId, ClientSessionId};
use crate::subagents::model::{Child, ChildState, SpawnSite};
use crate::subagents::render::{self, CardChange, Step};
use crate::wire::keys::{self, Found};
use crate::wire::update_view::UpdateParts;
use crate::wire::write;

/// A child's event on its way into the child thread.
pub(in crate::engine) struct ChildEvent<'a> {
    kind: Cow<'a, str>,
    tool: Option<Cow<'a, str>>,
    title: Option<Cow<'a, str>>,
    has_status: bool,
    /// The update's JSON text as it will be replayed.
    text: Cow<'a, str>,
    /// The parsed update, when the router built one.
    value: Option<Value>,
}

impl Engine {
    /// An event of a child's own: record it in the child thread (never in the parent).
    pub(in crate::engine) fn child_event(
        &mut self,
        cid: &ChildId,
        agent_session: &str,
        update: Option<Value>,
        frame: Bytes,
        out: &mut Vec<Action>,
    ) {
        let Some(mut update) = update else {
            out.push(Action::ToClient(frame));
            return;
        };
        let kind = str_field(&update, "sessionUpdate").unwrap_or("").to_owned();
        let tool = str_field(&update, "toolCallId").map(str::to_owned);
        if let Some(t) = &tool {
            if let Some(grandchild) = self.reg.by_spawn(agent_session, t).cloned() {
                self.spawn_event(&grandchild, &kind, Some(update), out);
                return;
            }
            if kind == "tool_call" {
                if let Some(spawn) = self.detector.spawn(&update) {
                    // A child spawning a child: the card lives in the child's thread.
                    let top = self
                        .reg
                        .get(cid)
                        .map(|c| c.top_session.clone())
                        .unwrap_or_default();
                    if self.spawn_allowed(cid.as_str(), top.as_str(), t, out) {
                        let site = SpawnSite {
                            agent_session: AgentSessionId::new(agent_session.to_owned()),
                            parent: ClientSessionId::of_child(cid),
                            top_session: top,
                            spawn_id: t.clone(),
                        };
                        self.new_spawn(site, spawn.tool_name, spawn.preset, update, out);
                        self.release_held(agent_session, t, out);
                        return;
                    }
                    // Over a limit: the spawn stays an ordinary tool call of this child.
                    self.passthrough_spawns.insert(agent_session, t);
                }
            }
        }
        if self.reg.get(cid).is_some_and(Child::passes_through) {
            if let (Some(t), "tool_call") = (&tool, kind.as_str()) {
                self.reg.set_tool_owner(agent_session, t, cid);
            }
            out.push(Action::ToClient(frame));
            return;
        }
        if kind == "tool_call" || kind == "tool_call_update" {
            render::strip_subagent_info(&mut update);
        }
        let event = ChildEvent {
            title: str_field(&update, "title").map(|t| Cow::Owned(t.to_owned())),
            has_status: update.get("status").is_some(),
            text: Cow::Owned(update.to_string()),
            kind: Cow::Owned(kind),
            tool: tool.map(Cow::Owned),
            value: Some(update),
        };
        self.child_record(cid, agent_session, event, frame, out);
    }

    /// A child event taken as raw JSON: recorded as the agent sent it, without building a
    /// tree, unless it needs more than routing (a nested spawn, Zed keys to strip, a
    /// flavour that reads its fields).
    pub(in crate::engine) fn child_event_raw(
        &mut self,
        cid: &ChildId,
        agent_session: &str,
        head: UpdateParts<'_>,
        found: Found,
        frame: Bytes,
        out: &mut Vec<Action>,
    ) {
        let raw = head.raw;
        let tool = head.tool_call_id.as_deref();
        // `found` covers the whole frame: a key it lacks is not in the update either.
        let simple = !self.render.reads_child_events()
            && self.cfg.zed.live_child_events == LiveChildEvents::Hide
            && !(head.kind == "tool_call" && found.has(keys::kind::SPAWN))
            && tool.is_none_or(|t| self.reg.by_spawn(agent_session, t).is_none())
            && !(found.has(keys::kind::SUBAGENT)
                && keys::has(&keys::SUBAGENT_INFO, raw.as_bytes()))
            && !self.reg.get(cid).is_some_and(Child::passes_through);
        if !simple {
            let value = serde_json::from_str::<Value>(raw).ok();
            self.child_event(cid, agent_session, value, frame, out);
            return;
        }
        let event = ChildEvent {
            kind: head.kind,
            tool: head.tool_call_id,
            title: head.title,
            has_status: head.has_status,
            text: Cow::Borrowed(raw),
            value: None,
        };
        self.child_record(cid, agent_session, event, frame, out);
    }

    /// Record a child's event and keep its card current.
    pub(in crate::engine) fn child_record(
        &mut self,
        cid: &ChildId,
        agent_session: &str,
        event: ChildEvent<'_>,
        frame: Bytes,
        out: &mut Vec<Action>,
    ) {
        let ChildEvent {
            kind,
            tool,
            title,
            has_status,
            text,
            value,
        } = event;
        let known = tool
            .as_deref()
            .is_some_and(|t| self.reg.get(cid).is_some_and(|c| c.entries.knows_tool(t)));
        let tf = ToolFrame {
            kind: &kind,
            tool: tool.as_deref(),
            titled: title.is_some(),
        };
        let repaired = self.repair_child_event(tf, known, (&text, value.as_ref()), out);
        let (kind, title, text, value) = match repaired {
            Some(v) => (
                Cow::Owned(str_field(&v, "sessionUpdate").unwrap_or("").to_owned()),
                str_field(&v, "title").map(|t| Cow::Owned(t.to_owned())),
                Cow::Owned(v.to_string()),
                Some(v),
            ),
            None => (kind, title, text, value),
        };
        let replaying = self
            .reg
            .get(cid)
            .is_some_and(|c| self.reopen.replaying(c.top_session.as_str()));
        self.record_announced_prompt(cid, out);
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.state() == ChildState::Announced {
            child.start();
        }
        let replay_skip = child.history_known();
        let new_step = kind == "tool_call"
            && tool
                .as_deref()
                .is_some_and(|t| !child.entries.knows_tool(t));
        let entries_before = child.entries.count();
        let standard = child.agent_child().is_some();
        // Cloned only on the less common paths below: most events need no parent id.
        let flat_parent = (self.cfg.zed.live_child_events == LiveChildEvents::Flat && !replay_skip)
            .then(|| child.parent.clone());
        if let (Some(t), "tool_call") = (tool.as_deref(), kind.as_ref()) {
            self.reg.set_tool_owner(agent_session, t, cid);
        }
        if let Some(parent) = flat_parent {
            if standard {
                let visible = self.visible_session(parent.as_str());
                out.push(Action::ToClient(write::session_update_raw(&visible, &text)));
            } else {
                out.push(Action::ToClient(frame));
            }
        }
        if !replay_skip {
            let tool = ToolRef {
                id: tool.as_deref(),
                title: title.as_deref(),
            };
            self.record_text_in(cid, &kind, tool, &text, value.as_ref(), out);
        }
        let nested = self.reg.is_nested(cid);
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let final_card = child.card_is_final();
        let card = if final_card {
            // A background child keeps working after its card completed: extend its range.
            settled_card_grown(&self.render, child, entries_before)
        } else if !replaying && !replay_skip {
            let step = Step {
                kind: &kind,
                new_tool_call: new_step,
                tool_status: kind == "tool_call_update" && has_status,
                new_entry: entries_before != child.entries.count(),
                title: title.as_deref(),
                nested,
            };
            stepped_card(&mut self.render, child, &step)
        } else {
            None
        };
        let parent = child.parent.clone();
        self.card_changed(cid, parent, final_card, card, out);
        if let (Some(t), "tool_call") = (tool.as_deref(), kind.as_ref()) {
            self.release_held(agent_session, t, out);
        }
    }
}

impl Engine {
    /// An update of the child's work read from its agent's record while it runs: into the
    /// child thread, and a step of its open card, as the child's own event would be.
    pub(in crate::engine) fn record_step_in(
        &mut self,
        cid: &ChildId,
        update: &Value,
        out: &mut Vec<Action>,
    ) {
        let Some(child) = self.reg.get(cid) else {
            return;
        };
        let kind = str_field(update, "sessionUpdate").unwrap_or("");
        let tool = str_field(update, "toolCallId");
        let new_tool_call =
            kind == "tool_call" && tool.is_some_and(|t| !child.entries.knows_tool(t));
        let entries_before = child.entries.count();
        self.record_in(cid, update, out);
        let nested = self.reg.is_nested(cid);
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let step = Step {
            kind,
            new_tool_call,
            tool_status: kind == "tool_call_update" && update.get("status").is_some(),
            new_entry: entries_before != child.entries.count(),
            title: str_field(update, "title"),
            nested,
        };
        let card = stepped_card(&mut self.render, child, &step);
        let parent = child.parent.clone();
        self.card_changed(cid, parent, false, card, out);
    }
}

/// The change of an open card for one step of its child: the engine counts a new tool call
/// into the child's live progress (when the flavour shows it), then the renderer says what
/// the card shows.
pub(in crate::engine) fn stepped_card(
    render: &mut render::Output,
    child: &mut Child,
    step: &Step<'_>,
) -> Option<CardChange> {
    if step.new_tool_call && render.live_progress() {
        child.show_step(step.title.map(str::to_owned));
    }
    render.child_step(child, step)
}

/// The card of a child whose card had settled, after more of its work was recorded: when its
/// entries grew, its turn ends again and the card's range covers them; otherwise no change.
pub(in crate::engine) fn settled_card_grown(
    render: &render::Output,
    child: &mut Child,
    entries_before: u32,
) -> Option<CardChange> {
    if child.entries.count() == entries_before {
        return None;
    }
    child.end_turn();
    render
        .card_update(child, None, None)
        .map(CardChange::Update)
}
