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
pub mod kimi;
pub mod words;

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::Value;

use super::ids::AgentSessionId;
use super::preset::spec::ChildRecord;

/// Bytes of a record read, at most: a record past it is not used.
pub const MAX_RECORD_BYTES: u64 = 8 << 20;

/// A child whose record the proxy follows until it says the child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordWatch {
    /// The proxy's child id.
    pub child: String,
    /// The agent's session the child was spawned in.
    pub session: AgentSessionId,
    /// The agent's own id of the child (empty: found by `task`).
    pub agent_id: String,
    /// The child's task, for a record found by it.
    pub task: Option<String>,
    /// The spawn's tool call id, for a record that names the child by it.
    pub spawn: String,
    pub format: ChildRecord,
    /// Whether what it says is reported as it grows (the child's work shown while it runs),
    /// not only once it told its end.
    pub live: bool,
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
    /// Whether its last update may still change (a tool call whose arguments are still
    /// being written): what is shown while the child runs stops before it.
    pub unsettled: bool,
}

impl Record {
    /// Whether the record says the child ended.
    pub fn ended(&self) -> bool {
        self.answer.is_some()
    }

    /// The updates that will not change as the record grows.
    pub fn settled(&self) -> &[Value] {
        let n = self
            .updates
            .len()
            .saturating_sub(usize::from(self.unsettled));
        &self.updates[..n]
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
    /// `<dir>/<any>/<middle>/<any>/<file>`, the one whose contents are the child's (a
    /// record named by an id the proxy does not know yet).
    Nested {
        dir: PathBuf,
        middle: PathBuf,
        file: &'static str,
    },
}

/// Where the record of `watch` may be, given the environment the agent runs in (the proxy's
/// own: the agent inherits it); none when an id could leave the folder it names.
pub fn locate(watch: &RecordWatch, env: &dyn Fn(&str) -> Option<OsString>) -> Option<Location> {
    match watch.format {
        ChildRecord::None => None,
        ChildRecord::ClaudeCode => claude::locate(watch.session.as_str(), &watch.agent_id, env),
        ChildRecord::Cline => cline::locate(watch.session.as_str(), env),
        ChildRecord::Copilot => copilot::locate(watch.session.as_str(), env),
        ChildRecord::Kimi => kimi::locate(watch.session.as_str(), &watch.agent_id, env),
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
        ChildRecord::Kimi => kimi::parse(&watch.agent_id, watch.task.as_deref(), bytes),
    }
}

/// An agent's own folder: `var` when it is set and not empty, else `dot_dir` in `HOME`; `None`
/// without either.
fn agent_dir(env: &dyn Fn(&str) -> Option<OsString>, var: &str, dot_dir: &str) -> Option<PathBuf> {
    match env(var).filter(|d| !d.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => Some(PathBuf::from(env("HOME").filter(|h| !h.is_empty())?).join(dot_dir)),
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;

    /// A record the agents wrote in the end-to-end runs (tests/fixtures/README.md).
    fn fixture(name: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/e2e")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    fn watch(format: ChildRecord, agent_id: &str, task: Option<&str>) -> RecordWatch {
        RecordWatch {
            child: "child-1".to_owned(),
            session: crate::subagents::ids::AgentSessionId::new("s".to_owned()),
            agent_id: agent_id.to_owned(),
            task: task.map(str::to_owned),
            spawn: String::new(),
            format,
            live: false,
            within_ms: 0,
        }
    }

    /// One format's row: a real record of the child alpha, the same record cut before its
    /// last message (the child still works), and what the format says of its one tool call.
    struct Row {
        format: &'static str,
        watch: RecordWatch,
        /// The watch of another child, to which the record is nothing.
        other: RecordWatch,
        done: Vec<u8>,
        running: Vec<u8>,
        title: &'static str,
        output: &'static str,
    }

    /// Every format reads its agent's record of one child as the same thread: the task, the
    /// child's words, its tool call and result, its answer, once its last message is said.
    #[test]
    fn every_format_reads_a_record_as_the_childs_thread() {
        const TASK: &str =
            "SUBAGENT:alpha list the text files in the project and report what you find";
        // Claude Code: a line per message.
        let claude = fixture("claude-agent-acp-0.49.0-background.agent.jsonl");
        let text = String::from_utf8(claude.clone()).expect("the record is UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        let claude_running = lines[..lines.len() - 1].join("\n").into_bytes();
        // Cline: one object, rewritten as the child works.
        let cline = fixture("cline-3.0.65-two.agent-alpha.messages.json");
        let mut v: Value = serde_json::from_slice(&cline).expect("the record is JSON");
        if let Some(m) = v["messages"].as_array_mut() {
            m.pop();
        }
        let cline_running = serde_json::to_vec(&v).expect("JSON");
        let rows = [
            Row {
                format: "Claude Code",
                watch: watch(ChildRecord::ClaudeCode, "ac27ffe934379da0d", None),
                other: watch(ChildRecord::ClaudeCode, "a0000000000000000", None),
                done: claude,
                running: claude_running,
                title: "Bash ls *.txt",
                output: "a.txt\nb.txt",
            },
            Row {
                format: "Cline",
                watch: watch(ChildRecord::Cline, "", Some(TASK)),
                other: watch(ChildRecord::Cline, "", Some("SUBAGENT:beta list the files")),
                done: cline,
                running: cline_running,
                title: "ls *.txt",
                output: "a.txt\nb.txt\n",
            },
        ];
        for row in rows {
            let f = row.format;
            assert!(!parse(&row.watch, &row.running).ended(), "{f}: ended early");
            let r = parse(&row.watch, &row.done);
            assert_eq!(
                r.answer.as_deref(),
                Some("SUB-ANSWER alpha: the project holds a.txt, b.txt."),
                "{f}"
            );
            let kinds: Vec<&str> = r
                .updates
                .iter()
                .filter_map(|u| u["sessionUpdate"].as_str())
                .collect();
            assert_eq!(
                kinds,
                [
                    "user_message_chunk",
                    "agent_message_chunk",
                    "tool_call",
                    "tool_call_update",
                    "agent_message_chunk"
                ],
                "{f}"
            );
            assert_eq!(r.updates[0]["content"]["text"], TASK, "{f}");
            assert_eq!(
                (&r.updates[2]["title"], &r.updates[2]["kind"]),
                (&json!(row.title), &json!("execute")),
                "{f}"
            );
            assert_eq!(
                (&r.updates[3]["status"], &r.updates[3]["rawOutput"]),
                (&json!("completed"), &json!(row.output)),
                "{f}"
            );
            assert_eq!(parse(&row.other, &row.done), Record::default(), "{f}");
        }
    }
}
