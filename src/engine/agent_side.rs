//! What the agent sends, in Zed mode: updates are sorted into parent and child threads,
//! spawn cards get Zed's meta, and requests reach the client under a session it knows.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{Action, Engine, LiveChildEvents, Millis, NoteLevel};
use crate::subagents::ids;
use crate::subagents::model::{
    Card, Child, ChildState, Prompt, Run, SpawnSite, StopRoute, Tracking, SYNTHETIC_TOOL_NAME,
};
use crate::subagents::pair::{Pair, PairRef};
use crate::subagents::persist::StoreOp;
use crate::subagents::render::{self, CardChange, Step};
use crate::wire::keys::{self, Found};
use crate::wire::update_view::{UpdateFrame, UpdateParts};
use crate::wire::{self, write};

/// A child's event on its way into the child thread.
struct ChildEvent<'a> {
    kind: Cow<'a, str>,
    tool: Option<Cow<'a, str>>,
    title: Option<Cow<'a, str>>,
    has_status: bool,
    /// The update's JSON text as it will be replayed.
    text: Cow<'a, str>,
    /// The parsed update, when the router built one.
    value: Option<Value>,
}

fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

impl Engine {
    /// A `session/update` from the agent, given its `params` text (the general path).
    pub(super) fn agent_update(
        &mut self,
        frame: Bytes,
        params: &str,
        found: Found,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        match UpdateFrame::parse_params(params) {
            Some(f) => self.agent_update_parts(frame, &f.session_id, f.update, found, now, out),
            None => self.agent_update_slow(frame, params, found, now, out),
        }
    }

    /// A `session/update` whose update the one-pass reader left alone (escaped keys, odd
    /// shapes): its fields read from a parsed tree instead.
    fn agent_update_slow(
        &mut self,
        frame: Bytes,
        params: &str,
        found: Found,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        #[derive(Deserialize)]
        struct Head<'a> {
            #[serde(borrow, rename = "sessionId")]
            session_id: Cow<'a, str>,
            #[serde(borrow)]
            update: &'a RawValue,
        }
        let Ok(head) = serde_json::from_str::<Head<'_>>(params) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let raw = head.update.get();
        let Ok(v) = serde_json::from_str::<Value>(raw) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let field = |k: &str| match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(Cow::Borrowed(s.as_str()))),
            Some(_) => Err(()),
        };
        let (Ok(Some(kind)), Ok(tool_call_id), Ok(title), Ok(status)) = (
            field("sessionUpdate"),
            field("toolCallId"),
            field("title"),
            field("status"),
        ) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let meta = v.get("_meta").map(|_| raw);
        let parts = UpdateParts {
            raw,
            kind,
            tool_call_id,
            title,
            has_status: status.is_some(),
            meta,
        };
        self.agent_update_parts(frame, &head.session_id, parts, found, now, out);
    }

    /// A `session/update` taken apart: its session id and its update's fields and text.
    /// `found` says which keys the frame's bytes hold (see [`keys::Signals`]).
    pub(super) fn agent_update_parts(
        &mut self,
        frame: Bytes,
        session_id: &str,
        fields: UpdateParts<'_>,
        found: Found,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        let raw = fields.raw;
        // Borrowed from the frame (copies only when the agent escaped them): no allocation
        // for the fields every update is routed by.
        let sid = session_id;
        let (kind, tool) = (fields.kind.clone(), fields.tool_call_id.clone());
        let (kind, tool) = (kind.as_ref(), tool.as_deref());
        let parse_update = || serde_json::from_str::<Value>(raw).ok();
        let names_parent = found.has(keys::kind::PARENT);

        match kind {
            "subagent_update" | "subagent_spawned" | "subagent_state_update" => {
                // Zed's decoder rejects these kinds: they become cards, never pass through.
                self.standard_announce(sid, parse_update(), out);
                return;
            }
            "session_message" | "session_message_chunk" => {
                self.session_message(sid, parse_update(), out);
                return;
            }
            _ => {}
        }
        if let Some(cid) = self.reg.by_agent_child(sid).map(str::to_owned) {
            self.child_event_raw(&cid, sid, fields, found, frame, now, out);
            return;
        }
        if let Some(t) = &tool {
            if let Some(cid) = self.reg.by_spawn(sid, t).map(str::to_owned) {
                self.spawn_event(&cid, kind, parse_update(), out);
                return;
            }
            if let Some(owner) = self.reg.tool_owner(sid, t).map(str::to_owned) {
                // An explicit parent id wins over attribution by id: two children may use the
                // same tool call id.
                let named = if names_parent {
                    self.detector
                        .parent_ref_raw(raw, fields.meta)
                        .or_else(|| {
                            let update = parse_update()?;
                            self.detector.parent_ref(&update).map(str::to_owned)
                        })
                        .and_then(|r| self.reg.by_spawn(sid, &r).map(str::to_owned))
                } else {
                    None
                };
                let cid = named.unwrap_or(owner);
                self.child_event_raw(&cid, sid, fields, found, frame, now, out);
                return;
            }
        }
        // Cheap exit for the common case: nothing here can be a spawn or a child event.
        let may_spawn = kind == "tool_call" && found.has(keys::kind::SPAWN);
        if !names_parent && !may_spawn {
            out.push(Action::ToClient(frame));
            if let (Some(t), "tool_call") = (tool, kind) {
                self.parent_tools.insert(sid, t);
                self.release_held(sid, t, now, out);
            }
            return;
        }
        if names_parent && !may_spawn {
            // Most child events: the parent reference read straight from the bytes.
            if let Some(cid) = self
                .detector
                .parent_ref_raw(raw, fields.meta)
                .and_then(|r| self.reg.by_spawn(sid, &r))
                .map(str::to_owned)
            {
                self.child_event_raw(&cid, sid, fields, found, frame, now, out);
                return;
            }
        }
        let Some(update) = parse_update() else {
            out.push(Action::ToClient(frame));
            return;
        };
        if let Some(parent_ref) = self.detector.parent_ref(&update).map(str::to_owned) {
            match self.reg.by_spawn(sid, &parent_ref).map(str::to_owned) {
                Some(cid) => self.child_event(&cid, sid, Some(update), frame, now, out),
                // A spawn over a limit: its child's events pass through as the agent sent them.
                None if self.passthrough_spawns.contains(&PairRef(sid, &parent_ref)) => {
                    out.push(Action::ToClient(frame));
                }
                None => {
                    self.note(
                        out,
                        NoteLevel::Info,
                        format!(
                            "`{kind}` names spawn {parent_ref}, which this proxy has not seen: kept in session {sid}"
                        ),
                    );
                    out.push(Action::ToClient(frame));
                }
            }
            return;
        }
        if kind == "tool_call" {
            if let (Some(t), Some(tool_name)) = (&tool, self.detector.spawn_tool_name(&update)) {
                if self.spawn_allowed(sid, sid, t, out) {
                    // A spawn on a top-level session: the card lives in that session.
                    let site = SpawnSite {
                        agent_session: sid.to_owned(),
                        parent: sid.to_owned(),
                        top_session: sid.to_owned(),
                        spawn_id: (*t).to_owned(),
                    };
                    self.new_spawn(site, tool_name, update, out);
                } else {
                    out.push(Action::ToClient(frame));
                }
                self.release_held(sid, t, now, out);
                return;
            }
        }
        out.push(Action::ToClient(frame));
        if let (Some(t), "tool_call") = (tool, kind) {
            self.parent_tools.insert(sid, t);
            self.release_held(sid, t, now, out);
        }
    }

    /// A spawn tool call: create (or find, after a restart or in a replay) its child.
    fn new_spawn(
        &mut self,
        site: SpawnSite,
        tool_name: String,
        update: Value,
        out: &mut Vec<Action>,
    ) {
        let id = ids::child_session_id(&site.parent, &site.spawn_id);
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
    fn spawn_event(&mut self, cid: &str, kind: &str, update: Option<Value>, out: &mut Vec<Action>) {
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

    /// An event of a child's own: record it in the child thread (never in the parent).
    fn child_event(
        &mut self,
        cid: &str,
        agent_session: &str,
        update: Option<Value>,
        frame: Bytes,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        let Some(mut update) = update else {
            out.push(Action::ToClient(frame));
            return;
        };
        let kind = str_field(&update, "sessionUpdate").unwrap_or("").to_owned();
        let tool = str_field(&update, "toolCallId").map(str::to_owned);
        if let Some(t) = &tool {
            if let Some(grandchild) = self.reg.by_spawn(agent_session, t).map(str::to_owned) {
                self.spawn_event(&grandchild, &kind, Some(update), out);
                return;
            }
            if kind == "tool_call" {
                if let Some(tool_name) = self.detector.spawn_tool_name(&update) {
                    // A child spawning a child: the card lives in the child's thread.
                    let top = self
                        .reg
                        .get(cid)
                        .map(|c| c.top_session.clone())
                        .unwrap_or_default();
                    if self.spawn_allowed(cid, &top, t, out) {
                        let site = SpawnSite {
                            agent_session: agent_session.to_owned(),
                            parent: cid.to_owned(),
                            top_session: top,
                            spawn_id: t.clone(),
                        };
                        self.new_spawn(site, tool_name, update, out);
                        self.release_held(agent_session, t, now, out);
                        return;
                    }
                    // Over a limit: the spawn stays an ordinary tool call of this child.
                    self.passthrough_spawns.insert(Pair::new(agent_session, t));
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
        self.child_record(cid, agent_session, event, frame, now, out);
    }

    /// A child event taken as raw JSON: recorded as the agent sent it, without building a
    /// tree, unless it needs more than routing (a nested spawn, Zed keys to strip, a
    /// flavour that reads its fields).
    #[allow(clippy::too_many_arguments)]
    fn child_event_raw(
        &mut self,
        cid: &str,
        agent_session: &str,
        head: UpdateParts<'_>,
        found: Found,
        frame: Bytes,
        now: Millis,
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
            self.child_event(cid, agent_session, value, frame, now, out);
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
        self.child_record(cid, agent_session, event, frame, now, out);
    }

    /// Record a child's event and keep its card current.
    fn child_record(
        &mut self,
        cid: &str,
        agent_session: &str,
        event: ChildEvent<'_>,
        frame: Bytes,
        now: Millis,
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
        let replaying = self
            .reg
            .get(cid)
            .is_some_and(|c| self.replaying.contains(&c.top_session));
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.state == ChildState::Announced {
            child.state = ChildState::Running;
        }
        let replay_skip = child.replay_known();
        let new_step = kind == "tool_call"
            && tool
                .as_deref()
                .is_some_and(|t| !child.entries.knows_tool(t));
        let entries_before = child.entries.count();
        let standard = child.agent_child.is_some();
        // Cloned only on the less common paths below: most events need no parent id.
        let flat_parent = (self.cfg.zed.live_child_events == LiveChildEvents::Flat && !replay_skip)
            .then(|| child.parent.clone());
        if let (Some(t), "tool_call") = (tool.as_deref(), kind.as_ref()) {
            self.reg.set_tool_owner(agent_session, t, cid);
        }
        if let Some(parent) = flat_parent {
            if standard {
                let visible = self.visible_session(&parent);
                out.push(Action::ToClient(write::session_update_raw(&visible, &text)));
            } else {
                out.push(Action::ToClient(frame));
            }
        }
        if !replay_skip {
            self.record_text_in(cid, &kind, tool.as_deref(), &text, value.as_ref(), out);
        }
        let nested = self
            .reg
            .get(cid)
            .is_some_and(|c| self.reg.is_child(&c.parent));
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let card = if child.card_is_final() {
            // A background child keeps working after its card completed: extend its range.
            (child.entries.count() != entries_before).then(|| {
                child.end_turn();
                CardChange::Update(self.render.card_update(child, None, None))
            })
        } else if !replaying && !replay_skip {
            let step = Step {
                kind: &kind,
                new_tool_call: new_step,
                tool_status: kind == "tool_call_update" && has_status,
                new_entry: entries_before != child.entries.count(),
                title: title.as_deref(),
                nested,
            };
            self.render.child_step(child, &step)
        } else {
            None
        };
        match card {
            Some(CardChange::Update(card)) => {
                let parent = child.parent.clone();
                if child.card_is_final() {
                    self.persist_state(cid, out);
                }
                self.emit(&parent, card, out);
            }
            Some(CardChange::Line(line)) => out.push(Action::ToClient(line)),
            None => {}
        }
        if let (Some(t), "tool_call") = (tool.as_deref(), kind.as_ref()) {
            self.release_held(agent_session, t, now, out);
        }
    }

    /// Standard ACP `subagent_update` (and the earlier draft kinds) on session `on`.
    fn standard_announce(&mut self, on: &str, update: Option<Value>, out: &mut Vec<Action>) {
        let Some(update) = update else { return };
        let Some(agent_child) = str_field(&update, "sessionId")
            .or_else(|| str_field(&update, "subagentSessionId"))
            .map(str::to_owned)
        else {
            self.report_once(
                "subagent_update-without-session",
                out,
                "a subagent announcement without a child session id was dropped (the agent's subagent shape changed?)".into(),
            );
            return;
        };
        let (parent, top) = match self.reg.by_agent_child(on).and_then(|c| self.reg.get(c)) {
            Some(p) => (p.id.clone(), p.top_session.clone()),
            None => (on.to_owned(), on.to_owned()),
        };
        let cid = match self.reg.by_agent_child(&agent_child).map(str::to_owned) {
            Some(cid) => {
                let replaying = self
                    .reg
                    .get(&cid)
                    .is_some_and(|c| self.replaying.contains(&c.top_session));
                if replaying && self.replay_cards.insert(cid.clone()) {
                    // The parent is being reopened: its thread needs the card again.
                    if let Some(child) = self.reg.get(&cid) {
                        let card = self.render.synthesized_card(child);
                        let parent = child.parent.clone();
                        self.emit(&parent, card, out);
                    }
                }
                if let Some(t) = str_field(&update, "title") {
                    let child = self.reg.get_mut(&cid);
                    if let Some(child) = child.filter(|c| c.title != t) {
                        child.title = t.to_owned();
                        let card = (child.card != Card::Progress)
                            .then(|| self.render.card_update(child, None, Some(t)));
                        let parent = child.parent.clone();
                        if let Some(card) = card {
                            self.emit(&parent, card, out);
                        }
                    }
                }
                cid
            }
            None => {
                let spawn_id = ids::synthesized_spawn_id(&agent_child);
                let cid = ids::child_session_id(&parent, &spawn_id);
                let mut child = match self.reg.children.remove(&cid) {
                    Some(restored) => restored,
                    None => {
                        let site = SpawnSite {
                            agent_session: agent_child.clone(),
                            parent: parent.clone(),
                            top_session: top,
                            spawn_id,
                        };
                        let mut c = Child::new(cid.clone(), site, SYNTHETIC_TOOL_NAME.into());
                        c.state = ChildState::Running;
                        c
                    }
                };
                child.agent_child = Some(agent_child.clone());
                child.agent_session = agent_child.clone();
                if let Some(t) =
                    str_field(&update, "title").or_else(|| str_field(&update, "description"))
                {
                    child.title = t.to_owned();
                }
                if child.title.is_empty() {
                    child.title = "Subagent".into();
                }
                let card = self.render.synthesized_card(&child);
                if self.replaying.contains(&child.top_session) {
                    self.replay_cards.insert(cid.clone());
                }
                self.reg.insert(child);
                self.persist_child(&cid, out);
                self.emit(&parent, card, out);
                cid
            }
        };
        if let Some(child) = self.reg.get_mut(&cid) {
            if update.pointer("/capabilities/cancel").is_some() {
                child.stop_route = StopRoute::Direct;
            }
        }
        if self.reg.get(&cid).is_some_and(Child::replay_known) {
            // A replayed announcement of a child the proxy already holds: its state is known.
            return;
        }
        // v1: state {state, stopReason}; drafts: state "completed" | "failed" | ...
        let (state, stop) = match update.get("state") {
            Some(Value::Object(s)) => (
                s.get("state").and_then(Value::as_str).unwrap_or(""),
                s.get("stopReason").and_then(Value::as_str),
            ),
            Some(Value::String(s)) => (s.as_str(), None),
            _ => ("", None),
        };
        match (state, stop) {
            ("running", _) => self.resume_child(&cid, out),
            ("idle", None | Some("end_turn")) | ("completed", _) => {
                self.finish_child(&cid, ChildState::Completed, out)
            }
            ("idle", Some("cancelled")) | ("cancelled", _) => {
                self.finish_child(&cid, ChildState::Cancelled, out)
            }
            ("idle", Some(_)) | ("unknown" | "failed" | "disconnected", _) => {
                self.finish_child(&cid, ChildState::Failed, out)
            }
            _ => {}
        }
    }

    /// A standard `session_message`: the one addressed to a child is its task prompt (or a
    /// follow-up); replies and everything else are not for a client that did not opt in.
    fn session_message(&mut self, _on: &str, update: Option<Value>, out: &mut Vec<Action>) {
        let Some(update) = update else { return };
        let Some(recipient) = str_field(&update, "recipientSessionId") else {
            return;
        };
        let Some(cid) = self.reg.by_agent_child(recipient).map(str::to_owned) else {
            return;
        };
        let message_id = str_field(&update, "messageId").map(str::to_owned);
        let sender = str_field(&update, "senderSessionId").map(str::to_owned);
        let Some(child) = self.reg.get_mut(&cid) else {
            return;
        };
        if let Some(mid) = &message_id {
            if child.seen_messages.contains(mid) {
                return;
            }
            child.seen_messages.push(mid.clone());
        }
        if let (Some(mid), Some(sender)) = (&message_id, &sender) {
            // Claude also tags the child's events with this tool-use id: let those find it.
            self.reg.alias_spawn(sender, mid, &cid);
        }
        let blocks: Vec<Value> = match update.get("content") {
            Some(Value::Array(items)) => items.clone(),
            Some(single @ Value::Object(_)) => vec![single.clone()],
            _ => Vec::new(),
        };
        if self.reg.get(&cid).is_some_and(Child::replay_known) {
            // A replay of what the child thread already holds.
            return;
        }
        self.resume_child(&cid, out);
        for block in blocks {
            let update = json!({"sessionUpdate": "user_message_chunk", "content": block});
            self.record_in(&cid, &update, out);
        }
        if let Some(child) = self.reg.get_mut(&cid) {
            child.prompt = Prompt::Recorded;
        }
    }

    /// A finished child got new work (a continued subagent): open a new turn.
    fn resume_child(&mut self, cid: &str, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if !child.reopen_card() {
            return;
        }
        let card = self.render.card_update(child, Some("in_progress"), None);
        let parent = child.parent.clone();
        self.persist_state(cid, out);
        self.emit(&parent, card, out);
    }

    /// The child's turn ended: final status and index range on the card.
    pub(super) fn finish_child(&mut self, cid: &str, state: ChildState, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.card_is_final() {
            return;
        }
        let state = if child.cancel_asked() && state != ChildState::Completed {
            ChildState::Cancelled
        } else {
            state
        };
        let title = child.finish_card(state).then(|| child.title.clone());
        let mut card = self
            .render
            .card_update(child, Some(state.card_status()), title.as_deref());
        if state == ChildState::Cancelled {
            // Zed shows the first text content of a failed card as its error.
            card["content"] =
                json!([{"type": "content", "content": {"type": "text", "text": "Cancelled"}}]);
        }
        let parent = child.parent.clone();
        self.persist_state(cid, out);
        self.emit(&parent, card, out);
        self.retire(cid);
    }

    /// The parent's prompt turn ended: children whose cancel was asked for are cancelled now.
    pub(super) fn turn_ended(&mut self, session: &str, out: &mut Vec<Action>) {
        let mut cancelled: Vec<(String, String)> = self
            .reg
            .children
            .values()
            .filter(|c| c.top_session == session && c.cancel_asked() && !c.card_is_final())
            .map(|c| (c.spawn_id.clone(), c.id.clone()))
            .collect();
        // In a fixed order (the map's is random per process): the same input gives the same
        // output.
        cancelled.sort();
        for (_, cid) in cancelled {
            self.finish_child(&cid, ChildState::Cancelled, out);
        }
    }

    /// Put an update into a session's thread: a child's is recorded (and sent live if the
    /// client loaded it), a top-level session's goes to the client.
    fn emit(&mut self, session: &str, update: Value, out: &mut Vec<Action>) {
        if self.reg.is_child(session) {
            self.record_in(session, &update, out);
        } else {
            out.push(Action::ToClient(write::session_update(session, &update)));
        }
    }

    fn record_in(&mut self, cid: &str, update: &Value, out: &mut Vec<Action>) {
        let kind = str_field(update, "sessionUpdate").unwrap_or("").to_owned();
        let tool = str_field(update, "toolCallId").map(str::to_owned);
        self.record_text_in(
            cid,
            &kind,
            tool.as_deref(),
            &update.to_string(),
            Some(update),
            out,
        );
    }

    /// Append one update (its JSON text, and the parsed value when at hand) to a child's
    /// thread, persist it, and send it live if the client loaded the child.
    fn record_text_in(
        &mut self,
        cid: &str,
        kind: &str,
        tool: Option<&str>,
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
            child.tracking = Tracking::PassThrough;
            let msg = format!(
                "subagent {cid}: transcript reached max_transcript_bytes ({max}); its further events pass through to the parent unchanged"
            );
            self.note(out, NoteLevel::Warn, msg);
            return;
        }
        if self.render.reads_child_events() {
            match value {
                Some(v) => self.render.recorded(child, v),
                None => {
                    if let Ok(v) = serde_json::from_str::<Value>(text) {
                        self.render.recorded(child, &v);
                    }
                }
            }
        }
        // One copy, shared by the thread in memory and the store.
        let text: Arc<str> = Arc::from(text);
        child.record_kind(kind, tool, text.clone());
        if child.is_loaded() {
            out.push(Action::ToClient(write::session_update_raw(cid, &text)));
        }
        out.push(Action::Store(StoreOp::AppendUpdate {
            child_id: cid.to_owned(),
            update: text,
        }));
    }

    fn persist_child(&mut self, cid: &str, out: &mut Vec<Action>) {
        let Some(c) = self.reg.get(cid) else { return };
        out.push(Action::Store(StoreOp::UpsertChild {
            child_id: c.id.clone(),
            parent_session_id: c.parent.clone(),
            spawn_tool_call_id: c.spawn_id.clone(),
            agent: self.agent_name.clone(),
            cwd: c.cwd.clone(),
            title: (!c.title.is_empty()).then(|| c.title.clone()),
            state: c.state,
        }));
    }

    fn persist_state(&mut self, cid: &str, out: &mut Vec<Action>) {
        let Some(c) = self.reg.get(cid) else { return };
        out.push(Action::Store(StoreOp::SetState {
            child_id: c.id.clone(),
            state: c.state,
        }));
        out.push(Action::Store(StoreOp::SetIndices {
            child_id: c.id.clone(),
            entry_count: c.entries.count(),
            turns: c.turns.clone(),
        }));
    }

    /// The session the client knows for a child: the child once loaded, else the nearest
    /// loaded ancestor, else the top-level session.
    pub(super) fn visible_session(&self, cid: &str) -> String {
        let mut cur = cid.to_owned();
        for _ in 0..64 {
            match self.reg.get(&cur) {
                Some(c) if c.is_loaded() => return cur,
                Some(c) => cur = c.parent.clone(),
                None => return cur,
            }
        }
        cur
    }

    /// A child finished: keep only the most recent finished children in memory. The others
    /// are in the store, which serves their loads and restores them for parent replays. A
    /// child already waiting in the queue (one restored from the store, or finished earlier
    /// on this connection) keeps its place.
    pub(super) fn retire(&mut self, cid: &str) {
        if !self.reg.get(cid).is_some_and(|c| c.state.is_final())
            || self.finished.iter().any(|f| f == cid)
        {
            return;
        }
        self.finished.push_back(cid.to_owned());
        while self.finished.len() > self.cfg.limits.max_finished_in_memory {
            let Some(old) = self.finished.pop_front() else {
                break;
            };
            let busy = self
                .reg
                .children
                .values()
                .any(|c| c.parent == old && !c.state.is_final());
            if busy || !self.reg.get(&old).is_some_and(|c| c.state.is_final()) {
                continue;
            }
            self.reg.remove(&old);
            self.render.forget(&old);
            self.store_tried.remove(&old);
        }
    }

    /// Whether a new child under `parent` stays within the limits; says why not, once per
    /// session and limit.
    fn spawn_allowed(
        &mut self,
        parent: &str,
        top: &str,
        spawn_id: &str,
        out: &mut Vec<Action>,
    ) -> bool {
        let limits = self.cfg.limits;
        let depth = self.reg.depth(parent) + 1;
        let siblings = self
            .reg
            .children
            .values()
            .filter(|c| c.top_session == top)
            .count();
        let problem = if depth > limits.max_depth {
            Some(("max_depth", limits.max_depth))
        } else if siblings >= limits.max_subagents_per_session {
            Some((
                "max_subagents_per_session",
                limits.max_subagents_per_session,
            ))
        } else {
            None
        };
        let Some((limit, value)) = problem else {
            return true;
        };
        if top == parent {
            self.passthrough_spawns.insert(Pair::new(top, spawn_id));
        }
        self.report_once(
            &format!("{limit}:{top}"),
            out,
            format!("session {top}: {limit} ({value}) reached; spawn {spawn_id} and its events pass through unchanged"),
        );
        false
    }

    /// A request from the agent to the client (`session/request_permission`, `fs/*`,
    /// `terminal/*`, ...): sent under a session the client knows, or held (`may_hold`) while
    /// it may still turn out to be a child's.
    pub(super) fn route_agent_request(
        &mut self,
        frame: Bytes,
        now: Millis,
        may_hold: bool,
        out: &mut Vec<Action>,
    ) {
        // Borrowed: a permission request carries a whole tool call (often kilobytes); a tree
        // is built only when the request must be rewritten or a parent key must be read.
        #[derive(Deserialize)]
        struct Request<'a> {
            #[serde(borrow, default)]
            method: Option<Cow<'a, str>>,
            #[serde(borrow, default)]
            params: Option<Params<'a>>,
        }
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow, rename = "sessionId", default)]
            session_id: Option<Cow<'a, str>>,
            #[serde(borrow, rename = "toolCall", default)]
            tool_call: Option<&'a RawValue>,
        }
        #[derive(Deserialize)]
        struct ToolCallHead<'a> {
            #[serde(borrow, rename = "toolCallId", default)]
            tool_call_id: Option<Cow<'a, str>>,
        }
        let body = frame.clone();
        let Ok(req) = serde_json::from_slice::<Request<'_>>(wire::line_body(&body)) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let method = req.method.as_deref().unwrap_or("").to_owned();
        let Some(params) = req.params else {
            out.push(Action::ToClient(frame));
            return;
        };
        let Some(sid) = params.session_id.map(Cow::into_owned) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let tool_raw = params.tool_call.map(RawValue::get);
        let tool = tool_raw
            .and_then(|t| serde_json::from_str::<ToolCallHead<'_>>(t).ok())
            .and_then(|h| h.tool_call_id)
            .map(Cow::into_owned);
        let owner = self
            .reg
            .by_agent_child(&sid)
            .or_else(|| tool.as_deref().and_then(|t| self.reg.tool_owner(&sid, t)))
            .map(str::to_owned)
            .or_else(|| {
                let raw = tool_raw
                    .filter(|t| self.detector.scan(t.as_bytes()).has(keys::kind::PARENT))?;
                let tool_call = serde_json::from_str::<Value>(raw).ok()?;
                let parent = self.detector.parent_ref(&tool_call)?;
                self.reg.by_spawn(&sid, parent).map(str::to_owned)
            });
        match owner {
            Some(cid) => {
                let target = self.visible_session(&cid);
                let rewritten = (target != sid).then(|| wire::parse_value(&frame)).flatten();
                match rewritten {
                    Some(mut msg) => {
                        msg["params"]["sessionId"] = json!(target);
                        out.push(Action::ToClient(write::line(&msg)));
                    }
                    None => out.push(Action::ToClient(frame)),
                }
            }
            None => {
                let is_spawn = tool
                    .as_deref()
                    .is_some_and(|t| self.reg.by_spawn(&sid, t).is_some());
                let parents = tool
                    .as_deref()
                    .is_some_and(|t| self.parent_tools.contains(&sid, t));
                let hold = may_hold
                    && method == "session/request_permission"
                    && !is_spawn
                    && !parents
                    && !self.replaying.contains(&sid)
                    && self.reg.has_open_legacy_child(&sid)
                    && self.held.len() < self.cfg.zed.max_held_permissions;
                match (hold, tool) {
                    (true, Some(tool_call_id)) => self.held.push(super::HeldRequest {
                        session: sid,
                        tool_call_id,
                        frame,
                        deadline: now + self.cfg.zed.permission_hold_ms,
                    }),
                    _ => out.push(Action::ToClient(frame)),
                }
            }
        }
    }

    /// A tool call was seen: permission requests held for it can be routed now.
    fn release_held(
        &mut self,
        session: &str,
        tool_call_id: &str,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        if self.held.is_empty() {
            return;
        }
        let (ready, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.session == session && h.tool_call_id == tool_call_id);
        self.held = keep;
        for h in ready {
            self.route_agent_request(h.frame, now, false, out);
        }
    }
}
