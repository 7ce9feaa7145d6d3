//! What the client sends about child sessions. Children are views the proxy serves: it
//! answers their `session/load` itself, maps their Stop to the agent, and refuses anything
//! that would treat them as sessions of the agent.

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::engine::{Action, ChildCancel, Engine, Millis, NoteLevel};
use crate::subagents::ids::{self, AgentSessionId, ChildId};
use crate::subagents::model::{
    Child, ChildState, Children, SpawnSite, StopRoute, SYNTHETIC_TOOL_NAME,
};
use crate::subagents::persist::StoredChild;
use crate::subagents::thread::Thread;
use crate::wire::{self, write};

/// Whether a session id the client sent names a child (known, or shaped like ours).
pub(in crate::engine) fn is_child_id(reg: &Children, sid: &str) -> bool {
    reg.is_child(sid) || ids::looks_like_child_id(sid)
}

impl Engine {
    pub(in crate::engine) fn client_child_request(
        &mut self,
        id: &RawValue,
        method: &str,
        sid: &str,
        frame: Bytes,
        _now: Millis,
        out: &mut Vec<Action>,
    ) {
        let Some(cid) = self.reg.resolve(sid).cloned() else {
            let loading = matches!(method, "session/load" | "session/resume");
            if loading && !self.reopen.store_tried(sid) {
                // Not in memory: the durable store may know it (the proxy restarted).
                out.push(Action::FetchChild {
                    child_id: ChildId::known(sid.to_owned()),
                    request: frame,
                });
                return;
            }
            out.push(Action::ToClient(write::error(
                id,
                -32002,
                &format!("acp-proxy: no subagent session `{sid}` is known (it may have been pruned from the store)"),
            )));
            return;
        };
        if matches!(method, "session/load")
            && !self.store_read
            && self.reg.get(&cid).is_some_and(|c| !c.thread.is_whole())
        {
            // Part of the thread left memory: read back from the store first (the store
            // applies every update given before the read).
            out.push(Action::FetchChild {
                child_id: cid,
                request: frame,
            });
            return;
        }
        if method == "session/load" && self.agent_replays.pending(&cid) {
            // The agent is replaying this child for the proxy: answered once that is done.
            self.agent_replays.hold_load(&cid, frame);
            return;
        }
        match method {
            "session/load" => {
                let zed = self.zed();
                if let Some(child) = self.reg.get_mut(&cid) {
                    for (index, update) in child.thread.held() {
                        if zed && is_standard_kind(update) {
                            // Recorded for a client that speaks standard subagents (a nested
                            // child's announcement): Zed would reject the notification.
                            continue;
                        }
                        out.push(Action::ToClient(match self.render.standard().and_then(|s| s.child_line(child, index, update)) {
                            Some(line) => write::session_update(sid, &line),
                            None => write::session_update_raw(sid, update),
                        }));
                    }
                    child.mark_loaded();
                }
                out.push(Action::ToClient(write::result(id, &json!({}))));
            }
            "session/resume" => {
                if let Some(child) = self.reg.get_mut(&cid) {
                    child.mark_loaded();
                }
                out.push(Action::ToClient(write::result(id, &json!({}))));
            }
            "session/close" => {
                if let Some(child) = self.reg.get_mut(&cid) {
                    child.mark_closed();
                }
                out.push(Action::ToClient(write::result(id, &json!({}))));
            }
            other => out.push(Action::ToClient(write::error(
                id,
                -32602,
                &format!(
                    "acp-proxy: `{other}` is not available for subagent session `{sid}`: it is a read-only view of a subagent; use its parent session"
                ),
            ))),
        }
    }

    pub(in crate::engine) fn client_child_notification(
        &mut self,
        method: &str,
        sid: &str,
        out: &mut Vec<Action>,
    ) {
        if method == "session/cancel" {
            self.cancel_child(sid, out);
        } else {
            self.note(
                out,
                NoteLevel::Info,
                format!(
                    "`{method}` for subagent session {sid} ignored: not forwarded to the agent"
                ),
            );
        }
    }

    /// The client's Stop on a child card.
    fn cancel_child(&mut self, sid: &str, out: &mut Vec<Action>) {
        let Some(child) = self.reg.by_session_id_mut(sid) else {
            self.note(
                out,
                NoteLevel::Info,
                format!("session/cancel for unknown subagent session {sid} ignored"),
            );
            return;
        };
        if child.card_is_final() && child.state() != ChildState::Running {
            return;
        }
        // Shown cancelled only once the agent confirms or the parent's turn ends.
        child.ask_cancel();
        // The agent session to cancel.
        let target = match (child.agent_child(), child.stop_route()) {
            (Some(agent_child), StopRoute::Direct) => Some(agent_child.clone()),
            _ => match self.cfg.zed.child_cancel {
                ChildCancel::Parent => Some(child.top_session.top_level_on_agent()),
                ChildCancel::Ignore => None,
            },
        };
        match target {
            Some(session) => {
                out.push(Action::ToAgent(write::notification("session/cancel", &json!({"sessionId": session.as_str()}))));
            }
            None => self.note(
                out,
                NoteLevel::Info,
                format!("Stop on subagent {sid} ignored: the agent cannot cancel it alone and child_cancel = \"ignore\""),
            ),
        }
    }
}

/// Whether a recorded update is of a standard subagent kind (`subagent_update`,
/// `session_message`, `session_message_chunk`).
fn is_standard_kind(update: &str) -> bool {
    if !(update.contains("\"subagent_update\"") || update.contains("\"session_message")) {
        return false;
    }
    serde_json::from_str::<Value>(update).is_ok_and(|v| {
        matches!(
            v.get("sessionUpdate").and_then(Value::as_str),
            Some("subagent_update" | "session_message" | "session_message_chunk")
        )
    })
}

/// Remove child sessions from a `session/list` result (they are not top-level threads).
pub(in crate::engine) fn filter_session_list(reg: &Children, frame: Bytes) -> Bytes {
    let Some(mut msg) = wire::parse_value(&frame) else {
        return frame;
    };
    let Some(sessions) = msg
        .pointer_mut("/result/sessions")
        .and_then(Value::as_array_mut)
    else {
        return frame;
    };
    let before = sessions.len();
    let agent_children: std::collections::HashSet<&str> = reg.agent_child_ids().collect();
    sessions.retain(|s| {
        let id = s.get("sessionId").and_then(Value::as_str).unwrap_or("");
        !(agent_children.contains(id) || is_child_id(reg, id))
    });
    if sessions.len() == before {
        frame
    } else {
        write::line(&msg)
    }
}

/// Bring a stored child back into memory (after a restart), or the updates of a child in
/// memory that left it (unless the store lacks some: the thread then stays as it is).
/// Otherwise what memory holds wins.
pub(in crate::engine) fn restore_child(reg: &mut Children, stored: StoredChild) {
    if let Some(child) = reg.get_mut(&stored.child_id) {
        child.thread.refill(&stored.updates);
        return;
    }
    let agent_child = ids::agent_child_of_spawn(&stored.spawn_tool_call_id)
        .map(|a| AgentSessionId::new(a.to_owned()));
    let (parent_agent_session, top_session) =
        match reg.by_session_id(stored.parent_session_id.as_str()) {
            Some(p) => (p.agent_session.clone(), p.top_session.clone()),
            // Not in memory: a top-level session, the same on both sides.
            None => (
                stored.parent_session_id.top_level_on_agent(),
                stored.parent_session_id.clone(),
            ),
        };
    // Rows from before the store kept it: what a restored card said then.
    let tool_name = stored.tool_name.unwrap_or_else(|| {
        if agent_child.is_some() {
            SYNTHETIC_TOOL_NAME
        } else {
            "Agent"
        }
        .to_owned()
    });
    let site = SpawnSite {
        agent_session: parent_agent_session,
        parent: stored.parent_session_id,
        top_session,
        spawn_id: stored.spawn_tool_call_id,
    };
    let mut child = Child::new(stored.child_id, site, tool_name);
    // A standard child's events arrive on its own session.
    if let Some(own) = agent_child {
        child.own_agent_session(own);
    }
    child.agent_id = stored.agent_child_id;
    child.title = stored.title.unwrap_or_default();
    child.restore_state(stored.state);
    if !stored.updates.is_empty() {
        child.mark_prompt_recorded();
    }
    child.thread = Thread::from_texts(stored.updates.into_iter().map(std::sync::Arc::from));
    child.recount();
    if !stored.turns.is_empty() {
        child.turns = stored.turns;
    }
    child.cwd = stored.cwd;
    reg.insert(child);
}
