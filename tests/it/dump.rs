//! `--dump PATH`: a private JSONL file with a header and one record per frame in every
//! direction (and the agent's stderr), raw text kept, secrets redacted unless `redact = false`,
//! and losses recorded when the disk cannot keep up.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;

use serde_json::{json, Value};

use crate::support::proxy::{Proxy, Scratch};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"test-editor","version":"0.200.0"},"clientCapabilities":{"fs":{"readTextFile":true}}}}"#;
/// The answer keeps odd but valid JSON spellings that re-serialising would change.
const INIT_ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"n":1.0e3,"big":123456789012345678901234567890,"s":"\u00e9\/"}}"#;
const AUTHENTICATE: &str = r#"{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"methodId":"device-code","_meta":{"deviceCode":"AUTHCODE-123"}}}"#;
const SESSION_NEW: &str = r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/work","mcpServers":[{"name":"github","command":"gh-mcp","args":["--stdio"],"env":[{"name":"GITHUB_PERSONAL_ACCESS_TOKEN","value":"ghp_ENVSECRET"}]},{"type":"http","name":"docs","url":"https://mcp.example/v1","headers":[{"name":"Authorization","value":"Bearer HEADERSECRET"}]}],"_meta":{"sessionToken":"TOKSECRET","password":"PWSECRET","inputTokens":5}}}"#;
const SECRETS: [&str; 5] = [
    "AUTHCODE-123",
    "ghp_ENVSECRET",
    "HEADERSECRET",
    "TOKSECRET",
    "PWSECRET",
];

/// Play a short session (initialize, authenticate, session/new, garbage both ways, agent
/// stderr) through a proxy started with `args`, and return the dump's lines.
fn session_with_dump(s: &Scratch, args: &[&str], dump: &str) -> (Proxy, Vec<Value>) {
    let agent = s.agent(&[
        json!({"stderr": "agent log: starting"}),
        json!({"expect": "initialize"}),
        json!({"raw": INIT_ANSWER}),
        json!({"raw": "agent garbage {"}),
        json!({"expect": "authenticate"}),
        json!({"reply": {}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "s1"}}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), args, &agent);
    for line in [INITIALIZE, AUTHENTICATE, SESSION_NEW, "client garbage {{"] {
        proxy.send(format!("{line}\n").as_bytes());
    }
    proxy.send(b"\xff\xfe not utf-8\n");
    assert_eq!(
        String::from_utf8_lossy(&proxy.next_line().expect("initialize answer")),
        format!("{INIT_ANSWER}\n")
    );
    assert_eq!(
        proxy.next_line().as_deref(),
        Some(&b"agent garbage {\n"[..])
    );
    assert_eq!(proxy.next_json()["id"], 2);
    assert_eq!(proxy.next_json()["id"], 3);
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    let text = std::fs::read_to_string(dump).expect("dump is UTF-8 JSONL");
    let lines = text
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("dump line not JSON ({e}): {l}"))
        })
        .collect();
    (proxy, lines)
}

fn frames<'a>(records: &'a [Value], dir: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["dir"] == dir).collect()
}

fn frame_texts<'a>(records: &'a [Value], dir: &str) -> Vec<&'a str> {
    frames(records, dir)
        .into_iter()
        .map(|r| r["frame"].as_str().expect("frame is a string"))
        .collect()
}

#[test]
fn dump_has_a_header_and_every_frame_private_raw_and_redacted() {
    let s = Scratch::new();
    let dump = s.p("dump.jsonl");
    // A pure relay, so that every frame's text can be compared at both points of the path.
    let config = s.write("relay.toml", "display = \"off\"\n");
    let (proxy, records) = session_with_dump(&s, &["--config", &config, "--dump", &dump], &dump);
    let stderr = proxy.stderr();
    assert!(
        stderr.contains(&format!("appended to {dump}")) && stderr.contains("run "),
        "the proxy says where this run's dump goes:\n{stderr}"
    );

    let mode = std::fs::metadata(&dump)
        .expect("dump file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "dump mode {mode:o}");

    let header = &records[0];
    assert_eq!(header["format"], "acp-proxy-dump");
    assert_eq!(header["version"], 1);
    assert_eq!(header["proxy_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(header["agent_command"][1], "demo-agent", "{header}");
    assert_eq!(header["redacted"], true);
    let started = header["started_at"].as_str().expect("started_at");
    assert!(
        started.len() == 20 && started.as_bytes()[10] == b'T' && started.ends_with('Z'),
        "RFC 3339 start time: {started}"
    );

    let records = &records[1..];
    for r in records {
        assert!(r["ts"].as_f64().is_some_and(|t| t > 1.6e9), "unix ts: {r}");
    }
    // Client frames in the order sent, at both points of the path.
    for dir in ["client→proxy", "proxy→agent"] {
        let texts = frame_texts(records, dir);
        assert_eq!(texts.len(), 5, "{dir}: {texts:?}");
        assert_eq!(
            texts[0], INITIALIZE,
            "{dir}: untouched frames keep their text"
        );
        assert!(
            texts[1].contains("\"methodId\":\"device-code\""),
            "{}",
            texts[1]
        );
        assert!(
            texts[2].contains("GITHUB_PERSONAL_ACCESS_TOKEN"),
            "{}",
            texts[2]
        );
        assert!(texts[2].contains("\"inputTokens\":5"), "{}", texts[2]);
        assert_eq!(texts[3], "client garbage {{");
        let recs = frames(records, dir);
        assert!(recs[0].get("redacted").is_none() && recs[0].get("invalid_json").is_none());
        assert_eq!(
            (&recs[1]["redacted"], &recs[2]["redacted"]),
            (&json!(true), &json!(true))
        );
        assert_eq!(recs[3]["invalid_json"], true);
        assert_eq!(recs[4]["invalid_json"], true, "invalid UTF-8: {}", recs[4]);
    }
    for dir in ["agent→proxy", "proxy→client"] {
        let texts = frame_texts(records, dir);
        assert_eq!(texts.len(), 4, "{dir}: {texts:?}");
        assert_eq!(
            texts[0], INIT_ANSWER,
            "{dir}: numbers and escapes as on the wire"
        );
        assert_eq!(texts[1], "agent garbage {");
        assert_eq!(frames(records, dir)[1]["invalid_json"], true);
    }
    assert_eq!(
        frame_texts(records, "agent-stderr"),
        ["agent log: starting"]
    );

    let text = std::fs::read_to_string(&dump).expect("dump");
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} leaked into the dump");
    }
}

#[test]
fn redact_false_in_the_config_keeps_frames_as_they_were() {
    let s = Scratch::new();
    let dump = s.p("dump.jsonl");
    let config = s.write(
        "proxy.toml",
        format!("[dump]\npath = {:?}\nredact = false\n", dump),
    );
    let (_proxy, records) = session_with_dump(&s, &["--config", &config], &dump);
    assert_eq!(records[0]["redacted"], false);
    let texts = frame_texts(&records[1..], "client→proxy");
    assert_eq!(&texts[..3], [INITIALIZE, AUTHENTICATE, SESSION_NEW]);
    let text = std::fs::read_to_string(&dump).expect("dump");
    for secret in SECRETS {
        assert!(text.contains(secret), "{secret} kept with redact = false");
    }
}

/// The dump goes to a FIFO nobody reads until the session is over: the writer blocks, its
/// one-frame queue overflows, and the relay must go on at full speed while the dump records
/// how many frames it lost.
#[test]
fn a_dump_that_falls_behind_records_the_loss_and_never_stalls_the_relay() {
    const FRAMES: usize = 3000;
    let s = Scratch::new();
    let fifo = s.path("dump.fifo");
    let c_path = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    let (go, wait_go) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            let mut f = std::fs::File::open(&fifo).expect("open the dump FIFO");
            let _ = wait_go.recv();
            let mut text = String::new();
            f.read_to_string(&mut text).expect("read the dump");
            text
        }
    });
    // A pure relay: the count below is of frames only (no engine notes).
    let config = s.write(
        "proxy.toml",
        "display = \"off\"\n[dump]\nqueue_frames = 1\n",
    );
    let agent = s.agent(&[
        json!({"expect": "initialize"}),
        json!({"flood": {"frames": FRAMES, "size": 1024}}),
    ]);
    let fifo_arg = fifo.to_string_lossy().into_owned();
    let mut proxy = Proxy::start(
        s.dir.path(),
        &["--config", &config, "--dump", &fifo_arg],
        &agent,
    );
    proxy.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n");
    for n in 0..FRAMES {
        let msg = proxy.next_json();
        assert_eq!(msg["params"]["n"], n, "every frame relayed, in order");
    }
    go.send(()).expect("start reading the dump");
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    let text = reader.join().expect("dump reader");

    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("dump line is JSON"))
        .collect();
    assert_eq!(records[0]["format"], "acp-proxy-dump");
    let lost: u64 = records
        .iter()
        .filter(|r| r["dir"] == "proxy-note")
        .filter_map(|r| r["lost_frames"].as_u64())
        .sum();
    let kept = records.iter().filter(|r| r.get("frame").is_some()).count() as u64;
    assert!(lost > 0, "the loss is recorded in the dump");
    // Each flood frame is seen twice (agent→proxy, proxy→client), plus the initialize twice.
    assert_eq!(
        kept + lost,
        2 * FRAMES as u64 + 2,
        "every frame is either kept or counted"
    );
    let stderr = proxy.stderr();
    assert!(
        stderr.contains("traffic dump fell behind"),
        "the loss is reported on stderr:\n{stderr}"
    );
}

/// `acp-proxy demo -- --dump PATH`, as many at once as `together`; returns their exit codes.
fn demos(dir: &std::path::Path, dump: &std::path::Path, together: usize) -> Vec<i32> {
    let children: Vec<_> = (0..together)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_acp-proxy"))
                .current_dir(dir)
                .args(["demo", "--", "--dump"])
                .arg(dump)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start the demo")
        })
        .collect();
    children
        .into_iter()
        .map(|mut c| c.wait().expect("demo").code().unwrap_or(-1))
        .collect()
}

fn tool(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_acp-proxy"))
        .args(args)
        .output()
        .expect("run acp-proxy");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The runs whose headers are in the dump, in order of their first header.
fn runs_in(dump: &std::path::Path) -> Vec<String> {
    let mut runs: Vec<String> = Vec::new();
    for line in std::fs::read_to_string(dump).expect("dump").lines() {
        let v: Value = serde_json::from_str(line).expect("every line is JSON");
        if let Some(run) = v.get("format").and(v["run"].as_str()) {
            if !runs.iter().any(|r| r == run) {
                runs.push(run.to_owned());
            }
        }
    }
    runs
}

/// Every tool reads every run of the path: the check finds nothing damaged, the replay
/// reproduces each run, stats and view count and show them all.
fn every_tool_reads_all_runs(dump: &std::path::Path, runs: usize) {
    let d = dump.to_string_lossy();
    let (code, out, err) = tool(&["dump", "check", &d]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !out.contains("dump-damaged") && !err.contains("could not"),
        "{out}{err}"
    );
    let (code, out, err) = tool(&["replay", "--diff", &d]);
    assert_eq!(code, 0, "each run replays exactly: {out}{err}");
    let (code, stats, err) = tool(&["dump", "stats", &d]);
    assert_eq!(code, 0, "{err}");
    let has_line = |want: String| stats.lines().any(|l| l.trim_end() == want);
    assert!(has_line(format!("proxy runs: {runs}")), "{stats}");
    assert!(
        stats.contains(&format!("prompt turns: {runs} (end_turn {runs})")),
        "{stats}"
    );
    assert!(has_line(format!("subagents: {}", 2 * runs)), "{stats}");
    assert!(
        stats.contains("frames the dump lost: 0; lines that could not be read: 0"),
        "{stats}"
    );
    let (_, view, _) = tool(&["dump", "view", &d]);
    let headers: Vec<&str> = view.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(
        headers.len(),
        runs,
        "one header line per run:\n{}",
        headers.join("\n")
    );
}

#[test]
fn five_runs_one_after_another_on_one_dump_path_keep_all_five() {
    let s = Scratch::new();
    let dump = s.dir.path().join("dump.jsonl");
    for _ in 0..5 {
        assert_eq!(demos(s.dir.path(), &dump, 1), [0]);
    }
    assert_eq!(runs_in(&dump).len(), 5);
    let mode = std::fs::metadata(&dump).expect("dump").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "dump mode {mode:o}");
    every_tool_reads_all_runs(&dump, 5);
}

#[test]
fn proxies_running_at_the_same_time_on_one_dump_path_keep_every_run_whole() {
    let s = Scratch::new();
    let dump = s.dir.path().join("dump.jsonl");
    assert_eq!(demos(s.dir.path(), &dump, 3), [0, 0, 0]);
    assert_eq!(runs_in(&dump).len(), 3);
    every_tool_reads_all_runs(&dump, 3);
}
