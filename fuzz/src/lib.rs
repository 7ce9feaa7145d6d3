//! The functions the fuzz targets call. The normal test suite runs the checked-in seed corpus
//! (`fuzz/corpus-seed/<target>/`) and every crash regression through these same functions
//! (`tests/it/fuzz_corpus.rs` includes this file), so they use only what the main crate's
//! tests can use too.
//!
//! Each function panics when an invariant breaks; the fuzzer reports the panic as a crash.

use acp_proxy::engine::{Action, Engine, EngineConfig, Limits, SubagentDisplay, ZedOptions};
use acp_proxy::subagents::ids;
use acp_proxy::transport::framing::{Frame, LineCodec};
use acp_proxy::wire::envelope::{self, Kind, Parsed};
use acp_proxy::wire::line_body;
use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// Line framing: the input is cut into chunks (sizes taken from the input itself) and fed to
/// the decoder with a small frame limit. Whatever the chunking, the frames concatenate to the
/// input (plus one `\n` if it ended without one), every line ends with `\n`, and pieces of an
/// oversized line come as first … last. The input's first byte also picks the decoder: one
/// line per frame, or every complete line of a read at once (what the relay reads the agent
/// with).
pub fn framing(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    // Limit 1..=64 bytes, so oversized lines are common.
    let max = usize::from(head % 64) + 1;
    let (sizes, input) = rest.split_at(rest.len().min(8));
    let mut codec = if head & 0x80 != 0 {
        LineCodec::batched(max)
    } else {
        LineCodec::new(max)
    };
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < input.len() {
        let step = sizes
            .get(i % sizes.len().max(1))
            .map_or(input.len(), |s| usize::from(*s) + 1);
        i += 1;
        let end = (pos + step).min(input.len());
        buf.extend_from_slice(&input[pos..end]);
        pos = end;
        while let Some(f) = codec.decode(&mut buf).expect("decode never fails") {
            frames.push(f);
        }
    }
    while let Some(f) = codec.decode_eof(&mut buf).expect("decode_eof never fails") {
        frames.push(f);
    }
    assert!(buf.is_empty(), "bytes left in the buffer after EOF");
    check_frames(&frames, input, max);
}

/// The framing invariants, shared with the property tests' notion of a correct split.
pub fn check_frames(frames: &[Frame], input: &[u8], max: usize) {
    let mut joined = Vec::with_capacity(input.len() + 1);
    let mut in_piece = false;
    for f in frames {
        match f {
            Frame::Line(b) => {
                assert!(!in_piece, "a line inside an oversized line");
                assert!(b.ends_with(b"\n"), "a line without terminator");
                assert_eq!(
                    memchr_count(b),
                    1,
                    "a line holds exactly one newline, at its end"
                );
            }
            Frame::Lines(b) => {
                assert!(!in_piece, "lines inside an oversized line");
                assert!(
                    b.ends_with(b"\n"),
                    "a chunk of lines ends with a terminator"
                );
            }
            Frame::Piece { bytes, first, last } => {
                assert_eq!(*first, !in_piece, "first piece flags");
                assert!(!bytes.is_empty() || *last, "empty middle piece");
                if *last {
                    assert!(bytes.ends_with(b"\n"), "last piece ends the line");
                    assert_eq!(memchr_count(bytes), 1, "one newline in the last piece");
                    in_piece = false;
                } else {
                    assert_eq!(memchr_count(bytes), 0, "no newline inside a piece");
                    in_piece = true;
                }
                if *first {
                    assert!(
                        bytes.len() > max || *last,
                        "a piece starts only past the limit"
                    );
                }
            }
        }
        joined.extend_from_slice(f.bytes());
    }
    assert!(!in_piece, "an oversized line was never closed");
    let mut want = input.to_vec();
    if !want.is_empty() && !want.ends_with(b"\n") {
        want.push(b'\n');
    }
    assert!(joined == want, "frames do not concatenate to the input");
}

fn memchr_count(b: &[u8]) -> usize {
    b.iter().filter(|c| **c == b'\n').count()
}

/// The borrowed envelope parse never panics, and agrees with a full parse: whatever it calls a
/// message is UTF-8 JSON, and a JSON object whose `method` / `id` / `result` / `error` it
/// reports faithfully.
pub fn envelope(data: &[u8]) {
    let parsed = envelope::parse(data);
    match parsed {
        Parsed::Message(env) => {
            let text = std::str::from_utf8(line_body(data)).expect("a message is UTF-8");
            serde_json::from_str::<serde::de::IgnoredAny>(text).expect("a message is JSON");
            // serde_json's Value refuses numbers beyond f64 (`1E999`), which JSON allows, and
            // (with the `raw_value` feature) reads an object with its private raw-value key as
            // the JSON inside that key's string: compare the fields only when it holds the
            // message as written.
            if text.contains("$serde_json::private::RawValue") {
                return;
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
                return;
            };
            let obj = v.as_object().expect("a message is a JSON object");
            assert_eq!(
                env.method(),
                obj.get("method").and_then(|m| m.as_str()),
                "method"
            );
            if let Some(id) = env.id_text() {
                let id_v: serde_json::Value = serde_json::from_str(id).expect("the raw id is JSON");
                assert_eq!(Some(&id_v), obj.get("id"), "id");
            }
            let kind = env.kind();
            if kind == Kind::Response {
                assert!(obj.contains_key("result") || obj.contains_key("error"));
            }
        }
        Parsed::Blank => assert!(line_body(data).trim_ascii().is_empty()),
        Parsed::NotJsonRpc => {}
    }
}

// ---------------------------------------------------------------------------------------------
// The engine, driven by a small op language so that short inputs reach deep states.

const SESSIONS: [&str; 3] = ["s1", "s2", "k1"];
const TOOLS: [&str; 8] = ["t0", "t1", "t2", "t3", "c0", "c1", "c2", "toolu_9"];
const STATES: [&str; 6] = [
    r#"{"state":"running"}"#,
    r#"{"state":"idle","stopReason":"end_turn"}"#,
    r#"{"state":"idle","stopReason":"cancelled"}"#,
    r#"{"state":"unknown"}"#,
    r#""completed""#,
    r#"{"state":"idle","stopReason":"max_tokens"}"#,
];
const STATUSES: [&str; 5] = ["", "pending", "in_progress", "completed", "failed"];

/// Reads the op stream; runs out gracefully.
struct Ops<'a> {
    data: &'a [u8],
}

impl Ops<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(b)
    }

    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        let b = self.byte().unwrap_or(0);
        from[usize::from(b) % from.len()]
    }

    /// Bytes up to (not including) the next `\n`, or the rest.
    fn line(&mut self) -> &[u8] {
        let end = self
            .data
            .iter()
            .position(|b| *b == b'\n')
            .unwrap_or(self.data.len());
        let (line, rest) = self.data.split_at(end);
        self.data = rest.get(1..).unwrap_or(&[]);
        line
    }
}

struct Driver {
    engine: Engine,
    now: u64,
    next_id: u64,
    /// Every frame fed in, so that forwarded frames can be told from frames the proxy made.
    inputs: std::collections::HashSet<Bytes>,
}

impl Driver {
    fn feed(&mut self, to_agent_side: bool, frame: Bytes) {
        self.inputs.insert(frame.clone());
        let mut out = Vec::new();
        if to_agent_side {
            self.engine.from_client(frame, self.now, &mut out);
        } else {
            self.engine.from_agent(&frame, None, self.now, &mut out);
        }
        self.carry_out(out);
    }

    fn carry_out(&mut self, actions: Vec<Action>) {
        let mut queue: std::collections::VecDeque<Action> = actions.into();
        let mut steps = 0;
        while let Some(a) = queue.pop_front() {
            steps += 1;
            assert!(steps < 100_000, "runaway action list");
            match a {
                Action::ToClient(b) | Action::Untouched(b) => {
                    self.check_output(&b);
                    check_cards(&b);
                }
                Action::Read(_) => {}
                Action::ToAgent(b) => self.check_output(&b),
                Action::Note(_) | Action::Store(_) | Action::FollowRecord(_) => {}
                Action::FetchChildren { .. } => self.engine.restore(Vec::new()),
                Action::FetchChild { request, .. } => {
                    let mut more = Vec::new();
                    self.engine
                        .child_fetched(None, request, self.now, &mut more);
                    for m in more.into_iter().rev() {
                        queue.push_front(m);
                    }
                }
            }
        }
    }

    /// Every output is whole lines; a line the proxy made itself is valid JSON.
    fn check_output(&self, b: &Bytes) {
        assert!(b.ends_with(b"\n"), "output without a line terminator");
        if self.inputs.contains(b) {
            return;
        }
        for l in b.split(|c| *c == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap_or_else(|e| {
                panic!(
                    "the proxy wrote invalid JSON ({e}): {}",
                    String::from_utf8_lossy(l)
                )
            });
            assert!(v.is_object(), "the proxy wrote a non-object line");
        }
    }

    fn client(&mut self, text: String) {
        self.feed(true, Bytes::from(text + "\n"));
    }

    fn agent(&mut self, text: String) {
        self.feed(false, Bytes::from(text + "\n"));
    }

    fn update(&mut self, session: &str, update: String) {
        self.agent(format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{session}","update":{update}}}}}"#
        ));
    }
}

/// No card the client gets points at a top-level session (its own or another): Zed would
/// show that session's thread under the card.
fn check_cards(b: &Bytes) {
    if !b.windows(21).any(|w| w == b"subagent_session_info") {
        return;
    }
    for l in b.split(|c| *c == b'\n').filter(|l| !l.is_empty()) {
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(l) else {
            continue;
        };
        let named = v
            .pointer("/params/update/_meta/subagent_session_info/session_id")
            .and_then(serde_json::Value::as_str);
        if let Some(named) = named {
            assert!(
                !TOP_SESSIONS.contains(&named),
                "a card names the top-level session {named}: {v}"
            );
        }
    }
}

/// The sessions the client created in the fuzz driver.
const TOP_SESSIONS: [&str; 2] = ["s1", "s2"];
/// Child session ids a hostile agent may announce: the sessions themselves among them.
const KIDS: [&str; 6] = ["k1", "k2", "s1", "s2", "k3", "s_new"];

fn meta(parent: Option<&str>, tool_name: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let Some(t) = tool_name {
        parts.push(format!(r#""toolName":"{t}""#));
    }
    if let Some(p) = parent {
        parts.push(format!(r#""parentToolUseId":"{p}""#));
    }
    format!(r#"{{"claudeCode":{{{}}}}}"#, parts.join(","))
}

/// The engine in Zed mode, after a plausible `initialize` and `session/new`, fed an op stream.
pub fn engine(data: &[u8]) {
    let mut d = Driver {
        engine: Engine::new(EngineConfig {
            display: SubagentDisplay::Zed,
            zed: ZedOptions {
                permission_hold_ms: 100,
                max_held_permissions: 4,
                ..ZedOptions::default()
            },
            // Small, so that an agent going past them is caught by the bound checked below.
            limits: Limits {
                max_subagents_per_session: 50,
                max_depth: 4,
                ..Limits::default()
            },
            ..EngineConfig::default()
        }),
        now: 0,
        next_id: 1,
        inputs: Default::default(),
    };
    let mut ops = Ops { data };
    let flags = ops.byte().unwrap_or(0);
    d.client(r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{}},"clientInfo":{"name":"zed","version":"1.18"}}}"#.into());
    let loads = flags & 1 == 0;
    d.agent(format!(
        r#"{{"jsonrpc":"2.0","id":"init","result":{{"protocolVersion":1,"agentCapabilities":{{"loadSession":{loads}}},"agentInfo":{{"name":"fuzz"}}}}}}"#
    ));
    d.client(r#"{"jsonrpc":"2.0","id":"new","method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#.into());
    d.agent(r#"{"jsonrpc":"2.0","id":"new","result":{"sessionId":"s1"}}"#.into());
    d.client(r#"{"jsonrpc":"2.0","id":"new2","method":"session/new","params":{"cwd":"/p","mcpServers":[]}}"#.into());
    d.agent(r#"{"jsonrpc":"2.0","id":"new2","result":{"sessionId":"s2"}}"#.into());

    // Session ids the client may name: agent sessions, children (ours), a bogus child-shaped id.
    let child_ids: Vec<String> = vec![
        ids::child_session_id("s1", "t0"),
        ids::child_session_id("s1", "t1"),
        ids::child_session_id("s1", &ids::synthesized_spawn_id("k1")),
        ids::child_session_id(&ids::child_session_id("s1", "t0"), "t2"),
        ids::child_session_id("nope", "nope"),
    ];
    let mut ops_done = 0;
    while let Some(op) = ops.byte() {
        ops_done += 1;
        if ops_done > 2000 {
            break;
        }
        let s = ops.pick(&SESSIONS);
        let t = ops.pick(&TOOLS);
        let p = ops.pick(&TOOLS);
        let tagged = op & 0x80 != 0;
        let parent = tagged.then_some(p);
        match op & 0x1f {
            0 => d.update(s, format!(
                r#"{{"sessionUpdate":"tool_call","toolCallId":"{t}","title":"Task","kind":"think","status":"pending","rawInput":{{}},"_meta":{}}}"#,
                meta(parent, Some("Agent"))
            )),
            1 => {
                let bg = op & 0x40 != 0;
                d.update(s, format!(
                    r#"{{"sessionUpdate":"tool_call_update","toolCallId":"{t}","title":"Survey {t}","rawInput":{{"description":"Survey {t}","prompt":"do {t}","subagent_type":"general-purpose","run_in_background":{bg}}},"_meta":{}}}"#,
                    meta(parent, Some("Agent"))
                ))
            }
            2 => d.update(s, format!(
                r#"{{"sessionUpdate":"tool_call","toolCallId":"{t}","title":"Read {t}","kind":"read","status":"pending","_meta":{}}}"#,
                meta(parent, Some("Read"))
            )),
            3 => {
                let status = ops.pick(&STATUSES);
                let status = if status.is_empty() { String::new() } else { format!(r#","status":"{status}""#) };
                d.update(s, format!(
                    r#"{{"sessionUpdate":"tool_call_update","toolCallId":"{t}"{status},"content":[{{"type":"content","content":{{"type":"text","text":"out {t}"}}}}],"_meta":{}}}"#,
                    meta(parent, None)
                ))
            }
            4 => d.update(s, format!(
                r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"hi from {t}"}},"_meta":{}}}"#,
                meta(parent, None)
            )),
            5 => {
                let is_async = op & 0x40 != 0;
                d.update(s, format!(
                    r#"{{"sessionUpdate":"tool_call_update","toolCallId":"{t}","status":"completed","_meta":{{"claudeCode":{{"toolName":"Agent","toolResponse":{{"isAsync":{is_async},"content":[{{"type":"text","text":"result {t}"}}]}}}}}}}}"#
                ))
            }
            6 => {
                let state = ops.pick(&STATES);
                let cancel = if op & 0x40 != 0 { r#","capabilities":{"cancel":{}}"# } else { "" };
                let kid = if tagged { "k2" } else { "k1" };
                d.update(s, format!(
                    r#"{{"sessionUpdate":"subagent_update","sessionId":"{kid}","title":"Kid {t}","state":{state}{cancel}}}"#
                ))
            }
            7 => d.update(s, format!(
                r#"{{"sessionUpdate":"session_message","messageId":"{t}","senderSessionId":"s1","recipientSessionId":"k1","content":[{{"type":"text","text":"task {t}"}}]}}"#
            )),
            8 => {
                d.next_id += 1;
                let id = d.next_id;
                d.agent(format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"session/request_permission","params":{{"sessionId":"{s}","toolCall":{{"toolCallId":"{t}","_meta":{}}},"options":[{{"optionId":"allow","name":"Allow","kind":"allow_once"}}]}}}}"#,
                    meta(parent, None)
                ))
            }
            9 => {
                d.next_id += 1;
                let id = d.next_id;
                d.agent(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"fs/read_text_file","params":{{"sessionId":"{s}","path":"/p/{t}"}}}}"#))
            }
            10 => {
                // The agent answers a client request (ids are small numbers and the fixed ones).
                let id = ops.byte().unwrap_or(0) % 16;
                d.agent(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#))
            }
            11 => {
                let id = ops.byte().unwrap_or(0) % 16;
                d.agent(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"sessions":[{{"sessionId":"s1"}},{{"sessionId":"k1"}},{{"sessionId":"{}"}}]}}}}"#, child_ids[0]))
            }
            12..=17 => {
                let target = if op & 0x40 != 0 {
                    child_ids[usize::from(ops.byte().unwrap_or(0)) % child_ids.len()].clone()
                } else {
                    s.to_owned()
                };
                let id = ops.byte().unwrap_or(0) % 16;
                let method = match op & 0x1f {
                    12 => "session/prompt",
                    13 => "session/load",
                    14 => "session/resume",
                    15 => "session/close",
                    16 => "session/list",
                    _ => "session/set_mode",
                };
                d.client(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"sessionId":"{target}","cwd":"/p","mcpServers":[],"prompt":[]}}}}"#))
            }
            18 => {
                let target = if op & 0x40 != 0 {
                    child_ids[usize::from(ops.byte().unwrap_or(0)) % child_ids.len()].clone()
                } else {
                    s.to_owned()
                };
                d.client(format!(r#"{{"jsonrpc":"2.0","method":"session/cancel","params":{{"sessionId":"{target}"}}}}"#))
            }
            19 => {
                // The client answers an agent request.
                let id = d.next_id.saturating_sub(u64::from(ops.byte().unwrap_or(0) % 4));
                d.client(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"outcome":{{"outcome":"selected","optionId":"allow"}}}}}}"#))
            }
            20 => {
                d.now += u64::from(ops.byte().unwrap_or(0)) * 4;
                if d.engine.poll_timeout().is_some_and(|t| t <= d.now) {
                    let mut out = Vec::new();
                    d.engine.handle_timeout(d.now, &mut out);
                    d.carry_out(out);
                }
            }
            21 => {
                // Qwen / OpenCode shapes.
                if tagged {
                    d.update(s, format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"{t}","title":"x","_meta":{{"parentToolCallId":"{p}"}}}}"#))
                } else {
                    d.update(s, format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"{t}","title":"task","kind":"think","rawInput":{{"prompt":"p","subagent_type":"explore"}}}}"#))
                }
            }
            22 => {
                let line = ops.line().to_vec();
                d.feed(false, Bytes::from([line, b"\n".to_vec()].concat()));
            }
            23 => {
                let line = ops.line().to_vec();
                d.feed(true, Bytes::from([line, b"\n".to_vec()].concat()));
            }
            24 => {
                // A raw agent update with the rest of a line as its `update`.
                let line = String::from_utf8_lossy(ops.line()).into_owned();
                d.update(s, line)
            }
            25 => d.update(s, format!(
                r#"{{"sessionUpdate":"tool_call","toolCallId":"{t}","title":"Edit","kind":"edit","_meta":{{"subagent_session_info":{{"session_id":"x","message_start_index":0}}}}}}"#
            )),
            26 => {
                // A hostile announcement: any child id on any session (its own, another
                // top-level one, one announced elsewhere already).
                let kid = ops.pick(&KIDS);
                let on = if tagged { ops.pick(&KIDS) } else { s };
                let state = ops.pick(&STATES);
                d.update(on, format!(
                    r#"{{"sessionUpdate":"subagent_update","sessionId":"{kid}","title":"Kid {kid}","state":{state}}}"#
                ))
            }
            27 => {
                // Standard children nested deep: each announced inside the one before.
                let depth = usize::from(ops.byte().unwrap_or(0) % 64) * 16;
                let mut on = s.to_owned();
                for n in 0..depth {
                    let kid = format!("deep{t}-{n}");
                    d.update(&on, format!(
                        r#"{{"sessionUpdate":"subagent_update","sessionId":"{kid}","state":{{"state":"running"}}}}"#
                    ));
                    d.update(&kid, r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"deep"}}"#.to_owned());
                    on = kid;
                }
            }
            28 => {
                // A card the agent made, naming a session: a top-level one, one of the
                // proxy's children, or one it may own.
                let named = match ops.byte().unwrap_or(0) % 4 {
                    0 => s.to_owned(),
                    1 => ops.pick(&TOP_SESSIONS).to_owned(),
                    2 => child_ids[usize::from(ops.byte().unwrap_or(0)) % child_ids.len()].clone(),
                    _ => ids::child_session_id("elsewhere", t),
                };
                let kind = if tagged { "tool_call_update" } else { "tool_call" };
                // As another link sends a spawn, or on an ordinary tool call.
                let spawn = if op & 0x40 != 0 { "" } else { r#""claudeCode":{"toolName":"Agent"},"tool_name":"Agent","# };
                d.update(s, format!(
                    r#"{{"sessionUpdate":"{kind}","toolCallId":"{t}","title":"Task","kind":"think","rawInput":{{}},"_meta":{{{spawn}"subagent_session_info":{{"session_id":"{named}","message_start_index":0}}}}}}"#
                ))
            }
            29 => {
                // Legacy spawns nested deep: each tagged with the one before as its parent.
                let depth = usize::from(ops.byte().unwrap_or(0) % 64) * 16;
                let mut parent: Option<String> = None;
                for n in 0..depth {
                    let id = format!("{t}-{n}");
                    d.update(s, format!(
                        r#"{{"sessionUpdate":"tool_call","toolCallId":"{id}","title":"Task","kind":"think","status":"pending","rawInput":{{}},"_meta":{}}}"#,
                        meta(parent.as_deref(), Some("Agent"))
                    ));
                    parent = Some(id);
                }
            }
            30 => {
                // A session being created, and agent requests for it before the response.
                let id = ops.byte().unwrap_or(0) % 16;
                d.client(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"/p","mcpServers":[]}}}}"#));
                d.next_id += 1;
                let rid = d.next_id;
                let method = ops.pick(&["terminal/create", "fs/read_text_file", "session/request_permission"]);
                let target = ops.pick(&KIDS);
                d.agent(format!(r#"{{"jsonrpc":"2.0","id":{rid},"method":"{method}","params":{{"sessionId":"{target}","command":"uname","path":"/p/a"}}}}"#));
            }
            31 => {
                let id = ops.byte().unwrap_or(0) % 16;
                d.agent(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"sessionId":"s_new"}}}}"#))
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    d.engine.handle_timeout(u64::MAX / 2, &mut out);
    d.engine.agent_gone("fuzz: end of input", &mut out);
    d.carry_out(out);
    // Whatever the agent sent, every collection stays bounded (the deep-nesting ops alone
    // announce up to a million children).
    for (name, size) in d.engine.footprint() {
        assert!(size <= 20_000, "{name} grew to {size}");
    }
    assert!(
        d.engine.children_in_memory() <= 400,
        "{} children in memory, beyond [limits] for a few sessions",
        d.engine.children_in_memory()
    );
    assert_eq!(
        d.engine.pending_client_requests(),
        0,
        "agent_gone answers everything"
    );
    assert_eq!(
        d.engine.poll_timeout(),
        None,
        "nothing held after the agent left"
    );
}
