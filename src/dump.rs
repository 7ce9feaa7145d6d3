//! Traffic dump: a JSONL record of every frame, written off the relay's hot path.
//!
//! The relay hands frames to [`Dump::frame`], which never blocks: records go through a
//! bounded queue to a writer task. If the queue is full the frame is counted as lost and the
//! loss is written into the dump (and reported on stderr) as soon as there is room again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::mpsc;

/// Format version written in the header; bump when records change shape.
pub const FORMAT_VERSION: u32 = 1;

/// Where a frame was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
}

enum Record {
    Frame {
        ts: f64,
        dir: Direction,
        bytes: Bytes,
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

/// Header line, first in every dump.
#[derive(Debug, Serialize)]
pub struct Header<'a> {
    pub format: &'static str,
    pub version: u32,
    pub proxy_version: &'static str,
    pub agent_command: &'a [String],
    pub started_at: String,
    pub redacted: bool,
}

impl Dump {
    /// Create the dump file (mode 0600), write the header, and start the writer task.
    pub fn open(
        path: &Path,
        agent_command: &[String],
        redact: bool,
        queue_frames: usize,
    ) -> Result<(Dump, tokio::task::JoinHandle<()>), DumpError> {
        let file = create_private(path).map_err(|source| DumpError::Create {
            path: path.to_owned(),
            source,
        })?;
        let mut out = std::io::BufWriter::new(file);
        let shown_command = if redact {
            crate::redact::redact_command(agent_command)
        } else {
            agent_command.to_vec()
        };
        let header = Header {
            format: "acp-proxy-dump",
            version: FORMAT_VERSION,
            proxy_version: env!("CARGO_PKG_VERSION"),
            agent_command: &shown_command,
            started_at: rfc3339_now(),
            redacted: redact,
        };
        let mut write_header = || -> std::io::Result<()> {
            serde_json::to_writer(&mut out, &header)?;
            out.write_all(b"\n")?;
            out.flush()
        };
        write_header().map_err(|source| DumpError::Write {
            path: path.to_owned(),
            source,
        })?;
        let (tx, rx) = mpsc::channel(queue_frames.max(1));
        let lost = Arc::new(AtomicU64::new(0));
        let task = tokio::task::spawn_blocking({
            let lost = lost.clone();
            let path = path.to_owned();
            move || writer(out, rx, lost, redact, path)
        });
        Ok((Dump { tx, lost }, task))
    }

    /// Record one frame. Never blocks; a full queue counts the frame as lost.
    pub fn frame(&self, dir: Direction, bytes: &Bytes) {
        let rec = Record::Frame {
            ts: unix_now(),
            dir,
            bytes: bytes.clone(),
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

fn writer(
    mut out: std::io::BufWriter<std::fs::File>,
    mut rx: mpsc::Receiver<Record>,
    lost: Arc<AtomicU64>,
    redact: bool,
    path: PathBuf,
) {
    let mut reported_lost = 0u64;
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
            result = write_line(&mut out, &render(&rec, redact));
        }
        if let Err(e) = result.and_then(|_| out.flush()) {
            return fail(e);
        }
    }
    // Frames lost after the last record was written still have to be accounted for.
    if let Err(e) = report_loss(&mut out, &lost, &mut reported_lost).and_then(|_| out.flush()) {
        fail(e);
    }
}

/// Write a note for frames lost since the last report (and say so on stderr).
fn report_loss(out: &mut impl Write, lost: &AtomicU64, reported: &mut u64) -> std::io::Result<()> {
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
    write_line(
        out,
        &serde_json::json!({"ts": unix_now(), "dir": Direction::ProxyNote,
            "lost_frames": n, "note": format!("dump fell behind: {n} frame(s) not recorded")}),
    )
}

fn write_line(out: &mut impl Write, value: &serde_json::Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

fn render(rec: &Record, redact: bool) -> serde_json::Value {
    match rec {
        Record::Note { ts, message } => {
            serde_json::json!({"ts": ts, "dir": Direction::ProxyNote, "note": message})
        }
        Record::Frame { ts, dir, bytes } => {
            let body = crate::wire::line_body(bytes);
            let mut rec = serde_json::json!({"ts": ts, "dir": dir});
            let is_frame = *dir != Direction::AgentStderr;
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

fn unix_now() -> f64 {
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
fn civil_from_days(z: i64) -> (i64, u32, u32) {
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
}
