//! The relay is byte-faithful: whatever either side writes reaches the other side as the exact
//! same bytes, in order, whatever the frames hold (odd numbers and escapes, unknown methods,
//! batches, garbage, invalid UTF-8, blank and `\r\n` lines, 32 MiB lines, lines above
//! `max_frame_bytes`), and request ids survive in both directions.

use std::io::Write;

use serde_json::json;

use crate::support::proxy::{Proxy, Scratch};

/// A deterministic stream of `n` mixed lines: everything a relay must pass through unchanged.
fn mixed_stream(seed: u64, n: usize) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let mut out = Vec::new();
    for i in 0..n {
        let line: Vec<u8> = match next() % 17 {
            0 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"session/prompt","params":{{"sessionId":"s","n":1.0e3,"big":123456789012345678901234567890,"neg":-0.0,"e":1E-7}}}}"#
            )
            .into_bytes(),
            1 => format!(
                r#"{{"jsonrpc":"2.0","id":"r\u00e9-{i}","method":"_zed\/ext","params":{{"path":"C:\\dir\/f","emoji":"\ud83d\ude00"}}}}"#
            )
            .into_bytes(),
            2 => format!(r#"{{"method":"unknown/method{i}","jsonrpc":"2.0","params":[1,2.50,3]}}"#)
                .into_bytes(),
            3 => format!(
                r#"{{"jsonrpc":"2.0","id":{i},"result":{{"stopReason":"end_turn","x":1.50}}}}"#
            )
            .into_bytes(),
            4 => format!(
                r#"{{"jsonrpc":"2.0","id":"e-{i}","error":{{"code":-32601,"message":"no \"such\" method"}}}}"#
            )
            .into_bytes(),
            5 => format!(
                r#"[{{"jsonrpc":"2.0","id":{i},"method":"a"}},{{"jsonrpc":"2.0","method":"b"}}]"#
            )
            .into_bytes(),
            6 => format!("this is not json {{{{{{ {i}").into_bytes(),
            7 => {
                let mut l = br#"{"jsonrpc":"2.0","method":"x","params":""#.to_vec();
                l.extend_from_slice(b"\xff\xfe\xc3(");
                l.extend_from_slice(br#""}"#);
                l
            }
            8 => Vec::new(),
            9 => format!(r#"  {{ "jsonrpc" : "2.0" , "id" : {i} , "method" : "session/update" }}  "#)
                .into_bytes(),
            10 => format!(
                r#"{{"jsonrpc":"2.0","method":"_acme/progress","params":{{"_meta":{{"traceparent":"00-{i:032x}-01"}},"n":{i}}}}}"#
            )
            .into_bytes(),
            11 => format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"trunc"#).into_bytes(),
            12 => "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"text\":\"h\u{e9}llo\tw\u{f6}rld \u{2713}\"}}"
                .as_bytes()
                .to_vec(),
            13 => b" \t ".to_vec(),
            14 => [&b"42"[..], b"null", b"\"str\"", b"{}", b"[]"][i % 5].to_vec(),
            15 => {
                // Big enough to straddle the readers' buffer boundaries.
                let pad = "y".repeat(1000 + next() % 40_000);
                format!(r#"{{"jsonrpc":"2.0","method":"_big","params":{{"i":{i},"pad":"{pad}"}}}}"#)
                    .into_bytes()
            }
            _ => format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"fs/read_text_file","params":{{"path":"/a\u0000b","line":1e2}}}}"#)
                .into_bytes(),
        };
        out.extend_from_slice(&line);
        out.extend_from_slice(if next() % 4 == 0 { b"\r\n" } else { b"\n" });
    }
    out
}

fn line_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count()
}

/// Compare two byte streams line by line so a failure shows the first differing line.
fn assert_same_bytes(got: &[u8], want: &[u8], what: &str) {
    if got == want {
        return;
    }
    let g: Vec<&[u8]> = got.split_inclusive(|b| *b == b'\n').collect();
    let w: Vec<&[u8]> = want.split_inclusive(|b| *b == b'\n').collect();
    let i = g
        .iter()
        .zip(&w)
        .position(|(a, b)| a != b)
        .unwrap_or(g.len().min(w.len()));
    let show =
        |l: Option<&&[u8]>| l.map(|l| String::from_utf8_lossy(&l[..l.len().min(300)]).into_owned());
    panic!(
        "{what}: streams differ ({} vs {} bytes, {} vs {} lines); first difference at line {i}:\n got: {:?}\nwant: {:?}",
        got.len(),
        want.len(),
        g.len(),
        w.len(),
        show(g.get(i)),
        show(w.get(i)),
    );
}

#[test]
fn mixed_frames_pass_byte_identical_in_both_directions() {
    let s = Scratch::new();
    let to_client = mixed_stream(1, 3000);
    let to_agent = mixed_stream(2, 3000);
    let from_agent = s.write("agent-sends.bin", &to_client);
    let recorded = s.p("agent-received.bin");
    let agent = s.agent(&[
        json!({"send_file": from_agent}),
        json!({"record": recorded}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &[], &agent);

    // Write on one thread while this one reads, so neither direction waits for the other.
    let mut stdin = proxy.take_stdin();
    let writer = std::thread::spawn({
        let to_agent = to_agent.clone();
        move || {
            stdin.write_all(&to_agent).expect("write the client stream");
            stdin.flush().expect("flush the client stream");
            stdin
        }
    });
    let got = proxy.read_lines(line_count(&to_client));
    assert_same_bytes(&got, &to_client, "agent → client");
    // Close our side only once everything is written, then the proxy winds down.
    drop(writer.join().expect("writer thread"));
    assert_eq!(proxy.rest(), b"", "nothing after the agent's frames");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    let received = std::fs::read(&recorded).expect("agent recording");
    assert_same_bytes(&received, &to_agent, "client → agent");
}

#[test]
fn requests_and_responses_keep_their_ids_in_both_directions() {
    let s = Scratch::new();
    let from_client = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
        r#"{"jsonrpc":"2.0","id":"req-\u00e9","method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551617,"method":"_vendor/ping","params":{}}"#,
    ];
    // The agent answers out of order, with the ids exactly as the client spelled them.
    let answers = [
        r#"{"jsonrpc":"2.0","id":18446744073709551617,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"req-\u00e9","result":{"sessionId":"s1"}}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
    ];
    // Requests from the agent; id 0 is also in use by the client: ids are per direction.
    let agent_requests = [
        r#"{"jsonrpc":"2.0","id":"perm\/1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}"#,
        r#"{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s1","path":"/etc/hostname"}}"#,
    ];
    let client_answers = [
        r#"{"jsonrpc":"2.0","id":"perm\/1","result":{"outcome":{"outcome":"selected","optionId":"allow"}}}"#,
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32002,"message":"not found"}}"#,
    ];
    let done = r#"{"jsonrpc":"2.0","method":"_test/done"}"#;
    let (rec1, rec2) = (s.p("requests.bin"), s.p("answers.bin"));
    let mut steps = vec![json!({"record": {"path": rec1, "lines": 3}})];
    steps.extend(
        answers
            .iter()
            .chain(&agent_requests)
            .map(|l| json!({"raw": l})),
    );
    steps.push(json!({"record": {"path": rec2, "lines": 2}}));
    steps.push(json!({"raw": done}));
    // A pure relay: in the other modes the client's `initialize` gains the subagent opt-in.
    let config = s.write("relay.toml", "display = \"off\"\n");
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &s.agent(&steps));

    for line in from_client {
        proxy.send(format!("{line}\n").as_bytes());
    }
    for want in answers.iter().chain(&agent_requests) {
        let got = proxy.next_line().expect("a frame from the agent");
        assert_eq!(String::from_utf8_lossy(&got), format!("{want}\n"));
    }
    for line in client_answers {
        proxy.send(format!("{line}\n").as_bytes());
    }
    let got = proxy.next_line().expect("the agent's last frame");
    assert_eq!(String::from_utf8_lossy(&got), format!("{done}\n"));
    proxy.close_stdin();
    assert_eq!(proxy.rest(), b"", "no frame invented on shutdown");
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());

    let lines = |v: &[&str]| v.iter().map(|l| format!("{l}\n")).collect::<String>();
    let read = |p: &str| String::from_utf8(std::fs::read(p).expect("recording")).expect("utf-8");
    assert_eq!(read(&rec1), lines(&from_client));
    assert_eq!(read(&rec2), lines(&client_answers));
}

/// One line of exactly `len` bytes (newline included) holding a notification.
fn frame_of_len(len: usize, method: &str, fill: char) -> Vec<u8> {
    let head = format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"data":""#);
    let tail = "\"}}\n";
    let mut line = head.into_bytes();
    line.resize(len - tail.len(), fill as u8);
    line.extend_from_slice(tail.as_bytes());
    line
}

#[test]
fn a_32_mib_line_passes_in_both_directions() {
    const SIZE: usize = 32 << 20;
    let s = Scratch::new();
    let to_agent = frame_of_len(SIZE, "_test/up", 'u');
    let to_client = frame_of_len(SIZE, "_test/down", 'd');
    let from_agent = s.write("down.bin", &to_client);
    let recorded = s.p("up.bin");
    let after = r#"{"jsonrpc":"2.0","id":1,"result":{"after":"big"}}"#;
    let agent = s.agent(&[
        json!({"record": {"path": recorded, "lines": 1}}),
        json!({"send_file": from_agent}),
        json!({"raw": after}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &[], &agent);

    let mut stdin = proxy.take_stdin();
    let writer = std::thread::spawn({
        let to_agent = to_agent.clone();
        move || {
            stdin.write_all(&to_agent).expect("write the big frame");
            stdin.flush().expect("flush");
            stdin
        }
    });
    let got = proxy.next_line().expect("the big frame");
    assert!(
        got == to_client,
        "agent → client: 32 MiB line changed ({} bytes)",
        got.len()
    );
    let got = proxy.next_line().expect("the frame after it");
    assert_eq!(String::from_utf8_lossy(&got), format!("{after}\n"));
    drop(writer.join().expect("writer thread"));
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());
    let received = std::fs::read(&recorded).expect("agent recording");
    assert!(
        received == to_agent,
        "client → agent: 32 MiB line changed ({} bytes)",
        received.len()
    );
}

/// Lines above `max_frame_bytes` are relayed intact (in pieces, without being parsed) and the
/// proxy goes on relaying and answering normally afterwards.
#[test]
fn lines_above_max_frame_bytes_are_relayed_intact_and_the_proxy_keeps_working() {
    let s = Scratch::new();
    let config = s.write("proxy.toml", "max_frame_bytes = 1024\n");
    let mut big_up = frame_of_len(300_000, "_test/up", 'u');
    // Ending with \r\n: the terminator travels with the last piece.
    big_up.truncate(big_up.len() - 1);
    big_up.extend_from_slice(b"\r\n");
    let big_down = frame_of_len(250_000, "_test/down", 'd');
    let answer = "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"protocolVersion\":1}}\n";
    let mut down = big_down.clone();
    down.extend_from_slice(answer.as_bytes());
    let from_agent = s.write("down.bin", &down);
    let recorded = s.p("up.bin");
    let agent = s.agent(&[
        json!({"record": {"path": recorded, "lines": 1}}),
        json!({"expect": "initialize"}),
        json!({"send_file": from_agent}),
        json!({"expect": "_test/again"}),
        json!({"reply": {"still": "working"}}),
    ]);
    let mut proxy = Proxy::start(s.dir.path(), &["--config", &config], &agent);

    proxy.send(&big_up);
    proxy.send(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{}}\n");
    let got = proxy.next_line().expect("the big frame");
    assert!(
        got == big_down,
        "agent → client: oversized line changed ({} bytes)",
        got.len()
    );
    assert_eq!(
        String::from_utf8_lossy(&proxy.next_line().expect("answer")),
        answer
    );
    proxy.send(b"{\"jsonrpc\":\"2.0\",\"id\":\"again\",\"method\":\"_test/again\"}\n");
    let reply = proxy.next_json();
    assert_eq!(
        reply,
        json!({"jsonrpc":"2.0","id":"again","result":{"still":"working"}})
    );
    proxy.close_stdin();
    assert_eq!(proxy.exit_code(), 0, "stderr:\n{}", proxy.stderr());

    let received = std::fs::read(&recorded).expect("agent recording");
    assert!(
        received == big_up,
        "client → agent: oversized line changed ({} bytes)",
        received.len()
    );
    let stderr = proxy.stderr();
    for side in ["from the client", "from the agent"] {
        assert!(
            stderr.contains(&format!(
                "a line {side} is longer than max_frame_bytes (1024)"
            )),
            "oversize reported for the line {side}:\n{stderr}"
        );
    }
}
