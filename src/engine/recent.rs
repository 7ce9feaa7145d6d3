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

/// A bounded map from ids to values that forgets its oldest members, in two generations
/// like [`RecentSet`]: it holds the last `capacity` to `capacity` × 2 inserted.
#[derive(Debug)]
pub(super) struct RecentMap<V> {
    newer: hashbrown::HashMap<String, V>,
    older: hashbrown::HashMap<String, V>,
    capacity: usize,
}

impl<V> RecentMap<V> {
    pub(super) fn new(capacity: usize) -> Self {
        RecentMap {
            newer: hashbrown::HashMap::new(),
            older: hashbrown::HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// Insert unless the id is there already (the first value stays).
    pub(super) fn insert(&mut self, id: &str, value: V) {
        if self.contains(id) {
            return;
        }
        if self.newer.len() >= self.capacity {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(id.to_owned(), value);
    }

    pub(super) fn get(&self, id: &str) -> Option<&V> {
        self.newer.get(id).or_else(|| self.older.get(id))
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    pub(super) fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recent_map_stays_bounded_and_keeps_the_recent_ids() {
        let mut m = RecentMap::new(8);
        for n in 0..100 {
            m.insert(&format!("s{n}"), n);
        }
        assert!(m.len() <= 16);
        assert_eq!(m.get("s99"), Some(&99));
        assert!(!m.contains("s0"));
        m.insert("s99", 0);
        assert_eq!(m.get("s99"), Some(&99), "the first value stays");
    }
}
