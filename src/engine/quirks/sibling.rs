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
//!
//! A re-sent box is read by what changed: its bytes are compared with the last update's, and
//! one that differs only by text appended at the end of its transcript string is read as that
//! piece alone, with no tree built (`grown_piece`). Anything else is read whole.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;

use crate::engine::{str_field, Action, Engine, NoteLevel};
use crate::subagents::ids::ChildId;
use crate::subagents::pair::{Pair, PairMap, PairRef};
use crate::subagents::preset::detect::{sibling_owner, PresetId, SiblingOwner};
use crate::subagents::preset::spec::{SiblingContent, TranscriptOn};
use crate::subagents::preset::transcript::fold::Fold;
use crate::wire::write;

/// Boxes remembered, at most (those routed to the parent are dropped past it).
const MAX_BOXES: usize = 4096;

#[derive(Debug)]
struct BoxRoute {
    /// The child it belongs to; `None`: it stays in the parent.
    owner: Option<ChildId>,
    /// Between its `tool_call` and its final status.
    open: bool,
    /// The parent was shown it (its child went over a limit).
    shown: bool,
    /// Its last update, when the next may be read by what it appended.
    last: Option<LastBox>,
}

/// A box's last update, as the next is compared with.
#[derive(Debug)]
struct LastBox {
    /// The update's JSON text.
    raw: String,
    /// Its transcript string's contents (between the quotes) in `raw`.
    text: Range<usize>,
    preset: PresetId,
    /// The child's fold after it ([`Fold::version`]): no other box's text came between.
    version: u64,
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
        tool: &str,
        raw: &str,
        out: &mut Vec<Action>,
    ) -> bool {
        if self.sibling_grown(sid, tool, raw, out) {
            return true;
        }
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
        let known = self
            .siblings
            .boxes
            .get_mut(&PairRef(sid, box_id))
            .map(|b| (b.owner.clone(), b.open, b.last.take()));
        let owner = match known {
            Some((owner, open, _)) if open || !opens => owner,
            known => {
                // First sight, or opened again after it completed.
                let again = known.is_some();
                let earlier = known.and_then(|(owner, _, _)| owner);
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
                        last: None,
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
        let version = fold.version();
        // Where the transcript is in these bytes, for the next update to be compared with.
        let last = (call.content == SiblingContent::Replace)
            .then(|| detector.transcript_source_alone(call.preset))
            .flatten()
            .and_then(|source| source.span_in(raw))
            .filter(|span| {
                let in_bytes = raw.get(span.clone()).and_then(decoded);
                in_bytes.as_deref() == Some(&*text)
            })
            .map(|span| LastBox {
                raw: raw.to_owned(),
                text: span,
                preset: call.preset,
                version,
            });
        let open = self
            .siblings
            .boxes
            .get_mut(&PairRef(sid, box_id))
            .filter(|b| b.open);
        if let Some(b) = open {
            b.last = last;
        }
        self.record_folded(&cid, updates, out);
        true
    }

    /// A box update that differs from the box's last one only by text appended to its
    /// transcript: that piece read on into the child's fold, with no tree built. False when
    /// it is anything else (then it is read whole).
    fn sibling_grown(&mut self, sid: &str, box_id: &str, raw: &str, out: &mut Vec<Action>) -> bool {
        let key = PairRef(sid, box_id);
        let Some((cid, preset, version, piece_raw)) = self.siblings.boxes.get(&key).and_then(|b| {
            let last = b.last.as_ref().filter(|_| b.open)?;
            let piece = grown_piece(&last.raw, last.text.end, raw)?;
            Some((b.owner.clone()?, last.preset, last.version, piece))
        }) else {
            return false;
        };
        let Some(piece) = decoded(piece_raw) else {
            return false;
        };
        let detector = self.detector.clone();
        let Some(grammar) = detector.transcript_grammar(preset) else {
            return false;
        };
        let Some(fold) = self
            .reg
            .get_mut(&cid)
            .filter(|c| !c.passes_through())
            .and_then(|c| c.fold.as_mut())
            .filter(|f| f.version() == version)
        else {
            return false;
        };
        let updates = fold.grew(grammar, &piece);
        let version = fold.version();
        if let Some(last) = self
            .siblings
            .boxes
            .get_mut(&key)
            .and_then(|b| b.last.as_mut())
        {
            last.raw.insert_str(last.text.end, piece_raw);
            last.text.end += piece_raw.len();
            last.version = version;
        }
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

/// The bytes `new` holds beyond `old` when it is `old` with them inserted at `at` (the end of
/// the transcript string's contents); `None` when it differs in any other way. Equal bytes
/// give an empty piece.
fn grown_piece<'n>(old: &str, at: usize, new: &'n str) -> Option<&'n str> {
    let added = new.len().checked_sub(old.len())?;
    let (o, n) = (old.as_bytes(), new.as_bytes());
    if n.get(..at)? != o.get(..at)? || n.get(at + added..)? != o.get(at..)? {
        return None;
    }
    new.get(at..at + added)
}

/// The text of a piece of a JSON string's contents, as it reads on from a complete string
/// before it; `None` when it is no such piece (an unescaped quote, an escape cut short, a
/// low surrogate that would pair with what came before).
fn decoded(piece: &str) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    if !piece.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20) {
        return Some(Cow::Borrowed(piece));
    }
    let low_surrogate = piece.len() >= 4
        && piece.as_bytes()[..3].eq_ignore_ascii_case(b"\\ud")
        && matches!(piece.as_bytes()[3].to_ascii_lowercase(), b'c'..=b'f');
    if low_surrogate {
        return None;
    }
    serde_json::from_str::<String>(&format!("\"{piece}\""))
        .ok()
        .map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grown_box_is_told_by_its_bytes() {
        let old = r#"{"content":"ab","title":"t"}"#;
        let at = old.find("\",\"title").expect("text end");
        assert_eq!(grown_piece(old, at, old), Some(""));
        assert_eq!(
            grown_piece(old, at, r#"{"content":"abc\n","title":"t"}"#),
            Some("c\\n")
        );
        // A change anywhere else, or in the middle of the text, is no growth.
        assert_eq!(
            grown_piece(old, at, r#"{"content":"ab","title":"tt"}"#),
            None
        );
        assert_eq!(
            grown_piece(old, at, r#"{"content":"aXb","title":"t"}"#),
            None
        );
        assert_eq!(grown_piece(old, at, r#"{"content":"a","title":"t"}"#), None);
    }

    #[test]
    fn only_whole_string_pieces_are_read() {
        assert_eq!(decoded("plain é").as_deref(), Some("plain é"));
        assert_eq!(decoded(r"a\n\u00e9\\").as_deref(), Some("a\né\\"));
        // An unescaped quote ends the string: what follows is structure, not text.
        assert_eq!(decoded(r#"a","x":"b"#), None);
        // A backslash cut from its escape would escape the closing quote.
        assert_eq!(decoded("a\\"), None);
        assert_eq!(decoded(r"\udc00x"), None);
        assert_eq!(decoded("a\u{1}"), None);
    }
}
