//! Starting the agent once as the proxy does for Zed, and what it answered.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::zed_model::{self, ZedRules};
use acp_proxy::config::Config;
use acp_proxy::engine::{Action, Engine, Mode};
use acp_proxy::transport::agent_process::{self as child, Agent};
use acp_proxy::transport::framing::{Frame, LineCodec};
use acp_proxy::wire::line_body;

/// Zed's `initialize` as a stable Zed (1.18) sends it: `clientInfo.name` "zed" and its
/// capabilities. The engine then adds what the proxy adds for Zed (the subagents opt-in).
fn zed_initialize() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": zed_model::initialize_params(ZedRules::V1_18),
    })
}

/// Lines of the agent's stderr kept to show when it fails.
const STDERR_TAIL: usize = 12;

/// How the one `initialize` went.
pub(super) enum Outcome {
    SpawnFailed(String),
    Answered {
        response: Value,
        elapsed: Duration,
        mode: Option<Mode>,
        noise: Option<String>,
    },
    /// The agent wrote something that is not the answer, then closed stdout or exited.
    Ended {
        status: String,
        stderr: Vec<String>,
        noise: Option<String>,
    },
    TimedOut {
        stderr: Vec<String>,
        noise: Option<String>,
    },
}

/// Spawn the agent, send it what the proxy sends for Zed's `initialize`, wait for the answer,
/// and stop the agent the way the proxy does when Zed goes away.
pub(super) async fn initialize(cfg: &Config, command: &[String], timeout: Duration) -> Outcome {
    let mut engine = Engine::new(cfg.engine_config());
    let mut actions = Vec::new();
    let request = Bytes::from(format!("{}\n", zed_initialize()));
    engine.from_client(request, 0, &mut actions);
    let to_agent: Vec<Bytes> = actions
        .into_iter()
        .filter_map(|a| match a {
            Action::ToAgent(b) => Some(b),
            _ => None,
        })
        .collect();

    let started = Instant::now();
    let agent = match Agent::spawn(command, &cfg.shutdown) {
        Ok(a) => a,
        Err(e) => return Outcome::SpawnFailed(e.to_string()),
    };
    let Agent {
        process: mut child,
        mut stdin,
        stdout,
        stderr,
        pgid,
        guardian,
    } = agent;
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_task = tokio::spawn(keep_tail(stderr, tail.clone()));
    let mut frames =
        tokio_util::codec::FramedRead::new(stdout, LineCodec::new(cfg.max_frame_bytes));
    let mut noise = None;
    for frame in &to_agent {
        // An agent that exits at once closes its stdin: that shows below as its end.
        let _ = stdin.write_all(frame).await;
    }
    let _ = stdin.flush().await;
    let deadline = tokio::time::Instant::now() + timeout;
    let answer = loop {
        let next = match tokio::time::timeout_at(deadline, frames.next()).await {
            Err(_) => break None,
            Ok(None) | Ok(Some(Err(_))) => break Some(None),
            Ok(Some(Ok(frame))) => frame,
        };
        let Frame::Line(line) = next else {
            noise.get_or_insert_with(|| "a line longer than max_frame_bytes".to_owned());
            continue;
        };
        let body = line_body(&line);
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(body) {
            Ok(msg) if msg.get("id") == Some(&json!(0)) && msg.get("method").is_none() => {
                break Some(Some(msg));
            }
            // Notifications and requests before the answer are allowed; Zed handles them.
            Ok(_) => {}
            Err(_) => {
                noise.get_or_insert_with(|| {
                    let text = String::from_utf8_lossy(body);
                    let short: String = text.chars().take(120).collect();
                    short
                });
            }
        }
    };
    let elapsed = started.elapsed();
    drop(stdin);
    let grace = Duration::from_millis(cfg.shutdown.stdin_grace_ms);
    let term = Duration::from_millis(cfg.shutdown.term_grace_ms);
    let status = child::stop(&mut child, pgid, grace, term).await;
    // The group is stopped: the guardian has nothing left to do.
    if let Some(g) = guardian {
        g.stand_down().await;
    }
    // The agent is gone: its stderr ends (a grandchild holding it open is not waited for).
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr_task).await;
    let stderr_lines = || {
        tail.lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    };
    match answer {
        Some(Some(response)) => Outcome::Answered {
            response,
            elapsed,
            mode: engine.mode(),
            noise,
        },
        Some(None) => Outcome::Ended {
            status: match status {
                Ok(s) => child::describe_status(&s),
                Err(e) => format!("unknown ({e})"),
            },
            stderr: stderr_lines(),
            noise,
        },
        None => Outcome::TimedOut {
            stderr: stderr_lines(),
            noise,
        },
    }
}

async fn keep_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Ok(mut t) = tail.lock() {
            if t.len() == STDERR_TAIL {
                t.pop_front();
            }
            t.push_back(line);
        }
    }
}
