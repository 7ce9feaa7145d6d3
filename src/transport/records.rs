//! Following the agents' records of children on disk ([`Action::FollowRecord`]): a thread of
//! its own polls each record until it says the child ended, so the relay never waits on a
//! file. Read-only, each file at most [`MAX_RECORD_BYTES`], for as long as the engine asked
//! (at most [`FOLLOW_FOR`]); a record that is missing, too big or never ends is reported as
//! an empty [`Record`] when that time is up (the child thread keeps what the wire said). The
//! shell collects what ended on its ticks.
//!
//! [`Action::FollowRecord`]: crate::engine::Action::FollowRecord

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::subagents::records::{self, Location, Record, RecordWatch, MAX_RECORD_BYTES};

/// How often a followed record is read again.
pub(crate) const POLL: Duration = Duration::from_millis(250);
/// How often while a record that ties a child's id to its spawn is followed: the child's
/// events may wait for that tie (a sync child of Copilot's runs for a tenth of a second).
pub(crate) const QUICK_POLL: Duration = Duration::from_millis(20);
/// How long a record is followed before the proxy gives up on it.
const FOLLOW_FOR: Duration = Duration::from_secs(6 * 3600);
/// Records followed at once, at most (more are not followed).
const MAX_FOLLOWED: usize = 256;
/// How much older than the ask a record found by its contents may be.
const SINCE_SLACK: Duration = Duration::from_secs(2);
/// Folder entries looked through for a record, at most.
const MAX_DIRS: usize = 4096;
/// Candidate files read per poll of a record found by its contents, at most.
const MAX_CANDIDATES: usize = 64;

/// What a thread finds, collected by the shell.
#[derive(Default)]
struct Shared {
    ended: Mutex<Vec<(String, Record)>>,
    /// What live records ([`RecordWatch::live`]) said so far, as they grew.
    progress: Mutex<Vec<(String, Record)>>,
    /// Records followed (or asked for and not taken up yet).
    followed: AtomicUsize,
    /// Of them, those read every [`QUICK_POLL`].
    quick: AtomicUsize,
}

/// The follower: started with the first record to follow.
#[derive(Default)]
pub(crate) struct RecordFollower {
    watches: Option<mpsc::Sender<RecordWatch>>,
    shared: Arc<Shared>,
}

impl RecordFollower {
    /// Follow a child's record; false if it cannot be (too many followed, no thread): the
    /// record is then reported as not found at once, so nothing waits for it.
    pub(crate) fn follow(&mut self, watch: RecordWatch) -> bool {
        let child = watch.child.clone();
        let followed = self.try_follow(watch);
        if !followed {
            match self.shared.ended.lock() {
                Ok(mut v) => v.push((child, Record::default())),
                Err(poisoned) => poisoned.into_inner().push((child, Record::default())),
            }
        }
        followed
    }

    fn try_follow(&mut self, watch: RecordWatch) -> bool {
        if self.shared.followed.load(Ordering::Acquire) >= MAX_FOLLOWED {
            return false;
        }
        if self.watches.is_none() {
            let (tx, rx) = mpsc::channel();
            let shared = self.shared.clone();
            let started = std::thread::Builder::new()
                .name("acp-proxy-records".into())
                .spawn(move || follow_loop(&rx, &shared));
            if started.is_err() {
                return false;
            }
            self.watches = Some(tx);
        }
        let quick = usize::from(watch.format.ties_ids());
        self.shared.followed.fetch_add(1, Ordering::AcqRel);
        self.shared.quick.fetch_add(quick, Ordering::AcqRel);
        let sent = self
            .watches
            .as_ref()
            .is_some_and(|tx| tx.send(watch).is_ok());
        if !sent {
            self.shared.followed.fetch_sub(1, Ordering::AcqRel);
            self.shared.quick.fetch_sub(quick, Ordering::AcqRel);
        }
        sent
    }

    /// How often the shell should collect what the records told: quicker while a record that
    /// ties ids is followed (the child's events wait for it).
    pub(crate) fn every(&self) -> Duration {
        if self.shared.quick.load(Ordering::Acquire) > 0 {
            QUICK_POLL
        } else {
            POLL
        }
    }

    /// Whether any record is followed, or told an end not taken yet (the shell then polls).
    /// The thread reports an end before it stops counting the record, so one of the two
    /// always holds until the end is taken.
    pub(crate) fn active(&self) -> bool {
        let waiting = |m: &Mutex<Vec<(String, Record)>>| match m.lock() {
            Ok(v) => !v.is_empty(),
            Err(poisoned) => !poisoned.into_inner().is_empty(),
        };
        self.shared.followed.load(Ordering::Acquire) > 0
            || waiting(&self.shared.ended)
            || waiting(&self.shared.progress)
    }

    /// What live records said as they grew since the last call: (child id, record so far),
    /// oldest first.
    pub(crate) fn take_progress(&self) -> Vec<(String, Record)> {
        match self.shared.progress.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }

    /// The records that said their child ended (or were given up on: empty) since the last
    /// call: (child id, record).
    pub(crate) fn take_ended(&self) -> Vec<(String, Record)> {
        match self.shared.ended.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

struct Followed {
    watch: RecordWatch,
    /// The record's file, once found.
    path: Option<PathBuf>,
    /// Its length when last read (read again only when it changed).
    len: u64,
    until: Instant,
    /// When it began to be followed: a record found by its contents was written since.
    since: SystemTime,
    /// Settled updates reported so far, of a live record.
    reported: usize,
}

impl Followed {
    fn new(watch: RecordWatch) -> Followed {
        let within = Duration::from_millis(watch.within_ms).min(FOLLOW_FOR);
        Followed {
            watch,
            path: None,
            len: 0,
            until: Instant::now() + within,
            // Slack for a child quicker than the ask (its record written before it came).
            since: SystemTime::now()
                .checked_sub(SINCE_SLACK)
                .unwrap_or(SystemTime::UNIX_EPOCH),
            reported: 0,
        }
    }
}

fn follow_loop(rx: &mpsc::Receiver<RecordWatch>, shared: &Shared) {
    let env = |k: &str| std::env::var_os(k);
    let mut followed: Vec<Followed> = Vec::new();
    loop {
        let every = if followed.iter().any(|f| f.watch.format.ties_ids()) {
            QUICK_POLL
        } else {
            POLL
        };
        match rx.recv_timeout(every) {
            Ok(watch) => {
                // A child followed again (its spawn ended: now by the id it gave) is followed
                // by the new watch only.
                if let Some(at) = followed.iter().position(|f| f.watch.child == watch.child) {
                    let old = followed.swap_remove(at);
                    let quick = usize::from(old.watch.format.ties_ids());
                    shared.quick.fetch_sub(quick, Ordering::AcqRel);
                    shared.followed.fetch_sub(1, Ordering::AcqRel);
                }
                followed.push(Followed::new(watch));
            }
            Err(RecvTimeoutError::Timeout) => {}
            // The shell is gone: so is the session.
            Err(RecvTimeoutError::Disconnected) => return,
        }
        let before = followed.len();
        let mut quick_done = 0;
        let report = |child: &str, record: Record| {
            if let Ok(mut v) = shared.ended.lock() {
                v.push((child.to_owned(), record));
            }
        };
        // Files already followed, which a record found by its contents is not.
        let claimed: Vec<PathBuf> = if followed.iter().any(|f| f.path.is_none()) {
            followed.iter().filter_map(|f| f.path.clone()).collect()
        } else {
            Vec::new()
        };
        followed.retain_mut(|f| {
            let record = match poll(f, &env, &claimed) {
                Poll::Told(record) => record,
                Poll::Grew(record) => {
                    if let Ok(mut v) = shared.progress.lock() {
                        v.push((f.watch.child.clone(), record));
                    }
                    if Instant::now() < f.until {
                        return true;
                    }
                    Record::default()
                }
                Poll::Again if Instant::now() < f.until => return true,
                Poll::Again | Poll::GiveUp => Record::default(),
            };
            report(&f.watch.child, record);
            quick_done += usize::from(f.watch.format.ties_ids());
            false
        });
        let done = before - followed.len();
        if done > 0 {
            shared.quick.fetch_sub(quick_done, Ordering::AcqRel);
            shared.followed.fetch_sub(done, Ordering::AcqRel);
        }
    }
}

enum Poll {
    /// The record told what it was followed for (`Record::told`).
    Told(Record),
    /// A live record grew: what it says so far.
    Grew(Record),
    Again,
    GiveUp,
}

fn poll(
    f: &mut Followed,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    claimed: &[PathBuf],
) -> Poll {
    if f.watch.within_ms == 0 {
        // Asked only to replace the child's earlier watch: nothing to read.
        return Poll::GiveUp;
    }
    if f.path.is_none() {
        match records::locate(&f.watch, env) {
            None => return Poll::GiveUp,
            Some(Location::At(path)) => f.path = Some(path),
            Some(Location::Under { dir, tail }) => f.path = find(&dir, &tail),
            // Found by its contents: each candidate read whole (the child's ended by now or
            // soon; its file is then followed like any other).
            Some(Location::Among {
                dir,
                prefix,
                suffix,
            }) => {
                let (path, record) = find_among(&dir, prefix, suffix, &f.watch);
                if let Some(record) = record.filter(Record::told) {
                    return Poll::Told(record);
                }
                f.path = path;
                return Poll::Again;
            }
            Some(Location::Nested { dir, middle, file }) => {
                let Some((path, len, record)) = find_nested(&dir, &middle, file, f, claimed) else {
                    return Poll::Again;
                };
                f.path = Some(path);
                f.len = len;
                return f.told_or_grew(record);
            }
        }
    }
    let Some(path) = &f.path else {
        return Poll::Again;
    };
    let Ok(meta) = std::fs::metadata(path) else {
        return Poll::Again;
    };
    if f.watch.format.ties_ids() {
        return poll_log(f, meta.len());
    }
    if meta.len() > MAX_RECORD_BYTES {
        tracing::warn!(
            "subagent {}: the agent's record {} is over {MAX_RECORD_BYTES} bytes: not read",
            f.watch.child,
            path.display()
        );
        return Poll::GiveUp;
    }
    if meta.len() == f.len {
        return Poll::Again;
    }
    let Ok(bytes) = read_at_most(path, MAX_RECORD_BYTES) else {
        return Poll::Again;
    };
    f.len = bytes.len() as u64;
    f.told_or_grew(records::parse(&f.watch, &bytes))
}

impl Followed {
    /// What a read of the record says: its end, or, followed live, new settled updates.
    fn told_or_grew(&mut self, record: Record) -> Poll {
        if record.told() {
            return Poll::Told(record);
        }
        let settled = record.settled().len();
        if self.watch.live && settled > self.reported {
            self.reported = settled;
            return Poll::Grew(record);
        }
        Poll::Again
    }
}

/// A session log that ties ids (append-only, a JSON object a line, the whole session's):
/// only what was appended since the last poll is read, whole lines, at most
/// [`MAX_RECORD_BYTES`] a poll, so a long session's log is followed at the cost of its growth.
fn poll_log(f: &mut Followed, len: u64) -> Poll {
    if len < f.len {
        // Rewritten from the start: read it again.
        f.len = 0;
    }
    if len == f.len {
        return Poll::Again;
    }
    let Some(path) = &f.path else {
        return Poll::Again;
    };
    let Ok(bytes) = read_range(path, f.len, MAX_RECORD_BYTES) else {
        return Poll::Again;
    };
    // Whole lines only: a line still being written is read again with the rest of it.
    let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
        if bytes.len() as u64 >= MAX_RECORD_BYTES {
            tracing::warn!(
                "subagent {}: a line of the agent's log {} is over {MAX_RECORD_BYTES} bytes: not read",
                f.watch.child,
                path.display()
            );
            return Poll::GiveUp;
        }
        return Poll::Again;
    };
    f.len += end as u64 + 1;
    let record = records::parse(&f.watch, &bytes[..=end]);
    if record.told() {
        Poll::Told(record)
    } else {
        Poll::Again
    }
}

/// At most `max` bytes of `path` from `from` on.
fn read_range(path: &Path, from: u64, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `tail` under one of the folders of `dir` (the first found, in no particular order).
fn find(dir: &Path, tail: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .take(MAX_DIRS)
        .filter_map(Result::ok)
        .map(|e| e.path().join(tail))
        .find(|p| p.is_file())
}

/// The file of `dir` named `<prefix>…<suffix>` whose contents are the child's, with what it
/// says.
fn find_among(
    dir: &Path,
    prefix: &str,
    suffix: &str,
    watch: &RecordWatch,
) -> (Option<PathBuf>, Option<Record>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (None, None);
    };
    let candidates = entries
        .take(MAX_DIRS)
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
        })
        .take(MAX_CANDIDATES);
    for path in candidates {
        let fits = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_RECORD_BYTES);
        let Some(bytes) = fits
            .then(|| read_at_most(&path, MAX_RECORD_BYTES).ok())
            .flatten()
        else {
            continue;
        };
        let record = records::parse(watch, &bytes);
        if record != Record::default() {
            return (Some(path), Some(record));
        }
    }
    (None, None)
}

/// The file `<dir>/<any>/<middle>/<any>/<file>` whose contents are the child's, written
/// since it was asked for and not followed for another child, with its length and what it
/// says. The folder that holds it is named by the agent's id of the child, which the watch
/// takes (the record's tool call ids carry it, as once the spawn gave it). Bounded: at most [`MAX_DIRS`] folders looked through at each level and
/// [`MAX_CANDIDATES`] files read.
fn find_nested(
    dir: &Path,
    middle: &Path,
    file: &str,
    f: &mut Followed,
    claimed: &[PathBuf],
) -> Option<(PathBuf, u64, Record)> {
    let since = f.since;
    let outer = std::fs::read_dir(dir)
        .ok()?
        .take(MAX_DIRS)
        .filter_map(Result::ok);
    let folders = outer.filter_map(|e| std::fs::read_dir(e.path().join(middle)).ok());
    let candidates = folders
        .flat_map(|d| d.take(MAX_DIRS).filter_map(Result::ok))
        .map(|e| e.path().join(file))
        .filter(|p| !claimed.contains(p))
        .filter(|p| {
            // An older child's record of the same task is not this child's.
            std::fs::metadata(p).is_ok_and(|m| {
                m.len() <= MAX_RECORD_BYTES && m.modified().is_ok_and(|t| t >= since)
            })
        })
        .take(MAX_CANDIDATES);
    for path in candidates {
        let Some(id) = path
            .parent()
            .and_then(Path::file_name)
            .and_then(|n| n.to_str())
        else {
            continue;
        };
        let Ok(bytes) = read_at_most(&path, MAX_RECORD_BYTES) else {
            continue;
        };
        id.clone_into(&mut f.watch.agent_id);
        let record = records::parse(&f.watch, &bytes);
        if record != Record::default() {
            return Some((path, bytes.len() as u64, record));
        }
    }
    f.watch.agent_id.clear();
    None
}

fn read_at_most(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::ids::AgentSessionId;
    use crate::subagents::preset::spec::ChildRecord;

    fn wait_for(f: &RecordFollower) -> Vec<(String, Record)> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let got = f.take_ended();
            if !got.is_empty() || Instant::now() > until {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_log_that_ties_ids_is_read_quickly_until_it_names_the_childs_id() {
        let home = tempfile::tempdir().expect("temp dir");
        std::env::set_var("COPILOT_HOME", home.path());
        let dir = home.path().join("session-state/sess-2");
        let mut f = RecordFollower::default();
        assert!(f.follow(RecordWatch {
            child: "child-2".into(),
            session: AgentSessionId::new("sess-2".to_owned()),
            agent_id: String::new(),
            task: None,
            spawn: "call_0001".into(),
            format: ChildRecord::Copilot,
            live: false,
            within_ms: 60_000,
        }));
        assert_eq!(f.every(), QUICK_POLL);
        // Not there yet: the log is written after the ask.
        std::thread::sleep(QUICK_POLL * 3);
        assert!(f.take_ended().is_empty());
        std::fs::create_dir_all(&dir).expect("log folder");
        let line = serde_json::json!({"type": "subagent.started",
            "data": {"toolCallId": "call_0001"}, "agentId": "b563eda7"});
        // A line of another spawn, then one still being written: nothing yet.
        let other = serde_json::json!({"type": "subagent.started",
            "data": {"toolCallId": "call_0009"}, "agentId": "other"});
        let text = format!("{other}\n{line}\n");
        let (head, rest) = text.split_at(text.len() - 10);
        std::fs::write(dir.join("events.jsonl"), head).expect("write");
        std::thread::sleep(QUICK_POLL * 3);
        assert!(f.take_ended().is_empty(), "a torn line is not read");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("events.jsonl"))
            .expect("open");
        std::io::Write::write_all(&mut file, rest.as_bytes()).expect("append");
        let got = wait_for(&f);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "child-2");
        assert_eq!(got[0].1.agent_id.as_deref(), Some("b563eda7"));
        let until = Instant::now() + Duration::from_secs(5);
        while f.active() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(f.every(), POLL, "back to the slow pace");
    }

    #[test]
    fn a_log_past_the_record_limit_is_read_as_it_grows() {
        let home = tempfile::tempdir().expect("temp dir");
        let dir = home.path().join("session-state/sess-3");
        std::fs::create_dir_all(&dir).expect("log folder");
        let log = dir.join("events.jsonl");
        // A long session's log: more than a record may be.
        let filler = format!(
            "{}\n",
            serde_json::json!({"type": "assistant.message", "data": {"content": "x".repeat(1000)}})
        );
        let lines = (MAX_RECORD_BYTES as usize / filler.len()) + 64;
        std::fs::write(&log, filler.repeat(lines)).expect("write");
        let mut followed = Followed::new(RecordWatch {
            child: "child-3".into(),
            session: AgentSessionId::new("sess-3".to_owned()),
            agent_id: String::new(),
            task: None,
            spawn: "call_0001".into(),
            format: ChildRecord::Copilot,
            live: false,
            within_ms: 60_000,
        });
        followed.path = Some(log.clone());
        let env = |_: &str| None;
        while matches!(poll(&mut followed, &env, &[]), Poll::Again)
            && followed.len < (filler.len() * lines) as u64
        {}
        assert_eq!(
            followed.len,
            (filler.len() * lines) as u64,
            "read to its end"
        );
        let line = serde_json::json!({"type": "subagent.started",
            "data": {"toolCallId": "call_0001"}, "agentId": "late-id"});
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("open");
        std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).expect("append");
        match poll(&mut followed, &env, &[]) {
            Poll::Told(record) => assert_eq!(record.agent_id.as_deref(), Some("late-id")),
            _ => panic!("the appended tie is read"),
        }
    }

    /// Kimi's record of a running child, found by its task among the session's children
    /// (not an older one of the same task), reported as it grows, then followed by the id the
    /// spawn gave at its end in place of the first watch.
    #[test]
    fn a_live_record_is_found_by_its_contents_and_reported_as_it_grows() {
        const TASK: &str = "SUBAGENT:alpha list the text files";
        let home = tempfile::tempdir().expect("temp dir");
        std::env::set_var("KIMI_SHARE_DIR", home.path());
        let subagents = home.path().join("sessions/4f2a/sess-k/subagents");
        let line = |kind: &str, payload: serde_json::Value| {
            format!(
                "{}\n",
                serde_json::json!({"timestamp": 1.0, "message": {"type": kind, "payload": payload}})
            )
        };
        let head = format!(
            "{}\n{}",
            serde_json::json!({"type": "metadata", "protocol_version": "1.1"}),
            line("TurnBegin", serde_json::json!({"user_input": TASK}))
        );
        // An older child of the same task, ended long ago.
        std::fs::create_dir_all(subagents.join("aold")).expect("folder");
        let old = subagents.join("aold/wire.jsonl");
        std::fs::write(&old, &head).expect("write");
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .and_then(|f| f.set_modified(hour_ago))
            .expect("mtime");
        let mut f = RecordFollower::default();
        let watch = RecordWatch {
            child: "child-k".into(),
            session: AgentSessionId::new("sess-k".into()),
            agent_id: String::new(),
            task: Some(TASK.into()),
            spawn: String::new(),
            format: ChildRecord::Kimi,
            live: true,
            within_ms: 60_000,
        };
        assert!(f.follow(watch.clone()));
        std::thread::sleep(POLL * 2);
        assert!(
            f.take_progress().is_empty(),
            "an older record is not this child's"
        );
        std::fs::create_dir_all(subagents.join("anew")).expect("folder");
        let file = subagents.join("anew/wire.jsonl");
        let words = line(
            "ContentPart",
            serde_json::json!({"type": "text", "text": "looking"}),
        );
        std::fs::write(&file, format!("{head}{words}")).expect("write");
        let wait_progress = |f: &RecordFollower| {
            let until = Instant::now() + Duration::from_secs(10);
            loop {
                let got = f.take_progress();
                if !got.is_empty() || Instant::now() > until {
                    return got;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let got = wait_progress(&f);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "child-k");
        assert_eq!(got[0].1.updates.len(), 2, "the task and the words");
        assert!(!got[0].1.ended());
        // A tool call whose arguments are still written: not settled, not reported.
        let call = |args: &str| {
            line(
                "ToolCall",
                serde_json::json!({"type": "function", "id": "call_1",
                "function": {"name": "Glob", "arguments": args}}),
            )
        };
        let mut text = format!("{head}{words}{}", call("{\"pattern\": \"*.t"));
        std::fs::write(&file, &text).expect("write");
        std::thread::sleep(POLL * 3);
        assert!(f.take_progress().is_empty(), "an unsettled call waits");
        text = format!("{head}{words}{}", call("{\"pattern\": \"*.txt\"}"));
        std::fs::write(&file, &text).expect("write");
        let got = wait_progress(&f);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            got[0].1.updates[2]["toolCallId"], "anew-1/call_1",
            "named by its folder"
        );
        // The spawn ended: the child is followed by the id it gave, in place of the first watch.
        assert!(f.follow(RecordWatch {
            agent_id: "anew".into(),
            live: false,
            ..watch
        }));
        text.push_str(&line("StepBegin", serde_json::json!({"n": 2})));
        text.push_str(&line(
            "ContentPart",
            serde_json::json!({"type": "text", "text": "x".repeat(300)}),
        ));
        text.push_str(&line("TurnEnd", serde_json::json!({})));
        std::fs::write(&file, &text).expect("write");
        let got = wait_for(&f);
        assert_eq!(got.len(), 1, "told once: {got:?}");
        assert_eq!(got[0].1.answer.as_deref(), Some("x".repeat(300).as_str()));
        let until = Instant::now() + Duration::from_secs(5);
        while f.active() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!f.active(), "neither watch is followed any more");
        assert!(f.take_progress().is_empty());
    }

    #[test]
    fn a_record_is_followed_until_it_says_the_child_ended() {
        let home = tempfile::tempdir().expect("temp dir");
        // The follower reads the proxy's own environment, as the agent inherits it.
        std::env::set_var("CLAUDE_CONFIG_DIR", home.path());
        let dir = home.path().join("projects/-tmp-p/sess-1/subagents");
        std::fs::create_dir_all(&dir).expect("record folder");
        let file = dir.join("agent-a1.jsonl");
        let line = |t: &str, stop: &str| {
            format!(
                "{}\n",
                serde_json::json!({"agentId": "a1", "type": "assistant",
                    "message": {"content": [{"type": "text", "text": t}], "stop_reason": stop}})
            )
        };
        std::fs::write(&file, line("looking", "tool_use")).expect("write");
        let mut f = RecordFollower::default();
        assert!(f.follow(RecordWatch {
            child: "child-1".into(),
            session: AgentSessionId::new("sess-1".into()),
            agent_id: "a1".into(),
            task: None,
            spawn: String::new(),
            format: ChildRecord::ClaudeCode,
            live: false,
            within_ms: 60_000,
        }));
        assert!(f.active());
        std::thread::sleep(POLL * 3);
        assert!(f.take_ended().is_empty(), "not ended yet");
        let mut both = line("looking", "tool_use");
        both.push_str(&line("SUB-ANSWER done", "end_turn"));
        std::fs::write(&file, both).expect("write");
        // Once the thread stops counting it, the end it told keeps the shell polling.
        let until = Instant::now() + Duration::from_secs(10);
        while f.shared.followed.load(Ordering::Acquire) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(f.active(), "an end not taken yet keeps the follower active");
        let got = wait_for(&f);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "child-1");
        assert_eq!(got[0].1.answer.as_deref(), Some("SUB-ANSWER done"));
        let until = Instant::now() + Duration::from_secs(5);
        while f.active() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!f.active(), "an ended record is no longer followed");
    }
}
