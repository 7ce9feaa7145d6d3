//! An editor that never reads the proxy's stderr must not stall the protocol: the agent's log
//! lines queue up to a bound, then are counted as dropped.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::support::proxy::{Scratch, BIN};

#[test]
fn an_unread_stderr_never_blocks_the_relay() {
    let s = Scratch::new();
    let noise = "x".repeat(200);
    let mut steps = vec![json!({"expect": "initialize"})];
    // ~1.2 MB of agent log: far more than a pipe buffer that nobody drains.
    steps.extend((0..6000).map(|n| json!({"stderr": format!("log line {n} {noise}")})));
    steps.push(json!({"raw": "{\"jsonrpc\":\"2.0\",\"method\":\"_test/after_the_log\"}"}));
    let agent = s.agent(&steps);
    let config = s.write("relay.toml", "display = \"off\"\n");
    let mut proxy = Command::new(BIN)
        .current_dir(s.dir.path())
        .env("XDG_STATE_HOME", s.dir.path().join("state"))
        .args(["--config", &config, "--"])
        .args(&agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start acp-proxy");
    // Hold the stderr pipe open without ever reading it.
    let _stderr = proxy.stderr.take().expect("stderr");
    let mut stdin = proxy.stdin.take().expect("stdin");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    )
    .expect("write");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = proxy.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the frame after the log arrives");
    assert!(got.contains("_test/after_the_log"), "{got}");
    drop(stdin);
    let status = proxy.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
}
