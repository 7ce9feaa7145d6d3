//! Kimi Code CLI's record of a subagent: `sessions/<work dir hash>/<session>/subagents/
//! <agent id>/wire.jsonl` under its share folder (`KIMI_SHARE_DIR`, else `~/.kimi`), the
//! child's own wire as Kimi's UI would get it, one JSON object a line: a first line
//! `{"type":"metadata","protocol_version":"1.…"}`, then `{"timestamp", "message": {"type",
//! "payload"}}` with `TurnBegin {user_input}` (the task), `StepBegin {n}`, `ContentPart`
//! (`text`, `think`), `ToolCall {id, function: {name, arguments}}` (the arguments as JSON
//! text; a `ToolCallPart {arguments_part}` continues the last one), `ToolResult
//! {tool_call_id, return_value: {is_error, output, message}}`, `TurnEnd`, and others that are
//! not the child's work (`StatusUpdate`, …). The agent id is the spawn result's
//! `agent_id: <id>` line; `<work dir hash>` (the md5 of the working directory) is not
//! derived: any folder holding the session is taken.
//!
//! One agent id can run more than once (a spawn with `resume` appends a run to the same
//! record): a child's run starts at the last `TurnBegin` whose input ends with the child's
//! task (Kimi puts git context before the task of an `explore` child in a repository). Kimi
//! asks a child whose answer is short (under 200 characters) once more for a fuller one, in
//! a second turn of the same run (`run_with_summary_continuation`): the run ended at a
//! `TurnEnd` of that second turn, or of a first turn whose answer was long enough.
//!
//! Verified with kimi-cli 1.51.0.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::{agent_dir, path_safe, Location, Record};
use crate::subagents::render;

/// An answer shorter than this (in characters) makes Kimi ask the child for more
/// (`SUMMARY_MIN_LENGTH`), once (`SUMMARY_CONTINUATION_ATTEMPTS`).
const SUMMARY_MIN_CHARS: usize = 200;

/// Where the record of child `agent_id` of session `session` may be.
pub(super) fn locate(
    session: &str,
    agent_id: &str,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Location> {
    // Without the agent's id (the spawn gives it when it ends) the child's folder is found
    // by its contents.
    if !path_safe(session) || !(agent_id.is_empty() || path_safe(agent_id)) {
        return None;
    }
    let root = agent_dir(env, "KIMI_SHARE_DIR", ".kimi")?;
    let subagents = PathBuf::from(session).join("subagents");
    if agent_id.is_empty() {
        return Some(Location::Nested {
            dir: root.join("sessions"),
            middle: subagents,
            file: "wire.jsonl",
        });
    }
    Some(Location::Under {
        dir: root.join("sessions"),
        tail: subagents.join(agent_id).join("wire.jsonl"),
    })
}

/// The run of the child whose task is `task`, as the record holds it: nothing for a record of
/// another protocol, or without a turn of that task. Lines that do not parse (the last one
/// while it is written) or of a kind not listed are left out. Tool call ids get `agent_id`
/// and the turn's number before them (the model's ids repeat across turns and children).
pub(super) fn parse(agent_id: &str, task: Option<&str>, bytes: &[u8]) -> Record {
    let Some(task) = task.map(unescaped).filter(|t| !t.trim().is_empty()) else {
        return Record::default();
    };
    let mut messages = Vec::new();
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) == Some("metadata") {
            let version = v.get("protocol_version").and_then(Value::as_str);
            if version.is_none_or(|v| v.split('.').next() != Some("1")) {
                return Record::default();
            }
            continue;
        }
        let Some(message) = v.get("message") else {
            continue;
        };
        if let Some(kind) = message.get("type").and_then(Value::as_str) {
            let payload = message.get("payload").cloned().unwrap_or(Value::Null);
            messages.push((kind.to_owned(), payload));
        }
    }
    let start = messages.iter().rposition(|(kind, payload)| {
        kind == "TurnBegin"
            && input_text(payload.get("user_input"))
                .trim_end()
                .ends_with(task.trim())
    });
    match start {
        Some(start) => Run::read(agent_id, &messages[start..]),
        None => Record::default(),
    }
}

/// The task as the child's thread holds it may keep the escapes of the arguments' JSON text
/// (the `kimi` preset reads it out of that text): read as a JSON string when it is one.
fn unescaped(task: &str) -> String {
    serde_json::from_str::<String>(&format!("\"{task}\"")).unwrap_or_else(|_| task.to_owned())
}

/// A run's updates as it goes.
#[derive(Default)]
struct Run {
    record: Record,
    /// Turns begun (the task's is the first).
    turns: usize,
    /// The current step's text (the answer, if the step is the turn's last).
    step_text: String,
    /// The last tool call: its update, its tool's name and its arguments so far (a
    /// `ToolCallPart` adds to them).
    last_call: Option<(usize, String, String)>,
}

impl Run {
    fn read(agent_id: &str, messages: &[(String, Value)]) -> Record {
        let mut run = Run::default();
        for (kind, payload) in messages {
            run.message(agent_id, kind, payload);
        }
        // A last call whose arguments are not whole JSON yet may grow (`ToolCallPart`).
        let len = run.record.updates.len();
        run.record.unsettled = run.last_call.as_ref().is_some_and(|(at, _, args)| {
            *at + 1 == len && serde_json::from_str::<Value>(args).is_err()
        });
        run.record
    }

    fn message(&mut self, agent_id: &str, kind: &str, payload: &Value) {
        let out = &mut self.record.updates;
        match kind {
            "TurnBegin" | "SteerInput" => {
                if kind == "TurnBegin" {
                    self.turns += 1;
                    self.record.answer = None;
                }
                self.step_text.clear();
                let text = input_text(payload.get("user_input"));
                if !text.is_empty() {
                    out.push(render::user_text(&text));
                }
            }
            "StepBegin" => self.step_text.clear(),
            "ContentPart" => match payload.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = payload.get("text").and_then(Value::as_str) {
                        if !self.step_text.is_empty() {
                            self.step_text.push('\n');
                        }
                        self.step_text.push_str(t);
                        out.push(render::agent_text(t));
                    }
                }
                Some("think") => {
                    if let Some(t) = payload.get("think").and_then(Value::as_str) {
                        out.push(json!({"sessionUpdate": "agent_thought_chunk",
                            "content": {"type": "text", "text": t}}));
                    }
                }
                _ => {}
            },
            "ToolCall" => {
                let Some(id) = payload.get("id").and_then(Value::as_str) else {
                    return;
                };
                let function = payload.get("function");
                let name = function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("tool");
                let args = function
                    .and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let input = arguments(args);
                out.push(json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": call_id(agent_id, self.turns, id),
                    "title": tool_title(name, &input),
                    "kind": tool_kind(name),
                    "status": "pending",
                    "rawInput": input,
                }));
                self.last_call = Some((out.len() - 1, name.to_owned(), args.to_owned()));
            }
            "ToolCallPart" => {
                let part = payload.get("arguments_part").and_then(Value::as_str);
                if let (Some(part), Some((at, name, args))) = (part, &mut self.last_call) {
                    args.push_str(part);
                    let input = arguments(args);
                    if let Some(call) = out.get_mut(*at) {
                        call["title"] = json!(tool_title(name, &input));
                        call["rawInput"] = input;
                    }
                }
            }
            "ToolResult" => {
                let Some(id) = payload.get("tool_call_id").and_then(Value::as_str) else {
                    return;
                };
                let ret = payload.get("return_value");
                let failed =
                    ret.and_then(|r| r.get("is_error")).and_then(Value::as_bool) == Some(true);
                let text = result_text(ret);
                out.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id(agent_id, self.turns, id),
                    "status": if failed { "failed" } else { "completed" },
                    "rawOutput": text,
                    "content": [{"type": "content", "content": {"type": "text", "text": text}}],
                }));
            }
            "TurnEnd" => {
                let answer = std::mem::take(&mut self.step_text);
                // A short first answer: Kimi asks for more, the run goes on.
                let last_turn = self.turns >= 2 || answer.chars().count() >= SUMMARY_MIN_CHARS;
                if last_turn && !answer.is_empty() {
                    self.record.answer = Some(answer);
                }
            }
            _ => {}
        }
    }
}

/// A tool call's id in the child's thread: the model's id, after the agent's id of the child
/// and the turn's number in the run.
fn call_id(agent_id: &str, turn: usize, id: &str) -> String {
    format!("{agent_id}-{turn}/{id}")
}

/// A `user_input`: a string, or content parts whose text parts are joined.
fn input_text(input: Option<&Value>) -> String {
    match input {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A tool call's arguments: their JSON, or the text as it is when it is not JSON (yet).
fn arguments(args: &str) -> Value {
    if args.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.to_owned()))
}

/// A result's text as Kimi's ACP layer shows it: the output (a string, or the text of its
/// parts), else the message to the model.
fn result_text(ret: Option<&Value>) -> String {
    let output = match ret.and_then(|r| r.get("output")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if output.is_empty() {
        ret.and_then(|r| r.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    } else {
        output
    }
}

/// A title like Kimi's ACP layer gives (`extract_key_argument`): `<tool>: <key argument>`,
/// else the tool's name.
fn tool_title(name: &str, input: &Value) -> String {
    let key = match name {
        "Agent" => "description",
        "Think" => "thought",
        "Shell" => "command",
        "TaskOutput" | "TaskStop" => "task_id",
        "ReadFile" | "ReadMediaFile" | "WriteFile" | "StrReplaceFile" => "path",
        "Glob" | "Grep" => "pattern",
        "SearchWeb" => "query",
        "FetchURL" => "url",
        _ => "",
    };
    input
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(|| name.to_owned(), |s| format!("{name}: {s}"))
}

fn tool_kind(name: &str) -> &'static str {
    match name {
        "Shell" => "execute",
        "ReadFile" | "ReadMediaFile" => "read",
        "WriteFile" | "StrReplaceFile" => "edit",
        "Glob" | "Grep" => "search",
        "SearchWeb" | "FetchURL" => "fetch",
        "Think" => "think",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const AGENT: &str = "af33b4a82";
    const TASK: &str = "SUBAGENT:alpha list the text files in the project and report what you find";
    const ANSWER: &str = "SUB-ANSWER alpha: the project holds a.txt, b.txt.";

    /// Kimi 1.51.0's record of the child alpha of the kit's `two` run (tests/fixtures/README.md).
    fn fixture() -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/e2e/kimi-1.51.0-two.agent-alpha.wire.jsonl");
        std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    fn lines(bytes: &[u8]) -> Vec<String> {
        String::from_utf8(bytes.to_vec())
            .expect("the record is UTF-8")
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn kinds(r: &Record) -> Vec<&str> {
        r.updates
            .iter()
            .filter_map(|u| u["sessionUpdate"].as_str())
            .collect()
    }

    #[test]
    fn a_real_record_reads_as_the_childs_run() {
        let r = parse(AGENT, Some(TASK), &fixture());
        assert_eq!(r.answer.as_deref(), Some(ANSWER));
        assert_eq!(
            kinds(&r),
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk",
                // Kimi's own ask for a fuller answer, and the child's second answer.
                "user_message_chunk",
                "agent_message_chunk",
            ]
        );
        let u = &r.updates;
        assert_eq!(u[0]["content"]["text"], TASK);
        assert_eq!(u[1]["content"]["text"], "Subagent alpha looking around.");
        assert_eq!(u[2]["toolCallId"], "af33b4a82-1/call_0004");
        assert_eq!(u[2]["title"], "Glob: *.txt");
        assert_eq!(u[2]["kind"], "search");
        assert_eq!(u[2]["rawInput"], json!({"pattern": "*.txt"}));
        assert_eq!(u[3]["toolCallId"], "af33b4a82-1/call_0004");
        assert_eq!(u[3]["status"], "completed");
        assert_eq!(u[3]["rawOutput"], "a.txt\nb.txt");
        assert_eq!(u[4]["content"]["text"], ANSWER);
        assert!(u[5]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Your previous response was too brief.")));
        assert_eq!(u[6]["content"]["text"], ANSWER);
    }

    #[test]
    fn a_short_answer_is_not_the_end_until_kimi_asked_for_more() {
        let all = lines(&fixture());
        // Cut after the first turn's end: Kimi asks for more next.
        let first_end = all
            .iter()
            .position(|l| l.contains("\"TurnEnd\""))
            .expect("a turn end");
        let first_turn = all[..=first_end].join("\n");
        let r = parse(AGENT, Some(TASK), first_turn.as_bytes());
        assert!(
            !r.ended(),
            "a short first answer is followed by another turn"
        );
        assert_eq!(r.updates.len(), 5);
        // A long first answer ends the run at once.
        let long = "x".repeat(SUMMARY_MIN_CHARS);
        let long_turn = first_turn.replace(ANSWER, &long);
        assert_eq!(
            parse(AGENT, Some(TASK), long_turn.as_bytes())
                .answer
                .as_deref(),
            Some(long.as_str())
        );
        // The second turn without its end: still running.
        let running = all[..all.len() - 1].join("\n");
        assert!(!parse(AGENT, Some(TASK), running.as_bytes()).ended());
    }

    #[test]
    fn another_childs_record_a_torn_line_or_another_format_give_what_is_whole() {
        let bytes = fixture();
        // Another task, or none: nothing.
        let other = "SUBAGENT:beta list the text files in the project and report what you find";
        assert_eq!(parse(AGENT, Some(other), &bytes), Record::default());
        assert_eq!(parse(AGENT, None, &bytes), Record::default());
        // The last line torn while written: what is whole, not ended.
        let text = String::from_utf8(bytes.clone()).expect("UTF-8");
        let torn = &text[..text.trim_end().len() - 20];
        let r = parse(AGENT, Some(TASK), torn.as_bytes());
        assert!(!r.ended());
        assert_eq!(r.updates.len(), 7);
        // A record of another protocol: nothing; garbage: nothing.
        let v2 = text.replace(
            "\"protocol_version\": \"1.1\"",
            "\"protocol_version\": \"2.0\"",
        );
        assert_eq!(parse(AGENT, Some(TASK), v2.as_bytes()), Record::default());
        assert_eq!(
            parse(
                AGENT,
                Some(TASK),
                b"\0\x01 not json\n[1,2]\n{\"type\":\"x\"}"
            ),
            Record::default()
        );
    }

    #[test]
    fn a_resumed_agent_reads_its_latest_run_of_the_task() {
        let text = String::from_utf8(fixture()).expect("UTF-8");
        let body: Vec<&str> = text.lines().skip(1).collect();
        // An earlier run of another task, then this one; the task given with the escapes of
        // the arguments' JSON text, and Kimi's git context before it in the record.
        let earlier = body
            .join("\n")
            .replace("SUBAGENT:alpha", "SUBAGENT:earlier")
            .replace("call_0004", "call_0001");
        let now = body.join("\n").replace(
            &format!("\"user_input\": \"{TASK}\""),
            &format!("\"user_input\": \"<git-context>\\nbranch main\\n</git-context>\\n\\n{TASK} \\\"quoted\\\"\""),
        );
        let bytes = format!("{}\n{earlier}\n{now}\n", text.lines().next().unwrap_or(""));
        let task = format!("{TASK} \\\"quoted\\\"");
        let r = parse(AGENT, Some(&task), bytes.as_bytes());
        assert_eq!(r.answer.as_deref(), Some(ANSWER));
        assert_eq!(r.updates.len(), 7);
        assert!(r.updates[0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with(&format!("{TASK} \"quoted\""))));
        // The turns are counted in this run: the ids are this run's.
        assert_eq!(r.updates[2]["toolCallId"], "af33b4a82-1/call_0004");
    }

    #[test]
    fn tool_call_parts_a_failed_result_and_thoughts() {
        let line = |kind: &str, payload: Value| {
            json!({"timestamp": 1.0, "message": {"type": kind, "payload": payload}}).to_string()
        };
        let long = "y".repeat(SUMMARY_MIN_CHARS);
        let record = [
            line(
                "TurnBegin",
                json!({"user_input": [{"type": "text", "text": "do it"}]}),
            ),
            line("StepBegin", json!({"n": 1})),
            line("ContentPart", json!({"type": "think", "think": "hmm"})),
            line(
                "ToolCall",
                json!({"type": "function", "id": "Shell:0",
                "function": {"name": "Shell", "arguments": "{\"command\": \"l"}}),
            ),
            line("ToolCallPart", json!({"arguments_part": "s\"}"})),
            line(
                "ToolResult",
                json!({"tool_call_id": "Shell:0", "return_value":
                {"is_error": true, "output": "", "message": "no such command", "display": []}}),
            ),
            line("StepBegin", json!({"n": 2})),
            line("ContentPart", json!({"type": "text", "text": long})),
            line("TurnEnd", json!({})),
        ]
        .join("\n");
        let r = parse("a1", Some("do it"), record.as_bytes());
        assert_eq!(r.answer.as_deref(), Some(long.as_str()));
        let u = &r.updates;
        assert_eq!(u[1]["sessionUpdate"], "agent_thought_chunk");
        assert_eq!(
            (&u[2]["title"], &u[2]["kind"], &u[2]["rawInput"]),
            (
                &json!("Shell: ls"),
                &json!("execute"),
                &json!({"command": "ls"})
            )
        );
        assert_eq!(
            (&u[3]["status"], &u[3]["rawOutput"]),
            (&json!("failed"), &json!("no such command"))
        );
    }

    #[test]
    fn located_under_the_share_folder_and_never_outside_it() {
        let env = |k: &str| (k == "HOME").then(|| OsString::from("/home/u"));
        assert_eq!(
            locate("ee86e47f-37fd", AGENT, &env),
            Some(Location::Under {
                dir: PathBuf::from("/home/u/.kimi/sessions"),
                tail: PathBuf::from(format!("ee86e47f-37fd/subagents/{AGENT}/wire.jsonl")),
            })
        );
        let env = |k: &str| match k {
            "KIMI_SHARE_DIR" => Some(OsString::from("/share")),
            _ => Some(OsString::from("/home/u")),
        };
        assert!(matches!(
            locate("s", AGENT, &env),
            Some(Location::Under { dir, .. }) if dir == Path::new("/share/sessions")
        ));
        assert_eq!(locate("../etc", AGENT, &env), None);
        assert_eq!(locate("s", "a/b", &env), None);
        assert_eq!(locate("s", "..", &env), None);
        assert_eq!(locate("s", AGENT, &|_| None), None);
        // Without Kimi's id of the child (its spawn runs): any child folder of the session,
        // the one whose record is the child's.
        assert_eq!(
            locate("s", "", &env),
            Some(Location::Nested {
                dir: PathBuf::from("/share/sessions"),
                middle: PathBuf::from("s/subagents"),
                file: "wire.jsonl",
            })
        );
        assert_eq!(locate("../etc", "", &env), None);
    }

    #[test]
    fn a_call_whose_arguments_are_not_whole_is_unsettled() {
        let bytes = fixture();
        let all = lines(&bytes);
        let call = all
            .iter()
            .position(|l| l.contains("\"ToolCall\""))
            .expect("a tool call");
        let upto = |n: usize| parse(AGENT, Some(TASK), all[..n].join("\n").as_bytes());
        let whole = upto(call + 1);
        assert!(!whole.unsettled, "whole arguments: settled");
        assert_eq!(whole.settled().len(), whole.updates.len());
        // The same call with its arguments cut: it may still grow.
        let mut cut = all[..=call].to_vec();
        cut[call] = cut[call].replace("\\\"*.txt\\\"}", "\\\"*.t");
        let torn = parse(AGENT, Some(TASK), cut.join("\n").as_bytes());
        assert!(torn.unsettled, "{:?}", torn.updates.last());
        assert_eq!(torn.settled().len(), torn.updates.len() - 1);
    }
}
