//! A child's work folded into text by the agent (DeepSeek Harness's Markdown transcript,
//! AgentPool's tool box), turned back into entries by a line grammar from a preset: each line,
//! its nesting indent removed, is matched against the preset's patterns in order.

use crate::subagents::preset::spec::{EntryStatus, LineKind, OtherLines, TranscriptSpec};
use crate::subagents::preset::vocab::{Pattern, PresetError, Source};

/// One line pattern, compiled.
#[derive(Debug, Clone)]
struct Line {
    re: Pattern,
    kind: LineKind,
    status: Option<EntryStatus>,
}

/// A preset's transcript grammar.
#[derive(Debug, Clone)]
pub struct Grammar {
    /// Which call carries the transcript: the spawn card, or a sibling call.
    pub on: crate::subagents::preset::spec::TranscriptOn,
    /// Where the transcript text is in that call's update.
    pub from: Vec<Source>,
    indent: String,
    lines: Vec<Line>,
    other: OtherLines,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// The child's prose.
    Text,
    /// A tool call of the child.
    Tool,
    /// The child (or, nested, a grandchild) ended.
    End,
}

/// One entry of a folded transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// Nesting level: 0 for the direct child's own entries.
    pub depth: usize,
    pub text: String,
    /// The tool's name, when the line names it apart from the title.
    pub name: Option<String>,
    pub status: Option<EntryStatus>,
    /// A tool's output, from a result line.
    pub output: Option<String>,
}

/// A transcript taken apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedTranscript {
    /// The header's named groups (`provider`, `session`, ...).
    pub header: Vec<(String, String)>,
    /// Entries that fell off the front before the first one here.
    pub omitted: usize,
    pub entries: Vec<Entry>,
}

/// How an entry changed between two versions of a transcript. `index` counts from the
/// first entry ever (omitted ones included), so it stays put when the front falls off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change<'a> {
    Added {
        index: usize,
        entry: &'a Entry,
    },
    Changed {
        index: usize,
        old: &'a Entry,
        new: &'a Entry,
    },
}

impl Grammar {
    pub fn compile(spec: &TranscriptSpec, key: &str) -> Result<Grammar, PresetError> {
        if spec.from.is_empty() {
            return Err(PresetError::new(
                format!("{key}.from"),
                "is empty: say where the transcript text is",
            ));
        }
        let from = Source::compile_all(&spec.from, &format!("{key}.from"))?;
        let lines = spec
            .line
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let k = format!("{key}.line[{i}]");
                let re = Pattern::parse(&l.pattern, &format!("{k}.pattern"))?;
                let needs_status = matches!(
                    l.kind,
                    LineKind::Tool | LineKind::ToolResult | LineKind::End
                );
                if needs_status && l.status.is_none() {
                    return Err(PresetError::new(
                        format!("{k}.status"),
                        "is required for `tool`, `tool_result` and `end` lines",
                    ));
                }
                let names_count = ["(?P<count>", "(?<count>"]
                    .iter()
                    .any(|g| l.pattern.contains(g));
                if l.kind == LineKind::Omitted && !names_count {
                    return Err(PresetError::new(
                        format!("{k}.pattern"),
                        "an `omitted` line needs a `(?P<count>...)` group",
                    ));
                }
                Ok(Line {
                    re,
                    kind: l.kind,
                    status: l.status,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Grammar {
            on: spec.on,
            from,
            indent: spec.indent.clone().unwrap_or_default(),
            lines,
            other: spec.other,
        })
    }

    pub fn patterns<'a>(&'a self, out: &mut Vec<&'a Pattern>) {
        self.from.iter().for_each(|s| s.patterns(out));
        out.extend(self.lines.iter().map(|l| &l.re));
    }

    /// Whether a text is a transcript of this grammar: with a `header` line in the grammar,
    /// only a text whose first line is one (a settled card replayed with only the answer
    /// is not).
    pub fn is_transcript(&self, text: &str) -> bool {
        let mut headers = self
            .lines
            .iter()
            .filter(|l| l.kind == LineKind::Header)
            .peekable();
        if headers.peek().is_none() {
            return true;
        }
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        headers.any(|l| l.re.regex().is_some_and(|re| re.is_match(first)))
    }

    /// Take a transcript text apart.
    pub fn parse(&self, text: &str) -> ParsedTranscript {
        let mut t = ParsedTranscript::default();
        // Whether the last entry is prose from unmatched lines (more such lines join it).
        let mut open_text = false;
        for raw in text.lines() {
            let (depth, line) = self.unindent(raw);
            if line.trim().is_empty() {
                continue;
            }
            let Some((l, caps)) = self.matching(line) else {
                match self.other {
                    OtherLines::Ignore => {}
                    OtherLines::Text => {
                        match t.entries.last_mut() {
                            Some(e) if open_text && e.depth == depth => {
                                e.text.push('\n');
                                e.text.push_str(line);
                            }
                            _ => t.entries.push(entry(EntryKind::Text, depth, line, None)),
                        }
                        open_text = true;
                    }
                }
                continue;
            };
            open_text = false;
            apply(&mut t, l, &caps, depth, line, &mut Touched::off());
        }
        t
    }

    /// Read one more piece of a transcript that grows by appended text (AgentPool's box: every
    /// version adds one event's text to the one before). A piece may end inside a line, which
    /// the next piece continues as prose. Unmatched lines after a `tool_result` line in the same
    /// piece are that result's output (a tool's result can span lines; the child's own prose
    /// comes in later pieces). Returns nothing: `t` holds the result.
    pub fn extend(&self, t: &mut ParsedTranscript, tail: &mut Tail, piece: &str) {
        self.extend_noting(t, tail, piece, &mut Touched::off());
    }

    /// [`Grammar::extend`], noting in `touched` each entry it changes as it was before, so
    /// the caller can tell what changed without a copy of the whole transcript.
    pub fn extend_noting(
        &self,
        t: &mut ParsedTranscript,
        tail: &mut Tail,
        piece: &str,
        touched: &mut Touched,
    ) {
        // The tool entry whose output this piece's unmatched lines continue.
        let mut output: Option<usize> = None;
        let mut rest = piece;
        while !rest.is_empty() {
            let (raw, ended) = match rest.find('\n') {
                Some(i) => {
                    let l = &rest[..i];
                    rest = &rest[i + 1..];
                    (l, true)
                }
                None => (std::mem::take(&mut rest), false),
            };
            if tail.mid_line {
                // The unfinished line goes on.
                touched.note_last(t);
                if let Some(e) = t.entries.last_mut().filter(|e| e.kind == EntryKind::Text) {
                    e.text.push_str(raw);
                }
                tail.mid_line = !ended;
                tail.breaks = usize::from(ended);
                continue;
            }
            let (depth, line) = self.unindent(raw);
            let matched = if line.trim().is_empty() {
                None
            } else {
                self.matching(line)
            };
            let Some((l, caps)) = matched else {
                if let Some(i) = output {
                    touched.note(t, i);
                    if let Some(o) = t
                        .entries
                        .get_mut(i)
                        .map(|e| e.output.get_or_insert_with(String::new))
                    {
                        o.push('\n');
                        o.push_str(raw);
                    }
                    continue;
                }
                if line.trim().is_empty() {
                    if tail.open_text && ended {
                        tail.breaks += 1;
                    }
                    continue;
                }
                if self.other == OtherLines::Ignore {
                    tail.open_text = false;
                    continue;
                }
                if tail.open_text {
                    touched.note_last(t);
                }
                match t.entries.last_mut() {
                    Some(e) if tail.open_text && e.depth == depth => {
                        for _ in 0..tail.breaks.max(1) {
                            e.text.push('\n');
                        }
                        e.text.push_str(line);
                    }
                    _ => t.entries.push(entry(EntryKind::Text, depth, line, None)),
                }
                tail.open_text = true;
                tail.mid_line = !ended;
                tail.breaks = usize::from(ended);
                continue;
            };
            *tail = Tail::default();
            output = apply(t, l, &caps, depth, line, touched);
        }
    }

    fn matching<'l>(&self, line: &'l str) -> Option<(&Line, regex::Captures<'l>)> {
        self.lines
            .iter()
            .find_map(|l| l.re.regex()?.captures(line).map(|c| (l, c)))
    }

    fn unindent<'l>(&self, mut line: &'l str) -> (usize, &'l str) {
        let mut depth = 0;
        if !self.indent.is_empty() {
            while let Some(rest) = line.strip_prefix(self.indent.as_str()) {
                depth += 1;
                line = rest;
            }
        }
        (depth, line)
    }
}

/// A line that matched `l`, applied to the transcript; returns the tool entry a
/// `tool_result` line ended (or made).
fn apply(
    t: &mut ParsedTranscript,
    l: &Line,
    caps: &regex::Captures<'_>,
    depth: usize,
    line: &str,
    touched: &mut Touched,
) -> Option<usize> {
    let group = |n: &str| caps.name(n).map(|m| m.as_str().to_owned());
    let text = group("text")
        .or_else(|| group("name"))
        .unwrap_or_else(|| line.to_owned());
    match l.kind {
        LineKind::Header => {
            if let Some(re) = l.re.regex() {
                t.header.extend(
                    re.capture_names()
                        .flatten()
                        .filter_map(|n| Some((n.to_owned(), group(n)?))),
                );
            }
        }
        LineKind::Ignore => {}
        LineKind::Omitted => {
            t.omitted += group("count").and_then(|c| c.parse().ok()).unwrap_or(0);
        }
        LineKind::Text => t.entries.push(entry(EntryKind::Text, depth, &text, None)),
        LineKind::Tool => {
            let mut e = entry(EntryKind::Tool, depth, &text, l.status);
            e.name = group("name");
            t.entries.push(e);
        }
        LineKind::End => t
            .entries
            .push(entry(EntryKind::End, depth, &text, l.status)),
        LineKind::ToolResult => {
            let name = group("name");
            let open = t.entries.iter().rposition(|e| {
                e.kind == EntryKind::Tool
                    && e.depth == depth
                    && e.status == Some(EntryStatus::InProgress)
                    && name
                        .as_ref()
                        .is_none_or(|n| e.name.as_ref() == Some(n) || e.text == *n)
            });
            if let Some(i) = open {
                touched.note(t, i);
            }
            match open.and_then(|i| Some((i, t.entries.get_mut(i)?))) {
                Some((i, e)) => {
                    e.status = l.status;
                    e.output = group("text");
                    return Some(i);
                }
                None => {
                    let title = name.clone().unwrap_or_else(|| text.clone());
                    let mut e = entry(EntryKind::Tool, depth, &title, l.status);
                    e.name = name;
                    e.output = group("text");
                    t.entries.push(e);
                    return Some(t.entries.len() - 1);
                }
            }
        }
    }
    None
}

/// The entries a read in place ([`Grammar::extend_noting`]) changed, as they were before it.
#[derive(Debug, Default)]
pub struct Touched {
    /// The number of entries before the read: later ones are new, not changed.
    len: usize,
    before: Vec<(usize, Entry)>,
    on: bool,
}

impl Touched {
    /// Noting the entries of `t` as it is now.
    pub fn of(t: &ParsedTranscript) -> Touched {
        Touched {
            len: t.entries.len(),
            before: Vec::new(),
            on: true,
        }
    }

    /// Noting nothing (a read whose caller keeps the version before).
    fn off() -> Touched {
        Touched::default()
    }

    /// Entry `i` is about to change: keep it as it was, the first time.
    fn note(&mut self, t: &ParsedTranscript, i: usize) {
        if !self.on || i >= self.len || self.before.iter().any(|(j, _)| *j == i) {
            return;
        }
        if let Some(e) = t.entries.get(i) {
            self.before.push((i, e.clone()));
        }
    }

    fn note_last(&mut self, t: &ParsedTranscript) {
        if let Some(i) = t.entries.len().checked_sub(1) {
            self.note(t, i);
        }
    }

    /// The number of entries before the read.
    pub fn len_before(&self) -> usize {
        self.len
    }

    /// The transcript as it was before the read, given the one after it (and its `omitted`
    /// before, which a read can change).
    pub fn undo(&self, after: &ParsedTranscript, omitted: usize) -> ParsedTranscript {
        let mut prev = after.clone();
        prev.entries.truncate(self.len);
        for (i, e) in &self.before {
            if let Some(slot) = prev.entries.get_mut(*i) {
                slot.clone_from(e);
            }
        }
        prev.omitted = omitted;
        prev
    }
}

/// Where a transcript read piece by piece ([`Grammar::extend`]) stands between pieces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The last line is unfinished: the next piece continues it.
    mid_line: bool,
    /// Line breaks after the open prose entry, kept if more prose joins it.
    breaks: usize,
    /// The last entry is prose that more unmatched lines join.
    open_text: bool,
}

impl Tail {
    /// Where a whole text, taken apart by [`Grammar::parse`], leaves off.
    pub fn after(text: &str, t: &ParsedTranscript) -> Tail {
        let open_text = t.entries.last().is_some_and(|e| e.kind == EntryKind::Text)
            && text.lines().last().is_some_and(|l| !l.trim().is_empty());
        Tail {
            mid_line: open_text && !text.ends_with('\n'),
            breaks: usize::from(open_text && text.ends_with('\n')),
            open_text,
        }
    }
}

fn entry(kind: EntryKind, depth: usize, text: &str, status: Option<EntryStatus>) -> Entry {
    Entry {
        kind,
        depth,
        text: text.to_owned(),
        name: None,
        status,
        output: None,
    }
}

impl ParsedTranscript {
    /// What a read in place changed (the same as [`ParsedTranscript::changes_since`] the
    /// version before it), from the entries it noted: work in proportion to the read, not
    /// to the transcript. The read must have left `omitted` as it was.
    pub fn changes_noted<'a>(&'a self, touched: &'a Touched) -> Vec<Change<'a>> {
        let mut changes: Vec<Change<'a>> = touched
            .before
            .iter()
            .filter_map(|(i, old)| {
                let new = self.entries.get(*i)?;
                (old != new).then_some(Change::Changed {
                    index: self.omitted + i,
                    old,
                    new,
                })
            })
            .collect();
        changes.sort_by_key(|c| match c {
            Change::Added { index, .. } | Change::Changed { index, .. } => *index,
        });
        let len = touched.len.min(self.entries.len());
        changes.extend(
            self.entries[len..]
                .iter()
                .enumerate()
                .map(|(k, entry)| Change::Added {
                    index: self.omitted + len + k,
                    entry,
                }),
        );
        changes
    }

    /// What changed from `prev` to `self`: entries that appeared, and entries whose status or
    /// text changed (a tool finishing, prose growing). Entries that fell off the front are
    /// not reported.
    pub fn changes_since<'a>(&'a self, prev: &'a ParsedTranscript) -> Vec<Change<'a>> {
        let prev_end = prev.omitted + prev.entries.len();
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let index = self.omitted + i;
                if index >= prev_end {
                    return Some(Change::Added { index, entry: e });
                }
                let old = index
                    .checked_sub(prev.omitted)
                    .and_then(|j| prev.entries.get(j))?;
                (old != e).then_some(Change::Changed { index, old, new: e })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grammar(toml_text: &str) -> Grammar {
        let spec: TranscriptSpec = toml::from_str(toml_text).expect("grammar parses");
        Grammar::compile(&spec, "t").expect("grammar compiles")
    }

    const DSH: &str = r#"
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
        pattern = '^- ✗ (?P<text>.*)$'
        kind = "tool"
        status = "failed"
        [[line]]
        pattern = '^- · (?P<text>.*)$'
        kind = "text"
    "#;

    #[test]
    fn a_folded_markdown_transcript_with_nesting_and_an_omitted_front() {
        let g = grammar(DSH);
        let t = g.parse(
            "Subagent `spawn` · session `child-1`\n\
             - … 3 earlier entries omitted\n\
             - ✓ Found 2 files\n\
             - ✓ Subagent `spawn`: Run the tests\n\
             \x20\x20- ▸ Bash cargo test\n\
             \x20\x20- · All 12 tests pass.\n\
             \x20\x20- ✓ Subagent completed\n\
             - · The build is green.\n\
             - ✗ Subagent aborted\n",
        );
        assert_eq!(
            t.header,
            [
                ("provider".to_owned(), "spawn".to_owned()),
                ("session".to_owned(), "child-1".to_owned())
            ]
        );
        assert_eq!(t.omitted, 3);
        assert!(g.is_transcript("Subagent `spawn` · session `c`\n- ▸ Grep"));
        assert!(!g.is_transcript("Auth is handled in src/auth.rs."));
        let got: Vec<(EntryKind, usize, &str, Option<EntryStatus>)> = t
            .entries
            .iter()
            .map(|e| (e.kind, e.depth, e.text.as_str(), e.status))
            .collect();
        use EntryKind::*;
        use EntryStatus::*;
        assert_eq!(
            got,
            [
                (Tool, 0, "Found 2 files", Some(Completed)),
                (Tool, 0, "Subagent `spawn`: Run the tests", Some(Completed)),
                (Tool, 1, "Bash cargo test", Some(InProgress)),
                (Text, 1, "All 12 tests pass.", None),
                (End, 1, "- ✓ Subagent completed", Some(Completed)),
                (Text, 0, "The build is green.", None),
                (End, 0, "aborted", Some(Failed)),
            ]
        );
    }

    const AGENTPOOL: &str = r#"
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
        [[line]]
        pattern = '^❌ (?P<name>[^:]+): (?P<text>.*)$'
        kind = "tool_result"
        status = "failed"
    "#;

    #[test]
    fn tool_lines_and_prose_of_a_tool_box() {
        let g = grammar(AGENTPOOL);
        let t = g.parse("Reading a.txt.\nStill reading.\n🔧 Using tool: read\n✅ read: hello from a\n🔧 Using tool: grep\n❌ grep: no such file\nThe file a.txt says: hello");
        type Row<'a> = (
            EntryKind,
            &'a str,
            Option<&'a str>,
            Option<EntryStatus>,
            Option<&'a str>,
        );
        let got: Vec<Row> = t
            .entries
            .iter()
            .map(|e| {
                (
                    e.kind,
                    e.text.as_str(),
                    e.name.as_deref(),
                    e.status,
                    e.output.as_deref(),
                )
            })
            .collect();
        use EntryKind::*;
        use EntryStatus::*;
        assert_eq!(
            got,
            [
                (Text, "Reading a.txt.\nStill reading.", None, None, None),
                (
                    Tool,
                    "read",
                    Some("read"),
                    Some(Completed),
                    Some("hello from a")
                ),
                (
                    Tool,
                    "grep",
                    Some("grep"),
                    Some(Failed),
                    Some("no such file")
                ),
                (Text, "The file a.txt says: hello", None, None, None),
            ]
        );
        // A result with no open call of that name is a finished call of its own.
        let t = g.parse("✅ ls: a b");
        assert_eq!(t.entries[0].name.as_deref(), Some("ls"));
        assert_eq!(t.entries[0].status, Some(Completed));
    }

    #[test]
    fn changes_between_replaced_versions() {
        let g = grammar(AGENTPOOL);
        let a = g.parse("Reading ");
        let b = g.parse("Reading a.txt.\n🔧 Using tool: read\n");
        let c = g.parse("Reading a.txt.\n🔧 Using tool: read\n✅ read: hello from a\n");
        let ch = b.changes_since(&a);
        assert_eq!(ch.len(), 2, "{ch:?}");
        assert!(
            matches!(ch[0], Change::Changed { index: 0, old, new } if old.text == "Reading " && new.text == "Reading a.txt.")
        );
        assert!(matches!(ch[1], Change::Added { index: 1, .. }));
        let ch = c.changes_since(&b);
        assert!(
            matches!(ch.as_slice(), [Change::Changed { index: 1, new, .. }] if new.status == Some(EntryStatus::Completed))
        );
        assert!(c.changes_since(&c).is_empty());

        // The front falls off: indexes stay absolute, dropped entries are not reported.
        let g = grammar(DSH);
        let before = g.parse("- ✓ one\n- ✓ two\n- ▸ three\n");
        let after = g.parse("- … 1 earlier entries omitted\n- ✓ two\n- ✓ three\n- · four\n");
        let ch = after.changes_since(&before);
        assert_eq!(ch.len(), 2, "{ch:?}");
        assert!(matches!(ch[0], Change::Changed { index: 2, .. }));
        assert!(matches!(ch[1], Change::Added { index: 3, .. }));
    }

    #[test]
    fn a_growing_box_read_piece_by_piece() {
        let g = grammar(AGENTPOOL);
        // AgentPool's box as it grew in a real run: one event's text per version.
        let pieces = [
            "Subagent ",
            "alpha looking around.",
            "\n🔧 Using tool: list_directory\n",
            "✅ list_directory: ## /home/user/project\n\n| Name | Type |\n|------|------|\n| a.txt | file |\n",
            "SUB-ANSWER ",
            "alpha: the project holds a.txt.",
        ];
        let mut t = ParsedTranscript::default();
        let mut tail = Tail::default();
        for p in pieces {
            g.extend(&mut t, &mut tail, p);
        }
        let got: Vec<(EntryKind, &str, Option<&str>)> = t
            .entries
            .iter()
            .map(|e| (e.kind, e.text.as_str(), e.output.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (EntryKind::Text, "Subagent alpha looking around.", None),
                (
                    EntryKind::Tool,
                    "list_directory",
                    Some("## /home/user/project\n\n| Name | Type |\n|------|------|\n| a.txt | file |")
                ),
                (EntryKind::Text, "SUB-ANSWER alpha: the project holds a.txt.", None),
            ],
            "the result's table is its output, the prose after it the child's"
        );
        // Read whole, the same text makes the table prose: the pieces are what tell.
        let whole: String = pieces.concat();
        let read_whole = g.parse(&whole);
        assert!(
            read_whole.entries[2].text.starts_with("| Name"),
            "{read_whole:?}"
        );
        // Prose over several pieces and lines keeps its line breaks.
        let mut t = ParsedTranscript::default();
        let mut tail = Tail::default();
        for p in ["Reading a.txt.", "\nStill ", "reading.\n\nDone."] {
            g.extend(&mut t, &mut tail, p);
        }
        assert_eq!(t.entries.len(), 1);
        assert_eq!(t.entries[0].text, "Reading a.txt.\nStill reading.\n\nDone.");
        // Where a whole parse leaves off, reading can go on.
        let text = "Reading a.txt.\n🔧 Using tool: read\n✅ read: hi\nThe file ";
        let mut t = g.parse(text);
        let mut tail = Tail::after(text, &t);
        g.extend(&mut t, &mut tail, "says hi");
        assert_eq!(
            t.entries.last().map(|e| e.text.as_str()),
            Some("The file says hi")
        );
    }

    #[test]
    fn grammar_errors_name_the_key() {
        let bad = |t: &str| {
            let spec: TranscriptSpec = toml::from_str(t).expect("parses");
            Grammar::compile(&spec, "p.transcript").expect_err("invalid")
        };
        let e =
            bad("on = \"spawn\"\nfrom = [\"/c\"]\n[[line]]\npattern = \"(\"\nkind = \"text\"\n");
        assert_eq!(e.key, "p.transcript.line[0].pattern");
        let e =
            bad("on = \"spawn\"\nfrom = [\"/c\"]\n[[line]]\npattern = \"x\"\nkind = \"tool\"\n");
        assert_eq!(e.key, "p.transcript.line[0].status");
        let e =
            bad("on = \"spawn\"\nfrom = [\"/c\"]\n[[line]]\npattern = \"x\"\nkind = \"omitted\"\n");
        assert!(e.problem.contains("count"), "{e}");
        let e = bad("on = \"spawn\"\nfrom = []\n");
        assert_eq!(e.key, "p.transcript.from");
    }
}
