//! The message blocks both records hold (Anthropic's shape: `text`, `tool_use {id, name,
//! input}`, `tool_result {tool_use_id, content, is_error}`) as child updates. What differs per
//! agent, a tool's title and kind and a result's text, comes from the reader.

use serde_json::{json, Value};

use crate::subagents::render;

/// What a reader says of its agent's tools.
pub(super) struct Tools {
    /// A tool call's title and ACP kind, from the tool's name and input.
    pub title_kind: fn(&str, &Value) -> (String, &'static str),
    /// A tool result's text, from its `content`.
    pub result_text: fn(Option<&Value>) -> String,
}

/// The blocks of a message's content (none for a string).
pub(super) fn list(content: Option<&Value>) -> impl Iterator<Item = &Value> {
    content.and_then(Value::as_array).into_iter().flatten()
}

/// A block's `type`.
pub(super) fn kind(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

fn text(block: &Value) -> Option<&str> {
    block.get("text").and_then(Value::as_str)
}

/// A user message's content (a string, or blocks): the task, or tool results.
pub(super) fn user(content: Option<&Value>, tools: &Tools, out: &mut Vec<Value>) {
    if let Some(Value::String(s)) = content {
        out.push(render::user_text(s));
        return;
    }
    for b in list(content) {
        match kind(b) {
            Some("text") => {
                if let Some(t) = text(b) {
                    out.push(render::user_text(t));
                }
            }
            Some("tool_result") => {
                let Some(id) = b.get("tool_use_id").and_then(Value::as_str) else {
                    continue;
                };
                let text = (tools.result_text)(b.get("content"));
                let failed = b.get("is_error").and_then(Value::as_bool) == Some(true);
                out.push(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": id,
                    "status": if failed { "failed" } else { "completed" },
                    "rawOutput": text,
                    "content": [{"type": "content", "content": {"type": "text", "text": text}}],
                }));
            }
            _ => {}
        }
    }
}

/// An assistant message's blocks into `out`; returns its text.
pub(super) fn assistant(content: Option<&Value>, tools: &Tools, out: &mut Vec<Value>) -> String {
    let mut texts = String::new();
    for b in list(content) {
        match kind(b) {
            Some("text") => {
                if let Some(t) = text(b) {
                    out.push(render::agent_text(t));
                    texts.push_str(t);
                }
            }
            Some("tool_use") => {
                let Some(id) = b.get("id").and_then(Value::as_str) else {
                    continue;
                };
                let name = b.get("name").and_then(Value::as_str).unwrap_or("tool");
                let input = b.get("input").cloned().unwrap_or(Value::Null);
                let (title, kind) = (tools.title_kind)(name, &input);
                out.push(json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": id,
                    "title": title,
                    "kind": kind,
                    "status": "pending",
                    "rawInput": input,
                }));
            }
            _ => {}
        }
    }
    texts
}

/// The text of a message's content: a string, or its text blocks joined.
pub(super) fn texts(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        _ => list(content)
            .filter(|b| kind(b) == Some("text"))
            .filter_map(text)
            .collect(),
    }
}
