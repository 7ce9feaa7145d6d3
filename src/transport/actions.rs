//! Carrying out the engine's actions: the one place where frames leave for a peer, notes
//! reach the log and the dump, and the store is written and read.

use bytes::Bytes;

use crate::dump::{Direction, Dump};
use crate::engine::{Action, Engine, NoteLevel};
use crate::store::Store;

/// Which peer a frame is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    Client,
    Agent,
}

/// Carry out the engine's actions in order. Store look-ups are answered right here (they
/// feed the engine before the next action runs, so a parent load reaches the agent only after
/// its children were restored).
pub fn execute(
    engine: &mut Engine,
    now: u64,
    actions: &mut Vec<Action>,
    send: &mut dyn FnMut(Dest, Bytes),
    dump: &Option<Dump>,
    store: Option<&Store>,
) {
    // Taken out and put back, so the caller's vector keeps its capacity.
    let mut list = std::mem::take(actions);
    let mut queue = list.drain(..);
    while let Some(action) = queue.next() {
        match action {
            Action::ToClient(bytes) => {
                if let Some(d) = dump {
                    d.frame(Direction::ProxyToClient, &bytes);
                }
                send(Dest::Client, bytes);
            }
            Action::ToAgent(bytes) => {
                if let Some(d) = dump {
                    d.frame(Direction::ProxyToAgent, &bytes);
                }
                send(Dest::Agent, bytes);
            }
            Action::Note(note) => {
                match note.level {
                    NoteLevel::Info => tracing::info!("{}", note.message),
                    NoteLevel::Warn => tracing::warn!("{}", note.message),
                }
                if let Some(d) = dump {
                    d.note(note.message);
                }
            }
            Action::Store(op) => {
                if let Some(store) = store {
                    store.submit(op);
                }
            }
            Action::FetchChildren { parent_session_id } => {
                let children = match store.map(|s| s.children_of(&parent_session_id)) {
                    Some(Ok(children)) => children,
                    Some(Err(e)) => {
                        tracing::warn!("cannot read stored subagents of {parent_session_id}: {e}");
                        Vec::new()
                    }
                    None => Vec::new(),
                };
                engine.restore(children);
            }
            Action::FetchChild { child_id, request } => {
                let child = match store.map(|s| s.child(&child_id)) {
                    Some(Ok(child)) => child,
                    Some(Err(e)) => {
                        tracing::warn!("cannot read stored subagent {child_id}: {e}");
                        None
                    }
                    None => None,
                };
                let mut more = Vec::new();
                engine.child_fetched(child, request, now, &mut more);
                // What the answer produced goes before the actions after it (rare: a child
                // load; the rest is carried out in one more call).
                more.extend(queue.by_ref());
                execute(engine, now, &mut more, send, dump, store);
                break;
            }
        }
    }
    // Every action was taken out (a child load's call took the rest), so `list` is empty.
    drop(queue);
    *actions = list;
}
