//! Subagent cards the proxy did not make: a tool call from the agent side that already carries
//! Zed's `_meta.subagent_session_info`. Another rewriting link sent it (a second acp-proxy
//! between this one and the agent, in a chain whose conductor dropped the signs that made that
//! link stand down), and that link serves the child's thread in full. So the card is never a
//! new spawn here: it passes untouched, and what the client sends about its child goes on to
//! the agent. A card naming a session its sender cannot own (one of this proxy's subagents,
//! the card's own session, another session of the client's, a child another card already
//! names) would show the wrong thread under it: its `subagent_session_info` is taken off, with
//! a note.

use bytes::Bytes;
use serde_json::Value;

use crate::engine::recent::RecentMap;
use crate::engine::{Action, Engine};
use crate::subagents::ids;
use crate::subagents::pair::Pair;
use crate::wire::{self, write};

/// Child sessions named by cards from the agent side, with the (session, tool call) of the
/// card that first named each.
#[derive(Debug)]
pub(in crate::engine) struct ForeignCards {
    by_child: RecentMap<Pair>,
}

impl Default for ForeignCards {
    fn default() -> Self {
        ForeignCards {
            by_child: RecentMap::new(4096),
        }
    }
}

impl ForeignCards {
    pub(in crate::engine) fn len(&self) -> usize {
        self.by_child.len()
    }
}

/// Whether the client's `initialize` shows a rewriting link on the client side: the flag an
/// acp-proxy adds when it opts in on the client's behalf (it survives conductors that drop
/// `clientCapabilities.subagents`, as the reference conductor 3.6.0 does).
pub(in crate::engine) fn client_side_rewrites(params: &Value) -> bool {
    params
        .pointer("/clientCapabilities/_meta/subagent-transcript")
        .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
}

impl Engine {
    /// Whether a session id the client sent names a child this proxy serves: one it knows, or
    /// one shaped like its ids that no card from the agent side named.
    pub(in crate::engine) fn serves_child(&self, sid: &str) -> bool {
        self.reg.is_child(sid)
            || (ids::looks_like_child_id(sid) && !self.foreign.by_child.contains(sid))
    }

    /// A `tool_call` / `tool_call_update` (`raw`: the update's text) in a session of the
    /// client's that carries `_meta.subagent_session_info`.
    pub(in crate::engine) fn agent_card(
        &mut self,
        frame: Bytes,
        session: &str,
        kind: &str,
        tool: Option<&str>,
        raw: &str,
        out: &mut Vec<Action>,
    ) {
        let named = serde_json::from_str::<Value>(raw).ok().and_then(|u| {
            u.pointer("/_meta/subagent_session_info/session_id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let tool_id = tool.unwrap_or("");
        // Not the exact shape: Zed ignores it, so it shows nothing wrong either.
        let problem = named.as_deref().and_then(|named| {
            let owner = self.foreign.by_child.get(named);
            if owner.is_some_and(|o| o.0 == session && o.1 == tool_id) {
                return None;
            }
            let why = if let Some(o) = owner {
                format!("the card of tool call {} names it already", o.1)
            } else if self.reg.is_child(named) || self.reg.by_agent_child(named).is_some() {
                "it is a subagent this proxy shows".to_owned()
            } else if named == session {
                "it is the card's own session".to_owned()
            } else if self.sessions.knows(named) {
                "it is another session of the client's".to_owned()
            } else {
                return None;
            };
            Some((named.to_owned(), why))
        });
        match (problem, named) {
            (None, Some(named)) => {
                self.foreign
                    .by_child
                    .insert(&named, Pair::new(session, tool_id));
                out.push(Action::ToClient(frame));
            }
            (None, None) => out.push(Action::ToClient(frame)),
            (Some((named, why)), _) => {
                let stripped = wire::parse_value(&frame).map(|mut msg| {
                    if let Some(meta) = msg
                        .pointer_mut("/params/update/_meta")
                        .and_then(Value::as_object_mut)
                    {
                        meta.remove("subagent_session_info");
                    }
                    write::line(&msg)
                });
                out.push(Action::ToClient(stripped.unwrap_or(frame)));
                self.report_once(
                    "agent-card-names-a-session-it-does-not-own",
                    out,
                    format!(
                        "tool call {tool_id} in session {session} carries a subagent card for session {named}, but {why}: shown as an ordinary tool call (further ones alike)"
                    ),
                );
            }
        }
        if let (Some(t), "tool_call") = (tool, kind) {
            self.held.parent_tool(session, t);
            self.release_held(session, t, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_opt_in_flag_is_the_sign_of_a_link() {
        let with = |meta: Value| json!({"clientCapabilities": {"_meta": meta}});
        assert!(client_side_rewrites(&with(
            json!({"subagent-transcript": true})
        )));
        assert!(!client_side_rewrites(&with(
            json!({"subagent-transcript": false})
        )));
        assert!(!client_side_rewrites(&with(
            json!({"terminal_output": true})
        )));
        assert!(!client_side_rewrites(&json!({})));
    }
}
