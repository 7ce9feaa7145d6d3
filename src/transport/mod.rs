//! I/O around the engine: line framing, the agent process, the stdio relay.

pub mod actions;
pub mod agent_guardian;
pub mod agent_reader;
pub mod chain_relay;
pub mod child;
pub mod framing;
pub mod outbox;
pub mod pipe;
pub mod relay;
