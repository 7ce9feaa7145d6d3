//! A child's work the agent folds into text (DeepSeek Harness's Markdown transcript in the
//! spawn card, AgentPool's box beside it), turned back into the child thread's updates.
//!
//! Each version of the text is compared with the one before and only what changed becomes
//! updates: prose that grew adds a chunk, a tool line a tool call, a tool that finished an
//! update of it. An agent that re-sends the whole transcript on every step (quadratic bytes
//! on the wire) so costs the child thread, and the store, the transcript's size once.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::grammar::{Change, Entry, EntryKind, Grammar, ParsedTranscript, Tail, Touched};
use crate::subagents::preset::spec::EntryStatus;

/// One child's folded transcript as read so far.
#[derive(Debug, Clone, Default)]
pub struct Fold {
    /// The text as last seen, while it only grows (to find what a new version appended).
    text: String,
    seen: ParsedTranscript,
    tail: Tail,
    /// Entries of the runs before this one (a box that opened again), so ids never repeat.
    offset: usize,
    /// The child's synthesized tool call ids start with this.
    base: String,
    /// Counts the changes of `text`: a caller that remembers where a version of it stands in
    /// the agent's bytes knows by this that no other version came between.
    version: u64,
}

impl Fold {
    /// A fold whose tool calls are named `<base>-<n>`.
    pub fn new(base: &str) -> Fold {
        Fold {
            base: base.to_owned(),
            ..Fold::default()
        }
    }

    /// The transcript starts over (a box opened again): new entries follow the earlier ones.
    pub fn restart(&mut self) {
        self.offset += self.seen.omitted + self.seen.entries.len();
        self.seen = ParsedTranscript::default();
        self.text.clear();
        self.tail = Tail::default();
        self.version += 1;
    }

    /// The version of the text last seen (see [`Fold::replaced`]); changes with every new one.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// A new version of the whole text. `growing`: versions usually extend the one before
    /// (then only the appended piece is read, see [`Grammar::extend`]); otherwise, or when a
    /// version does not extend the last, it is read whole.
    pub fn replaced(&mut self, g: &Grammar, text: &str, growing: bool) -> Vec<Value> {
        if growing && text.len() == self.text.len() && text == self.text {
            return Vec::new();
        }
        if growing && text.starts_with(self.text.as_str()) {
            let piece = &text[self.text.len()..];
            self.text.push_str(piece);
            self.version += 1;
            return self.extend(g, piece);
        }
        let next = g.parse(text);
        self.tail = Tail::after(text, &next);
        if growing {
            text.clone_into(&mut self.text);
            self.version += 1;
        }
        self.advance(next)
    }

    /// The text last seen ([`Fold::replaced`], growing) grew by `piece`: the same as
    /// `replaced` with the whole new text, without it.
    pub fn grew(&mut self, g: &Grammar, piece: &str) -> Vec<Value> {
        if piece.is_empty() {
            return Vec::new();
        }
        self.text.push_str(piece);
        self.version += 1;
        self.extend(g, piece)
    }

    /// A version that carries only what was added since the last.
    pub fn appended(&mut self, g: &Grammar, piece: &str) -> Vec<Value> {
        self.extend(g, piece)
    }

    /// `piece` read on from where the last version left off, in place: what changed is told
    /// from the entries the read touched, not from a copy of the whole transcript.
    fn extend(&mut self, g: &Grammar, piece: &str) -> Vec<Value> {
        let omitted = self.seen.omitted;
        let mut touched = Touched::of(&self.seen);
        g.extend_noting(&mut self.seen, &mut self.tail, piece, &mut touched);
        if self.seen.omitted != omitted {
            // An `omitted` line in a growing text (rare): compared whole, as before.
            let prev = touched.undo(&self.seen, omitted);
            let next = std::mem::replace(&mut self.seen, prev);
            return self.advance(next);
        }
        let prev_end = omitted + touched.len_before();
        let changes = self.seen.changes_noted(&touched);
        updates(&self.seen, prev_end, &changes, &self.base, self.offset)
    }

    /// The text of the child's last entry, if it is prose.
    pub fn last_text(&self) -> Option<&str> {
        self.seen
            .entries
            .iter()
            .rev()
            .find(|e| e.depth == 0)
            .filter(|e| e.kind == EntryKind::Text)
            .map(|e| e.text.as_str())
    }

    /// How the child ended, if the transcript says: its last top-level `end` entry.
    pub fn end(&self) -> Option<&Entry> {
        self.seen
            .entries
            .iter()
            .rev()
            .find(|e| e.depth == 0)
            .filter(|e| e.kind == EntryKind::End)
    }

    /// How the child ended, as one line (`✗ Subagent aborted`), if the transcript says.
    pub fn end_line(&self) -> Option<String> {
        self.end().map(end_line)
    }

    fn advance(&mut self, next: ParsedTranscript) -> Vec<Value> {
        let prev_end = self.seen.omitted + self.seen.entries.len();
        let changes = next.changes_since(&self.seen);
        let out = updates(&next, prev_end, &changes, &self.base, self.offset);
        self.seen = next;
        out
    }
}

/// The child thread's updates for `changes` (up to `next`, whose entries before `prev_end`
/// the last version had), tool calls named `<base>-<offset + index>`.
fn updates(
    next: &ParsedTranscript,
    prev_end: usize,
    changes: &[Change<'_>],
    base: &str,
    offset: usize,
) -> Vec<Value> {
    let id = |index: usize| format!("{base}-{}", offset + index);
    let mut out = Vec::new();
    // Tool entries whose nested entries changed: their content is written again.
    let mut owners = BTreeSet::new();
    for change in changes {
        let (index, entry, old) = match change {
            Change::Added { index, entry } => (*index, *entry, None),
            Change::Changed { index, old, new } => (*index, *new, Some(*old)),
        };
        if entry.depth > 0 {
            if let Some(owner) = owner_of(next, index) {
                owners.insert(owner);
            }
            continue;
        }
        match entry.kind {
            EntryKind::Text => {
                let text = match old {
                    None => {
                        // Two prose entries in a row would run together in one message.
                        let after_text = index
                            .checked_sub(next.omitted + 1)
                            .and_then(|j| next.entries.get(j))
                            .is_some_and(|p| p.depth == 0 && p.kind == EntryKind::Text);
                        if after_text {
                            format!("\n\n{}", entry.text)
                        } else {
                            entry.text.clone()
                        }
                    }
                    // Prose that grew at the end of the thread: the new part. (A client
                    // cannot take back what it was sent, so other edits are left out.)
                    Some(o) if index + 1 == prev_end && entry.text.starts_with(&o.text) => {
                        entry.text[o.text.len()..].to_owned()
                    }
                    Some(_) => String::new(),
                };
                if !text.is_empty() {
                    out.push(json!({"sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": text}}));
                }
            }
            EntryKind::Tool => {
                let id = id(index);
                match old {
                    None => {
                        let mut call = json!({"sessionUpdate": "tool_call", "toolCallId": id,
                            "title": entry.text, "kind": "other",
                            "status": status_str(entry.status)});
                        if let Some(o) = &entry.output {
                            call["content"] = text_content(o);
                        }
                        out.push(call);
                    }
                    Some(o) => {
                        let mut upd =
                            json!({"sessionUpdate": "tool_call_update", "toolCallId": id});
                        if o.status != entry.status {
                            upd["status"] = json!(status_str(entry.status));
                        }
                        if o.text != entry.text {
                            upd["title"] = json!(entry.text);
                        }
                        if o.output != entry.output {
                            if let Some(text) = &entry.output {
                                upd["content"] = text_content(text);
                            }
                        }
                        if upd.as_object().is_some_and(|m| m.len() > 2) {
                            out.push(upd);
                        }
                    }
                }
            }
            EntryKind::End => {
                if old.is_none() && entry.status == Some(EntryStatus::Failed) {
                    out.push(json!({"sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": end_line(entry)}}));
                }
            }
        }
    }
    for owner in owners {
        let Some(block) = nested_block(next, owner) else {
            continue;
        };
        out.push(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id(owner),
            "content": text_content(&block)}),
        );
    }
    out
}

/// The top-level tool entry that entry `index` (absolute) is nested under.
fn owner_of(t: &ParsedTranscript, index: usize) -> Option<usize> {
    let local = index.checked_sub(t.omitted)?;
    let owner = t.entries[..local].iter().rposition(|e| e.depth == 0)?;
    (t.entries[owner].kind == EntryKind::Tool).then_some(owner + t.omitted)
}

/// The entries nested under the tool entry `owner` (absolute), one line each.
fn nested_block(t: &ParsedTranscript, owner: usize) -> Option<String> {
    let local = owner.checked_sub(t.omitted)?;
    let lines: Vec<String> = t
        .entries
        .get(local + 1..)?
        .iter()
        .take_while(|e| e.depth > 0)
        .map(|e| {
            let indent = "  ".repeat(e.depth - 1);
            match e.kind {
                EntryKind::Text => format!("{indent}· {}", e.text),
                EntryKind::Tool => format!("{indent}{} {}", marker(e.status), e.text),
                EntryKind::End => format!("{indent}{}", end_line(e)),
            }
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

fn marker(status: Option<EntryStatus>) -> &'static str {
    match status {
        Some(EntryStatus::Completed) => "✓",
        Some(EntryStatus::Failed) => "✗",
        Some(EntryStatus::InProgress) | None => "▸",
    }
}

/// An end entry as a line: its own text when the pattern gave none (the whole line).
fn end_line(e: &Entry) -> String {
    let text = e.text.trim_start_matches("- ").trim();
    if text.starts_with(['✓', '✗']) {
        return text.to_owned();
    }
    let ok = e.status != Some(EntryStatus::Failed);
    let sign = if ok { "✓" } else { "✗" };
    if text.to_ascii_lowercase().starts_with("subagent") {
        format!("{sign} {text}")
    } else {
        format!("{sign} Subagent {text}")
    }
}

fn status_str(status: Option<EntryStatus>) -> &'static str {
    match status {
        Some(EntryStatus::Completed) => "completed",
        Some(EntryStatus::Failed) => "failed",
        Some(EntryStatus::InProgress) | None => "in_progress",
    }
}

fn text_content(text: &str) -> Value {
    json!([{"type": "content", "content": {"type": "text", "text": text}}])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::preset::spec::TranscriptSpec;

    fn grammar(toml_text: &str) -> Grammar {
        let spec: TranscriptSpec = toml::from_str(toml_text).expect("grammar parses");
        Grammar::compile(&spec, "t").expect("grammar compiles")
    }

    const BOX: &str = r#"
        on = "sibling"
        from = ["/content"]
        [[line]]
        pattern = '^🔧 Using tool: (?P<name>.+)$'
        kind = "tool"
        status = "in_progress"
        [[line]]
        pattern = '^✅ (?P<name>[^:]+): (?P<text>.*)$'
        kind = "tool_result"
        status = "completed"
    "#;

    const MARKDOWN: &str = r#"
        on = "spawn"
        from = [{ at = "/content", block = "first" }]
        indent = "  "
        [[line]]
        pattern = '^Subagent `(?P<provider>[^`]*)` · session `(?P<session>[^`]*)`$'
        kind = "header"
        [[line]]
        pattern = '^- … (?P<count>\d+) earlier entries omitted$'
        kind = "omitted"
        [[line]]
        pattern = '^- ✓ Subagent completed$'
        kind = "end"
        status = "completed"
        [[line]]
        pattern = '^- ✗ Subagent (?P<text>[^`]+)$'
        kind = "end"
        status = "failed"
        [[line]]
        pattern = '^- ▸ (?P<text>.*)$'
        kind = "tool"
        status = "in_progress"
        [[line]]
        pattern = '^- ✓ (?P<text>.*)$'
        kind = "tool"
        status = "completed"
        [[line]]
        pattern = '^- · (?P<text>.*)$'
        kind = "text"
    "#;

    fn short(u: &Value) -> String {
        let kind = u["sessionUpdate"].as_str().unwrap_or("");
        let text = |v: &Value| v.as_str().map(str::to_owned);
        match kind {
            "agent_message_chunk" => {
                format!("text {:?}", u["content"]["text"].as_str().unwrap_or(""))
            }
            _ => {
                let parts = [
                    kind.to_owned(),
                    text(&u["toolCallId"]).unwrap_or_default(),
                    text(&u["status"]).unwrap_or_default(),
                    text(&u["title"]).unwrap_or_default(),
                    u.pointer("/content/0/content/text")
                        .and_then(Value::as_str)
                        .map(|t| format!("{t:?}"))
                        .unwrap_or_default(),
                ];
                parts
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        }
    }

    #[test]
    fn a_re_sent_box_becomes_chunks_and_tool_calls_once() {
        let g = grammar(BOX);
        let mut f = Fold::new("b");
        let mut all = Vec::new();
        let mut text = String::new();
        for piece in [
            "Reading ",
            "a.txt.",
            "\n🔧 Using tool: read\n",
            "✅ read: hello\nfrom a\n",
            "The ",
            "file says hello",
        ] {
            text.push_str(piece);
            all.extend(f.replaced(&g, &text, true).iter().map(short));
        }
        // The same version again adds nothing.
        assert!(f.replaced(&g, &text, true).is_empty());
        assert_eq!(
            all,
            [
                "text \"Reading \"",
                "text \"a.txt.\"",
                "tool_call b-1 in_progress read",
                "tool_call_update b-1 completed \"hello\\nfrom a\"",
                "text \"The \"",
                "text \"file says hello\""
            ]
        );
        assert_eq!(f.last_text(), Some("The file says hello"));
        // The box opens again: its entries come after the first run's.
        f.restart();
        let next: Vec<String> = f
            .replaced(&g, "🔧 Using tool: grep\n", true)
            .iter()
            .map(short)
            .collect();
        assert_eq!(next, ["tool_call b-3 in_progress grep"]);
    }

    #[test]
    fn reading_in_place_tells_the_same_changes_as_a_copy() {
        // Pieces that grow prose mid-line, open and finish tools (a result finishing an
        // earlier call), continue a result's output over lines, and run prose after it.
        let pieces = [
            "Reading ",
            "a.txt.",
            "\n🔧 Using tool: read\n",
            "🔧 Using tool: grep\n",
            "✅ read: hello\nfrom a\n",
            "more output\n",
            "The ",
            "file says hello",
            "\n\nand more.",
            "\n✅ grep: found\n",
            "✅ list: none\n",
            "Done.",
        ];
        let g = grammar(BOX);
        for start in 0..pieces.len() {
            let mut fold = Fold::new("b");
            let (mut seen, mut tail) = (ParsedTranscript::default(), Tail::default());
            for (n, piece) in pieces[start..].iter().chain(&pieces[..start]).enumerate() {
                let got = if n % 2 == 0 {
                    fold.grew(&g, piece)
                } else {
                    let whole = format!("{}{piece}", fold.text);
                    fold.replaced(&g, &whole, true)
                };
                // The way it was read before: a copy of the whole transcript, read on and
                // compared entry by entry.
                let mut next = seen.clone();
                g.extend(&mut next, &mut tail, piece);
                let prev_end = seen.omitted + seen.entries.len();
                let want = updates(&next, prev_end, &next.changes_since(&seen), "b", 0);
                assert_eq!(got, want, "piece {n} ({piece:?}) from {start}");
                assert_eq!(fold.seen, next);
                seen = next;
            }
        }
    }

    #[test]
    fn a_markdown_transcript_whose_entries_flip_nest_and_fall_off() {
        let g = grammar(MARKDOWN);
        let mut f = Fold::new("c");
        let mut steps =
            |text: &str| -> Vec<String> { f.replaced(&g, text, false).iter().map(short).collect() };
        let h = "Subagent `spawn` · session `child`\n";
        assert!(steps(h).is_empty());
        assert_eq!(
            steps(&format!("{h}- ▸ Grep auth")),
            ["tool_call c-0 in_progress Grep auth"]
        );
        assert_eq!(
            steps(&format!("{h}- ✓ Found 2 files\n- · Auth is here.")),
            [
                "tool_call_update c-0 completed Found 2 files",
                "text \"Auth is here.\""
            ]
        );
        assert_eq!(
            steps(&format!(
                "{h}- ✓ Found 2 files\n- · Auth is here.\n- ▸ Subagent `spawn`: Tests\n  - ▸ Bash cargo test"
            )),
            [
                "tool_call c-2 in_progress Subagent `spawn`: Tests",
                "tool_call_update c-2 \"▸ Bash cargo test\""
            ]
        );
        assert_eq!(
            steps(&format!(
                "{h}- … 2 earlier entries omitted\n- ✓ Subagent `spawn`: Tests\n  - ✓ Bash cargo test\n  - ✓ Subagent completed\n- · Green.\n- ✗ Subagent aborted"
            )),
            [
                "tool_call_update c-2 completed",
                "text \"Green.\"",
                "text \"✗ Subagent aborted\"",
                "tool_call_update c-2 \"✓ Bash cargo test\\n✓ Subagent completed\""
            ]
        );
        assert_eq!(f.end().map(|e| e.status), Some(Some(EntryStatus::Failed)));
        // Two prose entries in a row stay apart (one message in the client otherwise).
        let mut f = Fold::new("d");
        let got: Vec<String> = f
            .replaced(&g, &format!("{h}- · Green.\n- · Done."), false)
            .iter()
            .map(short)
            .collect();
        assert_eq!(got, ["text \"Green.\"", "text \"\\n\\nDone.\""]);
    }
}
