//! Requests from the agent to the client (`session/request_permission`, `fs/*`,
//! `terminal/*`): sent under a session the client knows, or held briefly while a
//! permission request may still turn out to be a child's.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{Action, Engine, Millis, NoteLevel};
use crate::wire::keys;
use crate::wire::{self, write};

/// A permission request waiting to learn which session it belongs to.
#[derive(Debug)]
pub(super) struct HeldRequest {
    session: String,
    tool_call_id: String,
    pub(super) frame: Bytes,
    deadline: Millis,
}

/// A request from the agent that no child owns (yet).
struct Unowned {
    method: String,
    session: String,
    tool: Option<String>,
    frame: Bytes,
}

impl Engine {
    /// When [`Engine::handle_timeout`] must next be called, if ever.
    pub fn poll_timeout(&self) -> Option<Millis> {
        let held = self.held.iter().map(|h| h.deadline).min();
        held.into_iter()
            .chain(self.pace.next_due())
            .chain(self.agent_replays.deadline())
            .min()
    }

    /// Time passed: release what waited too long, send the card progress that is due.
    pub fn handle_timeout(&mut self, now: Millis, out: &mut Vec<Action>) {
        self.now = self.now.max(now);
        self.progress_due(now, out);
        self.replay_timeouts(now, out);
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.deadline <= now);
        self.held = keep;
        for h in due {
            self.note(
                out,
                NoteLevel::Info,
                format!(
                    "permission request for tool call {} could not be attributed within {} ms: shown in its session as sent",
                    h.tool_call_id, self.cfg.zed.permission_hold_ms
                ),
            );
            self.route_released_request(h.frame, out);
        }
    }

    /// A request from the agent to the client (`session/request_permission`, `fs/*`,
    /// `terminal/*`, ...): sent under a session the client knows, or held while it may still
    /// turn out to be a child's.
    pub(super) fn route_agent_request(&mut self, frame: Bytes, now: Millis, out: &mut Vec<Action>) {
        let Some(u) = self.route_to_owner(frame, out) else {
            return;
        };
        let is_spawn = u
            .tool
            .as_deref()
            .is_some_and(|t| self.reg.by_spawn(&u.session, t).is_some());
        let parents = u
            .tool
            .as_deref()
            .is_some_and(|t| self.parent_tools.contains(&u.session, t));
        let hold = u.method == "session/request_permission"
            && !is_spawn
            && !parents
            && !self.replaying.contains(&u.session)
            && self.reg.has_open_legacy_child(&u.session)
            && self.held.len() < self.cfg.zed.max_held_permissions;
        match (hold, u.tool) {
            (true, Some(tool_call_id)) => self.held.push(HeldRequest {
                session: u.session,
                tool_call_id,
                frame: u.frame,
                deadline: now + self.cfg.zed.permission_hold_ms,
            }),
            _ => out.push(Action::ToClient(u.frame)),
        }
    }

    /// A held request let go (its tool call was seen, or it waited long enough): routed as
    /// far as it can be now, and never held again.
    fn route_released_request(&mut self, frame: Bytes, out: &mut Vec<Action>) {
        if let Some(u) = self.route_to_owner(frame, out) {
            out.push(Action::ToClient(u.frame));
        }
    }

    /// Send a request that a child owns to the session the client knows for it. A request
    /// no child owns is handed back; one that names no session goes out as it is.
    fn route_to_owner(&mut self, frame: Bytes, out: &mut Vec<Action>) -> Option<Unowned> {
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
            return None;
        };
        let method = req.method.as_deref().unwrap_or("").to_owned();
        let Some(params) = req.params else {
            out.push(Action::ToClient(frame));
            return None;
        };
        let Some(sid) = params.session_id.map(Cow::into_owned) else {
            out.push(Action::ToClient(frame));
            return None;
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
            .cloned()
            .or_else(|| {
                let raw = tool_raw
                    .filter(|t| self.detector.scan(t.as_bytes()).has(keys::kind::PARENT))?;
                let tool_call = serde_json::from_str::<Value>(raw).ok()?;
                let parent = self.detector.parent_ref(&tool_call)?;
                self.reg.by_spawn(&sid, parent).cloned()
            });
        let Some(cid) = owner else {
            return Some(Unowned {
                method,
                session: sid,
                tool,
                frame,
            });
        };
        let target = self.visible_session(&cid);
        let rewritten = (target != sid).then(|| wire::parse_value(&frame)).flatten();
        match rewritten {
            Some(mut msg) => {
                msg["params"]["sessionId"] = json!(target);
                out.push(Action::ToClient(write::line(&msg)));
            }
            None => out.push(Action::ToClient(frame)),
        }
        None
    }

    /// A tool call was seen: permission requests held for it can be routed now.
    pub(super) fn release_held(
        &mut self,
        session: &str,
        tool_call_id: &str,
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
            self.route_released_request(h.frame, out);
        }
    }
}
