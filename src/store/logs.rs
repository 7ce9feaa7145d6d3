//! Transcript files: a file store keeps a child's update texts past its first 32 KiB in an
//! append-only file of its own, one text per line, beside the database
//! (`<store>-transcripts/`).
//!
//! Why not rows: in SQLite every stored byte is written twice (the WAL, then the checkpoint's
//! copy into the database), checksummed, and forced to the disk at every checkpoint, page by
//! page. Child events are about a third of a busy agent's output, so that cost decided how fast
//! the proxy could relay subagent traffic (`docs/performance.md`). A file append writes each
//! byte once, in one system call per batch.
//!
//! The database stays the source of truth: a child's row names its file (`log`), the seq of
//! its first update there (`log_seq`), how many updates it holds (`log_count`) and its
//! committed length (`log_bytes`). The writer appends and updates the row in the same
//! `BEGIN IMMEDIATE` transaction, so appends from several processes are serialised by
//! SQLite's write lock, and bytes past `log_bytes` (a batch that never committed) are never
//! read and are cut off by the next append.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::BuildHasher;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Open transcript files the writer keeps, so a running child costs no `open` per batch.
const OPEN_FILES_MAX: usize = 64;
/// A file no row names is removed only once it is this old: a younger one may belong to a
/// transaction of another process that has not committed yet.
pub(super) const ORPHAN_MIN_AGE: Duration = Duration::from_secs(3600);
const SUFFIX: &str = ".jsonl";

/// The directory of a file store's transcript files.
#[derive(Debug, Clone)]
pub(super) struct LogDir {
    dir: PathBuf,
}

impl LogDir {
    /// `<store path>-transcripts`, next to the database and its `-wal`.
    pub(super) fn of_store(db: &Path) -> LogDir {
        let mut s = db.as_os_str().to_owned();
        s.push("-transcripts");
        LogDir {
            dir: PathBuf::from(s),
        }
    }

    #[cfg(test)]
    pub(super) fn path(&self) -> &Path {
        &self.dir
    }

    /// The path of a file named in the database; `None` for a name this build never makes
    /// (the database is not trusted to name paths outside the directory).
    pub(super) fn file(&self, name: &str) -> Option<PathBuf> {
        let stem = name.strip_suffix(SUFFIX)?;
        let ok = !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_hexdigit());
        ok.then(|| self.dir.join(name))
    }

    /// A new, unpredictable file name (never reused, even for a child id seen before).
    pub(super) fn new_name() -> String {
        let state = std::collections::hash_map::RandomState::new();
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let a = state.hash_one((nanos, std::process::id()));
        let b = state.hash_one(a);
        format!("{a:016x}{b:016x}{SUFFIX}")
    }

    /// The `count` updates a file holds in its first `bytes` bytes (its committed part).
    pub(super) fn read(&self, name: &str, count: u64, bytes: u64) -> Result<Vec<String>, String> {
        let path = self
            .file(name)
            .ok_or_else(|| format!("`{name}` is not a transcript file name"))?;
        let file = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut data = Vec::with_capacity(usize::try_from(bytes).unwrap_or(0));
        file.take(bytes)
            .read_to_end(&mut data)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if data.len() as u64 != bytes {
            return Err(format!(
                "{} holds {} of its {bytes} committed bytes",
                path.display(),
                data.len()
            ));
        }
        if count == 0 && data.is_empty() {
            return Ok(Vec::new());
        }
        let text =
            String::from_utf8(data).map_err(|e| format!("{} is not UTF-8: {e}", path.display()))?;
        let body = text
            .strip_suffix('\n')
            .ok_or_else(|| format!("{} does not end with a newline", path.display()))?;
        let lines: Vec<String> = body.split('\n').map(str::to_owned).collect();
        if lines.len() as u64 != count {
            return Err(format!(
                "{} should hold {count} updates, not {}",
                path.display(),
                lines.len()
            ));
        }
        Ok(lines)
    }

    /// Remove the files of deleted children (a file already gone is fine).
    pub(super) fn remove<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        for name in names {
            let Some(path) = self.file(name) else {
                continue;
            };
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!("store: cannot remove {}: {e}", path.display()),
            }
        }
    }

    /// Remove files that no row names and that are older than [`ORPHAN_MIN_AGE`] (left by a
    /// batch that failed, or by a crash between a prune's commit and its removals). Returns
    /// how many.
    pub(super) fn sweep(&self, named: &HashSet<String>, now: SystemTime) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if self.file(name).is_none() || named.contains(name) {
                continue;
            }
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age >= ORPHAN_MIN_AGE);
            if old && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// Bytes the directory's files take (their lengths).
    pub(super) fn disk_bytes(&self) -> u64 {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    }
}

/// The open file `name` (at `path`, in `dir`) from the cache, opened (and the directory
/// made) if it is not there.
fn open_file<'c>(
    open: &'c mut HashMap<String, File>,
    dir: &Path,
    name: &str,
    path: &Path,
) -> io::Result<&'c File> {
    if !open.contains_key(name) {
        if open.len() >= OPEN_FILES_MAX {
            open.clear();
        }
        if !dir.is_dir() {
            crate::platform::create_private_dir_all(dir)?;
        }
        let file = crate::platform::private_file(
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false),
        )
        .open(path)?;
        open.insert(name.to_owned(), file);
    }
    open.get(name)
        .ok_or_else(|| io::Error::other("transcript file cache"))
}

/// A transcript-file write that failed.
#[derive(Debug)]
pub(super) struct LogError {
    pub path: PathBuf,
    pub source: io::Error,
}

/// The writer's side: appends, with a small cache of open files.
pub(super) struct LogWriter {
    dir: LogDir,
    open: HashMap<String, File>,
    buf: Vec<u8>,
    /// Tests: make every append fail as a full disk would.
    #[cfg(test)]
    pub fail: bool,
}

impl LogWriter {
    pub(super) fn new(dir: LogDir) -> LogWriter {
        LogWriter {
            dir,
            open: HashMap::new(),
            buf: Vec::new(),
            #[cfg(test)]
            fail: false,
        }
    }

    pub(super) fn dir(&self) -> &LogDir {
        &self.dir
    }

    /// Write `bodies`, one per line, at offset `at` of the file `name` (its committed
    /// length): whatever lies past `at` never committed and is cut off first. Returns the
    /// bytes written.
    pub(super) fn append(&mut self, name: &str, at: u64, bodies: &[&str]) -> Result<u64, LogError> {
        let path = self.dir.file(name).ok_or_else(|| LogError {
            path: self.dir.dir.join(name),
            source: io::Error::new(io::ErrorKind::InvalidData, "not a transcript file name"),
        })?;
        let err = |source| LogError {
            path: path.clone(),
            source,
        };
        #[cfg(test)]
        if self.fail {
            return Err(err(io::Error::from_raw_os_error(28)));
        }
        // One write per batch; the buffer is kept for the next one.
        self.buf.clear();
        for b in bodies {
            self.buf.extend_from_slice(b.as_bytes());
            self.buf.push(b'\n');
        }
        let result = open_file(&mut self.open, &self.dir.dir, name, &path).and_then(|file| {
            if file.metadata()?.len() != at {
                file.set_len(at)?;
            }
            crate::platform::write_all_at(file, &self.buf, at)
        });
        if let Err(e) = result {
            // The next attempt opens the file afresh.
            self.open.remove(name);
            return Err(err(e));
        }
        Ok(self.buf.len() as u64)
    }

    /// Forget open files (their children were deleted).
    pub(super) fn close_all(&mut self) {
        self.open.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_the_database_cannot_leave_the_directory() {
        let d = LogDir::of_store(Path::new("/tmp/x/s.db"));
        assert_eq!(d.path(), Path::new("/tmp/x/s.db-transcripts"));
        let name = LogDir::new_name();
        assert!(d.file(&name).is_some(), "{name}");
        assert_ne!(name, LogDir::new_name());
        for bad in [
            "../s.db",
            "a/b.jsonl",
            ".jsonl",
            "xyz.jsonl",
            "/etc/passwd",
            "ab",
        ] {
            assert!(d.file(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn an_uncommitted_tail_is_never_read_and_is_cut_by_the_next_append() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = LogDir::of_store(&tmp.path().join("s.db"));
        let mut w = LogWriter::new(dir.clone());
        let name = LogDir::new_name();
        let n1 = w.append(&name, 0, &["{\"a\":1}", "{}"]).expect("append");
        assert_eq!(n1, 11);
        // A batch that never committed.
        w.append(&name, n1, &["{\"lost\":true}"]).expect("append");
        assert_eq!(dir.read(&name, 2, n1).expect("read"), ["{\"a\":1}", "{}"]);
        let n2 = w.append(&name, n1, &["[3]"]).expect("append");
        assert_eq!(
            dir.read(&name, 3, n1 + n2).expect("read"),
            ["{\"a\":1}", "{}", "[3]"]
        );
        let on_disk = std::fs::read(dir.file(&name).expect("path")).expect("file");
        assert_eq!(on_disk, b"{\"a\":1}\n{}\n[3]\n");
    }

    #[test]
    fn a_damaged_file_is_reported_not_misread() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = LogDir::of_store(&tmp.path().join("s.db"));
        let mut w = LogWriter::new(dir.clone());
        let name = LogDir::new_name();
        let n = w.append(&name, 0, &["{}", "{}"]).expect("append");
        let short = dir.read(&name, 2, n + 3).expect_err("short");
        assert!(short.contains("holds 6 of its 9"), "{short}");
        let count = dir.read(&name, 3, n).expect_err("count");
        assert!(count.contains("should hold 3 updates, not 2"), "{count}");
        let gone = dir.read(&LogDir::new_name(), 1, 3).expect_err("missing");
        assert!(gone.contains("No such file"), "{gone}");
        assert_eq!(dir.read(&name, 0, 0).expect("empty"), Vec::<String>::new());
    }

    #[test]
    fn sweep_removes_only_old_unnamed_files() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = LogDir::of_store(&tmp.path().join("s.db"));
        let mut w = LogWriter::new(dir.clone());
        let (kept, orphan) = (LogDir::new_name(), LogDir::new_name());
        w.append(&kept, 0, &["{}"]).expect("append");
        w.append(&orphan, 0, &["{}"]).expect("append");
        std::fs::write(dir.path().join("notes.txt"), "mine").expect("write");
        let named: HashSet<String> = [kept.clone()].into();
        let now = SystemTime::now();
        assert_eq!(dir.sweep(&named, now), 0, "too young to be an orphan");
        assert_eq!(dir.sweep(&named, now + ORPHAN_MIN_AGE), 1);
        assert!(dir.file(&kept).expect("path").exists());
        assert!(!dir.file(&orphan).expect("path").exists());
        assert!(
            dir.path().join("notes.txt").exists(),
            "not ours: left alone"
        );
        assert_eq!(dir.disk_bytes(), 3 + 4);
    }
}
