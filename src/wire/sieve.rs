//! The lines of a run of agent frames that must be read, found in one pass over the run's
//! bytes: a frame holding none of the keys the engine's byte tests look for cannot concern
//! it, so the lines between two hits are never split or looked at one by one.

use super::keys::{self, KeySet};

/// Which lines of a run of frames the engine must read; the engine says which applies in its
/// current state.
#[derive(Debug, Clone, Copy)]
pub enum Sieve<'a> {
    /// None: every line passes as it came.
    None,
    /// Lines with an `"id"` key (a response the client waits for may be among them).
    Id,
    /// Lines with one of these keys.
    Keys(&'a KeySet),
    /// Every line.
    Each,
}

/// A line to read: `start..end` (terminator included) in the run; `hit` is where the first
/// key the sieve looked for starts in it (`start` for [`Sieve::Each`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub start: usize,
    pub hit: usize,
    pub end: usize,
}

impl Sieve<'_> {
    /// The first line at or after `from` (a line start) that must be read.
    pub fn next_line(&self, run: &[u8], from: usize) -> Option<Hit> {
        let rest = run.get(from..).filter(|r| !r.is_empty())?;
        let at = match self {
            Sieve::None => return None,
            Sieve::Each => from,
            Sieve::Id => from + keys::ID_KEY.find(rest)?,
            Sieve::Keys(key_set) => from + key_set.find(rest)?,
        };
        // No key holds a `\n`: the hit lies within one line.
        let start = memchr::memrchr(b'\n', &run[from..at]).map_or(from, |i| from + i + 1);
        let end = memchr::memchr(b'\n', &run[at..]).map_or(run.len(), |i| at + i + 1);
        Some(Hit {
            start,
            hit: at,
            end,
        })
    }

    /// Every line of `run` that must be read, in order.
    pub fn lines<'r>(&'r self, run: &'r [u8]) -> impl Iterator<Item = Hit> + 'r {
        let mut from = 0;
        std::iter::from_fn(move || {
            let hit = self.next_line(run, from)?;
            from = hit.end;
            Some(hit)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::lines;

    /// The sieve picks exactly the lines a per-line search would.
    #[test]
    fn picks_the_lines_a_per_line_search_picks() {
        let key_set = KeySet::new(&["\"parentToolUseId\""], &["\"Task\""], &[], &[]);
        let run = concat!(
            "{\"a\":\"plain\"}\n",
            "{\"id\":3,\"result\":{}}\n",
            "\n",
            "{\"x\":\"tool_call\",\"y\":\"\\\"id\\\"\"}\r\n",
            "{\"b\":\"plain\"}\n",
            "{\"t\":\"Task\"}\n",
            "{\"no\":\"terminator\",\"id\":1}",
        )
        .as_bytes();
        let each: Vec<(usize, usize)> = lines(run).collect();
        for sieve in [Sieve::None, Sieve::Id, Sieve::Keys(&key_set), Sieve::Each] {
            let want: Vec<(usize, usize)> = each
                .iter()
                .copied()
                .filter(|&(a, b)| match sieve {
                    Sieve::None => false,
                    Sieve::Id => keys::has(&keys::ID_KEY, &run[a..b]),
                    Sieve::Keys(s) => !s.scan(&run[a..b]).is_empty(),
                    Sieve::Each => true,
                })
                .collect();
            let got: Vec<(usize, usize)> = sieve.lines(run).map(|h| (h.start, h.end)).collect();
            assert_eq!(got, want, "{sieve:?}");
            for h in sieve.lines(run) {
                assert!(h.start <= h.hit && h.hit < h.end);
                if let Sieve::Keys(s) = sieve {
                    assert_eq!(s.scan(&run[h.hit..h.end]), s.scan(&run[h.start..h.end]));
                }
            }
        }
        assert_eq!(Sieve::Keys(&key_set).lines(run).count(), 4);
    }
}
