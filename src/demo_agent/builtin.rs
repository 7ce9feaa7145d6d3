//! The built-in demo agent: answers `initialize`, `session/new`, `session/load` (replaying
//! what it sent) and `session/prompt`. Each prompt produces a turn in Claude's legacy subagent
//! shape (as `claude-agent-acp` 0.23 sends it): a short reply, an `Agent` spawn, the child's
//! tool call tagged with `_meta.claudeCode.parentToolUseId` (and its post-tool hook update
//! without one), the spawn's completion, and a closing reply.

use std::collections::HashMap;
use std::io::Write;

use anyhow::Result;
use serde_json::{json, Value};

use super::{write_message, Input};

struct Agent {
    sessions: HashMap<String, Vec<Value>>,
    next_session: u32,
    next_tool: u32,
}

pub fn run() -> Result<()> {
    let input = Input::spawn();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut agent = Agent {
        sessions: HashMap::new(),
        next_session: 1,
        next_tool: 1,
    };
    while let Some(msg) = input.next_message() {
        let id = msg.get("id").cloned();
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = id else { continue }; // notifications (session/cancel) need no answer
        if method.is_empty() {
            continue; // a response to something we never asked
        }
        let reply = agent.handle(method, &params, &mut out)?;
        let msg = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        write_message(&mut out, &msg)?;
    }
    Ok(())
}

type Reply = std::result::Result<Value, (i64, String)>;

impl Agent {
    fn handle(&mut self, method: &str, params: &Value, out: &mut impl Write) -> Result<Reply> {
        Ok(match method {
            "initialize" => Ok(json!({
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": true,
                    "promptCapabilities": {"image": false, "embeddedContext": true},
                    "sessionCapabilities": {"close": {}}
                },
                "agentInfo": {"name": "acp-proxy-demo-agent", "title": "Demo agent", "version": env!("CARGO_PKG_VERSION")},
                "authMethods": []
            })),
            "session/new" => {
                let sid = format!("demo-session-{}", self.next_session);
                self.next_session += 1;
                self.sessions.insert(sid.clone(), Vec::new());
                Ok(json!({"sessionId": sid}))
            }
            "session/load" => {
                let sid = params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match self.sessions.get(sid) {
                    Some(history) => {
                        for update in history {
                            write_message(out, &notification(sid, update.clone()))?;
                        }
                        Ok(json!({}))
                    }
                    None => Err((-32002, format!("unknown session {sid}"))),
                }
            }
            "session/close" => Ok(json!({})),
            "session/prompt" => {
                let sid = params
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                if !self.sessions.contains_key(&sid) {
                    return Ok(Err((-32002, format!("unknown session {sid}"))));
                }
                let text = params
                    .pointer("/prompt/0/text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let turn = self.turn(&text);
                for update in turn {
                    write_message(out, &notification(&sid, update.clone()))?;
                    if let Some(h) = self.sessions.get_mut(&sid) {
                        h.push(update);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Ok(json!({"stopReason": "end_turn"}))
            }
            other => Err((-32601, format!("method not found: {other}"))),
        })
    }

    fn tool_id(&mut self) -> String {
        let id = format!("toolu_demo_{:04}", self.next_tool);
        self.next_tool += 1;
        id
    }

    /// One prompt turn, as session/update payloads.
    fn turn(&mut self, prompt: &str) -> Vec<Value> {
        let spawn = self.tool_id();
        let glob = self.tool_id();
        let task = "Survey text files";
        let child_prompt = format!("List the text files in the project ({prompt})");
        vec![
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": prompt}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "I'll delegate the survey to a subagent."}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": spawn, "title": "Task", "kind": "think",
                   "status": "pending", "rawInput": {}, "_meta": {"claudeCode": {"toolName": "Agent"}}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": spawn, "title": task,
                   "rawInput": {"description": task, "prompt": child_prompt, "subagent_type": "general-purpose"},
                   "_meta": {"claudeCode": {"toolName": "Agent"}}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": glob, "title": "Find `*.txt`", "kind": "search",
                   "status": "pending", "rawInput": {"pattern": "*.txt"}, "locations": [],
                   "_meta": {"claudeCode": {"toolName": "Glob", "parentToolUseId": spawn}}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": glob,
                   "_meta": {"claudeCode": {"toolResponse": {"filenames": ["a.txt", "b.txt"], "numFiles": 2}, "toolName": "Glob"}}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": glob, "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "a.txt\nb.txt"}}],
                   "_meta": {"claudeCode": {"toolName": "Glob", "parentToolUseId": spawn}}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": spawn, "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "Found 2 text files: a.txt, b.txt"}}],
                   "_meta": {"claudeCode": {"toolName": "Agent"}}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "The subagent found two text files: a.txt and b.txt."}}),
        ]
    }
}

fn notification(sid: &str, update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})
}
