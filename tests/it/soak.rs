//! Soak: a long generated session through the proxy, sampling its memory (VmRSS) and open file
//! descriptors. Run by `scripts/soak.sh [SECONDS]` (release build); ignored in `cargo test`.
//!
//! The test plays both ends itself: it is the client on the proxy's stdio, and the agent
//! through two FIFOs (the agent command is `sh -c 'cat > IN & exec cat OUT'`, in essence), so every frame
//! of the session is generated here and every expected frame is checked to arrive.
//!
//! Each turn: a prompt; the agent's reply chunks, a tool call, a permission request the client
//! answers; subagents (two Claude-legacy spawns with tagged child events and a standard ACP
//! child with a `session_message` and events under its own id); every tenth turn the client
//! opens one child thread (proxy-served `session/load`), closes it, and lists sessions; then
//! the prompt's response. Every 200 turns a new parent session.
//!
//! Subagents are spawned in every turn for the whole run (three per turn: ~140 000 in five
//! minutes of a release build). `SOAK_SUBAGENTS=warmup` spawns them only during the warm-up
//! (at most `SOAK_MAX_SUBAGENTS`, default 300), then every other kind of traffic goes on.
//!
//! Settings (environment): `SOAK_SECS` (default 600), `SOAK_SAMPLE_SECS` (default: a twentieth
//! of the run, 1..=10), `SOAK_TURN_MS` pause between turns (default 5), `SOAK_RSS_TOLERANCE_PCT`
//! (default 10) and `SOAK_RSS_SLACK_KB` (default 2048), `SOAK_FD_SLACK` (default 2).

use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::proxy;
use crate::support::proxy::{Proxy, Scratch};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    t: f64,
    turns: u64,
    subagents: u64,
    rss_kb: u64,
    fds: u64,
}

fn rss_kb(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn fd_count(pid: i32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// The agent's end: lines the proxy wrote to the agent, and a writer for what the agent says.
struct AgentEnd {
    from_proxy: Receiver<Value>,
    out: std::io::BufWriter<std::fs::File>,
}

impl AgentEnd {
    fn send(&mut self, msg: Value) {
        writeln!(self.out, "{msg}").expect("write to the proxy as the agent");
    }

    fn flush(&mut self) {
        self.out.flush().expect("flush to the proxy as the agent");
    }

    fn update(&mut self, session: &str, update: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": session, "update": update}}));
    }

    /// Next message the proxy forwarded to the agent.
    fn recv(&self) -> Value {
        self.from_proxy
            .recv_timeout(proxy::TIMEOUT)
            .expect("the proxy forwarded a message to the agent")
    }
}

struct Session {
    proxy: Proxy,
    agent: AgentEnd,
    next_id: u64,
    session: String,
    sessions_made: u64,
    /// Children the client may open (ids as the proxy gave them on spawn cards).
    children: Vec<String>,
    subagents: Arc<AtomicU64>,
    lines_to_client: u64,
}

impl Session {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Client request; returns the id.
    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.id();
        self.proxy
            .send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Read client lines until the response to `id`; returns it and what came before.
    fn until_response(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let msg = self.proxy.next_json();
            self.lines_to_client += 1;
            if msg.get("method").is_none() && msg["id"] == json!(id) {
                return (msg, before);
            }
            before.push(msg);
        }
    }

    fn new_session(&mut self) {
        let id = self.request("session/new", json!({"cwd": "/soak", "mcpServers": []}));
        let got = self.agent.recv();
        assert_eq!(got["method"], "session/new");
        self.sessions_made += 1;
        let sid = format!("soak-session-{}", self.sessions_made);
        self.agent
            .send(json!({"jsonrpc": "2.0", "id": got["id"], "result": {"sessionId": sid}}));
        self.agent.flush();
        let (resp, _) = self.until_response(id);
        assert_eq!(resp["result"]["sessionId"], json!(sid));
        self.session = sid;
    }

    fn turn(&mut self, n: u64, spawn: bool) {
        let s = self.session.clone();
        let id = self.request(
            "session/prompt",
            json!({"sessionId": s, "prompt": [{"type": "text", "text": format!("turn {n}")}]}),
        );
        let prompt = self.agent.recv();
        assert_eq!(prompt["method"], "session/prompt", "{prompt}");
        let a = &mut self.agent;
        a.update(&s, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("Working on turn {n}.")}}));
        let tool = format!("read-{n}");
        a.update(&s, json!({"sessionUpdate": "tool_call", "toolCallId": tool, "title": "Read file", "kind": "read", "status": "pending"}));
        a.send(json!({"jsonrpc": "2.0", "id": format!("perm-{n}"), "method": "session/request_permission",
            "params": {"sessionId": s, "toolCall": {"toolCallId": tool}, "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}}));
        a.update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "x".repeat(200)}}]}));
        let mut spawned = Vec::new();
        if spawn {
            for j in 0..2 {
                let sp = format!("toolu-{n}-{j}");
                let meta = json!({"claudeCode": {"toolName": "Agent"}});
                let tagged = json!({"claudeCode": {"toolName": "Glob", "parentToolUseId": sp}});
                a.update(&s, json!({"sessionUpdate": "tool_call", "toolCallId": sp, "title": "Task", "kind": "think", "status": "pending", "rawInput": {}, "_meta": meta}));
                a.update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": sp, "title": format!("Survey {n}.{j}"),
                    "rawInput": {"description": format!("Survey {n}.{j}"), "prompt": "Find the text files", "subagent_type": "general-purpose"}, "_meta": meta}));
                let ct = format!("glob-{n}-{j}");
                a.update(&s, json!({"sessionUpdate": "tool_call", "toolCallId": ct, "title": "Find `*.txt`", "kind": "search", "status": "pending", "_meta": tagged}));
                a.update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": ct, "_meta": {"claudeCode": {"toolName": "Glob", "toolResponse": {}}}}));
                a.update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": ct, "status": "completed", "_meta": tagged}));
                a.update(&s, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Found 3 files."},
                    "_meta": {"claudeCode": {"parentToolUseId": sp}}}));
                a.update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": sp, "status": "completed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "Found 3 files."}}], "_meta": meta}));
                spawned.push(acp_proxy::subagents::ids::child_session_id(&s, &sp));
            }
            let kid = format!("kid-{n}");
            a.update(&s, json!({"sessionUpdate": "subagent_update", "sessionId": kid, "title": format!("Standard {n}"),
                "capabilities": {"cancel": {}}, "state": {"state": "running"}}));
            let msg = json!({"sessionUpdate": "session_message", "messageId": format!("toolu-k{n}"), "senderSessionId": s,
                "recipientSessionId": kid, "content": [{"type": "text", "text": "Summarise the repo"}]});
            a.update(&s, msg.clone());
            a.update(&kid, msg);
            a.update(&kid, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Summary."}}));
            a.update(&kid, json!({"sessionUpdate": "tool_call", "toolCallId": format!("kt-{n}"), "title": "List", "kind": "read", "status": "completed"}));
            a.update(&s, json!({"sessionUpdate": "subagent_update", "sessionId": kid, "state": {"state": "idle", "stopReason": "end_turn"}}));
            spawned.push(acp_proxy::subagents::ids::child_session_id(
                &s,
                &acp_proxy::subagents::ids::synthesized_spawn_id(&kid),
            ));
            self.subagents.fetch_add(3, Ordering::Relaxed);
        }
        a.update(&s, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}));
        a.flush();

        // The permission request reaches the client; its answer reaches the agent.
        loop {
            let msg = self.proxy.next_json();
            self.lines_to_client += 1;
            if msg["method"] == "session/request_permission" {
                assert_eq!(msg["id"], json!(format!("perm-{n}")));
                break;
            }
        }
        self.proxy
            .send_json(&json!({"jsonrpc": "2.0", "id": format!("perm-{n}"),
            "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}));
        let answer = self.agent.recv();
        assert_eq!(answer["id"], json!(format!("perm-{n}")), "{answer}");

        if n.is_multiple_of(10) && !self.children.is_empty() {
            let child = self.children[(n / 10) as usize % self.children.len()].clone();
            let id = self.request(
                "session/load",
                json!({"sessionId": child, "cwd": "/soak", "mcpServers": []}),
            );
            let (resp, _) = self.until_response(id);
            assert_eq!(resp["result"], json!({}), "child load served: {resp}");
            let id = self.request("session/close", json!({"sessionId": child}));
            let (resp, _) = self.until_response(id);
            assert_eq!(resp["result"], json!({}), "child close answered: {resp}");
            let id = self.request("session/list", json!({}));
            let got = self.agent.recv();
            assert_eq!(got["method"], "session/list");
            self.agent.send(json!({"jsonrpc": "2.0", "id": got["id"], "result": {"sessions": [
                {"sessionId": s, "cwd": "/soak"}, {"sessionId": format!("kid-{n}"), "cwd": "/soak"}]}}));
            self.agent.flush();
            let (resp, _) = self.until_response(id);
            assert!(resp["result"]["sessions"].is_array(), "{resp}");
        }

        self.agent.send(
            json!({"jsonrpc": "2.0", "id": prompt["id"], "result": {"stopReason": "end_turn"}}),
        );
        self.agent.flush();
        let (resp, _) = self.until_response(id);
        assert_eq!(resp["result"]["stopReason"], "end_turn");
        self.children.extend(spawned);
    }
}

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("fifo path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn mean(xs: &[Sample], f: impl Fn(&Sample) -> u64) -> f64 {
    xs.iter().map(|s| f(s) as f64).sum::<f64>() / xs.len().max(1) as f64
}

#[test]
#[ignore = "long: run by scripts/soak.sh"]
fn soak() {
    let secs = env_u64("SOAK_SECS", 600);
    let sample_every = env_u64("SOAK_SAMPLE_SECS", (secs / 20).clamp(1, 10));
    let turn_pause = Duration::from_millis(env_u64("SOAK_TURN_MS", 5));
    let unbounded = std::env::var("SOAK_SUBAGENTS").as_deref() != Ok("warmup");
    let max_subagents = env_u64("SOAK_MAX_SUBAGENTS", 300);
    let warmup = Duration::from_secs((secs / 5).max(5));
    let tolerance_pct = env_u64("SOAK_RSS_TOLERANCE_PCT", 10);
    let slack_kb = env_u64("SOAK_RSS_SLACK_KB", 2048);
    let fd_slack = env_u64("SOAK_FD_SLACK", 2);

    let s = Scratch::new();
    let (to_agent, from_agent) = (s.path("agent-in.fifo"), s.path("agent-out.fifo"));
    mkfifo(&to_agent);
    mkfifo(&from_agent);
    let config = s.write(
        "proxy.toml",
        "display = \"zed\"\n[shutdown]\nstdin_grace_ms = 200\nterm_grace_ms = 400\n",
    );
    let agent_cmd = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        // A background job's stdin is /dev/null unless redirected explicitly: keep ours on fd 3.
        "exec 3<&0; cat <&3 > \"$0\" & exec cat \"$1\" 3<&-".to_owned(),
        to_agent.to_string_lossy().into_owned(),
        from_agent.to_string_lossy().into_owned(),
    ];
    let proxy = Proxy::start(
        s.dir.path(),
        &["--config", &config, "--log-level", "warn"],
        &agent_cmd,
    );
    let pid = proxy.pid();

    // The agent's stdin (what the proxy sends the agent) arrives on `to_agent`.
    let (tx, from_proxy) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let f = std::fs::File::open(&to_agent).expect("open the agent-in FIFO");
        for line in BufReader::new(f).split(b'\n') {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_slice::<Value>(&line) {
                if tx.send(v).is_err() {
                    break;
                }
            }
        }
    });
    // The proxy starts its agent on the client's first message, so the agent-out FIFO gets
    // its reader only then: open it (which waits for the reader) beside the initialize.
    let opener = std::thread::spawn(move || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&from_agent)
            .expect("open the agent-out FIFO")
    });
    let mut proxy = proxy;
    let init_id = 1;
    proxy.send_json(
        &json!({"jsonrpc": "2.0", "id": init_id, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}},
            "clientInfo": {"name": "zed", "version": "1.18"}}}),
    );
    let out = opener.join().expect("FIFO opener");
    let mut sess = Session {
        proxy,
        agent: AgentEnd {
            from_proxy,
            out: std::io::BufWriter::with_capacity(1 << 16, out),
        },
        next_id: init_id,
        session: String::new(),
        sessions_made: 0,
        children: Vec::new(),
        subagents: Arc::new(AtomicU64::new(0)),
        lines_to_client: 0,
    };

    let id = init_id;
    let init = sess.agent.recv();
    assert_eq!(init["method"], "initialize");
    sess.agent.send(
        json!({"jsonrpc": "2.0", "id": init["id"], "result": {"protocolVersion": 1,
        "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "soak-agent"}}}),
    );
    sess.agent.flush();
    sess.until_response(id);
    sess.new_session();

    // Sampler.
    let turns = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let sampler = std::thread::spawn({
        let (turns, stop, subagents) = (turns.clone(), stop.clone(), sess.subagents.clone());
        move || {
            let mut samples = Vec::new();
            let mut next = started;
            while !stop.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    if let (Some(rss_kb), Some(fds)) = (rss_kb(pid), fd_count(pid)) {
                        let sample = Sample {
                            t: started.elapsed().as_secs_f64(),
                            turns: turns.load(Ordering::Relaxed),
                            subagents: subagents.load(Ordering::Relaxed),
                            rss_kb,
                            fds,
                        };
                        println!(
                            "{:>8.1} {:>8} {:>9} {:>9} {:>5}",
                            sample.t, sample.turns, sample.subagents, sample.rss_kb, sample.fds
                        );
                        samples.push(sample);
                    }
                    next += Duration::from_secs(sample_every);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            samples
        }
    });
    println!(
        "soak: {secs} s, subagents {}, sample every {sample_every} s, warm-up {} s",
        if unbounded {
            "in every turn (unbounded)".to_owned()
        } else {
            format!("during warm-up only (at most {max_subagents})")
        },
        warmup.as_secs()
    );
    println!(
        "{:>8} {:>8} {:>9} {:>9} {:>5}",
        "t(s)", "turns", "subagents", "rss(KiB)", "fds"
    );

    let deadline = started + Duration::from_secs(secs);
    let mut n = 0;
    while Instant::now() < deadline {
        n += 1;
        if n % 200 == 0 {
            sess.new_session();
        }
        let spawn = unbounded
            || (started.elapsed() < warmup / 2
                && sess.subagents.load(Ordering::Relaxed) + 3 <= max_subagents);
        sess.turn(n, spawn);
        turns.store(n, Ordering::Relaxed);
        std::thread::sleep(turn_pause);
    }
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.join().expect("sampler");

    let lines = sess.lines_to_client;
    let subagents = sess.subagents.load(Ordering::Relaxed);
    let mut proxy = sess.proxy;
    proxy.close_stdin();
    drop(sess.agent);
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    reader.join().expect("agent reader");

    // Compare the last quarter of the samples after warm-up with the first quarter.
    let steady: Vec<Sample> = samples
        .iter()
        .copied()
        .filter(|x| x.t >= warmup.as_secs_f64())
        .collect();
    assert!(
        steady.len() >= 4,
        "too few samples after warm-up ({}): run longer or sample more often",
        steady.len()
    );
    let q = steady.len() / 4;
    let (first, last) = (&steady[..q], &steady[steady.len() - q..]);
    let (rss_first, rss_last) = (mean(first, |x| x.rss_kb), mean(last, |x| x.rss_kb));
    let fds_first = first.iter().map(|x| x.fds).max().unwrap_or(0);
    let fds_last = last.iter().map(|x| x.fds).max().unwrap_or(0);
    let rss_limit = rss_first * (1.0 + tolerance_pct as f64 / 100.0) + slack_kb as f64;
    println!(
        "soak summary: {n} turns, {subagents} subagents, {lines} lines to the client in {:.0} s; \
         RSS first quarter {rss_first:.0} KiB, last quarter {rss_last:.0} KiB (limit {rss_limit:.0}); \
         fds {fds_first} -> {fds_last}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        rss_last <= rss_limit,
        "proxy RSS grew from {rss_first:.0} KiB to {rss_last:.0} KiB (limit {rss_limit:.0} KiB)"
    );
    assert!(
        fds_last <= fds_first + fd_slack,
        "proxy open fds grew from {fds_first} to {fds_last}"
    );
}
