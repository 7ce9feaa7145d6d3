//! Fault matrix, process level: the real binary between a scripted client (this test) and the
//! scripted fake agent, one fault each. Every test checks what the client sees and that no
//! process of the agent is left behind. docs/reliability.md lists the expected behaviour of
//! each case; the subagent faults are in tests/it/zed_faults.rs (engine level).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::proxy;
use crate::support::proxy::{
    assert_gone, error_of, read_pid, KillOnPanic, Proxy, Scratch, FAST_SHUTDOWN,
};

const INITIALIZE: &str =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n";
const ZED_INITIALIZE: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientInfo\":{\"name\":\"zed\",\"version\":\"1.18\"}}}\n";
const SESSION_NEW: &str = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/p\",\"mcpServers\":[]}}\n";
const PROMPT: &str = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s1\",\"prompt\":[]}}\n";

/// Script steps: answer `initialize` and `session/new` (session `s1`).
fn start_steps(pid_file: &str) -> Vec<Value> {
    vec![
        json!({"pid_file": pid_file}),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}),
        json!({"expect": "session/new"}),
        json!({"reply": {"sessionId": "s1"}}),
    ]
}

/// Send initialize + session/new and read both answers.
fn start(proxy: &mut Proxy, initialize: &str) {
    proxy.send(initialize.as_bytes());
    assert_eq!(proxy.next_json()["id"], 1, "initialize answered");
    proxy.send(SESSION_NEW.as_bytes());
    assert_eq!(proxy.next_json()["result"]["sessionId"], "s1");
}

/// The error the proxy sends for a request the agent died on.
fn assert_agent_gone_error(msg: &Value, id: Value, method: &str, status: &str) {
    let err = error_of(msg, &id);
    assert_eq!(err["code"], -32603, "{msg}");
    let text = err["message"].as_str().expect("error message");
    assert!(
        text.contains(&format!("`{method}`")) && text.contains(status),
        "names the request and the status: {text}"
    );
}

/// Highest VmRSS (KiB) of a process, sampled every few ms on a thread until stopped.
struct RssWatch {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssWatch {
    fn start(pid: i32) -> RssWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let thread = std::thread::spawn({
            let (stop, peak) = (stop.clone(), peak.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let status =
                        std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                    let kb = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.split_whitespace().next()?.parse().ok())
                        .unwrap_or(0);
                    peak.fetch_max(kb, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        });
        RssWatch {
            stop,
            peak,
            thread: Some(thread),
        }
    }

    /// Stop sampling; the peak in KiB (checked to have seen the process).
    fn peak_kb(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("rss watcher");
        }
        let peak = self.peak.load(Ordering::Relaxed);
        assert!(peak > 0, "VmRSS of the proxy was sampled");
        peak
    }
}

// ---------------------------------------------------------------------------------------------
// The agent crashes.

#[test]
fn agent_crash_mid_frame_forwards_the_partial_line_terminated_then_errors() {
    let s = Scratch::new();
    let mut steps = start_steps(&s.p("agent.pid"));
    steps.extend([
        json!({"expect": "session/prompt"}),
        json!({"raw_bytes": b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\",\"upd".to_vec()}),
        json!({"exit": 3}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &[], &s.agent(&steps));
    start(&mut proxy, INITIALIZE);
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    proxy.send(PROMPT.as_bytes());
    assert_eq!(
        proxy.next_line().expect("the partial frame"),
        b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\",\"upd\n",
        "the partial line, as written, with a newline so the client's framing stays in step"
    );
    assert_agent_gone_error(
        &proxy.next_json(),
        json!(3),
        "session/prompt",
        "exit status 3",
    );
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 3, "stderr:\n{}", proxy.stderr());
    assert_gone(pid, "agent");
}

#[test]
fn agent_crash_mid_turn_delivers_the_updates_then_errors_the_prompt() {
    let s = Scratch::new();
    let mut steps = start_steps(&s.p("agent.pid"));
    let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "half"}}}});
    steps.extend([
        json!({"expect": "session/prompt"}),
        json!({"send": update}),
        json!({"send": update}),
        json!({"stderr": "panic: lost the plot"}),
        json!({"abort": true}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &[], &s.agent(&steps));
    start(&mut proxy, ZED_INITIALIZE);
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    proxy.send(PROMPT.as_bytes());
    for _ in 0..2 {
        assert_eq!(proxy.next_json(), update, "updates before the crash arrive");
    }
    let msg = proxy.next_json();
    assert_agent_gone_error(&msg, json!(3), "session/prompt", "SIGABRT");
    assert!(msg["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("panic: lost the plot")));
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 128 + libc::SIGABRT);
    assert_gone(pid, "agent");
}

#[test]
fn agent_crash_during_initialize_answers_initialize_with_the_reason() {
    let s = Scratch::new();
    let agent = s.agent(&[
        json!({"pid_file": s.p("agent.pid")}),
        json!({"expect": "initialize"}),
        json!({"stderr": "cannot find credentials"}),
        json!({"exit": 9}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &[], &agent);
    proxy.send(ZED_INITIALIZE.as_bytes());
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    let msg = proxy.next_json();
    assert_agent_gone_error(&msg, json!(1), "initialize", "exit status 9");
    assert!(msg["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("cannot find credentials")));
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 9);
    assert_gone(pid, "agent");
}

/// Zed mode, a Claude subagent running: a permission request for a tool call the proxy has not
/// seen yet is held to learn its thread. The agent dies meanwhile: the held request still
/// reaches the client (before the errors), and the prompt gets its error.
#[test]
fn agent_crash_with_a_permission_request_pending_delivers_it_then_errors() {
    let s = Scratch::new();
    let mut steps = start_steps(&s.p("agent.pid"));
    let spawn = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
        "update": {"sessionUpdate": "tool_call", "toolCallId": "toolu_1", "title": "Task", "kind": "think",
            "status": "pending", "rawInput": {}, "_meta": {"claudeCode": {"toolName": "Agent"}}}}});
    let permission = json!({"jsonrpc": "2.0", "id": "perm-1", "method": "session/request_permission",
        "params": {"sessionId": "s1", "toolCall": {"toolCallId": "child-tool"},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}});
    steps.extend([
        json!({"expect": "session/prompt"}),
        json!({"send": spawn}),
        json!({"send": permission}),
        json!({"exit": 4}),
    ]);
    let config = s.write("proxy.toml", "[zed]\npermission_hold_ms = 60000\n");
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &s.agent(&steps));
    start(&mut proxy, ZED_INITIALIZE);
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    proxy.send(PROMPT.as_bytes());
    let card = proxy.next_json();
    assert_eq!(card["params"]["update"]["toolCallId"], "toolu_1");
    assert!(card["params"]["update"]["_meta"]["subagent_session_info"].is_object());
    assert_eq!(
        proxy.next_json(),
        permission,
        "the held request is released unchanged when the agent dies"
    );
    assert_agent_gone_error(
        &proxy.next_json(),
        json!(3),
        "session/prompt",
        "exit status 4",
    );
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 4);
    assert_gone(pid, "agent");
}

// ---------------------------------------------------------------------------------------------
// The agent hangs.

#[test]
fn hung_agent_gets_the_cancel_then_is_stopped_when_the_client_closes() {
    let s = Scratch::new();
    let config = s.write("proxy.toml", FAST_SHUTDOWN);
    let recorded = s.p("after-prompt.jsonl");
    let mut steps = start_steps(&s.p("agent.pid"));
    steps.extend([
        json!({"expect": "session/prompt"}),
        json!({"ignore_sigterm": true}),
        json!({"record": {"path": recorded, "lines": 1}}),
        json!({"hang": true}),
    ]);
    let mut proxy = Proxy::start(
        s.dir.path(),
        &["--config", &config, "--log-level", "debug"],
        &s.agent(&steps),
    );
    start(&mut proxy, INITIALIZE);
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    proxy.send(PROMPT.as_bytes());
    let cancel =
        "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s1\"}}\n";
    proxy.send(cancel.as_bytes());
    // The cancel reached the agent (it records the next line it reads) before the client leaves.
    let deadline = std::time::Instant::now() + proxy::TIMEOUT;
    while std::fs::read_to_string(&recorded).unwrap_or_default() != cancel {
        assert!(std::time::Instant::now() < deadline, "cancel not forwarded");
        std::thread::sleep(Duration::from_millis(10));
    }
    proxy.close_stdin();
    assert_eq!(
        proxy.rest(),
        b"",
        "the prompt stays unanswered: nobody is left to read it"
    );
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    assert_gone(pid, "hung agent that ignores SIGTERM");
    assert!(
        proxy.stderr().contains("signalling its group sig=9"),
        "SIGKILL ended it"
    );
}

// ---------------------------------------------------------------------------------------------
// The agent writes faster than the client reads, or writes things that are not JSON-RPC.

/// 96 MiB of notifications against a client that first reads nothing, then reads slowly: the
/// proxy stops reading the agent instead of buffering (its memory stays far below the data in
/// flight), and every frame arrives, in order.
#[test]
fn agent_flood_against_a_slow_client_keeps_memory_bounded_and_drops_nothing() {
    const FRAMES: u64 = 3072;
    const SIZE: u64 = 32 * 1024;
    let s = Scratch::new();
    let mut steps = start_steps(&s.p("agent.pid"));
    steps.push(json!({"flood": {"frames": FRAMES, "size": SIZE}}));
    let mut proxy = Proxy::start(s.dir.path(), &[], &s.agent(&steps));
    start(&mut proxy, INITIALIZE);
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    let watch = RssWatch::start(proxy.pid());
    // Nothing is read for a while: the pipes and the proxy's queue fill, the agent blocks.
    std::thread::sleep(Duration::from_millis(500));
    for n in 0..FRAMES {
        let msg = proxy.next_json();
        assert_eq!(msg["params"]["n"], n, "every frame, in order");
        if n % 64 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let peak = watch.peak_kb();
    eprintln!("flood: proxy RSS peak {peak} KiB");
    let total_kb = FRAMES * SIZE / 1024;
    assert!(
        peak < 48 * 1024,
        "proxy RSS peaked at {peak} KiB while {total_kb} KiB flowed through"
    );
    proxy.close_stdin();
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    assert_gone(pid, "agent");
}

#[test]
fn agent_garbage_nul_and_invalid_utf8_pass_unchanged_and_the_session_goes_on() {
    let s = Scratch::new();
    let mut steps = start_steps(&s.p("agent.pid"));
    let odd: Vec<Vec<u8>> = vec![
        b"this is not json\n".to_vec(),
        b"\x00\n".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"method\":\"_x\",\"params\":{\"a\":\"\x00\"}}\n".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"method\":\"_x\",\"params\":{\"a\":\"\xff\xfe\"}}\n".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"t\xc3\x28\"}}}\n".to_vec(),
        b"[1,2,3]\n".to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":\n".to_vec(),
    ];
    steps.push(json!({"expect": "session/prompt"}));
    for line in &odd {
        steps.push(json!({"raw_bytes": line}));
    }
    steps.push(json!({"reply": {"stopReason": "end_turn"}}));
    let mut proxy = Proxy::start(s.dir.path(), &[], &s.agent(&steps));
    start(&mut proxy, ZED_INITIALIZE);
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    proxy.send(PROMPT.as_bytes());
    for line in &odd {
        assert_eq!(
            &proxy.next_line().expect("odd line"),
            line,
            "relayed byte for byte"
        );
    }
    assert_eq!(proxy.next_json()["result"]["stopReason"], "end_turn");
    proxy.close_stdin();
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    assert_gone(pid, "agent");
}

/// A 200 MiB line (above the default 64 MiB `max_frame_bytes`) reaches the client intact
/// without ever being held whole, and the session goes on after it.
#[test]
fn agent_200_mib_line_arrives_intact_and_is_never_held_whole() {
    const SIZE: usize = 200 << 20;
    let s = Scratch::new();
    let pid_file = s.p("agent.pid");
    let head = r#"{"jsonrpc":"2.0","method":"_test/big","params":{"d":""#;
    let tail = "\"}}";
    let script = format!(
        "echo $$ > '{pid_file}'; read -r _init; printf '%s\\n' '{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}'; \
         printf '%s' '{head}'; head -c {SIZE} /dev/zero | tr '\\0' a; printf '%s\\n' '{tail}'; \
         printf '%s\\n' '{{\"jsonrpc\":\"2.0\",\"method\":\"_test/after\"}}'; while read -r _l; do :; done"
    );
    let agent = vec!["sh".to_owned(), "-c".to_owned(), script];
    let mut proxy = Proxy::start(s.dir.path(), &[], &agent);
    proxy.send(INITIALIZE.as_bytes());
    assert_eq!(proxy.next_json()["id"], 1);
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    let watch = RssWatch::start(proxy.pid());
    let line = proxy.next_line().expect("the big line");
    let peak = watch.peak_kb();
    eprintln!("200 MiB line: proxy RSS peak {peak} KiB");
    assert_eq!(line.len(), head.len() + SIZE + tail.len() + 1, "length");
    assert!(line.starts_with(head.as_bytes()) && line.ends_with(b"\"}}\n"));
    assert!(
        line[head.len()..head.len() + SIZE]
            .iter()
            .all(|b| *b == b'a'),
        "content"
    );
    drop(line);
    assert!(
        peak < 180 * 1024,
        "proxy RSS peaked at {peak} KiB for a {} KiB line",
        SIZE / 1024
    );
    assert_eq!(proxy.next_json()["method"], "_test/after");
    proxy.close_stdin();
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    assert!(proxy.stderr().contains("longer than max_frame_bytes"));
    assert_gone(pid, "agent");
}

// ---------------------------------------------------------------------------------------------
// The client misbehaves.

/// Zed mode. Garbage goes to the agent unchanged; a request for a session the agent does not
/// know is the agent's to answer; a child-shaped id the proxy never gave, a prompt to a child,
/// and a load of that unknown child are answered by the proxy and never reach the agent; a
/// client that closes in the middle of a frame has the partial line delivered, terminated,
/// and the session ends normally.
#[test]
fn client_garbage_unknown_sessions_child_requests_and_close_mid_frame() {
    let s = Scratch::new();
    let recorded = s.p("agent-saw.jsonl");
    let mut steps = start_steps(&s.p("agent.pid"));
    steps.extend([
        json!({"expect": "session/prompt"}),
        // A subagent, so that the client has a real child id to misuse.
        json!({"send": {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
            "update": {"sessionUpdate": "tool_call", "toolCallId": "toolu_1", "title": "Task", "kind": "think",
                "status": "pending", "rawInput": {}, "_meta": {"claudeCode": {"toolName": "Agent"}}}}}}),
        json!({"reply": {"stopReason": "end_turn"}}),
        json!({"expect": "session/prompt"}),
        json!({"reply_error": {"code": -32002, "message": "unknown session nope"}}),
        json!({"record": recorded}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &[], &s.agent(&steps));
    start(&mut proxy, ZED_INITIALIZE);
    let pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![pid]);
    proxy.send(PROMPT.as_bytes());
    let card = proxy.next_json();
    let child = card["params"]["update"]["_meta"]["subagent_session_info"]["session_id"]
        .as_str()
        .expect("child id on the card")
        .to_owned();
    assert_eq!(proxy.next_json()["id"], 3);

    // A prompt for a session nobody knows: forwarded, answered by the agent.
    proxy.send(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"nope\",\"prompt\":[]}}\n");
    assert_eq!(error_of(&proxy.next_json(), &json!(4))["code"], -32002);

    // From here on the agent records everything it receives.
    let garbage: &[u8] = b"garbage \x00 \xff{\n";
    proxy.send(garbage);
    let never_given = acp_proxy::subagents::ids::child_session_id("other", "toolu_x");
    proxy.send_json(&json!({"jsonrpc": "2.0", "id": 5, "method": "session/load",
        "params": {"sessionId": never_given, "cwd": "/p", "mcpServers": []}}));
    let err = error_of(&proxy.next_json(), &json!(5)).clone();
    assert_eq!(err["code"], -32002, "{err}");
    proxy.send_json(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt",
        "params": {"sessionId": child, "prompt": [{"type": "text", "text": "hi"}]}}),
    );
    let err = error_of(&proxy.next_json(), &json!(6)).clone();
    assert_eq!(err["code"], -32602, "{err}");
    proxy.send_json(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "session/set_mode",
        "params": {"sessionId": child, "modeId": "x"}}),
    );
    assert_eq!(error_of(&proxy.next_json(), &json!(7))["code"], -32602);
    proxy.send(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"session/pro");
    proxy.close_stdin();
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    assert_gone(pid, "agent");
    let saw = std::fs::read(&recorded).expect("agent recording");
    let mut want = garbage.to_vec();
    want.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"session/pro\n");
    assert_eq!(
        String::from_utf8_lossy(&saw),
        String::from_utf8_lossy(&want),
        "the agent saw the garbage and the partial frame, and nothing about the child"
    );
}

/// Zed's `initialize` as Zed 0.231 sends it (from the AgentPool captures) and as newer Zed
/// does (`terminal: true`).
const ZED_0231_INITIALIZE: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{\"fs\":{\"readTextFile\":true,\"writeTextFile\":true},\"terminal\":false,\"_meta\":{\"terminal_output\":true,\"terminal-auth\":true}},\"clientInfo\":{\"name\":\"zed\",\"version\":\"0.231.0\",\"title\":\"Zed\"}}}\n";
const ZED_TERMINAL_INITIALIZE: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{\"fs\":{\"readTextFile\":true,\"writeTextFile\":true},\"terminal\":true,\"_meta\":{\"terminal_output\":true,\"terminal-auth\":true}},\"clientInfo\":{\"name\":\"zed\",\"version\":\"0.232.0\",\"title\":\"Zed\"}}}\n";

/// As AgentPool 2.9.18 does: during `session/new`, before answering it, the agent sends two
/// `terminal/create` requests for the new session, each after the answer to the one before
/// (this script waits for each answer). Zed knows a session only once the `session/new`
/// response arrived and errors requests for others, so such a request must never reach it;
/// and since the agent waits for the answer, holding it until the response would deadlock. The proxy answers it itself at once: `-32601` when the
/// client has no terminal capability (what the client would say), else an error saying the
/// session is not known to the client yet. Design: docs/reliability.md, "Requests during
/// the handshake".
fn requests_before_the_session_new_response(initialize: &str, want_code: i64) {
    let s = Scratch::new();
    let answers = s.p("answers.jsonl");
    let terminal = |id: u64, command: &str| {
        json!({"send": {"jsonrpc": "2.0", "id": id, "method": "terminal/create",
            "params": {"sessionId": "ses_new", "command": command, "env": [], "outputByteLimit": 1048576}}})
    };
    let agent = s.agent(&[
        json!({"pid_file": s.p("agent.pid")}),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}}),
        json!({"expect": "session/new"}),
        terminal(0, "uname -s"),
        json!({"record": {"path": answers, "lines": 1}}),
        terminal(1, "ver"),
        json!({"record": {"path": answers, "lines": 1}}),
        json!({"reply": {"sessionId": "ses_new"}}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &["--log-level", "warn"], &agent);
    proxy.send(initialize.as_bytes());
    let agent_pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![agent_pid]);
    assert_eq!(proxy.next_json()["id"], 1, "initialize answered");
    proxy.send(SESSION_NEW.as_bytes());

    // The client plays Zed: a request for a session it does not know gets an error reply.
    let mut unknown = Vec::new();
    let response = loop {
        let msg = proxy.next_json();
        if msg["id"] == 2 && msg.get("method").is_none() {
            break msg;
        }
        if msg.get("method").is_some() && msg.get("id").is_some() {
            unknown.push(msg["method"].clone());
            proxy.send_json(&json!({"jsonrpc": "2.0", "id": msg["id"],
                "error": {"code": -32603, "message": "Session not found"}}));
        }
    };
    assert_eq!(response["result"]["sessionId"], "ses_new");
    assert!(
        unknown.is_empty(),
        "requests for a session the client did not know yet reached it: {unknown:?}"
    );
    let text = std::fs::read_to_string(&answers).expect("the agent's answers");
    let got: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(got.len(), 2, "{text}");
    for (n, answer) in got.iter().enumerate() {
        assert_eq!(error_of(answer, &json!(n))["code"], want_code, "{answer}");
    }
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    assert_gone(agent_pid, "agent");
}

#[test]
fn requests_for_a_session_before_its_session_new_response_are_answered_by_the_proxy() {
    requests_before_the_session_new_response(ZED_0231_INITIALIZE, -32601);
    requests_before_the_session_new_response(ZED_TERMINAL_INITIALIZE, -32002);
}
