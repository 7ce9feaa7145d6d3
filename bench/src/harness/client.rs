//! The client side of one measured run: spawn the topology (agent alone, agent behind `cat`,
//! agent behind acp-proxy), do the ACP handshake, then receive and check everything.

use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::gen::{self, Stream, CLASS_KEEP};
use super::mapped::Mapped;
use super::wire;

/// What sits between the client and the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relay {
    /// Nothing: the client talks to the agent's pipes.
    Direct,
    /// One `cat` per direction: the cost of a separate process that only copies bytes.
    Cat,
    /// acp-proxy with `display = "off"`.
    Off,
    /// acp-proxy with `display = "zed"`.
    Zed,
    /// Another acp-proxy binary (`--baseline-proxy`) with `display = "off"`: before/after
    /// comparisons in one run.
    BaseOff,
    /// The `--baseline-proxy` binary with `display = "zed"`.
    BaseZed,
}

impl Relay {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Relay::Direct => "direct",
            Relay::Cat => "cat",
            Relay::Off => "proxy off",
            Relay::Zed => "proxy zed",
            Relay::BaseOff => "baseline off",
            Relay::BaseZed => "baseline zed",
        }
    }

    /// Whether this relay rewrites subagent traffic (`display = "zed"`).
    pub(crate) fn is_zed(self) -> bool {
        matches!(self, Relay::Zed | Relay::BaseZed)
    }

    pub(crate) fn parse(s: &str) -> anyhow::Result<Relay> {
        Ok(match s {
            "direct" => Relay::Direct,
            "cat" => Relay::Cat,
            "off" => Relay::Off,
            "zed" => Relay::Zed,
            "baseline" | "baseline-off" => Relay::BaseOff,
            "baseline-zed" => Relay::BaseZed,
            _ => bail!("unknown relay `{s}` (direct, cat, off, zed, baseline-off, baseline-zed)"),
        })
    }
}

/// Fixed inputs of every run.
pub(crate) struct Env {
    pub bench_exe: PathBuf,
    pub proxy_exe: PathBuf,
    pub baseline_exe: Option<PathBuf>,
    /// Child transcripts in an in-memory store instead of a file.
    pub store_in_memory: bool,
    pub workdir: PathBuf,
    /// Where this invocation's stores go, a fresh one per run (removed when it ends).
    pub stores: PathBuf,
    pub seed: u64,
}

pub(crate) enum Work<'a> {
    Stream(&'a Stream),
    Pings(u64),
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Stream mode: seconds from `session/prompt` sent to its response received.
    pub secs: f64,
    /// Frames received that are not verbatim generated frames (rewritten or added).
    pub extra_frames: u64,
    /// Generated frames a `zed` relay was allowed to change and did not forward verbatim.
    pub changed_frames: u64,
    /// Peak RSS (VmHWM) of the relay process in KiB.
    pub relay_hwm_kib: Option<u64>,
    /// CPU seconds (user + system) the relay process used.
    pub relay_cpu_s: Option<f64>,
    /// Ping-pong round trips in nanoseconds, sorted.
    pub rtts: Vec<u64>,
    /// Stream mode: lines the client received before the prompt's response.
    pub received_frames: u64,
    /// Bytes the relay's store takes on disk once the run is over (a file store only).
    pub store_bytes: Option<u64>,
}

struct Topology {
    children: Vec<Child>,
    /// The process whose memory and CPU are reported (none for direct).
    relay_pid: Option<u32>,
    to_relay: ChildStdin,
    from_relay: ChildStdout,
    stderr_file: Option<PathBuf>,
    /// The relay's store file, if it keeps one on disk.
    store: Option<PathBuf>,
}

fn spawn(
    env: &Env,
    relay: Relay,
    agent_args: &[String],
    presets: Option<&[&str]>,
) -> anyhow::Result<Topology> {
    // Every process of a run shares one process group (led by the first), so the watchdog
    // can stop all of them, including whatever a relay under test started.
    let agent_cmd = || {
        let mut c = Command::new(&env.bench_exe);
        c.arg("agent").args(agent_args).process_group(0);
        c
    };
    let take = |c: &mut Child| -> anyhow::Result<(ChildStdin, ChildStdout)> {
        Ok((
            c.stdin.take().context("child without stdin")?,
            c.stdout.take().context("child without stdout")?,
        ))
    };
    match relay {
        Relay::Direct => {
            let mut agent = agent_cmd()
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .context("spawning the bench agent")?;
            let (to_relay, from_relay) = take(&mut agent)?;
            Ok(Topology {
                children: vec![agent],
                relay_pid: None,
                to_relay,
                from_relay,
                stderr_file: None,
                store: None,
            })
        }
        Relay::Cat => {
            let mut agent = agent_cmd()
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .context("spawning the bench agent")?;
            let (agent_in, agent_out) = take(&mut agent)?;
            let group = agent.id() as i32;
            let mut down = Command::new("cat")
                .process_group(group)
                .stdin(Stdio::from(agent_out))
                .stdout(Stdio::piped())
                .spawn()
                .context("spawning cat")?;
            let mut up = Command::new("cat")
                .process_group(group)
                .stdin(Stdio::piped())
                .stdout(Stdio::from(agent_in))
                .spawn()
                .context("spawning cat")?;
            let from_relay = down.stdout.take().context("cat without stdout")?;
            let to_relay = up.stdin.take().context("cat without stdin")?;
            Ok(Topology {
                relay_pid: Some(down.id()),
                children: vec![agent, down, up],
                to_relay,
                from_relay,
                stderr_file: None,
                store: None,
            })
        }
        Relay::Off | Relay::Zed | Relay::BaseOff | Relay::BaseZed => {
            let display = if relay.is_zed() { "zed" } else { "off" };
            let exe = match relay {
                Relay::BaseOff | Relay::BaseZed => env
                    .baseline_exe
                    .as_ref()
                    .context("the baseline relay needs --baseline-proxy")?,
                _ => &env.proxy_exe,
            };
            let slug = relay.name().replace(' ', "-");
            let cfg = env.workdir.join(format!("{slug}.toml"));
            // Each run writes child transcripts to a fresh store of its own: never the
            // user's, and never one grown by earlier runs. Nothing is deleted until the whole
            // invocation ends: creating thousands of files right after deleting thousands is
            // slow on some file systems (ext4's check of recently deleted inodes), which no
            // user's store meets at that rate.
            static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let store = env.stores.join(format!("{slug}-{n}.sqlite3"));
            let store_path = if env.store_in_memory {
                "\"memory\"".to_owned()
            } else {
                serde_json::to_string(&store.to_string_lossy())?
            };
            let mut text = format!(
                "display = \"{display}\"\nlog_level = \"warn\"\n\n[store]\npath = {store_path}\n"
            );
            if let Some(names) = presets {
                text.push_str(&format!(
                    "\n[subagents]\npresets = {}\n",
                    serde_json::to_string(names)?
                ));
            }
            std::fs::write(&cfg, text)?;
            let err_path = env.workdir.join(format!("{slug}.stderr"));
            let err = File::create(&err_path)?;
            let mut proxy = Command::new(exe)
                .process_group(0)
                .arg("--config")
                .arg(&cfg)
                .arg("--")
                .arg(&env.bench_exe)
                .arg("agent")
                .args(agent_args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::from(err))
                .spawn()
                .with_context(|| format!("spawning {}", exe.display()))?;
            let (to_relay, from_relay) = take(&mut proxy)?;
            Ok(Topology {
                relay_pid: Some(proxy.id()),
                children: vec![proxy],
                to_relay,
                from_relay,
                stderr_file: Some(err_path),
                store: (!env.store_in_memory).then_some(store),
            })
        }
    }
}

/// Reads `\n`-terminated lines into one reusable buffer.
struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    scan: usize,
}

impl<R: Read> Lines<R> {
    fn new(r: R) -> Self {
        Lines {
            r,
            buf: vec![0; 1 << 20],
            start: 0,
            end: 0,
            scan: 0,
        }
    }

    fn next(&mut self) -> std::io::Result<Option<Range<usize>>> {
        loop {
            if let Some(p) = memchr::memchr(b'\n', &self.buf[self.scan..self.end]) {
                let line = self.start..self.scan + p + 1;
                self.start = line.end;
                self.scan = line.end;
                return Ok(Some(line));
            }
            self.scan = self.end;
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.scan -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = self.r.read(&mut self.buf[self.end..])?;
            if n == 0 {
                return Ok(None);
            }
            self.end += n;
        }
    }

    fn get(&self, r: Range<usize>) -> &[u8] {
        &self.buf[r]
    }
}

const PROMPT_ID: u64 = 3;

fn send(w: &mut ChildStdin, line: &[u8]) -> anyhow::Result<()> {
    w.write_all(line).context("writing to the relay")
}

/// `initialize` (as Zed) and `session/new`; returns once both are answered.
fn handshake<R: Read>(to: &mut ChildStdin, from: &mut Lines<R>) -> anyhow::Result<()> {
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"clientInfo":{"name":"zed","title":"Zed","version":"0.210.0"}}}"#;
    let new = br#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/home/user/project","mcpServers":[]}}"#;
    for (id, frame) in [(1u64, &init[..]), (2, &new[..])] {
        let mut line = frame.to_vec();
        line.push(b'\n');
        send(to, &line)?;
        let prefix = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},");
        loop {
            let Some(r) = from.next()? else {
                bail!("the relay closed during the handshake")
            };
            let l = from.get(r);
            if l.starts_with(prefix.as_bytes()) {
                if memchr::memmem::find(l, b"\"error\"").is_some() {
                    bail!(
                        "handshake request {id} failed: {}",
                        String::from_utf8_lossy(l)
                    );
                }
                break;
            }
        }
    }
    let prompt = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{PROMPT_ID},\"method\":\"session/prompt\",\"params\":{{\"sessionId\":\"{}\",\"prompt\":[{{\"type\":\"text\",\"text\":\"go\"}}]}}}}\n",
        gen::SESSION_ID
    );
    send(to, prompt.as_bytes())
}

fn is_prompt_response(line: &[u8]) -> bool {
    line.starts_with(format!("{{\"jsonrpc\":\"2.0\",\"id\":{PROMPT_ID},\"result\"").as_bytes())
}

fn permission_answers(line: &[u8]) -> anyhow::Result<u64> {
    let v: serde_json::Value =
        serde_json::from_slice(line).context("the prompt response is not JSON")?;
    v["result"]["_meta"]["bench"]["permissionAnswers"]
        .as_u64()
        .context("the prompt response lacks the bench's answer count")
}

/// Answer a permission request (any id), if `line` is one.
fn maybe_answer(line: &[u8], to: &mut ChildStdin, scratch: &mut Vec<u8>) -> anyhow::Result<bool> {
    match wire::request_id(line, b"session/request_permission") {
        Some(id) => {
            scratch.clear();
            wire::permission_answer(id, wire::body(line), scratch);
            send(to, scratch)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

fn proc_status_kib(pid: u32, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn proc_cpu_s(pid: u32) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks as f64 / hz as f64)
}

/// Run one configuration once.
pub(crate) fn run(
    env: &Env,
    relay: Relay,
    work: Work<'_>,
    timeout: Duration,
) -> anyhow::Result<Outcome> {
    let report = env.workdir.join("pings.txt");
    let agent_args: Vec<String> = match &work {
        Work::Stream(s) => vec!["--traffic".into(), s.path.to_string_lossy().into_owned()],
        Work::Pings(n) => vec![
            "--pings".into(),
            n.to_string(),
            "--seed".into(),
            env.seed.to_string(),
            "--report".into(),
            report.to_string_lossy().into_owned(),
        ],
    };
    let _ = std::fs::remove_file(&report);
    let presets = match &work {
        Work::Stream(s) => s.profile.presets(),
        Work::Pings(_) => None,
    };
    let topo = spawn(env, relay, &agent_args, presets)?;
    let group = topo.children.first().map(Child::id).unwrap_or(0) as i32;
    // Watchdog: a relay that stalls must not hang the bench.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(timeout) {
            if group > 0 {
                // SAFETY: signalling the process group this run created.
                unsafe { libc::killpg(group, libc::SIGKILL) };
            }
            return true;
        }
        false
    });
    let result = drive(topo, relay, &work, &report);
    let _ = done_tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    if timed_out {
        bail!("{}: no result within {timeout:?}", relay.name());
    }
    result
}

fn drive(
    mut topo: Topology,
    relay: Relay,
    work: &Work<'_>,
    report: &Path,
) -> anyhow::Result<Outcome> {
    let mut lines = Lines::new(&mut topo.from_relay);
    let outcome = (|| -> anyhow::Result<Outcome> {
        handshake(&mut topo.to_relay, &mut lines)?;
        let mut out = match work {
            Work::Stream(s) => receive_stream(&mut topo.to_relay, &mut lines, s, relay)?,
            Work::Pings(n) => {
                let mut o = receive_pings(&mut topo.to_relay, &mut lines, *n)?;
                let text = std::fs::read_to_string(report)
                    .with_context(|| format!("reading {}", report.display()))?;
                o.rtts = text.lines().filter_map(|l| l.parse().ok()).collect();
                if o.rtts.len() as u64 != *n {
                    bail!("the agent reported {} of {n} round trips", o.rtts.len());
                }
                o.rtts.sort_unstable();
                o
            }
        };
        if let Some(pid) = topo.relay_pid {
            out.relay_hwm_kib = proc_status_kib(pid, "VmHWM:");
            out.relay_cpu_s = proc_cpu_s(pid);
        }
        Ok(out)
    })();
    // Close our side: the relay closes the agent's stdin and everything winds down.
    drop(lines);
    drop(topo.to_relay);
    let mut sink = Vec::new();
    let _ = topo.from_relay.read_to_end(&mut sink);
    let mut statuses = Vec::new();
    for mut c in topo.children {
        statuses.push(c.wait());
    }
    let outcome = outcome.map(|mut o| {
        o.store_bytes = topo.store.as_deref().map(store_size);
        o
    });
    let outcome = outcome.map_err(|e| match &topo.stderr_file {
        Some(p) => {
            let tail = std::fs::read_to_string(p).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(5).collect();
            e.context(format!("relay stderr (last lines, newest first): {tail:?}"))
        }
        None => e,
    })?;
    for s in statuses {
        let s = s?;
        if !s.success() {
            bail!("{}: a process of the run exited with {s}", relay.name());
        }
    }
    Ok(outcome)
}

fn receive_stream<R: Read>(
    to: &mut ChildStdin,
    lines: &mut Lines<R>,
    stream: &Stream,
    relay: Relay,
) -> anyhow::Result<Outcome> {
    let expected = Mapped::open(&stream.path)?;
    let classes = std::fs::read(gen::class_path(&stream.path))?;
    let exp = expected.bytes();
    if exp.len() as u64 != stream.summary.bytes || classes.len() as u64 != stream.summary.frames {
        bail!("{} does not match its summary", stream.path.display());
    }
    // Only a rewriting relay may change or divert subagent frames; everything else must
    // arrive verbatim and in order.
    let may_change = relay.is_zed();
    let mut out = Outcome::default();
    let mut scratch = Vec::with_capacity(512);
    let (mut pos, mut idx) = (0usize, 0usize);
    let next_expected = |pos: usize| -> Range<usize> {
        match memchr::memchr(b'\n', &exp[pos..]) {
            Some(p) => pos..pos + p + 1,
            None => pos..exp.len(),
        }
    };
    let t0 = Instant::now();
    loop {
        let Some(r) = lines.next()? else {
            bail!(
                "{}: the relay closed after {idx} of {} frames",
                relay.name(),
                stream.summary.frames
            )
        };
        let line = lines.get(r);
        out.received_frames += 1;
        if pos < exp.len() {
            // Look ahead over frames the relay may change or divert (never over one it must
            // keep) for the one that arrived.
            let (mut p, mut i, mut skipped) = (pos, idx, 0u64);
            let mut matched = false;
            loop {
                let e = next_expected(p);
                if exp[e.clone()] == *line {
                    pos = e.end;
                    idx = i + 1;
                    out.changed_frames += skipped;
                    maybe_answer(line, to, &mut scratch)?;
                    matched = true;
                    break;
                }
                if !may_change || classes[i] == CLASS_KEEP || e.end == exp.len() || skipped == 256 {
                    break;
                }
                p = e.end;
                i += 1;
                skipped += 1;
            }
            if matched {
                continue;
            }
        }
        if is_prompt_response(line) {
            out.secs = t0.elapsed().as_secs_f64();
            while may_change && idx < classes.len() && classes[idx] != CLASS_KEEP {
                out.changed_frames += 1;
                idx += 1;
            }
            if idx != classes.len() {
                bail!(
                    "{}: generated frame {idx} of {} never arrived verbatim ({} later frames did not match)",
                    relay.name(),
                    classes.len(),
                    out.extra_frames
                );
            }
            let answers = permission_answers(line)?;
            if answers != stream.summary.permission_requests {
                bail!(
                    "{}: the agent got {answers} of {} permission answers",
                    relay.name(),
                    stream.summary.permission_requests
                );
            }
            return Ok(out);
        }
        if !may_change {
            bail!(
                "{}: frame {idx} differs from what the agent sent ({} bytes received: {})",
                relay.name(),
                line.len(),
                String::from_utf8_lossy(&line[..line.len().min(200)])
            );
        }
        maybe_answer(line, to, &mut scratch)?;
        out.extra_frames += 1;
    }
}

/// Bytes on disk of a store: its database, WAL and transcript files.
fn store_size(db: &Path) -> u64 {
    fn size(p: &Path) -> u64 {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => std::fs::read_dir(p)
                .map(|d| d.flatten().map(|e| size(&e.path())).sum())
                .unwrap_or(0),
            Ok(m) => m.len(),
            Err(_) => 0,
        }
    }
    let (Some(dir), Some(name)) = (db.parent(), db.file_name()) else {
        return 0;
    };
    let name = name.to_string_lossy();
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(name.as_ref()))
                .map(|e| size(&e.path()))
                .sum()
        })
        .unwrap_or(0)
}

fn receive_pings<R: Read>(
    to: &mut ChildStdin,
    lines: &mut Lines<R>,
    n: u64,
) -> anyhow::Result<Outcome> {
    let mut scratch = Vec::with_capacity(512);
    let mut answered = 0u64;
    let mut out = Outcome::default();
    loop {
        let Some(r) = lines.next()? else {
            bail!("the relay closed after {answered} of {n} pings")
        };
        let line = lines.get(r);
        if maybe_answer(line, to, &mut scratch)? {
            answered += 1;
        } else if is_prompt_response(line) {
            let agent_count = permission_answers(line)?;
            if answered != n || agent_count != n {
                bail!(
                    "ping-pong: {answered} pings answered, agent counted {agent_count}, want {n}"
                );
            }
            return Ok(out);
        } else {
            out.extra_frames += 1;
        }
    }
}
