//! acp-proxy: an ACP proxy that shows an agent's subagents as real subagents in the editor.
//!
//! The crate is a sans-IO protocol [`engine`] wrapped by a thin tokio shell in [`transport`].
//! `docs/architecture.md` maps the modules and how a frame travels through them.

// System calls and SIMD intrinsics only, in the modules that allow it by name.
#![deny(unsafe_code)]

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
