//! I/O around the engine: line framing, the agent's process, the stdio relay.
//!
//! [`relay`] runs a session: it starts the agent (or, started by a conductor, runs as a chain
//! link) and selects over every reader. What arrives goes through the one `Shell` (`shell.rs`),
//! which feeds the engine and carries out its actions; chain mode is a layer inside it, not a
//! loop of its own.

pub mod agent_guardian;
pub mod agent_process;
pub(crate) mod agent_reader;
pub mod framing;
pub(crate) mod outbox;
// Both use tokio's pipes; the Unix one also reads the agent's pipe on the reader thread.
#[allow(unsafe_code)] // the length of a buffer `read(2)` filled on the reader thread
#[cfg_attr(windows, path = "pipe_windows.rs")]
pub(crate) mod pipe;
mod records;
pub mod relay;
mod shell;
mod timer;
