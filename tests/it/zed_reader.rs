//! In Zed mode a streaming agent's output is read on a thread of its own and, once the agent
//! slows down, on the relay's thread again: frames must come through every switch intact and
//! in order.

use serde_json::json;

use crate::support::proxy::{Proxy, Scratch};

/// `n` frames of about `size` bytes each, numbered from `first`.
fn frames(first: usize, n: usize, size: usize) -> Vec<u8> {
    let pad = "é\\n\\\"x".repeat(size / 8);
    (first..first + n)
        .flat_map(|i| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"s\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"{i} {pad}\"}}}}}}}}\n"
            )
            .into_bytes()
        })
        .collect()
}

/// Frames the agent sends one at a time after each burst (the reader hands back after four
/// small reads that found the relay waiting).
const TRICKLE: usize = 6;

#[test]
fn frames_survive_every_switch_between_reading_threads() {
    let s = Scratch::new();
    let mut steps = vec![
        json!({"expect": "initialize"}),
        json!({"reply": {"protocolVersion": 1}}),
    ];
    let mut next = 0;
    // Per round, the frames the client reads before it acknowledges one.
    let mut rounds = Vec::new();
    for round in 0..3 {
        // A burst well past one read: reading moves to the thread.
        let burst = frames(next, 3000, 1200);
        next += 3000;
        steps.push(json!({"send_file": s.write(&format!("burst-{round}.jsonl"), &burst)}));
        let mut read_first = burst;
        // Then frames one at a time, the next only once the client has the last one (as when
        // an editor answers each): reading comes back, whatever the machine's load.
        for _ in 0..TRICKLE {
            let one = frames(next, 1, 300);
            next += 1;
            steps.push(
                json!({"raw": String::from_utf8(one[..one.len() - 1].to_vec()).expect("utf-8")}),
            );
            steps.push(json!({"expect": "test/ack"}));
            read_first.extend_from_slice(&one);
            rounds.push(std::mem::take(&mut read_first));
        }
    }
    steps.push(json!({"wait_eof": true}));
    let agent = s.agent(&steps);
    let mut proxy = Proxy::start(s.dir.path(), &["--log-level", "debug"], &agent);
    proxy.send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientInfo": {"name": "zed", "version": "1.18"}}}));
    let init = proxy.next_json();
    assert_eq!(init["id"], json!(1), "{init}");
    for want in rounds {
        let lines = want.iter().filter(|b| **b == b'\n').count();
        let got = proxy.read_lines(lines);
        assert!(
            got == want,
            "the agent's frames changed on the way ({} vs {} bytes)",
            got.len(),
            want.len()
        );
        proxy.send_json(&json!({"jsonrpc": "2.0", "method": "test/ack"}));
    }
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    let stderr = proxy.stderr();
    let to_thread = stderr.matches("read on a thread of its own").count();
    let back = stderr.matches("read on the relay's thread again").count();
    assert!(
        to_thread >= 2 && back >= 2,
        "reading switched {to_thread} times to the thread and {back} back:\n{stderr}"
    );
}
