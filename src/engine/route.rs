//! Where an agent's `session/update` goes: most pass untouched (decided on the bytes), the
//! rest are sorted into spawns, child events and the parent's own updates.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::quirks::bind::ByRef;
use super::tool_order::ToolFrame;
use super::{Action, Engine, Mode, NoteLevel};
use crate::subagents::ids::{AgentSessionId, ClientSessionId};
use crate::subagents::model::SpawnSite;
use crate::subagents::preset::detect::{Detector, Spawn};
use crate::wire::keys::{self, Found};
use crate::wire::update_view::{UpdateFrame, UpdateParts};

impl Engine {
    /// The hot path: most agent frames (message chunks, plans, usage) need no parse at all.
    /// A frame without an `"id"` key is no request or response; one that also names no tool
    /// call, no subagent kind, no parent reference (and no standard child is known, whose
    /// traffic is told apart by session id) cannot concern a subagent. The byte tests can
    /// only err towards the slow path: inside JSON strings quotes are escaped, so these keys
    /// cannot hide, while look-alikes in text merely cost a parse. The caller has already
    /// checked that the frame has no `"id"` key.
    pub(super) fn passes_untouched(&self, frame: &[u8], found: keys::Found) -> bool {
        use keys::kind;
        match self.mode {
            None | Some(Mode::Off) => true,
            Some(Mode::Zed | Mode::Acp | Mode::Transcript) => {
                if self.replayed_spawns.any() {
                    // Replayed spawns are held: what follows them must not overtake them.
                    return false;
                }
                if self.reg.has_agent_children()
                    || found
                        .has(kind::SUBAGENT | kind::SESSION_MESSAGE | kind::PARENT | kind::SIBLING)
                    || self.agent_replays.may_name_one(frame)
                {
                    return false;
                }
                if found.has(kind::END) && self.reg.has_open_legacy_children() {
                    // May end a background child.
                    return false;
                }
                if (self.detector.any_timing() || self.detector.any_agent_turn_end())
                    && self.reg.has_open_legacy_children()
                {
                    // May be a child's by timing, or the agent's own turn that ends one (a
                    // preset's opt-in).
                    return false;
                }
                if !found.has(kind::TOOL_CALL) {
                    return true;
                }
                if !found.has(kind::NEW_TOOL_CALL) {
                    // Only updates of tool calls: one concerns a subagent only when it names a
                    // spawn or a child's tool call, or is shaped like a spawn itself (Gemini
                    // fails a spawn it never announced). The parent's updates while children
                    // run, most bytes of a delegating turn, pass without a parse.
                    return !found.has(kind::SPAWN) && !self.reg.may_know_tool_in(frame);
                }
                // A tool call: it may start a subagent, belong to a child, or be waited for
                // by a held permission request (then the parent's tool calls are tracked).
                self.held.is_empty()
                    && !self.reg.has_open_legacy_children()
                    && !found.has(kind::SPAWN)
                    && !self.reg.may_know_tool_in(frame)
            }
        }
    }

    /// A `session/update` from the agent, given its `params` text (the general path).
    pub(super) fn agent_update(
        &mut self,
        frame: Bytes,
        params: &str,
        found: Found,
        out: &mut Vec<Action>,
    ) {
        match UpdateFrame::parse_params(params) {
            Some(f) => self.agent_update_parts(frame, &f.session_id, f.update, found, out),
            None => self.agent_update_slow(frame, params, found, out),
        }
    }

    /// A `session/update` whose update the one-pass reader left alone (escaped keys, odd
    /// shapes): its fields read from a parsed tree instead.
    pub(super) fn agent_update_slow(
        &mut self,
        frame: Bytes,
        params: &str,
        found: Found,
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
        self.agent_update_parts(frame, &head.session_id, parts, found, out);
    }

    /// A `session/update` taken apart: its session id and its update's fields and text.
    /// `found` says which keys the frame's bytes hold (see [`keys::KeySet`]).
    pub(super) fn agent_update_parts(
        &mut self,
        frame: Bytes,
        session_id: &str,
        fields: UpdateParts<'_>,
        found: Found,
        out: &mut Vec<Action>,
    ) {
        let raw = fields.raw;
        // Borrowed from the frame (copies only when the agent escaped them): no allocation
        // for the fields every update is routed by.
        let sid = session_id;
        let (kind, tool) = (fields.kind.clone(), fields.tool_call_id.clone());
        let (kind, tool) = (kind.as_ref(), tool.as_deref());
        let parse_update = || serde_json::from_str::<Value>(raw).ok();
        let frame = match self.mode {
            // The agent's own standard subagents go to such a client as they are.
            Some(Mode::Acp) => match self.acp_native(frame, sid, kind, raw, out) {
                Some(frame) => frame,
                None => return,
            },
            _ => frame,
        };
        if self.detector.any_timing() {
            // Whether a message begun in the parent's thread runs on (`quirks::timing`).
            self.parent_messages.see(sid, kind);
        }
        let names_parent = found.has(keys::kind::PARENT);
        let tf = ToolFrame {
            kind,
            tool,
            titled: fields.title.is_some(),
        };

        if self.replayed_spawns.holds(sid) {
            // Replayed spawns held for their ends, which may name the stored children they
            // are; any other frame but a further spawn lets them go on first.
            if let Some(t) = tool
                .filter(|t| kind == "tool_call_update" && self.replayed_spawns.holds_spawn(sid, t))
            {
                if let Some(update) = parse_update() {
                    self.held_spawn_ended(sid, t, update, out);
                    return;
                }
            }
            let spawn = kind == "tool_call"
                && parse_update().is_some_and(|u| self.detector.spawn(&u).is_some());
            if !spawn {
                self.release_held_spawns(sid, out);
            }
        }
        if let Some(cid) = self.agent_replays.child_of(sid).cloned() {
            if self.followed_live(&cid, sid, kind) {
                // A running background child fetched at its launch streams on (Kilo).
                self.child_event_raw(&cid, sid, fields, found, frame, out);
                return;
            }
            // A child the agent replays for the proxy's fetch (OpenCode).
            self.replayed_update(&cid, sid, &fields, out);
            return;
        }
        if self.detector.any_agent_turn_end() && self.reg.has_open_legacy_children() {
            // The agent's own turn may end a background child (`end_on_agent_turn`).
            self.agent_turn(sid, kind, out);
        }
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
        if found.has(keys::kind::END) {
            // A later notice that a background child ended: it ends the child and goes into
            // its thread.
            if let Some(update) = parse_update() {
                if self.end_signal(sid, &update, out) {
                    return;
                }
            }
        }
        if let Some(cid) = self.reg.by_agent_child(sid).cloned() {
            self.child_event_raw(&cid, sid, fields, found, frame, out);
            return;
        }
        if found.has(keys::kind::SIBLING)
            && matches!(kind, "tool_call" | "tool_call_update")
            && tool.is_some_and(|t| self.sibling_update(sid, t, raw, out))
        {
            return;
        }
        if let Some(t) = &tool {
            if let Some(cid) = self.reg.by_spawn(sid, t).cloned() {
                if kind == "tool_call_update" && self.progress_frame(&cid, &fields, out) {
                    return;
                }
                let update = parse_update();
                if let Some(u) = update.as_ref().filter(|_| self.detector.any_timing()) {
                    // A child's answer may end a message left in the parent (`quirks::timing`).
                    self.spawn_update_seen(sid, &cid, u);
                }
                self.spawn_event(&cid, kind, update, out);
                return;
            }
            if let Some(owner) = self.reg.tool_owner(sid, t).cloned() {
                // An explicit parent id wins over attribution by id: two children may use the
                // same tool call id.
                let named = if names_parent {
                    self.detector
                        .parent_ref_raw(raw, fields.meta)
                        .or_else(|| {
                            let update = parse_update()?;
                            self.detector.parent_ref(&update).map(str::to_owned)
                        })
                        .and_then(|r| self.reg.by_spawn(sid, &r).cloned())
                } else {
                    None
                };
                let cid = named.unwrap_or(owner);
                self.child_event_raw(&cid, sid, fields, found, frame, out);
                return;
            }
        }
        if names_parent && self.detector.any_child_ref() {
            // The agent's own child id on the event (Copilot's agentId), bound to a spawn.
            if let Some(update) = parse_update() {
                match self.child_by_ref(sid, update, &frame, out) {
                    ByRef::Child(cid, update) => {
                        self.child_event(&cid, sid, Some(update), frame, out);
                        return;
                    }
                    // The agent's record may still tie the id: the event waits for it.
                    ByRef::Held => return,
                    ByRef::Unbound => {}
                }
            }
        }
        // A card another link made (or one the agent claims): never a spawn here.
        let agent_card = matches!(kind, "tool_call" | "tool_call_update")
            && found.has(keys::kind::SUBAGENT)
            && keys::has(&keys::SUBAGENT_INFO, raw.as_bytes());
        if agent_card && !names_parent {
            self.agent_card(frame, sid, kind, tool, raw, out);
            return;
        }
        // Cheap exit for the common case: nothing here can be a spawn or a child event.
        let may_spawn = found.has(keys::kind::SPAWN)
            && (kind == "tool_call" || (kind == "tool_call_update" && fields.has_status));
        if !names_parent && !may_spawn && self.detector.any_timing() {
            if let Some(cid) = self.timed_child(sid, kind, tool) {
                // Behind child events that wait for the agent's record to tie their id, in
                // order: where it goes is decided once they went.
                if let Some(update) = parse_update().filter(|_| self.ties_awaited_in(sid)) {
                    self.wait_for_ties(sid, &frame, update);
                    return;
                }
                let update = parse_update().map(|u| self.mark_inferred(&cid, u, "timing", out));
                self.child_event(&cid, sid, update, frame, out);
                return;
            }
        }
        if !names_parent && !may_spawn {
            if self.detector.any_timing() {
                self.left_in_parent(sid, kind, raw);
            }
            self.pass_to_top_level(frame, tf, out);
            if let (Some(t), "tool_call") = (tool, kind) {
                self.held.parent_tool(sid, t);
                self.release_held(sid, t, out);
            }
            return;
        }
        if names_parent && !may_spawn {
            // Most child events: the parent reference read straight from the bytes.
            if let Some(cid) = self
                .detector
                .parent_ref_raw(raw, fields.meta)
                .and_then(|r| self.reg.by_spawn(sid, &r))
                .cloned()
            {
                self.child_event_raw(&cid, sid, fields, found, frame, out);
                return;
            }
        }
        let Some(update) = parse_update() else {
            out.push(Action::ToClient(frame));
            return;
        };
        if let Some(parent_ref) = self.detector.parent_ref(&update).map(str::to_owned) {
            match self.reg.by_spawn(sid, &parent_ref).cloned() {
                Some(cid) => self.child_event(&cid, sid, Some(update), frame, out),
                None if agent_card => self.agent_card(frame, sid, kind, tool, raw, out),
                // A spawn over a limit: its child's events pass through as the agent sent them.
                None if self.passthrough_spawns.contains(sid, &parent_ref) => {
                    self.pass_to_top_level(frame, tf, out);
                }
                None => {
                    self.note(
                        out,
                        NoteLevel::Info,
                        format!(
                            "`{kind}` names spawn {parent_ref}, which this proxy has not seen: kept in session {sid}"
                        ),
                    );
                    self.pass_to_top_level(frame, tf, out);
                }
            }
            return;
        }
        if agent_card {
            self.agent_card(frame, sid, kind, tool, raw, out);
            return;
        }
        // An update of a tool call the proxy let pass (an ordinary one, or a spawn over a
        // limit) is no spawn of its own.
        let seen = tool.is_some_and(|t| {
            kind != "tool_call"
                && (self.held.is_parent_tool(sid, t) || self.passthrough_spawns.contains(sid, t))
        });
        let spawn = if seen {
            None
        } else {
            spawn_in(&self.detector, kind, update)
        };
        if let (Some(t), Some((spawn, update))) = (tool, spawn) {
            if self.spawn_allowed(sid, sid, t, out) {
                // A spawn on a top-level session: the card lives in that session.
                let site = SpawnSite {
                    agent_session: AgentSessionId::new(sid.to_owned()),
                    parent: ClientSessionId::new(sid.to_owned()),
                    top_session: ClientSessionId::new(sid.to_owned()),
                    spawn_id: t.to_owned(),
                };
                if kind == "tool_call"
                    && self.hold_replayed_spawn(&site, &spawn.tool_name, spawn.preset, &update)
                {
                    // Its end says whether it is a stored child's, replayed under a new id.
                    return;
                }
                self.release_held_spawns(sid, out);
                self.new_spawn(site, spawn.tool_name, spawn.preset, update, out);
            } else {
                self.pass_to_top_level(frame, tf, out);
            }
            self.release_held(sid, t, out);
            return;
        }
        self.pass_to_top_level(frame, tf, out);
        if let (Some(t), "tool_call") = (tool, kind) {
            self.held.parent_tool(sid, t);
            self.release_held(sid, t, out);
        }
    }
}

/// The spawn `update` starts, if it starts one, with the update as the spawn card's first
/// frame. A `tool_call` may; so may a `failed` update of a tool call never announced (Gemini
/// reports a subagent its policy refused that way): the card is created from it.
pub(super) fn spawn_in(detector: &Detector, kind: &str, update: Value) -> Option<(Spawn, Value)> {
    let unannounced_failure = kind == "tool_call_update"
        && update.get("status").and_then(Value::as_str) == Some("failed");
    if kind != "tool_call" && !unannounced_failure {
        return None;
    }
    let spawn = detector.spawn(&update)?;
    let mut update = update;
    if unannounced_failure {
        update["sessionUpdate"] = Value::from("tool_call");
    }
    Some((spawn, update))
}
