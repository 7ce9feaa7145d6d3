//! Live progress on a card, paced: at most one progress update of a card per
//! [`PROGRESS_INTERVAL_MS`], the latest state always delivered.
//!
//! Some agents report a running child many times a second (pi's spinner: every 80 ms per
//! child). Each report would be a card update for the client to redraw (and, for a card in
//! another child's thread, a write to the store). The first report of a quiet card goes out at
//! once; later ones within the interval are merged into one held update, sent when the
//! interval is over ([`Engine::poll_timeout`]), or before any other update of that card. A
//! card that ends drops what it held: its final update carries the final state.
//!
//! A progress frame of the agent read by its text ([`FrameCard`]) is held as that text: the
//! card's update is built from it only when it goes out, and a held frame the next one
//! replaces whole is never built. One that goes out to a top-level thread is written into
//! its line from that text, without a tree, when the text is serde_json's compact form.

use bytes::Bytes;
use hashbrown::HashMap;
use serde_json::Value;

use crate::engine::{Action, Engine, Millis};
use crate::subagents::ids::{ChildId, ClientSessionId};
use crate::subagents::render::{CardChange, SpawnPatch};
use crate::wire::compact;
use crate::wire::write::session_update_with;

/// The shortest time between two progress updates of one card.
pub(in crate::engine) const PROGRESS_INTERVAL_MS: Millis = 250;

/// The pacing state of every card that showed progress and is still open.
#[derive(Debug, Default)]
pub(in crate::engine) struct Pacer {
    cards: HashMap<ChildId, Paced>,
}

#[derive(Debug)]
struct Paced {
    /// When the card's last progress update went out.
    sent_at: Millis,
    held: Option<Held>,
}

/// A progress update waiting for its card's interval to end.
#[derive(Debug)]
struct Held {
    due: Millis,
    /// The session whose thread holds the card.
    parent: ClientSessionId,
    change: Pending,
}

/// A change of a card as it waits to go out.
#[derive(Debug)]
enum Pending {
    Built(CardChange),
    Frame(FrameCard),
}

/// A card's update still as the agent's text: the update of the spawn card as the agent sent
/// it (a `tool_call_update`), the title the card gets, and what the output sets on it after
/// the title.
#[derive(Debug)]
pub(in crate::engine) struct FrameCard {
    update: String,
    /// Where each of the update's keys is in its text, in order.
    keys: Vec<(usize, usize)>,
    title: String,
    patch: SpawnPatch,
}

impl FrameCard {
    /// `keys`: where each of the update's keys is in its text (offset, length), in order.
    pub(in crate::engine) fn new(
        update: &str,
        keys: Vec<(usize, usize)>,
        title: String,
        patch: SpawnPatch,
    ) -> FrameCard {
        FrameCard {
            update: update.to_owned(),
            keys,
            title,
            patch,
        }
    }

    fn key_texts(&self) -> impl Iterator<Item = &str> {
        self.keys
            .iter()
            .map(|&(at, len)| self.update.get(at..at + len).unwrap_or_default())
    }

    /// Whether merging `later` over this one gives `later` itself: the same keys in the same
    /// order, each of which `later` sets again.
    fn replaced_by(&self, later: &FrameCard) -> bool {
        self.key_texts().eq(later.key_texts()) && self.patch.keys() == later.patch.keys()
    }

    /// The card's update (of the child `cid`): the agent's update (parsed now), titled,
    /// patched. `None` when serde_json refuses the text the walker accepted (a number out of
    /// its range), as the tree reading would have.
    fn build(self, cid: &ChildId) -> Option<Value> {
        let mut update: Value = serde_json::from_str(&self.update).ok()?;
        let obj = update.as_object_mut()?;
        obj.insert("title".into(), Value::String(self.title));
        for (k, v) in self.patch.members(cid) {
            obj.insert(k, v);
        }
        Some(update)
    }

    /// The `session/update` line of [`FrameCard::build`]'s update for `session`, written
    /// without a tree: the agent's text with the title set in place (or after its last
    /// member) and the patch's members after that, which is what serializing the built update
    /// gives when the agent's text is serde_json's compact writing of itself. `None` when it
    /// is not, or when it has a key the patch sets: only the tree then gives the same bytes.
    fn spliced_line(&self, session: &str, cid: &ChildId) -> Option<Bytes> {
        let text = self.update.as_str();
        let keys = self.patch.keys();
        if self.keys.is_empty()
            || !compact::is_compact(text)
            || self.key_texts().any(|k| keys.iter().any(|p| is_key(k, p)))
        {
            return None;
        }
        // Compact: each value runs from just after its key's colon to the comma before the
        // next key, the last one's to the closing brace.
        let b = text.as_bytes();
        let last = b.len().checked_sub(1)?;
        let title = self.key_texts().position(|k| is_key(k, "title"));
        let (head, tail) = match title {
            Some(i) => {
                let &(at, len) = self.keys.get(i)?;
                let end = self
                    .keys
                    .get(i + 1)
                    .map_or(Some(last), |&(next, _)| next.checked_sub(1))?;
                (b.get(..at + len + 1)?, b.get(end..last)?)
            }
            None => (b.get(..last)?, &[][..]),
        };
        let size = text.len() + self.title.len() + 128;
        Some(session_update_with(session, size, |line| {
            line.extend_from_slice(head);
            if title.is_none() {
                line.extend_from_slice(br#","title":"#);
            }
            // A string serialises infallibly into a Vec.
            let _ = serde_json::to_writer(&mut *line, &self.title);
            line.extend_from_slice(tail);
            if !keys.is_empty() {
                line.push(b',');
                self.patch.write_members(cid, line);
            }
            line.push(b'}');
        }))
    }
}

/// Whether a key as written in a compact text (quotes included) is `name`, a key written
/// without escapes.
fn is_key(raw: &str, name: &str) -> bool {
    raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) == Some(name)
}

impl Pending {
    fn built(self, cid: &ChildId) -> Option<CardChange> {
        match self {
            Pending::Built(change) => Some(change),
            Pending::Frame(frame) => frame.build(cid).map(CardChange::Update),
        }
    }
}

/// `later` applied over `earlier` (updates of the card of `cid`), building what has to be
/// built.
fn merge_pending(cid: &ChildId, earlier: Pending, later: Pending) -> Pending {
    match (earlier, later) {
        (Pending::Frame(a), Pending::Frame(b)) if a.replaced_by(&b) => Pending::Frame(b),
        // A frame that does not build never reached the card: the other one stands.
        (earlier, later) => match earlier.built(cid) {
            None => later,
            Some(e) => match later.built(cid) {
                Some(l) => Pending::Built(merge(e, l)),
                None => Pending::Built(e),
            },
        },
    }
}

impl Pacer {
    /// When the earliest held update is due.
    pub(in crate::engine) fn next_due(&self) -> Option<Millis> {
        self.cards
            .values()
            .filter_map(|p| p.held.as_ref().map(|h| h.due))
            .min()
    }

    pub(in crate::engine) fn len(&self) -> usize {
        self.cards.len()
    }
}

/// `later` applied over `earlier`: a card update replaces the fields it names, so the merge
/// of two is one update with the later value of every field.
fn merge(earlier: CardChange, later: CardChange) -> CardChange {
    match (earlier, later) {
        (CardChange::Line(_), later @ CardChange::Line(_)) => later,
        (earlier, later) => {
            let Some(mut base) = as_update(earlier) else {
                return later;
            };
            // Taken, not copied: a held update is merged with every report of its interval.
            let top = match later {
                CardChange::Update(v) => v,
                CardChange::Line(line) => match line_update(&line) {
                    Some(v) => v,
                    None => return CardChange::Line(line),
                },
            };
            if let (Some(b), Value::Object(t)) = (base.as_object_mut(), top) {
                for (k, v) in t {
                    b.insert(k, v);
                }
            }
            CardChange::Update(base)
        }
    }
}

/// The update a change carries (a written line is read back: rare, only when two kinds of
/// progress meet within one interval).
fn as_update(change: CardChange) -> Option<Value> {
    match change {
        CardChange::Update(v) => Some(v),
        CardChange::Line(line) => line_update(&line),
    }
}

fn line_update(line: &Bytes) -> Option<Value> {
    let mut msg: Value = serde_json::from_slice(line).ok()?;
    Some(msg.pointer_mut("/params/update")?.take())
}

impl Engine {
    /// What a child's step did to its card: a settled card's grown range goes out (and is
    /// stored) at once, an open card's progress is paced.
    pub(in crate::engine) fn card_changed(
        &mut self,
        cid: &ChildId,
        parent: ClientSessionId,
        settled: bool,
        card: Option<CardChange>,
        out: &mut Vec<Action>,
    ) {
        match card {
            Some(CardChange::Update(card)) if settled => {
                self.persist_state(cid, out);
                self.emit(parent.as_str(), card, out);
            }
            Some(change) => self.pace_progress(cid, parent, change, out),
            None => {}
        }
    }

    /// A progress update of a child's card (in `parent`'s thread): out now if the card was
    /// quiet for an interval, else held (merged with what is held) until the interval ends.
    pub(in crate::engine) fn pace_progress(
        &mut self,
        cid: &ChildId,
        parent: ClientSessionId,
        change: CardChange,
        out: &mut Vec<Action>,
    ) {
        self.pace(cid, parent, Pending::Built(change), out);
    }

    /// [`Engine::pace_progress`] of a progress frame kept as text until it goes out.
    pub(in crate::engine) fn pace_frame(
        &mut self,
        cid: &ChildId,
        parent: ClientSessionId,
        frame: FrameCard,
        out: &mut Vec<Action>,
    ) {
        self.pace(cid, parent, Pending::Frame(frame), out);
    }

    fn pace(
        &mut self,
        cid: &ChildId,
        parent: ClientSessionId,
        change: Pending,
        out: &mut Vec<Action>,
    ) {
        let now = self.now;
        let paced = match self.pace.cards.get_mut(cid) {
            Some(p) => p,
            None => {
                self.pace.cards.insert(
                    cid.clone(),
                    Paced {
                        sent_at: now,
                        held: None,
                    },
                );
                self.send_change(cid, &parent, change, out);
                return;
            }
        };
        let due = paced.sent_at.saturating_add(PROGRESS_INTERVAL_MS);
        let change = match paced.held.take() {
            Some(held) => merge_pending(cid, held.change, change),
            None => change,
        };
        if now >= due {
            paced.sent_at = now;
            self.send_change(cid, &parent, change, out);
        } else {
            paced.held = Some(Held {
                due,
                parent,
                change,
            });
        }
    }

    /// Another update of the card follows: what progress it held goes out first.
    pub(in crate::engine) fn settle_progress(&mut self, cid: &ChildId, out: &mut Vec<Action>) {
        let now = self.now;
        let Some(held) = self.pace.cards.get_mut(cid).and_then(|p| {
            let held = p.held.take()?;
            p.sent_at = now;
            Some(held)
        }) else {
            return;
        };
        self.send_change(cid, &held.parent, held.change, out);
    }

    /// The card ended (or the child is let go of): what it held is superseded.
    pub(in crate::engine) fn end_progress(&mut self, cid: &ChildId) {
        self.pace.cards.remove(cid);
    }

    /// Held progress whose interval is over goes out (in a fixed order: the same input gives
    /// the same output).
    pub(in crate::engine) fn progress_due(&mut self, now: Millis, out: &mut Vec<Action>) {
        let mut due: Vec<(Millis, ChildId)> = self
            .pace
            .cards
            .iter()
            .filter_map(|(id, p)| {
                let h = p.held.as_ref()?;
                (h.due <= now).then(|| (h.due, id.clone()))
            })
            .collect();
        due.sort();
        for (_, cid) in due {
            self.settle_progress(&cid, out);
        }
    }

    /// Every held update goes out now (the agent is gone: its last word on each card).
    pub(in crate::engine) fn flush_progress(&mut self, out: &mut Vec<Action>) {
        let mut ids: Vec<ChildId> = self.pace.cards.keys().cloned().collect();
        ids.sort();
        for cid in ids {
            self.settle_progress(&cid, out);
        }
    }

    fn send_change(
        &mut self,
        cid: &ChildId,
        parent: &ClientSessionId,
        change: Pending,
        out: &mut Vec<Action>,
    ) {
        // A card in a top-level thread, whose update goes to the client as it is: its line
        // written from the agent's text where that gives the same bytes.
        if let Pending::Frame(frame) = &change {
            if self.reg.resolve(parent.as_str()).is_none() {
                if let Some(line) = frame.spliced_line(parent.as_str(), cid) {
                    out.push(Action::ToClient(line));
                    return;
                }
            }
        }
        match change.built(cid) {
            Some(CardChange::Update(card)) => self.emit(parent.as_str(), card, out),
            Some(CardChange::Line(line)) => out.push(Action::ToClient(line)),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::model::TurnRange;
    use crate::wire::pointer::{PointerSet, Spans};
    use serde_json::json;

    /// A held frame of `text` titled `title`, its keys found as the text reading finds them.
    fn frame_card(text: &str, title: &str) -> FrameCard {
        let none = PointerSet::new([]);
        let spans = Spans::find(text, &none).expect("readable");
        let base = text.as_ptr() as usize;
        let keys = spans
            .keys()
            .iter()
            .map(|k| (k.as_ptr() as usize - base, k.len()))
            .collect();
        let turn = TurnRange {
            start: 2,
            end: Some(7),
        };
        FrameCard::new(text, keys, title.into(), SpawnPatch::ZedSessionInfo(turn))
    }

    #[test]
    fn a_spliced_line_is_the_built_update_serialized() {
        let cid = ChildId::known("sub-1".into());
        for text in [
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"in_progress"}"#,
            r#"{"title":"Agent","sessionUpdate":"tool_call_update","toolCallId":"t"}"#,
            r#"{"sessionUpdate":"tool_call_update","title":"Agent","toolCallId":"t"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","title":"Agent"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","title":{"a":[1,"x\"y"]}}"#,
        ] {
            let card = frame_card(text, "Task \"a\" · é");
            let line = card.spliced_line("s", &cid).expect("compact: spliced");
            let built = card.build(&cid).expect("builds");
            assert_eq!(
                line,
                crate::wire::write::session_update("s", &built),
                "{text}"
            );
        }
        for text in [
            r#"{"sessionUpdate": "tool_call_update","toolCallId":"t"}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","n":1.0}"#,
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","_meta":{}}"#,
        ] {
            let card = frame_card(text, "Task");
            assert!(
                card.spliced_line("s", &cid).is_none(),
                "{text}: the tree's way"
            );
        }
    }

    #[test]
    fn merged_updates_keep_the_later_value_of_every_field() {
        let a = CardChange::Update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t",
            "title": "a", "content": [1]}),
        );
        let b = CardChange::Update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t",
            "title": "b", "rawOutput": {"x": 1}}),
        );
        let CardChange::Update(m) = merge(a, b) else {
            panic!("an update");
        };
        assert_eq!(m["title"], "b");
        assert_eq!(m["content"], json!([1]));
        assert_eq!(m["rawOutput"], json!({"x": 1}));
        let line = crate::wire::write::session_update(
            "s",
            &json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "c"}),
        );
        let CardChange::Update(m) = merge(CardChange::Update(m), CardChange::Line(line)) else {
            panic!("an update");
        };
        assert_eq!(
            (m["title"].clone(), m["content"].clone()),
            (json!("c"), json!([1]))
        );
    }
}
