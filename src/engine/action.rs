//! What the engine asks the shell to do.

use bytes::Bytes;

use crate::subagents::ids::{ChildId, ClientSessionId};
use crate::subagents::persist::StoreOp;
use crate::subagents::records::RecordWatch;

/// What the shell must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write these bytes (one or more complete lines) to the client.
    ToClient(Bytes),
    /// Agent lines (a slice of the run handed to [`Engine::from_agent`](super::Engine::from_agent))
    /// that go to the client as they came: the engine neither changed nor kept anything of
    /// them. Written like [`Action::ToClient`].
    Untouched(Bytes),
    /// An agent line of the run the engine read: the actions up to the next `Read` or
    /// [`Action::Untouched`] are what it made of it (possibly nothing). Nothing is sent; the
    /// shell records the line in the dump here, so each input stands before its outputs.
    Read(Bytes),
    /// Write these bytes (one or more complete lines) to the agent.
    ToAgent(Bytes),
    /// A diagnostic worth a line on stderr and a record in the dump.
    Note(Note),
    /// Persist this in the durable store (off the hot path).
    Store(StoreOp),
    /// Look up every stored child of this parent session and hand them to
    /// [`Engine::restore`](super::Engine::restore) before carrying out the next action.
    FetchChildren { parent_session_id: ClientSessionId },
    /// Look up one stored child and hand it to [`Engine::child_fetched`](super::Engine::child_fetched) with this request.
    FetchChild { child_id: ChildId, request: Bytes },
    /// Follow the agent's record of a child on disk (read-only, off the relay path) and hand
    /// what it says to [`Engine::record_read`](super::Engine::record_read) once it told what
    /// it is followed for (the child's end, or its id: `Record::told`); an empty record when
    /// it was not found in `within_ms` or cannot be followed.
    FollowRecord(RecordWatch),
}

/// A diagnostic from the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub level: NoteLevel,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteLevel {
    Info,
    Warn,
}
