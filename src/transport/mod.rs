//! I/O around the engine: line framing, the agent process, the stdio relay.

pub mod actions;
pub mod agent_process;
pub mod agent_reader;
pub mod chain_relay;
pub mod framing;
pub mod outbox;
pub mod pipe;
pub mod relay;
