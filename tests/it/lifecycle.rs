//! Every way a session ends leaves no process behind and gives the documented exit status
//! (docs/lifecycle.md): client EOF, SIGINT/SIGTERM to the proxy, agent crash with requests
//! pending, agent not found / not executable, agent that never answers `initialize`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::proxy::{
    assert_gone, error_of, read_pid, KillOnPanic, Proxy, Scratch, FAST_SHUTDOWN,
};

const INITIALIZE: &str =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n";

/// A `spawn` step for a grandchild that writes its pid to `pid_file` and then holds the
/// agent's stdio open for 100 s.
fn grandchild(pid_file: &str) -> Value {
    json!({"spawn": ["sh", "-c", format!("echo $$ > '{pid_file}'; exec sleep 100")]})
}

/// Send `initialize` and check the agent's answer, so the proxy is fully up.
fn initialize(proxy: &mut Proxy) {
    proxy.send(INITIALIZE.as_bytes());
    let reply = proxy.next_json();
    assert_eq!(reply["id"], 1, "initialize answered: {reply}");
}

#[test]
fn client_eof_closes_stdin_then_terms_then_kills_the_whole_group() {
    // Default shutdown timings: stdin closed, SIGTERM after 1 s, SIGKILL 2 s later.
    let s = Scratch::new();
    let (agent_pid, child_pid) = (s.p("agent.pid"), s.p("grandchild.pid"));
    let agent = s.agent(&[
        json!({"pid_file": agent_pid}),
        json!({"ignore_sigterm": true}),
        grandchild(&child_pid),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"wait_eof": true}),
        json!({"stderr": "agent: my stdin was closed"}),
        json!({"hang": true}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &["--log-level", "debug"], &agent);
    initialize(&mut proxy);
    let pids = [
        read_pid(&s.path("agent.pid")),
        read_pid(&s.path("grandchild.pid")),
    ];
    let _guard = KillOnPanic(pids.to_vec());

    let closed = Instant::now();
    proxy.close_stdin();
    assert_eq!(proxy.rest(), b"", "no frame after the client left");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    let took = closed.elapsed();
    assert_gone(pids[0], "agent that ignores SIGTERM");
    assert_gone(pids[1], "grandchild that ignores SIGTERM");

    let stderr = proxy.stderr();
    assert!(
        stderr.lines().any(|l| l == "agent: my stdin was closed"),
        "the agent saw its stdin close (its stderr is passed through):\n{stderr}"
    );
    let term = stderr.find("signalling its group sig=15");
    let kill = stderr.find("signalling its group sig=9");
    assert!(
        matches!((term, kill), (Some(t), Some(k)) if t < k),
        "SIGTERM, then SIGKILL to the group:\n{stderr}"
    );
    // Both graces were honoured before SIGKILL (a lower bound only; slow machines are fine).
    assert!(
        took >= Duration::from_millis(2900),
        "SIGKILL came after {took:?}, before stdin grace + term grace (3 s)"
    );
}

#[test]
fn client_eof_with_a_grandchild_holding_stdout_leaves_nothing_behind() {
    let s = Scratch::new();
    let config = s.write("proxy.toml", FAST_SHUTDOWN);
    let agent = s.agent(&[
        json!({"pid_file": s.p("agent.pid")}),
        grandchild(&s.p("grandchild.pid")),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        // Script over: the agent exits 0 as soon as its stdin closes; the grandchild stays.
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &agent);
    initialize(&mut proxy);
    let pids = [
        read_pid(&s.path("agent.pid")),
        read_pid(&s.path("grandchild.pid")),
    ];
    let _guard = KillOnPanic(pids.to_vec());

    proxy.close_stdin();
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    assert_gone(pids[0], "agent");
    assert_gone(pids[1], "grandchild holding the agent's stdout");
}

fn stopped_by_signal(sig: i32, want: i32) {
    let s = Scratch::new();
    let config = s.write("proxy.toml", FAST_SHUTDOWN);
    let agent = s.agent(&[
        json!({"pid_file": s.p("agent.pid")}),
        grandchild(&s.p("grandchild.pid")),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"wait_eof": true}),
        json!({"stderr": "agent: my stdin was closed"}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &agent);
    initialize(&mut proxy);
    let pids = [
        read_pid(&s.path("agent.pid")),
        read_pid(&s.path("grandchild.pid")),
    ];
    let _guard = KillOnPanic(pids.to_vec());

    // The client keeps its side open: the signal alone ends the session.
    proxy.signal(sig);
    assert_eq!(proxy.exit_code(), want, "stderr:\n{}", proxy.stderr());
    assert_gone(pids[0], "agent");
    assert_gone(pids[1], "grandchild");
    let stderr = proxy.stderr();
    assert!(
        stderr.lines().any(|l| l == "agent: my stdin was closed"),
        "the agent was asked to stop by closing its stdin:\n{stderr}"
    );
}

#[test]
fn sigint_exits_130_after_the_same_cleanup() {
    stopped_by_signal(libc::SIGINT, 130);
}

#[test]
fn sigterm_exits_143_after_the_same_cleanup() {
    stopped_by_signal(libc::SIGTERM, 143);
}

/// The agent dies while two client requests wait: each gets a -32603 error naming the exit
/// status and the tail of the agent's stderr, and the proxy exits with `want`.
fn agent_dies(how: Value, status_text: &str, want: i32) {
    let s = Scratch::new();
    let mut steps = vec![
        json!({"pid_file": s.p("agent.pid")}),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"expect": "_test/hold"}),
    ];
    steps.extend((1..=12).map(|n| json!({"stderr": format!("boom {n}")})));
    steps.push(how);
    let mut proxy = Proxy::start(s.dir.path(), &[], &s.agent(&steps));
    initialize(&mut proxy);
    let agent_pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![agent_pid]);

    proxy.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"method\":\"session/new\",\"params\":{\"cwd\":\"/\",\"mcpServers\":[]}}\n");
    proxy.send(b"{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"_test/hold\"}\n");
    for (id, method) in [(json!("s-1"), "session/new"), (json!(42), "_test/hold")] {
        let msg = proxy.next_json();
        let err = error_of(&msg, &id);
        assert_eq!(err["code"], -32603, "{msg}");
        let text = err["message"].as_str().expect("error message");
        assert!(
            text.contains(&format!("`{method}`")),
            "names the request: {text}"
        );
        assert!(text.contains(status_text), "names the status: {text}");
        assert!(
            text.contains("boom 3 |") && text.ends_with("boom 12"),
            "quotes the last 10 stderr lines: {text}"
        );
        assert!(!text.contains("boom 2 "), "only the last 10 lines: {text}");
    }
    assert_eq!(proxy.rest(), b"", "nothing after the errors");
    assert_eq!(proxy.exit_code(), want, "stderr:\n{}", proxy.stderr());
    assert_gone(agent_pid, "agent");
    let stderr = proxy.stderr();
    for n in 1..=12 {
        let line = format!("boom {n}");
        assert!(
            stderr.lines().any(|l| l == line),
            "agent stderr passed through line by line ({line}):\n{stderr}"
        );
    }
}

#[test]
fn agent_exit_with_a_code_answers_pending_requests_and_exits_with_that_code() {
    agent_dies(json!({"exit": 3}), "exit status 3", 3);
}

#[test]
fn agent_exit_0_mid_session_still_exits_non_zero() {
    agent_dies(json!({"exit": 0}), "exit status 0", 1);
}

#[test]
fn agent_killed_by_a_signal_exits_128_plus_signal() {
    agent_dies(
        json!({"abort": true}),
        "killed by signal 6 (SIGABRT)",
        128 + libc::SIGABRT,
    );
}

fn agent_cannot_start(program: &str, cwd: &Scratch, want: i32) {
    let mut proxy = Proxy::start(cwd.dir.path(), &[], &[program.to_owned()]);
    proxy.send(INITIALIZE.as_bytes());
    let msg = proxy.next_json();
    let err = error_of(&msg, &json!(1));
    assert_eq!(err["code"], -32603, "{msg}");
    let text = err["message"].as_str().expect("error message");
    assert!(
        text.contains("could not start the agent") && text.contains(program),
        "{text}"
    );
    assert_eq!(proxy.exit_code(), want, "stderr:\n{}", proxy.stderr());
    let stderr = proxy.stderr();
    assert!(
        stderr.contains(&format!("cannot start agent `{program}`")),
        "stderr says why:\n{stderr}"
    );
}

#[test]
fn agent_not_found_answers_initialize_and_exits_127() {
    let s = Scratch::new();
    agent_cannot_start(&s.p("no-such-agent"), &s, 127);
}

#[test]
fn agent_not_executable_answers_initialize_and_exits_126() {
    let s = Scratch::new();
    let path = s.write("agent.sh", "#!/bin/sh\necho hi\n");
    agent_cannot_start(&path, &s, 126);
}

#[test]
fn agent_that_never_answers_initialize_is_stopped_when_the_client_leaves() {
    let s = Scratch::new();
    let config = s.write("proxy.toml", FAST_SHUTDOWN);
    let agent = s.agent(&[
        json!({"pid_file": s.p("agent.pid")}),
        json!({"expect": "initialize"}),
        json!({"hang": true}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &agent);
    proxy.send(INITIALIZE.as_bytes());
    let agent_pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![agent_pid]);
    proxy.close_stdin();
    assert_eq!(proxy.rest(), b"", "nobody left to answer");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    assert_gone(agent_pid, "agent that never answered");
}

#[test]
fn agent_that_closes_stdout_first_gets_its_stdin_closed_before_any_signal() {
    let s = Scratch::new();
    let agent = s.agent(&[
        json!({"pid_file": s.p("agent.pid")}),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"close_stdout": true}),
        json!({"wait_eof": true}),
        json!({"stderr": "agent: my stdin was closed"}),
        json!({"exit": 5}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &[], &agent);
    initialize(&mut proxy);
    let agent_pid = read_pid(&s.path("agent.pid"));
    let _guard = KillOnPanic(vec![agent_pid]);
    // The client keeps its side open: the agent ending its output ends the session, and the
    // agent exits on its own (status 5) instead of being killed by SIGTERM (status 143).
    assert_eq!(proxy.rest(), b"");
    assert_eq!(proxy.exit_code(), 5, "stderr:\n{}", proxy.stderr());
    assert!(proxy
        .stderr()
        .lines()
        .any(|l| l == "agent: my stdin was closed"));
    assert_gone(agent_pid, "agent");
}

#[test]
fn agent_crash_with_a_grandchild_holding_stdout_still_answers_and_cleans_up() {
    let s = Scratch::new();
    let config = s.write("proxy.toml", FAST_SHUTDOWN);
    let agent = s.agent(&[
        json!({"pid_file": s.p("agent.pid")}),
        grandchild(&s.p("grandchild.pid")),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
        json!({"expect": "session/new"}),
        json!({"stderr": "fatal: out of cheese"}),
        json!({"exit": 7}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &agent);
    initialize(&mut proxy);
    let pids = [
        read_pid(&s.path("agent.pid")),
        read_pid(&s.path("grandchild.pid")),
    ];
    let _guard = KillOnPanic(pids.to_vec());
    proxy.send(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{}}\n");
    let msg = proxy.next_json();
    let text = error_of(&msg, &json!(2))["message"]
        .as_str()
        .expect("message");
    assert!(
        text.contains("exit status 7") && text.contains("fatal: out of cheese"),
        "{text}"
    );
    assert_eq!(proxy.exit_code(), 7, "stderr:\n{}", proxy.stderr());
    assert_gone(pids[0], "agent");
    assert_gone(pids[1], "grandchild holding the agent's stdout");
}

/// The pid of the guardian process watching the agent's process group `pgid` (it starts
/// right after the agent: wait for it a while).
fn guardian_of(pgid: i32) -> Option<i32> {
    let deadline = Instant::now() + crate::support::proxy::TIMEOUT;
    loop {
        let found = find_guardian(pgid);
        if found.is_some() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn find_guardian(pgid: i32) -> Option<i32> {
    let want = ["agent-guardian".to_owned(), pgid.to_string()];
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        (args.len() > 2 && args[1..3] == want && crate::support::proxy::alive(pid)).then_some(pid)
    })
}

/// An agent busy in a long tool: it ignores SIGTERM and SIGHUP, has closed its stdin, and
/// has started one process of its own (which ignores them too). Returns its command.
fn stubborn_agent(s: &Scratch) -> Vec<String> {
    let script = format!(
        "trap '' TERM HUP; exec 0<&-; \
         sh -c 'echo $$ > \"$1\"; exec sleep 1000' sh '{}' & \
         echo $$ > '{}'; exec sleep 1000",
        s.p("grandchild.pid"),
        s.p("agent.pid")
    );
    vec!["sh".to_owned(), "-c".to_owned(), script]
}

#[test]
fn sigkill_of_the_proxy_stops_the_agent_and_its_group_within_seconds() {
    let s = Scratch::new();
    let config = s.write("proxy.toml", FAST_SHUTDOWN);
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &stubborn_agent(&s));
    proxy.send(INITIALIZE.as_bytes());
    let pids = [
        read_pid(&s.path("agent.pid")),
        read_pid(&s.path("grandchild.pid")),
    ];
    let mut guard = KillOnPanic(pids.to_vec());
    // Killed a while into the session, once everything has started.
    let guardian = guardian_of(pids[0]);
    guard.0.extend(guardian);

    proxy.signal(libc::SIGKILL);
    let status = proxy.wait();
    let died = Instant::now();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    // The guardian waits stdin_grace_ms (200), sends SIGTERM, and SIGKILL after
    // term_grace_ms (400): well within `assert_gone`'s five seconds.
    assert_gone(pids[0], "agent that ignores SIGTERM and SIGHUP");
    assert_gone(pids[1], "the agent's own child");
    let took = died.elapsed();
    assert!(
        took >= Duration::from_millis(550),
        "the group got its grace periods first (gone after {took:?})"
    );
    if let Some(guardian) = guardian {
        assert_gone(guardian, "guardian, once its work is done");
    }
}

#[test]
#[cfg_attr(
    feature = "portable",
    ignore = "the parent-death signal is a Linux extra (src/platform/mod.rs)"
)]
fn killing_the_proxy_with_its_guardian_still_stops_the_agent() {
    // As `killall -9` might: the guardian goes first, then the proxy. The kernel still sends
    // the agent SIGTERM when its parent dies.
    let s = Scratch::new();
    let agent = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        format!("echo $$ > '{}'; exec sleep 1000", s.p("agent.pid")),
    ];
    let mut proxy = Proxy::start(s.dir.path(), &[], &agent);
    proxy.send(INITIALIZE.as_bytes());
    let agent_pid = read_pid(&s.path("agent.pid"));
    let mut guard = KillOnPanic(vec![agent_pid]);
    let guardian = guardian_of(agent_pid).expect("a guardian watches the agent's group");
    guard.0.push(guardian);
    crate::support::proxy::cleanup(guardian);
    assert_gone(guardian, "guardian");
    proxy.signal(libc::SIGKILL);
    proxy.wait();
    assert_gone(agent_pid, "agent whose parent died");
}

#[test]
fn an_orderly_exit_leaves_no_guardian_and_signals_nothing_more() {
    let s = Scratch::new();
    let config = s.write("proxy.toml", FAST_SHUTDOWN);
    let agent = s.agent(&[
        json!({"pid_file": s.p("agent.pid")}),
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &agent);
    initialize(&mut proxy);
    let agent_pid = read_pid(&s.path("agent.pid"));
    let mut guard = KillOnPanic(vec![agent_pid]);
    let guardian = guardian_of(agent_pid).expect("a guardian watches the agent's group");
    guard.0.push(guardian);
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    // Told to stand down and reaped before the proxy exited: no zombie, no process.
    assert!(
        !crate::support::proxy::alive(guardian)
            && std::fs::metadata(format!("/proc/{guardian}")).is_err(),
        "the guardian is gone when the proxy has exited"
    );
}

/// The proxy started by hand, stdin from `stdin`, with debug logs: its stderr up to the point
/// where it waits for the first frame, then SIGINT; the exit code and that stderr.
fn interrupted_while_waiting(stdin: std::process::Stdio) -> (Option<i32>, String) {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let s = Scratch::new();
    let mut proxy = Command::new(crate::support::proxy::BIN)
        .args(["--store", "memory", "--log-level", "debug"])
        .current_dir(s.dir.path())
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the proxy");
    let stderr = proxy.stderr.take().expect("piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    while !seen.contains("waiting for the client's first frame") {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(_) => {
                let _ = proxy.kill();
                panic!("the proxy never said it waits for a frame:\n{seen}");
            }
        }
    }
    // `wait` would close a piped stdin first: the client keeps its side open throughout.
    let _client = proxy.stdin.take();
    // SAFETY: kill(2) on the pid of a child we have not reaped yet.
    unsafe { libc::kill(proxy.id() as i32, libc::SIGINT) };
    let status = proxy.wait().expect("wait for the proxy");
    (status.code(), seen)
}

#[test]
fn sigint_before_the_first_frame_exits_130() {
    let (code, stderr) = interrupted_while_waiting(std::process::Stdio::piped());
    assert_eq!(code, Some(130), "stderr:\n{stderr}");
    // Started by an editor (stdin is a pipe), it says nothing of how to try it.
    assert!(!stderr.contains("speaks ACP"), "{stderr}");
}

#[test]
fn started_in_a_terminal_it_says_what_it_is_waiting_for() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut leader, mut follower) = (-1, -1);
    // SAFETY: openpty fills two descriptors it opened; no name, settings or size passed.
    let rc = unsafe {
        libc::openpty(
            &mut leader,
            &mut follower,
            std::ptr::null_mut(),
            // `*mut` coerces to the `*const` Linux declares and is what macOS declares.
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by openpty and are owned here alone.
    let (leader, follower) =
        unsafe { (OwnedFd::from_raw_fd(leader), OwnedFd::from_raw_fd(follower)) };
    let (code, stderr) = interrupted_while_waiting(follower.into());
    drop(leader);
    assert!(
        stderr.contains("acp-proxy speaks ACP (JSON-RPC, one message per line) on stdin"),
        "{stderr}"
    );
    assert!(stderr.contains("acp-proxy demo"), "{stderr}");
    assert_eq!(code, Some(130), "stderr:\n{stderr}");
}
