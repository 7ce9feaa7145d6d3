//! Cline's record of a subagent: `~/.cline/data/sessions/<session>/agent_<id>.messages.json`
//! (with `CLINE_SESSION_BACKEND_MODE=local`), one JSON object rewritten as the child works:
//! `{"agent":"subagent","sessionId":"<session>__agent_<id>",…,"messages":[…]}`, each message
//! `{role, content: [blocks]}` with `text`, `tool_use {id, name, input}` and `tool_result
//! {tool_use_id, content}` blocks. The child's id is never on the wire: the record is the one
//! whose first message is the spawn's task. The child ended when its last message is the
//! assistant's, with text and no tool call.
//!
//! Verified with Cline 3.0.65.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::Value;

use super::blocks::{self, Tools};
use super::{path_safe, Location, Record};

/// The folder of session `session`'s children's records.
pub(super) fn locate(session: &str, env: &dyn Fn(&str) -> Option<OsString>) -> Option<Location> {
    if !path_safe(session) {
        return None;
    }
    let home = PathBuf::from(env("HOME").filter(|h| !h.is_empty())?);
    Some(Location::Among {
        dir: home.join(".cline/data/sessions").join(session),
        prefix: "agent_",
        suffix: ".messages.json",
    })
}

/// The child's thread, if this record is the child's whose task is `task`.
pub(super) fn parse(task: &str, bytes: &[u8]) -> Record {
    let mut record = Record::default();
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return record;
    };
    let Some(messages) = v.get("messages").and_then(Value::as_array) else {
        return record;
    };
    let first = messages.first().map(|m| blocks::texts(m.get("content")));
    if first.as_deref().map(str::trim) != Some(task.trim()) {
        return record;
    }
    for m in messages {
        let content = m.get("content");
        match m.get("role").and_then(Value::as_str) {
            Some("user") => blocks::user(content, &TOOLS, &mut record.updates),
            Some("assistant") => {
                blocks::assistant(content, &TOOLS, &mut record.updates);
            }
            _ => {}
        }
    }
    let last = messages.last();
    let ended = last.is_some_and(|m| {
        m.get("role").and_then(Value::as_str) == Some("assistant")
            && !blocks::list(m.get("content")).any(|b| blocks::kind(b) == Some("tool_use"))
    });
    if ended {
        record.answer = last
            .map(|m| blocks::texts(m.get("content")))
            .filter(|t| !t.is_empty());
    }
    record
}

const TOOLS: Tools = Tools {
    title_kind: |name, input| {
        let kind = if name == "run_commands" {
            "execute"
        } else {
            "other"
        };
        (tool_title(name, input), kind)
    },
    result_text,
};

/// `run_commands`' commands, else the tool's name.
fn tool_title(name: &str, input: &Value) -> String {
    let commands: Vec<&str> = input
        .get("commands")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if commands.is_empty() {
        name.to_owned()
    } else {
        commands.join("; ")
    }
}

/// A result's text: a string, text blocks, or `run_commands`' `{query, result}` items.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| {
                i.get("text")
                    .or_else(|| i.get("result"))
                    .and_then(Value::as_str)
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TASK: &str = "SUBAGENT:alpha list the text files";

    fn record(messages: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"agent": "subagent", "messages": messages})).expect("json")
    }

    #[test]
    fn another_childs_record_or_garbage_is_nothing() {
        let other = record(
            json!([{"role": "user", "content": [{"type": "text", "text": "SUBAGENT:beta x"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]),
        );
        assert_eq!(parse(TASK, &other), Record::default());
        assert_eq!(parse(TASK, b"{\"messages\": [tor"), Record::default());
        assert_eq!(parse(TASK, b"[]"), Record::default());
    }

    #[test]
    fn located_in_the_sessions_folder() {
        let env = |k: &str| (k == "HOME").then(|| OsString::from("/home/u"));
        assert_eq!(
            locate("1796_ddCp5_cli", &env),
            Some(Location::Among {
                dir: PathBuf::from("/home/u/.cline/data/sessions/1796_ddCp5_cli"),
                prefix: "agent_",
                suffix: ".messages.json",
            })
        );
        assert_eq!(locate("../x", &env), None);
    }
}
