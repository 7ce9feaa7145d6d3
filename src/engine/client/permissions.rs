//! Requests from the agent to the client (`session/request_permission`, `fs/*`,
//! `terminal/*`): sent under a session the client knows, or held briefly while a
//! permission request may still turn out to be a child's.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::engine::recent::RecentSet;
use crate::engine::{str_field, Action, Engine, Millis, NoteLevel};
use crate::subagents::ids::ChildId;
use crate::subagents::model::Child;
use crate::subagents::render::zed;
use crate::wire::keys;
use crate::wire::request_view::RequestView;
use crate::wire::{self, write};

/// A permission request waiting to learn which session it belongs to.
#[derive(Debug)]
struct HeldRequest {
    session: String,
    tool_call_id: String,
    frame: Bytes,
    deadline: Millis,
}

/// Requests shown on a child's card at most (past it, the oldest card keeps the request's
/// title until its next update).
const ON_CARDS_MAX: usize = 64;

/// A child's permission request shown on its card in an ancestor's thread, until Zed answers.
#[derive(Debug)]
struct OnCard {
    /// The request's id, as JSON text.
    id: String,
    /// The thread the card is in.
    session: String,
    /// The child whose card it is.
    card: ChildId,
}

/// Permission requests held while they may still turn out to be a child's, and the recent
/// tool calls known to be the parents' (their requests never wait).
#[derive(Debug, Default)]
pub(in crate::engine) struct Held {
    requests: Vec<HeldRequest>,
    /// Recent tool calls that went to a top-level thread: their permission requests are the
    /// parent's and never wait for attribution.
    parent_tools: RecentSet,
    /// The client puts a permission request's tool call into the thread it names (Zed's main
    /// branch): a child's request for a thread other than the child's names the card there.
    requests_on_cards: bool,
    /// Requests shown on cards, waiting for the client's answer.
    on_cards: Vec<OnCard>,
}

impl Held {
    pub(in crate::engine) fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// The tool call `tool` of the top-level `session` went to its thread.
    pub(in crate::engine) fn parent_tool(&mut self, session: &str, tool: &str) {
        self.parent_tools.insert(session, tool);
    }

    pub(in crate::engine) fn is_parent_tool(&self, session: &str, tool: &str) -> bool {
        self.parent_tools.contains(session, tool)
    }

    /// Whether the client upserts a permission request's tool call into the thread it names.
    pub(in crate::engine) fn set_requests_on_cards(&mut self, on: bool) {
        self.requests_on_cards = on;
    }

    /// Whether a request is shown on a card, waiting for the client's answer.
    pub(in crate::engine) fn any_on_cards(&self) -> bool {
        !self.on_cards.is_empty()
    }

    /// When the first held request is due, if one is held.
    pub(in crate::engine) fn deadline(&self) -> Option<Millis> {
        self.requests.iter().map(|h| h.deadline).min()
    }

    /// The requests that must go now, in the order they came; the others stay.
    fn take(&mut self, due: impl Fn(&HeldRequest) -> bool) -> Vec<HeldRequest> {
        let (ready, keep) = std::mem::take(&mut self.requests)
            .into_iter()
            .partition(due);
        self.requests = keep;
        ready
    }

    /// Every held request's frame, in the order they came (nothing is held after).
    pub(in crate::engine) fn drain(&mut self) -> impl Iterator<Item = Bytes> {
        std::mem::take(&mut self.requests)
            .into_iter()
            .map(|h| h.frame)
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 3] {
        [
            ("held", self.requests.len()),
            ("on_cards", self.on_cards.len()),
            ("parent_tools", self.parent_tools.len()),
        ]
    }
}

/// A request from the agent that no child owns (yet).
struct Unowned {
    method: String,
    session: String,
    tool: Option<String>,
    /// A permission request whose tool call has no title.
    untitled: bool,
    frame: Bytes,
}

impl Engine {
    /// Held requests that waited `permission_hold_ms` go where they were sent.
    pub(in crate::engine) fn release_held_due(&mut self, now: Millis, out: &mut Vec<Action>) {
        for h in self.held.take(|h| h.deadline <= now) {
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
    /// `view`: the request already read (else it is read here); `found`: the keys found in
    /// the whole frame, if it was searched.
    pub(in crate::engine) fn route_agent_request(
        &mut self,
        frame: Bytes,
        view: Option<RequestView<'_>>,
        found: Option<keys::Found>,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        let Some(u) = self.route_to_owner(frame, view, found, out) else {
            return;
        };
        let is_spawn = u
            .tool
            .as_deref()
            .is_some_and(|t| self.reg.by_spawn(&u.session, t).is_some());
        let parents = u
            .tool
            .as_deref()
            .is_some_and(|t| self.held.is_parent_tool(&u.session, t));
        let hold = u.method == "session/request_permission"
            && !is_spawn
            && !parents
            && !self.reopen.replaying(&u.session)
            && self.reg.has_open_legacy_child(&u.session)
            && self.held.requests.len() < self.cfg.zed.max_held_permissions;
        match (hold, u.tool) {
            (true, Some(tool_call_id)) => self.held.requests.push(HeldRequest {
                session: u.session,
                tool_call_id,
                frame: u.frame,
                deadline: now + self.cfg.zed.permission_hold_ms,
            }),
            (_, tool) => self.send_unowned(Unowned { tool, ..u }, out),
        }
    }

    /// A held request let go (its tool call was seen, or it waited long enough): routed as
    /// far as it can be now, and never held again.
    fn route_released_request(&mut self, frame: Bytes, out: &mut Vec<Action>) {
        if let Some(u) = self.route_to_owner(frame, None, None, out) {
            self.send_unowned(u, out);
        }
    }

    /// A request no child owns, to the session it names (a top-level one): titled first if
    /// Zed must create its tool call.
    fn send_unowned(&mut self, u: Unowned, out: &mut Vec<Action>) {
        let title = u
            .untitled
            .then_some(u.tool.as_deref())
            .flatten()
            .and_then(|t| {
                (!self.thread_tools.contains(t)).then(|| self.title_for(None, t, &u.frame))
            });
        match title {
            Some(title) => self.send_rewritten(u.frame, None, Some(&title), out),
            None => out.push(Action::ToClient(u.frame)),
        }
    }

    /// The title to give a permission request's tool call that the thread it goes to does
    /// not hold: the one the owning child's thread recorded for it, else one made from the
    /// request itself.
    fn title_for(&self, owner: Option<&ChildId>, tool: &str, frame: &[u8]) -> String {
        owner
            .and_then(|cid| self.reg.get(cid))
            .and_then(|c| recorded_title(c, tool))
            .unwrap_or_else(|| {
                let tool_call = wire::parse_value(frame)
                    .and_then(|m| m.pointer("/params/toolCall").cloned())
                    .unwrap_or(Value::Null);
                zed::fallback_title(&tool_call)
            })
    }

    /// Send a request with its session id and its tool call's title replaced, each if given.
    fn send_rewritten(
        &mut self,
        frame: Bytes,
        session: Option<&str>,
        title: Option<&str>,
        out: &mut Vec<Action>,
    ) {
        let Some(mut msg) = wire::parse_value(&frame) else {
            out.push(Action::ToClient(frame));
            return;
        };
        if let Some(session) = session {
            msg["params"]["sessionId"] = json!(session);
        }
        if let Some(title) = title {
            if let Some(tc) = msg
                .pointer_mut("/params/toolCall")
                .and_then(Value::as_object_mut)
            {
                tc.insert("title".into(), json!(title));
            }
            self.report_once(
                "permission-without-title",
                out,
                "a permission request without a title, for a tool call the client's thread does not hold: given the tool call's title (Zed refuses it otherwise; noted once)".into(),
            );
        }
        out.push(Action::ToClient(write::line(&msg)));
    }

    /// Send a request that a child owns to the session the client knows for it. A request
    /// no child owns is handed back; one that names no session goes out as it is.
    fn route_to_owner(
        &mut self,
        frame: Bytes,
        view: Option<RequestView<'_>>,
        found: Option<keys::Found>,
        out: &mut Vec<Action>,
    ) -> Option<Unowned> {
        // Borrowed: a permission request carries a whole tool call (often kilobytes), read in
        // one pass; a tree is built only when the request must be rewritten or a parent key
        // must be read.
        let body = frame.clone();
        let Some(req) = view.or_else(|| RequestView::read(wire::line_body(&body))) else {
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
        let tool_raw = params.tool_call;
        let untitled = method == "session/request_permission"
            && !params.head.as_ref().is_some_and(|h| h.titled);
        let tool = params
            .head
            .and_then(|h| h.tool_call_id)
            .or(params.tool_call_id)
            .map(Cow::into_owned);
        let shown_elicitation = method == "elicitation/create"
            && match params.mode.as_deref() {
                Some("form") => true,
                Some("url") => params.url.as_deref().is_some_and(web_url_with_host),
                _ => false,
            };
        let owner = self
            .reg
            .by_agent_child(&sid)
            .or_else(|| tool.as_deref().and_then(|t| self.reg.tool_owner(&sid, t)))
            .cloned()
            .or_else(|| {
                // A parent key names a spawn: none without children, none in the tool call if
                // the whole frame has none.
                if self.reg.is_empty() || found.is_some_and(|f| !f.has(keys::kind::PARENT)) {
                    return None;
                }
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
                untitled: untitled && self.zed(),
                frame,
            });
        };
        let target = self.visible_session(cid.as_str());
        let target_is_child = self.reg.is_child(&target);
        if shown_elicitation && target_is_child && self.zed() {
            // Zed's main branch shows it as an entry of the child's thread.
            if let Some(child) = self.reg.by_session_id_mut(&target) {
                child.entries.push_elicitation();
            }
        }
        // Zed upserts the request's tool call into the thread it goes to: one that thread
        // does not hold needs a title, or Zed refuses the request and shows nothing.
        let title = match (&tool, untitled && self.zed()) {
            (Some(t), true) => {
                let holds = if target_is_child {
                    self.reg
                        .by_session_id(&target)
                        .is_some_and(|c| c.entries.knows_tool(t))
                } else {
                    self.thread_tools.contains(t)
                };
                (!holds).then(|| self.title_for(Some(&cid), t, &frame))
            }
            _ => None,
        };
        if method == "session/request_permission"
            && self.zed()
            && self.held.requests_on_cards
            && target_is_child_elsewhere(&target, &cid)
        {
            if let Some(t) = &tool {
                if self.send_on_card(&frame, &cid, &target, t, out) {
                    return None;
                }
            }
        }
        if target == sid && title.is_none() {
            out.push(Action::ToClient(frame));
        } else {
            let session = (target != sid).then_some(target.as_str());
            self.send_rewritten(frame, session, title.as_deref(), out);
        }
        None
    }

    /// A child's permission request for the thread `target`, which is not the child's: Zed's
    /// main branch would put the child's tool call into that thread for good. The card there
    /// that leads to the child (its own, or an ancestor child's) stands for it instead: the
    /// request names the card, titled with what is asked, and the card's title comes back
    /// when Zed answers. False if no such card is known (the request goes as it would).
    fn send_on_card(
        &mut self,
        frame: &Bytes,
        cid: &ChildId,
        target: &str,
        tool: &str,
        out: &mut Vec<Action>,
    ) -> bool {
        let Some(card) = self.card_in(cid, target) else {
            return false;
        };
        let Some(mut msg) = wire::parse_value(frame) else {
            return false;
        };
        let Some(id) = msg.get("id").map(Value::to_string) else {
            return false;
        };
        let asked = str_field(&msg["params"]["toolCall"], "title")
            .map(str::to_owned)
            .or_else(|| self.reg.get(cid).and_then(|c| recorded_title(c, tool)))
            .unwrap_or_else(|| zed::fallback_title(&msg["params"]["toolCall"]));
        let Some(shown) = self.reg.get(&card) else {
            return false;
        };
        let title = if shown.title.is_empty() {
            asked
        } else {
            format!("{} · {asked}", shown.title)
        };
        msg["params"]["sessionId"] = json!(target);
        msg["params"]["toolCall"] = json!({"toolCallId": shown.spawn_id, "title": title});
        if self.held.on_cards.len() >= ON_CARDS_MAX {
            self.held.on_cards.remove(0);
        }
        self.held.on_cards.push(OnCard {
            id,
            session: target.to_owned(),
            card,
        });
        out.push(Action::ToClient(write::line(&msg)));
        true
    }

    /// The child whose card is in the thread `target` on the way from `cid` up to it.
    fn card_in(&self, cid: &ChildId, target: &str) -> Option<ChildId> {
        let mut cur = self.reg.get(cid)?;
        for _ in 0..64 {
            if cur.parent.as_str() == target {
                return Some(cur.id.clone());
            }
            cur = self.reg.by_session_id(cur.parent.as_str())?;
        }
        None
    }

    /// The client answered request `id` (its JSON text): if it was shown on a card, the card
    /// gets its title back (the progress the flavour shows, else the task).
    pub(in crate::engine) fn card_request_answered(&mut self, id: &str, out: &mut Vec<Action>) {
        let Some(pos) = self.held.on_cards.iter().position(|c| c.id == id) else {
            return;
        };
        let on = self.held.on_cards.remove(pos);
        let Some(child) = self.reg.get(&on.card) else {
            return;
        };
        let title = self
            .render
            .progress_title(child)
            .filter(|_| child.progress().steps > 0 && !child.card_is_final())
            .unwrap_or_else(|| child.title.clone());
        if let Some(update) = self.render.card_update(child, None, Some(&title)) {
            self.emit(&on.session, update, out);
        }
    }

    /// A tool call was seen: permission requests held for it can be routed now.
    pub(in crate::engine) fn release_held(
        &mut self,
        session: &str,
        tool_call_id: &str,
        out: &mut Vec<Action>,
    ) {
        if self.held.is_empty() {
            return;
        }
        let ready = self
            .held
            .take(|h| h.session == session && h.tool_call_id == tool_call_id);
        for h in ready {
            self.route_released_request(h.frame, out);
        }
    }
}

/// Whether a request of the child `cid` for `target` goes to a thread other than the child's
/// own (the child is not loaded in the client).
fn target_is_child_elsewhere(target: &str, cid: &ChildId) -> bool {
    target != cid.as_str()
}

/// The title a child's thread recorded for one of its tool calls (the latest one given).
fn recorded_title(child: &Child, tool: &str) -> Option<String> {
    child.tool_title(tool).map(str::to_owned)
}

/// An http(s) URL with a host: the only URL elicitations Zed shows.
fn web_url_with_host(url: &str) -> bool {
    url.strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .and_then(|rest| rest.split(['/', '?', '#']).next())
        .is_some_and(|host| !host.is_empty())
}
