//! The `transcript` flavour (the folded view): for clients with neither Zed's convention nor
//! standard ACP subagents. Measured on acpx (a client that prints a tool call when it starts
//! and when it ends, nothing between) and Toad (one that shows each tool call's content), the
//! view is a mix:
//!
//! - each of the child's tool calls is shown in the parent's thread as a tool call of its
//!   own, attributed (`<card title> › <tool title>`, id `<spawn id>/<tool id>`), as the child
//!   sends it: it starts and ends when the child's does, with its output, so a client that
//!   prints only starts and ends shows the child's steps as they happen, and keeps them when
//!   the turn is cancelled;
//! - the spawn card holds the child's answer, once (the agent's own result when it gives one,
//!   without the boilerplate its preset names, else the child's last words; a long answer cut
//!   at a line or word boundary, keeping its beginning), then a bounded log of the child's
//!   steps, each with the first line of its output;
//! - the child's words stay out of the parent's thread (they are the answer, shown in the
//!   card);
//! - a turn that ends while a card is open closes it, failed, with what the child did.

use std::collections::{HashMap, VecDeque};

use serde_json::{json, Map, Value};

use super::{card_base, synthesized_base, CardChange, Render, Step};
use crate::subagents::ids::ChildId;
use crate::subagents::model::{Child, ChildState};
use crate::subagents::preset::vocab::Pattern;

/// Lines kept in a card's log; older ones are summarised as a count.
const MAX_LINES: usize = 24;
/// Characters kept per line of the log.
const MAX_LINE_CHARS: usize = 240;
/// Characters of a step's output shown beside it.
const MAX_OUTPUT_CHARS: usize = 120;
/// An answer longer than this is cut, keeping its beginning.
const MAX_ANSWER_LINES: usize = 40;
const MAX_ANSWER_CHARS: usize = 4000;
/// Separates the child's title from its tool's in an attributed step.
const ATTRIBUTION: &str = " › ";

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
    /// A tool's title, or the child's words (their beginning, up to an answer's length).
    text: String,
    /// The first line of a tool's output, clipped.
    output: Option<String>,
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
        let output = first_output_line(update);
        match kind {
            "agent_message_chunk" => {
                let text = update
                    .pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match self.lines.back_mut() {
                    Some(last) if last.tool_id.is_none() => push_head(&mut last.text, text),
                    _ => {
                        let mut line = Line {
                            tool_id: None,
                            status: None,
                            text: String::new(),
                            output: None,
                        };
                        push_head(&mut line.text, text);
                        self.push(line);
                    }
                }
            }
            "tool_call" => {
                let Some(id) = tool_id else { return };
                if let Some(line) = self.find(id) {
                    line.status = status.map(str::to_owned).or(line.status.take());
                    line.output = output.or(line.output.take());
                    return;
                }
                self.steps += 1;
                self.push(Line {
                    tool_id: Some(id.to_owned()),
                    status: status.map(str::to_owned),
                    text: clip_head(title.unwrap_or("tool call"), MAX_LINE_CHARS),
                    output,
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
                    line.text = clip_head(t, MAX_LINE_CHARS);
                }
                if output.is_some() {
                    line.output = output;
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

    /// The child's last words, when its thread ends with words (its answer, once it ended).
    fn last_words(&self) -> Option<&str> {
        self.lines
            .back()
            .filter(|l| l.tool_id.is_none())
            .map(|l| l.text.as_str())
            .filter(|t| !t.trim().is_empty())
    }

    /// The log as Markdown. `without_last_words`: the child's last words are shown apart
    /// (as its answer), so the log leaves them out.
    pub fn render(&self, without_last_words: bool) -> String {
        let s = if self.steps == 1 { "" } else { "s" };
        let mut out = format!("Subagent activity ({} step{s}):\n", self.steps);
        if self.dropped > 0 {
            out.push_str(&format!("- … {} earlier\n", self.dropped));
        }
        let shown = if without_last_words && self.last_words().is_some() {
            self.lines.len() - 1
        } else {
            self.lines.len()
        };
        for line in self.lines.iter().take(shown) {
            match &line.tool_id {
                Some(_) => {
                    let mark = match line.status.as_deref() {
                        Some("completed") => "✓",
                        Some("failed") => "✗",
                        _ => "…",
                    };
                    out.push_str(&format!("- {mark} {}", line.text));
                    if let Some(o) = &line.output {
                        out.push_str(&format!(" → {o}"));
                    }
                    out.push('\n');
                }
                None => {
                    // Words between steps: their first line.
                    let first = line.text.trim().lines().next().unwrap_or("");
                    out.push_str(&clip_head(first, MAX_LINE_CHARS));
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// Append to a text kept from its beginning (an answer's length at most).
fn push_head(kept: &mut String, more: &str) {
    let room = (MAX_ANSWER_CHARS + 1).saturating_sub(kept.chars().count());
    kept.extend(more.chars().take(room));
}

/// One line, at most `max` characters, the last one then `…`.
fn clip_head(s: &str, max: usize) -> String {
    let one = s.replace('\n', " ");
    if one.chars().count() <= max {
        return one;
    }
    let mut t: String = one.chars().take(max - 1).collect();
    t.push('…');
    t
}

/// The first non-empty line of a tool call's output (its text content, else a text
/// `rawOutput`), clipped.
fn first_output_line(update: &Value) -> Option<String> {
    let from_content = update
        .get("content")
        .and_then(Value::as_array)
        .and_then(|items| {
            items.iter().find_map(|i| {
                (i.get("type").and_then(Value::as_str) == Some("content"))
                    .then(|| i.pointer("/content/text").and_then(Value::as_str))
                    .flatten()
            })
        });
    let text = from_content.or_else(|| update.get("rawOutput").and_then(Value::as_str))?;
    // A code fence is not what the output says.
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("```"))?;
    Some(clip_head(line, MAX_OUTPUT_CHARS))
}

/// The text of a tool call's content blocks, joined by blank lines; `None` if it has none.
fn content_text(content: &Value) -> Option<String> {
    let texts: Vec<&str> = content
        .as_array()?
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("content"))
        .filter_map(|i| i.pointer("/content/text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// An answer as the card shows it: without the agent's boilerplate, cut at a line (else a
/// word) boundary when long, keeping its beginning.
pub fn cut_answer(text: &str, boilerplate: &[Pattern]) -> String {
    let mut text = text.to_owned();
    for p in boilerplate {
        if let Some(re) = p.regex() {
            text = re.replace_all(&text, "").into_owned();
        }
    }
    let text = text.trim();
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = lines
        .iter()
        .take(MAX_ANSWER_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    let mut cut = lines.len() > MAX_ANSWER_LINES;
    if kept.chars().count() > MAX_ANSWER_CHARS {
        let head: String = kept.chars().take(MAX_ANSWER_CHARS).collect();
        // The last line break in the second half, else the last space: never mid-word.
        let at = head
            .rfind('\n')
            .filter(|&i| i >= head.len() / 2)
            .or_else(|| head.rfind(' '))
            .unwrap_or(head.len());
        kept = head[..at].trim_end().to_owned();
        cut = true;
    }
    if cut {
        let shown = kept.lines().count();
        let more = lines.len().saturating_sub(shown);
        if more > 0 {
            let s = if more == 1 { "" } else { "s" };
            kept.push_str(&format!("\n… ({more} more line{s})"));
        } else {
            kept.push_str(" …");
        }
    }
    kept
}

/// The card's content: the answer (if any) and the log.
fn content(log: Option<&Log>, answer: Option<&str>) -> Value {
    let mut text = String::new();
    if let Some(a) = answer.filter(|a| !a.is_empty()) {
        text.push_str(a);
        text.push_str("\n\n");
    }
    if let Some(log) = log.filter(|l| !l.is_empty()) {
        // The child's last words, when they are the answer (the agent's result repeats
        // them), are shown once.
        let repeated = match (answer, log.last_words()) {
            (Some(a), Some(w)) => {
                let w = w.trim();
                a.contains(w) || w.contains(a.trim_end_matches(" …"))
            }
            _ => false,
        };
        // A log that would list nothing (the answer was all) is left out.
        if log.steps > 0 || log.dropped > 0 || log.lines.len() > usize::from(repeated) {
            text.push_str(&log.render(repeated));
        }
    }
    json!([{"type": "content", "content": {"type": "text", "text": text.trim_end()}}])
}

/// Cards that carry the child's answer and log, one per child, and the child's steps shown
/// in the parent's thread.
#[derive(Debug, Default)]
pub struct Transcript {
    logs: HashMap<ChildId, Log>,
    /// What agents append to a child's answer for themselves (the presets' `boilerplate`).
    boilerplate: Vec<Pattern>,
}

impl Transcript {
    /// A renderer that leaves out what these patterns match from the answers it shows.
    pub fn new(boilerplate: Vec<Pattern>) -> Transcript {
        Transcript {
            logs: HashMap::new(),
            boilerplate,
        }
    }

    fn log(&self, child: &Child) -> Option<&Log> {
        self.logs.get(&child.id).filter(|l| !l.is_empty())
    }

    /// The child's answer from its own last words (once it ended).
    fn words_answer(&self, child: &Child) -> Option<String> {
        self.log(child)
            .and_then(Log::last_words)
            .map(|w| cut_answer(w, &self.boilerplate))
    }

    /// A final card's content for a child that ended (or was closed) without the agent's own
    /// result: its last words as the answer, then the log; `note` first (how it ended).
    fn final_content(&self, child: &Child, note: Option<&str>) -> Value {
        let answer = self.words_answer(child);
        let answer = match (note, answer) {
            (Some(n), Some(a)) => Some(format!("{n}\n\n{a}")),
            (Some(n), None) => Some(n.to_owned()),
            (None, a) => a,
        };
        content(self.log(child), answer.as_deref())
    }
}

/// The id of a child's tool call shown in the parent's thread: the spawn's, then the tool's.
fn step_id(child: &Child, tool_id: &str) -> String {
    format!("{}/{tool_id}", child.spawn_id)
}

impl Render for Transcript {
    fn synthesized_card(&self, child: &Child) -> Value {
        synthesized_base(child)
    }

    /// Status and title if given, the answer (once the card is final) and the log as content.
    fn card_update(&self, child: &Child, status: Option<&str>, title: Option<&str>) -> Value {
        let mut upd = card_base(child, status, title);
        let ended = matches!(status, Some("completed" | "failed"));
        if ended {
            let note = (child.state() == ChildState::Cancelled).then_some("Cancelled");
            upd["content"] = self.final_content(child, note);
        } else if let Some(log) = self.log(child) {
            upd["content"] = content(Some(log), None);
        }
        upd
    }

    fn spawn_update(&self, child: &Child, update: &mut Value, _is_new: bool) {
        let ended = matches!(
            update.get("status").and_then(Value::as_str),
            Some("completed" | "failed")
        );
        if ended {
            // The answer once: the agent's own result (without its boilerplate), else the
            // child's last words; then the log. The agent's `rawOutput` repeats its result
            // (clients show both), so the card's content is the one copy.
            let agents = update.get("content").and_then(content_text);
            let answer = agents
                .map(|a| cut_answer(&a, &self.boilerplate))
                .filter(|a| !a.is_empty())
                .or_else(|| self.words_answer(child));
            let others: Vec<Value> = update
                .get("content")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter(|i| i.get("type").and_then(Value::as_str) != Some("content"))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            if answer.is_none() && self.log(child).is_none() {
                return;
            }
            let mut items = match content(self.log(child), answer.as_deref()) {
                Value::Array(items) => items,
                _ => Vec::new(),
            };
            items.extend(others);
            update["content"] = Value::Array(items);
            if let Some(obj) = update.as_object_mut() {
                obj.remove("rawOutput");
            }
        } else if let Some(log) = self.log(child) {
            // The log first, then whatever the agent put in the card (the task).
            let mut items = match content(Some(log), None) {
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

    /// The child's step in its log, and, for one of its tool calls, the same tool call in the
    /// parent's thread, attributed.
    fn recorded(&mut self, child: &Child, update: &Value) -> Vec<Value> {
        self.logs
            .entry(child.id.clone())
            .or_default()
            .observe(update);
        let kind = update.get("sessionUpdate").and_then(Value::as_str);
        if !matches!(kind, Some("tool_call" | "tool_call_update")) {
            return Vec::new();
        }
        let Some(tool_id) = update.get("toolCallId").and_then(Value::as_str) else {
            return Vec::new();
        };
        let mut step = Map::new();
        if let Some(obj) = update.as_object() {
            for (k, v) in obj {
                // The agent's own `_meta` names the child's spawn as its parent; the step is
                // the proxy's.
                if k != "_meta" {
                    step.insert(k.clone(), v.clone());
                }
            }
        }
        step.insert("toolCallId".into(), json!(step_id(child, tool_id)));
        let title = update.get("title").and_then(Value::as_str);
        if kind == Some("tool_call") || title.is_some() {
            let who = if child.title.is_empty() {
                "Subagent"
            } else {
                child.title.as_str()
            };
            let what = title.unwrap_or("tool call");
            step.insert("title".into(), json!(format!("{who}{ATTRIBUTION}{what}")));
        }
        vec![Value::Object(step)]
    }

    /// Fold the child's work into its card, at each step and each new text run.
    fn child_step(&mut self, child: &Child, step: &Step<'_>) -> Option<CardChange> {
        let text_run_starts = step.kind == "agent_message_chunk" && step.new_entry;
        (step.new_tool_call || step.tool_status || text_run_starts)
            .then(|| CardChange::Update(self.card_update(child, None, None)))
    }

    /// A foreground card still open when the turn ends: closed with what the child did (a
    /// client does not wait for a card after the turn). A background child runs on.
    fn turn_ending(&mut self, child: &Child, stop_reason: Option<&str>) -> Vec<Value> {
        if child.is_background() {
            return Vec::new();
        }
        let note = match stop_reason {
            Some("cancelled") => "Cancelled with the turn".to_owned(),
            Some(r) => format!("Ended with the turn ({r}) before the subagent reported"),
            None => "Ended with the turn before the subagent reported".to_owned(),
        };
        let mut upd = card_base(child, Some("failed"), None);
        upd["content"] = self.final_content(child, Some(&note));
        vec![upd]
    }

    /// The child's steps again, from its recorded thread, with its log rebuilt from it; the
    /// card's end after them when the agent's replay brings none.
    fn replayed(&mut self, child: &Child, closes: bool) -> Vec<Value> {
        self.logs.remove(&child.id);
        let mut shown = Vec::new();
        for (_, line) in child.thread.held() {
            if let Ok(update) = serde_json::from_str::<Value>(line) {
                shown.extend(self.recorded(child, &update));
            }
        }
        if closes && child.card_is_final() {
            shown.push(self.card_update(child, Some(child.state().card_status()), None));
        }
        shown
    }

    /// The card opens, its steps follow, and it ends with the answer and the log: what a
    /// client saw live, from the store.
    fn unreplayed(&mut self, child: &Child) -> Vec<Value> {
        if child.thread.is_empty() {
            return Vec::new();
        }
        let mut card = self.synthesized_card(child);
        if child.card_is_final() {
            // Opened as live; the end comes after the steps.
            card["status"] = json!("in_progress");
        }
        let mut shown = vec![card];
        shown.extend(self.replayed(child, true));
        shown
    }

    fn forget(&mut self, child_id: &ChildId) {
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
    fn log_is_bounded_and_tracks_status_and_output() {
        let mut log = Log::default();
        log.observe(&json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"Find","status":"pending"}));
        log.observe(&json!({"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed",
            "content":[{"type":"content","content":{"type":"text","text":"\n/p/b.txt\n/p/a.txt"}}]}));
        log.observe(&json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Found "}}));
        log.observe(
            &json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"two."}}),
        );
        assert_eq!(
            log.render(false),
            "Subagent activity (1 step):\n- ✓ Find → /p/b.txt\nFound two.\n"
        );
        assert_eq!(log.last_words(), Some("Found two."));
        assert_eq!(
            log.render(true),
            "Subagent activity (1 step):\n- ✓ Find → /p/b.txt\n"
        );
        for n in 0..100 {
            log.observe(&json!({"sessionUpdate":"tool_call","toolCallId":format!("t{n}"),"title":"x".repeat(1000),
                "rawOutput": "y".repeat(1000)}));
        }
        let text = log.render(false);
        assert!(text.contains("earlier"));
        assert!(text.len() < (MAX_LINES + 3) * ((MAX_LINE_CHARS + MAX_OUTPUT_CHARS) * 4 + 8));
    }

    #[test]
    fn a_long_answer_keeps_its_beginning_and_loses_the_agents_boilerplate() {
        let footer = vec![Pattern::parse(
            r"(?s)\n*agentId: [0-9a-zA-Z_-]+ \(use SendMessage[^\n]*\).*\z",
            "t",
        )
        .expect("pattern")];
        let short = "SUB-ANSWER alpha: a.txt, b.txt.\n\nagentId: a9b8 (use SendMessage with to: 'a9b8' to continue this agent)\n<usage>total_tokens: 22</usage>";
        assert_eq!(
            cut_answer(short, &footer),
            "SUB-ANSWER alpha: a.txt, b.txt."
        );
        let long: String = (1..=60)
            .map(|i| format!("line {i} of the answer\n"))
            .collect();
        let cut = cut_answer(&format!("{long}{short}"), &footer);
        assert!(cut.starts_with("line 1 of the answer\nline 2"));
        assert!(
            cut.ends_with("line 40 of the answer\n… (21 more lines)"),
            "{cut}"
        );
        // One long paragraph: cut between words, never inside one.
        let words = "word ".repeat(2000);
        let cut = cut_answer(&words, &[]);
        assert!(cut.ends_with("word …"), "{}", &cut[cut.len() - 20..]);
        assert!(cut.chars().count() <= MAX_ANSWER_CHARS + 2);
    }
}
