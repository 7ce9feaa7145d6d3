//! What the tests share: [`proxy`] drives the built binary with the scripted demo agent,
//! [`engine`] drives the sans-IO engine directly (a Zed model on the client side, captured or
//! built frames on the agent side), [`frames`] builds the agent's subagent traffic, [`store`] opens and ages store files.

pub mod engine;
pub mod frames;
pub mod proxy;
pub mod rng;
pub mod store;
/// The Zed model lives in the library (the demo prints through it too).
pub mod zed_model {
    pub use acp_proxy::zed_view::*;
}
