//! A store writer in a process of its own, for the store's crash and concurrency tests: this
//! test binary run again with only [`writer_process`] selected and its settings in the
//! environment. It appends `{"n":1,...}`, `{"n":2,...}`, ... to one child and prints
//! `committed N` once update N is committed. (A test helper, so not part of the shipped
//! binary.)

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use acp_proxy::store::{ChildState, Store, StoreConfig, StoreLocation, StoreOp};
use acp_proxy::subagents::ids::{ChildId, ClientSessionId};

const ENV: &str = "ACP_PROXY_TEST_STORE_WRITER";

/// What one writer process does.
pub struct Writer<'a> {
    pub path: &'a Path,
    pub child: &'a str,
    pub count: u64,
    /// Updates per committed batch.
    pub batch: u64,
    /// Stop after this long even if `count` is not reached.
    pub duration: Option<Duration>,
}

impl Writer<'_> {
    /// Start the writer process, its stdout and stderr piped.
    pub fn spawn(&self) -> Child {
        let settings = serde_json::json!({
            "path": self.path,
            "child": self.child,
            "count": self.count,
            "batch": self.batch.max(1),
            "duration_ms": self.duration.map(|d| d.as_millis() as u64),
        });
        Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "support::store_writer::writer_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--quiet",
                "--test-threads=1",
            ])
            .env(ENV, settings.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the store writer")
    }
}

/// The `N` of each `committed N` line the writer printed, in order (the test harness's own
/// lines around them are skipped).
pub fn committed_counts(child: &mut Child) -> Vec<u64> {
    let stdout = child.stdout.take().expect("piped stdout");
    BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| l.strip_prefix("committed ")?.trim().parse().ok())
        .collect()
}

/// The writer itself: runs only when started by [`Writer::spawn`].
#[test]
#[ignore = "the store tests' writer process, started by them with its settings"]
fn writer_process() {
    let Ok(settings) = std::env::var(ENV) else {
        return;
    };
    let s: serde_json::Value = serde_json::from_str(&settings).expect("writer settings");
    let path = s["path"].as_str().expect("path");
    let child = s["child"].as_str().expect("child");
    let count = s["count"].as_u64().expect("count");
    let batch = s["batch"].as_u64().expect("batch");
    let deadline = s["duration_ms"]
        .as_u64()
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    let store = Store::open(&StoreConfig {
        location: Some(StoreLocation::Path(path.into())),
        background_prune: false,
        ..StoreConfig::default()
    })
    .expect("open the store");
    store.submit(StoreOp::UpsertChild {
        child_id: ChildId::known(child.to_owned()),
        parent_session_id: ClientSessionId::new("bench".to_owned()),
        spawn_tool_call_id: format!("bench-{child}"),
        agent: "bench-writer".to_owned(),
        cwd: None,
        title: None,
        tool_name: None,
        state: ChildState::Running,
    });
    let mut stdout = std::io::stdout().lock();
    let mut n = 0;
    while n < count && deadline.is_none_or(|d| Instant::now() < d) {
        let end = (n + batch).min(count);
        while n < end {
            n += 1;
            store.submit(StoreOp::AppendUpdate {
                child_id: ChildId::known(child.to_owned()),
                update: format!(
                    r#"{{"sessionUpdate":"agent_message_chunk","n":{n},"content":{{"type":"text","text":"update {n} of {child}"}}}}"#
                )
                .into(),
            });
        }
        store.flush().expect("flush");
        writeln!(stdout, "committed {n}").expect("stdout");
        stdout.flush().expect("stdout");
    }
}
