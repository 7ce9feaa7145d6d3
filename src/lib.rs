//! acp-proxy: an ACP proxy that shows an agent's subagents as real subagents in the editor.
//!
//! The crate is a sans-IO protocol [`engine`] wrapped by a thin tokio shell in [`transport`].

pub mod chain;
pub mod config;
pub mod devtools;
pub mod dump;
pub mod engine;
pub mod redact;
pub mod store;
pub mod subagents;
pub mod transport;
pub mod wire;
