//! The shell for proxy-chain mode: one connection to the conductor, no agent process.
//! [`crate::chain::Chain`] tells which side of the engine each frame belongs to and wraps what
//! the engine sends towards the agent.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tokio::io::AsyncRead;
use tokio::signal::unix::{signal, SignalKind};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use crate::chain::{Chain, Dialect, Route};
use crate::dump::{Direction, Dump};
use crate::engine::{Action, Engine};
use crate::store::Store;
use crate::transport::actions::{execute, Dest};
use crate::transport::framing::{lines, Frame, LineCodec};
use crate::transport::outbox::Outbox;
use crate::transport::relay::sleep_until;

/// Everything the chain loop needs from the standalone relay's start.
pub struct ChainParts<R> {
    pub dialect: Dialect,
    pub first: Bytes,
    pub client_in: FramedRead<R, LineCodec>,
    pub to_conductor: Outbox,
    pub writer: JoinHandle<std::io::Result<()>>,
    pub dump: Option<Dump>,
    pub store: Option<Store>,
    /// The agent command given on the command line, which a chain link does not run.
    pub ignored_agent: Option<Vec<String>>,
}

/// Run as a chain link until the conductor closes the connection. Exit status: 0, or
/// 128+signal.
pub async fn run<R>(parts: ChainParts<R>, mut engine: Engine) -> anyhow::Result<i32>
where
    R: AsyncRead + Unpin,
{
    let ChainParts {
        dialect,
        first,
        mut client_in,
        to_conductor,
        writer,
        dump,
        store,
        ignored_agent,
    } = parts;
    match ignored_agent {
        Some(command) => tracing::warn!(
            ?dialect,
            "started by a conductor: running as a proxy-chain link; the conductor runs the \
             agent, so the agent command given after `--` ({}) is not started",
            crate::redact::redact_command(&command).join(" ")
        ),
        None => tracing::info!(
            ?dialect,
            "started by a conductor: running as a proxy-chain link; the conductor runs the \
             agent, this process starts none"
        ),
    }
    let mut chain = Chain::new(dialect);
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let clock = Instant::now();
    let mut actions: Vec<Action> = Vec::new();
    // Lines read but not routed yet (the first frame; lines of a multi-line chunk).
    let mut pending = std::collections::VecDeque::from([first]);
    let code = loop {
        let frame = match pending.pop_front() {
            Some(line) => Some(line),
            None => {
                let room = to_conductor.has_room();
                tokio::select! {
                    next = client_in.next(), if room => match next {
                        Some(Ok(Frame::Line(bytes))) => Some(bytes),
                        Some(Ok(Frame::Lines(chunk))) => {
                            pending.extend(lines(&chunk).map(|(a, b)| chunk.slice(a..b)));
                            pending.pop_front()
                        }
                        Some(Ok(Frame::Piece { first, .. })) => {
                            if first {
                                // A wrapped frame must be read whole to be routed.
                                tracing::error!("a line from the conductor is longer than max_frame_bytes: it cannot be routed in chain mode and is dropped");
                            }
                            None
                        }
                        Some(Err(e)) => {
                            tracing::warn!("reading from the conductor failed: {e}");
                            break 0;
                        }
                        None => break 0,
                    },
                    _ = to_conductor.room(), if !room => None,
                    _ = sleep_until(engine.poll_timeout().map(|ms| clock + Duration::from_millis(ms))) => {
                        let now = clock.elapsed().as_millis() as u64;
                        engine.handle_timeout(now, &mut actions);
                        None
                    }
                    _ = sigint.recv() => break 128 + libc::SIGINT,
                    _ = sigterm.recv() => break 128 + libc::SIGTERM,
                }
            }
        };
        let now = clock.elapsed().as_millis() as u64;
        if let Some(bytes) = frame {
            if let Some(d) = &dump {
                d.frame(Direction::ClientToProxy, &bytes);
            }
            match chain.from_conductor(bytes) {
                Route::Client(inner) => engine.from_client(inner, now, &mut actions),
                Route::Agent(inner) => engine.from_agent(inner, now, &mut actions),
                Route::Drop(why) => tracing::debug!("not forwarded: {why}"),
            }
        }
        let mut sink = |dest: Dest, bytes: Bytes| {
            let wire = match dest {
                Dest::Client => chain.to_predecessor(bytes),
                Dest::Agent => chain.to_successor(bytes),
            };
            to_conductor.send(wire);
        };
        execute(
            &mut engine,
            now,
            &mut actions,
            &mut sink,
            &dump,
            store.as_ref(),
        );
        if to_conductor.is_closed() {
            break 0;
        }
    };
    drop(to_conductor);
    if tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .is_err()
    {
        tracing::warn!("the conductor did not read our last frames within 5 s");
    }
    Ok(code)
}
