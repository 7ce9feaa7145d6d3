//! The editor side of a run: a Zed-like ACP client over the stdin/stdout of the process under
//! test (the proxy wrapping the agent, or a plain relay). It keeps Zed's model of what it
//! received, answers the agent's requests as Zed does (permissions, `fs/*`, `terminal/*`), and
//! writes every message it sends or reads to a JSONL transcript.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use crate::zed::{ZedModel, ZedRules};

/// One `session/update` Zed accepted into a thread, in arrival order.
#[derive(Debug, Clone)]
pub(crate) struct Accepted {
    pub(crate) session: String,
    pub(crate) update: Value,
}

/// A finished `terminal/create`: the command ran to its end when it was created.
pub(crate) struct Terminal {
    pub(crate) output: String,
    pub(crate) exit_code: Option<i32>,
}

pub(crate) struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    eof: bool,
    started: Instant,
    transcript: File,
    workspace: PathBuf,
    next_id: u64,
    responses: HashMap<String, Value>,
    terminals: HashMap<String, Terminal>,
    pub(crate) zed: ZedModel,
    /// Every message read, in order.
    pub(crate) received: Vec<Value>,
    pub(crate) accepted: Vec<Accepted>,
    /// What Zed would have refused or could not serve, and lines that were not JSON.
    pub(crate) problems: Vec<String>,
    /// When the last message arrived.
    last_read: Instant,
}

impl Client {
    /// Start `cmd` (its stderr goes to `stderr_file`) in a process group of its own, so that
    /// everything it starts can be stopped with it.
    pub(crate) fn start(
        mut cmd: Command,
        stderr_file: &Path,
        transcript: &Path,
        rules: ZedRules,
        workspace: &Path,
    ) -> Result<Client> {
        let stderr = File::create(stderr_file).context("create the stderr file")?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .with_context(|| format!("start {cmd:?}"))?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 20, stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Client {
            stdin: child.stdin.take(),
            child,
            lines,
            eof: false,
            started: Instant::now(),
            transcript: File::create(transcript).context("create the client transcript")?,
            workspace: workspace.to_owned(),
            next_id: 0,
            responses: HashMap::new(),
            terminals: HashMap::new(),
            zed: ZedModel::new(rules),
            received: Vec::new(),
            accepted: Vec::new(),
            problems: Vec::new(),
            last_read: Instant::now(),
        })
    }

    fn log(&mut self, dir: &str, msg: &Value) {
        let t = self.started.elapsed().as_secs_f64();
        let rec = json!({"t": (t * 1e4).round() / 1e4, "dir": dir, "msg": msg});
        // The transcript is a debugging aid: a failed write must not end the run.
        let _ = writeln!(self.transcript, "{rec}");
    }

    pub(crate) fn send(&mut self, msg: Value) -> Result<()> {
        self.zed.client_sent(&msg);
        self.log("out", &msg);
        let stdin = self.stdin.as_mut().context("stdin already closed")?;
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .context("write to the process under test")
    }

    /// Send a request; returns its id.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Result<String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(Value::from(id).to_string())
    }

    /// Whether the response to `id` has arrived (and is waiting for [`Client::response`]).
    pub(crate) fn has_response(&self, id: &str) -> bool {
        self.responses.contains_key(id)
    }

    /// Read until the response to `id` arrives (answering the agent's requests meanwhile).
    pub(crate) fn response(&mut self, id: &str, deadline: Instant) -> Result<Value> {
        loop {
            if let Some(r) = self.responses.remove(id) {
                return Ok(r);
            }
            if !self.pump_one(deadline)? {
                bail!(
                    "no response to request {id}: {}",
                    self.why_stopped(deadline)
                );
            }
        }
    }

    /// A request and its response; a JSON-RPC error is an error.
    pub(crate) fn call(&mut self, method: &str, params: Value, deadline: Instant) -> Result<Value> {
        let id = self.request(method, params)?;
        let r = self.response(&id, deadline)?;
        if let Some(e) = r.get("error") {
            bail!("{method} failed: {e}");
        }
        Ok(r.get("result").cloned().unwrap_or(Value::Null))
    }

    fn why_stopped(&mut self, deadline: Instant) -> String {
        if self.eof {
            let status = self.child.try_wait().ok().flatten();
            format!("the process closed its stdout (exit status {status:?})")
        } else if Instant::now() >= deadline {
            "timed out".into()
        } else {
            "stopped".into()
        }
    }

    /// Read until `done` holds, up to `deadline`; false if it never did.
    pub(crate) fn pump_until(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(&Client) -> bool,
    ) -> Result<bool> {
        loop {
            if done(self) {
                return Ok(true);
            }
            if !self.pump_one(deadline)? {
                return Ok(done(self));
            }
        }
    }

    /// Read until nothing arrived for `quiet` (or `deadline` passed).
    pub(crate) fn pump_quiet(&mut self, quiet: Duration, deadline: Instant) -> Result<()> {
        self.last_read = self.last_read.max(Instant::now());
        loop {
            let until = (self.last_read + quiet).min(deadline);
            if Instant::now() >= until {
                return Ok(());
            }
            if !self.pump_one(until)? && (self.eof || Instant::now() >= deadline) {
                return Ok(());
            }
        }
    }

    /// Handle one message; false at EOF or once `deadline` passed with nothing read.
    fn pump_one(&mut self, deadline: Instant) -> Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        let line = match self.lines.recv_timeout(wait) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => return Ok(false),
            Err(RecvTimeoutError::Disconnected) => {
                self.eof = true;
                return Ok(false);
            }
        };
        self.last_read = Instant::now();
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.is_empty() {
            return Ok(true);
        }
        let msg: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                self.problems
                    .push(format!("a line that is not JSON ({e}): {text}"));
                return Ok(true);
            }
        };
        self.log("in", &msg);
        self.received.push(msg.clone());
        self.take(msg)?;
        Ok(true)
    }

    fn take(&mut self, msg: Value) -> Result<()> {
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let sid = msg
            .pointer("/params/sessionId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if method.as_deref() == Some("session/update") {
            let (rejected, dropped) = (self.zed.rejected.len(), self.zed.dropped.len());
            self.zed.received(&msg);
            if self.zed.rejected.len() == rejected && self.zed.dropped.len() == dropped {
                self.accepted.push(Accepted {
                    session: sid,
                    update: msg["params"]["update"].clone(),
                });
            }
            return Ok(());
        }
        let known_before = self.zed.unknown_session_requests.len();
        self.zed.received(&msg);
        let Some(id) = msg.get("id").cloned() else {
            return Ok(()); // another notification: Zed ignores those it does not handle
        };
        let Some(method) = method else {
            self.responses.insert(id.to_string(), msg);
            return Ok(());
        };
        let reply = if self.zed.unknown_session_requests.len() > known_before {
            // Zed answers a request for a session it does not know with an error.
            self.problems
                .push(format!("{method} for a session Zed does not know: {msg}"));
            Err(json!({"code": -32602, "message": format!("session not found: {sid}")}))
        } else {
            self.serve(&method, &msg["params"])
        };
        let answer = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.send(answer)
    }

    /// What Zed answers to a request from the agent side.
    fn serve(&mut self, method: &str, p: &Value) -> std::result::Result<Value, Value> {
        match method {
            "session/request_permission" => {
                // The user allows, once.
                let options = p["options"].as_array().cloned().unwrap_or_default();
                let kind = |o: &Value, k: &str| o["kind"].as_str() == Some(k);
                let pick = options
                    .iter()
                    .find(|o| kind(o, "allow_once"))
                    .or_else(|| options.iter().find(|o| kind(o, "allow_always")))
                    .or_else(|| options.first());
                match pick.and_then(|o| o["optionId"].as_str()) {
                    Some(id) => Ok(json!({"outcome": {"outcome": "selected", "optionId": id}})),
                    None => Err(json!({"code": -32602, "message": "no options to choose from"})),
                }
            }
            "fs/read_text_file" => {
                let path = self.project_path(p)?;
                let text = std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))?;
                let line = p["line"].as_u64().unwrap_or(1).max(1) as usize;
                let limit = p["limit"]
                    .as_u64()
                    .map(|l| l as usize)
                    .unwrap_or(usize::MAX);
                let content: String = text
                    .split_inclusive('\n')
                    .skip(line - 1)
                    .take(limit)
                    .collect();
                Ok(json!({"content": content}))
            }
            "fs/write_text_file" => {
                let path = self.project_path(p)?;
                let content = p["content"].as_str().unwrap_or("");
                std::fs::write(&path, content).map_err(|e| io_error(&path, e))?;
                Ok(Value::Null)
            }
            "terminal/create" => {
                let id = format!("term-{}", self.terminals.len() + 1);
                let terminal = run_terminal(p, &self.workspace);
                self.terminals.insert(id.clone(), terminal);
                Ok(json!({"terminalId": id}))
            }
            "terminal/output" | "terminal/wait_for_exit" => {
                let id = p["terminalId"].as_str().unwrap_or("");
                let Some(t) = self.terminals.get(id) else {
                    return Err(json!({"code": -32602, "message": format!("no terminal {id}")}));
                };
                let exit = json!({"exitCode": t.exit_code, "signal": null});
                if method == "terminal/output" {
                    Ok(json!({"output": t.output, "truncated": false, "exitStatus": exit}))
                } else {
                    Ok(exit)
                }
            }
            "terminal/kill" => Ok(json!({})),
            "terminal/release" => {
                let id = p["terminalId"].as_str().unwrap_or("");
                self.terminals.remove(id);
                Ok(json!({}))
            }
            _ => Err(json!({"code": -32601, "message": format!("method not found: {method}")})),
        }
    }

    /// Zed serves files of the open project only.
    fn project_path(&self, p: &Value) -> std::result::Result<PathBuf, Value> {
        let path = PathBuf::from(p["path"].as_str().unwrap_or(""));
        if path.is_absolute() && path.starts_with(&self.workspace) {
            Ok(path)
        } else {
            Err(
                json!({"code": -32602, "message": format!("not in the project: {}", path.display())}),
            )
        }
    }

    /// Close stdin (Zed quits), read what is left until EOF, and wait for the process; then
    /// stop whatever is left of its process group. Err: it did not exit by itself in time.
    pub(crate) fn close(&mut self, deadline: Instant) -> Result<()> {
        self.stdin = None;
        while self.pump_one(deadline)? {}
        let result = loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break Ok(()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => break Err(anyhow!("it did not exit after its stdin closed")),
                Err(e) => break Err(anyhow!("waiting for it: {e}")),
            }
        };
        self.kill_group();
        result
    }

    fn kill_group(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: killpg has no memory-safety preconditions; a gone group only yields ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.kill_group();
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Value {
    json!({"code": -32603, "message": format!("{}: {e}", path.display())})
}

/// Run a `terminal/create` command to its end with `sh -c` (the commands agents send are
/// short), its output capped by `outputByteLimit`.
pub(crate) fn run_terminal(p: &Value, workspace: &Path) -> Terminal {
    let command = p["command"].as_str().unwrap_or("");
    let args: Vec<&str> = p["args"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let cwd = p["cwd"]
        .as_str()
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.to_owned());
    // Zed runs the command line through a shell (agents send whole command lines).
    let mut line = command.to_owned();
    for a in &args {
        line.push_str(" '");
        line.push_str(&a.replace('\'', r"'\''"));
        line.push('\'');
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&line)
        .current_dir(cwd)
        .stdin(Stdio::null());
    if let Some(env) = p["env"].as_array() {
        for e in env {
            if let (Some(k), Some(v)) = (e["name"].as_str(), e["value"].as_str()) {
                cmd.env(k, v);
            }
        }
    }
    match cmd.output() {
        Ok(out) => {
            let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
            output.push_str(&String::from_utf8_lossy(&out.stderr));
            // Like Zed, keep the end of the output when it is over the limit.
            let limit = p["outputByteLimit"].as_u64().map(|l| l as usize);
            if let Some(limit) = limit.filter(|l| output.len() > *l) {
                let mut start = output.len() - limit;
                while !output.is_char_boundary(start) {
                    start += 1;
                }
                output = output[start..].to_owned();
            }
            Terminal {
                output,
                exit_code: out.status.code(),
            }
        }
        Err(e) => Terminal {
            output: format!("{command}: {e}"),
            exit_code: Some(127),
        },
    }
}
