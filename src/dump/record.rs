//! Traffic dump: a JSONL record of every frame, written off the relay's hot path.
//!
//! The relay hands frames to [`Dump::frame`], which never blocks: records go through a
//! bounded queue to a writer task. If the queue is full the frame is counted as lost and the
//! loss is written into the dump (and reported on stderr) as soon as there is room again.
//! Past `[dump] max_bytes` the file is rotated (`PATH` → `PATH.1` → …), each part starting
//! with a header of its own. The format is described in `docs/dump-format.md`.
//!
//! Every run appends to the configured path, so that restarts and proxies running at the
//! same time all keep their record: each batch is written under an exclusive `flock` of the
//! current file, after a header of the run wherever another run wrote since (see [`Output`]).

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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    #[default]
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

/// Header line, first in every dump file (every part of a rotated dump has one), and again
/// wherever a run's records resume after another run's in the same file. The one type the
/// proxy writes and the tools read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT_NAME`] (empty when a line lacks it: not a header).
    #[serde(default)]
    pub format: String,
    /// The format version (0 when a line lacks it).
    #[serde(default)]
    pub version: u64,
    #[serde(default)]
    pub proxy_version: String,
    #[serde(default)]
    pub agent_command: Vec<String>,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub redacted: bool,
    /// One id for every part of one proxy run's dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// 1 for the first file of a run, then 2, 3, … for each file it went on in.
    #[serde(default = "first_part")]
    pub part: u64,
    /// The settings that decide what the engine does (the keys of `proxy.toml`), so that a
    /// replay can use the same ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
    /// A regression case made by `replay --emit-test`: its name and where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<serde_json::Value>,
}

fn first_part() -> u64 {
    1
}

/// Every line after a header: one record. The one type the proxy writes and the tools read;
/// the field order is the order they have in the file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordLine {
    /// When the proxy handled it: Unix seconds with a fraction.
    #[serde(default)]
    pub ts: f64,
    pub dir: Direction,
    /// (`proxy-note`) this many frames were not recorded because the dump fell behind.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_frames: u64,
    /// A piece of a line longer than `max_frame_bytes`; the line goes on in the next record
    /// of the same `dir`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub partial: bool,
    /// An agent line that came in the same read as the agent line recorded before it (the
    /// engine took them as one run, and a replay does too).
    #[serde(default, skip_serializing_if = "is_false")]
    pub same_read: bool,
    /// The line as it was on the wire, without its terminator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
    /// (`proxy-note`) the diagnostic's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub invalid_utf8: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub invalid_json: bool,
    /// The frame held a secret: it is stored re-serialised with the secret replaced.
    #[serde(default, skip_serializing_if = "is_false")]
    pub redacted: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Dump {
    /// Open the dump file for appending (created with mode 0600), write this run's header,
    /// and start the writer task.
    pub fn open(
        path: &Path,
        agent_command: &[String],
        cfg: &DumpConfig,
        settings: serde_json::Value,
    ) -> Result<(Dump, tokio::task::JoinHandle<()>), DumpError> {
        let redact = cfg.redact;
        let file = open_append_private(path).map_err(|source| DumpError::Create {
            path: path.to_owned(),
            source,
        })?;
        let shown_command = if redact {
            crate::redact::redact_command(agent_command)
        } else {
            agent_command.to_vec()
        };
        let run = run_id();
        let header = Header {
            format: FORMAT_NAME.to_owned(),
            version: u64::from(FORMAT_VERSION),
            proxy_version: env!("CARGO_PKG_VERSION").to_owned(),
            agent_command: shown_command,
            started_at: rfc3339_now(),
            redacted: redact,
            run: Some(run.clone()),
            part: 1,
            config: Some(settings),
            case: None,
        };
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        let rotation = Rotation::new(path, regular, cfg.max_bytes, cfg.max_files);
        let mut out = Output {
            file,
            path: path.to_owned(),
            header,
            rotation,
            regular,
            end: None,
        };
        out.write_lines(&[]).map_err(|source| DumpError::Write {
            path: path.to_owned(),
            source,
        })?;
        tracing::info!(
            "traffic dump of this run (run {run}) appended to {}",
            path.display()
        );
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

/// `PID-MILLISECONDS`, unique among the runs sharing a path (a process that opens several
/// dumps adds a counter).
fn run_id() -> String {
    static OPENED: AtomicU64 = AtomicU64::new(0);
    let id = format!("{}-{}", std::process::id(), (unix_now() * 1000.0) as u64);
    match OPENED.fetch_add(1, Ordering::Relaxed) {
        0 => id,
        n => format!("{id}-{n}"),
    }
}

/// The dump file being written: shared with every other proxy run configured with the same
/// path. Each batch is written under an exclusive `flock` of the file `PATH` names at that
/// moment (another run may have rotated the one this run opened), preceded by this run's
/// header when the file does not end where this run's last write did (another run wrote
/// since, or the file is new). Rotation happens under the same lock, so the limits hold for
/// all runs together.
struct Output {
    file: std::fs::File,
    path: PathBuf,
    header: Header,
    rotation: Option<Rotation>,
    /// A regular file (a FIFO or a terminal is neither locked nor rotated).
    regular: bool,
    /// Where this run's last write ended in `file`, when that is still the end of it.
    end: Option<u64>,
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
    fn new(path: &Path, regular: bool, max_bytes: u64, files: u32) -> Option<Rotation> {
        if max_bytes == 0 {
            return None;
        }
        if !regular {
            tracing::info!(
                "dump {} is not a regular file: max_bytes does not apply",
                path.display()
            );
            return None;
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

/// An exclusive lock on a file, released when dropped.
struct Locked<'a>(&'a std::fs::File);

impl<'a> Locked<'a> {
    fn new(file: &'a std::fs::File) -> std::io::Result<Locked<'a>> {
        crate::platform::lock_exclusive(file)?;
        Ok(Locked(file))
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // Closing the file would release the lock too.
        let _ = crate::platform::unlock(self.0);
    }
}

fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    crate::platform::file_identity(a) == crate::platform::file_identity(b)
}

impl Output {
    /// This run's header as a line.
    fn header_line(&self) -> std::io::Result<Vec<u8>> {
        let mut line = serde_json::to_vec(&self.header)?;
        line.push(b'\n');
        Ok(line)
    }

    /// Write these record lines (each ending in `\n`), with a header first wherever one is
    /// needed, rotating as the limits require. With no lines, only makes sure the file has
    /// this run's header at its end.
    fn write_lines(&mut self, lines: &[Vec<u8>]) -> std::io::Result<()> {
        if !self.regular {
            let mut buf = if self.end.is_none() {
                self.header_line()?
            } else {
                Vec::new()
            };
            lines.iter().for_each(|l| buf.extend_from_slice(l));
            self.file.write_all(&buf)?;
            self.end = Some(0);
            return Ok(());
        }
        let mut next = 0;
        loop {
            self.follow_path()?;
            let rotate = {
                let file = self.file.try_clone()?;
                let _lock = Locked::new(&file)?;
                if !self.still_at_path()? {
                    // Rotated away while this run waited for the lock.
                    continue;
                }
                self.write_locked(lines, &mut next)?
            };
            match rotate {
                Some(rot) => {
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
                None => return Ok(()),
            }
        }
    }

    /// Whether the open file is still the one `PATH` names.
    fn still_at_path(&self) -> std::io::Result<bool> {
        let mine = self.file.metadata()?;
        Ok(match std::fs::metadata(&self.path) {
            Ok(at_path) => same_file(&mine, &at_path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(e),
        })
    }

    /// After another run rotated the file (or it was removed), go on in the one `PATH` names
    /// now: the next part of this run.
    fn follow_path(&mut self) -> std::io::Result<()> {
        if self.still_at_path()? {
            return Ok(());
        }
        self.file = open_append_private(&self.path)?;
        if self.end.is_some() {
            self.header.part += 1;
            self.header.started_at = rfc3339_now();
        }
        self.end = None;
        Ok(())
    }

    /// Under the lock: append a header if needed and the lines from `next` on. Returns the
    /// rotation to do first when the next line would take the file past its share.
    fn write_locked(
        &mut self,
        lines: &[Vec<u8>],
        next: &mut usize,
    ) -> std::io::Result<Option<Rotation>> {
        let len = self.file.metadata()?.len();
        let mut buf = Vec::new();
        if self.end != Some(len) {
            buf = self.header_line()?;
        }
        let header_only = buf.len();
        let mut rotate = None;
        while let Some(line) = lines.get(*next) {
            if let Some(rot) = self.rotation {
                let size = len + (buf.len() + line.len()) as u64;
                // A file holding only a header takes the record whole, however large.
                let holds_records = len > 0 || buf.len() > header_only;
                if size > rot.file_bytes && holds_records {
                    rotate = Some(rot);
                    break;
                }
            }
            buf.extend_from_slice(line);
            *next += 1;
        }
        if rotate.is_some() && buf.len() == header_only && len > 0 {
            // Nothing of this run's to add before the rotation.
            buf.clear();
        }
        if !buf.is_empty() {
            self.file.write_all(&buf)?;
        }
        self.end = (len > 0 || !buf.is_empty()).then_some(len + buf.len() as u64);
        Ok(rotate)
    }

    /// `PATH.(n-1)` → `PATH.n` …, `PATH` → `PATH.1`, then this run's next part goes on in a
    /// new `PATH`. Called without the lock held: the renames are checked again under it.
    fn rotate(&mut self, rot: Rotation) -> std::io::Result<()> {
        let file = self.file.try_clone()?;
        let _lock = Locked::new(&file)?;
        if !self.still_at_path()? {
            // Another run rotated it meanwhile.
            return Ok(());
        }
        let keep = rot.files - 1;
        if keep == 0 {
            return self.truncate_locked();
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
        // The next write finds `PATH` gone or new, and goes on there as the next part.
        Ok(())
    }

    fn restart_in_place(&mut self) -> std::io::Result<()> {
        let file = self.file.try_clone()?;
        let _lock = Locked::new(&file)?;
        self.truncate_locked()
    }

    /// Start the file over (under the lock), as this run's next part.
    fn truncate_locked(&mut self) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.header.part += 1;
        self.header.started_at = rfc3339_now();
        self.end = None;
        Ok(())
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
        let mut lines = Vec::with_capacity(batch.len() + 1);
        lines.extend(loss_note(&lost, &mut reported_lost));
        lines.extend(batch.iter().map(|rec| render(rec, redact)));
        if let Err(e) = write(&mut out, &lines) {
            return fail(e);
        }
    }
    // Frames lost after the last record was written still have to be accounted for.
    if let Some(note) = loss_note(&lost, &mut reported_lost) {
        if let Err(e) = write(&mut out, &[note]) {
            fail(e);
        }
    }
}

fn write(out: &mut Output, records: &[RecordLine]) -> std::io::Result<()> {
    let mut lines = Vec::with_capacity(records.len());
    for rec in records {
        let mut line = serde_json::to_vec(rec)?;
        line.push(b'\n');
        lines.push(line);
    }
    out.write_lines(&lines)
}

/// A note for frames lost since the last report (said on stderr too).
fn loss_note(lost: &AtomicU64, reported: &mut u64) -> Option<RecordLine> {
    let now_lost = lost.load(Ordering::Relaxed);
    if now_lost <= *reported {
        return None;
    }
    let n = now_lost - *reported;
    *reported = now_lost;
    tracing::warn!(
        lost = n,
        "traffic dump fell behind: {n} frame(s) not recorded"
    );
    Some(RecordLine {
        ts: unix_now(),
        dir: Direction::ProxyNote,
        lost_frames: n,
        note: Some(format!("dump fell behind: {n} frame(s) not recorded")),
        ..RecordLine::default()
    })
}

fn render(rec: &Record, redact: bool) -> RecordLine {
    match rec {
        Record::Note { ts, message } => RecordLine {
            ts: *ts,
            dir: Direction::ProxyNote,
            note: Some(message.clone()),
            ..RecordLine::default()
        },
        Record::Frame {
            ts,
            dir,
            bytes,
            same_read,
        } => {
            let body = crate::wire::line_body(bytes);
            let is_frame = *dir != Direction::AgentStderr;
            let mut rec = RecordLine {
                ts: *ts,
                dir: *dir,
                // A piece of a line longer than max_frame_bytes (the rest follows).
                partial: is_frame && !bytes.ends_with(b"\n"),
                same_read: *same_read,
                ..RecordLine::default()
            };
            let Ok(text) = std::str::from_utf8(body) else {
                rec.frame = Some(String::from_utf8_lossy(body).into_owned());
                rec.invalid_utf8 = true;
                rec.invalid_json = is_frame;
                return rec;
            };
            // Only a frame that held a secret is re-serialised; every other frame keeps its
            // exact text (numbers, escapes and key order as they were on the wire).
            rec.frame = Some(text.to_owned());
            if is_frame {
                match serde_json::from_str::<serde_json::Value>(text) {
                    Ok(mut v) => {
                        if redact && crate::redact::redact(&mut v) {
                            rec.frame = Some(v.to_string());
                            rec.redacted = true;
                        }
                    }
                    Err(_) => rec.invalid_json = true,
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
    render(&rec, redact).frame.unwrap_or_default()
}

/// Open a file for appending (created if missing), readable and writable by the owner only.
pub fn open_append_private(path: &Path) -> std::io::Result<std::fs::File> {
    let file = crate::platform::private_file(std::fs::OpenOptions::new().append(true).create(true))
        .open(path)?;
    // An existing file keeps its old mode on open: tighten it (not a FIFO or a terminal
    // someone else owns).
    if file.metadata().is_ok_and(|m| m.is_file()) {
        crate::platform::make_private(&file)?;
    }
    Ok(file)
}

/// Create (or truncate) a file readable and writable by the owner only.
pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let file = crate::platform::private_file(
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true),
    )
    .open(path)?;
    // An existing file keeps its old mode on open: tighten it.
    crate::platform::make_private(&file)?;
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
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
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
        serde_json::to_value(render(
            &Record::Frame {
                ts: 1.0,
                dir,
                bytes: Bytes::copy_from_slice(text),
                same_read: false,
            },
            redact,
        ))
        .expect("a record is JSON")
    }

    fn line(dir: Direction, text: &[u8]) -> String {
        let rec = render(
            &Record::Frame {
                ts: 1.5,
                dir,
                bytes: Bytes::copy_from_slice(text),
                same_read: false,
            },
            true,
        );
        let line = serde_json::to_string(&rec).expect("a record is JSON");
        let back: RecordLine = serde_json::from_str(&line).expect("read back");
        assert_eq!(back, rec, "read as written");
        line
    }

    #[test]
    fn records_are_written_byte_for_byte_as_format_version_1_has_them() {
        assert_eq!(
            line(Direction::ClientToProxy, b"{\"id\":1}\n"),
            r#"{"ts":1.5,"dir":"client→proxy","frame":"{\"id\":1}"}"#
        );
        assert_eq!(
            line(Direction::AgentToProxy, b"\xff{"),
            r#"{"ts":1.5,"dir":"agent→proxy","partial":true,"frame":"�{","invalid_utf8":true,"invalid_json":true}"#
        );
        assert_eq!(
            line(Direction::ProxyToAgent, b"{\"apiKey\":\"sk-1\"}\n"),
            r#"{"ts":1.5,"dir":"proxy→agent","frame":"{\"apiKey\":\"[redacted]\"}","redacted":true}"#
        );
        assert_eq!(
            line(Direction::AgentStderr, b"log {\n"),
            r#"{"ts":1.5,"dir":"agent-stderr","frame":"log {"}"#
        );
        let lost = AtomicU64::new(3);
        let note = serde_json::to_string(&loss_note(&lost, &mut 0).expect("a note")).expect("JSON");
        assert!(
            note.contains(r#""dir":"proxy-note","lost_frames":3,"note":"dump fell behind: 3 frame(s) not recorded"}"#),
            "{note}"
        );
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

    /// The runtime the dump's writer task runs on in these tests.
    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
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
        let rt = runtime();
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

    #[test]
    fn runs_sharing_a_path_append_and_keep_the_limits_together() {
        use crate::dump::reader::{Item, ReadOptions, Reader};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.jsonl");
        let cfg = DumpConfig {
            max_bytes: 9000,
            max_files: 3,
            ..DumpConfig::default()
        };
        let rt = runtime();
        // An earlier run's record is kept (it is appended to, not truncated).
        std::fs::write(&path, "").expect("an empty file");
        rt.block_on(async {
            let open = || {
                Dump::open(&path, &["agent".to_owned()], &cfg, serde_json::json!({}))
                    .expect("open the dump")
            };
            let (a, ta) = open();
            let (b, tb) = open();
            for n in 0..200 {
                for (dump, who) in [(&a, "a"), (&b, "b")] {
                    let line = format!("{{\"who\":\"{who}\",\"n\":{n}}}\n");
                    dump.frame(Direction::AgentToProxy, &Bytes::from(line));
                }
                tokio::time::sleep(std::time::Duration::from_micros(200)).await;
            }
            drop((a, b));
            ta.await.expect("writer");
            tb.await.expect("writer");
        });
        assert!(!rotated_path(&path, 3).exists(), "at most max_files files");
        let mut total = 0;
        for p in [rotated_path(&path, 2), rotated_path(&path, 1), path.clone()] {
            let len = std::fs::metadata(&p).expect("part exists").len();
            assert!(len <= 3000, "{}: {len} bytes", p.display());
            total += len;
        }
        assert!(total <= 9000);
        // Read from the path alone: its parts, run after run, each run's frames in order and
        // without a gap up to its last one.
        let mut reader =
            Reader::open(std::slice::from_ref(&path), ReadOptions::default()).expect("read");
        let mut runs: Vec<(String, Vec<u64>)> = Vec::new();
        while let Some(item) = reader.next_item().expect("item") {
            match item {
                Item::File(info) => {
                    let run = info.run.expect("a run id");
                    if runs.last().is_none_or(|(r, _)| *r != run) {
                        assert!(runs.iter().all(|(r, _)| *r != run), "{run} read in one go");
                        runs.push((run, Vec::new()));
                    }
                }
                Item::Record(r) => {
                    let v: serde_json::Value =
                        serde_json::from_str(r.frame.as_deref().expect("frame")).expect("JSON");
                    let (_, ns) = runs.last_mut().expect("a run first");
                    ns.push(v["n"].as_u64().expect("n"));
                    let who = v["who"].as_str().expect("who");
                    assert!(
                        runs.iter().filter(|(_, ns)| !ns.is_empty()).count() <= 2,
                        "{who}"
                    );
                }
                Item::Bad(b) => panic!("damaged: {b:?}"),
            }
        }
        assert_eq!(runs.len(), 2, "{runs:?}");
        for (run, ns) in &runs {
            assert!(ns.windows(2).all(|w| w[1] == w[0] + 1), "{run}: {ns:?}");
            assert_eq!(ns.last(), Some(&199), "{run}");
        }
    }
}
