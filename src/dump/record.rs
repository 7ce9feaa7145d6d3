//! Traffic dump: a JSONL record of every frame, written off the relay's hot path.
//!
//! The relay hands frames to [`Dump::frame`], which never blocks: records go through a
//! bounded queue to a writer task. If the queue is full the frame is counted as lost and the
//! loss is written into the dump (and reported on stderr) as soon as there is room again.
//! Past `[dump] max_bytes` the file is rotated (`PATH` → `PATH.1` → …), each part starting
//! with a header of its own. The format is described in `docs/dump-format.md`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// Format version written in the header; bump when a record changes meaning (a reader that
/// ignores fields it does not know must still read a dump of the same version correctly).
pub const FORMAT_VERSION: u32 = 1;

/// The `format` value of every header.
pub const FORMAT_NAME: &str = "acp-proxy-dump";

/// Default `[dump] max_bytes`: a proxy left running for days keeps at most this on disk.
pub const DEFAULT_MAX_BYTES: u64 = 1024 * 1024 * 1024;
/// Default `[dump] max_files`: the current file and three rotated ones.
pub const DEFAULT_MAX_FILES: u32 = 4;

/// `[dump]` in `proxy.toml`: where the traffic dump goes and how much disk it may use.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DumpConfig {
    /// Write a JSONL traffic dump here (no dump when unset).
    pub path: Option<PathBuf>,
    /// Redact secrets (env values, headers, authenticate params, token-like keys).
    pub redact: bool,
    /// Frames the dump may have queued before it starts counting losses.
    pub queue_frames: usize,
    /// Disk the dump may use, rotated files included (0: no limit).
    #[serde(
        deserialize_with = "crate::units::de_bytes",
        serialize_with = "crate::units::ser_bytes"
    )]
    pub max_bytes: u64,
    /// Files the dump is spread over: the current one and `max_files - 1` rotated ones.
    pub max_files: u32,
}

impl Default for DumpConfig {
    fn default() -> Self {
        DumpConfig {
            path: None,
            redact: true,
            queue_frames: 4096,
            max_bytes: DEFAULT_MAX_BYTES,
            max_files: DEFAULT_MAX_FILES,
        }
    }
}

/// Where a frame was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    #[serde(rename = "client→proxy")]
    ClientToProxy,
    #[serde(rename = "proxy→agent")]
    ProxyToAgent,
    #[serde(rename = "agent→proxy")]
    AgentToProxy,
    #[serde(rename = "proxy→client")]
    ProxyToClient,
    #[serde(rename = "agent-stderr")]
    AgentStderr,
    /// A diagnostic of the proxy itself (engine notes, losses).
    #[serde(rename = "proxy-note")]
    ProxyNote,
}

#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("cannot create dump file {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write dump file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot rotate dump file {path}: {source}")]
    Rotate {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Direction {
    /// The name used in the dump (`client→proxy`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToProxy => "client→proxy",
            Direction::ProxyToAgent => "proxy→agent",
            Direction::AgentToProxy => "agent→proxy",
            Direction::ProxyToClient => "proxy→client",
            Direction::AgentStderr => "agent-stderr",
            Direction::ProxyNote => "proxy-note",
        }
    }

    /// Every direction, in the order of a frame's path.
    pub const ALL: [Direction; 6] = [
        Direction::ClientToProxy,
        Direction::ProxyToAgent,
        Direction::AgentToProxy,
        Direction::ProxyToClient,
        Direction::AgentStderr,
        Direction::ProxyNote,
    ];

    pub fn parse(name: &str) -> Option<Direction> {
        Direction::ALL.into_iter().find(|d| d.as_str() == name)
    }

    /// A frame the proxy received (the engine's input).
    pub fn is_input(self) -> bool {
        matches!(self, Direction::ClientToProxy | Direction::AgentToProxy)
    }

    /// A frame the proxy wrote (the engine's output).
    pub fn is_output(self) -> bool {
        matches!(self, Direction::ProxyToAgent | Direction::ProxyToClient)
    }
}

enum Record {
    Frame {
        ts: f64,
        dir: Direction,
        bytes: Bytes,
        /// An agent line that came in the same read as the agent line recorded before it.
        same_read: bool,
    },
    Note {
        ts: f64,
        message: String,
    },
}

/// Handle used by the relay. Cheap to clone.
#[derive(Clone)]
pub struct Dump {
    tx: mpsc::Sender<Record>,
    lost: Arc<AtomicU64>,
}

/// Header line, first in every dump file (every part of a rotated dump has one).
#[derive(Debug, Clone, Serialize)]
pub struct Header {
    pub format: &'static str,
    pub version: u32,
    pub proxy_version: &'static str,
    pub agent_command: Vec<String>,
    pub started_at: String,
    pub redacted: bool,
    /// One id for every part of one proxy run's dump.
    pub run: String,
    /// 1 for the first file of a run, then 2, 3, … after each rotation.
    pub part: u64,
    /// The settings that decide what the engine does (the keys of `proxy.toml`), so that a
    /// replay can use the same ones.
    pub config: serde_json::Value,
}

impl Dump {
    /// Create the dump file (mode 0600), write the header, and start the writer task.
    pub fn open(
        path: &Path,
        agent_command: &[String],
        cfg: &DumpConfig,
        settings: serde_json::Value,
    ) -> Result<(Dump, tokio::task::JoinHandle<()>), DumpError> {
        let redact = cfg.redact;
        let file = create_private(path).map_err(|source| DumpError::Create {
            path: path.to_owned(),
            source,
        })?;
        let shown_command = if redact {
            crate::redact::redact_command(agent_command)
        } else {
            agent_command.to_vec()
        };
        let header = Header {
            format: FORMAT_NAME,
            version: FORMAT_VERSION,
            proxy_version: env!("CARGO_PKG_VERSION"),
            agent_command: shown_command,
            started_at: rfc3339_now(),
            redacted: redact,
            run: format!("{}-{}", std::process::id(), (unix_now() * 1000.0) as u64),
            part: 1,
            config: settings,
        };
        let rotation = Rotation::new(path, &file, cfg.max_bytes, cfg.max_files);
        let mut out = Output {
            file: std::io::BufWriter::new(file),
            written: 0,
            path: path.to_owned(),
            header,
            rotation,
        };
        out.write_header().map_err(|source| DumpError::Write {
            path: path.to_owned(),
            source,
        })?;
        let (tx, rx) = mpsc::channel(cfg.queue_frames.max(1));
        let lost = Arc::new(AtomicU64::new(0));
        let task = tokio::task::spawn_blocking({
            let lost = lost.clone();
            move || writer(out, rx, lost, redact)
        });
        Ok((Dump { tx, lost }, task))
    }

    /// Record one frame. Never blocks; a full queue counts the frame as lost.
    pub fn frame(&self, dir: Direction, bytes: &Bytes) {
        self.send_frame(dir, bytes, false);
    }

    /// Record one line from the agent; `same_read`: it came in the same read as the agent
    /// line recorded before it (the engine took them as one run, and a replay does too).
    pub fn agent_line(&self, bytes: &Bytes, same_read: bool) {
        self.send_frame(Direction::AgentToProxy, bytes, same_read);
    }

    fn send_frame(&self, dir: Direction, bytes: &Bytes, same_read: bool) {
        let rec = Record::Frame {
            ts: unix_now(),
            dir,
            bytes: bytes.clone(),
            same_read,
        };
        if self.tx.try_send(rec).is_err() {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Record a diagnostic of the proxy.
    pub fn note(&self, message: impl Into<String>) {
        let rec = Record::Note {
            ts: unix_now(),
            message: message.into(),
        };
        if self.tx.try_send(rec).is_err() {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The dump file being written, and when to rotate it.
struct Output {
    file: std::io::BufWriter<std::fs::File>,
    /// Bytes in the current file.
    written: u64,
    path: PathBuf,
    header: Header,
    rotation: Option<Rotation>,
}

/// `[dump] max_bytes` spread over the current file and `max_files - 1` rotated ones.
#[derive(Debug, Clone, Copy)]
struct Rotation {
    /// A file is rotated before a record would take it past this size.
    file_bytes: u64,
    /// Files kept, the current one included.
    files: u32,
}

impl Rotation {
    /// None when there is no limit, or when the dump is not a regular file (a FIFO, a
    /// terminal): those cannot be rotated.
    fn new(path: &Path, file: &std::fs::File, max_bytes: u64, files: u32) -> Option<Rotation> {
        if max_bytes == 0 {
            return None;
        }
        match file.metadata() {
            Ok(m) if m.is_file() => {}
            _ => {
                tracing::info!(
                    "dump {} is not a regular file: max_bytes does not apply",
                    path.display()
                );
                return None;
            }
        }
        let files = files.max(1);
        Some(Rotation {
            file_bytes: (max_bytes / u64::from(files)).max(1),
            files,
        })
    }
}

/// `PATH.N`: the Nth most recent rotated part.
pub fn rotated_path(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

impl Output {
    fn write_header(&mut self) -> std::io::Result<()> {
        self.header.started_at = rfc3339_now();
        let mut line = serde_json::to_vec(&self.header)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.written = line.len() as u64;
        self.file.flush()
    }

    /// Write one record, rotating first if it would take the file past its share.
    fn write_record(&mut self, value: &serde_json::Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        if let Some(rot) = self.rotation {
            if self.written > 0 && self.written + line.len() as u64 > rot.file_bytes {
                if let Err(source) = self.rotate(rot) {
                    // Keep the bound on disk use even so: start this file over.
                    tracing::error!(
                        "{}: starting it over",
                        DumpError::Rotate {
                            path: self.path.clone(),
                            source
                        }
                    );
                    self.restart_in_place()?;
                }
            }
        }
        self.file.write_all(&line)?;
        self.written += line.len() as u64;
        Ok(())
    }

    /// `PATH.(n-1)` → `PATH.n` …, `PATH` → `PATH.1`, then a new `PATH` with its own header.
    fn rotate(&mut self, rot: Rotation) -> std::io::Result<()> {
        self.file.flush()?;
        let keep = rot.files - 1;
        if keep == 0 {
            return self.restart_in_place();
        }
        match std::fs::remove_file(rotated_path(&self.path, keep)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        for n in (1..keep).rev() {
            match std::fs::rename(rotated_path(&self.path, n), rotated_path(&self.path, n + 1)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::rename(&self.path, rotated_path(&self.path, 1))?;
        self.file = std::io::BufWriter::new(create_private(&self.path)?);
        self.header.part += 1;
        self.write_header()
    }

    fn restart_in_place(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        let f = self.file.get_mut();
        f.set_len(0)?;
        std::io::Seek::seek(f, std::io::SeekFrom::Start(0))?;
        self.header.part += 1;
        self.write_header()
    }
}

fn writer(mut out: Output, mut rx: mpsc::Receiver<Record>, lost: Arc<AtomicU64>, redact: bool) {
    let mut reported_lost = 0u64;
    let path = out.path.clone();
    let fail = |e: std::io::Error| {
        tracing::error!(
            "{}",
            DumpError::Write {
                path: path.clone(),
                source: e
            }
        );
    };
    while let Some(rec) = rx.blocking_recv() {
        let mut batch = vec![rec];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        let mut result = report_loss(&mut out, &lost, &mut reported_lost);
        for rec in batch {
            if result.is_err() {
                break;
            }
            result = out.write_record(&render(&rec, redact));
        }
        if let Err(e) = result.and_then(|_| out.file.flush()) {
            return fail(e);
        }
    }
    // Frames lost after the last record was written still have to be accounted for.
    if let Err(e) = report_loss(&mut out, &lost, &mut reported_lost).and_then(|_| out.file.flush())
    {
        fail(e);
    }
}

/// Write a note for frames lost since the last report (and say so on stderr).
fn report_loss(out: &mut Output, lost: &AtomicU64, reported: &mut u64) -> std::io::Result<()> {
    let now_lost = lost.load(Ordering::Relaxed);
    if now_lost <= *reported {
        return Ok(());
    }
    let n = now_lost - *reported;
    *reported = now_lost;
    tracing::warn!(
        lost = n,
        "traffic dump fell behind: {n} frame(s) not recorded"
    );
    out.write_record(
        &serde_json::json!({"ts": unix_now(), "dir": Direction::ProxyNote,
            "lost_frames": n, "note": format!("dump fell behind: {n} frame(s) not recorded")}),
    )
}

fn render(rec: &Record, redact: bool) -> serde_json::Value {
    match rec {
        Record::Note { ts, message } => {
            serde_json::json!({"ts": ts, "dir": Direction::ProxyNote, "note": message})
        }
        Record::Frame {
            ts,
            dir,
            bytes,
            same_read,
        } => {
            let body = crate::wire::line_body(bytes);
            let mut rec = serde_json::json!({"ts": ts, "dir": dir});
            let is_frame = *dir != Direction::AgentStderr;
            if is_frame && !bytes.ends_with(b"\n") {
                // A piece of a line longer than max_frame_bytes (the rest follows).
                rec["partial"] = true.into();
            }
            if *same_read {
                rec["same_read"] = true.into();
            }
            let Ok(text) = std::str::from_utf8(body) else {
                rec["frame"] = String::from_utf8_lossy(body).into_owned().into();
                rec["invalid_utf8"] = true.into();
                if is_frame {
                    rec["invalid_json"] = true.into();
                }
                return rec;
            };
            // Only a frame that held a secret is re-serialised; every other frame keeps its
            // exact text (numbers, escapes and key order as they were on the wire).
            rec["frame"] = text.into();
            if is_frame {
                match serde_json::from_str::<serde_json::Value>(text) {
                    Ok(mut v) => {
                        if redact && crate::redact::redact(&mut v) {
                            rec["frame"] = v.to_string().into();
                            rec["redacted"] = true.into();
                        }
                    }
                    Err(_) => rec["invalid_json"] = true.into(),
                }
            }
            rec
        }
    }
}

/// The `frame` text the dump records for these bytes (a replay compares its output with
/// the dump through this).
pub fn recorded_text(dir: Direction, bytes: &Bytes, redact: bool) -> String {
    let rec = Record::Frame {
        ts: 0.0,
        dir,
        bytes: bytes.clone(),
        same_read: false,
    };
    match render(&rec, redact)
        .get_mut("frame")
        .map(serde_json::Value::take)
    {
        Some(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Create (or truncate) a file readable and writable by the owner only.
pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its old mode on open: tighten it.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn rfc3339_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dir: Direction, text: &[u8], redact: bool) -> serde_json::Value {
        render(
            &Record::Frame {
                ts: 1.0,
                dir,
                bytes: Bytes::copy_from_slice(text),
                same_read: false,
            },
            redact,
        )
    }

    #[test]
    fn frames_without_secrets_keep_their_exact_text() {
        let raw =
            r#"{"id":18446744073709551616,"method":"_x/y","params":{"n":1.0e3,"s":"\u00e9\/"}}"#;
        let rec = frame(
            Direction::ClientToProxy,
            format!("{raw}\r\n").as_bytes(),
            true,
        );
        assert_eq!(rec["frame"], raw);
        assert!(rec.get("redacted").is_none() && rec.get("invalid_json").is_none());
    }

    #[test]
    fn frames_with_secrets_are_redacted_and_marked() {
        let raw = r#"{"id":1,"method":"authenticate","params":{"methodId":"m","apiKey":"sk-9"}}"#;
        let rec = frame(Direction::ProxyToAgent, raw.as_bytes(), true);
        let text = rec["frame"].as_str().expect("frame is a string");
        assert!(!text.contains("sk-9") && text.contains("\"m\""), "{text}");
        assert_eq!(rec["redacted"], true);
        assert_eq!(
            frame(Direction::ProxyToAgent, raw.as_bytes(), false)["frame"],
            raw
        );
    }

    #[test]
    fn invalid_frames_are_flagged_but_stderr_is_not() {
        assert_eq!(
            frame(Direction::AgentToProxy, b"{oops\n", true)["invalid_json"],
            true
        );
        let bad = frame(Direction::AgentToProxy, b"\xff\n", true);
        assert_eq!(
            (&bad["invalid_json"], &bad["invalid_utf8"]),
            (&true.into(), &true.into())
        );
        assert!(frame(Direction::AgentStderr, b"log line\n", true)
            .get("invalid_json")
            .is_none());
    }

    #[test]
    fn pieces_of_an_oversized_line_are_marked_partial() {
        let piece = frame(Direction::AgentToProxy, b"{\"jsonrpc\":\"2.0\",\"par", true);
        assert_eq!(piece["partial"], true);
        assert_eq!(piece["invalid_json"], true);
        assert!(frame(Direction::AgentToProxy, b"{}\n", true)
            .get("partial")
            .is_none());
    }

    fn read_lines(path: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .expect("dump part")
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect()
    }

    #[test]
    fn past_max_bytes_the_dump_rotates_and_keeps_max_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.jsonl");
        let cfg = DumpConfig {
            max_bytes: 6000,
            max_files: 3,
            ..DumpConfig::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let (dump, task) =
                Dump::open(&path, &["agent".to_owned()], &cfg, serde_json::json!({}))
                    .expect("open the dump");
            for n in 0..300 {
                let line =
                    format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{{\"n\":{n}}}}}\n");
                dump.frame(Direction::AgentToProxy, &Bytes::from(line));
                if n % 10 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            drop(dump);
            task.await.expect("writer");
        });
        assert!(!rotated_path(&path, 3).exists(), "at most max_files files");
        let mut total = 0;
        let mut parts = Vec::new();
        let mut numbers = Vec::new();
        for p in [rotated_path(&path, 2), rotated_path(&path, 1), path.clone()] {
            let len = std::fs::metadata(&p).expect("part exists").len();
            assert!(len <= 2000, "{}: {len} bytes", p.display());
            total += len;
            let lines = read_lines(&p);
            assert_eq!(lines[0]["format"], FORMAT_NAME);
            assert_eq!(lines[0]["run"], read_lines(&path)[0]["run"]);
            parts.push(lines[0]["part"].as_u64().expect("part"));
            for l in &lines[1..] {
                let frame: serde_json::Value =
                    serde_json::from_str(l["frame"].as_str().expect("frame")).expect("JSON");
                numbers.push(frame["params"]["n"].as_u64().expect("n"));
            }
        }
        assert!(total <= 6000);
        assert!(parts.windows(2).all(|w| w[1] == w[0] + 1), "{parts:?}");
        // The most recent frames are kept, in order and without a gap, up to the last one.
        assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
        assert_eq!(numbers.last(), Some(&299));
    }
}
