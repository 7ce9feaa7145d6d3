//! Reading a dump as a stream: one record at a time, in bounded memory (the largest single
//! record), across the parts of a rotated dump, optionally following a dump being written.
//!
//! Every file must start with a header this version can read: a file that is not a dump, or
//! one written in a newer format version, is refused with a message that says so.

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::record::{rotated_path, Direction, Header, RecordLine, FORMAT_NAME, FORMAT_VERSION};

/// A record line longer than this is skipped (and reported) instead of held in memory.
pub const MAX_RECORD_BYTES: usize = 512 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read dump {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not an acp-proxy dump: {why}")]
    NotADump { path: PathBuf, why: String },
    #[error(
        "{path} is a dump in format version {found}, newer than this acp-proxy ({}) can read \
         (version {FORMAT_VERSION}): read it with the acp-proxy that wrote it ({proxy}) or a newer one",
        env!("CARGO_PKG_VERSION")
    )]
    NewerVersion {
        path: PathBuf,
        found: u64,
        proxy: String,
    },
}

/// The header of one dump file.
#[derive(Debug, Clone)]
pub struct FileInfo {
    pub path: PathBuf,
    pub version: u64,
    pub proxy_version: String,
    pub agent_command: Vec<String>,
    pub started_at: String,
    pub redacted: bool,
    pub run: Option<String>,
    pub part: u64,
    /// The engine settings the proxy ran with (`proxy.toml` keys), when recorded.
    pub config: Option<Value>,
    /// File size when opened (for progress).
    pub size: u64,
    /// The header line as it is in the file.
    pub raw: String,
}

/// One record of a dump.
#[derive(Debug, Clone)]
pub struct Record {
    /// Which of the files given to the reader it is in (index into [`Reader::files`]).
    pub file: usize,
    /// 1-based line number in that file (the header is line 1).
    pub line: u64,
    pub ts: f64,
    pub dir: Direction,
    /// The frame's text (a protocol frame, or a line of the agent's stderr).
    pub frame: Option<String>,
    /// A note of the proxy.
    pub note: Option<String>,
    pub lost_frames: u64,
    pub invalid_json: bool,
    pub invalid_utf8: bool,
    pub redacted: bool,
    /// A piece of an oversized line that continues in the next record of this direction.
    pub partial: bool,
    /// An agent line that came in the same read as the agent line before it (one run).
    pub same_read: bool,
    /// The record exactly as it is in the file.
    pub raw: String,
}

impl Record {
    /// The JSON-RPC messages of a frame: usually one, several when the proxy wrote more than
    /// one line at once. Empty for notes and stderr.
    pub fn messages(&self) -> impl Iterator<Item = &str> {
        let text = match (&self.frame, self.dir) {
            (_, Direction::AgentStderr | Direction::ProxyNote) => None,
            (Some(f), _) => Some(f.as_str()),
            (None, _) => None,
        };
        text.into_iter()
            .flat_map(|t| t.split('\n'))
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .filter(|l| !l.trim().is_empty())
    }

    /// The text shown for this record: the frame, or the note.
    pub fn text(&self) -> &str {
        self.frame.as_deref().or(self.note.as_deref()).unwrap_or("")
    }
}

/// A line that is not a record (damaged, cut short, or too long).
#[derive(Debug, Clone)]
pub struct BadLine {
    pub file: usize,
    pub line: u64,
    pub why: String,
}

#[derive(Debug, Clone)]
pub enum Item {
    /// A new file starts (the first one, or the next part).
    File(FileInfo),
    Record(Record),
    Bad(BadLine),
}

/// Parse a header line, or say why it is not one.
pub fn parse_header(path: &Path, line: &[u8], size: u64) -> Result<FileInfo, ReadError> {
    let not = |why: String| ReadError::NotADump {
        path: path.to_owned(),
        why,
    };
    let text = std::str::from_utf8(line).map_err(|_| not("its first line is not UTF-8".into()))?;
    let h: Header = serde_json::from_str(text.trim_end())
        .map_err(|e| not(format!("its first line is not a dump header ({e})")))?;
    if h.format != FORMAT_NAME {
        return Err(not(format!(
            "its first line has no `\"format\": \"{FORMAT_NAME}\"`"
        )));
    }
    if h.version == 0 {
        return Err(not("its header has no format version (or 0)".into()));
    }
    if h.version > u64::from(FORMAT_VERSION) {
        return Err(ReadError::NewerVersion {
            path: path.to_owned(),
            found: h.version,
            proxy: if h.proxy_version.is_empty() {
                "unknown version".into()
            } else {
                format!("version {}", h.proxy_version)
            },
        });
    }
    Ok(FileInfo {
        path: path.to_owned(),
        version: h.version,
        proxy_version: h.proxy_version,
        agent_command: h.agent_command,
        started_at: h.started_at,
        redacted: h.redacted,
        run: h.run,
        part: h.part,
        config: h.config,
        size,
        raw: text.trim_end().to_owned(),
    })
}

/// Parse one record line.
pub fn parse_record(file: usize, line_no: u64, text: &str) -> Result<Record, String> {
    let rec: RecordLine =
        serde_json::from_str(text).map_err(|e| format!("not a dump record ({e})"))?;
    if rec.frame.is_none() && rec.note.is_none() {
        return Err("a record with neither `frame` nor `note`".into());
    }
    Ok(Record {
        file,
        line: line_no,
        ts: rec.ts,
        dir: rec.dir,
        frame: rec.frame,
        note: rec.note,
        lost_frames: rec.lost_frames,
        invalid_json: rec.invalid_json,
        invalid_utf8: rec.invalid_utf8,
        redacted: rec.redacted,
        partial: rec.partial,
        same_read: rec.same_read,
        raw: text.to_owned(),
    })
}

/// Options for [`Reader`].
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// At the end, wait for more (and for a rotation) instead of stopping.
    pub follow: bool,
    /// Show progress on stderr (only if stderr is a terminal).
    pub progress: bool,
}

struct Open {
    index: usize,
    reader: BufReader<File>,
    line: u64,
    read_bytes: u64,
    /// Bytes of a line not yet terminated (following a dump being written).
    pending: Vec<u8>,
    /// Skipping the rest of a line that was too long.
    skipping: bool,
    inode: u64,
    /// Where the segment being read ends (when the runs in the files are read one by one).
    end: Option<u64>,
}

/// A run's stretch of a file: from one of its headers to the next header in the file.
#[derive(Debug, Clone)]
struct Segment {
    file: usize,
    /// Offset of its header line.
    start: u64,
    /// Line number of its header line.
    line: u64,
    end: u64,
    /// Its run (a header without one is a run of its own).
    run: String,
}

/// What an [`Item::File`] stands for: the same file, run and part are announced once.
type FileKey = (usize, Option<String>, u64);

/// Reads the given dump files as one stream of records.
pub struct Reader {
    pub files: Vec<FileInfo>,
    next_file: usize,
    open: Option<Open>,
    opts: ReadOptions,
    progress: Option<Progress>,
    queued: std::collections::VecDeque<Item>,
    /// When runs are interleaved in the files (proxies running at the same time), the
    /// segments to read, run after run; otherwise the files are read straight through.
    plan: Option<std::collections::VecDeque<Segment>>,
    announced: Option<FileKey>,
}

fn inode_of(meta: &std::fs::Metadata) -> u64 {
    crate::platform::file_identity(meta)
}

fn open_file(path: &Path) -> Result<(BufReader<File>, FileInfo, u64, u64), ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut first = Vec::new();
    (&mut reader)
        .take(64 * 1024 * 1024)
        .read_until(b'\n', &mut first)
        .map_err(io)?;
    if first.is_empty() {
        return Err(ReadError::NotADump {
            path: path.to_owned(),
            why: "it is empty".into(),
        });
    }
    let info = parse_header(path, &first, meta.len())?;
    Ok((reader, info, first.len() as u64, inode_of(&meta)))
}

impl Reader {
    /// Open every file and check its header. A path brings its rotated parts (`PATH.1`, …)
    /// along; the parts of a rotated dump are put in order (oldest first), and the runs in
    /// them are read one after the other.
    pub fn open(paths: &[PathBuf], opts: ReadOptions) -> Result<Reader, ReadError> {
        let mut files = Vec::new();
        for p in dump_files(paths) {
            let (_, info, _, _) = open_file(&p)?;
            files.push(info);
        }
        let same_run = files
            .first()
            .and_then(|f| f.run.as_ref())
            .is_some_and(|run| files.iter().all(|f| f.run.as_ref() == Some(run)));
        if same_run {
            files.sort_by_key(|f| f.part);
        }
        // A followed dump is shown as it is written.
        let plan = if opts.follow {
            None
        } else {
            run_by_run(index_segments(&files)?)
        };
        let total: u64 = files.iter().map(|f| f.size).sum();
        let progress =
            (opts.progress && std::io::stderr().is_terminal()).then(|| Progress::new(total));
        Ok(Reader {
            files,
            next_file: 0,
            open: None,
            opts,
            progress,
            queued: Default::default(),
            plan,
            announced: None,
        })
    }

    /// Whether this header starts something not announced yet (another run, part or file).
    fn announce(&mut self, file: usize, info: &FileInfo) -> bool {
        let key = (file, info.run.clone(), info.part);
        if self.announced.as_ref() == Some(&key) {
            return false;
        }
        self.announced = Some(key);
        true
    }

    /// Open the next segment of the plan; None when there is none left.
    fn open_segment(&mut self) -> Result<Option<Item>, ReadError> {
        let Some(seg) = self.plan.as_mut().and_then(|p| p.pop_front()) else {
            return Ok(None);
        };
        let path = self.files[seg.file].path.clone();
        let io = |source| ReadError::Io {
            path: path.clone(),
            source,
        };
        let mut file = File::open(&path).map_err(io)?;
        let inode = inode_of(&file.metadata().map_err(io)?);
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(seg.start)).map_err(io)?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut header = Vec::new();
        (&mut reader)
            .take(64 * 1024 * 1024)
            .read_until(b'\n', &mut header)
            .map_err(io)?;
        let info = parse_header(&path, &header, self.files[seg.file].size)?;
        if let Some(p) = &mut self.progress {
            p.advance(header.len() as u64);
        }
        self.open = Some(Open {
            index: seg.file,
            reader,
            line: seg.line,
            read_bytes: seg.start + header.len() as u64,
            pending: Vec::new(),
            skipping: false,
            inode,
            end: Some(seg.end),
        });
        Ok(Some(Item::File(info)))
    }

    /// The next item, or None at the end (never, when following).
    pub fn next_item(&mut self) -> Result<Option<Item>, ReadError> {
        if let Some(item) = self.queued.pop_front() {
            return Ok(Some(item));
        }
        loop {
            if self.open.is_none() && self.plan.is_some() {
                match self.open_segment()? {
                    Some(Item::File(info)) => {
                        let file = self.open.as_ref().map_or(0, |o| o.index);
                        if self.announce(file, &info) {
                            return Ok(Some(Item::File(info)));
                        }
                        continue;
                    }
                    Some(item) => return Ok(Some(item)),
                    None => {
                        if let Some(p) = &mut self.progress {
                            p.finish();
                        }
                        return Ok(None);
                    }
                }
            }
            if self.open.is_none() {
                if self.next_file >= self.files.len() {
                    if let Some(p) = &mut self.progress {
                        p.finish();
                    }
                    return Ok(None);
                }
                let index = self.next_file;
                self.next_file += 1;
                let path = self.files[index].path.clone();
                let (reader, info, header_len, inode) = open_file(&path)?;
                self.files[index] = info.clone();
                self.open = Some(Open {
                    index,
                    reader,
                    line: 1,
                    read_bytes: header_len,
                    pending: Vec::new(),
                    skipping: false,
                    inode,
                    end: None,
                });
                self.announce(index, &info);
                return Ok(Some(Item::File(info)));
            }
            match self.read_line()? {
                Some(Item::File(info)) => {
                    let file = self.open.as_ref().map_or(0, |o| o.index);
                    if self.announce(file, &info) {
                        return Ok(Some(Item::File(info)));
                    }
                }
                Some(item) => return Ok(Some(item)),
                None => {
                    // End of this file.
                    let last = self.plan.is_none() && self.next_file >= self.files.len();
                    if self.opts.follow && last {
                        self.follow_wait()?;
                        if let Some(item) = self.queued.pop_front() {
                            return Ok(Some(item));
                        }
                        continue;
                    }
                    if let Some(open) = self.open.take() {
                        if !open.pending.is_empty() {
                            return Ok(Some(Item::Bad(BadLine {
                                file: open.index,
                                line: open.line + 1,
                                why: "the last line is cut short (the dump was still being written, or the proxy was killed)".into(),
                            })));
                        }
                    }
                }
            }
        }
    }

    /// Wait for the followed file to grow or be rotated. After a rotation the rest of the
    /// old file is queued and the new file at the same path is read next.
    fn follow_wait(&mut self) -> Result<(), ReadError> {
        std::thread::sleep(Duration::from_millis(200));
        let Some(open) = &self.open else {
            return Ok(());
        };
        let index = open.index;
        let path = self.files[index].path.clone();
        let rotated = std::fs::metadata(&path)
            .map(|m| inode_of(&m) != open.inode)
            .unwrap_or(false);
        if !rotated {
            return Ok(());
        }
        while let Some(item) = self.read_line()? {
            self.queued.push_back(item);
        }
        let next = self.files[index].clone();
        self.files.push(next);
        self.open = None;
        Ok(())
    }

    /// One complete line of the open file as an item; None at its end.
    fn read_line(&mut self) -> Result<Option<Item>, ReadError> {
        let follow = self.opts.follow;
        let Some(open) = &mut self.open else {
            return Ok(None);
        };
        let path = &self.files[open.index].path;
        loop {
            if open.end.is_some_and(|end| open.read_bytes >= end) {
                return Ok(None);
            }
            let before = open.pending.len();
            let limit = (MAX_RECORD_BYTES + 1).saturating_sub(before) as u64;
            let n = (&mut open.reader)
                .take(limit)
                .read_until(b'\n', &mut open.pending)
                .map_err(|source| ReadError::Io {
                    path: path.clone(),
                    source,
                })?;
            open.read_bytes += n as u64;
            if let Some(p) = &mut self.progress {
                p.advance(n as u64);
            }
            if n == 0 {
                // The end (a cut-short last line stays in `pending` for the caller).
                return Ok(None);
            }
            let complete = open.pending.ends_with(b"\n");
            if !complete && open.pending.len() <= MAX_RECORD_BYTES {
                // At the end of what is written so far: wait for the rest of the line.
                if follow {
                    return Ok(None);
                }
                continue;
            }
            if !complete {
                // Too long to hold: skip to its end.
                open.pending.clear();
                open.skipping = true;
                continue;
            }
            open.line += 1;
            let line_no = open.line;
            let buf = std::mem::take(&mut open.pending);
            if std::mem::take(&mut open.skipping) {
                return Ok(Some(Item::Bad(BadLine {
                    file: open.index,
                    line: line_no,
                    why: format!("a record longer than {MAX_RECORD_BYTES} bytes: skipped"),
                })));
            }
            let text = match std::str::from_utf8(&buf) {
                Ok(t) => t.trim_end_matches(['\n', '\r']),
                Err(_) => {
                    return Ok(Some(Item::Bad(BadLine {
                        file: open.index,
                        line: line_no,
                        why: "a record that is not UTF-8".into(),
                    })))
                }
            };
            if text.is_empty() {
                continue;
            }
            if text.starts_with("{\"format\"") {
                // A header in the middle: a part restarted in place (rotation with one file).
                if let Ok(info) = parse_header(path, text.as_bytes(), 0) {
                    return Ok(Some(Item::File(info)));
                }
            }
            return Ok(Some(match parse_record(open.index, line_no, text) {
                Ok(r) => Item::Record(r),
                Err(why) => Item::Bad(BadLine {
                    file: open.index,
                    line: line_no,
                    why,
                }),
            }));
        }
    }

    /// Whether the reader waits for more at the end.
    pub fn follows(&self) -> bool {
        self.opts.follow
    }

    /// `file:line` of a record, for messages.
    pub fn position(&self, file: usize, line: u64) -> String {
        match self.files.get(file) {
            Some(f) => format!("{}:{line}", f.path.display()),
            None => format!("?:{line}"),
        }
    }

    /// The first file's header (every part of a run has the same settings).
    pub fn first(&self) -> Option<&FileInfo> {
        self.files.first()
    }
}

/// The files to read for these paths: each path with its rotated parts (`PATH.1`, `PATH.2`,
/// … as far as they go), each file once, the parts of one path oldest first.
pub fn dump_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut groups: Vec<(PathBuf, Vec<(u32, PathBuf)>)> = Vec::new();
    let given: std::collections::HashSet<&PathBuf> = paths.iter().collect();
    let mut add =
        |base: PathBuf, n: u32, path: PathBuf| match groups.iter_mut().find(|(b, _)| *b == base) {
            Some((_, parts)) => {
                if !parts.iter().any(|(_, p)| *p == path) {
                    parts.push((n, path));
                }
            }
            None => groups.push((base, vec![(n, path)])),
        };
    for p in paths {
        // `X.N` given with `X`: a part of X's dump.
        let part_of = p.to_str().and_then(|s| {
            let (base, n) = s.rsplit_once('.')?;
            let n: u32 = n.parse().ok()?;
            let base = PathBuf::from(base);
            given.contains(&base).then_some((base, n))
        });
        match part_of {
            Some((base, n)) => add(base, n, p.clone()),
            None => {
                add(p.clone(), 0, p.clone());
                for n in 1.. {
                    let part = rotated_path(p, n);
                    if !part.is_file() {
                        break;
                    }
                    add(p.clone(), n, part);
                }
            }
        }
    }
    groups
        .into_iter()
        .flat_map(|(_, mut parts)| {
            parts.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
            parts.into_iter().map(|(_, p)| p)
        })
        .collect()
}

/// Every header in the files, as the segments they start.
fn index_segments(files: &[FileInfo]) -> Result<Vec<Segment>, ReadError> {
    let mut segments: Vec<Segment> = Vec::new();
    for (index, info) in files.iter().enumerate() {
        let io = |source| ReadError::Io {
            path: info.path.clone(),
            source,
        };
        let mut reader = BufReader::with_capacity(1 << 20, File::open(&info.path).map_err(io)?);
        let first = segments.len();
        let (mut offset, mut line) = (0u64, 0u64);
        loop {
            let buf = reader.fill_buf().map_err(io)?;
            if buf.is_empty() {
                break;
            }
            line += 1;
            let n = if buf.starts_with(b"{\"format\"") {
                let mut text = Vec::new();
                let n = (&mut reader)
                    .take(64 * 1024 * 1024)
                    .read_until(b'\n', &mut text)
                    .map_err(io)?;
                if let Ok(h) = parse_header(&info.path, &text, 0) {
                    segments.push(Segment {
                        file: index,
                        start: offset,
                        line,
                        end: 0,
                        run: h.run.unwrap_or_else(|| format!("\0{index}:{offset}")),
                    });
                }
                n
            } else {
                reader.skip_until(b'\n').map_err(io)?
            };
            offset += n as u64;
        }
        for i in first..segments.len() {
            segments[i].end = segments
                .get(i + 1)
                .filter(|s| s.file == index)
                .map_or(offset, |s| s.start);
        }
    }
    Ok(segments)
}

/// The segments run after run (each run where it first appears), or None when they already
/// are (the files can be read straight through).
fn run_by_run(segments: Vec<Segment>) -> Option<std::collections::VecDeque<Segment>> {
    let mut order: Vec<&str> = Vec::new();
    let mut interleaved = false;
    for s in &segments {
        match order.iter().position(|r| *r == s.run) {
            None => order.push(&s.run),
            Some(i) if i + 1 != order.len() => interleaved = true,
            Some(_) => {}
        }
    }
    if !interleaved {
        return None;
    }
    let rank: std::collections::HashMap<String, usize> = order
        .iter()
        .enumerate()
        .map(|(i, r)| ((*r).to_owned(), i))
        .collect();
    let mut segments = segments;
    segments.sort_by_key(|s| rank.get(&s.run).copied().unwrap_or(usize::MAX));
    Some(segments.into())
}

/// `12%  (120 MiB of 1.0 GiB)` on stderr, at most five times a second, erased at the end.
struct Progress {
    total: u64,
    done: u64,
    last: Instant,
    shown: bool,
}

impl Progress {
    fn new(total: u64) -> Progress {
        Progress {
            total,
            done: 0,
            last: Instant::now(),
            shown: false,
        }
    }

    fn advance(&mut self, n: u64) {
        self.done += n;
        if self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        let pct = (self.done.min(self.total) * 100)
            .checked_div(self.total)
            .unwrap_or(100);
        eprint!(
            "\r\x1b[2Kreading the dump: {pct:>3}%  ({} of {})",
            human_bytes(self.done),
            human_bytes(self.total)
        );
        self.shown = true;
    }

    fn finish(&mut self) {
        if std::mem::take(&mut self.shown) {
            eprint!("\r\x1b[2K");
        }
    }
}

/// `1.5 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    const HEADER: &str = r#"{"format":"acp-proxy-dump","version":1,"proxy_version":"0.1.0","agent_command":["a"],"started_at":"2026-12-01T00:00:00Z","redacted":true}"#;

    fn read_all(paths: &[PathBuf]) -> Result<Vec<Item>, ReadError> {
        let mut r = Reader::open(paths, ReadOptions::default())?;
        let mut items = Vec::new();
        while let Some(i) = r.next_item()? {
            items.push(i);
        }
        Ok(items)
    }

    #[test]
    fn a_newer_format_version_is_refused_with_a_clear_message() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = write(
            dir.path(),
            "d.jsonl",
            "{\"format\":\"acp-proxy-dump\",\"version\":7,\"proxy_version\":\"9.0.0\"}\n",
        );
        let err = read_all(&[p]).expect_err("refused").to_string();
        assert!(err.contains("format version 7"), "{err}");
        assert!(err.contains("newer than this acp-proxy"), "{err}");
        assert!(err.contains("9.0.0"), "{err}");
    }

    #[test]
    fn a_file_that_is_not_a_dump_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = write(
            dir.path(),
            "d.jsonl",
            "{\"t\":0,\"dir\":\"in\",\"msg\":{}}\n",
        );
        let err = read_all(&[p]).expect_err("refused").to_string();
        assert!(err.contains("is not an acp-proxy dump"), "{err}");
        let p = write(dir.path(), "e.jsonl", "");
        assert!(read_all(&[p]).is_err());
    }

    #[test]
    fn records_damaged_lines_and_a_cut_short_end_are_reported_not_fatal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = format!(
            "{HEADER}\n{}\nnot json\n{}\n{{\"ts\":3,\"dir\":\"proxy→cl",
            r#"{"ts":1.5,"dir":"client→proxy","frame":"{\"id\":1}\n{\"id\":2}"}"#,
            r#"{"ts":2,"dir":"proxy-note","note":"n","lost_frames":3}"#
        );
        let p = write(dir.path(), "d.jsonl", &text);
        let items = read_all(&[p]).expect("read");
        assert!(matches!(&items[0], Item::File(f) if f.part == 1 && f.version == 1));
        let Item::Record(r) = &items[1] else {
            panic!("{:?}", items[1])
        };
        assert_eq!((r.line, r.dir, r.ts), (2, Direction::ClientToProxy, 1.5));
        assert_eq!(
            r.messages().collect::<Vec<_>>(),
            ["{\"id\":1}", "{\"id\":2}"]
        );
        assert!(matches!(&items[2], Item::Bad(b) if b.line == 3));
        assert!(matches!(&items[3], Item::Record(r) if r.lost_frames == 3 && r.line == 4));
        assert!(matches!(&items[4], Item::Bad(b) if b.why.contains("cut short")));
        assert_eq!(items.len(), 5);
    }

    #[test]
    fn parts_of_one_run_are_read_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let part = |n: u64, ts: u64| {
            format!(
                "{{\"format\":\"acp-proxy-dump\",\"version\":1,\"run\":\"r\",\"part\":{n}}}\n{{\"ts\":{ts},\"dir\":\"proxy-note\",\"note\":\"x\"}}\n"
            )
        };
        let a = write(dir.path(), "d.jsonl", &part(3, 30));
        let b = write(dir.path(), "d.jsonl.1", &part(2, 20));
        let c = write(dir.path(), "d.jsonl.2", &part(1, 10));
        let items = read_all(&[a, b, c]).expect("read");
        let ts: Vec<f64> = items
            .iter()
            .filter_map(|i| match i {
                Item::Record(r) => Some(r.ts),
                _ => None,
            })
            .collect();
        assert_eq!(ts, [10.0, 20.0, 30.0]);
    }

    #[test]
    fn a_path_brings_its_rotated_parts_oldest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("d.jsonl");
        for n in [1, 2, 10, 3, 4, 5, 6, 7, 8, 9] {
            write(dir.path(), &format!("d.jsonl.{n}"), HEADER);
        }
        write(dir.path(), "d.jsonl", HEADER);
        let want: Vec<PathBuf> = (1..=10)
            .rev()
            .map(|n| rotated_path(&base, n))
            .chain([base.clone()])
            .collect();
        assert_eq!(dump_files(std::slice::from_ref(&base)), want);
        // Parts given by name, in any order and twice, are read once, in the same order.
        let mut given = vec![
            rotated_path(&base, 2),
            base.clone(),
            rotated_path(&base, 10),
        ];
        given.push(rotated_path(&base, 2));
        assert_eq!(dump_files(&given), want);
        // A part alone is only itself.
        let part = rotated_path(&base, 3);
        assert_eq!(dump_files(std::slice::from_ref(&part)), [part]);
    }
}
