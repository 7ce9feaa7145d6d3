//! `acp-proxy dump stats`: what a dump holds, in numbers.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use super::annotate::{short_session, Kind, Tracker};
use super::view::{date_time, short_dir};
use acp_proxy::dump::reader::{human_bytes, Item, Reader, Record};
use acp_proxy::dump::Direction;

/// Distinct methods counted one by one; the rest are counted together.
const MAX_METHODS: usize = 500;
/// Turns and subagents listed one by one (all are counted).
const MAX_LISTED: usize = 200;

/// Latencies in buckets 2% wide: percentiles to within 1%, in constant memory.
#[derive(Debug, Default, Clone)]
pub struct Histogram {
    buckets: BTreeMap<i32, u64>,
    pub n: u64,
    pub max: f64,
}

const BUCKET_RATIO: f64 = 1.02;

impl Histogram {
    pub fn add(&mut self, secs: f64) {
        let us = (secs * 1e6).max(1.0);
        let b = (us.ln() / BUCKET_RATIO.ln()).floor() as i32;
        *self.buckets.entry(b).or_default() += 1;
        self.n += 1;
        if secs > self.max {
            self.max = secs;
        }
    }

    /// The `q` quantile (0..=1) in seconds.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        if rank == self.n {
            return self.max;
        }
        let mut seen = 0;
        for (b, c) in &self.buckets {
            seen += c;
            if seen >= rank {
                // The bucket's middle, never above the largest value seen.
                let mid = BUCKET_RATIO.powf(*b as f64 + 0.5) / 1e6;
                return mid.min(self.max);
            }
        }
        self.max
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Count {
    frames: u64,
    bytes: u64,
}

impl Count {
    fn add(&mut self, bytes: usize) {
        self.frames += 1;
        self.bytes += bytes as u64;
    }
}

/// What the proxy did with the inputs of one direction.
#[derive(Debug, Default, Clone, Copy)]
struct Handling {
    inputs: u64,
    unchanged: u64,
    rewritten: u64,
    /// Answered by the proxy itself (nothing passed on).
    answered: u64,
    withheld: u64,
    /// Frames the proxy wrote that differ from the input they followed.
    written: u64,
}

/// The input being handled and what came out of it so far.
struct Step {
    dir: Direction,
    hash: u64,
    len: usize,
    forward: u64,
    identical: u64,
    back: u64,
}

fn text_hash(s: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

#[derive(Default)]
pub struct Stats {
    files: Vec<String>,
    /// Proxy runs read (a run's parts count once).
    runs: u64,
    last_run: Option<String>,
    first_ts: Option<f64>,
    last_ts: f64,
    records: u64,
    per_dir: HashMap<Direction, Count>,
    per_method: HashMap<String, HashMap<Direction, Count>>,
    other_methods: bool,
    latency: HashMap<(String, &'static str), Histogram>,
    not_json: HashMap<Direction, u64>,
    handling: HashMap<Direction, Handling>,
    step: Option<Step>,
    lost: u64,
    bad_lines: u64,
    notes: u64,
    redacted: u64,
}

fn forward_of(input: Direction) -> Direction {
    match input {
        Direction::ClientToProxy => Direction::ProxyToAgent,
        _ => Direction::ProxyToClient,
    }
}

impl Stats {
    /// A file, or a run in it, starts.
    pub fn add_file(&mut self, name: String, run: Option<String>) {
        if !self.files.contains(&name) {
            self.files.push(name);
        }
        self.runs += 1;
        if run.is_some() && run == self.last_run {
            self.runs -= 1;
        }
        self.last_run = run;
    }

    pub fn bad_line(&mut self) {
        self.bad_lines += 1;
    }

    fn close_step(&mut self) {
        let Some(step) = self.step.take() else { return };
        let h = self.handling.entry(step.dir).or_default();
        h.inputs += 1;
        match (step.forward, step.identical, step.back) {
            (0, _, 0) => h.withheld += 1,
            (0, _, _) => h.answered += 1,
            (1, 1, _) => h.unchanged += 1,
            _ => h.rewritten += 1,
        }
    }

    /// Count one record and its annotated messages.
    pub fn record(&mut self, rec: &Record, tracker: &mut Tracker) {
        let continuation = tracker.is_continuation(rec);
        let msgs = tracker.record(rec);
        self.records += 1;
        self.first_ts.get_or_insert(rec.ts);
        self.last_ts = self.last_ts.max(rec.ts);
        let text = rec.text();
        self.per_dir.entry(rec.dir).or_default().add(text.len());
        if rec.redacted {
            self.redacted += 1;
        }
        match rec.dir {
            Direction::ProxyNote => {
                self.notes += 1;
                self.lost += rec.lost_frames;
                return;
            }
            Direction::AgentStderr => return,
            _ => {}
        }
        if rec.invalid_json {
            *self.not_json.entry(rec.dir).or_default() += 1;
        }
        if rec.dir.is_input() && !continuation {
            self.close_step();
            self.step = Some(Step {
                dir: rec.dir,
                hash: text_hash(text),
                len: text.len(),
                forward: 0,
                identical: 0,
                back: 0,
            });
        } else if rec.dir.is_output() {
            if let Some(step) = &mut self.step {
                let same = step.len == text.len() && step.hash == text_hash(text);
                if rec.dir == forward_of(step.dir) {
                    step.forward += 1;
                    if same {
                        step.identical += 1;
                    }
                } else {
                    step.back += 1;
                }
                if !same {
                    self.handling.entry(step.dir).or_default().written += 1;
                }
            }
        }
        let n = msgs.len().max(1);
        for m in &msgs {
            let key = match (&m.method, &m.update, m.kind) {
                (_, Some(u), _) => format!("session/update {u}"),
                (Some(method), None, Kind::Response | Kind::Error) => format!("{method} (answer)"),
                (Some(method), None, _) => method.clone(),
                (None, None, Kind::Invalid) => "(not JSON-RPC)".to_owned(),
                (None, None, _) => "(answer to an unknown request)".to_owned(),
            };
            let key = if self.per_method.contains_key(&key) || self.per_method.len() < MAX_METHODS {
                key
            } else {
                self.other_methods = true;
                "(other methods)".to_owned()
            };
            self.per_method
                .entry(key)
                .or_default()
                .entry(rec.dir)
                .or_default()
                .add(text.len() / n);
            if let (Some(l), Some(method)) = (m.latency, &m.method) {
                // Asker → answerer on that hop: `client → proxy` is what the editor waited.
                let side = match rec.dir {
                    Direction::ProxyToClient => "client → proxy",
                    Direction::AgentToProxy => "proxy → agent",
                    Direction::ClientToProxy => "proxy → client",
                    _ => "agent → proxy",
                };
                self.latency
                    .entry((method.clone(), side))
                    .or_default()
                    .add(l.max(0.0));
            }
        }
    }

    /// The report.
    pub fn render(&mut self, tracker: &Tracker) -> String {
        self.close_step();
        let mut o = String::new();
        let first = self.first_ts.unwrap_or(0.0);
        let _ = writeln!(o, "dump: {}", self.files.join(", "));
        let _ = writeln!(o, "proxy runs: {}", self.runs);
        if self.records == 0 {
            let _ = writeln!(o, "no records");
        } else {
            let _ = writeln!(
                o,
                "{} records from {} to {} UTC ({:.3} s)",
                self.records,
                date_time(first),
                date_time(self.last_ts),
                self.last_ts - first
            );
        }

        let _ = writeln!(o, "\nframes and bytes per direction");
        let _ = writeln!(o, "  {:<14} {:>10} {:>12}", "direction", "frames", "bytes");
        for d in Direction::ALL {
            if let Some(c) = self.per_dir.get(&d) {
                let _ = writeln!(
                    o,
                    "  {:<14} {:>10} {:>12}",
                    d.as_str(),
                    c.frames,
                    human_bytes(c.bytes)
                );
            }
        }

        let _ = writeln!(o, "\nframes per method (and bytes, all directions)");
        let _ = writeln!(
            o,
            "  {:<44} {:>8} {:>8} {:>8} {:>8} {:>11}",
            "method",
            short_dir(Direction::ClientToProxy),
            short_dir(Direction::ProxyToAgent),
            short_dir(Direction::AgentToProxy),
            short_dir(Direction::ProxyToClient),
            "bytes"
        );
        let mut methods: Vec<_> = self.per_method.iter().collect();
        methods.sort_by_key(|(name, by_dir)| {
            (
                std::cmp::Reverse(by_dir.values().map(|c| c.frames).sum::<u64>()),
                (*name).clone(),
            )
        });
        for (name, by_dir) in methods {
            let f = |d| by_dir.get(&d).map(|c: &Count| c.frames).unwrap_or(0);
            let bytes: u64 = by_dir.values().map(|c| c.bytes).sum();
            let _ = writeln!(
                o,
                "  {:<44} {:>8} {:>8} {:>8} {:>8} {:>11}",
                name,
                f(Direction::ClientToProxy),
                f(Direction::ProxyToAgent),
                f(Direction::AgentToProxy),
                f(Direction::ProxyToClient),
                human_bytes(bytes)
            );
        }
        if self.other_methods {
            let _ = writeln!(
                o,
                "  (more than {MAX_METHODS} methods: the rest are counted together)"
            );
        }

        let _ = writeln!(o, "\nrequest latencies (asker → answerer on each hop)");
        if self.latency.is_empty() {
            let _ = writeln!(o, "  no answered requests");
        } else {
            let _ = writeln!(
                o,
                "  {:<30} {:<28} {:>7} {:>10} {:>10} {:>10}",
                "method", "hop", "n", "p50", "p95", "max"
            );
            let mut lat: Vec<_> = self.latency.iter().collect();
            lat.sort_by(|a, b| a.0.cmp(b.0));
            for ((method, side), h) in lat {
                let _ = writeln!(
                    o,
                    "  {:<30} {:<28} {:>7} {:>10} {:>10} {:>10}",
                    method,
                    side,
                    h.n,
                    secs(h.quantile(0.5)),
                    secs(h.quantile(0.95)),
                    secs(h.max)
                );
            }
        }

        let turns = &tracker.turns;
        let mut by_stop: BTreeMap<&str, u64> = BTreeMap::new();
        for t in turns {
            *by_stop
                .entry(t.stop_reason.as_deref().unwrap_or("(unanswered)"))
                .or_default() += 1;
        }
        let stops: Vec<String> = by_stop.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(
            o,
            "\nprompt turns: {}{}",
            turns.len() as u64 + tracker.turns_dropped,
            if stops.is_empty() {
                String::new()
            } else {
                format!(" ({})", stops.join(", "))
            }
        );
        if !turns.is_empty() {
            let _ = writeln!(
                o,
                "  {:>4} {:<12} {:>12} {:>10} {:<14} {:>7}  prompt",
                "#", "session", "start", "duration", "stop", "frames"
            );
        }
        for (i, t) in turns.iter().enumerate().take(MAX_LISTED) {
            let _ = writeln!(
                o,
                "  {:>4} {:<12} {:>12} {:>10} {:<14} {:>7}  \"{}\"",
                i + 1,
                short_session(&t.session),
                format!("+{:.3}s", t.start_ts - first),
                t.end_ts
                    .map(|e| secs(e - t.start_ts))
                    .unwrap_or_else(|| "-".into()),
                t.stop_reason.as_deref().unwrap_or("(unanswered)"),
                t.frames,
                t.prompt
            );
        }
        if turns.len() > MAX_LISTED {
            let _ = writeln!(o, "  … {} more", turns.len() - MAX_LISTED);
        }

        let nodes = &tracker.nodes;
        let _ = writeln!(
            o,
            "\nsubagents: {}",
            nodes.len() as u64 + tracker.nodes_dropped
        );
        if !nodes.is_empty() {
            let _ = writeln!(
                o,
                "  {:<14} {:<14} {:<12} {:<9} {:<16} {:>7} {:>10}  title",
                "parent", "spawn", "child", "preset", "status", "events", "duration"
            );
        }
        for n in nodes.iter().take(MAX_LISTED) {
            let indent = "  ".repeat(n.depth.saturating_sub(1));
            let _ = writeln!(
                o,
                "  {:<14} {:<14} {:<12} {:<9} {:<16} {:>7} {:>10}  {}",
                format!("{indent}{}", short_session(&n.parent_session)),
                n.spawn
                    .as_deref()
                    .map(short_session)
                    .unwrap_or_else(|| "-".into()),
                n.child
                    .as_deref()
                    .map(short_session)
                    .unwrap_or_else(|| "-".into()),
                n.preset,
                if n.status.is_empty() { "-" } else { &n.status },
                n.events,
                secs(n.duration()),
                n.title
            );
        }
        if nodes.len() > MAX_LISTED {
            let _ = writeln!(o, "  … {} more", nodes.len() - MAX_LISTED);
        }

        let _ = writeln!(o, "\nframes that were not JSON");
        let mut any = false;
        for d in Direction::ALL {
            if let Some(n) = self.not_json.get(&d) {
                any = true;
                let _ = writeln!(o, "  {:<14} {n}", d.as_str());
            }
        }
        if !any {
            let _ = writeln!(o, "  none");
        }

        let _ = writeln!(o, "\nwhat the proxy did with each frame it received");
        for (d, what) in [
            (Direction::AgentToProxy, "from the agent"),
            (Direction::ClientToProxy, "from the client"),
        ] {
            let h = self.handling.get(&d).copied().unwrap_or_default();
            let _ = writeln!(
                o,
                "  {what:<16} {:>8} frames: {} passed unchanged, {} rewritten, {} answered by the proxy, {} withheld; {} frames written that differ from their input",
                h.inputs, h.unchanged, h.rewritten, h.answered, h.withheld, h.written
            );
        }
        if self.redacted > 0 {
            let _ = writeln!(o, "  {} records hold redacted secrets", self.redacted);
        }
        let _ = writeln!(
            o,
            "\nproxy notes: {}; frames the dump lost: {}; lines that could not be read: {}",
            self.notes, self.lost, self.bad_lines
        );
        o
    }
}

/// `12 ms`, `1.50 s`, `350 µs`.
pub fn secs(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.001 {
        format!("{:.1} ms", s * 1000.0)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// Read the whole dump and return the report.
pub fn run(reader: &mut Reader, tracker: &mut Tracker) -> anyhow::Result<String> {
    let mut stats = Stats::default();
    while let Some(item) = reader.next_item()? {
        match item {
            Item::File(f) => {
                tracker.file(&f);
                stats.add_file(
                    format!("{} (part {})", f.path.display(), f.part),
                    f.run.clone(),
                );
            }
            Item::Record(r) => stats.record(&r, tracker),
            Item::Bad(b) => {
                eprintln!("acp-proxy: {}: {}", reader.position(b.file, b.line), b.why);
                stats.bad_line();
            }
        }
    }
    Ok(stats.render(tracker))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_two_percent() {
        let mut h = Histogram::default();
        for ms in 1..=1000 {
            h.add(ms as f64 / 1000.0);
        }
        let p50 = h.quantile(0.5);
        let p95 = h.quantile(0.95);
        assert!((p50 - 0.5).abs() / 0.5 < 0.02, "{p50}");
        assert!((p95 - 0.95).abs() / 0.95 < 0.02, "{p95}");
        assert_eq!(h.max, 1.0);
        assert_eq!(h.quantile(1.0), 1.0);
        assert_eq!(Histogram::default().quantile(0.5), 0.0);
    }
}
