//! Helpers for tests that drive the built `acp-proxy` binary with the scripted demo agent.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The proxy binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_acp-proxy");

/// How long any single wait in a test may take before the test fails instead of hanging.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// Shutdown timings short enough for tests that do not check the defaults.
pub const FAST_SHUTDOWN: &str = "[shutdown]\nstdin_grace_ms = 200\nterm_grace_ms = 400\n";

/// A scratch directory with the files of one test.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("create a temp dir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The path as a string, for scripts and arguments.
    pub fn p(&self, name: &str) -> String {
        self.path(name).to_string_lossy().into_owned()
    }

    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> String {
        std::fs::write(self.path(name), bytes).expect("write a scratch file");
        self.p(name)
    }

    /// Write an agent script (one step per value) and return the agent command that plays it.
    pub fn agent(&self, steps: &[Value]) -> Vec<String> {
        let text: String = steps.iter().map(|s| format!("{s}\n")).collect();
        let script = self.write("agent-script.jsonl", text);
        vec![
            BIN.to_owned(),
            "demo-agent".to_owned(),
            "--script".to_owned(),
            script,
        ]
    }
}

/// A running proxy with its stdout read line by line and its stderr collected.
pub struct Proxy {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    status: Option<ExitStatus>,
}

impl Proxy {
    /// Start `acp-proxy [proxy_args] -- agent...` in `cwd`.
    pub fn start(cwd: &Path, proxy_args: &[&str], agent: &[String]) -> Proxy {
        Proxy::start_with_env(cwd, proxy_args, agent, &[])
    }

    /// As [`Proxy::start`], with extra environment variables for the proxy (and its agent).
    pub fn start_with_env(
        cwd: &Path,
        proxy_args: &[&str],
        agent: &[String],
        envs: &[(&str, &Path)],
    ) -> Proxy {
        // `ACP_PROXY_WRAPPER="valgrind --tool=massif ..."` runs the proxy under a profiler
        // (used with the soak, scripts/soak.sh).
        let wrapper = std::env::var("ACP_PROXY_WRAPPER").unwrap_or_default();
        let mut wrapper = wrapper.split_whitespace();
        let mut cmd = match wrapper.next() {
            Some(program) => {
                let mut cmd = Command::new(program);
                cmd.args(wrapper).arg(BIN);
                cmd
            }
            None => Command::new(BIN),
        };
        // The child-transcript store defaults under $XDG_STATE_HOME, the config under
        // $XDG_CONFIG_HOME: keep both in the test dir (a test may point them elsewhere
        // through `envs`).
        cmd.current_dir(cwd)
            .env("XDG_STATE_HOME", cwd.join("state"))
            .env("XDG_CONFIG_HOME", cwd.join("config"))
            .args(proxy_args);
        cmd.envs(envs.iter().map(|(k, v)| (*k, *v)));
        if !agent.is_empty() {
            cmd.arg("--").args(agent);
        }
        Proxy::spawn(cmd)
    }

    /// Another program that speaks ACP on its stdio (a conductor running proxy links), in
    /// `cwd` with the same `XDG_*` folders as [`Proxy::start`].
    pub fn start_program(cwd: &Path, program: &Path, args: &[String]) -> Proxy {
        let mut cmd = Command::new(program);
        cmd.current_dir(cwd)
            .env("XDG_STATE_HOME", cwd.join("state"))
            .env("XDG_CONFIG_HOME", cwd.join("config"))
            .args(args);
        Proxy::spawn(cmd)
    }

    fn spawn(mut cmd: Command) -> Proxy {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start acp-proxy");
        let stdout = child.stdout.take().expect("proxy stdout");
        let stderr = child.stderr.take().expect("proxy stderr");
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
        let collected = Arc::new(Mutex::new(Vec::new()));
        let stderr_reader = std::thread::spawn({
            let collected = collected.clone();
            move || {
                let mut stderr = stderr;
                let mut buf = [0u8; 8192];
                while let Ok(n @ 1..) = stderr.read(&mut buf) {
                    collected
                        .lock()
                        .expect("stderr lock")
                        .extend_from_slice(&buf[..n]);
                }
            }
        });
        Proxy {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: collected,
            stderr_reader: Some(stderr_reader),
            status: None,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Write bytes to the proxy's stdin.
    pub fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(bytes).expect("write to the proxy");
        stdin.flush().expect("flush to the proxy");
    }

    /// Write one JSON message as a line.
    pub fn send_json(&mut self, msg: &Value) {
        self.send(format!("{msg}\n").as_bytes());
    }

    /// Take the stdin pipe (to write from another thread); dropping it closes the proxy's stdin.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin still open")
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Next line from the proxy's stdout (terminator included); None at EOF.
    pub fn next_line(&self) -> Option<Vec<u8>> {
        match self.lines.recv_timeout(TIMEOUT) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no output from the proxy within {TIMEOUT:?}; stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// Next stdout line, parsed as JSON.
    pub fn next_json(&self) -> Value {
        let line = self.next_line().unwrap_or_else(|| {
            panic!(
                "proxy stdout closed while a message was expected; stderr:\n{}",
                self.stderr()
            )
        });
        serde_json::from_slice(&line).unwrap_or_else(|e| {
            panic!(
                "proxy wrote a non-JSON line ({e}): {}",
                String::from_utf8_lossy(&line)
            )
        })
    }

    /// Read `n` lines from stdout (fewer at EOF), concatenated.
    pub fn read_lines(&self, n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..n {
            match self.next_line() {
                Some(line) => out.extend_from_slice(&line),
                None => break,
            }
        }
        out
    }

    /// Everything left on stdout until EOF.
    pub fn rest(&self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(line) = self.next_line() {
            out.extend_from_slice(&line);
        }
        out
    }

    /// Wait for the proxy to exit (killing it and failing the test after `TIMEOUT`).
    pub fn wait(&mut self) -> ExitStatus {
        if let Some(status) = self.status {
            return status;
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the proxy") {
                self.status = Some(status);
                if let Some(reader) = self.stderr_reader.take() {
                    // Bounded: a leftover process holding the proxy's stderr must not hang us.
                    let until = Instant::now() + Duration::from_secs(3);
                    while !reader.is_finished() && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the proxy did not exit within {TIMEOUT:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Exit code after `wait` (panics if the proxy died by a signal).
    pub fn exit_code(&mut self) -> i32 {
        let status = self.wait();
        status
            .code()
            .unwrap_or_else(|| panic!("proxy killed by a signal: {status:?}"))
    }

    /// Everything the proxy wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr lock")).into_owned()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory-safety preconditions.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "signal the proxy");
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Wait until a file exists and holds a pid (written by the agent or a grandchild).
pub fn read_pid(path: &Path) -> i32 {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no pid in {} within {TIMEOUT:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process is alive: it exists and is not a zombie (a zombie has exited; one left
/// for PID 1 to reap is not a leftover process of ours).
pub fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_ascii_whitespace().next())
                .unwrap_or("?");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

/// Assert that a process is gone. A process sent SIGKILL may take a moment to be torn down (a
/// while on a loaded machine), so allow some seconds before failing.
pub fn assert_gone(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) is still running after the proxy exited"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kill a process a failed test left behind (best effort, by pid).
pub fn cleanup(pid: i32) {
    if alive(pid) {
        // SAFETY: as above.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// The JSON-RPC error of a response line, checked to be an error for `id`.
pub fn error_of<'a>(msg: &'a Value, id: &Value) -> &'a Value {
    assert_eq!(&msg["id"], id, "response id in {msg}");
    assert!(msg.get("result").is_none(), "expected an error: {msg}");
    &msg["error"]
}

/// Kills the listed processes if the test fails, so a failing test leaves nothing behind.
pub struct KillOnPanic(pub Vec<i32>);

impl Drop for KillOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.iter().copied().for_each(cleanup);
        }
    }
}
