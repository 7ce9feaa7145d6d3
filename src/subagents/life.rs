//! A child's lifecycle: one value that says where the child is in its life and what its spawn
//! card shows, changed only by transitions that say what the card must show next.
//!
//! ```text
//! Announced(open) ──start──▶ Running(open) ──finish(final state)──▶ Ended(outcome)
//!        │                        │  ▲                                   │
//!        │                        │  └────────────reopen─────────────────┤
//!        │                        └──finish(running)──▶ Detached ──settle┘
//!        └──finish(final state)──▶ Ended(outcome)
//! ```
//!
//! Invariants the type keeps: a child that ended has a final card; only an open card shows
//! live progress or holds a cancel request; a final card opens again only by [`Life::reopen`]
//! (a continued child), which forgets the cancel request.

/// Where a child is in its life: what the store keeps, and what a card's status is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildState {
    Announced,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl ChildState {
    pub fn as_str(self) -> &'static str {
        match self {
            ChildState::Announced => "announced",
            ChildState::Running => "running",
            ChildState::Completed => "completed",
            ChildState::Failed => "failed",
            ChildState::Cancelled => "cancelled",
        }
    }

    /// The state written as [`ChildState::as_str`]; `None` for anything else.
    pub fn from_stored(s: &str) -> Option<ChildState> {
        match s {
            "announced" => Some(ChildState::Announced),
            "running" => Some(ChildState::Running),
            "completed" => Some(ChildState::Completed),
            "failed" => Some(ChildState::Failed),
            "cancelled" => Some(ChildState::Cancelled),
            _ => None,
        }
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            ChildState::Completed | ChildState::Failed | ChildState::Cancelled
        )
    }

    /// The tool call status a client shows for a child in this state.
    pub fn card_status(self) -> &'static str {
        match self {
            ChildState::Announced => "pending",
            ChildState::Running => "in_progress",
            ChildState::Completed => "completed",
            ChildState::Failed | ChildState::Cancelled => "failed",
        }
    }
}

/// What the child's spawn card shows (read from its [`Life`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Card {
    /// Open, titled with the task.
    Open,
    /// Open, titled with the child's latest step (live progress); the task title comes back
    /// when the card gets its final status.
    Progress,
    /// The card has its final status. A background child may still add to its thread (the
    /// card's range grows), and a continued child opens it again.
    Final,
}

/// How a child that ended came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Completed,
    Failed,
    Cancelled,
}

/// An open card: what it shows, and whether the client asked to stop the child. A child is
/// shown cancelled only once the agent confirms or the parent's turn ends, never on the
/// request alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Open {
    progress: bool,
    cancel_asked: bool,
}

/// A child's life and its card together (see the module's diagram).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Life {
    /// Spawned; nothing says its work started yet.
    Announced(Open),
    /// At work, its card open.
    Running(Open),
    /// Running on after its card got its final status (a background child whose launch
    /// completed the card): only its end is left to settle.
    Detached,
    /// Ended; its card final with the outcome.
    Ended(Outcome),
}

impl Life {
    /// A child just spawned.
    pub(super) fn announced() -> Life {
        Life::Announced(Open::default())
    }

    /// A child brought back from the store in `state`: a final state means the card was
    /// final when it was stored.
    pub(super) fn restored(state: ChildState) -> Life {
        match state {
            ChildState::Announced => Life::Announced(Open::default()),
            ChildState::Running => Life::Running(Open::default()),
            ChildState::Completed => Life::Ended(Outcome::Completed),
            ChildState::Failed => Life::Ended(Outcome::Failed),
            ChildState::Cancelled => Life::Ended(Outcome::Cancelled),
        }
    }

    /// A final card with the child in `state`: ended if the state is final, otherwise
    /// running on.
    fn with_final_card(state: ChildState) -> Life {
        match state {
            ChildState::Announced | ChildState::Running => Life::Detached,
            ChildState::Completed => Life::Ended(Outcome::Completed),
            ChildState::Failed => Life::Ended(Outcome::Failed),
            ChildState::Cancelled => Life::Ended(Outcome::Cancelled),
        }
    }

    pub(super) fn state(self) -> ChildState {
        match self {
            Life::Announced(_) => ChildState::Announced,
            Life::Running(_) | Life::Detached => ChildState::Running,
            Life::Ended(Outcome::Completed) => ChildState::Completed,
            Life::Ended(Outcome::Failed) => ChildState::Failed,
            Life::Ended(Outcome::Cancelled) => ChildState::Cancelled,
        }
    }

    pub(super) fn card(self) -> Card {
        match self {
            Life::Announced(open) | Life::Running(open) if open.progress => Card::Progress,
            Life::Announced(_) | Life::Running(_) => Card::Open,
            Life::Detached | Life::Ended(_) => Card::Final,
        }
    }

    pub(super) fn cancel_asked(self) -> bool {
        match self {
            Life::Announced(open) | Life::Running(open) => open.cancel_asked,
            Life::Detached | Life::Ended(_) => false,
        }
    }

    fn open_mut(&mut self) -> Option<&mut Open> {
        match self {
            Life::Announced(open) | Life::Running(open) => Some(open),
            Life::Detached | Life::Ended(_) => None,
        }
    }

    /// The child's work started (or goes on): it runs, its card as it was. A child that had
    /// ended runs on behind its final card.
    pub(super) fn start(&mut self) {
        *self = match *self {
            Life::Announced(open) | Life::Running(open) => Life::Running(open),
            Life::Detached | Life::Ended(_) => Life::Detached,
        };
    }

    /// The card shows the child's live progress as its title; a final card stays final.
    pub(super) fn show_progress(&mut self) {
        if let Some(open) = self.open_mut() {
            open.progress = true;
        }
    }

    /// The client asked to stop the child; only an open card keeps the request (a card that
    /// is final has nothing left to show of it).
    pub(super) fn ask_cancel(&mut self) {
        if let Some(open) = self.open_mut() {
            open.cancel_asked = true;
        }
    }

    /// The card gets its final status, the child `state` (running on if `state` is not
    /// final). Returns whether the card showed live progress: its title must be the task's
    /// again.
    pub(super) fn finish(&mut self, state: ChildState) -> bool {
        let progress = self.card() == Card::Progress;
        *self = Life::with_final_card(state);
        progress
    }

    /// The child ended in `state` after its card already had its final status: only its
    /// state is left to settle.
    pub(super) fn settle(&mut self, state: ChildState) {
        *self = Life::with_final_card(state);
    }

    /// A child whose card is final got new work (a continued subagent): it runs again in an
    /// open card, with no cancel asked. Returns false (and changes nothing) if the card was
    /// still open.
    pub(super) fn reopen(&mut self) -> bool {
        match self {
            Life::Detached | Life::Ended(_) => {
                *self = Life::Running(Open::default());
                true
            }
            Life::Announced(_) | Life::Running(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_runs_finishes_and_is_continued() {
        let mut life = Life::announced();
        assert_eq!(
            (life.state(), life.card()),
            (ChildState::Announced, Card::Open)
        );
        life.ask_cancel();
        life.start();
        assert!(life.cancel_asked(), "the request outlives the start");
        life.show_progress();
        assert_eq!(
            (life.state(), life.card()),
            (ChildState::Running, Card::Progress)
        );
        assert!(
            life.finish(ChildState::Cancelled),
            "the card showed progress"
        );
        assert_eq!(
            (life.state(), life.card()),
            (ChildState::Cancelled, Card::Final)
        );
        assert!(!life.cancel_asked());
        life.show_progress();
        assert_eq!(
            life.card(),
            Card::Final,
            "a final card opens only by reopen"
        );
        assert!(life.reopen());
        assert_eq!(
            (life.state(), life.card()),
            (ChildState::Running, Card::Open)
        );
        assert!(
            !life.cancel_asked(),
            "a continued child starts with no cancel asked"
        );
        assert!(!life.reopen(), "an open card is not reopened");
    }

    #[test]
    fn a_background_child_runs_on_behind_its_final_card() {
        let mut life = Life::announced();
        life.start();
        assert!(!life.finish(ChildState::Running));
        assert_eq!(life, Life::Detached);
        assert_eq!(
            (life.state(), life.card()),
            (ChildState::Running, Card::Final)
        );
        life.settle(ChildState::Failed);
        assert_eq!(
            (life.state(), life.card()),
            (ChildState::Failed, Card::Final)
        );
        assert_eq!(Life::restored(ChildState::Running).card(), Card::Open);
        assert_eq!(Life::restored(ChildState::Completed).card(), Card::Final);
        for s in ["announced", "running", "completed", "failed", "cancelled"] {
            let state = ChildState::from_stored(s).expect("a stored state");
            assert_eq!(Life::restored(state).state(), state);
        }
    }
}
