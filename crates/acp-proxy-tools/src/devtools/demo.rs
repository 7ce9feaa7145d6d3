//! `acp-proxy demo`: a scripted client plays Zed against the proxy running the demo agent,
//! and prints what Zed would show: the parent thread with its subagent cards, then each
//! child thread with the index range its card points at.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::zed_model::{Entry, Thread, ZedModel};

const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// The proxy under test and a Zed model of its client side.
struct Session {
    proxy: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    zed: ZedModel,
    next_id: u64,
    /// Card titles in the order Zed saw them, per card (live progress).
    titles: Vec<(String, String)>,
}

impl Session {
    fn start(extra_args: &[String]) -> Result<Session> {
        let me = std::env::current_exe().context("cannot locate the acp-proxy binary")?;
        let given = |flag: &str| {
            extra_args
                .iter()
                .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
        };
        let mut proxy = Command::new(&me);
        // A store of the user's own, if they name one; else nothing is kept.
        if !given("--store") {
            proxy.args(["--store", "memory"]);
        }
        if !given("--log-level") {
            proxy.args(["--log-level", "warn"]);
        }
        // No agent command: the proxy runs its built-in demo agent.
        let mut proxy = proxy
            .args(extra_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start the proxy")?;
        let stdin = proxy.stdin.take().context("proxy stdin")?;
        let stdout = proxy.stdout.take().context("proxy stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Session {
            proxy,
            stdin: Some(stdin),
            lines,
            zed: ZedModel::default(),
            next_id: 0,
            titles: Vec::new(),
        })
    }

    /// Send a request as Zed would and wait for its response, applying everything that
    /// arrives meanwhile to the Zed model.
    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.zed.client_sent(&msg);
        let stdin = self.stdin.as_mut().context("proxy stdin closed")?;
        match writeln!(stdin, "{msg}").and_then(|()| stdin.flush()) {
            Ok(()) => {}
            // The proxy ended before reading (a flag it does not take): say why, as when it
            // ends after reading.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Err(self.no_answer(method))
            }
            Err(e) => return Err(e).context("write to the proxy"),
        }
        loop {
            let line = match self.lines.recv_timeout(STEP_TIMEOUT) {
                Ok(line) => line,
                Err(_) => return Err(self.no_answer(method)),
            };
            let v: Value = serde_json::from_str(&line)
                .with_context(|| format!("proxy sent invalid JSON: {line}"))?;
            self.watch_titles(&v);
            self.zed.received(&v);
            if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                if let Some(err) = v.get("error") {
                    bail!("`{method}` failed: {err}");
                }
                return Ok(v["result"].clone());
            }
        }
    }

    /// Why `method` got no answer: the proxy ended (most often on a flag it does not take,
    /// which it has said on stderr), or it is stuck.
    fn no_answer(&mut self, method: &str) -> anyhow::Error {
        drop(self.stdin.take());
        let ended = (0..50).find_map(|_| match self.proxy.try_wait() {
            Ok(Some(status)) => Some(status),
            _ => {
                std::thread::sleep(Duration::from_millis(20));
                None
            }
        });
        match ended {
            Some(status) => anyhow::anyhow!(
                "the proxy ended ({status}) before answering `{method}`; its message is above. \
                 The demo passes the flags after `--` to the proxy, which takes --config, \
                 --display, --dump, --store and --log-level (see `acp-proxy --help`)"
            ),
            None => {
                let _ = self.proxy.kill();
                let _ = self.proxy.wait();
                anyhow::anyhow!(
                    "no answer to `{method}` from the proxy within {} s",
                    STEP_TIMEOUT.as_secs()
                )
            }
        }
    }

    fn watch_titles(&mut self, msg: &Value) {
        let update = &msg["params"]["update"];
        if let (Some(id), Some(title)) = (
            update.get("toolCallId").and_then(Value::as_str),
            update.get("title").and_then(Value::as_str),
        ) {
            if update.pointer("/_meta/subagent_session_info").is_some() {
                self.titles.push((id.to_owned(), title.to_owned()));
            }
        }
    }

    fn finish(mut self) -> Result<()> {
        drop(self.stdin.take());
        let status = self.proxy.wait().context("wait for the proxy")?;
        if !status.success() {
            bail!("the proxy exited with {status}");
        }
        Ok(())
    }
}

/// Run the demo and print to stdout.
pub fn run(extra_args: &[String]) -> Result<()> {
    let mut s = Session::start(extra_args)?;
    s.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}},
               "clientInfo": {"name": "zed", "version": "demo"}}),
    )?;
    let new = s.request(
        "session/new",
        json!({"cwd": "/home/user/project", "mcpServers": []}),
    )?;
    let parent = new["sessionId"]
        .as_str()
        .context("session/new gave no sessionId")?
        .to_owned();
    let prompt = "survey the project";
    s.request(
        "session/prompt",
        json!({"sessionId": parent, "prompt": [{"type": "text", "text": prompt}]}),
    )?;

    println!("Live turn: what the subagent cards showed while the subagents ran");
    for (id, title) in &s.titles {
        println!("  card {id}: {title}");
    }
    println!();
    println!("== Parent thread {parent} (live) ==");
    print_thread(&s.zed.threads[&parent], None);

    // Reopen the thread from history, as Zed does after a restart: the parent replays, and
    // Zed loads each card's child thread from the proxy.
    s.request(
        "session/load",
        json!({"sessionId": parent, "cwd": "/home/user/project", "mcpServers": []}),
    )?;
    println!();
    println!("== Parent thread {parent} (reopened from history) ==");
    print_thread(&s.zed.threads[&parent], None);
    let cards: Vec<_> = s.zed.threads[&parent]
        .cards()
        .into_iter()
        .cloned()
        .collect();
    for card in cards {
        let Some(info) = card.subagent.clone() else {
            continue;
        };
        s.request(
            "session/load",
            json!({"sessionId": info.session_id, "cwd": "/home/user/project", "mcpServers": []}),
        )?;
        let range = match info.end {
            Some(end) => format!("entries {}..={end}", info.start),
            None => format!("entries {}.. (still running)", info.start),
        };
        println!();
        println!(
            "== Child thread of \"{}\" ({}) — card shows {range} ==",
            card.title, info.session_id
        );
        print_thread(
            &s.zed.threads[&info.session_id],
            Some((info.start, info.end)),
        );
    }
    let problems =
        s.zed.rejected.len() + s.zed.dropped.len() + s.zed.unknown_session_requests.len();
    println!();
    println!(
        "Zed model: {} threads, {} rejected notifications, {} dropped updates, {} requests for unknown sessions",
        s.zed.threads.len(),
        s.zed.rejected.len(),
        s.zed.dropped.len(),
        s.zed.unknown_session_requests.len()
    );
    s.finish()?;
    if problems > 0 {
        bail!("the proxy sent Zed something it would reject or drop");
    }
    Ok(())
}

fn print_thread(thread: &Thread, range: Option<(u64, Option<u64>)>) {
    for (i, entry) in thread.entries.iter().enumerate() {
        let i = i as u64;
        let mark = match range {
            Some((start, end)) if i >= start && end.is_none_or(|e| i <= e) => "│",
            Some(_) => " ",
            None => "",
        };
        let text = match entry {
            Entry::User(t) => format!("user: {}", one_line(t)),
            Entry::Assistant(t) => format!("assistant: {}", one_line(t)),
            Entry::Tool(tc) if tc.is_subagent() => {
                let info = tc.subagent.as_ref();
                let range = info.map(|i| match i.end {
                    Some(e) => format!("{}..={e}", i.start),
                    None => format!("{}..", i.start),
                });
                format!(
                    "subagent card \"{}\" [{}] → child {} entries {}",
                    tc.title,
                    tc.status,
                    info.map(|i| i.session_id.as_str()).unwrap_or("?"),
                    range.unwrap_or_default()
                )
            }
            Entry::Tool(tc) => format!("tool call \"{}\" [{}]", tc.title, tc.status),
            other => other.to_string(),
        };
        println!("  {mark}[{i}] {text}");
    }
}

fn one_line(s: &str) -> String {
    let flat = s.replace('\n', " ⏎ ");
    if flat.chars().count() > 100 {
        let cut: String = flat.chars().take(99).collect();
        format!("{cut}…")
    } else {
        flat
    }
}
