//! The `acp` flavour: standard ACP subagents (v1), for clients that advertise
//! `clientCapabilities.subagents`, whatever wire the agent speaks.
//!
//! Every child the proxy models becomes a child session the client follows from its
//! announcement on:
//! - on the parent's session, `subagent_update` announces it (`title`, `description` when the
//!   preset reads one, `capabilities.cancel` when the agent can cancel it alone, `state:
//!   running`) before anything else of the child, then patches its title, description and state (`idle` with `stopReason` `end_turn`, `error` or
//!   `cancelled`; `unknown` when the parent's turn ended and the child's end was never seen);
//! - the child's events go to the client under the child's id, as recorded;
//! - its task is a `session_message` from the parent to the child, seen in both transcripts
//!   (the outgoing view on the parent, the incoming one on the child), and its answer one from
//!   the child to the parent;
//! - the agent's own spawn tool call stays in the parent, pointing at the child with a
//!   `session` content item.
//!
//! An agent that speaks standard subagents itself is relayed as it is; only the drafts' kinds
//! (`subagent_spawned`, `subagent_state_update`) are rewritten ([`draft_to_standard`]).

use std::collections::HashMap;

use serde_json::{json, Value};

use super::card_base;
use crate::subagents::ids::ChildId;
use crate::subagents::model::{Child, ChildState, Run, StopRoute};

/// What a child is doing, as the client was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Running,
    Idle(ChildState),
    Unknown,
}

impl Shown {
    fn of(child: &Child) -> Shown {
        if child.state().is_final() {
            Shown::Idle(child.state())
        } else {
            Shown::Running
        }
    }

    /// The `state` object of a `subagent_update`.
    fn state(self) -> Value {
        match self {
            Shown::Running => json!({"state": "running"}),
            Shown::Unknown => json!({"state": "unknown"}),
            Shown::Idle(ChildState::Cancelled) => {
                json!({"state": "idle", "stopReason": "cancelled"})
            }
            Shown::Idle(ChildState::Failed) => json!({"state": "idle", "stopReason": "error",
                "error": {"code": -32603, "message": "the subagent failed"}}),
            Shown::Idle(_) => json!({"state": "idle", "stopReason": "end_turn"}),
        }
    }
}

/// What the client was told of one child.
#[derive(Debug, Clone, Default)]
struct Told {
    announced: bool,
    title: String,
    description: Option<String>,
    state: Option<Shown>,
    /// The answer went to the parent.
    replied: bool,
    /// Lines of the child's thread already looked at for task messages.
    scanned: usize,
}

/// The title a child is announced with: the agent's, or a generic one.
fn title_of(child: &Child) -> &str {
    if child.title.is_empty() {
        "Subagent"
    } else {
        &child.title
    }
}

fn subagent_update(child: &Child) -> Value {
    json!({"sessionUpdate": "subagent_update", "sessionId": child.id})
}

/// The full announcement of a child, as it is now.
fn announcement(child: &Child) -> Value {
    let mut a = subagent_update(child);
    a["title"] = json!(title_of(child));
    if let Some(d) = &child.description {
        a["description"] = json!(d);
    }
    if child.stop_route() == StopRoute::Direct {
        a["capabilities"] = json!({"cancel": {}});
    }
    a["state"] = Shown::of(child).state();
    a
}

/// The id of the task message recorded at `index` of the child's thread: the same in both
/// transcripts.
fn task_message_id(child: &Child, index: usize) -> String {
    format!("{}:task:{index}", child.id)
}

/// The content block of a recorded user message line, if the line is one.
fn user_block(line: &str) -> Option<Value> {
    if !line.contains("\"user_message_chunk\"") {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("sessionUpdate").and_then(Value::as_str) == Some("user_message_chunk"))
        .then(|| v.get("content").cloned())
        .flatten()
}

/// The child's answer: the text of the assistant message its thread ends with (nothing if
/// its last entry is another one, a tool call say). Only an answer to a task: a child whose
/// task the agent never sent (one it runs out of sight) has only the proxy's note of it.
fn reply_text(child: &Child) -> Option<String> {
    if !child.thread.held().any(|(_, l)| user_block(l).is_some()) {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    for (_, line) in child.thread.held().rev() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            break;
        };
        match v.get("sessionUpdate").and_then(Value::as_str) {
            Some("agent_message_chunk") => {
                if let Some(t) = v.pointer("/content/text").and_then(Value::as_str) {
                    parts.push(t.to_owned());
                }
            }
            // Entries of their own end the message.
            Some(
                "user_message_chunk"
                | "tool_call"
                | "compaction_update"
                | "compaction_summary_chunk"
                | "session_message",
            ) => break,
            // Thoughts belong to the message; updates, usage and the like make no entry.
            _ => {}
        }
    }
    parts.reverse();
    let text: String = parts.concat();
    (!text.trim().is_empty()).then_some(text)
}

/// Standard ACP subagents, derived from the one model.
#[derive(Debug, Default)]
pub struct Acp {
    told: HashMap<ChildId, Told>,
}

impl Acp {
    /// The client learns of a child from its announcement, not from a card.
    pub fn synthesized_card(&self, child: &Child) -> Value {
        announcement(child)
    }

    /// The agent's own spawn tool call, when the child has one (legacy wires), gets the
    /// status; a child announced by the agent has no tool call in the parent.
    pub fn card_update(
        &self,
        child: &Child,
        status: Option<&str>,
        title: Option<&str>,
    ) -> Option<Value> {
        let status = status?;
        if child.agent_child().is_some() {
            return None;
        }
        let mut upd = card_base(child, Some(status), title);
        let mut content = vec![session_ref(child)];
        if child.state() == ChildState::Cancelled {
            content
                .push(json!({"type": "content", "content": {"type": "text", "text": "Cancelled"}}));
        }
        upd["content"] = Value::Array(content);
        Some(upd)
    }

    /// The spawn tool call points at the child session (before what the agent put there).
    pub fn spawn_update(&self, child: &Child, update: &mut Value, is_new: bool) {
        let agent = match update.get("content") {
            Some(Value::Array(items)) => Some(items.clone()),
            _ => None,
        };
        if !is_new && agent.is_none() {
            return;
        }
        let mut items = vec![session_ref(child)];
        items.extend(agent.unwrap_or_default());
        update["content"] = Value::Array(items);
    }

    /// The part of [`Acp::sync`] that must come before a frame of the child: its
    /// announcement (or a new title). The rest (its task, its end) follows the frame.
    pub fn announce(&mut self, child: &Child) -> Vec<Value> {
        let told = self.told.entry(child.id.clone()).or_default();
        let title = title_of(child);
        let shown = Shown::of(child);
        if !told.announced {
            let mut a = announcement(child);
            if let (Some(obj), Shown::Idle(_)) = (a.as_object_mut(), shown) {
                // Told by `sync`, after the task and the answer.
                obj.remove("state");
            } else {
                told.state = Some(shown);
            }
            told.announced = true;
            told.title = title.to_owned();
            told.description.clone_from(&child.description);
            vec![a]
        } else {
            let mut patch = subagent_update(child);
            if told.title != title {
                patch["title"] = json!(title);
                told.title = title.to_owned();
            }
            if told.description != child.description {
                if let Some(d) = &child.description {
                    patch["description"] = json!(d);
                }
                told.description.clone_from(&child.description);
            }
            if patch.as_object().is_some_and(|p| p.len() > 2) {
                vec![patch]
            } else {
                Vec::new()
            }
        }
    }

    /// Updates for the parent's session that bring the client's view of the child up to
    /// date: the announcement before anything else of the child, then its title, task and
    /// state. The engine calls it wherever the child may have changed; only what changed is
    /// returned.
    pub fn sync(&mut self, child: &Child) -> Vec<Value> {
        let mut out = self.announce(child);
        let Some(told) = self.told.get_mut(&child.id) else {
            return out;
        };
        let shown = Shown::of(child);
        for (index, line) in child.thread.held().skip_while(|(i, _)| *i < told.scanned) {
            if let Some(block) = user_block(line) {
                // The outgoing view of the task, in the parent's transcript.
                let id = task_message_id(child, index);
                out.push(json!({"sessionUpdate": "session_message", "messageId": id,
                    "senderSessionId": child.parent, "recipientSessionId": child.id,
                    "recipientMessageId": id, "content": [block]}));
            }
        }
        told.scanned = child.thread.len();
        let changed = told.state != Some(shown)
            && !(told.state == Some(Shown::Unknown) && shown == Shown::Running);
        if shown == Shown::Running {
            // A continued child answers again.
            told.replied = false;
        }
        // An answer the agent brings after the end (OpenCode's replay, fetched once the
        // child finished) still goes to the parent, after the state.
        if shown == Shown::Idle(ChildState::Completed) && !told.replied {
            if let Some(text) = reply_text(child) {
                let turn = child.turns.len().saturating_sub(1);
                out.push(json!({"sessionUpdate": "session_message",
                    "messageId": format!("{}:reply:{turn}", child.id),
                    "senderSessionId": child.id, "recipientSessionId": child.parent,
                    "content": [{"type": "text", "text": text}]}));
                told.replied = true;
            }
        }
        if changed {
            let mut patch = subagent_update(child);
            patch["state"] = shown.state();
            out.push(patch);
            told.state = Some(shown);
        }
        out
    }

    /// The parent's thread is being rebuilt (its `session/load` replay): what the client was
    /// told of this child is gone.
    pub fn reopened(&mut self, child_id: &ChildId) {
        self.told.remove(child_id);
    }

    /// Line `index` of the child's thread on its way to the client under the child's id (live
    /// or on a `session/load`): what is sent instead, if anything.
    ///
    /// A task recorded in the child's thread is the incoming view of the parent's message.
    pub fn child_line(&self, child: &Child, index: usize, text: &str) -> Option<Value> {
        let block = user_block(text)?;
        let id = task_message_id(child, index);
        Some(json!({"sessionUpdate": "session_message", "messageId": id,
            "senderSessionId": child.parent, "recipientSessionId": child.id,
            "senderMessageId": id, "content": [block]}))
    }

    /// The parent's prompt turn ended while the child is open: a foreground child whose end
    /// was never reported is in an unknown state now.
    pub fn turn_ended(&mut self, child: &Child) -> Vec<Value> {
        if child.state().is_final() || child.run() == Run::Background {
            return Vec::new();
        }
        let Some(told) = self.told.get_mut(&child.id) else {
            return Vec::new();
        };
        if told.state == Some(Shown::Unknown) {
            return Vec::new();
        }
        told.state = Some(Shown::Unknown);
        let mut patch = subagent_update(child);
        patch["state"] = Shown::Unknown.state();
        vec![patch]
    }

    /// The engine let go of a child: drop what was told of it.
    pub fn forget(&mut self, child_id: &ChildId) {
        self.told.remove(child_id);
    }

    /// Sizes of what is kept per child.
    pub fn footprint(&self) -> Vec<(&'static str, usize)> {
        vec![("acp_told", self.told.len())]
    }
}

/// A tool call content item pointing at the child's session.
fn session_ref(child: &Child) -> Value {
    json!({"type": "session", "sessionId": child.id})
}

/// The drafts' subagent kinds (`subagent_spawned {subagentSessionId, name, task}`,
/// `subagent_state_update {subagentSessionId, state}`) sent on session `parent`, as the
/// standard updates a v1 client decodes, each with the session it goes on; the child keeps the
/// agent's session id. `None` for anything else.
pub fn draft_to_standard(parent: &str, update: &Value) -> Option<(String, Vec<(String, Value)>)> {
    let kind = update.get("sessionUpdate").and_then(Value::as_str)?;
    let child = update
        .get("subagentSessionId")
        .or_else(|| update.get("sessionId"))
        .and_then(Value::as_str)?
        .to_owned();
    let mut out = Vec::new();
    let mut upsert = json!({"sessionUpdate": "subagent_update", "sessionId": child});
    match kind {
        "subagent_spawned" => {
            let title = ["title", "name"]
                .iter()
                .find_map(|k| update.get(*k).and_then(Value::as_str));
            upsert["title"] = json!(title.unwrap_or("Subagent"));
            if let Some(d) = update.get("description").and_then(Value::as_str) {
                upsert["description"] = json!(d);
            }
            if let Some(caps) = update.get("capabilities").filter(|c| c.is_object()) {
                upsert["capabilities"] = caps.clone();
            }
            upsert["state"] = json!({"state": "running"});
            out.push((parent.to_owned(), upsert));
            if let Some(task) = update.get("task").and_then(Value::as_str) {
                let id = format!("{child}:task");
                let content = json!([{"type": "text", "text": task}]);
                out.push((
                    parent.to_owned(),
                    json!({"sessionUpdate": "session_message",
                    "messageId": id, "senderSessionId": parent, "recipientSessionId": child,
                    "recipientMessageId": id, "content": content}),
                ));
                out.push((
                    child.clone(),
                    json!({"sessionUpdate": "session_message",
                    "messageId": id, "senderSessionId": parent, "recipientSessionId": child,
                    "senderMessageId": id, "content": content}),
                ));
            }
        }
        "subagent_state_update" => {
            let state = match update.get("state") {
                Some(Value::Object(s)) => Value::Object(s.clone()),
                Some(Value::String(s)) => match s.as_str() {
                    "running" => json!({"state": "running"}),
                    "completed" | "idle" => json!({"state": "idle", "stopReason": "end_turn"}),
                    "cancelled" => json!({"state": "idle", "stopReason": "cancelled"}),
                    "failed" => json!({"state": "idle", "stopReason": "error"}),
                    _ => json!({"state": "unknown"}),
                },
                _ => return None,
            };
            upsert["state"] = state;
            out.push((parent.to_owned(), upsert));
        }
        _ => return None,
    }
    Some((child, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::ids::{AgentSessionId, ClientSessionId};
    use crate::subagents::model::SpawnSite;
    use std::sync::Arc;

    fn child() -> Child {
        let site = SpawnSite {
            agent_session: AgentSessionId::new("p".into()),
            parent: ClientSessionId::new("p".into()),
            top_session: ClientSessionId::new("p".into()),
            spawn_id: "t1".into(),
        };
        let mut c = Child::new(
            ChildId::known("acp-proxy-sub-x".into()),
            site,
            "Agent".into(),
        );
        c.title = "Task".into();
        c.start();
        c
    }

    fn record(c: &mut Child, update: Value) {
        let kind = update["sessionUpdate"].as_str().unwrap_or("").to_owned();
        c.record_kind(&kind, None, Arc::from(update.to_string()));
    }

    #[test]
    fn a_child_is_announced_once_then_patched_and_ends_with_its_answer() {
        let mut r = Acp::default();
        let mut c = child();
        let first = r.sync(&c);
        assert_eq!(
            first,
            [
                json!({"sessionUpdate": "subagent_update", "sessionId": "acp-proxy-sub-x",
                "title": "Task", "state": {"state": "running"}})
            ]
        );
        assert!(r.sync(&c).is_empty(), "nothing changed");
        c.description = Some("general-purpose".into());
        assert_eq!(
            r.sync(&c),
            [
                json!({"sessionUpdate": "subagent_update", "sessionId": "acp-proxy-sub-x",
                "description": "general-purpose"})
            ],
            "a description learnt later is a patch"
        );
        c.title = "Survey".into();
        record(
            &mut c,
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "go"}}),
        );
        let next = r.sync(&c);
        assert_eq!(next[0]["title"], "Survey");
        assert_eq!(next[1]["sessionUpdate"], "session_message");
        assert_eq!(next[1]["recipientSessionId"], "acp-proxy-sub-x");
        assert_eq!(
            r.child_line(&c, 0, c.thread.first().expect("the task"))
                .map(|v| v["messageId"].clone()),
            Some(next[1]["messageId"].clone()),
            "both views of the task carry one id"
        );
        record(
            &mut c,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "found "}}),
        );
        record(
            &mut c,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "two"}}),
        );
        c.finish_card(ChildState::Completed);
        let end = r.sync(&c);
        assert_eq!(end.len(), 2, "{end:?}");
        assert_eq!(end[0]["content"][0]["text"], "found two");
        assert_eq!(end[0]["senderSessionId"], "acp-proxy-sub-x");
        assert_eq!(
            end[1]["state"],
            json!({"state": "idle", "stopReason": "end_turn"})
        );
        // Reopened: announced again, already idle.
        r.reopened(&c.id);
        let again = r.sync(&c);
        assert!(again[0].get("state").is_none());
        assert_eq!(
            again.last().map(|u| u["state"]["state"].clone()),
            Some(json!("idle"))
        );
    }

    #[test]
    fn the_spawn_tool_call_points_at_the_child() {
        let r = Acp::default();
        let c = child();
        let mut call = json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Task"});
        r.spawn_update(&c, &mut call, true);
        assert_eq!(
            call["content"],
            json!([{"type": "session", "sessionId": "acp-proxy-sub-x"}])
        );
        let mut quiet = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"});
        r.spawn_update(&c, &mut quiet, false);
        assert!(quiet.get("content").is_none(), "content left as it was");
        let mut done = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
            "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}]});
        r.spawn_update(&c, &mut done, false);
        assert_eq!(done["content"][0]["type"], "session");
        assert_eq!(done["content"][1]["content"]["text"], "ok");
    }

    #[test]
    fn drafts_become_standard_updates() {
        let (child, out) = draft_to_standard(
            "p",
            &json!({"sessionUpdate": "subagent_spawned", "subagentSessionId": "c",
                "name": "Scout", "task": "look"}),
        )
        .expect("a draft");
        assert_eq!(child, "c");
        assert_eq!(out[0].1["title"], "Scout");
        assert_eq!(out[1].0, "p");
        assert_eq!(out[2].0, "c");
        let (_, out) = draft_to_standard(
            "p",
            &json!({"sessionUpdate": "subagent_state_update", "subagentSessionId": "c", "state": "disconnected"}),
        )
        .expect("a draft");
        assert_eq!(out[0].1["state"], json!({"state": "unknown"}));
        assert!(draft_to_standard("p", &json!({"sessionUpdate": "plan"})).is_none());
    }
}
