//! Standard ACP subagents: `subagent_update` announcements (and the earlier draft kinds) and
//! the `session_message` that carries a child's task.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::engine::{str_field, Action, Engine};
use crate::subagents::ids;
use crate::subagents::ids::{AgentSessionId, ChildId, ClientSessionId};
use crate::subagents::model::{Card, Child, ChildState, SpawnSite, SYNTHETIC_TOOL_NAME};
use crate::subagents::render::acp;
use crate::wire::write;

impl Engine {
    /// Standard ACP `subagent_update` (and the earlier draft kinds) on session `on`.
    pub(in crate::engine) fn standard_announce(
        &mut self,
        on: &str,
        update: Option<Value>,
        out: &mut Vec<Action>,
    ) {
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
            Some(p) => (ClientSessionId::of_child(&p.id), p.top_session.clone()),
            None => (
                ClientSessionId::new(on.to_owned()),
                ClientSessionId::new(on.to_owned()),
            ),
        };
        if self.refuse_announcement(on, &agent_child, parent.as_str(), top.as_str(), out) {
            return;
        }
        let cid = match self.reg.by_agent_child(&agent_child).cloned() {
            Some(cid) => {
                let replaying = self
                    .reg
                    .get(&cid)
                    .is_some_and(|c| self.reopen.replaying(c.top_session.as_str()));
                if replaying && self.reopen.show_card(&cid) {
                    // The parent is being reopened: its thread needs the card again.
                    if let Some(child) = self.reg.get(&cid) {
                        let card = self.render.synthesized_card(child);
                        let parent = child.parent.clone();
                        self.emit(parent.as_str(), card, out);
                        let work = self.replayed_work(&cid, true);
                        self.show_replayed(&cid, work, out);
                    }
                }
                if let Some(t) = str_field(&update, "title") {
                    let child = self.reg.get_mut(&cid);
                    if let Some(child) = child.filter(|c| c.title != t) {
                        child.title = t.to_owned();
                        let card = (child.card() != Card::Progress)
                            .then(|| self.render.card_update(child, None, Some(t)))
                            .flatten();
                        let parent = child.parent.clone();
                        if let Some(card) = card {
                            self.emit(parent.as_str(), card, out);
                        }
                    }
                }
                cid
            }
            None => {
                let spawn_id = ids::synthesized_spawn_id(&agent_child);
                let cid =
                    ChildId::derive_known(parent.as_str(), &spawn_id, |id| self.reg.is_child(id));
                let mut child = match self.reg.take(&cid) {
                    Some(restored) => restored,
                    None => {
                        let site = SpawnSite {
                            agent_session: AgentSessionId::new(agent_child.clone()),
                            parent: parent.clone(),
                            top_session: top,
                            spawn_id,
                        };
                        let mut c = Child::new(cid.clone(), site, SYNTHETIC_TOOL_NAME.into());
                        c.start();
                        c
                    }
                };
                child.own_agent_session(AgentSessionId::new(agent_child.clone()));
                // What the announcement lacks, as the agent's preset reads it (Codex: a short
                // title and the task, from `description`).
                let announce = self.detector.announce(&update);
                if let Some(t) = announce.title.as_deref().or_else(|| {
                    str_field(&update, "title").or_else(|| str_field(&update, "description"))
                }) {
                    child.title = t.to_owned();
                }
                let mut untold = None;
                if child.prompt_awaited() && child.thread.is_empty() {
                    child.announced_prompt = announce.prompt;
                    // No task anywhere: the preset's note says why (Codex's multi-agent V2).
                    if child.announced_prompt.is_none() {
                        untold = announce.no_prompt;
                    }
                }
                if child.title.is_empty() {
                    child.title = "Subagent".into();
                }
                let card = self.render.synthesized_card(&child);
                if self.reopen.replaying(child.top_session.as_str()) {
                    self.reopen.show_card(&cid);
                }
                self.reg.insert(child);
                if let Some(note) = untold {
                    self.untold_tasks.insert(&cid, note);
                }
                self.persist_child(&cid, out);
                self.emit(parent.as_str(), card, out);
                // A child restored from the store: its recorded work with the card.
                let work = self.replayed_work(&cid, true);
                self.show_replayed(&cid, work, out);
                cid
            }
        };
        if let Some(child) = self.reg.get_mut(&cid) {
            if update.pointer("/capabilities/cancel").is_some() {
                child.stop_directly();
            }
        }
        if self.reg.get(&cid).is_some_and(Child::history_known) {
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

    /// For a client that speaks standard subagents: the agent's own subagent traffic (its
    /// announcements, messages between sessions, the children's own sessions) goes as it is,
    /// the drafts' kinds as the standard ones. Hands back any other frame.
    pub(in crate::engine) fn acp_native(
        &mut self,
        frame: Bytes,
        sid: &str,
        kind: &str,
        raw: &str,
        out: &mut Vec<Action>,
    ) -> Option<Bytes> {
        match kind {
            "subagent_update" => {
                #[derive(serde::Deserialize)]
                struct Upsert<'a> {
                    #[serde(borrow, rename = "sessionId", default)]
                    session_id: Option<std::borrow::Cow<'a, str>>,
                }
                if let Ok(Upsert {
                    session_id: Some(child),
                }) = serde_json::from_str(raw)
                {
                    self.native_children.insert("", &child);
                }
                out.push(Action::ToClient(frame));
                None
            }
            "subagent_spawned" | "subagent_state_update" => {
                let translated = serde_json::from_str::<Value>(raw)
                    .ok()
                    .and_then(|u| acp::draft_to_standard(sid, &u));
                match translated {
                    Some((child, updates)) => {
                        self.native_children.insert("", &child);
                        for (session, update) in updates {
                            out.push(Action::ToClient(write::session_update(&session, &update)));
                        }
                    }
                    None => self.report_once(
                        "draft-without-session",
                        out,
                        format!("a `{kind}` without a child session id was dropped (the agent's subagent shape changed?)"),
                    ),
                }
                None
            }
            "session_message" | "session_message_chunk" => {
                out.push(Action::ToClient(frame));
                None
            }
            _ if self.native_children.contains("", sid) => {
                out.push(Action::ToClient(frame));
                None
            }
            _ => Some(frame),
        }
    }

    /// A standard `session_message`: the one addressed to a child is its task prompt (or a
    /// follow-up); replies and everything else are not for a client that did not opt in.
    pub(in crate::engine) fn session_message(
        &mut self,
        _on: &str,
        update: Option<Value>,
        out: &mut Vec<Action>,
    ) {
        let Some(update) = update else { return };
        let Some(recipient) = str_field(&update, "recipientSessionId") else {
            return;
        };
        let Some(cid) = self.reg.by_agent_child(recipient).cloned() else {
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
        if self.reg.get(&cid).is_some_and(Child::history_known) {
            // A replay of what the child thread already holds.
            return;
        }
        self.resume_child(&cid, out);
        for block in blocks {
            let update = json!({"sessionUpdate": "user_message_chunk", "content": block});
            self.record_in(&cid, &update, out);
        }
        if let Some(child) = self.reg.get_mut(&cid) {
            child.mark_prompt_recorded();
            child.announced_prompt = None;
        }
    }
}
