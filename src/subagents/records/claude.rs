//! Claude Code's record of a subagent: `projects/<project>/<session>/subagents/
//! agent-<agent id>.jsonl` under its config folder (`CLAUDE_CONFIG_DIR`, else `~/.claude`),
//! one JSON object a line as the child goes: `type` `user` (the task, then tool results) and
//! `assistant` (one content block a line: `text` or `tool_use`), each with the child's
//! `agentId`; an assistant line with `stop_reason` `end_turn` is the child's last. Other
//! lines (`attachment`, …) are not the child's work. The agent id is the spawn result's
//! `_meta.claudeCode.toolResponse.agentId`.
//!
//! Verified with Claude Code 2.1.185 (claude-agent-acp 0.49.0); `<project>` is the working
//! directory with every other character than a letter or digit made `-` (not relied on: any
//! project folder holding the session is taken).

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::Value;

use super::blocks::{self, Tools};
use super::{agent_dir, path_safe, Location, Record};

/// Where the record of child `agent_id` of session `session` may be.
pub(super) fn locate(
    session: &str,
    agent_id: &str,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Location> {
    if !path_safe(session) || !path_safe(agent_id) {
        return None;
    }
    let root = agent_dir(env, "CLAUDE_CONFIG_DIR", ".claude")?;
    Some(Location::Under {
        dir: root.join("projects"),
        tail: PathBuf::from(session)
            .join("subagents")
            .join(format!("agent-{agent_id}.jsonl")),
    })
}

/// The child's thread as the record holds it. Lines that do not parse (the last one while it
/// is written), of another agent id or of a kind not listed are left out.
pub(super) fn parse(agent_id: &str, bytes: &[u8]) -> Record {
    let mut record = Record::default();
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if v.get("agentId").and_then(Value::as_str) != Some(agent_id) {
            continue;
        }
        let Some(message) = v.get("message") else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("user") => {
                record.answer = None;
                blocks::user(message.get("content"), &TOOLS, &mut record.updates);
            }
            Some("assistant") => {
                let texts = blocks::assistant(message.get("content"), &TOOLS, &mut record.updates);
                let last = message.get("stop_reason").and_then(Value::as_str) == Some("end_turn");
                record.answer = last.then_some(texts).filter(|t| !t.is_empty());
            }
            _ => {}
        }
    }
    record
}

const TOOLS: Tools = Tools {
    title_kind: |name, input| (tool_title(name, input), tool_kind(name)),
    result_text,
};

/// A tool result's text: a string, or the text blocks of a list.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A title like the adapter's: the command, the path or the pattern, else the tool's name.
fn tool_title(name: &str, input: &Value) -> String {
    [
        "command",
        "file_path",
        "pattern",
        "description",
        "url",
        "query",
    ]
    .iter()
    .find_map(|k| input.get(*k).and_then(Value::as_str))
    .filter(|s| !s.is_empty())
    .map_or_else(|| name.to_owned(), |s| format!("{name} {s}"))
}

fn tool_kind(name: &str) -> &'static str {
    match name {
        "Bash" => "execute",
        "Read" => "read",
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => "edit",
        "Glob" | "Grep" | "LS" => "search",
        "WebFetch" | "WebSearch" => "fetch",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use std::path::Path;

    use super::*;

    const AGENT: &str = "a47006e9dea9c6efc";

    fn line(v: Value) -> String {
        format!("{v}\n")
    }

    fn user(content: Value) -> String {
        line(
            json!({"agentId": AGENT, "type": "user", "message": {"role": "user", "content": content}}),
        )
    }

    fn assistant(content: Value, stop: &str) -> String {
        line(json!({"agentId": AGENT, "type": "assistant",
            "message": {"role": "assistant", "content": content, "stop_reason": stop}}))
    }

    #[test]
    fn torn_lines_other_agents_and_garbage_give_nothing() {
        let mut bytes = assistant(json!([{"type": "text", "text": "x"}]), "end_turn");
        bytes = bytes.replace(AGENT, "someone-else");
        bytes += "{\"agentId\": \"a47006e9dea9c6efc\", \"type\": \"assis";
        bytes += "\n\u{0}\u{1}not json\n[1,2]\n";
        assert_eq!(parse(AGENT, bytes.as_bytes()), Record::default());
    }

    #[test]
    fn a_user_line_after_the_last_words_means_the_child_goes_on() {
        let mut bytes = assistant(json!([{"type": "text", "text": "first"}]), "end_turn");
        bytes += &user(json!("more work"));
        assert!(!parse(AGENT, bytes.as_bytes()).ended());
    }

    #[test]
    fn located_under_the_config_folder_and_never_outside_it() {
        let env = |k: &str| match k {
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        let at = locate("3f77-ad29", AGENT, &env).expect("located");
        assert_eq!(
            at,
            Location::Under {
                dir: PathBuf::from("/home/u/.claude/projects"),
                tail: PathBuf::from(format!("3f77-ad29/subagents/agent-{AGENT}.jsonl")),
            }
        );
        let env = |k: &str| match k {
            "CLAUDE_CONFIG_DIR" => Some(OsString::from("/cfg")),
            _ => Some(OsString::from("/home/u")),
        };
        assert!(matches!(
            locate("s", AGENT, &env),
            Some(Location::Under { dir, .. }) if dir == Path::new("/cfg/projects")
        ));
        assert_eq!(locate("../etc", AGENT, &env), None);
        assert_eq!(locate("s", "a/b", &env), None);
        assert_eq!(locate("s", "", &env), None);
        assert_eq!(locate("s", AGENT, &|_| None), None);
    }
}
