//! The agents' own records of their children, kept on local disk: what they hold that the
//! wire leaves out (a background child's answer, the words of a child that streams only its
//! tool calls). One module per format reads it; this is the shape they share. Nothing here
//! touches a file: the transport finds and reads the file (read-only, bounded, off the relay
//! path) and the engine decides what the child thread takes from it.
//!
//! A record is a side source: a missing file, a line in an unknown format or a record of
//! another child gives nothing, and the child thread keeps what the wire said.

mod blocks;
pub mod claude;
pub mod cline;
pub mod copilot;

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::Value;

use super::preset::spec::ChildRecord;

/// Bytes of a record read, at most: a record past it is not used.
pub const MAX_RECORD_BYTES: u64 = 8 << 20;

/// A child whose record the proxy follows until it says the child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordWatch {
    /// The proxy's child id.
    pub child: String,
    /// The agent's session the child was spawned in.
    pub session: String,
    /// The agent's own id of the child (empty: found by `task`).
    pub agent_id: String,
    /// The child's task, for a record found by it.
    pub task: Option<String>,
    /// The spawn's tool call id, for a record that names the child by it.
    pub spawn: String,
    pub format: ChildRecord,
    /// How long to follow it, in milliseconds; then the shell reports it as not found.
    pub within_ms: u64,
}

/// What a record says of a child (all empty: no record was found in time).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// The child's thread as ACP updates, oldest first: its task, its words, its tool calls
    /// and their results.
    pub updates: Vec<Value>,
    /// Its final answer, once the record says it ended.
    pub answer: Option<String>,
    /// The agent's own id of the child, for a record that ties it to the spawn (the id the
    /// child's events carry, `child_ref`).
    pub agent_id: Option<String>,
}

impl Record {
    /// Whether the record says the child ended.
    pub fn ended(&self) -> bool {
        self.answer.is_some()
    }

    /// Whether the record told what it is followed for: the child's end, or, in a record
    /// that ties ids (`ChildRecord::ties_ids`), the agent's id of the child.
    pub fn told(&self) -> bool {
        self.ended() || self.agent_id.is_some()
    }
}

/// Where a record may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// This file.
    At(PathBuf),
    /// `tail` under one of the folders of `dir`.
    Under { dir: PathBuf, tail: PathBuf },
    /// One of the files of `dir` named `<prefix>…<suffix>`, the one whose contents are the
    /// child's.
    Among {
        dir: PathBuf,
        prefix: &'static str,
        suffix: &'static str,
    },
}

/// Where the record of `watch` may be, given the environment the agent runs in (the proxy's
/// own: the agent inherits it); none when an id could leave the folder it names.
pub fn locate(watch: &RecordWatch, env: &dyn Fn(&str) -> Option<OsString>) -> Option<Location> {
    match watch.format {
        ChildRecord::None => None,
        ChildRecord::ClaudeCode => claude::locate(&watch.session, &watch.agent_id, env),
        ChildRecord::Cline => cline::locate(&watch.session, env),
        ChildRecord::Copilot => copilot::locate(&watch.session, env),
    }
}

/// Read a record's bytes for the child `watch` names; empty if they are another child's.
pub fn parse(watch: &RecordWatch, bytes: &[u8]) -> Record {
    match watch.format {
        ChildRecord::None => Record::default(),
        ChildRecord::ClaudeCode => claude::parse(&watch.agent_id, bytes),
        ChildRecord::Cline => match &watch.task {
            Some(task) => cline::parse(task, bytes),
            None => Record::default(),
        },
        ChildRecord::Copilot => copilot::parse(&watch.spawn, bytes),
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
