//! Calls beside a spawn that carry its child's work (AgentPool's `🤖 <name>` box, tool call
//! id `subagent:<name>:<depth>`, its content re-sent whole on every update). A box goes to the
//! one open spawn whose `spawn_key` equals its `key`: it is hidden from the parent, and its text
//! becomes that child's thread (`subagents::preset::transcript::fold`). With no such spawn, or several (two runs of
//! the same agent at once), it stays in the parent, as the agent sent it.
//!
//! Where a box went is decided when it opens and kept for its updates, so the client never
//! sees an update of a call it was not shown. A box that opens again after it completed (the
//! same id, a later run) goes on in the same child while that child's spawn is open, after
//! its earlier entries; it never starts a card of its own.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::{str_field, Action, Engine, NoteLevel};
use crate::subagents::ids::ChildId;
use crate::subagents::pair::{Pair, PairMap, PairRef};
use crate::subagents::preset::detect::{sibling_owner, SiblingOwner};
use crate::subagents::preset::spec::{SiblingContent, TranscriptOn};
use crate::subagents::preset::transcript::fold::Fold;
use crate::wire::write;

/// Boxes remembered, at most (those routed to the parent are dropped past it).
const MAX_BOXES: usize = 4096;

#[derive(Debug, Clone)]
struct BoxRoute {
    /// The child it belongs to; `None`: it stays in the parent.
    owner: Option<ChildId>,
    /// Between its `tool_call` and its final status.
    open: bool,
    /// The parent was shown it (its child went over a limit).
    shown: bool,
}

/// Open spawns' sibling keys and where each box went.
#[derive(Debug, Default)]
pub(in crate::engine) struct Siblings {
    /// What a spawn's sibling calls name it by (AgentPool: the agent's name).
    keys: HashMap<ChildId, String>,
    /// By (agent session, box tool call id).
    boxes: PairMap<BoxRoute>,
}

impl Siblings {
    pub(in crate::engine) fn set_key(&mut self, child: &ChildId, key: String) {
        self.keys.insert(child.clone(), key);
    }

    /// The engine let go of a child.
    pub(in crate::engine) fn forget(&mut self, child: &ChildId) {
        self.keys.remove(child);
        self.boxes
            .retain(|_, b| b.owner.as_ref().is_none_or(|o| o != child));
    }

    /// The parent is shown this box: whether it is the first time.
    fn first_shown(&mut self, sid: &str, box_id: &str) -> bool {
        self.boxes
            .get_mut(&PairRef(sid, box_id))
            .is_some_and(|b| !std::mem::replace(&mut b.shown, true))
    }

    pub(in crate::engine) fn footprint(&self) -> [(&'static str, usize); 2] {
        [
            ("sibling_keys", self.keys.len()),
            ("sibling_boxes", self.boxes.len()),
        ]
    }
}

impl Engine {
    /// A tool call (or update) that may be a sibling call: true when it was taken (its work
    /// into the child thread, nothing to the parent), false to route it as usual.
    pub(in crate::engine) fn sibling_update(
        &mut self,
        sid: &str,
        raw: &str,
        out: &mut Vec<Action>,
    ) -> bool {
        let Ok(update) = serde_json::from_str::<Value>(raw) else {
            return false;
        };
        let detector = self.detector.clone();
        let Some(call) = detector.sibling(&update) else {
            return false;
        };
        if detector.transcript_on(call.preset) != Some(TranscriptOn::Sibling) {
            // Without a grammar the box's text cannot become the child's thread.
            return false;
        }
        let Some(box_id) = str_field(&update, "toolCallId") else {
            return false;
        };
        let opens = str_field(&update, "sessionUpdate") == Some("tool_call");
        let known = self.siblings.boxes.get(&PairRef(sid, box_id)).cloned();
        let owner = match known {
            Some(b) if b.open || !opens => b.owner,
            known => {
                // First sight, or opened again after it completed.
                let again = known.is_some();
                let earlier = known.and_then(|b| b.owner);
                let owner = match &earlier {
                    Some(c) if self.reg.get(c).is_some_and(|c| !c.card_is_final()) => {
                        earlier.clone()
                    }
                    // Shown in the parent before: it goes on there.
                    None if again => None,
                    _ => self.sibling_owner(sid, box_id, &call.key, out),
                };
                if let Some(fold) = owner
                    .as_ref()
                    .filter(|o| again && earlier.as_ref() == Some(*o))
                    .and_then(|o| self.reg.get_mut(o))
                    .and_then(|c| c.fold.as_mut())
                {
                    fold.restart();
                }
                if self.siblings.boxes.len() >= MAX_BOXES {
                    self.siblings.boxes.retain(|_, b| b.owner.is_some());
                }
                self.siblings.boxes.insert(
                    Pair::new(sid, box_id),
                    BoxRoute {
                        owner: owner.clone(),
                        open: true,
                        shown: false,
                    },
                );
                owner
            }
        };
        if matches!(str_field(&update, "status"), Some("completed" | "failed")) {
            if let Some(b) = self.siblings.boxes.get_mut(&PairRef(sid, box_id)) {
                b.open = false;
            }
        }
        let Some(cid) = owner else {
            return false;
        };
        if self.reg.get(&cid).is_some_and(|c| c.passes_through()) {
            // Over a limit: the child's work reaches the parent as the agent sent it, the box
            // announced as a tool call the first time the parent sees it.
            if !self.siblings.first_shown(sid, box_id) || opens {
                return false;
            }
            let mut update = update;
            update["sessionUpdate"] = Value::from("tool_call");
            out.push(Action::ToClient(write::session_update(sid, &update)));
            return true;
        }
        let Some((grammar, text)) = detector.transcript_text_of(call.preset, &update) else {
            // Only a status: nothing for the thread, and nothing the parent should see.
            return true;
        };
        let Some(child) = self.reg.get_mut(&cid) else {
            return true;
        };
        let base = format!("{}-box", child.spawn_id);
        let fold = child.fold.get_or_insert_with(|| Box::new(Fold::new(&base)));
        let updates = match call.content {
            SiblingContent::Replace => fold.replaced(grammar, &text, true),
            SiblingContent::Append => fold.appended(grammar, &text),
        };
        self.record_folded(&cid, updates, out);
        true
    }

    /// The one open spawn on `sid` a box with `key` belongs to; says why when there is none.
    fn sibling_owner(
        &mut self,
        sid: &str,
        box_id: &str,
        key: &str,
        out: &mut Vec<Action>,
    ) -> Option<ChildId> {
        let mut open: Vec<(String, String, ChildId)> = self
            .reg
            .iter()
            .filter(|c| c.agent_session.as_str() == sid && !c.card_is_final())
            .filter_map(|c| {
                let k = self.siblings.keys.get(&c.id)?;
                Some((c.spawn_id.clone(), k.clone(), c.id.clone()))
            })
            .collect();
        // In a fixed order (the map's is random per process): the same input, the same note.
        open.sort();
        let found = sibling_owner(
            key,
            open.iter().map(|(s, k, _)| (s.as_str(), Some(k.as_str()))),
        );
        let msg = match found {
            SiblingOwner::One(spawn) => {
                return open
                    .iter()
                    .find(|(s, _, _)| s == spawn)
                    .map(|(_, _, c)| c.clone());
            }
            SiblingOwner::Ambiguous(spawns) => format!(
                "`{box_id}` carries the work of `{key}`, which {} open spawns ({}) delegate to: it cannot be told whose, and stays in session {sid}",
                spawns.len(),
                spawns.join(", ")
            ),
            SiblingOwner::None => format!(
                "`{box_id}` carries the work of `{key}`, which no open spawn delegates to: it stays in session {sid}"
            ),
        };
        self.note(out, NoteLevel::Info, msg);
        None
    }
}
