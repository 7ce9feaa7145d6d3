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
                if let Some(h) = self.sessions.get_mut(&sid) {
                    // Replays start the turn with the user's prompt; live, the client has it.
                    h.push(json!({"sessionUpdate": "user_message_chunk",
                        "content": {"type": "text", "text": text}}));
                }
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

    /// One prompt turn, as session/update payloads: two parallel subagents in Claude's
    /// legacy shape, their events interleaved.
    fn turn(&mut self, prompt: &str) -> Vec<Value> {
        let survey = self.tool_id();
        let glob = self.tool_id();
        let read = self.tool_id();
        let review = self.tool_id();
        let grep = self.tool_id();
        let spawn = |id: &str| {
            json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": "Task", "kind": "think",
                   "status": "pending", "rawInput": {}, "_meta": {"claudeCode": {"toolName": "Agent"}}})
        };
        let refine = |id: &str, task: &str, child_prompt: &str| {
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "title": task,
                   "rawInput": {"description": task, "prompt": child_prompt, "subagent_type": "general-purpose"},
                   "_meta": {"claudeCode": {"toolName": "Agent"}}})
        };
        let child_call = |id: &str, parent: &str, title: &str, tool: &str| {
            json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": title, "kind": "search",
                   "status": "pending", "_meta": {"claudeCode": {"toolName": tool, "parentToolUseId": parent}}})
        };
        // Claude's post-tool hook update carries no parent id.
        let hook = |id: &str, tool: &str| {
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id,
                   "_meta": {"claudeCode": {"toolResponse": {}, "toolName": tool}}})
        };
        let done = |id: &str, parent: &str, tool: &str, text: &str| {
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": text}}],
                   "_meta": {"claudeCode": {"toolName": tool, "parentToolUseId": parent}}})
        };
        let child_says = |parent: &str, text: &str| {
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text},
                   "_meta": {"claudeCode": {"parentToolUseId": parent}}})
        };
        let finish = |id: &str, text: &str| {
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": text}}],
                   "_meta": {"claudeCode": {"toolName": "Agent"}}})
        };
        vec![
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                   "text": format!("I'll split \"{prompt}\" between two subagents.")}}),
            spawn(&survey),
            refine(
                &survey,
                "Survey text files",
                "List the text files in the project and summarise them.",
            ),
            spawn(&review),
            refine(
                &review,
                "Look for TODOs",
                "Find TODO comments in the source.",
            ),
            child_call(&glob, &survey, "Find `*.txt`", "Glob"),
            child_call(&grep, &review, "Search `TODO`", "Grep"),
            hook(&glob, "Glob"),
            done(&glob, &survey, "Glob", "a.txt\nb.txt"),
            child_call(&read, &survey, "Read a.txt", "Read"),
            done(
                &grep,
                &review,
                "Grep",
                "src/main.rs:12: TODO: handle errors",
            ),
            child_says(&review, "One TODO, in src/main.rs line 12."),
            finish(&review, "One TODO, in src/main.rs line 12."),
            hook(&read, "Read"),
            done(&read, &survey, "Read", "hello from a.txt"),
            child_says(&survey, "Two text files: a.txt (a greeting) and b.txt."),
            finish(&survey, "Two text files: a.txt (a greeting) and b.txt."),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                   "text": "Both subagents are done: two text files, and one TODO in src/main.rs."}}),
        ]
    }
}

fn notification(sid: &str, update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})
}
