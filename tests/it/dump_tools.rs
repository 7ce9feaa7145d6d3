//! The dump tools on dumps the proxy binary recorded: every capture in `tests/fixtures/`
//! played through the real proxy (the capture's agent frames by a scripted agent, its client
//! frames by a client paced as the capture was), the demo, and scripted sessions with
//! timeouts, a dying agent, oversized lines, a restart and rotation. For each dump:
//! `replay --diff` reproduces what the proxy wrote exactly, `dump check` finds nothing wrong
//! in what the proxy wrote, and `view` / `stats` read it.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use acp_proxy::dump::reader::{ReadOptions, Reader};
use acp_proxy_tools::dump_tools::{check, cli, replay};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_acp-proxy");

/// The longest any single wait may take.
const WAIT: Duration = Duration::from_secs(10);

/// A proxy started with a scripted agent, its stdout read on a thread.
struct Run {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Ids of the responses received (to the client's requests).
    answered: HashSet<String>,
    /// Ids of the requests the proxy sent to the client.
    asked: HashSet<String>,
    /// Everything received, in order.
    received: Vec<Value>,
}

impl Run {
    fn start(dir: &Path, args: &[&str], agent_steps: &[Value]) -> Run {
        let script = dir.join("agent.jsonl");
        let text: String = agent_steps.iter().map(|s| format!("{s}\n")).collect();
        std::fs::write(&script, text).expect("agent script");
        let mut child = Command::new(BIN)
            .current_dir(dir)
            .env("XDG_STATE_HOME", dir.join("state"))
            .args(args)
            .arg("--")
            .args([BIN, "demo-agent", "--script"])
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start acp-proxy");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                // Lines that are not JSON (relayed garbage) still count as output.
                let v = serde_json::from_slice(&line)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&line).into_owned()));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Run {
            stdin: child.stdin.take(),
            child,
            lines,
            answered: HashSet::new(),
            asked: HashSet::new(),
            received: Vec::new(),
        }
    }

    fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").expect("write to the proxy");
        stdin.flush().expect("flush");
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to the proxy");
        stdin.flush().expect("flush");
    }

    fn take(&mut self, v: &Value) {
        self.received.push(v.clone());
        let Some(id) = v.get("id") else { return };
        if v.get("method").is_some() {
            self.asked.insert(id.to_string());
        } else {
            self.answered.insert(id.to_string());
        }
    }

    /// Read until `done` holds (true) or `limit` passes (false).
    fn until(&mut self, limit: Duration, mut done: impl FnMut(&Run) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match self.lines.recv_timeout(left) {
                Ok(v) => self.take(&v),
                Err(_) => return done(self),
            }
        }
        true
    }

    /// Read until nothing came for `quiet`.
    fn settle(&mut self, quiet: Duration) {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            match self.lines.recv_timeout(quiet) {
                Ok(v) => self.take(&v),
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Close stdin and wait for a clean exit.
    fn finish(mut self) -> i32 {
        self.stdin = None;
        let deadline = Instant::now() + WAIT;
        loop {
            while self.lines.try_recv().is_ok() {}
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the proxy did not exit");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A capture's records as (direction, message).
fn fixture(name: &str) -> Vec<(String, Value)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let r: Value = serde_json::from_str(l).expect("fixture line");
            (r["dir"].as_str().unwrap_or("").to_owned(), r["msg"].clone())
        })
        .collect()
}

fn all_fixtures() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut names = Vec::new();
    for (dir, prefix) in [(root.clone(), ""), (root.join("agents"), "agents/")] {
        for e in std::fs::read_dir(&dir).expect("fixtures") {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            if name.ends_with(".jsonl") {
                names.push(format!("{prefix}{name}"));
            }
        }
    }
    names.sort();
    assert!(names.len() >= 20, "found the captures: {names:?}");
    names
}

/// Play a capture through the proxy with `config` and return the dump's path. The agent
/// side is the capture's agent frames, each batch written once the client frame before it
/// arrived; the client sends its frames in order, each after the answers the capture shows
/// before it.
fn play(dir: &Path, name: &str, config: &str) -> PathBuf {
    let records = fixture(name);
    let mut steps = Vec::new();
    for (d, msg) in &records {
        if d == "out" {
            if let Some(m) = msg.get("method").and_then(Value::as_str) {
                steps.push(json!({"expect": m}));
            }
        } else {
            steps.push(json!({"raw": msg.to_string()}));
        }
    }
    let cfg = dir.join("proxy.toml");
    std::fs::write(&cfg, config).expect("config");
    let dump = dir.join("dump.jsonl");
    let (cfg_s, dump_s) = (cfg.to_string_lossy(), dump.to_string_lossy());
    let mut run = Run::start(dir, &["--config", &cfg_s, "--dump", &dump_s], &steps);
    let mut client_requests = Vec::new();
    for (i, (d, msg)) in records.iter().enumerate() {
        if d != "out" {
            continue;
        }
        // Answers the capture shows before this frame.
        let before: Vec<String> = records[..i]
            .iter()
            .filter(|(d, m)| d == "in" && m.get("method").is_none())
            .filter_map(|(_, m)| m.get("id").map(Value::to_string))
            .filter(|id| client_requests.contains(id))
            .collect();
        run.until(WAIT, |r| before.iter().all(|id| r.answered.contains(id)));
        if msg.get("method").is_none() {
            // An answer to the agent: wait for its request to come through (a child's may be
            // held for a while, or routed elsewhere).
            if let Some(id) = msg.get("id").map(Value::to_string) {
                run.until(Duration::from_secs(2), |r| r.asked.contains(&id));
            }
        } else if let Some(id) = msg.get("id") {
            client_requests.push(id.to_string());
        }
        run.send(msg);
    }
    run.until(WAIT, |r| {
        client_requests.iter().all(|id| r.answered.contains(id))
    });
    run.settle(Duration::from_millis(300));
    assert_eq!(run.finish(), 0, "{name}: the proxy exits cleanly");
    dump
}

fn replay_report(dumps: &[PathBuf]) -> replay::Report {
    let (report, _) = replay::replay_files(dumps, None, true, |_| Ok(())).expect("replay");
    report
}

/// `dump check --json` of a dump, as findings.
fn check_json(dumps: &[PathBuf]) -> Vec<Value> {
    let mut reader = Reader::open(dumps, ReadOptions::default()).expect("open the dump");
    let cfg = cli::settings(&reader, None).expect("settings");
    let mut tracker = cli::tracker_for(&cfg);
    let mut out = Vec::new();
    let summary = check::run(
        &mut reader,
        &mut tracker,
        &check::Options::default(),
        true,
        &mut out,
    )
    .expect("check");
    assert!(summary.frames > 0, "the check read the frames: {summary:?}");
    String::from_utf8(out)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("finding JSON"))
        .collect()
}

fn tool(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run acp-proxy");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Replay, check, view and stats on one dump; returns the findings on frames the proxy did
/// not write (for the record).
fn judge(what: &str, dumps: &[PathBuf]) -> Vec<Value> {
    let report = replay_report(dumps);
    assert!(
        report.differences.is_empty() && report.more_differences == 0,
        "{what}: the replay differs from the dump:\n{}",
        replay::render_report(&report)
    );
    assert!(
        report.inputs > 0 && report.to_client > 0,
        "{what}: {report:?}"
    );
    let findings = check_json(dumps);
    let (proxy, other): (Vec<Value>, Vec<Value>) = findings
        .into_iter()
        .partition(|f| f["origin"] == "proxy" && f["severity"] != "info");
    assert!(
        proxy.is_empty(),
        "{what}: the check finds problems in what the proxy wrote:\n{}",
        proxy
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    other
}

/// Captures whose subagents the presets recognise: in Zed mode the proxy makes cards.
const WITH_CARDS: &[&str] = &[
    "claude-agent-acp-0.101.0-native",
    "claude-agent-acp-0.23.1-",
    "qwen-0.24.4-foreground-one",
    "qwen-0.24.4-foreground-two",
    "codex-2.6.0-standard-",
    "opencode-1.18.33-one",
    "opencode-1.18.33-two",
    "pi-0.87.1-one",
    "pi-0.87.1-two",
    "pi-0.87.1-background",
    "qwen-0.24.4-background",
];

#[test]
fn every_capture_replays_exactly_and_the_proxys_output_checks_clean() {
    let mut notes = Vec::new();
    for name in all_fixtures() {
        for (mode, config) in [
            ("auto", "log_level = \"warn\"\n[store]\npath = \"memory\"\n"),
            (
                "zed",
                "display = \"zed\"\nlog_level = \"warn\"\n[store]\npath = \"memory\"\n",
            ),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let dump = play(dir.path(), &name, config);
            let what = format!("{name} ({mode})");
            // Kept on request: the replay cases in tests/replay are made from these.
            if let Some(keep) = std::env::var_os("ACP_PROXY_KEEP_DUMPS") {
                let to = Path::new(&keep).join(format!("{mode}-{}", name.replace('/', "_")));
                std::fs::copy(&dump, to).expect("keep the dump");
            }
            if mode == "zed" {
                let text = std::fs::read_to_string(&dump).expect("dump");
                let cards = text
                    .lines()
                    .filter(|l| l.contains("proxy→client") && l.contains("subagent_session_info"))
                    .count();
                eprintln!("{what}: {cards} frames with a subagent card");
                if name.contains("transcript-flag") {
                    // Its client asked for the child's transcript itself, as a rewriting link
                    // in front does: the proxy stands down.
                    assert_eq!(cards, 0, "{what}: a link behind an opted-in one made cards");
                }
                if WITH_CARDS.iter().any(|n| name.contains(n)) {
                    assert!(cards > 0, "{what}: the proxy made subagent cards");
                    // The agent's subagent and the proxy's card for it are one subagent.
                    let want = if name.contains("two-subagents") { 2 } else { 1 };
                    let (_, stats, _) = tool(&["dump", "stats", &dump.to_string_lossy()]);
                    assert!(
                        stats.contains(&format!("\nsubagents: {want}\n")),
                        "{what}: {want} subagent(s):\n{stats}"
                    );
                }
            }
            for f in judge(&what, std::slice::from_ref(&dump)) {
                if f["severity"] == "error" {
                    notes.push(format!(
                        "{what}: {} {} {}",
                        f["origin"], f["rule"], f["message"]
                    ));
                }
            }
        }
    }
    // What the check finds in the agents' and clients' own frames is no failure of the proxy;
    // it is listed for whoever reads the test's output.
    for n in &notes {
        eprintln!("input finding: {n}");
    }
    // The check is awake: the legacy Claude capture has frames off the schema (a `null`
    // where the schema wants a number), relayed as the agent sent them.
    assert!(
        notes
            .iter()
            .any(|n| n.contains("claude-agent-acp-0.23.1") && n.contains("schema")),
        "{notes:#?}"
    );
}

#[test]
fn the_demo_session_with_child_loads_replays_exactly_and_reads_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dump = dir.path().join("demo.jsonl");
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["demo", "--", "--dump"])
        .arg(&dump)
        .output()
        .expect("run the demo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let others = judge("demo", std::slice::from_ref(&dump));
    assert!(
        others.is_empty(),
        "the demo agent and client are clean too: {others:?}"
    );
    let d = dump.to_string_lossy();

    let (code, stats, _) = tool(&["dump", "stats", &d]);
    assert_eq!(code, 0);
    assert!(stats.contains("subagents: 2"), "{stats}");
    assert!(stats.contains("prompt turns: 1 (end_turn 1)"), "{stats}");
    assert!(
        stats.contains("Survey text files") && stats.contains("Look for TODOs"),
        "{stats}"
    );

    let (code, view, _) = tool(&["dump", "view", &d]);
    assert_eq!(code, 0);
    // The children's work is indented under their spawn, and answers carry their latency.
    assert!(
        view.lines()
            .any(|l| l.contains("a→p") && l.contains("↳ tool_call")),
        "{view}"
    );
    assert!(
        view.lines()
            .any(|l| l.contains("p→c") && l.contains("session/prompt") && l.contains("ms)")),
        "{view}"
    );
    assert!(!view.contains('\x1b'), "no colour when not on a terminal");
    // Each child's event (kept for its child thread) names its subagent: the two at work at
    // once are told apart.
    let row = |needle: &str| {
        view.lines()
            .find(|l| l.contains("a→p") && l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} in:\n{view}"))
    };
    assert!(
        row("Find `*.txt`").ends_with("]")
            && row("Find `*.txt`").contains("[subagent \"Survey text files\" acp-p…"),
        "{view}"
    );
    assert!(
        row("Search `TODO`").contains("[subagent \"Look for TODOs\" acp-p…"),
        "{view}"
    );
    assert!(
        row("One TODO, in src/main.rs").contains("[subagent \"Look for TODOs\""),
        "{view}"
    );
    let (_, colored, _) = tool(&["dump", "view", &d, "--color", "always"]);
    assert!(colored.contains("\x1b[35m"), "colour when asked for");

    // Filters: a method, a direction, a child's tool call, JSON records.
    let (_, only, _) = tool(&[
        "dump",
        "view",
        &d,
        "--method",
        "session/load",
        "--direction",
        "c2p",
    ]);
    let rows: Vec<&str> = only.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 3, "{only}");
    let (_, child, _) = tool(&[
        "dump",
        "view",
        &d,
        "--tool-call",
        "toolu_demo_0001",
        "--direction",
        "a2p",
    ]);
    assert!(
        child.contains("Find `*.txt`") && !child.contains("Search `TODO`"),
        "{child}"
    );
    let (_, json_out, _) = tool(&["dump", "view", &d, "--json", "--kind", "tool_call"]);
    let recs: Vec<Value> = json_out
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert!(
        recs[0]["format"] == "acp-proxy-dump",
        "a header first: {}",
        recs[0]
    );
    assert!(
        recs.len() > 4
            && recs[1..].iter().all(|r| r["frame"]
                .as_str()
                .is_some_and(|f| f.contains("\"tool_call\"")))
    );
    // The filtered output is itself a dump the tools read.
    let part = dir.path().join("part.jsonl");
    std::fs::write(&part, &json_out).expect("write");
    let (code, _, err) = tool(&["dump", "stats", &part.to_string_lossy()]);
    assert_eq!(code, 0, "{err}");
    let (_, none, _) = tool(&["dump", "view", &d, "--grep", "no such text anywhere"]);
    assert_eq!(none.lines().filter(|l| !l.starts_with('#')).count(), 0);

    // The report holds the frames: it is as private as the dump, even over an older file.
    let report = dir.path().join("report.html");
    std::fs::write(&report, "old").expect("write");
    std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (code, _, err) = tool(&["dump", "html", &d, "-o", &report.to_string_lossy()]);
    assert_eq!(code, 0, "{err}");
    let mode = std::fs::metadata(&report)
        .expect("report")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "report mode {mode:o}");
}

/// A scripted session through the proxy: the client frames are sent in order, each after the
/// proxy delivered `wait` lines more.
fn scripted(dir: &Path, config: &str, agent: &[Value], client: &[(usize, Value)]) -> PathBuf {
    let cfg = dir.join("proxy.toml");
    std::fs::write(&cfg, config).expect("config");
    let dump = dir.join("dump.jsonl");
    let (cfg_s, dump_s) = (cfg.to_string_lossy(), dump.to_string_lossy());
    let mut run = Run::start(dir, &["--config", &cfg_s, "--dump", &dump_s], agent);
    let mut received = 0usize;
    for (wait, msg) in client {
        let want = received + wait;
        let deadline = Instant::now() + WAIT;
        while received < want && Instant::now() < deadline {
            if let Ok(v) = run.lines.recv_timeout(Duration::from_millis(100)) {
                run.take(&v);
                received += 1;
            }
        }
        assert!(
            received >= want,
            "the proxy delivered {received} lines, {want} expected"
        );
        match msg {
            Value::String(raw) => run.send_raw(raw.as_bytes()),
            m => run.send(m),
        }
    }
    run.settle(Duration::from_millis(400));
    run.finish();
    dump
}

const ZED_INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"_meta":{"terminal_output":true,"terminal-auth":true}},"clientInfo":{"name":"zed","title":"Zed","version":"0.212.5"}}}"#;

fn zed_init() -> Value {
    serde_json::from_str(ZED_INIT).expect("json")
}

fn update(session: &str, u: Value) -> Value {
    json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId": session, "update": u}})
}

#[test]
fn held_permissions_released_by_their_timeout_replay_at_the_same_point() {
    // A legacy child's permission request arrives before the child's tool call: the proxy
    // holds it for permission_hold_ms, then shows it in the parent as sent.
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "S"}}),
        json!({"expect": "session/prompt"}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"Task","status":"pending","rawInput":{"prompt":"p","description":"d"},"_meta":{"claudeCode":{"toolName":"Agent"}}}))}),
        json!({"send": {"jsonrpc":"2.0","id":"perm-1","method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":"toolu_9","title":"Write x"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}}),
        json!({"sleep_ms": 400}),
        json!({"send": update("S", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"still working"}}))}),
        json!({"expect": "session/cancel"}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed"}))}),
        json!({"send": {"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}}),
    ];
    let client = vec![
        (0, zed_init()),
        (
            1,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
        ),
        (
            1,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}),
        ),
        // The card, the message, then (after the hold) the permission request.
        (
            3,
            json!({"jsonrpc":"2.0","id":"perm-1","result":{"outcome":{"outcome":"selected","optionId":"allow"}}}),
        ),
        (
            0,
            json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}),
        ),
    ];
    let config = "[zed]\npermission_hold_ms = 300\n[store]\npath = \"memory\"\n";
    let dump = scripted(dir.path(), config, &agent, &client);
    let text = std::fs::read_to_string(&dump).expect("dump");
    assert!(
        text.contains("could not be attributed within 300 ms"),
        "the hold timed out:\n{text}"
    );
    judge("held permission", &[dump]);
}

#[test]
fn an_agent_that_dies_with_requests_open_replays_with_the_proxys_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "S"}}),
        json!({"expect": "session/prompt"}),
        json!({"stderr": "fatal: out of tokens"}),
        json!({"exit": 3}),
    ];
    let client = vec![
        (0, zed_init()),
        (
            1,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
        ),
        (
            1,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}),
        ),
    ];
    let dump = scripted(dir.path(), "[store]\npath = \"memory\"\n", &agent, &client);
    let text = std::fs::read_to_string(&dump).expect("dump");
    assert!(text.contains("the agent exited before answering"), "{text}");
    judge("dying agent", &[dump]);
}

#[test]
fn garbage_secrets_and_oversized_lines_replay_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Longer than a pipe's buffer, so that the proxy sees them in pieces.
    let big = "y".repeat(200_000);
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"raw": "agent garbage {"}),
        json!({"raw_bytes": [255, 254, 10]}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "S"}}),
        json!({"send": update("S", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text": big}}))}),
        json!({"send": update("S", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"small"}}))}),
        json!({"expect": "session/prompt"}),
        json!({"reply": {"stopReason": "end_turn"}}),
    ];
    let client = vec![
        (0, zed_init()),
        (1, Value::String("client garbage {{\n".into())),
        (
            2,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"gh","command":"gh","args":[],"env":[{"name":"GITHUB_TOKEN","value":"ghp_SECRET"}]}]}}),
        ),
        (
            3,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text": big}]}}),
        ),
    ];
    let dump = scripted(
        dir.path(),
        "max_frame_bytes = 2048\n[store]\npath = \"memory\"\n",
        &agent,
        &client,
    );
    let text = std::fs::read_to_string(&dump).expect("dump");
    assert!(!text.contains("ghp_SECRET") && text.contains("\"redacted\":true"));
    for side in ["agent", "client"] {
        assert!(
            text.contains(&format!(
                "a line from the {side} is longer than max_frame_bytes"
            )),
            "{side}"
        );
    }
    assert!(text.contains("\"partial\":true"), "pieces are marked");
    let others = judge("garbage and oversized lines", std::slice::from_ref(&dump));
    // The garbage is found, on the side that sent it, where it was.
    let rules: Vec<(String, String)> = others
        .iter()
        .map(|f| {
            (
                f["origin"].as_str().unwrap_or("").to_owned(),
                f["rule"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert!(
        rules.contains(&("agent".into(), "not-json".into())),
        "{rules:?}"
    );
    assert!(
        rules.contains(&("client".into(), "not-json".into())),
        "{rules:?}"
    );
    assert!(rules.iter().any(|r| r.1 == "oversized"), "{rules:?}");
    let (code, view, _) = tool(&["dump", "view", &dump.to_string_lossy(), "--errors"]);
    assert_eq!(code, 0);
    assert!(
        view.contains("not JSON: agent garbage {") && view.contains("not UTF-8"),
        "{view}"
    );
}

#[test]
fn a_restart_that_serves_a_child_from_the_store_replays_when_both_dumps_are_given() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store.sqlite3");
    let config = format!("[store]\npath = {:?}\n", store.to_string_lossy());
    let first = dir.path().join("one");
    let second = dir.path().join("two");
    std::fs::create_dir_all(&first).expect("dir");
    std::fs::create_dir_all(&second).expect("dir");
    let init_reply = json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}});
    let agent1 = vec![
        json!({"expect": "initialize"}),
        json!({"reply": init_reply}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "S"}}),
        json!({"expect": "session/prompt"}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"Task","status":"pending","rawInput":{"prompt":"look","description":"Look"},"_meta":{"claudeCode":{"toolName":"Agent"}}}))}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call","toolCallId":"toolu_2","title":"Glob","status":"pending","_meta":{"claudeCode":{"parentToolUseId":"toolu_1","toolName":"Glob"}}}))}),
        json!({"send": update("S", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"found"},"_meta":{"claudeCode":{"parentToolUseId":"toolu_1"}}}))}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed"}))}),
        json!({"reply": {"stopReason": "end_turn"}}),
    ];
    let client1 = vec![
        (0, zed_init()),
        (
            1,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
        ),
        (
            1,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}),
        ),
    ];
    let dump1 = scripted(&first, &config, &agent1, &client1);
    let text = std::fs::read_to_string(&dump1).expect("dump");
    let child = text
        .split("subagent_session_info\\\":{\\\"session_id\\\":\\\"")
        .nth(1)
        .and_then(|rest| rest.split("\\\"").next())
        .expect("the card names the child")
        .to_owned();
    // A new proxy process: Zed reopens the parent, then the child's card.
    let agent2 = vec![
        json!({"expect": "initialize"}),
        json!({"reply": init_reply}),
        json!({"expect": "session/load"}),
        json!({"send": update("S", json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"go"}}))}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"Task","status":"completed","rawInput":{"prompt":"look","description":"Look"},"_meta":{"claudeCode":{"toolName":"Agent"}}}))}),
        json!({"reply": {}}),
    ];
    let client2 = vec![
        (0, zed_init()),
        (
            1,
            json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"S","cwd":"/w","mcpServers":[]}}),
        ),
        (
            3,
            json!({"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId": child,"cwd":"/w","mcpServers":[]}}),
        ),
    ];
    let dump2 = scripted(&second, &config, &agent2, &client2);
    let text2 = std::fs::read_to_string(&dump2).expect("dump");
    assert!(
        text2.contains("found"),
        "the child's text came from the store:\n{text2}"
    );
    // Alone, the second run lacks what the store held: the replay says where.
    let alone = replay_report(std::slice::from_ref(&dump2));
    assert!(!alone.differences.is_empty(), "the store's part is missing");
    judge("restart", &[dump1, dump2]);
}

#[test]
fn a_rotated_dump_reads_and_replays_across_its_parts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "S"}}),
        json!({"flood": {"frames": 400, "size": 300}}),
    ];
    let client = vec![
        (0, zed_init()),
        (
            1,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
        ),
        (
            400,
            json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"S"}}),
        ),
    ];
    let dump = scripted(
        dir.path(),
        "[dump]\nmax_bytes = \"600KiB\"\nmax_files = 6\n[store]\npath = \"memory\"\n",
        &agent,
        &client,
    );
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("dump.jsonl"))
        })
        .collect();
    parts.sort();
    assert!(parts.len() >= 3, "rotated into parts: {parts:?}");
    for p in &parts {
        let len = std::fs::metadata(p).expect("part").len();
        assert!(len <= 100 * 1024 + 1024, "{}: {len} bytes", p.display());
    }
    // Given in any order, the parts are read in order and replay as one session.
    judge("rotated", &parts);
    assert!(dump.exists());
    let args: Vec<String> = parts
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let mut stats_args = vec!["dump", "stats"];
    stats_args.extend(args.iter().map(String::as_str));
    let (code, stats, err) = tool(&stats_args);
    assert_eq!(code, 0, "{err}");
    assert!(stats.contains("_demo/flood"), "{stats}");
}

#[test]
fn check_finds_each_problem_class_in_a_dump_made_to_contain_it() {
    // A pure relay between Zed and an agent that does everything Zed cannot take: the
    // proxy passes it on, and the check finds each problem where it is.
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "S"}}),
        json!({"send": update("ghost", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}))}),
        json!({"send": update("S", json!({"sessionUpdate":"subagent_update","sessionId":"C"}))}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call","toolCallId":"t1","status":"pending"}))}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call_update","toolCallId":"t0","status":"completed"}))}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call","toolCallId":"t2","title":"Agent","_meta":{"subagent_session_info":{"sessionId":"C"}}}))}),
        json!({"send": {"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"ghost","path":"/etc/hosts"}}}),
        json!({"raw": "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"S\"}}"}),
    ];
    let client = vec![
        (0, zed_init()),
        (
            1,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
        ),
    ];
    let dump = scripted(dir.path(), "display = \"off\"\n", &agent, &client);
    let d = dump.to_string_lossy().into_owned();
    let (code, out, _) = tool(&["dump", "check", &d]);
    assert_eq!(code, 1, "something is wrong: exit status 1\n{out}");
    let findings = check_json(std::slice::from_ref(&dump));
    let text = std::fs::read_to_string(&dump).expect("dump");
    let line_of = |needle: &str| -> u64 {
        text.lines()
            .position(|l| l.contains("proxy→client") && l.contains(needle))
            .map(|i| i as u64 + 1)
            .unwrap_or_else(|| panic!("{needle} in the dump"))
    };
    let found = |rule: &str, line: u64| {
        findings.iter().any(|f| {
            f["rule"] == rule
                && f["line"] == line
                && f["dir"] == "proxy→client"
                && f["severity"] == "error"
        })
    };
    for (rule, needle) in [
        ("zed-unknown-session", "ghost\\\",\\\"update"),
        ("zed-rejected-kind", "subagent_update"),
        ("zed-untitled-tool-call", "t1"),
        ("zed-orphan-tool-update", "t0"),
        ("zed-bad-subagent-info", "t2"),
        ("zed-unknown-session-request", "fs/read_text_file"),
        ("schema", "\\\"params\\\":{\\\"sessionId\\\":\\\"S\\\"}}"),
    ] {
        assert!(
            found(rule, line_of(needle)),
            "{rule} at the line with {needle}:\n{out}"
        );
    }
    // The same frames on the agent side are the agent's, and only information unless asked.
    assert!(findings
        .iter()
        .filter(|f| f["dir"] == "agent→proxy")
        .all(|f| !f["rule"].as_str().unwrap_or("").starts_with("zed-")));
    let (_, agent_view, _) = tool(&["dump", "check", &d, "--side", "agent", "--agent-as-zed"]);
    assert!(
        agent_view.contains("agent→proxy info [zed-rejected-kind]"),
        "{agent_view}"
    );
    assert!(!agent_view.contains("proxy→client"), "{agent_view}");
}

#[test]
fn check_says_what_an_odd_frame_is_and_whose_field_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
    ];
    // A client as the ACP linter is: an invalid protocolVersion in the initialize the proxy
    // adds its opt-ins to, an id past 64 bits, a number no float holds.
    let client = vec![
        (
            0,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1",
                "clientCapabilities":{},"clientInfo":{"name":"acplint","version":"0.1.0"}}}),
        ),
        (
            1,
            Value::String("{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"session/new\",\"params\":{\"cwd\":\"/w\",\"mcpServers\":[]}}\n".into()),
        ),
        (0, Value::String("{\"id\":1e400}\n".into())),
    ];
    let dump = scripted(dir.path(), "[store]\npath = \"memory\"\n", &agent, &client);
    let findings = check_json(std::slice::from_ref(&dump));
    let all = findings
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let text = std::fs::read_to_string(&dump).expect("dump");
    let init_to_agent = text
        .lines()
        .position(|l| l.contains("proxy→agent") && l.contains("acplint"))
        .expect("the initialize reached the agent") as u64
        + 1;
    assert!(
        !text.lines().any(|l| l.contains("proxy→agent")
            && l.contains("acplint")
            && l == text
                .lines()
                .find(|l| l.contains("client→proxy") && l.contains("acplint"))
                .unwrap_or("")),
        "the proxy rewrote the initialize"
    );
    let at = |line: u64| findings.iter().filter(move |f| f["line"] == line);
    assert!(
        at(init_to_agent).any(|f| f["rule"] == "schema"
            && f["origin"] == "client"
            && f["message"]
                .as_str()
                .is_some_and(|m| m.contains("as the client sent it"))),
        "{all}"
    );
    assert!(
        !findings
            .iter()
            .any(|f| f["origin"] == "proxy" && f["severity"] == "error"),
        "nothing is the proxy's fault:\n{all}"
    );
    assert!(
        findings.iter().any(|f| f["rule"] == "jsonrpc"
            && f["origin"] == "client"
            && f["message"]
                .as_str()
                .is_some_and(|m| m.contains("an integer beyond 64 bits"))),
        "{all}"
    );
    assert!(
        findings.iter().any(|f| f["rule"] == "not-json"
            && f["message"]
                .as_str()
                .is_some_and(|m| m.contains("is JSON but has a number out of range"))),
        "{all}"
    );
    assert!(!all.contains("not a string, an integer or null"), "{all}");
    let (_, view, _) = tool(&["dump", "view", &dump.to_string_lossy()]);
    assert!(view.contains("JSON with a number out of range"), "{view}");
}

#[test]
fn a_newer_dump_format_is_refused_by_every_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("future.jsonl");
    std::fs::write(
        &p,
        "{\"format\":\"acp-proxy-dump\",\"version\":2,\"proxy_version\":\"9.9.9\"}\n{\"ts\":1,\"dir\":\"proxy-note\",\"note\":\"x\"}\n",
    )
    .expect("write");
    let f = p.to_string_lossy().into_owned();
    for args in [
        vec!["dump", "view", &f],
        vec!["dump", "stats", &f],
        vec!["dump", "check", &f],
        vec!["replay", &f],
    ] {
        let (code, _, err) = tool(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(
            err.contains("format version 2, newer than this acp-proxy"),
            "{args:?}: {err}"
        );
    }
}

fn successor(msg: Value) -> Value {
    let mut wrapped = json!({"jsonrpc": "2.0", "method": "proxy/successor",
        "params": {"method": msg["method"], "params": msg["params"]}});
    if let Some(id) = msg.get("id") {
        wrapped["id"] = id.clone();
    }
    wrapped
}

#[test]
fn a_proxy_chain_link_replays_and_checks_through_the_conductors_wrapping() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dump = dir.path().join("chain.jsonl");
    let d = dump.to_string_lossy().into_owned();
    let mut run = Run::start(dir.path(), &["--store", "memory", "--dump", &d], &[]);
    let next = |run: &mut Run| -> Value {
        let n = run.received.len();
        assert!(
            run.until(WAIT, |r| r.received.len() > n),
            "a frame from the link"
        );
        run.received[n].clone()
    };
    run.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "proxy/initialize",
        "params": {"protocolVersion": 1, "clientInfo": {"name": "zed"}, "clientCapabilities": {}}}),
    );
    let wrapped = next(&mut run);
    run.send(
        &json!({"jsonrpc": "2.0", "id": wrapped["id"], "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": false}}}),
    );
    assert_eq!(next(&mut run)["id"], 1);
    run.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}}));
    let wrapped = next(&mut run);
    run.send(&json!({"jsonrpc": "2.0", "id": wrapped["id"], "result": {"sessionId": "s1"}}));
    assert_eq!(next(&mut run)["id"], 2);
    run.send(&successor(update(
        "s1",
        json!({"sessionUpdate": "tool_call", "toolCallId": "sp",
        "title": "Task", "kind": "think", "rawInput": {"prompt": "look around"},
        "_meta": {"claudeCode": {"toolName": "Agent"}}}),
    )));
    let card = next(&mut run);
    assert!(card["params"]["update"]["_meta"]
        .get("subagent_session_info")
        .is_some());
    run.send(&successor(update("s1", json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "child words"}, "_meta": {"claudeCode": {"parentToolUseId": "sp"}}}))));
    run.send(&successor(
        json!({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
        "params": {"sessionId": "s1", "toolCall": {"toolCallId": "p1"}, "options": []}}),
    ));
    let perm = next(&mut run);
    run.send(&json!({"jsonrpc": "2.0", "id": perm["id"], "result": {"outcome": {"outcome": "cancelled"}}}));
    next(&mut run);
    run.send(&json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}}));
    run.settle(Duration::from_millis(300));
    assert_eq!(run.finish(), 0);
    let others = judge("chain", std::slice::from_ref(&dump));
    // Unwrapped, the conductor's frames are ordinary ACP: answered, and of the schema.
    assert!(
        others
            .iter()
            .all(|f| f["rule"] != "unanswered" && f["rule"] != "unmatched-response"),
        "{others:#?}"
    );
    let (_, view, _) = tool(&["dump", "view", &d, "--kind", "tool_call"]);
    assert!(
        view.contains("c→p") && !view.contains("↳") && view.contains("Task"),
        "{view}"
    );
    let (_, stats, _) = tool(&["dump", "stats", &d]);
    assert!(stats.contains("subagents: 1"), "{stats}");
}

#[test]
fn view_follow_shows_records_as_they_are_written_and_across_a_rotation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.jsonl");
    let header = |part: u32| {
        format!("{{\"format\":\"acp-proxy-dump\",\"version\":1,\"run\":\"r\",\"part\":{part}}}\n")
    };
    let note = |text: &str| format!("{{\"ts\":1.5,\"dir\":\"proxy-note\",\"note\":\"{text}\"}}\n");
    std::fs::write(&path, header(1) + &note("first")).expect("write");
    let mut view = Command::new(BIN)
        .args(["dump", "view", "--follow"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("view --follow");
    let (tx, rx) = mpsc::channel();
    let stdout = view.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |needle: &str| {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return,
                Ok(_) => {}
                Err(_) => panic!("view --follow never showed {needle}"),
            }
        }
    };
    wait_for("first");
    // Appended in two writes: a line is shown only once it is whole.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("append");
    let second = note("second");
    f.write_all(&second.as_bytes()[..10]).expect("write");
    f.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(300));
    f.write_all(&second.as_bytes()[10..]).expect("write");
    drop(f);
    wait_for("second");
    // Rotation: the file is renamed and a new one starts with its own header.
    std::fs::rename(&path, dir.path().join("live.jsonl.1")).expect("rotate");
    std::fs::write(&path, header(2) + &note("third")).expect("write");
    wait_for("third");
    let _ = view.kill();
    let _ = view.wait();
}

#[test]
fn agent_lines_of_one_read_are_one_run_live_and_in_the_replay() {
    // Lines the agent writes at once reach the proxy in one read: the engine takes them as
    // one run (untouched chunks passed as one slice, a spawn and its child's events read),
    // the dump marks them, and the replay hands them to the engine as the same run.
    let dir = tempfile::tempdir().expect("tempdir");
    let chunk = |text: &str| {
        update(
            "S",
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text": text}}),
        )
    };
    let burst = [
        chunk("one"),
        chunk("two"),
        update(
            "S",
            json!({"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"Task","status":"pending","rawInput":{"prompt":"p","description":"d"},"_meta":{"claudeCode":{"toolName":"Agent"}}}),
        ),
        chunk("three"),
        update(
            "S",
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"child says"},"_meta":{"claudeCode":{"parentToolUseId":"toolu_1"}}}),
        ),
        update(
            "S",
            json!({"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed"}),
        ),
        chunk("four"),
        chunk("five"),
    ];
    let burst_file = dir.path().join("burst.jsonl");
    let text: String = burst.iter().map(|m| format!("{m}\n")).collect();
    assert!(text.len() < 4096, "one atomic pipe write");
    std::fs::write(&burst_file, text).expect("burst");
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "S"}}),
        json!({"expect": "session/prompt"}),
        json!({"send_file": burst_file.to_string_lossy()}),
        json!({"reply": {"stopReason": "end_turn"}}),
    ];
    let client = vec![
        (0, zed_init()),
        (
            1,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
        ),
        (
            1,
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}),
        ),
    ];
    let dump = scripted(dir.path(), "[store]\npath = \"memory\"\n", &agent, &client);
    let records: Vec<Value> = std::fs::read_to_string(&dump)
        .expect("dump")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let agent_lines: Vec<&Value> = records
        .iter()
        .filter(|r| r["dir"] == "agent→proxy")
        .collect();
    let reads = agent_lines
        .iter()
        .filter(|r| r["same_read"] != true)
        .count();
    assert!(
        agent_lines.len() - reads >= burst.len() - 1,
        "the burst came in one read and is marked so: {agent_lines:#?}"
    );
    // Every line of the run stands before what the proxy made of it: the spawn's card, the
    // child's event in its thread, each chunk unchanged right after its own input.
    let order: Vec<String> = records
        .iter()
        .filter(|r| r["dir"] == "agent→proxy" || r["dir"] == "proxy→client")
        .map(|r| {
            format!(
                "{} {}",
                r["dir"].as_str().unwrap_or(""),
                r["frame"].as_str().unwrap_or("")
            )
        })
        .collect();
    let at = |needle: &str, dir: &str| {
        order
            .iter()
            .position(|l| l.starts_with(dir) && l.contains(needle))
            .unwrap_or_else(|| panic!("{dir} {needle} in {order:#?}"))
    };
    for text in ["\"one\"", "\"two\"", "\"three\"", "\"four\"", "\"five\""] {
        assert_eq!(
            at(text, "proxy→client"),
            at(text, "agent→proxy") + 1,
            "{text}"
        );
    }
    assert!(at("subagent_session_info", "proxy→client") > at("toolu_1", "agent→proxy"));
    judge("one read", std::slice::from_ref(&dump));
    let report = replay_report(std::slice::from_ref(&dump));
    assert_eq!(
        (report.agent_reads, report.agent_lines),
        (reads as u64, agent_lines.len() as u64),
        "the replay hands the engine the reads the proxy had"
    );
}
