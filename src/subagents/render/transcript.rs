//! The `transcript` flavour: for clients with neither Zed's convention nor standard ACP
//! subagents, the child's work is folded into its spawn card's `content` as a short,
//! bounded Markdown log (latest tool calls with their status, then the child's words).

use std::collections::{HashMap, VecDeque};

use serde_json::{json, Value};

use super::{card_base, synthesized_base, CardChange, Render, Step};
use crate::subagents::ids::ChildId;
use crate::subagents::model::Child;

/// Lines kept in a card; older ones are summarised as a count.
const MAX_LINES: usize = 24;
/// Characters kept per line.
const MAX_LINE_CHARS: usize = 240;

#[derive(Debug, Clone, Default)]
pub struct Log {
    lines: VecDeque<Line>,
    dropped: usize,
    steps: usize,
}

#[derive(Debug, Clone)]
struct Line {
    tool_id: Option<String>,
    status: Option<String>,
    text: String,
}

impl Log {
    /// Account for one of the child's updates.
    pub fn observe(&mut self, update: &Value) {
        let kind = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("");
        let tool_id = update.get("toolCallId").and_then(Value::as_str);
        let title = update.get("title").and_then(Value::as_str);
        let status = update.get("status").and_then(Value::as_str);
        match kind {
            "agent_message_chunk" => {
                let text = update
                    .pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match self.lines.back_mut() {
                    Some(last) if last.tool_id.is_none() => {
                        last.text.push_str(text);
                        last.text = clip_tail(&last.text);
                    }
                    _ => self.push(Line {
                        tool_id: None,
                        status: None,
                        text: clip_tail(text),
                    }),
                }
            }
            "tool_call" => {
                let Some(id) = tool_id else { return };
                if let Some(line) = self.find(id) {
                    line.status = status.map(str::to_owned).or(line.status.take());
                    return;
                }
                self.steps += 1;
                self.push(Line {
                    tool_id: Some(id.to_owned()),
                    status: status.map(str::to_owned),
                    text: clip_head(title.unwrap_or("tool call")),
                });
            }
            "tool_call_update" => {
                let Some(line) = tool_id.and_then(|id| self.find(id)) else {
                    return;
                };
                if let Some(s) = status {
                    line.status = Some(s.to_owned());
                }
                if let Some(t) = title {
                    line.text = clip_head(t);
                }
            }
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    fn find(&mut self, id: &str) -> Option<&mut Line> {
        self.lines
            .iter_mut()
            .rev()
            .find(|l| l.tool_id.as_deref() == Some(id))
    }

    fn push(&mut self, line: Line) {
        if self.lines.len() == MAX_LINES {
            self.lines.pop_front();
            self.dropped += 1;
        }
        self.lines.push_back(line);
    }

    /// The log as Markdown.
    pub fn render(&self) -> String {
        let s = if self.steps == 1 { "" } else { "s" };
        let mut out = format!("Subagent activity ({} step{s}):\n", self.steps);
        if self.dropped > 0 {
            out.push_str(&format!("- … {} earlier\n", self.dropped));
        }
        for line in &self.lines {
            match &line.tool_id {
                Some(_) => {
                    let mark = match line.status.as_deref() {
                        Some("completed") => "✓",
                        Some("failed") => "✗",
                        _ => "…",
                    };
                    out.push_str(&format!("- {mark} {}\n", line.text));
                }
                None => {
                    out.push_str(&line.text);
                    out.push('\n');
                }
            }
        }
        out
    }
}

fn clip_head(s: &str) -> String {
    let one = s.replace('\n', " ");
    if one.chars().count() <= MAX_LINE_CHARS {
        return one;
    }
    let mut t: String = one.chars().take(MAX_LINE_CHARS - 1).collect();
    t.push('…');
    t
}

/// Keep the end of a growing text (the newest words matter most).
fn clip_tail(s: &str) -> String {
    let n = s.chars().count();
    if n <= MAX_LINE_CHARS {
        return s.to_owned();
    }
    let tail: String = s.chars().skip(n - (MAX_LINE_CHARS - 1)).collect();
    format!("…{tail}")
}

/// The card's content block holding a log.
fn content(log: &Log) -> Value {
    json!([{"type": "content", "content": {"type": "text", "text": log.render()}}])
}

/// Cards that carry the child's log, one per child.
#[derive(Debug, Default)]
pub struct Transcript {
    logs: HashMap<ChildId, Log>,
}

impl Transcript {
    fn log(&self, child: &Child) -> Option<&Log> {
        self.logs.get(&child.id).filter(|l| !l.is_empty())
    }
}

impl Render for Transcript {
    fn synthesized_card(&self, child: &Child) -> Value {
        synthesized_base(child)
    }

    /// Status and title if given, the log as content.
    fn card_update(&self, child: &Child, status: Option<&str>, title: Option<&str>) -> Value {
        let mut upd = card_base(child, status, title);
        if let Some(log) = self.log(child) {
            upd["content"] = content(log);
        }
        upd
    }

    fn spawn_update(&self, child: &Child, update: &mut Value, _is_new: bool) {
        if let Some(log) = self.log(child) {
            // The log first, then whatever the agent put in the card (its result).
            let mut items = match content(log) {
                Value::Array(items) => items,
                _ => Vec::new(),
            };
            if let Some(Value::Array(agent)) = update.get("content") {
                items.extend(agent.iter().cloned());
            }
            update["content"] = Value::Array(items);
        }
    }

    fn reads_child_events(&self) -> bool {
        true
    }

    fn recorded(&mut self, child: &Child, update: &Value) {
        match self.logs.get_mut(&child.id) {
            Some(log) => log.observe(update),
            None => {
                let mut log = Log::default();
                log.observe(update);
                self.logs.insert(child.id.clone(), log);
            }
        }
    }

    /// Fold the child's work into its card, at each step and each new text run.
    fn child_step(&mut self, child: &mut Child, step: &Step<'_>) -> Option<CardChange> {
        let text_run_starts = step.kind == "agent_message_chunk" && step.new_entry;
        (step.new_tool_call || step.tool_status || text_run_starts)
            .then(|| CardChange::Update(self.card_update(child, None, None)))
    }

    fn forget(&mut self, child_id: &str) {
        self.logs.remove(child_id);
    }

    fn footprint(&self) -> Vec<(&'static str, usize)> {
        vec![("transcript_logs", self.logs.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_is_bounded_and_tracks_status() {
        let mut log = Log::default();
        log.observe(&json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"Find","status":"pending"}));
        log.observe(
            &json!({"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed"}),
        );
        log.observe(&json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Found "}}));
        log.observe(
            &json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"two."}}),
        );
        assert_eq!(
            log.render(),
            "Subagent activity (1 step):\n- ✓ Find\nFound two.\n"
        );
        for n in 0..100 {
            log.observe(&json!({"sessionUpdate":"tool_call","toolCallId":format!("t{n}"),"title":"x".repeat(1000)}));
        }
        let text = log.render();
        assert!(text.contains("earlier"));
        assert!(text.len() < (MAX_LINES + 3) * (MAX_LINE_CHARS * 4 + 8));
    }
}
