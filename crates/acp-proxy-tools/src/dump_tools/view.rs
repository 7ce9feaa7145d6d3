//! `acp-proxy dump view`: the dump as a readable timeline, one line per message, with filters.

use std::io::Write;

use super::annotate::{short_session, Msg, Tracker};
use acp_proxy::dump::reader::{Item, Reader, Record};
use acp_proxy::dump::Direction;

/// Which records `view` (and `html`) show.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Session ids (a prefix is enough); a session's subagents are included.
    pub sessions: Vec<String>,
    /// Methods (or `sessionUpdate` kinds); `*` matches any run of characters.
    pub methods: Vec<String>,
    /// JSON-RPC kinds (`request`, `response`, `error`, `notification`, `invalid`, `note`,
    /// `stderr`) or `sessionUpdate` kinds.
    pub kinds: Vec<String>,
    /// Tool call ids; a spawn's subagent's frames are included.
    pub tool_calls: Vec<String>,
    pub directions: Vec<Direction>,
    /// Only errors: JSON-RPC errors, frames that are not JSON-RPC, failed tool calls, losses.
    pub errors: bool,
    /// Text the record must contain.
    pub grep: Vec<String>,
    pub from: Option<TimeBound>,
    pub to: Option<TimeBound>,
}

/// A point in time given on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeBound {
    /// Seconds after the first record.
    Offset(f64),
    /// Seconds since midnight UTC, on the day of the first record.
    TimeOfDay(f64),
    /// Unix seconds.
    Absolute(f64),
}

impl TimeBound {
    fn resolve(self, first_ts: f64) -> f64 {
        match self {
            TimeBound::Offset(s) => first_ts + s,
            TimeBound::TimeOfDay(s) => (first_ts / 86_400.0).floor() * 86_400.0 + s,
            TimeBound::Absolute(t) => t,
        }
    }
}

/// `30`, `30s`, `1.5m`, `2h` (after the first record), `14:03:07.250` (UTC time of day), or
/// `2026-12-01T14:03:07Z`.
pub fn parse_time(text: &str) -> Result<TimeBound, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{text}` is not a time: use seconds after the dump's start (`90`, `90s`, `1.5m`, `2h`), \
             a UTC time of day (`14:03:07.250`) or `2026-12-01T14:03:07Z`"
        )
    };
    if let Some((date, time)) = t.split_once('T') {
        let time = time.strip_suffix('Z').ok_or_else(bad)?;
        let parts: Vec<&str> = date.split('-').collect();
        let [y, m, d] = parts.as_slice() else {
            return Err(bad());
        };
        let (y, m, d): (i64, i64, i64) = (
            y.parse().map_err(|_| bad())?,
            m.parse().map_err(|_| bad())?,
            d.parse().map_err(|_| bad())?,
        );
        let days = days_from_civil(y, m, d);
        return Ok(TimeBound::Absolute(
            days as f64 * 86_400.0 + time_of_day(time).ok_or_else(bad)?,
        ));
    }
    if t.contains(':') {
        return time_of_day(t).map(TimeBound::TimeOfDay).ok_or_else(bad);
    }
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    if !v.is_finite() || v < 0.0 {
        return Err(bad());
    }
    Ok(TimeBound::Offset(v * mult))
}

fn time_of_day(t: &str) -> Option<f64> {
    let parts: Vec<&str> = t.split(':').collect();
    let (h, m, s) = match parts.as_slice() {
        [h, m] => (h.parse::<f64>().ok()?, m.parse::<f64>().ok()?, 0.0),
        [h, m, s] => (
            h.parse::<f64>().ok()?,
            m.parse::<f64>().ok()?,
            s.parse::<f64>().ok()?,
        ),
        _ => return None,
    };
    (h < 24.0 && m < 60.0 && s < 61.0 && h >= 0.0 && m >= 0.0 && s >= 0.0)
        .then_some(h * 3600.0 + m * 60.0 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `14:03:07.250` (UTC).
pub fn clock(ts: f64) -> String {
    let ms = (ts * 1000.0).round() as i64;
    let day_ms = ms.rem_euclid(86_400_000);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        day_ms / 3_600_000,
        day_ms / 60_000 % 60,
        day_ms / 1000 % 60,
        day_ms % 1000
    )
}

/// `2026-12-01 14:03:07` (UTC).
pub fn date_time(ts: f64) -> String {
    let secs = ts.floor() as i64;
    let (y, m, d) = acp_proxy::dump::civil_from_days(secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02} {}", &clock(ts)[..8])
}

/// `c→p`, `p→a`, `a→p`, `p→c`, `err`, `note`.
pub fn short_dir(d: Direction) -> &'static str {
    match d {
        Direction::ClientToProxy => "c→p",
        Direction::ProxyToAgent => "p→a",
        Direction::AgentToProxy => "a→p",
        Direction::ProxyToClient => "p→c",
        Direction::AgentStderr => "err",
        Direction::ProxyNote => "note",
    }
}

/// A direction as given on the command line: the dump's names, `c2p`/`p2a`/`a2p`/`p2c`,
/// `stderr`, `note`, or a side: `client` (both directions between client and proxy), `agent`.
pub fn parse_direction(text: &str) -> Result<Vec<Direction>, String> {
    use Direction::*;
    let t = text.trim().to_ascii_lowercase();
    if let Some(d) = Direction::parse(text.trim()) {
        return Ok(vec![d]);
    }
    Ok(match t.as_str() {
        "c2p" | "c->p" | "client->proxy" | "client-to-proxy" => vec![ClientToProxy],
        "p2a" | "p->a" | "proxy->agent" | "proxy-to-agent" => vec![ProxyToAgent],
        "a2p" | "a->p" | "agent->proxy" | "agent-to-proxy" => vec![AgentToProxy],
        "p2c" | "p->c" | "proxy->client" | "proxy-to-client" => vec![ProxyToClient],
        "stderr" | "agent-stderr" => vec![AgentStderr],
        "note" | "notes" | "proxy-note" => vec![ProxyNote],
        "client" => vec![ClientToProxy, ProxyToClient],
        "agent" => vec![ProxyToAgent, AgentToProxy],
        _ => {
            return Err(format!(
                "`{text}` is not a direction: use c2p, p2a, a2p, p2c, stderr, note, client or agent"
            ))
        }
    })
}

/// `*` matches any run of characters; otherwise the whole text must match.
pub fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(p) => rest = &rest[p + part.len()..],
                None => return false,
            }
        }
    }
    true
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
            && self.methods.is_empty()
            && self.kinds.is_empty()
            && self.tool_calls.is_empty()
            && self.directions.is_empty()
            && !self.errors
            && self.grep.is_empty()
            && self.from.is_none()
            && self.to.is_none()
    }

    /// Whether one message of a record is shown.
    pub fn matches(&self, rec: &Record, m: &Msg, t: &Tracker, first_ts: f64) -> bool {
        if !self.directions.is_empty() && !self.directions.contains(&rec.dir) {
            return false;
        }
        if let Some(from) = self.from {
            if rec.ts < from.resolve(first_ts) {
                return false;
            }
        }
        if let Some(to) = self.to {
            if rec.ts > to.resolve(first_ts) {
                return false;
            }
        }
        if self.errors && !m.is_error {
            return false;
        }
        if !self.kinds.is_empty()
            && !self
                .kinds
                .iter()
                .any(|k| k == m.kind.as_str() || m.update.as_deref().is_some_and(|u| glob(k, u)))
        {
            return false;
        }
        if !self.methods.is_empty()
            && !self.methods.iter().any(|p| {
                m.method.as_deref().is_some_and(|x| glob(p, x))
                    || m.update.as_deref().is_some_and(|u| glob(p, u))
            })
        {
            return false;
        }
        if !self.sessions.is_empty()
            && !self.sessions.iter().any(|s| {
                m.session
                    .as_deref()
                    .is_some_and(|x| x.starts_with(s.as_str()))
                    || t.within(m.node.or(m.spawn_of), |n| {
                        n.parent_session.starts_with(s.as_str())
                    })
            })
        {
            return false;
        }
        if !self.tool_calls.is_empty()
            && !self.tool_calls.iter().any(|id| {
                m.tool_call.as_deref() == Some(id.as_str())
                    || t.within(m.node, |n| n.spawn.as_deref() == Some(id.as_str()))
            })
        {
            return false;
        }
        if !self.grep.is_empty() && !self.grep.iter().all(|g| rec.text().contains(g.as_str())) {
            return false;
        }
        true
    }
}

/// How `view` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Timeline {
        color: bool,
    },
    /// The matching records as they are in the dump.
    Records,
}

const RESET: &str = "\x1b[0m";

fn dir_color(d: Direction) -> &'static str {
    match d {
        Direction::ClientToProxy => "\x1b[36m",
        Direction::ProxyToAgent => "\x1b[34m",
        Direction::AgentToProxy => "\x1b[32m",
        Direction::ProxyToClient => "\x1b[35m",
        Direction::AgentStderr => "\x1b[2m",
        Direction::ProxyNote => "\x1b[33m",
    }
}

/// One timeline line.
pub fn line(rec: &Record, m: &Msg, color: bool, tracker: &Tracker) -> String {
    let id = m.id.as_deref().unwrap_or("");
    let id = if id.chars().count() > 8 {
        format!("{}…", id.chars().take(7).collect::<String>())
    } else {
        id.to_owned()
    };
    let session = m.session.as_deref().map(short_session).unwrap_or_default();
    let what = m.what();
    let indent = if m.depth > 0 {
        format!("{}↳ ", "  ".repeat(m.depth - 1))
    } else {
        String::new()
    };
    let latency = match m.latency {
        Some(l) if l >= 1.0 => format!("({l:.2} s) "),
        Some(l) => format!("({:.0} ms) ", l * 1000.0),
        None => String::new(),
    };
    let (c_dir, c_err, c_dim, reset) = if color {
        (
            dir_color(rec.dir),
            if m.is_error { "\x1b[31;1m" } else { "" },
            "\x1b[2m",
            RESET,
        )
    } else {
        ("", "", "", "")
    };
    let what_col = format!("{indent}{what}");
    // A child's work: which subagent (two at once are told apart here, not by tool call ids).
    let owner = match m.node.and_then(|n| tracker.nodes.get(n)) {
        Some(node) if m.depth > 0 => format!(" {c_dim}[{}]{reset}", subagent_label(node)),
        _ => String::new(),
    };
    format!(
        "{c_dim}{}{reset} {c_dir}{:<4}{reset} {c_err}{:<5}{reset} {:>8} {:<11} {c_dir}{:<26}{reset} {c_dim}{latency}{reset}{c_err}{}{reset}{owner}",
        clock(rec.ts),
        short_dir(rec.dir),
        m.kind.short(),
        id,
        session,
        what_col,
        m.summary
    )
    .trim_end()
    .to_owned()
}

/// `subagent "Look for TODOs" acp-p…efc0b`: a subagent's title and child session (or spawn).
pub fn subagent_label(node: &super::annotate::Node) -> String {
    let title = if node.title.is_empty() {
        String::new()
    } else {
        format!(" \"{}\"", node.title)
    };
    match (&node.child, &node.spawn) {
        (Some(child), _) => format!("subagent{title} {}", short_session(child)),
        (None, Some(spawn)) => format!("subagent{title} (spawn {spawn})"),
        (None, None) => format!("subagent{title}"),
    }
}

/// Print the timeline (or the matching records) of the dump. Returns the number of
/// records shown.
pub fn run(
    reader: &mut Reader,
    tracker: &mut Tracker,
    filter: &Filter,
    output: Output,
    out: &mut impl Write,
) -> anyhow::Result<u64> {
    let mut first_ts: Option<f64> = None;
    let mut shown = 0u64;
    let mut bad = 0u64;
    while let Some(item) = reader.next_item()? {
        match item {
            Item::File(info) => {
                tracker.file(&info);
                if output == Output::Records {
                    // The output is a dump itself: the tools read it like any other.
                    writeln!(out, "{}", info.raw)?;
                }
                if let Output::Timeline { color } = output {
                    let (dim, reset) = if color { ("\x1b[2m", RESET) } else { ("", "") };
                    writeln!(
                        out,
                        "{dim}# {} · run {} · part {} · acp-proxy {} · started {} · agent: {}{reset}",
                        info.path.display(),
                        info.run.as_deref().unwrap_or("-"),
                        info.part,
                        info.proxy_version,
                        info.started_at,
                        info.agent_command.join(" ")
                    )?;
                }
            }
            Item::Bad(b) => {
                bad += 1;
                eprintln!("acp-proxy: {}: {}", reader.position(b.file, b.line), b.why);
            }
            Item::Record(rec) => {
                let first = *first_ts.get_or_insert(rec.ts);
                let msgs = tracker.record(&rec);
                let mut printed_raw = false;
                for m in &msgs {
                    if !filter.matches(&rec, m, tracker, first) {
                        continue;
                    }
                    match output {
                        Output::Timeline { color } => {
                            writeln!(out, "{}", line(&rec, m, color, tracker))?;
                        }
                        Output::Records if !printed_raw => {
                            writeln!(out, "{}", rec.raw)?;
                            printed_raw = true;
                        }
                        Output::Records => {}
                    }
                    shown += 1;
                }
                if reader.follows() {
                    out.flush()?;
                }
            }
        }
    }
    if bad > 0 {
        eprintln!("acp-proxy: {bad} line(s) of the dump could not be read (see above)");
    }
    out.flush()?;
    Ok(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_in_every_accepted_form() {
        assert_eq!(parse_time("90").expect("t"), TimeBound::Offset(90.0));
        assert_eq!(parse_time("1.5m").expect("t"), TimeBound::Offset(90.0));
        assert_eq!(parse_time("2h").expect("t"), TimeBound::Offset(7200.0));
        assert_eq!(
            parse_time("14:03:07.5").expect("t"),
            TimeBound::TimeOfDay(14.0 * 3600.0 + 3.0 * 60.0 + 7.5)
        );
        let TimeBound::Absolute(t) = parse_time("2026-12-01T14:03:07Z").expect("t") else {
            panic!("absolute")
        };
        assert_eq!(date_time(t), "2026-12-01 14:03:07");
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("-3").is_err());
        assert_eq!(
            TimeBound::TimeOfDay(3600.0).resolve(86_400.0 * 3.0 + 5.0),
            86_400.0 * 3.0 + 3600.0
        );
    }

    #[test]
    fn globs_and_directions() {
        assert!(glob("session/*", "session/prompt"));
        assert!(glob("*chunk", "agent_message_chunk"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("session/*", "fs/read_text_file"));
        assert!(!glob("tool_call", "tool_call_update"));
        assert_eq!(
            parse_direction("agent").expect("dir"),
            [Direction::ProxyToAgent, Direction::AgentToProxy]
        );
        assert_eq!(
            parse_direction("p2c").expect("dir"),
            [Direction::ProxyToClient]
        );
        assert_eq!(
            parse_direction("proxy→client").expect("dir"),
            [Direction::ProxyToClient]
        );
        assert!(parse_direction("sideways").is_err());
    }
}
