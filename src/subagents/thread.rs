//! A child's thread: its updates in order, as the exact JSON the proxy replays. The oldest
//! ones may leave memory once the store holds them (`spill`); they are read back from the
//! store (`refill`) before anything needs the whole thread again (a `session/load` of the
//! child, a parent's replay). The first update (the task) always stays.

use std::sync::Arc;

/// A child's updates, some of them possibly held only by the store.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    /// Every update in order; `None` once it left memory.
    texts: Vec<Option<Arc<str>>>,
    /// Bytes of the updates held in memory.
    held_bytes: usize,
    /// Updates that left memory.
    spilled: usize,
    /// Where the next spill looks for the oldest update still held (never the first).
    next_spill: usize,
}

impl Thread {
    /// A whole thread from texts (the store's copy of a child).
    pub fn from_texts(texts: impl IntoIterator<Item = Arc<str>>) -> Thread {
        let mut thread = Thread::default();
        for text in texts {
            thread.push(text);
        }
        thread
    }

    /// Updates recorded, held in memory or not.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Whether every update is in memory.
    pub fn is_whole(&self) -> bool {
        self.spilled == 0
    }

    /// The first update (never spilled).
    pub fn first(&self) -> Option<&Arc<str>> {
        self.texts.first().and_then(Option::as_ref)
    }

    pub fn push(&mut self, text: Arc<str>) {
        self.held_bytes += text.len();
        self.texts.push(Some(text));
    }

    /// The updates in memory with their index in the thread, oldest first (every update when
    /// [`Thread::is_whole`]).
    pub fn held(&self) -> impl DoubleEndedIterator<Item = (usize, &Arc<str>)> {
        self.texts
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
    }

    /// Let the oldest updates but the first leave memory until at most `keep` bytes are held
    /// (the newest update stays whatever its size). Only for updates the store was given.
    pub fn spill(&mut self, keep: usize) {
        let last = self.texts.len().saturating_sub(1);
        self.next_spill = self.next_spill.max(1);
        while self.held_bytes > keep && self.next_spill < last {
            if let Some(text) = self.texts[self.next_spill].take() {
                self.held_bytes -= text.len();
                self.spilled += 1;
            }
            self.next_spill += 1;
        }
    }

    /// Put back what left memory from the store's copy of the thread (every update the store
    /// holds for the child, in order). Returns false, changing nothing, if the copy lacks any
    /// update that left memory (the store lost writes).
    pub fn refill(&mut self, stored: &[String]) -> bool {
        if self.spilled == 0 {
            return true;
        }
        let missing = self
            .texts
            .iter()
            .enumerate()
            .any(|(i, t)| t.is_none() && i >= stored.len());
        if missing {
            return false;
        }
        for (slot, text) in self.texts.iter_mut().zip(stored) {
            if slot.is_none() {
                self.held_bytes += text.len();
                *slot = Some(Arc::from(text.as_str()));
            }
        }
        self.spilled = 0;
        self.next_spill = 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(texts: &[&str]) -> Thread {
        Thread::from_texts(texts.iter().map(|t| Arc::from(*t)))
    }

    fn held(t: &Thread) -> Vec<(usize, String)> {
        t.held().map(|(i, s)| (i, s.to_string())).collect()
    }

    #[test]
    fn spill_keeps_the_first_and_the_newest_within_the_budget() {
        let mut t = thread(&["task", "aaaa", "bbbb", "cccc", "dddd"]);
        t.spill(8);
        assert_eq!(held(&t), [(0, "task".into()), (4, "dddd".into())]);
        assert_eq!(t.len(), 5);
        assert!(!t.is_whole());
        assert_eq!(t.first().map(|s| &**s), Some("task"));
        // The newest update stays even over the budget.
        t.push(Arc::from("eeeeeeeeeeee"));
        t.spill(0);
        assert_eq!(held(&t), [(0, "task".into()), (5, "eeeeeeeeeeee".into())]);
    }

    #[test]
    fn refill_puts_back_what_left_memory() {
        let mut t = thread(&["task", "aaaa", "bbbb", "cccc"]);
        t.spill(0);
        let stored: Vec<String> = ["task", "aaaa", "bbbb", "cccc"].map(String::from).into();
        assert!(t.refill(&stored));
        assert!(t.is_whole());
        assert_eq!(
            held(&t),
            [
                (0, "task".into()),
                (1, "aaaa".into()),
                (2, "bbbb".into()),
                (3, "cccc".into())
            ]
        );
        // Spilled again after more updates: from where memory starts again.
        t.push(Arc::from("dddd"));
        t.spill(8);
        assert_eq!(held(&t), [(0, "task".into()), (4, "dddd".into())]);
    }

    #[test]
    fn refill_from_a_store_that_lost_writes_changes_nothing() {
        let mut t = thread(&["task", "aaaa", "bbbb", "cccc"]);
        t.spill(0);
        let before = held(&t);
        assert!(!t.refill(&["task".to_owned()]));
        assert_eq!(held(&t), before);
        assert!(!t.is_whole());
    }
}
