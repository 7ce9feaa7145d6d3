//! What the tests share: [`proxy`] drives the built binary with the scripted demo agent,
//! [`engine`] drives the sans-IO engine directly (a Zed model on the client side, captured or
//! built frames on the agent side), [`frames`] builds the agent's subagent traffic, [`store`] opens and ages store files, [`store_writer`] writes one from a process of its own,
//! [`standard`] models a client that speaks standard ACP subagents.

pub mod engine;
pub mod frames;
pub mod proxy;
pub mod rng;
pub mod standard;
pub mod store;
pub mod store_writer;
/// The Zed model lives in the tools crate (the demo and `doctor` print through it too).
pub mod zed_model {
    pub use acp_proxy_tools::zed_model::*;
}
