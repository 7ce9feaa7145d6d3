//! Claude's legacy subagent wire, as the engine tests send it: a spawn is an `Agent` tool
//! call (`title: "Task"` first, then the task), and the child's events name their spawn in
//! `_meta.claudeCode.parentToolUseId`. Each builder gives the `update` of a `session/update`
//! (see [`super::engine::update_msg`]).

use serde_json::{json, Value};

/// The spawn's `_meta`; `parent_tool` when a child spawns it.
pub fn spawn_meta(parent_tool: Option<&str>) -> Value {
    let mut meta = json!({"claudeCode": {"toolName": "Agent"}});
    if let Some(p) = parent_tool {
        meta["claudeCode"]["parentToolUseId"] = json!(p);
    }
    meta
}

/// The spawn's first `tool_call`, before the agent knows its task.
pub fn spawn_call(id: &str, meta: &Value) -> Value {
    json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": "Task", "kind": "think",
        "status": "pending", "rawInput": {}, "_meta": meta})
}

/// The spawn's update with its task (title and description) and the child's prompt.
pub fn spawn_task(id: &str, task: &str, prompt: &str, meta: &Value) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "title": task,
        "rawInput": {"description": task, "prompt": prompt, "subagent_type": "general-purpose"},
        "_meta": meta})
}

/// The spawn's final update: its status and the child's answer as content.
pub fn spawn_result(spawn: &str, status: &str, text: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": spawn, "status": status,
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
        "_meta": {"claudeCode": {"toolName": "Agent"}}})
}

/// A `Read` tool call of the child of `spawn`.
pub fn child_tool(spawn: &str, id: &str, title: &str, status: &str) -> Value {
    json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": title, "kind": "read",
        "status": status, "_meta": {"claudeCode": {"toolName": "Read", "parentToolUseId": spawn}}})
}

/// Words of the child of `spawn`.
pub fn child_text(spawn: &str, text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text},
        "_meta": {"claudeCode": {"parentToolUseId": spawn}}})
}
