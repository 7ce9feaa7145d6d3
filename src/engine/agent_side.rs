//! What the agent sends, in Zed mode: updates are sorted into parent and child threads,
//! spawn cards get Zed's meta, and requests reach the client under a session it knows.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{frames, Action, Engine, LiveChildEvents, Millis, NoteLevel};
use crate::subagents::ids;
use crate::subagents::model::{Child, ChildState};
use crate::subagents::persist::StoreOp;
use crate::subagents::zed;

/// The routing-relevant head of `session/update` params, borrowed.
#[derive(Deserialize)]
struct UpdateHead<'a> {
    #[serde(borrow, rename = "sessionId")]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    update: UpdateKind<'a>,
}

#[derive(Deserialize)]
struct UpdateKind<'a> {
    #[serde(borrow, rename = "sessionUpdate")]
    kind: Cow<'a, str>,
    #[serde(borrow, rename = "toolCallId", default)]
    tool_call_id: Option<Cow<'a, str>>,
}

fn parse_update(params: &str) -> Option<Value> {
    let mut v: Value = serde_json::from_str(params).ok()?;
    Some(v.get_mut("update")?.take())
}

fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

impl Engine {
    /// A `session/update` from the agent.
    pub(super) fn agent_update(
        &mut self,
        frame: Bytes,
        params: &str,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        let Ok(head) = serde_json::from_str::<UpdateHead<'_>>(params) else {
            out.push(Action::ToClient(frame));
            return;
        };
        let sid = head.session_id.into_owned();
        let kind = head.update.kind.into_owned();
        let tool = head.update.tool_call_id.map(Cow::into_owned);

        match kind.as_str() {
            "subagent_update" | "subagent_spawned" | "subagent_state_update" => {
                // Zed's decoder rejects these kinds: they become cards, never pass through.
                self.standard_announce(&sid, parse_update(params), out);
                return;
            }
            "session_message" | "session_message_chunk" => {
                self.session_message(&sid, parse_update(params), out);
                return;
            }
            _ => {}
        }
        if let Some(cid) = self.reg.by_agent_child(&sid).map(str::to_owned) {
            self.child_event(&cid, &sid, parse_update(params), frame, now, out);
            return;
        }
        if let Some(t) = &tool {
            if let Some(cid) = self.reg.by_spawn(&sid, t).map(str::to_owned) {
                self.spawn_event(&cid, &kind, parse_update(params), out);
                return;
            }
            if let Some(owner) = self.reg.tool_owner(&sid, t).map(str::to_owned) {
                let update = parse_update(params);
                // An explicit parent id wins over attribution by id: two children may use the
                // same tool call id.
                let cid = update
                    .as_ref()
                    .and_then(|u| self.detector.parent_ref(u))
                    .and_then(|r| self.reg.by_spawn(&sid, r))
                    .map_or(owner, str::to_owned);
                self.child_event(&cid, &sid, update, frame, now, out);
                return;
            }
        }
        // Cheap exit for the common case: nothing here can be a spawn or a child event.
        if kind != "tool_call" && !self.detector.may_name_parent(&frame) {
            out.push(Action::ToClient(frame));
            return;
        }
        let Some(update) = parse_update(params) else {
            out.push(Action::ToClient(frame));
            return;
        };
        if let Some(parent_ref) = self.detector.parent_ref(&update).map(str::to_owned) {
            match self.reg.by_spawn(&sid, &parent_ref).map(str::to_owned) {
                Some(cid) => self.child_event(&cid, &sid, Some(update), frame, now, out),
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
                self.new_spawn(&sid, &sid, &sid, t, tool_name, update, out);
                self.release_held(&sid, t, now, out);
                return;
            }
        }
        out.push(Action::ToClient(frame));
        if let (Some(t), "tool_call") = (&tool, kind.as_str()) {
            self.release_held(&sid, t, now, out);
        }
    }

    /// A spawn tool call: create (or find, after a restart or in a replay) its child.
    #[allow(clippy::too_many_arguments)]
    fn new_spawn(
        &mut self,
        root: &str,
        parent: &str,
        top: &str,
        spawn_id: &str,
        tool_name: String,
        update: Value,
        out: &mut Vec<Action>,
    ) {
        let id = ids::child_session_id(parent, spawn_id);
        match self.reg.get_mut(&id) {
            Some(existing) => existing.tool_name = tool_name,
            None => {
                let mut child = Child::new(
                    id.clone(),
                    parent.into(),
                    root.into(),
                    top.into(),
                    spawn_id.into(),
                    tool_name,
                );
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
        if !child.prompt_recorded {
            if let Some(prompt) = self.detector.prompt(&update) {
                child.prompt_recorded = true;
                if !child.replay_skip {
                    to_record.push(zed::user_text(prompt));
                }
            }
        }
        child.background |= self.detector.is_background(&update);
        let status = str_field(&update, "status").map(str::to_owned);
        let mut finished = false;
        match status.as_deref() {
            Some("completed" | "failed") if !child.card_final => {
                let completed = status.as_deref() == Some("completed");
                if completed
                    && !child.background
                    && !child.replay_skip
                    && !child.entries.last_is_assistant()
                {
                    // Agents that do not stream the child's prose still report its answer:
                    // it closes the child thread.
                    if let Some(text) = self.detector.result_text(&update) {
                        to_record.push(zed::agent_text(&text));
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
            child.end_turn();
            child.card_final = true;
            child.state = if child.background {
                // The agent completed the card at launch; the child runs on.
                ChildState::Running
            } else if child.cancel_requested {
                ChildState::Cancelled
            } else if status.as_deref() == Some("completed") {
                ChildState::Completed
            } else {
                ChildState::Failed
            };
            if child.progress_shown {
                child.progress_shown = false;
                update["title"] = json!(child.title);
            }
        }
        zed::inject_meta(&mut update, child, kind == "tool_call");
        let parent = child.parent.clone();
        if finished || !to_record.is_empty() {
            self.persist_state(cid, out);
        }
        self.emit(&parent, update, out);
    }

    /// An event of a child's own: record it in the child thread (never in the parent).
    fn child_event(
        &mut self,
        cid: &str,
        root: &str,
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
            if let Some(grandchild) = self.reg.by_spawn(root, t).map(str::to_owned) {
                self.spawn_event(&grandchild, &kind, Some(update), out);
                return;
            }
            if kind == "tool_call" {
                if let Some(tool_name) = self.detector.spawn_tool_name(&update) {
                    // A child spawning a child: the card lives in the child's thread.
                    let top = self.reg.get(cid).map(|c| c.top.clone()).unwrap_or_default();
                    self.new_spawn(root, cid, &top, t, tool_name, update, out);
                    self.release_held(root, t, now, out);
                    return;
                }
            }
        }
        if kind == "tool_call" || kind == "tool_call_update" {
            zed::strip_meta(&mut update);
        }
        let replaying = self
            .reg
            .get(cid)
            .is_some_and(|c| self.replaying.contains(&c.top));
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.state == ChildState::Announced {
            child.state = ChildState::Running;
        }
        let replay_skip = child.replay_skip;
        let new_step = kind == "tool_call"
            && tool
                .as_deref()
                .is_some_and(|t| !child.entries.knows_tool(t));
        let entries_before = child.entries.count();
        let parent = child.parent.clone();
        let standard = child.agent_child.is_some();
        if let (Some(t), "tool_call") = (&tool, kind.as_str()) {
            self.reg.set_tool_owner(root, t, cid);
        }
        if !replay_skip {
            self.record_in(cid, &update, out);
        }
        if self.cfg.live_child_events == LiveChildEvents::Flat && !replay_skip {
            if standard {
                let visible = self.visible_session(&parent);
                out.push(Action::ToClient(zed::notification(&visible, &update)));
            } else {
                out.push(Action::ToClient(frame));
            }
        }
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let mut card: Option<Value> = None;
        if child.card_final {
            // A background child keeps working after its card completed: extend its range.
            if child.entries.count() != entries_before {
                child.end_turn();
                card = Some(zed::card_update(child, None, None));
            }
        } else if new_step && self.cfg.live_progress && !replaying && !replay_skip {
            child.steps += 1;
            child.activity = str_field(&update, "title").map(str::to_owned);
            child.progress_shown = true;
            let title = zed::progress_title(child);
            card = Some(zed::card_update(child, None, Some(&title)));
        }
        if let Some(card) = card {
            if child.card_final {
                self.persist_state(cid, out);
            }
            self.emit(&parent, card, out);
        }
        if let (Some(t), "tool_call") = (&tool, kind.as_str()) {
            self.release_held(root, t, now, out);
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
            Some(p) => (p.id.clone(), p.top.clone()),
            None => (on.to_owned(), on.to_owned()),
        };
        let cid = match self.reg.by_agent_child(&agent_child).map(str::to_owned) {
            Some(cid) => {
                if let Some(t) = str_field(&update, "title") {
                    let child = self.reg.get_mut(&cid);
                    if let Some(child) = child.filter(|c| c.title != t) {
                        child.title = t.to_owned();
                        let card =
                            (!child.progress_shown).then(|| zed::card_update(child, None, Some(t)));
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
                        let mut c = Child::new(
                            cid.clone(),
                            parent.clone(),
                            agent_child.clone(),
                            top,
                            spawn_id,
                            zed::SYNTHETIC_TOOL_NAME.into(),
                        );
                        c.state = ChildState::Running;
                        c
                    }
                };
                child.agent_child = Some(agent_child.clone());
                child.root = agent_child.clone();
                if let Some(t) =
                    str_field(&update, "title").or_else(|| str_field(&update, "description"))
                {
                    child.title = t.to_owned();
                }
                if child.title.is_empty() {
                    child.title = "Subagent".into();
                }
                let card = zed::synthesized_card(&child);
                self.reg.insert(child);
                self.persist_child(&cid, out);
                self.emit(&parent, card, out);
                cid
            }
        };
        if let Some(child) = self.reg.get_mut(&cid) {
            if update.pointer("/capabilities/cancel").is_some() {
                child.can_cancel = true;
            }
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
        self.resume_child(&cid, out);
        let skip = self.reg.get(&cid).is_some_and(|c| c.replay_skip);
        if !skip {
            for block in blocks {
                self.record_in(
                    &cid,
                    &json!({"sessionUpdate": "user_message_chunk", "content": block}),
                    out,
                );
            }
        }
        if let Some(child) = self.reg.get_mut(&cid) {
            child.prompt_recorded = true;
        }
    }

    /// A finished child got new work (a continued subagent): open a new turn.
    fn resume_child(&mut self, cid: &str, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if !child.card_final {
            return;
        }
        child.card_final = false;
        child.cancel_requested = false;
        child.state = ChildState::Running;
        child.start_turn();
        let card = zed::card_update(child, Some("in_progress"), None);
        let parent = child.parent.clone();
        self.persist_state(cid, out);
        self.emit(&parent, card, out);
    }

    /// The child's turn ended: final status and index range on the card.
    pub(super) fn finish_child(&mut self, cid: &str, state: ChildState, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        if child.card_final {
            return;
        }
        let state = if child.cancel_requested && state != ChildState::Completed {
            ChildState::Cancelled
        } else {
            state
        };
        child.end_turn();
        child.card_final = true;
        child.state = state;
        let title = std::mem::take(&mut child.progress_shown).then(|| child.title.clone());
        let mut card = zed::card_update(child, Some(state.card_status()), title.as_deref());
        if state == ChildState::Cancelled {
            // Zed shows the first text content of a failed card as its error.
            card["content"] =
                json!([{"type": "content", "content": {"type": "text", "text": "Cancelled"}}]);
        }
        let parent = child.parent.clone();
        self.persist_state(cid, out);
        self.emit(&parent, card, out);
    }

    /// The parent's prompt turn ended: children whose cancel was asked for are cancelled now.
    pub(super) fn turn_ended(&mut self, session: &str, out: &mut Vec<Action>) {
        let cancelled: Vec<String> = self
            .reg
            .children
            .values()
            .filter(|c| c.top == session && c.cancel_requested && !c.card_final)
            .map(|c| c.id.clone())
            .collect();
        for cid in cancelled {
            self.finish_child(&cid, ChildState::Cancelled, out);
        }
    }

    /// Put an update into a session's thread: a child's is recorded (and sent live if the
    /// client loaded it), a top-level session's goes to the client.
    fn emit(&mut self, session: &str, update: Value, out: &mut Vec<Action>) {
        if self.reg.is_child(session) {
            self.record_in(session, &update, out);
        } else {
            out.push(Action::ToClient(zed::notification(session, &update)));
        }
    }

    fn record_in(&mut self, cid: &str, update: &Value, out: &mut Vec<Action>) {
        let Some(child) = self.reg.get_mut(cid) else {
            return;
        };
        let text = child.record(update);
        if child.loaded {
            out.push(Action::ToClient(zed::notification_raw(cid, &text)));
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
            state: c.state.as_str().to_owned(),
        }));
    }

    fn persist_state(&mut self, cid: &str, out: &mut Vec<Action>) {
        let Some(c) = self.reg.get(cid) else { return };
        out.push(Action::Store(StoreOp::SetState {
            child_id: c.id.clone(),
            state: c.state.as_str().to_owned(),
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
                Some(c) if c.loaded => return cur,
                Some(c) => cur = c.parent.clone(),
                None => return cur,
            }
        }
        cur
    }

    /// A request from the agent to the client (`session/request_permission`, `fs/*`,
    /// `terminal/*`, ...).
    pub(super) fn agent_request(
        &mut self,
        _method: &str,
        frame: Bytes,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        self.route_agent_request(frame, now, true, out);
    }

    pub(super) fn route_agent_request(
        &mut self,
        frame: Bytes,
        now: Millis,
        may_hold: bool,
        out: &mut Vec<Action>,
    ) {
        let Ok(mut msg) =
            serde_json::from_slice::<Value>(crate::transport::framing::line_body(&frame))
        else {
            out.push(Action::ToClient(frame));
            return;
        };
        let method = str_field(&msg, "method").unwrap_or("").to_owned();
        let Some(sid) = msg
            .pointer("/params/sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            out.push(Action::ToClient(frame));
            return;
        };
        let tool_call = msg.pointer("/params/toolCall");
        let tool = tool_call
            .and_then(|t| str_field(t, "toolCallId"))
            .map(str::to_owned);
        let owner = self
            .reg
            .by_agent_child(&sid)
            .or_else(|| tool.as_deref().and_then(|t| self.reg.tool_owner(&sid, t)))
            .or_else(|| {
                tool_call
                    .and_then(|t| self.detector.parent_ref(t))
                    .and_then(|r| self.reg.by_spawn(&sid, r))
            })
            .map(str::to_owned);
        match owner {
            Some(cid) => {
                let target = self.visible_session(&cid);
                if target == sid {
                    out.push(Action::ToClient(frame));
                } else {
                    msg["params"]["sessionId"] = json!(target);
                    out.push(Action::ToClient(frames::line(&msg)));
                }
            }
            None => {
                let is_spawn = tool
                    .as_deref()
                    .is_some_and(|t| self.reg.by_spawn(&sid, t).is_some());
                let hold = may_hold
                    && method == "session/request_permission"
                    && !is_spawn
                    && !self.replaying.contains(&sid)
                    && self.reg.has_open_legacy_child(&sid)
                    && self.held.len() < self.cfg.max_held_permissions;
                match (hold, tool) {
                    (true, Some(tool_call_id)) => self.held.push(super::HeldRequest {
                        session: sid,
                        tool_call_id,
                        frame,
                        deadline: now + self.cfg.permission_hold_ms,
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
