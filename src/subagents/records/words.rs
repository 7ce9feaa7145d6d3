//! Children's words tied back to their spawn by the agent's record: an agent that streams
//! several children's messages on the parent's session with nothing naming the child
//! (Copilot's sync children) may still log each message whole, with its spawn
//! ([`LoggedMessage`]). A run of word chunks timing could not attribute is matched against
//! those messages here: a chunk goes to a child only where the chunks given to each child
//! spell its logged messages, in order, and no other assignment does.
//!
//! Pure: no engine state, no I/O. Not wired into the engine yet (docs/performance.md, "Not
//! done, worth doing").

/// A child's message as the agent's record logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedMessage {
    /// The tool call id of the spawn whose child said it.
    pub spawn: String,
    /// The message's whole text.
    pub text: String,
    /// The tool calls the message made, by tool call id.
    pub tool_calls: Vec<String>,
}

/// Chunks in one run matched, at most (a longer run is left where it is).
pub const MAX_RUN: usize = 1024;
/// Steps of the search, at most: past it the run counts as ambiguous.
pub const MAX_STEPS: usize = 100_000;

/// The message each chunk of `run` belongs to (an index into `messages`), if the chunks can
/// be split among some of the messages so that each of those is spelled whole by its chunks,
/// in order, every chunk is used, and every split that does so spells the same messages (a
/// child's thread shows its chunks joined: two splits of the run among the same messages show
/// the same words in each thread, whichever chunk went where). None otherwise (no match, a
/// message only in part, a chunk across two messages, splits that spell different messages,
/// or more search than [`MAX_STEPS`]): the run then stays where it is.
pub fn split_run(run: &[&str], messages: &[LoggedMessage]) -> Option<Vec<usize>> {
    if run.is_empty() || run.len() > MAX_RUN || run.iter().any(|c| c.is_empty()) {
        return None;
    }
    let total: usize = run.iter().map(|c| c.len()).sum();
    let mut search = Search {
        run,
        messages,
        progress: vec![0; messages.len()],
        chosen: Vec::with_capacity(run.len()),
        found: None,
        outcome: None,
        solutions: 0,
        steps: 0,
        left: total,
    };
    search.go();
    if search.solutions == 1 && search.steps <= MAX_STEPS {
        search.found
    } else {
        None
    }
}

struct Search<'a> {
    run: &'a [&'a str],
    messages: &'a [LoggedMessage],
    /// Bytes of each message spelled so far.
    progress: Vec<usize>,
    /// The message of each chunk so far.
    chosen: Vec<usize>,
    found: Option<Vec<usize>>,
    /// The messages the split found spells.
    outcome: Option<Vec<bool>>,
    /// Splits found with different outcomes (counted to two).
    solutions: usize,
    steps: usize,
    /// Bytes of the run not given to a message yet.
    left: usize,
}

impl Search<'_> {
    fn go(&mut self) {
        if self.solutions > 1 || self.steps > MAX_STEPS {
            return;
        }
        self.steps += 1;
        let i = self.chosen.len();
        let Some(chunk) = self.run.get(i) else {
            // Every chunk placed: a split if every message begun is whole.
            let whole = self
                .progress
                .iter()
                .zip(self.messages)
                .all(|(p, m)| *p == 0 || *p == m.text.len());
            if whole {
                let outcome: Vec<bool> = self.progress.iter().map(|p| *p > 0).collect();
                if self.outcome.as_ref() != Some(&outcome) {
                    self.solutions += 1;
                    self.outcome = Some(outcome);
                    self.found = Some(self.chosen.clone());
                }
            }
            return;
        };
        // What is left of the begun messages must fit in the rest of the run.
        let owed: usize = self
            .progress
            .iter()
            .zip(self.messages)
            .filter(|(p, _)| **p > 0)
            .map(|(p, m)| m.text.len() - p)
            .sum();
        if owed > self.left {
            return;
        }
        for m in 0..self.messages.len() {
            let at = self.progress[m];
            let text = &self.messages[m].text;
            if !text[at..].starts_with(chunk) {
                continue;
            }
            // An earlier message begun too, with the same text left: whatever follows giving
            // this one the chunk follows, mirrored, giving that one the chunk, and spells the
            // same messages.
            let same_as_earlier = at > 0
                && (0..m).any(|e| {
                    let (ea, et) = (self.progress[e], &self.messages[e].text);
                    ea > 0 && et[ea..] == text[at..]
                });
            if same_as_earlier {
                continue;
            }
            self.progress[m] += chunk.len();
            self.left -= chunk.len();
            self.chosen.push(m);
            self.go();
            self.chosen.pop();
            self.left += chunk.len();
            self.progress[m] -= chunk.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(spawn: &str, text: &str) -> LoggedMessage {
        LoggedMessage {
            spawn: spawn.to_owned(),
            text: text.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    fn spawns(run: &[&str], messages: &[LoggedMessage]) -> Option<Vec<String>> {
        split_run(run, messages).map(|v| v.iter().map(|m| messages[*m].spawn.clone()).collect())
    }

    #[test]
    fn a_run_of_two_answers_back_to_back_is_split_between_them() {
        // As Copilot 1.0.102 streamed two children's answers (the two-log fixture).
        let messages = [
            message(
                "call_0002",
                "SUB-ANSWER beta: the project holds a.txt, b.txt.",
            ),
            message(
                "call_0001",
                "SUB-ANSWER alpha: the project holds a.txt, b.txt.",
            ),
        ];
        let run = [
            "SUB-ANSWER ",
            "beta: ",
            "the ",
            "project ",
            "holds ",
            "a.txt, ",
            "b.txt.",
            "SUB-ANSWER ",
            "alpha: ",
            "the ",
            "project ",
            "holds ",
            "a.txt, ",
            "b.txt.",
        ];
        let got = spawns(&run, &messages).expect("one split");
        assert_eq!(got[..7], ["call_0002"; 7]);
        assert_eq!(got[7..], ["call_0001"; 7]);
    }

    #[test]
    fn interleaved_chunks_of_two_messages_are_told_apart_by_their_text() {
        let messages = [
            message("a", "Subagent alpha looking around."),
            message("b", "Subagent beta looking around."),
        ];
        let run = [
            "Subagent ",
            "alpha ",
            "Subagent ",
            "beta ",
            "looking ",
            "looking ",
            "around.",
            "around.",
        ];
        // "Subagent " then "alpha ": the first is alpha's; the second "Subagent " is beta's.
        // The two "looking "/"around." pairs could go either way round: both ways spell the
        // same two messages, so each thread shows the same words either way.
        assert_eq!(
            spawns(&run, &messages).expect("one outcome"),
            ["a", "a", "b", "b", "a", "b", "a", "b"]
        );
        let run = [
            "Subagent ",
            "alpha ",
            "Subagent ",
            "beta ",
            "looking around.",
            "looking ",
            "around.",
        ];
        assert_eq!(
            spawns(&run, &messages).expect("one outcome"),
            ["a", "a", "b", "b", "a", "b", "b"]
        );
        // Unambiguous once the texts differ where the chunks are.
        let messages = [
            message("a", "Alpha: one two."),
            message("b", "Beta: three four."),
        ];
        let run = ["Beta: ", "Alpha: ", "one ", "three ", "four.", "two."];
        assert_eq!(
            spawns(&run, &messages).expect("one split"),
            ["b", "a", "a", "b", "b", "a"]
        );
    }

    #[test]
    fn what_does_not_spell_whole_messages_is_left_alone() {
        let messages = [message("a", "Hello there."), message("b", "Bye now.")];
        // A message only in part (its end has not come yet).
        assert_eq!(spawns(&["Hello "], &messages), None);
        // A chunk of no message (the parent's own words).
        assert_eq!(spawns(&["Hello ", "there.", "Done."], &messages), None);
        // A chunk across the end of one message and the start of the next.
        assert_eq!(spawns(&["Hello ", "there.Bye ", "now."], &messages), None);
        // Nothing to match against, an empty run, an empty chunk.
        assert_eq!(spawns(&["Hello there."], &[]), None);
        assert_eq!(spawns(&[], &messages), None);
        assert_eq!(spawns(&["", "Hello there."], &messages), None);
        // One message whole: the run is its own.
        assert_eq!(
            spawns(&["Hello ", "there."], &messages).expect("one split"),
            ["a", "a"]
        );
        // The same text logged by two children: either could have said it.
        let twins = [message("a", "Same."), message("b", "Same.")];
        assert_eq!(spawns(&["Same."], &twins), None);
        // Chunks that spell one message or two others: which children spoke is not known.
        let two_ways = [message("a", "ab"), message("b", "a"), message("c", "b")];
        assert_eq!(spawns(&["a", "b"], &two_ways), None);
    }

    #[test]
    fn a_long_ambiguous_run_gives_up_within_its_bound() {
        let messages = [
            message("a", &"x ".repeat(40)),
            message("b", &"x ".repeat(40)),
        ];
        let run = vec!["x "; 80];
        assert_eq!(spawns(&run, &messages), None);
    }
}
