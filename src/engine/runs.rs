//! A run of agent frames (every complete line of one read) at once: the lines that cannot
//! concern the engine in its current state are found by one pass over the run's bytes
//! ([`Sieve`]) and leave with their neighbours as one slice of the read, as they came; only
//! the others go through [`Engine::agent_frame`], which says whether the line went on
//! untouched ([`Fate`]).

use bytes::Bytes;

use super::{Action, Engine, Millis};
use crate::wire::read_ahead::{AgentScan, RunScan};
use crate::wire::sieve::Sieve;

/// What became of one agent line the engine read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    /// It goes on as it came and nothing else was produced for it: the caller passes it,
    /// with its untouched neighbours.
    Untouched,
    /// Its actions are in the output (the line itself among them, if it passes on).
    Handled,
}

impl Engine {
    /// Which lines of agent output must be read now; any other passes untouched (what
    /// [`Engine::agent_frame`] would decide for it, with no change of state).
    fn sieve(&self) -> Sieve<'_> {
        if self.models_subagents() {
            // What makes `passes_untouched` read a frame that holds none of the keys: a
            // standard child's frames and a replayed agent session's are told apart by session
            // id alone, and a preset that attributes by timing claims unmarked events while a
            // legacy child runs (one that ends a background child by the agent's own turn
            // reads them too).
            let unmarked_may_matter = self.reg.has_agent_children()
                || !self.agent_replays.is_empty()
                || self.replayed_spawns.any()
                || ((self.detector.any_timing() || self.detector.any_agent_turn_end())
                    && self.reg.has_open_legacy_children());
            if unmarked_may_matter {
                Sieve::Each
            } else {
                Sieve::Keys(self.detector.key_set())
            }
        } else if self.client_requests.is_empty() {
            Sieve::None
        } else {
            Sieve::Id
        }
    }

    /// The lines of `run` one by one (see [`Engine::from_agent`]): the sieve skips those that
    /// cannot concern the engine, the others go through [`Engine::agent_frame`]; untouched
    /// lines leave with their neighbours as one slice of `run`.
    pub(super) fn agent_run(
        &mut self,
        run: &Bytes,
        ahead: Option<RunScan>,
        now: Millis,
        out: &mut Vec<Action>,
    ) {
        let mut ahead = ahead
            .filter(|a| a.searched_for(self.detector.key_set()))
            .map(|a| a.lines.into_iter().peekable());
        // `run[passed..pos]` went through untouched and has not been sent yet.
        let (mut pos, mut passed) = (0, 0);
        while pos < run.len() {
            let sieve = self.sieve();
            let next = match (&mut ahead, sieve) {
                (_, Sieve::None) => None,
                // The lines with a key, found ahead: the lines any sieve but `Each` picks are
                // among them.
                (Some(lines), Sieve::Id | Sieve::Keys(_)) => {
                    while lines.next_if(|l| l.start < pos).is_some() {}
                    lines.next().map(|l| (l.start, l.end, Some(l.scan)))
                }
                (_, sieve) => sieve.next_line(run, pos).map(|h| {
                    let scan = match (&mut ahead, sieve) {
                        // A line not found ahead holds no key.
                        (Some(lines), _) => Some(
                            lines
                                .next_if(|l| l.start == h.start)
                                .map_or_else(AgentScan::plain, |l| l.scan),
                        ),
                        // Searched by `agent_frame`, which may put it off.
                        (None, _) => None,
                    };
                    (h.start, h.end, scan)
                }),
            };
            let Some((start, end, scan)) = next else {
                break;
            };
            self.debug_check_passed(run, pos, start);
            pos = end;
            let line = run.slice(start..end);
            let before = out.len();
            if self.agent_frame(line.clone(), scan, now, out) == Fate::Untouched {
                debug_assert_eq!(out.len(), before, "an untouched line produced actions");
                continue;
            }
            // What came before this line goes first, then the line's own outputs.
            out.insert(before, Action::Read(line));
            if passed < start {
                out.insert(before, Action::Untouched(run.slice(passed..start)));
            }
            passed = end;
        }
        self.debug_check_passed(run, pos, run.len());
        if passed < run.len() {
            out.push(Action::Untouched(run.slice(passed..)));
        }
    }

    /// Debug builds (every test): the lines `run[from..to]` the sieve let pass hold no key and
    /// do pass untouched, so `sieve` cannot drift from the engine's own test.
    fn debug_check_passed(&self, run: &[u8], from: usize, to: usize) {
        if !cfg!(debug_assertions) || !self.models_subagents() || from >= to {
            return;
        }
        for (a, b) in crate::wire::lines(&run[from..to]) {
            let line = &run[from + a..from + b];
            let found = self.detector.scan(line);
            debug_assert!(
                found.is_empty() && self.passes_untouched(line, found),
                "a line the sieve passed needs reading: {}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
