//! A scripted ACP agent: the default agent of the demo and the fake agent of the tests.
//!
//! Without a script it plays a small but realistic agent (see [`builtin`]). With
//! `--script FILE` it plays the steps of a JSONL file, one object per line:
//!
//! | step | effect |
//! |---|---|
//! | `{"expect": "METHOD"}` | wait for a client message with that method (others are skipped); remember its id |
//! | `{"reply": RESULT}` | answer the remembered request with this result |
//! | `{"reply_error": {"code": C, "message": M}}` | answer it with an error |
//! | `{"send": MESSAGE}` | write one JSON message (`"$id"` anywhere is replaced by the remembered id) |
//! | `{"raw": "TEXT"}` | write TEXT and a newline, unchecked (garbage, partial JSON, ...) |
//! | `{"raw_bytes": [N, ...]}` | write these bytes exactly (no newline added) |
//! | `{"send_file": PATH}` | copy a file's bytes to stdout exactly |
//! | `{"record": PATH}` | append every line received from now on to PATH, until stdin closes |
//! | `{"record": {"path": PATH, "lines": N}}` | append the next N lines received to PATH, then go on |
//! | `{"pid_file": PATH}` | write this process's pid to PATH |
//! | `{"stderr": "TEXT"}` | write a line to stderr |
//! | `{"sleep_ms": N}` | pause |
//! | `{"flood": {"frames": N, "size": BYTES}}` | write N notifications of about BYTES each |
//! | `{"ignore_sigterm": true}` | ignore SIGTERM from now on |
//! | `{"spawn": ["CMD", ...]}` | start a process that inherits stdio (a left-behind grandchild) |
//! | `{"close_stdout": true}` | close stdout (the proxy sees EOF while the agent still runs) |
//! | `{"wait_eof": true}` | read until the client closes stdin |
//! | `{"hang": true}` | stop doing anything (reads nothing, writes nothing) |
//! | `{"exit": CODE}` | exit with CODE |
//! | `{"abort": true}` | die by SIGABRT |
//!
//! When the script ends the agent waits for stdin to close and exits 0.

pub mod builtin;

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// Lines from stdin, read on a thread so that steps can wait with or without consuming them.
pub struct Input {
    rx: mpsc::Receiver<Vec<u8>>,
}

impl Input {
    pub fn spawn() -> Input {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut lock = stdin.lock();
            loop {
                let mut line = Vec::new();
                match lock.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Input { rx }
    }

    /// Next raw line, or None at EOF.
    pub fn next_line(&self) -> Option<Vec<u8>> {
        self.rx.recv().ok()
    }

    /// Next line that parses as a JSON object, or None at EOF.
    pub fn next_message(&self) -> Option<Value> {
        loop {
            let line = self.next_line()?;
            if let Ok(v @ Value::Object(_)) = serde_json::from_slice::<Value>(&line) {
                return Some(v);
            }
        }
    }
}

/// Write one JSON value as a line and flush.
pub fn write_message(out: &mut impl Write, msg: &Value) -> Result<()> {
    serde_json::to_writer(&mut *out, msg)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// Run the agent: the script if one is given, else the built-in demo behaviour.
pub fn run(script: Option<&Path>) -> Result<()> {
    match script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read agent script {}", path.display()))?;
            let steps = parse_script(&text)
                .with_context(|| format!("bad agent script {}", path.display()))?;
            run_script(&steps)
        }
        None => builtin::run(),
    }
}

pub fn parse_script(text: &str) -> Result<Vec<Value>> {
    let mut steps = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let step: Value =
            serde_json::from_str(line).with_context(|| format!("line {}: not JSON", n + 1))?;
        if !step.is_object() {
            bail!("line {}: a step must be a JSON object", n + 1);
        }
        steps.push(step);
    }
    Ok(steps)
}

fn run_script(steps: &[Value]) -> Result<()> {
    let input = Input::spawn();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut current_id = Value::Null;
    for step in steps {
        let Some((name, arg)) = step.as_object().and_then(|o| o.iter().next()) else {
            continue;
        };
        match name.as_str() {
            "expect" => {
                let want = arg.as_str().context("expect takes a method name")?;
                loop {
                    let Some(msg) = input.next_message() else {
                        return Ok(());
                    };
                    if msg.get("method").and_then(Value::as_str) == Some(want) {
                        current_id = msg.get("id").cloned().unwrap_or(Value::Null);
                        break;
                    }
                }
            }
            "reply" => write_message(
                &mut out,
                &serde_json::json!({"jsonrpc": "2.0", "id": current_id, "result": arg}),
            )?,
            "reply_error" => write_message(
                &mut out,
                &serde_json::json!({"jsonrpc": "2.0", "id": current_id, "error": arg}),
            )?,
            "send" => {
                let mut msg = arg.clone();
                substitute_id(&mut msg, &current_id);
                write_message(&mut out, &msg)?;
            }
            "raw" => {
                out.write_all(arg.as_str().context("raw takes a string")?.as_bytes())?;
                out.write_all(b"\n")?;
                out.flush()?;
            }
            "raw_bytes" => {
                let bytes: Vec<u8> = serde_json::from_value(arg.clone())
                    .context("raw_bytes takes an array of bytes")?;
                out.write_all(&bytes)?;
                out.flush()?;
            }
            "send_file" => {
                let path = arg.as_str().context("send_file takes a path")?;
                let mut f = std::fs::File::open(path).with_context(|| format!("open {path}"))?;
                std::io::copy(&mut f, &mut out)?;
                out.flush()?;
            }
            "record" => {
                let (path, limit) = match arg {
                    Value::String(path) => (path.as_str(), None),
                    _ => (
                        arg.get("path")
                            .and_then(Value::as_str)
                            .context("record takes a path or {\"path\": PATH, \"lines\": N}")?,
                        arg.get("lines").and_then(Value::as_u64),
                    ),
                };
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("open {path}"))?;
                let mut seen = 0u64;
                while limit.is_none_or(|n| seen < n) {
                    let Some(line) = input.next_line() else { break };
                    f.write_all(&line)
                        .with_context(|| format!("write {path}"))?;
                    seen += 1;
                }
                f.flush()?;
            }
            "pid_file" => {
                let path = arg.as_str().context("pid_file takes a path")?;
                std::fs::write(path, format!("{}\n", std::process::id()))
                    .with_context(|| format!("write {path}"))?;
            }
            "stderr" => {
                let text = arg.as_str().context("stderr takes a string")?;
                eprintln!("{text}");
            }
            "sleep_ms" => {
                let ms = arg.as_u64().context("sleep_ms takes a number")?;
                std::thread::sleep(std::time::Duration::from_millis(ms));
            }
            "flood" => {
                let frames = arg.get("frames").and_then(Value::as_u64).unwrap_or(1000);
                let size = arg.get("size").and_then(Value::as_u64).unwrap_or(1024) as usize;
                let pad = "x".repeat(size.saturating_sub(100));
                for n in 0..frames {
                    let line = format!(
                        "{{\"jsonrpc\":\"2.0\",\"method\":\"_demo/flood\",\"params\":{{\"n\":{n},\"pad\":\"{pad}\"}}}}\n"
                    );
                    out.write_all(line.as_bytes())?;
                }
                out.flush()?;
            }
            "ignore_sigterm" => {
                #[cfg(unix)]
                // SAFETY: installing SIG_IGN has no preconditions.
                unsafe {
                    libc::signal(libc::SIGTERM, libc::SIG_IGN);
                }
                #[cfg(not(unix))]
                anyhow::bail!("ignore_sigterm: Unix only");
            }
            "spawn" => {
                let argv: Vec<String> =
                    serde_json::from_value(arg.clone()).context("spawn takes [cmd, args...]")?;
                let (cmd, args) = argv.split_first().context("spawn needs a command")?;
                std::process::Command::new(cmd)
                    .args(args)
                    .spawn()
                    .with_context(|| format!("spawn {cmd}"))?;
            }
            "close_stdout" => {
                out.flush()?;
                #[cfg(unix)]
                // SAFETY: closing our own stdout; later writes fail with EBADF, which is the point.
                unsafe {
                    libc::close(libc::STDOUT_FILENO);
                }
                #[cfg(not(unix))]
                anyhow::bail!("close_stdout: Unix only");
            }
            "wait_eof" => while input.next_line().is_some() {},
            "hang" => loop {
                std::thread::park();
            },
            "exit" => {
                out.flush()?;
                std::process::exit(arg.as_i64().unwrap_or(0) as i32);
            }
            "abort" => {
                out.flush()?;
                std::process::abort();
            }
            other => bail!("unknown script step `{other}`"),
        }
    }
    while input.next_line().is_some() {}
    Ok(())
}

fn substitute_id(v: &mut Value, id: &Value) {
    match v {
        Value::String(s) if s == "$id" => *v = id.clone(),
        Value::Array(items) => items.iter_mut().for_each(|i| substitute_id(i, id)),
        Value::Object(map) => map.values_mut().for_each(|i| substitute_id(i, id)),
        _ => {}
    }
}
