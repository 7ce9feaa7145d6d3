//! The agents' own records of their children, kept on local disk: what they hold that the
//! wire leaves out (a background child's answer, the words of a child that streams only its
//! tool calls). One module per format reads it; this is the shape they share. Nothing here
//! touches a file: the transport finds and reads the file (read-only, bounded, off the relay
//! path) and the engine decides what the child thread takes from it.
//!
//! A record is a side source: a missing file, a line in an unknown format or a record of
//! another child gives nothing, and the child thread keeps what the wire said.

pub mod claude;

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::Value;

use super::spec::ChildRecord;

/// Bytes of a record read, at most: a record past it is not used.
pub const MAX_RECORD_BYTES: u64 = 8 << 20;

/// A child whose record the proxy follows until it says the child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordWatch {
    /// The proxy's child id.
    pub child: String,
    /// The agent's session the child was spawned in.
    pub session: String,
    /// The agent's own id of the child.
    pub agent_id: String,
    pub format: ChildRecord,
}

/// What a record says of a child.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// The child's thread as ACP updates, oldest first: its task, its words, its tool calls
    /// and their results.
    pub updates: Vec<Value>,
    /// Its final answer, once the record says it ended.
    pub answer: Option<String>,
}

impl Record {
    /// Whether the record says the child ended.
    pub fn ended(&self) -> bool {
        self.answer.is_some()
    }
}

/// Where a record may be: `tail` under one of the folders of `dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub dir: PathBuf,
    pub tail: PathBuf,
}

/// Where the record of `watch` may be, given the environment the agent runs in (the proxy's
/// own: the agent inherits it); none when an id could leave the folder it names.
pub fn locate(watch: &RecordWatch, env: &dyn Fn(&str) -> Option<OsString>) -> Option<Location> {
    match watch.format {
        ChildRecord::None => None,
        ChildRecord::ClaudeCode => claude::locate(&watch.session, &watch.agent_id, env),
    }
}

/// Read a record's bytes in `format`, for the child `agent_id`.
pub fn parse(format: ChildRecord, agent_id: &str, bytes: &[u8]) -> Record {
    match format {
        ChildRecord::None => Record::default(),
        ChildRecord::ClaudeCode => claude::parse(agent_id, bytes),
    }
}

/// Whether an id is safe to put in a path: letters, digits, `-` and `_` only (no separator,
/// no `..`), and not empty.
fn path_safe(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
