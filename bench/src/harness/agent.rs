//! The agent side: answers the handshake, then plays a generated stream (or a ping-pong
//! series) as the reply to `session/prompt`.
//!
//! Stream mode writes the stream file as fast as the pipe takes it, in fixed-size writes, while a
//! reader thread counts the client's answers to permission requests. The prompt response carries
//! that count, so a relay that drops something in either direction fails the run.
//!
//! Ping-pong mode sends one `session/request_permission` at a time and times the round trip
//! until its answer arrives; the answer must echo a hash of the request bytes.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::gen::{self, Rng, SESSION_ID};
use super::mapped::Mapped;
use super::wire;

#[derive(Debug, clap::Args)]
pub(crate) struct AgentArgs {
    /// Stream file written by `acp-bench gen` (stream mode).
    #[arg(long)]
    pub traffic: Option<PathBuf>,
    /// Ping-pong mode: send this many permission requests one at a time.
    #[arg(long)]
    pub pings: Option<u64>,
    /// Seed for the ping-pong frames.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bytes per write(2) in stream mode.
    #[arg(long, default_value_t = 64 * 1024)]
    pub write_size: usize,
    /// Where to write the ping-pong latencies (one nanosecond value per line).
    #[arg(long)]
    pub report: Option<PathBuf>,
}

pub(crate) fn run(args: AgentArgs) -> anyhow::Result<()> {
    // Raw descriptors: no std locks or line buffering between the bench and the pipes.
    let stdin = File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let mut input = BufReader::with_capacity(256 * 1024, stdin);
    let mut out = File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let prompt_id = handshake(&mut input, &mut out)?;
    match (&args.traffic, args.pings) {
        (Some(path), None) => stream(path, &args, input, out, &prompt_id),
        (None, Some(n)) => pingpong(n, &args, input, out, &prompt_id),
        _ => bail!("give exactly one of --traffic and --pings"),
    }
}

/// Answer `initialize` and `session/new`; return the raw id of `session/prompt`.
fn handshake(input: &mut impl BufRead, out: &mut File) -> anyhow::Result<String> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            bail!("client closed before session/prompt");
        }
        let v: serde_json::Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let id = v.get("id").map(|i| i.to_string());
        let method = v.get("method").and_then(|m| m.as_str()).unwrap_or("");
        let Some(id) = id else { continue };
        let result = match method {
            "initialize" => r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"embeddedContext":true}},"agentInfo":{"name":"acp-bench","version":"0"},"authMethods":[]}"#.to_owned(),
            "session/new" => format!(r#"{{"sessionId":"{SESSION_ID}"}}"#),
            "session/prompt" => return Ok(id),
            _ => {
                let msg = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32601,\"message\":\"not supported by the bench agent\"}}}}\n"
                );
                out.write_all(msg.as_bytes())?;
                continue;
            }
        };
        out.write_all(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}\n").as_bytes(),
        )?;
    }
}

fn prompt_response(prompt_id: &str, answers: u64) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{prompt_id},\"result\":{{\"stopReason\":\"end_turn\",\"_meta\":{{\"bench\":{{\"permissionAnswers\":{answers}}}}}}}}}\n"
    )
}

fn stream(
    path: &Path,
    args: &AgentArgs,
    input: BufReader<File>,
    mut out: File,
    prompt_id: &str,
) -> anyhow::Result<()> {
    let summary = gen::read_summary(path)?;
    let map = Mapped::open(path)?;
    if map.len() as u64 != summary.bytes {
        bail!("{} does not match its summary", path.display());
    }
    let answers = Arc::new(AtomicU64::new(0));
    let counter = answers.clone();
    let reader = std::thread::spawn(move || count_answers(input, &counter));
    for chunk in map.bytes().chunks(args.write_size.max(1)) {
        out.write_all(chunk)?;
    }
    // Every permission request must be answered before the turn ends.
    let deadline = Instant::now() + Duration::from_secs(10);
    while answers.load(Ordering::Acquire) < summary.permission_requests
        && Instant::now() < deadline
        && !reader.is_finished()
    {
        std::thread::sleep(Duration::from_micros(200));
    }
    let n = answers.load(Ordering::Acquire);
    out.write_all(prompt_response(prompt_id, n).as_bytes())?;
    // Wait for the client to close (the reader ends at EOF).
    let _ = reader.join();
    Ok(())
}

fn count_answers(mut input: impl BufRead, counter: &AtomicU64) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if wire::response_id(&line).is_some_and(|id| id.starts_with(b"perm-")) {
                    counter.fetch_add(1, Ordering::AcqRel);
                }
            }
        }
    }
}

/// A permission request with a realistic tool call of 200 B – 20 KiB.
fn ping_frame(rng: &mut Rng, i: u64, buf: &mut Vec<u8>) {
    buf.clear();
    let len = match rng.next() % 100 {
        0..=69 => rng.range(100, 1500),
        70..=94 => rng.range(1500, 8192),
        _ => rng.range(8192, 20 * 1024),
    } as usize;
    buf.extend_from_slice(
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"ping-{i}\",\"method\":\"session/request_permission\",\"params\":{{\"sessionId\":\"{SESSION_ID}\",\"toolCall\":{{\"toolCallId\":\"toolu_ping{i}\",\"rawInput\":{{\"file_path\":\"/home/user/project/src/lib.rs\",\"content\":\""
        )
        .as_bytes(),
    );
    let start = buf.len();
    while buf.len() - start < len {
        let w = (rng.next() % 26) as u8;
        buf.push(b'a' + w);
        if rng.next().is_multiple_of(7) {
            buf.extend_from_slice(b"\\n");
        }
    }
    buf.extend_from_slice(b"\"},\"title\":\"Write `src/lib.rs`\",\"kind\":\"edit\",\"content\":[]},\"options\":[{\"kind\":\"allow_once\",\"name\":\"Allow\",\"optionId\":\"allow\"},{\"kind\":\"reject_once\",\"name\":\"Reject\",\"optionId\":\"reject\"}]}}\n");
}

fn pingpong(
    n: u64,
    args: &AgentArgs,
    mut input: BufReader<File>,
    mut out: File,
    prompt_id: &str,
) -> anyhow::Result<()> {
    let mut rng = Rng::new(args.seed ^ 0x9149);
    let mut frame = Vec::with_capacity(32 * 1024);
    let mut line = Vec::with_capacity(4096);
    let mut rtts = Vec::with_capacity(n as usize);
    for i in 0..n {
        ping_frame(&mut rng, i, &mut frame);
        let want_hash = wire::hash(wire::body(&frame));
        let want_id = format!("ping-{i}");
        let t0 = Instant::now();
        out.write_all(&frame)?;
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                bail!("client closed during ping {i}");
            }
            if wire::response_id(&line) == Some(want_id.as_bytes()) {
                break;
            }
        }
        rtts.push(t0.elapsed().as_nanos() as u64);
        match wire::answer_hash(&line) {
            Some(h) if h == want_hash => {}
            other => bail!("ping {i}: answer hash {other:?} does not match the request sent"),
        }
    }
    if let Some(path) = &args.report {
        let mut text = String::with_capacity(rtts.len() * 8);
        for r in &rtts {
            text.push_str(&r.to_string());
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    out.write_all(prompt_response(prompt_id, n).as_bytes())?;
    let mut sink = Vec::new();
    let _ = input.read_to_end(&mut sink);
    Ok(())
}
