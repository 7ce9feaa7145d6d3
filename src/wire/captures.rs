//! The captured frames of `tests/fixtures/` (real agents' traffic and dumps), for tests that
//! compare two readings of the same bytes.

use std::path::{Path, PathBuf};

/// Every frame of every `.jsonl` capture, as its text, with the file it came from: a dump
/// record's frame (its `msg` or `frame`, text or JSON), or the line itself.
pub(super) fn frames() -> Vec<(PathBuf, String)> {
    // The library's manifest is crates/acp-proxy-core; the fixtures are the repository's.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut files = vec![root];
    let mut out = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("fixtures dir").flatten() {
                files.push(entry.path());
            }
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("fixture");
        for line in text.lines() {
            let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let frame = match record.get("msg").or(record.get("frame")) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) => serde_json::to_string(v).expect("json"),
                None => line.to_owned(),
            };
            out.push((path.clone(), frame));
        }
    }
    out
}
