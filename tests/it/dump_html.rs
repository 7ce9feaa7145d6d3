//! `acp-proxy dump html` opened in headless Chromium, driven over the DevTools protocol (on
//! a pipe: no port, no network): the rendered DOM has the rows, the subagent tree and the
//! check's findings, a real mouse click on a row opens the frame before and after the proxy,
//! the filter and the tree filter the rows, and a 100 000-frame report opens and scrolls.
//!
//! Skipped, loudly, only when Chromium is not installed (`.ci/run` installs it).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_acp-proxy");

fn chromium() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("CHROMIUM").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/chromium")),
        Some(PathBuf::from("/usr/bin/chromium-browser")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

fn skip_loudly() {
    eprintln!(
        "\n\n*** SKIPPED: Chromium is not installed (apt-get install -y chromium): the HTML report \
         was NOT tested in a browser ***\n\n"
    );
}

/// A headless Chromium and one page, over `--remote-debugging-pipe`.
struct Browser {
    child: Child,
    commands: std::fs::File,
    events: Receiver<Value>,
    next_id: u64,
    session: String,
    _profile: tempfile::TempDir,
}

fn pipe() -> (OwnedFd, OwnedFd) {
    acp_proxy::platform::cloexec_pipe().expect("pipe")
}

impl Browser {
    fn start(exe: &Path) -> Browser {
        use std::os::fd::AsRawFd;
        let profile = tempfile::tempdir().expect("profile dir");
        let (cmd_read, cmd_write) = pipe();
        let (resp_read, resp_write) = pipe();
        let (r, w) = (cmd_read.as_raw_fd(), resp_write.as_raw_fd());
        let mut cmd = Command::new(exe);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-extensions",
            "--remote-debugging-pipe",
            "--window-size=1400,900",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec. Both ends
        // are first copied above 10, so that neither is overwritten by the other's dup2.
        unsafe {
            cmd.pre_exec(move || {
                let r2 = libc::fcntl(r, libc::F_DUPFD, 10);
                let w2 = libc::fcntl(w, libc::F_DUPFD, 10);
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start chromium");
        drop(cmd_read);
        drop(resp_write);
        let (tx, events) = mpsc::channel();
        let resp = std::fs::File::from(resp_read);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(resp);
            loop {
                let mut msg = Vec::new();
                match reader.read_until(0, &mut msg) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                msg.pop();
                if let Ok(v) = serde_json::from_slice::<Value>(&msg) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        let mut b = Browser {
            child,
            commands: std::fs::File::from(cmd_write),
            events,
            next_id: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}), false);
        let target_id = target["targetId"].as_str().expect("target id").to_owned();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
            false,
        );
        b.session = attached["sessionId"].as_str().expect("session").to_owned();
        b.page(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
        b
    }

    fn call(&mut self, method: &str, params: Value, on_page: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if on_page {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        self.commands.write_all(&bytes).expect("send to chromium");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .events
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer from chromium to {method}"));
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    fn page(&mut self, method: &str, params: Value) -> Value {
        self.call(method, params, true)
    }

    /// Evaluate an expression in the page and return its value.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.page(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expr}: {r}");
        r["result"]["value"].clone()
    }

    /// Wait until the expression is true.
    fn wait_for(&mut self, expr: &str, limit: Duration) -> Duration {
        let start = Instant::now();
        while self.eval(expr) != json!(true) {
            assert!(start.elapsed() < limit, "waited {limit:?} for `{expr}`");
            std::thread::sleep(Duration::from_millis(50));
        }
        start.elapsed()
    }

    fn open(&mut self, file: &Path) -> Duration {
        let start = Instant::now();
        self.page(
            "Page.navigate",
            json!({"url": format!("file://{}", file.display())}),
        );
        self.wait_for(
            "!!(document.body && document.body.dataset.ready === '1')",
            Duration::from_secs(60),
        );
        start.elapsed()
    }

    /// A real click (mouse down and up) at the middle of the first element matching `css`.
    fn click(&mut self, css: &str) {
        let rect = self.eval(&format!(
            "(() => {{ const e = document.querySelector({css:?}); if (!e) return null; e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); return [r.x + Math.min(r.width / 2, 200), r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (
            rect[0]
                .as_f64()
                .unwrap_or_else(|| panic!("no element {css}")),
            rect[1].as_f64().expect("y"),
        );
        for kind in ["mousePressed", "mouseReleased"] {
            self.page(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    fn screenshot(&mut self, path: &Path) {
        let r = self.page("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64_decode(r["data"].as_str().expect("png data"));
        std::fs::write(path, png).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

fn html(dump: &Path, out: &Path) -> u64 {
    let o = Command::new(BIN)
        .args(["dump", "html"])
        .arg(dump)
        .arg("-o")
        .arg(out)
        .output()
        .expect("dump html");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    err.split(" (")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("row count in: {err}"))
}

/// A dump the proxy recorded for a scripted agent (display = "off": what the agent sends
/// reaches the client as it is).
fn relay_dump(dir: &Path, agent: &[Value], client: &[&str], read: usize) -> PathBuf {
    let script = dir.join("agent.jsonl");
    std::fs::write(
        &script,
        agent.iter().map(|s| format!("{s}\n")).collect::<String>(),
    )
    .expect("script");
    let cfg = dir.join("relay.toml");
    // A queue deep enough that a flood is recorded whole.
    std::fs::write(
        &cfg,
        "display = \"off\"\nlog_level = \"warn\"\n[dump]\nqueue_frames = 1000000\n",
    )
    .expect("config");
    let dump = dir.join("relay.jsonl");
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .arg("--config")
        .arg(&cfg)
        .arg("--dump")
        .arg(&dump)
        .args(["--", BIN, "demo-agent", "--script"])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("proxy");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in client {
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
    }
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    for _ in 0..read {
        let mut line = Vec::new();
        out.read_until(b'\n', &mut line).expect("read");
    }
    drop(stdin);
    let mut rest = Vec::new();
    let _ = out.read_to_end(&mut rest);
    assert!(child.wait().expect("wait").success());
    dump
}

const ZED_INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"clientInfo":{"name":"zed","title":"Zed","version":"0.212.5"}}}"#;

#[test]
fn the_report_renders_in_chromium_and_a_click_opens_the_frame_before_and_after_the_proxy() {
    let Some(exe) = chromium() else {
        return skip_loudly();
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let dump = dir.path().join("demo.jsonl");
    let o = Command::new(BIN)
        .current_dir(dir.path())
        .args(["demo", "--", "--dump"])
        .arg(&dump)
        .output()
        .expect("demo");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = dir.path().join("demo.html");
    let rows = html(&dump, &report);
    let mut b = Browser::start(&exe);
    b.open(&report);

    // Rows: only those in view are in the DOM, the count names them all.
    let shown = b.eval("document.querySelectorAll('#spacer .row[data-row]').length");
    let shown = shown.as_u64().expect("rows");
    assert!(
        shown >= 20 && shown <= rows,
        "{shown} of {rows} rows rendered"
    );
    assert_eq!(
        b.eval("document.getElementById('count').textContent"),
        json!(format!("{rows} frames"))
    );
    assert_eq!(
        b.eval("document.querySelectorAll('.row.turnhead').length > 0"),
        json!(true),
        "turns are grouped"
    );

    // The tree: the session, its turn, and its two subagents with their title and status.
    let tree =
        b.eval("[...document.querySelectorAll('#tree li.node > .item')].map(e => e.textContent)");
    let tree: Vec<String> = serde_json::from_value(tree).expect("tree");
    assert_eq!(tree.len(), 2, "{tree:?}");
    assert!(
        tree.iter().any(|t| t.starts_with("Survey text files")
            && t.contains("claude")
            && t.contains("completed")),
        "{tree:?}"
    );
    assert!(
        tree.iter().any(|t| t.starts_with("Look for TODOs")),
        "{tree:?}"
    );
    assert_eq!(
        b.eval("document.querySelector('#tree li.session > .item').textContent"),
        json!("demo-session-1")
    );

    // A click on the proxy's rewritten spawn card opens it beside the agent's original.
    let target = b.eval("(() => { const r = [...document.querySelectorAll('#spacer .row.d3')].find(e => e.textContent.includes('tool_call') && e.textContent.includes('subagent')); if (!r) return null; r.id = 'click-me'; return r.dataset.row; })()");
    assert!(target.is_string(), "a rewritten card row is in view");
    b.click("#click-me");
    b.wait_for(
        "document.getElementById('detail').classList.contains('open')",
        Duration::from_secs(10),
    );
    let before = b.eval("document.querySelector('#detail pre.frame-in').textContent");
    let after = b.eval("document.querySelector('#detail pre.frame-out.selected').textContent");
    let (before, after) = (before.as_str().expect("in"), after.as_str().expect("out"));
    assert!(
        before.contains("\"toolCallId\"") && !before.contains("subagent_session_info"),
        "{before}"
    );
    assert!(
        after.contains("subagent_session_info") && after.contains("\"tool_name\""),
        "{after}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#detail pre.frame-out.selected mark').length > 0"),
        json!(true),
        "the rewrite is marked"
    );
    assert_eq!(
        b.eval(&format!(
            "document.querySelector('#spacer .row.selected').dataset.row === {target}"
        )),
        json!(true)
    );

    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dump-report-demo.png");
    b.screenshot(&shot);
    eprintln!("screenshot: {}", shot.display());

    // The filter box, and a subagent in the tree, narrow the rows.
    b.eval("(() => { const f = document.getElementById('filter'); f.value = 'Look for TODOs'; f.dispatchEvent(new Event('input')); })()");
    b.wait_for(
        "document.getElementById('count').textContent.includes(' of ')",
        Duration::from_secs(5),
    );
    let count = b.eval("document.getElementById('count').textContent");
    let n: u64 = count
        .as_str()
        .and_then(|c| c.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("count");
    assert!(n > 0 && n < rows / 2, "{count}");
    b.eval("(() => { const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()");
    b.wait_for(
        "!document.getElementById('count').textContent.includes(' of ')",
        Duration::from_secs(5),
    );
    b.click("#tree li.node > .item");
    b.wait_for(
        "document.getElementById('count').textContent.includes(' of ')",
        Duration::from_secs(5),
    );
    let summaries = b.eval("[...document.querySelectorAll('#spacer .row[data-row] .sum')].map(e => e.textContent).join('\\n')");
    let summaries = summaries.as_str().expect("text");
    assert!(
        summaries.contains("Find `*.txt`") && !summaries.contains("Search `TODO`"),
        "{summaries}"
    );
}

#[test]
fn the_checks_findings_are_marked_in_the_report() {
    let Some(exe) = chromium() else {
        return skip_loudly();
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"raw": "agent garbage {"}),
        json!({"send": {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"nobody","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lost"}}}}}),
    ];
    let dump = relay_dump(dir.path(), &agent, &[ZED_INIT], 3);
    let report = dir.path().join("bad.html");
    html(&dump, &report);
    let mut b = Browser::start(&exe);
    b.open(&report);
    let marks = b.eval("[...document.querySelectorAll('#spacer .row .mark')].map(m => m.title)");
    let marks: Vec<String> = serde_json::from_value(marks).expect("marks");
    assert!(marks.iter().any(|m| m.contains("not-json")), "{marks:?}");
    assert!(
        marks.iter().any(|m| m.contains("zed-unknown-session")),
        "{marks:?}"
    );
    let listed = b.eval("document.getElementById('findings').textContent");
    assert!(
        listed
            .as_str()
            .is_some_and(|t| t.contains("[zed-unknown-session]")),
        "{listed}"
    );
    // A finding in the list opens its frame.
    b.click("#findings .finding-item");
    b.wait_for(
        "document.getElementById('detail').classList.contains('open')",
        Duration::from_secs(10),
    );
    assert_eq!(
        b.eval("document.querySelector('#detail .findings') !== null"),
        json!(true)
    );
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dump-report-findings.png");
    b.screenshot(&shot);
}

#[test]
fn a_report_of_100_000_frames_opens_and_scrolls_to_its_end() {
    let Some(exe) = chromium() else {
        return skip_loudly();
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"flood": {"frames": 50_000, "size": 200}}),
    ];
    // Each flood frame is recorded twice (from the agent, to the client).
    let dump = relay_dump(dir.path(), &agent, &[ZED_INIT], 50_001);
    let report = dir.path().join("big.html");
    let rows = html(&dump, &report);
    assert!(rows >= 100_000, "{rows} rows");
    let mut b = Browser::start(&exe);
    let opened = b.open(&report);
    let in_dom = b
        .eval("document.querySelectorAll('#spacer .row').length")
        .as_u64()
        .expect("n");
    assert!(
        in_dom < 200,
        "only the rows in view are in the DOM: {in_dom}"
    );
    b.eval("(() => { const l = document.getElementById('list'); l.scrollTop = l.scrollHeight; l.dispatchEvent(new Event('scroll')); })()");
    b.wait_for(
        &format!("[...document.querySelectorAll('#spacer .row[data-row]')].some(r => Number(r.dataset.row) === {})", rows - 1),
        // Generous: the machine may be busy with other tests; this checks the end is reachable.
        Duration::from_secs(60),
    );
    let start = Instant::now();
    // The last row, which is in view at the end. A click can land while the list re-renders
    // after the scroll (the row under the pointer replaced): then it is clicked again.
    let last = format!("#spacer .row[data-row=\"{}\"]", rows - 1);
    let open = "document.getElementById('detail').classList.contains('open')";
    let mut tries = 0;
    loop {
        tries += 1;
        b.click(&last);
        let deadline = Instant::now() + Duration::from_secs(5);
        while b.eval(open) != json!(true) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if b.eval(open) == json!(true) {
            break;
        }
        assert!(tries < 6, "clicking the last row never opened its frame");
    }
    eprintln!(
        "100k-frame report: {} MiB, opened in {:?}, first frame shown {:?} after the click",
        std::fs::metadata(&report)
            .map(|m| m.len() >> 20)
            .unwrap_or(0),
        opened,
        start.elapsed()
    );
    assert!(opened < Duration::from_secs(30), "opened in {opened:?}");
}

/// A session through the proxy (Zed display): a prompt turn whose subagent's events are kept
/// for its child thread, with agent stderr between the turn's frames, then a `session/load`
/// whose replay belongs to no turn.
fn turn_then_load_dump(dir: &Path) -> PathBuf {
    let update = |session: &str, u: Value| json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId": session, "update": u}});
    let steps = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "S"}}),
        json!({"expect": "session/prompt"}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"Task","status":"pending","rawInput":{"prompt":"look","description":"Look around"},"_meta":{"claudeCode":{"toolName":"Agent"}}}))}),
        json!({"stderr": "agent log: the subagent starts"}),
        json!({"sleep_ms": 300}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call","toolCallId":"toolu_2","title":"Glob","status":"pending","_meta":{"claudeCode":{"parentToolUseId":"toolu_1","toolName":"Glob"}}}))}),
        json!({"stderr": "agent log: the subagent works"}),
        json!({"sleep_ms": 300}),
        json!({"send": update("S", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"found it"},"_meta":{"claudeCode":{"parentToolUseId":"toolu_1"}}}))}),
        json!({"send": update("S", json!({"sessionUpdate":"tool_call_update","toolCallId":"toolu_1","status":"completed"}))}),
        json!({"reply": {"stopReason": "end_turn"}}),
        json!({"expect": "session/load"}),
        json!({"send": update("S", json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"go"}}))}),
        json!({"send": update("S", json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"replayed answer"}}))}),
        json!({"reply": {}}),
    ];
    let script = dir.join("agent.jsonl");
    std::fs::write(
        &script,
        steps.iter().map(|s| format!("{s}\n")).collect::<String>(),
    )
    .expect("script");
    let cfg = dir.join("proxy.toml");
    std::fs::write(&cfg, "log_level = \"warn\"\n[store]\npath = \"memory\"\n").expect("config");
    let dump = dir.join("turn.jsonl");
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .arg("--config")
        .arg(&cfg)
        .arg("--dump")
        .arg(&dump)
        .args(["--", BIN, "demo-agent", "--script"])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("proxy");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
    };
    // Each request once the answer to the one before it came.
    let mut wait_for_answer = |id: u64| loop {
        let mut line = Vec::new();
        let n = out.read_until(b'\n', &mut line).expect("read");
        assert!(n > 0, "the proxy ended before answering {id}");
        let v: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
        if v["id"] == id && v.get("method").is_none() {
            return;
        }
    };
    send(ZED_INIT);
    wait_for_answer(0);
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#,
    );
    wait_for_answer(1);
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[{"type":"text","text":"go"}]}}"#,
    );
    wait_for_answer(2);
    send(
        r#"{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"S","cwd":"/w","mcpServers":[]}}"#,
    );
    wait_for_answer(3);
    drop(stdin);
    let mut rest = Vec::new();
    let _ = out.read_to_end(&mut rest);
    assert!(child.wait().expect("wait").success());
    dump
}

/// The rows and headers in the DOM, top to bottom: `H:` a turn's header, `O:` the header of
/// rows outside any turn, `R:` a frame's row.
const LIST: &str = "[...document.querySelectorAll('#spacer .row')].sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top)).map(e => (e.classList.contains('outside') ? 'O:' : e.classList.contains('turnhead') ? 'H:' : 'R:') + e.textContent)";

#[test]
fn rows_outside_a_turn_are_not_shown_under_it_and_a_withheld_frame_names_its_subagent() {
    let Some(exe) = chromium() else {
        return skip_loudly();
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let dump = turn_then_load_dump(dir.path());
    let report = dir.path().join("turn.html");
    html(&dump, &report);
    let mut b = Browser::start(&exe);
    b.open(&report);
    let list: Vec<String> = serde_json::from_value(b.eval(LIST)).expect("rows");
    let all = list.join("\n");
    // One header for the turn, however its rows are interleaved with the agent's stderr.
    let turn_heads: Vec<usize> = (0..list.len())
        .filter(|&i| list[i].starts_with("H:") && list[i].contains("Turn 1"))
        .collect();
    assert_eq!(turn_heads.len(), 1, "{all}");
    let stderr_row = list
        .iter()
        .position(|l| l.contains("the subagent works"))
        .expect("the stderr row");
    let load_row = list
        .iter()
        .position(|l| l.starts_with("R:") && l.contains("session/load"))
        .expect("the session/load row");
    let outside = list
        .iter()
        .position(|l| l.starts_with("O:"))
        .unwrap_or_else(|| panic!("a header for rows outside any turn:\n{all}"));
    assert!(
        turn_heads[0] < stderr_row && stderr_row < outside && outside < load_row,
        "{all}"
    );

    // Collapsed, the turn hides all of its rows; the load's rows stay, under their own header.
    b.click("#spacer .row.turnhead[data-turn='0']");
    b.wait_for(
        "![...document.querySelectorAll('#spacer .row')].some(e => e.textContent.includes('the subagent works'))",
        Duration::from_secs(5),
    );
    let list: Vec<String> = serde_json::from_value(b.eval(LIST)).expect("rows");
    let head = list
        .iter()
        .position(|l| l.starts_with("H:") && l.contains("Turn 1"))
        .expect("the turn's header");
    assert!(
        list.get(head + 1).is_some_and(|l| l.starts_with("O:")),
        "nothing under the collapsed turn: {list:#?}"
    );
    assert!(list.iter().any(|l| l.contains("session/load")), "{list:#?}");
    b.click("#spacer .row.turnhead[data-turn='0']");

    // The subagent's message went to no one but its child thread: the frame says whose.
    b.wait_for(
        "[...document.querySelectorAll('#spacer .row.d2')].some(e => e.textContent.includes('found it'))",
        Duration::from_secs(5),
    );
    b.eval("(() => { const r = [...document.querySelectorAll('#spacer .row.d2')].find(e => e.textContent.includes('found it')); r.id = 'child-row'; })()");
    b.click("#child-row");
    b.wait_for(
        "document.getElementById('detail').classList.contains('open')",
        Duration::from_secs(10),
    );
    let withheld = b.eval("document.querySelector('#detail .withheld').textContent");
    let withheld = withheld.as_str().expect("a withheld note");
    assert!(
        withheld.contains("kept for subagent “Task”") && withheld.contains("spawn toolu_1"),
        "{withheld}"
    );
}
