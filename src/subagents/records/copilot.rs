//! GitHub Copilot CLI's session log: `session-state/<session>/events.jsonl` under its home
//! (`COPILOT_HOME`, else `~/.copilot`), one JSON object a line as the session goes. A child
//! starts with `{"type":"subagent.started","data":{"toolCallId":"<spawn>",…},"agentId":"<id>"}`:
//! the tie between the spawn's tool call id and Copilot's own id of the child, which the
//! child's tool calls carry on the wire (`_meta["github.com/copilot"].agentId`) and which the
//! wire itself binds to no spawn in sync mode. That tie is all the proxy reads here: the log
//! is the parent session's, and the child's words on the wire carry no id it could match.
//!
//! Verified with Copilot CLI 1.0.102. A line that does not parse or of another shape is
//! skipped; a log without the line gives nothing, and the child's events are placed as the
//! wire alone allows. The follower reads the log as it grows, whole lines only
//! (`transport::records`), so a long session's log costs only what it appends.

use std::ffi::OsString;

use serde_json::Value;

use super::words::LoggedMessage;
use super::{agent_dir, path_safe, Location, Record};

/// The session log of session `session`.
pub(super) fn locate(session: &str, env: &dyn Fn(&str) -> Option<OsString>) -> Option<Location> {
    if !path_safe(session) {
        return None;
    }
    let root = agent_dir(env, "COPILOT_HOME", ".copilot")?;
    Some(Location::At(
        root.join("session-state")
            .join(session)
            .join("events.jsonl"),
    ))
}

/// Copilot's id of the child spawned by tool call `spawn`, once the log names it (the last
/// `subagent.started` of that tool call: a tool call id the model reused names its latest
/// child).
pub(super) fn parse(spawn: &str, bytes: &[u8]) -> Record {
    let mut record = Record::default();
    if spawn.is_empty() {
        return record;
    }
    for line in bytes.split(|b| *b == b'\n') {
        // Only the lines that can hold it are parsed.
        if !contains(line, b"subagent.started") {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("subagent.started")
            || v.pointer("/data/toolCallId").and_then(Value::as_str) != Some(spawn)
        {
            continue;
        }
        if let Some(id) = v
            .get("agentId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty() && id.len() <= 200)
        {
            record.agent_id = Some(id.to_owned());
        }
    }
    record
}

/// The children's messages the log holds, in the order logged: each `assistant.message` of a
/// child (`data.parentToolCallId`, its spawn) with its whole text (`data.content`) and the
/// tool calls it made (`data.toolRequests[].toolCallId`). The parent's own messages (no
/// spawn) and empty ones are left out.
pub fn messages(bytes: &[u8]) -> Vec<LoggedMessage> {
    let mut out = Vec::new();
    for line in bytes.split(|b| *b == b'\n') {
        if !contains(line, b"assistant.message") || !contains(line, b"parentToolCallId") {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("assistant.message") {
            continue;
        }
        let data = &v["data"];
        let (Some(spawn), Some(text)) = (
            data.get("parentToolCallId").and_then(Value::as_str),
            data.get("content").and_then(Value::as_str),
        ) else {
            continue;
        };
        if spawn.is_empty() || text.is_empty() {
            continue;
        }
        let tool_calls = data
            .get("toolRequests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("toolCallId").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        out.push(LoggedMessage {
            spawn: spawn.to_owned(),
            text: text.to_owned(),
            tool_calls,
        });
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::words;
    use super::*;

    fn started(spawn: &str, id: &str) -> String {
        serde_json::json!({"type": "subagent.started",
            "data": {"toolCallId": spawn, "agentName": "explore"}, "agentId": id})
        .to_string()
    }

    #[test]
    fn the_spawns_child_id_from_its_started_line() {
        let log = [
            r#"{"type":"session.start","data":{"sessionId":"s"}}"#.to_owned(),
            started("call_0001", "b563eda7"),
            started("call_0002", "f41c67c8"),
            r#"{"type":"subagent.started","data":{"toolCallId":"call_0003"#.to_owned(),
        ]
        .join("\n");
        assert_eq!(
            parse("call_0002", log.as_bytes()).agent_id.as_deref(),
            Some("f41c67c8")
        );
        assert_eq!(
            parse("call_0001", log.as_bytes()).agent_id.as_deref(),
            Some("b563eda7")
        );
        // Written only in part so far, another spawn's, or no spawn: nothing.
        assert_eq!(parse("call_0003", log.as_bytes()), Record::default());
        assert_eq!(parse("call_0009", log.as_bytes()), Record::default());
        assert_eq!(parse("", log.as_bytes()), Record::default());
        // The same tool call id started twice: its latest child.
        let again = format!(
            "{}\n{}",
            started("call_0001", "old"),
            started("call_0001", "new")
        );
        assert_eq!(
            parse("call_0001", again.as_bytes()).agent_id.as_deref(),
            Some("new")
        );
        // The id where another version might put it: not read.
        let moved =
            r#"{"type":"subagent.started","data":{"toolCallId":"call_0001","agentId":"x"}}"#;
        assert_eq!(parse("call_0001", moved.as_bytes()), Record::default());
    }

    #[test]
    fn the_childrens_messages_with_their_spawn_from_the_log() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/e2e/copilot-1.0.102-two-log.events.jsonl");
        let log = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let all = messages(&log);
        let got: Vec<(&str, &str, Vec<&str>)> = all
            .iter()
            .map(|m| {
                let calls = m.tool_calls.iter().map(String::as_str).collect();
                (m.spawn.as_str(), m.text.as_str(), calls)
            })
            .collect();
        // The parent's own messages ("I will delegate this.", "MAIN-DONE: …") have no spawn.
        assert_eq!(
            got,
            [
                (
                    "call_0002",
                    "Subagent beta looking around.",
                    vec!["call_0003"]
                ),
                (
                    "call_0001",
                    "Subagent alpha looking around.",
                    vec!["call_0004"]
                ),
                (
                    "call_0002",
                    "SUB-ANSWER beta: the project holds a.txt, b.txt.",
                    vec![]
                ),
                (
                    "call_0001",
                    "SUB-ANSWER alpha: the project holds a.txt, b.txt.",
                    vec![]
                ),
            ]
        );
        // A line cut short, of another type, or without text: nothing.
        let odd = [
            r#"{"type":"assistant.message","data":{"parentToolCallId":"c","content":"x"#,
            r#"{"type":"user.message","data":{"parentToolCallId":"c","content":"x"}}"#,
            r#"{"type":"assistant.message","data":{"parentToolCallId":"c","content":""}}"#,
            r#"{"type":"assistant.message","data":{"parentToolCallId":"","content":"x"}}"#,
        ]
        .join("\n");
        assert_eq!(messages(odd.as_bytes()), []);
    }

    /// The word chunks Copilot sent on the wire while the two children ran (the two-log
    /// fixture: after the spawns' tool calls, before the main agent's last words).
    fn childrens_chunks() -> Vec<String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/e2e/copilot-1.0.102-two-log.dump.jsonl");
        let dump = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let mut chunks = Vec::new();
        let mut spawned = false;
        for line in dump.lines() {
            let v: Value = serde_json::from_str(line).expect("a dump line is JSON");
            if v["dir"] != "agent\u{2192}proxy" {
                continue;
            }
            let Some(frame) = v["frame"].as_str() else {
                continue;
            };
            let f: Value = serde_json::from_str(frame).expect("a frame is JSON");
            let u = &f["params"]["update"];
            match u["sessionUpdate"].as_str() {
                Some("tool_call") => spawned = true,
                Some("agent_message_chunk") if spawned => {
                    let text = u["content"]["text"].as_str().unwrap_or_default();
                    if text.starts_with("MAIN-DONE") {
                        break;
                    }
                    chunks.push(text.to_owned());
                }
                _ => {}
            }
        }
        chunks
    }

    #[test]
    fn the_childrens_chunks_split_as_the_log_says_in_order_or_interleaved() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/e2e/copilot-1.0.102-two-log.events.jsonl");
        let log = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let logged = messages(&log);
        let chunks = childrens_chunks();
        assert_eq!(chunks.len(), 22, "{chunks:?}");
        let joined = |run: &[&str], to: &[usize], spawn: &str| -> String {
            run.iter()
                .zip(to)
                .filter(|(_, m)| logged[**m].spawn == spawn)
                .map(|(c, _)| *c)
                .collect()
        };
        // As they came: each child's chunks spell its two messages.
        let run: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let to = words::split_run(&run, &logged).expect("one outcome");
        assert_eq!(
            joined(&run, &to, "call_0002"),
            "Subagent beta looking around.SUB-ANSWER beta: the project holds a.txt, b.txt."
        );
        assert_eq!(
            joined(&run, &to, "call_0001"),
            "Subagent alpha looking around.SUB-ANSWER alpha: the project holds a.txt, b.txt."
        );
        // The two answers' chunks interleaved, one of each in turn.
        let (beta, alpha) = (&run[8..15], &run[15..]);
        assert!(beta[1].starts_with("beta") && alpha[1].starts_with("alpha"));
        let mixed: Vec<&str> = beta.iter().zip(alpha).flat_map(|(b, a)| [*b, *a]).collect();
        let to = words::split_run(&mixed, &logged).expect("one outcome");
        assert_eq!(
            joined(&mixed, &to, "call_0002"),
            "SUB-ANSWER beta: the project holds a.txt, b.txt."
        );
        assert_eq!(
            joined(&mixed, &to, "call_0001"),
            "SUB-ANSWER alpha: the project holds a.txt, b.txt."
        );
        // A run cut before the end of a message: not yet.
        assert_eq!(words::split_run(&mixed[..13], &logged), None);
    }

    #[test]
    fn located_under_copilots_home_and_never_outside_it() {
        let env = |k: &str| match k {
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        assert_eq!(
            locate("c51a-44f7", &env),
            Some(Location::At(PathBuf::from(
                "/home/u/.copilot/session-state/c51a-44f7/events.jsonl"
            )))
        );
        let env = |k: &str| match k {
            "COPILOT_HOME" => Some(OsString::from("/cop")),
            _ => Some(OsString::from("/home/u")),
        };
        assert!(matches!(
            locate("s", &env),
            Some(Location::At(p)) if p == Path::new("/cop/session-state/s/events.jsonl")
        ));
        assert_eq!(locate("../etc", &env), None);
        assert_eq!(locate("", &env), None);
        assert_eq!(locate("s", &|_| None), None);
    }
}
