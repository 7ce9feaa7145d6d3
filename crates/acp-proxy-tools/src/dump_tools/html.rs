//! `acp-proxy dump html`: one self-contained HTML file (no network: styles, script and data
//! are inline) that shows the dump in lanes (client, proxy, agent), grouped by prompt turn,
//! with the subagent tree, each frame before and after the proxy side by side, a filter and
//! the check's findings. Rows are rendered on demand, so a dump of 100 000 frames opens and
//! scrolls; the frames' text is parsed only when first needed.
//!
//! The dump is read once: rows are written to the report as they are read, frame texts to a
//! scratch file appended after them, the tree and the findings last.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{json, Value};

use super::annotate::{short_session, Kind, Tracker};
use super::check::{Checker, Options};
use acp_proxy::dump::reader::{Item, Reader};
use acp_proxy::dump::Direction;

const TEMPLATE: &str = include_str!("report.html");
const DATA_MARK: &str = "<!--DATA-->";
/// Sessions named in the report's tables (more are shown without a session).
const MAX_SESSIONS: usize = 100_000;
/// Requests whose row is remembered (for the findings about unanswered requests).
const MAX_REQUEST_ROWS: usize = 200_000;

const KINDS: [Kind; 7] = [
    Kind::Request,
    Kind::Response,
    Kind::Error,
    Kind::Notification,
    Kind::Invalid,
    Kind::Stderr,
    Kind::Note,
];

/// What was written.
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    pub rows: u64,
    pub findings: u64,
}

/// JSON for inside a `<script>` element: `<` never appears raw (it is `\u003c` in strings
/// and nowhere else in JSON), so no `</script>` can end the element early.
fn script_json(v: &impl serde::Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string(v)?.replace('<', "\\u003c"))
}

fn dir_code(d: Direction) -> usize {
    Direction::ALL.iter().position(|x| *x == d).unwrap_or(0)
}

fn kind_code(k: Kind) -> usize {
    KINDS.iter().position(|x| *x == k).unwrap_or(0)
}

/// A frame's text, cut to `max` bytes (on a character boundary) with a note saying where
/// the rest is.
fn shortened(text: &str, max: usize, position: &str) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}… [{} more bytes not in this report: the dump has the whole frame at {position}]",
        &text[..cut],
        text.len() - cut
    )
}

/// A scratch file beside the report, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Write the report for the dump to `output`.
pub fn write(
    reader: &mut Reader,
    tracker: &mut Tracker,
    output: &Path,
    max_frame_chars: usize,
) -> anyhow::Result<Written> {
    let (head, tail) = TEMPLATE
        .split_once(DATA_MARK)
        .context("the report template has no data mark")?;
    // The report holds the dump's frames: private like the dump.
    let create = |p: &Path| {
        acp_proxy::dump::create_private(p)
            .with_context(|| format!("cannot write the report {}", p.display()))
    };
    let mut out = BufWriter::new(create(output)?);
    let scratch = Scratch(output.with_extension("frames.tmp"));
    let mut frames = BufWriter::new(create(&scratch.0)?);

    out.write_all(head.as_bytes())?;
    out.write_all(b"<script type=\"application/json\" id=\"data-rows\">[")?;
    frames.write_all(b"<script type=\"application/json\" id=\"data-frames\">[")?;

    let mut checker = Checker::new(Options::default());
    let mut findings: Vec<Value> = Vec::new();
    let mut sessions: HashMap<String, usize> = HashMap::new();
    let mut session_names: Vec<String> = Vec::new();
    let mut first_ts: Option<f64> = None;
    let mut rows: u64 = 0;
    let mut frame_count: u64 = 0;
    let mut turn_first_row: HashMap<usize, u64> = HashMap::new();
    // Rows of requests, for findings about them made at the end.
    let mut request_rows: HashMap<(usize, u64), u64> = HashMap::new();
    let mut title = String::new();
    // The proxy runs in the dump (rows name their file by its index in the reader's files).
    let mut runs: Vec<Option<String>> = Vec::new();

    while let Some(item) = reader.next_item()? {
        let rec = match item {
            Item::File(info) => {
                tracker.file(&info);
                if !runs.contains(&info.run) {
                    runs.push(info.run.clone());
                }
                if title.is_empty() {
                    title = format!(
                        "{} · acp-proxy {} · started {} · agent: {}",
                        info.path.display(),
                        info.proxy_version,
                        info.started_at,
                        info.agent_command.join(" ")
                    );
                }
                continue;
            }
            Item::Bad(b) => {
                findings.push(json!({"row": -1, "file": b.file, "line": b.line,
                    "severity": "warning", "rule": "dump-damaged", "message": b.why}));
                continue;
            }
            Item::Record(r) => r,
        };
        let first = *first_ts.get_or_insert(rec.ts);
        let continuation = tracker.is_continuation(&rec);
        let msgs = tracker.record(&rec);
        let position = reader.position(rec.file, rec.line);
        let frame_index = frame_count;
        if frame_count > 0 {
            frames.write_all(b",")?;
        }
        frames.write_all(
            script_json(&shortened(rec.text(), max_frame_chars, &position))?.as_bytes(),
        )?;
        frame_count += 1;
        let row_of_record = rows;
        for f in checker.record(&rec, &msgs, continuation) {
            findings.push(json!({"row": row_of_record, "file": f.file, "line": f.line,
                "severity": f.severity.as_str(), "rule": f.rule, "message": f.message}));
        }
        for m in &msgs {
            let sess = match &m.session {
                Some(s) => match sessions.get(s) {
                    Some(&i) => i as i64,
                    None if sessions.len() < MAX_SESSIONS => {
                        sessions.insert(s.clone(), session_names.len());
                        session_names.push(s.clone());
                        (session_names.len() - 1) as i64
                    }
                    None => -1,
                },
                None => -1,
            };
            let what = m.what();
            let opt = |v: Option<usize>| v.map(|x| x as i64).unwrap_or(-1);
            if let Some(t) = m.turn {
                turn_first_row.entry(t).or_insert(rows);
            }
            if m.kind == Kind::Request && request_rows.len() < MAX_REQUEST_ROWS {
                request_rows.entry((rec.file, rec.line)).or_insert(rows);
            }
            let row = json!([
                rec.file,
                rec.line,
                ((rec.ts - first) * 1000.0).round() as i64,
                dir_code(rec.dir),
                kind_code(m.kind),
                m.id.clone().unwrap_or_default(),
                sess,
                what,
                m.summary,
                m.latency.map(|l| l * 1000.0).unwrap_or(-1.0),
                m.depth,
                opt(m.node),
                opt(m.spawn_of),
                opt(m.turn),
                tracker.step,
                u8::from(m.is_error),
                frame_index,
            ]);
            if rows > 0 {
                out.write_all(b",\n")?;
            }
            out.write_all(script_json(&row)?.as_bytes())?;
            rows += 1;
        }
    }
    for f in checker.finish(tracker) {
        findings.push(json!({"row": -1, "file": f.file, "line": f.line,
            "severity": f.severity.as_str(), "rule": f.rule, "message": f.message}));
    }
    out.write_all(b"]</script>\n")?;
    frames.write_all(b"]</script>\n")?;
    frames.flush()?;
    drop(frames);
    let mut scratch_file = File::open(&scratch.0)
        .with_context(|| format!("cannot read back {}", scratch.0.display()))?;
    std::io::copy(&mut scratch_file, &mut out)?;

    // End-of-dump findings (unanswered requests) point at their request's row.
    for f in &mut findings {
        if f["row"] == -1 {
            let key = (
                f["file"].as_u64().unwrap_or(0) as usize,
                f["line"].as_u64().unwrap_or(0),
            );
            if let Some(row) = request_rows.get(&key) {
                f["row"] = json!(row);
            }
        }
    }
    let first = first_ts.unwrap_or(0.0);
    let turns: Vec<Value> = tracker
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({
                "session": t.session,
                "session_short": short_session(&t.session),
                "prompt": t.prompt,
                "stop": t.stop_reason,
                "start_ms": ((t.start_ts - first) * 1000.0).round(),
                "duration_ms": t.end_ts.map(|e| (e - t.start_ts) * 1000.0).unwrap_or(-1.0),
                "frames": t.frames,
                "first_row": turn_first_row.get(&i).copied(),
            })
        })
        .collect();
    let nodes: Vec<Value> = tracker
        .nodes
        .iter()
        .map(|n| {
            json!({
                "parent_session": n.parent_session,
                "parent_node": n.parent_node.map(|p| p as i64).unwrap_or(-1),
                "spawn": n.spawn,
                "child": n.child,
                "preset": n.preset,
                "title": n.title,
                "status": n.status,
                "events": n.events,
                "duration_ms": n.duration() * 1000.0,
                "depth": n.depth,
                "file": n.file,
                "line": n.line,
            })
        })
        .collect();
    let mut tops: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for s in &session_names {
        let top = tracker.top_session(s);
        if seen.insert(top.clone()) {
            tops.push(top);
        }
    }
    let written = Written {
        rows,
        findings: findings.len() as u64,
    };
    if runs.len() > 1 {
        title = format!("{title} · {} proxy runs", runs.len());
    }
    let files: Vec<String> = reader
        .files
        .iter()
        .map(|f| {
            f.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| f.path.display().to_string())
        })
        .collect();
    let meta = json!({
        "title": title,
        "files": files,
        "kinds": KINDS.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        "sessions": session_names,
        "sessions_short": session_names.iter().map(|s| short_session(s)).collect::<Vec<_>>(),
        "sessions_top": tops,
        "turns": turns,
        "nodes": nodes,
        "findings": findings,
    });
    out.write_all(b"<script type=\"application/json\" id=\"data-meta\">")?;
    out.write_all(script_json(&meta)?.as_bytes())?;
    out.write_all(b"</script>\n")?;
    out.write_all(tail.as_bytes())?;
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_its_script_element() {
        let s = script_json(&json!(["</script><script>alert(1)</script>", "<!--"])).expect("json");
        assert!(!s.contains('<'), "{s}");
        let back: Value = serde_json::from_str(&s).expect("still JSON");
        assert_eq!(back[0], "</script><script>alert(1)</script>");
    }

    #[test]
    fn long_frames_are_cut_on_a_character_boundary_and_say_where_the_rest_is() {
        let s = shortened("ééééé", 3, "d.jsonl:7");
        assert!(s.starts_with("é…"), "{s}");
        assert!(s.contains("d.jsonl:7"), "{s}");
        assert_eq!(shortened("short", 10, "x"), "short");
    }

    #[test]
    fn the_template_has_one_data_mark_and_loads_nothing_from_outside() {
        assert_eq!(TEMPLATE.matches(DATA_MARK).count(), 1);
        for outside in ["http://", "https://", "src=", "@import", "url("] {
            assert!(
                !TEMPLATE.contains(outside),
                "the report refers to `{outside}`"
            );
        }
    }
}
