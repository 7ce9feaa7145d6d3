//! A bounded set of recent (session, id) pairs.

use crate::subagents::pair::{Pair, PairRef, PairSet};

/// A bounded set that forgets its oldest members: the last [`RecentSet::CAPACITY`] to
/// [`RecentSet::CAPACITY`] × 2 inserted, kept as two generations (when the newer one is full
/// it becomes the older, and the older is dropped), so an insert is one hash insert, with no
/// queue of keys beside the set.
#[derive(Debug, Default)]
pub(super) struct RecentSet {
    newer: PairSet,
    older: PairSet,
}

impl RecentSet {
    const CAPACITY: usize = 4096;

    pub(super) fn insert(&mut self, session: &str, id: &str) {
        if self.contains(session, id) {
            return;
        }
        if self.newer.len() >= Self::CAPACITY {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(Pair::new(session, id));
    }

    pub(super) fn contains(&self, session: &str, id: &str) -> bool {
        let key = PairRef(session, id);
        self.newer.contains(&key) || self.older.contains(&key)
    }

    pub(super) fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }
}
