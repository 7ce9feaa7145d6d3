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
// The Unix one polls the descriptors itself; the Windows one uses tokio's pipes.
#[allow(unsafe_code)] // reads, writes and flags of the descriptors the relay polls
#[cfg_attr(windows, path = "pipe_windows.rs")]
pub(crate) mod pipe;
mod records;
pub mod relay;
mod shell;
mod timer;
