//! I/O around the engine: line framing, the agent's process, the stdio relay.
//!
//! [`relay`] runs a session: it starts the agent (or, started by a conductor, runs as a chain
//! link) and selects over every reader. What arrives goes through the one `Shell` (`shell.rs`),
//! which feeds the engine and carries out its actions; chain mode is a layer inside it, not a
//! loop of its own.

#[allow(unsafe_code)] // a close-on-exec pipe, signal dispositions and the process name
pub mod agent_guardian;
#[allow(unsafe_code)] // signals to the agent's process group
pub mod agent_process;
pub(crate) mod agent_reader;
pub mod framing;
pub(crate) mod outbox;
#[allow(unsafe_code)] // reads, writes and flags of the descriptors the relay polls
pub(crate) mod pipe;
pub mod relay;
mod shell;
mod timer;
