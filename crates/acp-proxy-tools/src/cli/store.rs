//! What `acp-proxy store stats` and `acp-proxy store prune` print: the store hands back
//! numbers ([`StoreStats`], [`PruneReport`]), this says them for a person.

use std::time::{SystemTime, UNIX_EPOCH};

use acp_proxy::store::{PruneReport, StoreLocation, StoreStats};

/// `acp-proxy store stats` output: one `key: value` line each.
pub fn render_stats(s: &StoreStats) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k}: {v}\n"));
    line("store", s.location.clone());
    line("schema version", s.schema_version.to_string());
    if let Some(n) = s.file_bytes {
        line("file size", human_bytes(n));
    }
    if let Some(n) = s.wal_bytes {
        line("wal size", human_bytes(n));
    }
    line("used", human_bytes(s.used_bytes));
    line("free", human_bytes(s.free_bytes));
    line("children", s.children.to_string());
    line("updates", s.updates.to_string());
    line("update bytes", human_bytes(s.update_bytes));
    if s.transcript_bytes > 0 {
        line("transcript files", human_bytes(s.transcript_bytes));
    }
    let when = |t: Option<i64>| match t {
        Some(t) => format!("{} ({t})", human_age(now - t)),
        None => "-".to_owned(),
    };
    line("oldest update", when(s.oldest_updated_at));
    line("newest update", when(s.newest_updated_at));
    if let Some(reason) = &s.degraded {
        line("degraded", reason.clone());
    }
    out
}

/// `acp-proxy store prune` output.
pub fn render_prune(location: &StoreLocation, r: &PruneReport) -> String {
    let mut out = format!(
        "store: {location}\nremoved: {} child(ren) ({} by age, {} by size), {} update(s)\n\
         used: {} -> {}\n",
        r.removed_by_age + r.removed_by_size,
        r.removed_by_age,
        r.removed_by_size,
        r.updates_removed,
        human_bytes(r.used_bytes_before),
        human_bytes(r.used_bytes_after),
    );
    if let (Some(a), Some(b)) = (r.file_bytes_before, r.file_bytes_after) {
        out.push_str(&format!(
            "on disk: {} -> {}\n",
            human_bytes(a),
            human_bytes(b)
        ));
    }
    if let Some(limit) = r.max_bytes.filter(|&l| r.used_bytes_after > l) {
        let why = if r.kept_recent > 0 {
            format!(
                "{} child(ren) written to within the last hour are never removed for size (one \
                 may still be running); prune again later",
                r.kept_recent
            )
        } else {
            "no child is left to remove: the rest is the database's own structure".to_owned()
        };
        out.push_str(&format!(
            "still over --max-bytes {}: {why}\n",
            human_bytes(limit)
        ));
    }
    out
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit} ({n} bytes)")
}

fn human_age(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        s if s < 120 => format!("{s} s ago"),
        s if s < 2 * 3600 => format!("{} min ago", s / 60),
        s if s < 2 * 86_400 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}
