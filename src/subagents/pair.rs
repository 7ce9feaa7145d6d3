//! Maps keyed by a (session, id) pair that are looked up with borrowed strings: a lookup on the
//! hot path allocates nothing. Hashed with hashbrown's default (foldhash), which is several
//! times faster than the standard library's SipHash on short ids.

use hashbrown::Equivalent;

/// An owned (session, id) key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Pair(pub String, pub String);

impl Pair {
    pub(crate) fn new(session: &str, id: &str) -> Pair {
        Pair(session.to_owned(), id.to_owned())
    }
}

/// The borrowed form of [`Pair`]; it hashes exactly as a `Pair` with the same strings.
#[derive(Debug, Clone, Copy, Hash)]
pub(crate) struct PairRef<'a>(pub &'a str, pub &'a str);

impl Equivalent<Pair> for PairRef<'_> {
    fn equivalent(&self, key: &Pair) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

pub(crate) type PairMap<V> = hashbrown::HashMap<Pair, V>;
pub(crate) type PairSet = hashbrown::HashSet<Pair>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_lookups_find_owned_keys() {
        let mut m: PairMap<u32> = PairMap::default();
        m.insert(Pair::new("s", "t"), 1);
        m.insert(Pair::new("st", ""), 2);
        assert_eq!(m.get(&PairRef("s", "t")), Some(&1));
        assert_eq!(m.get(&PairRef("st", "")), Some(&2));
        assert_eq!(m.get(&PairRef("", "st")), None);
        assert_eq!(m.get(&PairRef("s", "")), None);
    }
}
