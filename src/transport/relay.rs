//! The stdio relay: the client on our stdin/stdout, the agent as a process of ours (or, in
//! chain mode, a conductor on our stdin/stdout that carries both sides).
//!
//! A session is three steps, as in tokio's mini-redis: [`run`] starts it (the first frame
//! decides standalone or chain mode; standalone starts the agent), `Relay::pump` moves
//! frames until one side ends, and `Relay::shut_down` stops the agent and says why the
//! session ended. One task owns the `Shell` and selects over the client's and the agent's
//! output; each writer is its own task behind an `Outbox` (small batches are written in place
//! while nothing is queued), and the agent's stderr and its exit are watched by tasks of their
//! own.
//! A side is only read while the opposite outbox has room, so a slow reader slows its writer
//! and nothing is dropped or buffered without bound.

use std::collections::VecDeque;
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::ChildStderr;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use super::agent_guardian::Guardian;
use super::agent_process::{self, Agent, Exit, SpawnError};
use super::agent_reader::{AgentOutput, Chunk};
use super::framing::{Frame, LineCodec};
use super::outbox::Outbox;
use super::pipe;
use super::shell::{Outputs, Shell};
use super::timer::sleep_until;
use crate::dump::{Direction, Dump};
use crate::engine::Engine;
use crate::store::Store;
use crate::wire::line_body;

/// Queue size per direction before the opposite side stops being read. Queued frames are
/// slices of read buffers and keep the whole buffer alive, so this bounds memory more than
/// its size says; 1 MiB kept the pure relay as fast as 4 MiB did and its peak RSS 2.3 MiB
/// lower (docs/performance.md, sixth round).
const HIGH_WATER: usize = 1024 * 1024;
/// First read buffer for the agent's stdout (later ones are sized by `bytes`): fewer reads
/// under load.
const READ_BUF: usize = 1024 * 1024;
/// Lines of agent stderr quoted in errors.
const STDERR_TAIL: usize = 10;
/// How long the proxy waits for the client's first request when the agent could not start.
const NO_AGENT_WAIT: Duration = Duration::from_secs(10);

/// `[shutdown]`: how the agent is stopped once the client has gone.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShutdownConfig {
    /// After closing the agent's stdin, wait this long before SIGTERM to its process group.
    pub stdin_grace_ms: u64,
    /// After SIGTERM, wait this long before SIGKILL.
    pub term_grace_ms: u64,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        ShutdownConfig {
            stdin_grace_ms: 1000,
            term_grace_ms: 2000,
        }
    }
}

impl ShutdownConfig {
    fn stdin_grace(&self) -> Duration {
        Duration::from_millis(self.stdin_grace_ms)
    }

    fn term_grace(&self) -> Duration {
        Duration::from_millis(self.term_grace_ms)
    }
}

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

/// Run one session with the client on `client_in`/`client_out`.
pub async fn run<R, W>(
    opts: RelayOptions,
    engine: Engine,
    client_in: R,
    client_out: W,
) -> anyhow::Result<ExitCode>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let RelayOptions {
        agent_command,
        demo_agent,
        max_frame_bytes,
        shutdown,
        dump,
        store,
    } = opts;
    let mut client_in = FramedRead::new(client_in, LineCodec::new(max_frame_bytes));
    let (to_client, client_writer) = Outbox::spawn(client_out, HIGH_WATER);

    // Listening from the start: SIGINT or SIGTERM while waiting for the first frame ends the
    // proxy with 130/143 like any other moment (no agent has been started yet).
    let mut stop = Some(watch_stop_signals(crate::platform::stop_signals()?));
    tracing::debug!("waiting for the client's first frame");
    // The first frame decides the mode: a conductor's `proxy/initialize` makes this process a
    // chain link (the conductor runs the agent); anything else, a standalone proxy.
    let first = tokio::select! {
        first = client_in.next() => first,
        sig = stop_signal(&mut stop) => return Ok(128 + sig),
    };
    let first = match first {
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
    let mut shell = Shell::new(engine, dump, store, max_frame_bytes);
    let dialect = match &first {
        Frame::Line(bytes) => crate::chain::chain_initialize(bytes),
        _ => None,
    };
    let agent = match dialect {
        Some(dialect) => {
            if demo_agent {
                tracing::info!(
                    ?dialect,
                    "started by a conductor: running as a proxy-chain link; the conductor runs \
                     the agent, this process starts none"
                );
            } else {
                tracing::warn!(
                    ?dialect,
                    "started by a conductor: running as a proxy-chain link; the conductor runs \
                     the agent, so the agent command given after `--` ({}) is not started",
                    crate::redact::redact_command(&agent_command).join(" ")
                );
            }
            shell.chained(dialect);
            None
        }
        None => match Agent::spawn(&agent_command, &shutdown) {
            Ok(agent) => {
                if demo_agent {
                    tracing::info!("no agent command given: using the built-in demo agent");
                }
                Some(start_agent(
                    agent,
                    &agent_command,
                    max_frame_bytes,
                    shell.dump(),
                )?)
            }
            Err(err) => {
                let code = exit_code_for_spawn_error(&err);
                tracing::error!("{err}");
                shell.note(err.to_string());
                answer_without_agent(first, &mut client_in, &to_client, &shell, &err).await;
                drop(to_client);
                let _ = tokio::time::timeout(Duration::from_secs(2), client_writer).await;
                return Ok(code);
            }
        },
    };
    let (to_agent, agent_out, stderr, process) = match agent {
        Some(a) => (
            Some(a.stdin),
            Some(a.output),
            Some(a.stderr),
            Some(a.process),
        ),
        None => (None, None, None, None),
    };
    let mut relay = Relay {
        shell,
        stop,
        client_in,
        out: Outputs {
            client: to_client,
            agent: to_agent,
            more_read: false,
        },
        client_writer,
        agent_out,
        agent_eof: false,
        stderr,
        process,
        shutdown,
        ending: Ending::Running,
        client_eof: false,
    };
    relay.shell.client_frame(first, &relay.out);
    relay.pump().await?;
    relay.shut_down().await
}

/// The agent, started: its pipes and its process.
struct Started {
    stdin: Outbox,
    output: AgentOutput,
    stderr: Stderr,
    process: Process,
}

/// The agent just spawned: its stdout read by [`AgentOutput`], its stdin written behind an
/// outbox, its stderr passed on to ours.
fn start_agent(
    agent: Agent,
    command: &[String],
    max_frame_bytes: usize,
    dump: Option<Dump>,
) -> anyhow::Result<Started> {
    let Agent {
        process: handle,
        stdin,
        stdout,
        stderr,
        pgid,
        guardian,
    } = agent;
    let shown = crate::redact::redact_command(command);
    tracing::info!(pid = pgid, command = ?shown, "agent started");
    let output = pipe::into_pipe_end(stdout)
        .and_then(|fd| AgentOutput::new(fd, LineCodec::batched(max_frame_bytes), READ_BUF))
        .context("cannot read the agent's stdout")?;
    let (stdin, stdin_writer) = Outbox::spawn(stdin, HIGH_WATER);
    let process = Process {
        exit: Exit::watch(handle),
        pgid,
        guardian,
        stdin_writer,
        exit_status: None,
        orphan_deadline: None,
        escalation: None,
    };
    Ok(Started {
        stdin,
        output,
        stderr: Stderr::pass_on(stderr, dump),
        process,
    })
}

/// The agent's process and where its stopping stands.
struct Process {
    /// Its exit, watched by a task of its own.
    exit: Exit,
    /// Process group id (= the child's pid, since it leads its own group).
    pgid: i32,
    /// Stops the group should the proxy die; stood down once the proxy has stopped it.
    guardian: Option<Guardian>,
    /// Writes the agent's stdin; done once every frame queued for it is written.
    stdin_writer: JoinHandle<std::io::Result<()>>,
    exit_status: Option<ExitStatus>,
    /// The agent exited but something still holds its stdout open: when to clean its group
    /// up.
    orphan_deadline: Option<Instant>,
    /// Escalation after the client is gone: (when, signal to send next).
    escalation: Option<(Instant, i32)>,
}

/// The first stop signal, watched by a task of its own: the relay's loop then polls one
/// receiver per wake-up instead of both signal streams (polling those was a tenth of a pure
/// relay's work per round trip of a permission request).
fn watch_stop_signals(mut signals: crate::platform::StopSignals) -> oneshot::Receiver<i32> {
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let sig = tokio::select! {
            _ = signals.interrupt.recv() => crate::platform::SIGINT,
            _ = signals.terminate.recv() => crate::platform::SIGTERM,
        };
        let _ = tx.send(sig);
    });
    rx
}

/// The stop signal once it came; never, if the watch is over.
async fn stop_signal(rx: &mut Option<oneshot::Receiver<i32>>) -> i32 {
    let Some(receiver) = rx else {
        return std::future::pending().await;
    };
    let sig = receiver.await;
    *rx = None;
    match sig {
        Ok(sig) => sig,
        Err(_) => std::future::pending().await,
    }
}

/// The agent's stderr, passed on line by line by a task of its own (an [`AgentLog`]), so the
/// relay's loop does not poll it on every pass.
struct Stderr {
    /// Tells the task to stop by this time (lines still arriving are passed on until then).
    stop: oneshot::Sender<Instant>,
    /// The task; gives back the last lines.
    task: JoinHandle<VecDeque<String>>,
}

impl Stderr {
    fn pass_on(stderr: ChildStderr, dump: Option<Dump>) -> Stderr {
        let (stop, until) = oneshot::channel();
        let lines = FramedRead::new(stderr, LineCodec::new(64 * 1024));
        let task = tokio::spawn(pass_on_stderr(lines, AgentLog::start(), dump, until));
        Stderr { stop, task }
    }

    /// What the agent wrote before it went, briefly; then the last lines.
    async fn finish(self) -> VecDeque<String> {
        let _ = self.stop.send(Instant::now() + Duration::from_millis(500));
        self.task.await.unwrap_or_default()
    }
}

/// Pass the agent's stderr on until it ends, or until the time `until` gives; then write out
/// what is queued (briefly) and hand back the last lines.
async fn pass_on_stderr(
    mut lines: FramedRead<ChildStderr, LineCodec>,
    mut log: AgentLog,
    dump: Option<Dump>,
    mut until: oneshot::Receiver<Instant>,
) -> VecDeque<String> {
    let mut deadline = None;
    loop {
        let line = match deadline {
            None => tokio::select! {
                line = lines.next() => line,
                at = &mut until => {
                    deadline = Some(at.unwrap_or_else(|_| Instant::now()));
                    continue;
                }
            },
            Some(at) => match tokio::time::timeout_at(at, lines.next()).await {
                Ok(line) => line,
                Err(_) => break,
            },
        };
        match line {
            Some(Ok(frame)) => log.line(frame.bytes(), dump.as_ref()),
            _ => break,
        }
    }
    log.finish().await
}

/// One session, from the first frame on.
struct Relay<R> {
    shell: Shell,
    /// The first stop signal (SIGINT, SIGTERM), as its number.
    stop: Option<oneshot::Receiver<i32>>,
    client_in: FramedRead<R, LineCodec>,
    out: Outputs,
    client_writer: JoinHandle<std::io::Result<()>>,
    /// The agent's stdout (none in chain mode).
    agent_out: Option<AgentOutput>,
    agent_eof: bool,
    /// The agent's stderr, passed on (none in chain mode).
    stderr: Option<Stderr>,
    process: Option<Process>,
    shutdown: ShutdownConfig,
    ending: Ending,
    client_eof: bool,
}

impl<R: AsyncRead + Unpin> Relay<R> {
    /// The client's side of the connection, as named in logs.
    fn peer(&self) -> &'static str {
        if self.shell.is_chained() {
            "conductor"
        } else {
            "client"
        }
    }

    /// Over once the agent's stdout ended; in chain mode (no agent), once the session winds
    /// down.
    fn done(&self) -> bool {
        match &self.process {
            Some(_) => self.agent_eof,
            None => self.ending != Ending::Running,
        }
    }

    /// Move frames both ways until the session is over.
    async fn pump(&mut self) -> anyhow::Result<()> {
        let term_grace = self.shutdown.term_grace();
        while !self.done() {
            let gate = self.shell.client_input_queue(&self.out);
            let agent_room = gate.is_none_or(Outbox::has_room);
            let client_room = self.out.client.has_room();
            let reading_agent = self.agent_out.is_some() && !self.agent_eof && client_room;
            let waiting = self
                .process
                .as_ref()
                .is_some_and(|p| p.exit_status.is_none());
            let orphan_at = self.process.as_ref().and_then(|p| p.orphan_deadline);
            let escalate_at = self
                .process
                .as_ref()
                .and_then(|p| p.escalation.map(|e| e.0));
            let tick_at = self.shell.deadline();
            tokio::select! {
                frame = self.client_in.next(), if !self.client_eof && self.ending == Ending::Running && agent_room => {
                    match frame {
                        Some(Ok(frame)) => {
                            // More of the client's bytes are already read (a burst of answers):
                            // what they make can leave with what this frame makes.
                            self.out.more_read = !self.client_in.read_buffer().is_empty();
                            self.shell.client_frame(frame, &self.out);
                            self.out.more_read = false;
                        }
                        Some(Err(e)) => {
                            tracing::warn!("reading from the {} failed: {e}", self.peer());
                            self.client_eof = true;
                        }
                        None => self.client_eof = true,
                    }
                    if self.client_eof {
                        if self.process.is_some() {
                            tracing::debug!("client closed its side: closing the agent's stdin");
                        }
                        self.ending = Ending::ClientClosed;
                    }
                }
                _ = room(gate), if !agent_room => {}
                chunk = next_chunk(&mut self.agent_out), if reading_agent => {
                    match chunk {
                        Some(Ok(chunk)) => {
                            self.shell.agent_chunk(chunk, &self.out);
                            // A streaming agent's output is read and scanned on a thread of its own.
                            if let Some(output) = &mut self.agent_out {
                                let new_tool_calls = self.shell.reads_new_tool_calls();
                                output.after_chunk(|| self.shell.scanner(), new_tool_calls);
                            }
                        }
                        Some(Err(e)) => {
                            tracing::warn!("reading from the agent failed: {e}");
                            self.agent_eof = true;
                        }
                        None => self.agent_eof = true,
                    }
                }
                _ = self.out.client.room(), if !client_room => {}
                status = wait(&mut self.process), if waiting => {
                    let status = status?;
                    tracing::debug!(status = %agent_process::describe_status(&status), "agent process exited");
                    if let Some(p) = &mut self.process {
                        p.exit_status = Some(status);
                        p.orphan_deadline = Some(Instant::now() + term_grace);
                    }
                }
                _ = sleep_until(orphan_at) => {
                    // The agent is gone but a process it left behind keeps its stdout open.
                    if let Some(p) = &mut self.process {
                        p.orphan_deadline = None;
                        agent_process::reap_group(p.pgid, term_grace).await;
                    }
                }
                _ = sleep_until(tick_at) => self.shell.tick(&self.out),
                sig = stop_signal(&mut self.stop), if self.ending == Ending::Running => self.ending = Ending::Signal(sig),
                _ = sleep_until(escalate_at) => {
                    if let Some(p) = &mut self.process {
                        if let Some((_, sig)) = p.escalation {
                            tracing::debug!(sig, "agent still running after the client left: signalling its group");
                            agent_process::signal_group(p.pgid, sig);
                            p.escalation = (sig == crate::platform::SIGTERM).then(|| (Instant::now() + term_grace, crate::platform::SIGKILL));
                        }
                    }
                }
            }
            if self.out.client.is_closed() && self.ending == Ending::Running {
                tracing::debug!("{} stopped reading: shutting down", self.peer());
                self.ending = Ending::ClientClosed;
            }
            if self.ending != Ending::Running && self.out.agent.is_some() {
                // Closing the agent's stdin is the polite way to end; signals follow if needed.
                self.out.agent = None;
                if let Some(p) = &mut self.process {
                    p.escalation = Some((
                        Instant::now() + self.shutdown.stdin_grace(),
                        crate::platform::SIGTERM,
                    ));
                }
            }
        }
        Ok(())
    }

    /// The agent's stdout is closed (or, in chain mode, the session winds down): make sure the
    /// agent is gone, tell the client why if the agent ended the session, and let the last
    /// frames out.
    async fn shut_down(mut self) -> anyhow::Result<ExitCode> {
        let code = match self.process.take() {
            Some(process) => self.stop_agent(process).await?,
            None => match self.ending {
                Ending::Signal(sig) => 128 + sig,
                Ending::Running | Ending::ClientClosed => 0,
            },
        };
        let peer = self.peer();
        let Relay {
            out, client_writer, ..
        } = self;
        drop(out);
        if tokio::time::timeout(Duration::from_secs(5), client_writer)
            .await
            .is_err()
        {
            tracing::warn!("the {peer} did not read our last frames within 5 s");
        }
        Ok(code)
    }

    /// Close the agent's stdin too (an agent that closed stdout first may be waiting for that
    /// to exit), make sure the process is gone and collect its status.
    async fn stop_agent(&mut self, mut p: Process) -> anyhow::Result<ExitCode> {
        self.out.agent = None;
        let term_grace = self.shutdown.term_grace();
        let status = match p.exit_status {
            Some(s) => {
                agent_process::reap_group(p.pgid, term_grace).await;
                s
            }
            None => {
                let grace = match self.ending {
                    Ending::Running => self.shutdown.stdin_grace(),
                    _ => p
                        .escalation
                        .map(|(t, _)| t.saturating_duration_since(Instant::now()))
                        .unwrap_or_default(),
                };
                agent_process::stop(&mut p.exit, p.pgid, grace, term_grace).await?
            }
        };
        // The group is stopped: the guardian has nothing left to do.
        if let Some(g) = p.guardian.take() {
            g.stand_down().await;
        }
        let _ = p.stdin_writer.await;
        let stderr_tail = match self.stderr.take() {
            Some(stderr) => stderr.finish().await,
            None => VecDeque::new(),
        };
        Ok(match self.ending {
            Ending::Running => {
                let what = agent_process::describe_status(&status);
                let tail: Vec<&str> = stderr_tail.iter().map(String::as_str).collect();
                let reason = if tail.is_empty() {
                    format!("{what} (the agent wrote nothing to stderr)")
                } else {
                    format!("{what}; last stderr lines: {}", tail.join(" | "))
                };
                tracing::error!("the agent ended the session: {reason}");
                self.shell.agent_gone(&reason, &self.out);
                agent_exit_code(&status)
            }
            Ending::ClientClosed => 0,
            Ending::Signal(sig) => 128 + sig,
        })
    }
}

/// Wait for room in `queue` (none: there is nothing to wait for).
async fn room(queue: Option<&Outbox>) {
    if let Some(q) = queue {
        q.room().await;
    }
}

async fn next_chunk(output: &mut Option<AgentOutput>) -> Option<std::io::Result<Chunk>> {
    match output {
        Some(o) => o.next().await,
        None => std::future::pending().await,
    }
}

async fn wait(process: &mut Option<Process>) -> std::io::Result<ExitStatus> {
    use agent_process::WaitExit;
    match process {
        Some(p) => p.exit.wait_exit().await,
        None => std::future::pending().await,
    }
}

/// The agent's stderr, passed on to ours line by line. Written by a task of its own behind a
/// bounded queue, so an editor that stops reading our stderr can never stall the protocol:
/// past the bound, lines are counted as dropped (and the count reported) instead.
struct AgentLog {
    out: Outbox,
    writer: JoinHandle<std::io::Result<()>>,
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

    fn line(&mut self, bytes: &Bytes, dump: Option<&Dump>) {
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

fn agent_exit_code(status: &ExitStatus) -> ExitCode {
    match (status.code(), crate::platform::exit_signal(status)) {
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
    first: Frame,
    client_in: &mut FramedRead<R, LineCodec>,
    to_client: &Outbox,
    shell: &Shell,
    err: &SpawnError,
) {
    shell.record(Direction::ClientToProxy, first.bytes());
    if answer_first_request(first.bytes(), to_client, shell, err) {
        return;
    }
    let deadline = Instant::now() + NO_AGENT_WAIT;
    while let Ok(Some(Ok(Frame::Line(bytes)))) =
        tokio::time::timeout_at(deadline, client_in.next()).await
    {
        shell.record(Direction::ClientToProxy, &bytes);
        if answer_first_request(&bytes, to_client, shell, err) {
            return;
        }
    }
}

/// If `bytes` is a request, answer it with the reason the agent could not start.
fn answer_first_request(bytes: &[u8], to_client: &Outbox, shell: &Shell, err: &SpawnError) -> bool {
    use crate::wire::envelope::{parse, Kind, Parsed};
    let Parsed::Message(env) = parse(bytes) else {
        return false;
    };
    let (Kind::Request, Some(id)) = (env.kind(), env.id) else {
        return false;
    };
    let line = crate::wire::write::error(
        id,
        -32603,
        &format!("acp-proxy could not start the agent: {err}"),
    );
    shell.record(Direction::ProxyToClient, &line);
    to_client.send(line);
    true
}
