//! The stdio shell around the engine: client on our stdin/stdout, agent as a child process.
//!
//! One task owns the engine and selects over both readers; each writer is its own task behind
//! an [`Outbox`]. A side is only read while the opposite outbox has room, so a slow reader
//! slows its writer and nothing is dropped or buffered without bound.

use std::collections::VecDeque;
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use crate::config::ShutdownConfig;
use crate::dump::{Direction, Dump};
use crate::engine::prescan::AgentScan;
use crate::engine::{Action, Engine};
use crate::store::Store;
use crate::transport::actions::{execute, Dest};
use crate::transport::agent_reader::{AgentOutput, Chunk};
use crate::transport::chain_relay::{self, ChainParts};
use crate::transport::child::{self, Agent, SpawnError};
use crate::transport::framing::{line_body, lines, Frame, LineCodec};
use crate::transport::outbox::Outbox;
use crate::transport::pipe;

/// Queue size per direction before the opposite side stops being read.
const HIGH_WATER: usize = 4 * 1024 * 1024;
/// First read buffer for the agent's stdout (later ones are sized by `bytes`): fewer reads
/// under load.
const READ_BUF: usize = 1024 * 1024;
/// Lines of agent stderr quoted in errors.
const STDERR_TAIL: usize = 10;
/// How long the proxy waits for the client's first request when the agent could not start.
const NO_AGENT_WAIT: Duration = Duration::from_secs(10);

pub struct RelayOptions {
    pub agent_command: Vec<String>,
    /// `agent_command` is the built-in demo agent: none was given.
    pub demo_agent: bool,
    pub max_frame_bytes: usize,
    pub shutdown: ShutdownConfig,
    pub dump: Option<Dump>,
    /// Durable child transcripts (none in a pure relay).
    pub store: Option<Store>,
}

/// Exit status of the proxy: 0 after a clean client close, 128+n after signal n, the agent's
/// status (or 1) when the agent ended the session, 126/127 when it could not start.
pub type ExitCode = i32;

/// Why the relay is winding down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Running,
    ClientClosed,
    Signal(i32),
}

/// Run the proxy with the client on this process's stdin/stdout.
pub async fn run_stdio(opts: RelayOptions, engine: Engine) -> anyhow::Result<ExitCode> {
    run(opts, engine, pipe::stdin(), pipe::stdout()).await
}

pub async fn run<R, W>(
    opts: RelayOptions,
    mut engine: Engine,
    client_in: R,
    client_out: W,
) -> anyhow::Result<ExitCode>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let dump = opts.dump.clone();
    let store = opts.store.clone();
    let mut client_in = FramedRead::new(client_in, LineCodec::new(opts.max_frame_bytes));
    let (to_client, client_writer) = Outbox::spawn(client_out, HIGH_WATER);

    // The first frame decides the mode: a conductor's `proxy/initialize` makes this process a
    // chain link (the conductor runs the agent); anything else, a standalone proxy.
    let first = match client_in.next().await {
        Some(Ok(frame)) => frame,
        Some(Err(e)) => {
            tracing::warn!("reading from the client failed before it sent anything: {e}");
            return Ok(0);
        }
        None => {
            tracing::debug!("the client closed before sending anything: no agent started");
            return Ok(0);
        }
    };
    if let Frame::Line(bytes) = &first {
        if let Some(dialect) = crate::chain::chain_initialize(bytes) {
            let parts = ChainParts {
                dialect,
                first: bytes.clone(),
                client_in,
                to_conductor: to_client,
                writer: client_writer,
                dump,
                store,
                ignored_agent: (!opts.demo_agent).then_some(opts.agent_command),
            };
            return chain_relay::run(parts, engine).await;
        }
    }
    let mut pending_first = Some(first);

    if opts.demo_agent {
        tracing::info!("no agent command given: using the built-in demo agent");
    }
    let agent = match Agent::spawn(&opts.agent_command, &opts.shutdown) {
        Ok(agent) => agent,
        Err(err) => {
            let code = exit_code_for_spawn_error(&err);
            tracing::error!("{err}");
            if let Some(d) = &dump {
                d.note(err.to_string());
            }
            if let Some(first) = pending_first.take() {
                if let Some(d) = &dump {
                    d.frame(Direction::ClientToProxy, first.bytes());
                }
                if answer_first_request(first.bytes(), &to_client, &dump, &err) {
                    drop(to_client);
                    let _ = tokio::time::timeout(Duration::from_secs(2), client_writer).await;
                    return Ok(code);
                }
            }
            answer_without_agent(&mut client_in, &to_client, &dump, &err).await;
            drop(to_client);
            let _ = tokio::time::timeout(Duration::from_secs(2), client_writer).await;
            return Ok(code);
        }
    };
    let Agent {
        mut child,
        stdin,
        stdout,
        stderr,
        pgid,
        guardian,
    } = agent;
    let shown = crate::redact::redact_command(&opts.agent_command);
    tracing::info!(pid = pgid, command = ?shown, "agent started");

    let mut agent_in = stdout
        .into_owned_fd()
        .and_then(|fd| AgentOutput::new(fd, LineCodec::batched(opts.max_frame_bytes), READ_BUF))
        .context("cannot read the agent's stdout")?;
    let mut agent_err = FramedRead::new(stderr, LineCodec::new(64 * 1024));
    let (agent_outbox, agent_writer) = Outbox::spawn(stdin, HIGH_WATER);
    let mut to_agent = Some(agent_outbox);

    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;

    let clock = Instant::now();
    let mut actions: Vec<Action> = Vec::new();
    let mut ending = Ending::Running;
    let mut client_eof = false;
    let mut agent_eof = false;
    let mut stderr_eof = false;
    let mut agent_log = AgentLog::start();
    let mut exit_status: Option<ExitStatus> = None;
    // Escalation after the client is gone: (when, signal to send next).
    let mut escalation: Option<(Instant, i32)> = None;
    // The agent exited but something still holds its stdout open: when to clean its group up.
    let mut orphan_deadline: Option<Instant> = None;

    if let Some(frame) = pending_first.take() {
        from_client(
            &mut engine,
            frame,
            0,
            &mut actions,
            &dump,
            opts.max_frame_bytes,
        );
        execute(
            &mut engine,
            0,
            &mut actions,
            &mut relay_sink(&to_client, to_agent.as_ref()),
            &dump,
            store.as_ref(),
        );
    }
    while !agent_eof {
        let agent_room = to_agent.as_ref().is_none_or(Outbox::has_room);
        let client_room = to_client.has_room();
        tokio::select! {
            frame = client_in.next(), if !client_eof && ending == Ending::Running && agent_room => {
                match frame {
                    Some(Ok(frame)) => {
                        let now = clock.elapsed().as_millis() as u64;
                        from_client(&mut engine, frame, now, &mut actions, &dump, opts.max_frame_bytes);
                        execute(&mut engine, now, &mut actions, &mut relay_sink(&to_client, to_agent.as_ref()), &dump, store.as_ref());
                    }
                    Some(Err(e)) => {
                        tracing::warn!("reading from the client failed: {e}");
                        client_eof = true;
                    }
                    None => client_eof = true,
                }
                if client_eof {
                    tracing::debug!("client closed its side: closing the agent's stdin");
                    ending = Ending::ClientClosed;
                }
            }
            _ = async { if let Some(t) = &to_agent { t.room().await } }, if !agent_room => {}
            frame = agent_in.next(), if client_room => {
                match frame {
                    Some(Ok(Chunk { frame, scans })) => {
                        let now = clock.elapsed().as_millis() as u64;
                        match frame {
                            Frame::Lines(chunk) => {
                                let mut sink = relay_sink(&to_client, to_agent.as_ref());
                                let mut ctx = Ctx { engine: &mut engine, now, actions: &mut actions, sink: &mut sink, dump: &dump, store: store.as_ref(), max_frame: opts.max_frame_bytes };
                                from_agent_lines(&mut ctx, chunk, scans);
                            }
                            Frame::Line(bytes) => {
                                if let Some(d) = &dump { d.frame(Direction::AgentToProxy, &bytes); }
                                engine.from_agent_scanned(bytes, scans.into_iter().next(), now, &mut actions);
                            }
                            Frame::Piece { bytes, first, .. } => {
                                if let Some(d) = &dump { d.frame(Direction::AgentToProxy, &bytes); }
                                if first { oversize_note(&dump, "agent", opts.max_frame_bytes); }
                                actions.push(Action::ToClient(bytes));
                            }
                        }
                        execute(&mut engine, now, &mut actions, &mut relay_sink(&to_client, to_agent.as_ref()), &dump, store.as_ref());
                        // A streaming agent's output is read and scanned on a thread of its own.
                        agent_in.after_chunk(|| engine.models_subagents().then(|| engine.scanner()));
                    }
                    Some(Err(e)) => {
                        tracing::warn!("reading from the agent failed: {e}");
                        agent_eof = true;
                    }
                    None => agent_eof = true,
                }
            }
            _ = to_client.room(), if !client_room => {}
            line = agent_err.next(), if !stderr_eof => match line {
                Some(Ok(frame)) => agent_log.line(frame.bytes(), &dump),
                _ => stderr_eof = true,
            },
            status = child.wait(), if exit_status.is_none() => {
                let status = status?;
                tracing::debug!(status = %child::describe_status(&status), "agent process exited");
                exit_status = Some(status);
                orphan_deadline = Some(Instant::now() + Duration::from_millis(opts.shutdown.term_grace_ms));
            }
            _ = sleep_until(orphan_deadline) => {
                // The agent is gone but a process it left behind keeps its stdout open.
                orphan_deadline = None;
                child::reap_group(pgid, Duration::from_millis(opts.shutdown.term_grace_ms)).await;
            }
            _ = sleep_until(engine.poll_timeout().map(|ms| clock + Duration::from_millis(ms))) => {
                let now = clock.elapsed().as_millis() as u64;
                engine.handle_timeout(now, &mut actions);
                execute(&mut engine, now, &mut actions, &mut relay_sink(&to_client, to_agent.as_ref()), &dump, store.as_ref());
            }
            _ = sigint.recv(), if ending == Ending::Running => ending = Ending::Signal(libc::SIGINT),
            _ = sigterm.recv(), if ending == Ending::Running => ending = Ending::Signal(libc::SIGTERM),
            _ = sleep_until(escalation.map(|e| e.0)) => {
                if let Some((_, sig)) = escalation {
                    tracing::debug!(sig, "agent still running after the client left: signalling its group");
                    child::signal_group(pgid, sig);
                    escalation = (sig == libc::SIGTERM).then(|| {
                        (Instant::now() + Duration::from_millis(opts.shutdown.term_grace_ms), libc::SIGKILL)
                    });
                }
            }
        }
        if to_client.is_closed() && ending == Ending::Running {
            tracing::debug!("client stopped reading: shutting down");
            ending = Ending::ClientClosed;
        }
        if ending != Ending::Running && to_agent.is_some() {
            // Closing the agent's stdin is the polite way to end; signals follow if needed.
            to_agent = None;
            escalation = Some((
                Instant::now() + Duration::from_millis(opts.shutdown.stdin_grace_ms),
                libc::SIGTERM,
            ));
        }
    }

    // The agent's stdout is closed. Close its stdin too (an agent that closed stdout first may
    // be waiting for that to exit), make sure the process is gone and collect its status.
    drop(to_agent.take());
    let status = match exit_status {
        Some(s) => {
            child::reap_group(pgid, Duration::from_millis(opts.shutdown.term_grace_ms)).await;
            s
        }
        None => {
            let grace = match ending {
                Ending::Running => Duration::from_millis(opts.shutdown.stdin_grace_ms),
                _ => escalation
                    .map(|(t, _)| t.saturating_duration_since(Instant::now()))
                    .unwrap_or_default(),
            };
            child::stop(
                &mut child,
                pgid,
                grace,
                Duration::from_millis(opts.shutdown.term_grace_ms),
            )
            .await?
        }
    };
    // The group is stopped: the guardian has nothing left to do.
    if let Some(g) = guardian {
        g.stand_down().await;
    }
    let _ = agent_writer.await;
    drain_stderr(&mut agent_err, &mut agent_log, &dump, stderr_eof).await;
    let stderr_tail = agent_log.finish().await;

    let code = match ending {
        Ending::Running => {
            let what = child::describe_status(&status);
            let tail: Vec<&str> = stderr_tail.iter().map(String::as_str).collect();
            let reason = if tail.is_empty() {
                format!("{what} (the agent wrote nothing to stderr)")
            } else {
                format!("{what}; last stderr lines: {}", tail.join(" | "))
            };
            tracing::error!("the agent ended the session: {reason}");
            engine.agent_gone(&reason, &mut actions);
            let now = clock.elapsed().as_millis() as u64;
            execute(
                &mut engine,
                now,
                &mut actions,
                &mut relay_sink(&to_client, None),
                &dump,
                store.as_ref(),
            );
            agent_exit_code(&status)
        }
        Ending::ClientClosed => 0,
        Ending::Signal(sig) => 128 + sig,
    };
    drop(to_client);
    if tokio::time::timeout(Duration::from_secs(5), client_writer)
        .await
        .is_err()
    {
        tracing::warn!("the client did not read our last frames within 5 s");
    }
    Ok(code)
}

/// Where the standalone relay sends what the engine emits.
fn relay_sink<'a>(
    to_client: &'a Outbox,
    to_agent: Option<&'a Outbox>,
) -> impl FnMut(Dest, Bytes) + 'a {
    move |dest, bytes| match dest {
        Dest::Client => {
            to_client.send(bytes);
        }
        Dest::Agent => match to_agent {
            Some(t) => {
                t.send(bytes);
            }
            None => tracing::debug!("agent stdin closed: dropping a frame for the agent"),
        },
    }
}

pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// What carrying out the engine's actions needs.
struct Ctx<'a> {
    engine: &'a mut Engine,
    now: u64,
    actions: &'a mut Vec<Action>,
    sink: &'a mut dyn FnMut(Dest, Bytes),
    dump: &'a Option<Dump>,
    store: Option<&'a Store>,
    max_frame: usize,
}

/// Every complete line of one read from the agent goes through the engine. Consecutive lines
/// it passes on unchanged leave as one slice of the read buffer: one queued write per run
/// instead of one per frame. (With a dump, every frame is recorded on its own instead.)
/// A line longer than `max_frame_bytes` that happened to arrive whole is passed on unparsed,
/// as if it had come in pieces.
fn from_agent_lines(ctx: &mut Ctx<'_>, chunk: Bytes, scans: Vec<AgentScan>) {
    let mut run_start = 0;
    let mut scans = scans.into_iter();
    for (start, end) in lines(&chunk) {
        let scan = scans.next();
        let line = chunk.slice(start..end);
        if let Some(d) = ctx.dump {
            d.frame(Direction::AgentToProxy, &line);
        }
        if end - start > ctx.max_frame {
            oversize_note(ctx.dump, "agent", ctx.max_frame);
            ctx.actions.push(Action::ToClient(line));
        } else {
            ctx.engine
                .from_agent_scanned(line, scan, ctx.now, ctx.actions);
        }
        let untouched = ctx.dump.is_none()
            && matches!(ctx.actions.as_slice(), [Action::ToClient(out)]
                if out.as_ptr() == chunk[start..].as_ptr() && out.len() == end - start);
        if untouched {
            ctx.actions.clear();
            continue;
        }
        if run_start < start {
            (ctx.sink)(Dest::Client, chunk.slice(run_start..start));
        }
        run_start = end;
        execute(
            ctx.engine,
            ctx.now,
            ctx.actions,
            ctx.sink,
            ctx.dump,
            ctx.store,
        );
    }
    if run_start < chunk.len() {
        (ctx.sink)(Dest::Client, chunk.slice(run_start..));
    }
}

/// A frame from the client into the engine (or, when oversized, straight on to the agent).
fn from_client(
    engine: &mut Engine,
    frame: Frame,
    now: u64,
    actions: &mut Vec<Action>,
    dump: &Option<Dump>,
    max_frame_bytes: usize,
) {
    let record = |bytes: &Bytes| {
        if let Some(d) = dump {
            d.frame(Direction::ClientToProxy, bytes);
        }
    };
    match frame {
        Frame::Line(bytes) => {
            record(&bytes);
            engine.from_client(bytes, now, actions);
        }
        Frame::Lines(chunk) => {
            for (a, b) in lines(&chunk) {
                let line = chunk.slice(a..b);
                record(&line);
                engine.from_client(line, now, actions);
            }
        }
        Frame::Piece { bytes, first, .. } => {
            record(&bytes);
            if first {
                oversize_note(dump, "client", max_frame_bytes);
            }
            actions.push(Action::ToAgent(bytes));
        }
    }
}

fn oversize_note(dump: &Option<Dump>, side: &str, max: usize) {
    let msg = format!(
        "a line from the {side} is longer than max_frame_bytes ({max}): relayed unchanged in pieces, not inspected"
    );
    tracing::warn!("{msg}");
    if let Some(d) = dump {
        d.note(msg);
    }
}

/// The agent's stderr, passed on to ours line by line. Written by a task of its own behind a
/// bounded queue, so an editor that stops reading our stderr can never stall the protocol:
/// past the bound, lines are counted as dropped (and the count reported) instead.
struct AgentLog {
    out: Outbox,
    writer: tokio::task::JoinHandle<std::io::Result<()>>,
    tail: VecDeque<String>,
    dropped: u64,
}

impl AgentLog {
    fn start() -> AgentLog {
        let (out, writer) = Outbox::spawn(tokio::io::stderr(), 1024 * 1024);
        AgentLog {
            out,
            writer,
            tail: VecDeque::new(),
            dropped: 0,
        }
    }

    fn line(&mut self, bytes: &Bytes, dump: &Option<Dump>) {
        if self.out.has_room() {
            self.out.send(bytes.clone());
        } else {
            self.dropped += 1;
        }
        if let Some(d) = dump {
            d.frame(Direction::AgentStderr, bytes);
        }
        let line = String::from_utf8_lossy(line_body(bytes)).trim().to_owned();
        if !line.is_empty() {
            if self.tail.len() == STDERR_TAIL {
                self.tail.pop_front();
            }
            self.tail.push_back(line);
        }
    }

    /// Write out what is queued (briefly) and hand back the last lines.
    async fn finish(self) -> VecDeque<String> {
        if self.dropped > 0 {
            tracing::warn!("{} line(s) of the agent's stderr were not passed on: our stderr was not being read", self.dropped);
        }
        drop(self.out);
        let _ = tokio::time::timeout(Duration::from_secs(1), self.writer).await;
        self.tail
    }
}

async fn drain_stderr<R: AsyncRead + Unpin>(
    reader: &mut FramedRead<R, LineCodec>,
    log: &mut AgentLog,
    dump: &Option<Dump>,
    eof: bool,
) {
    if eof {
        return;
    }
    let deadline = Instant::now() + Duration::from_millis(500);
    while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(deadline, reader.next()).await {
        log.line(frame.bytes(), dump);
    }
}

fn agent_exit_code(status: &ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => 1,
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 1,
    }
}

fn exit_code_for_spawn_error(err: &SpawnError) -> ExitCode {
    match err {
        SpawnError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 127,
        SpawnError::Io { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied => {
            126
        }
        _ => 1,
    }
}

/// The agent could not be started: answer the client's first request (normally `initialize`)
/// with an error saying why, so the editor shows it instead of waiting forever.
async fn answer_without_agent<R: AsyncRead + Unpin>(
    client_in: &mut FramedRead<R, LineCodec>,
    to_client: &Outbox,
    dump: &Option<Dump>,
    err: &SpawnError,
) {
    let deadline = Instant::now() + NO_AGENT_WAIT;
    while let Ok(Some(Ok(Frame::Line(bytes)))) =
        tokio::time::timeout_at(deadline, client_in.next()).await
    {
        if let Some(d) = dump {
            d.frame(Direction::ClientToProxy, &bytes);
        }
        if answer_first_request(&bytes, to_client, dump, err) {
            return;
        }
    }
}

/// If `bytes` is a request, answer it with the reason the agent could not start.
fn answer_first_request(
    bytes: &[u8],
    to_client: &Outbox,
    dump: &Option<Dump>,
    err: &SpawnError,
) -> bool {
    use crate::engine::envelope::{parse, Kind, Parsed};
    let Parsed::Message(env) = parse(bytes) else {
        return false;
    };
    let (Kind::Request, Some(id)) = (env.kind(), env.id) else {
        return false;
    };
    let line = crate::engine::frames::error(
        id,
        -32603,
        &format!("acp-proxy could not start the agent: {err}"),
    );
    if let Some(d) = dump {
        d.frame(Direction::ProxyToClient, &line);
    }
    to_client.send(line);
    true
}
