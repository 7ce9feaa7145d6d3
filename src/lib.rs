//! acp-proxy: an ACP proxy that shows an agent's subagents as real subagents in the editor.
//!
//! The crate is a sans-IO protocol [`engine`] wrapped by a thin tokio shell in [`transport`].
//! `docs/architecture.md` maps the modules and how a frame travels through them.

// System calls and SIMD intrinsics only, in the modules that allow it by name.
#![deny(unsafe_code)]

// Layers, bottom up: {units, platform, wire} ← subagents ← engine ← {chain, dump, store} ←
// transport ← config; each imports only the ones below it (tests/it/layers.rs checks). The
// tools that read dumps, the Zed model, the demo and the subcommands are the
// `acp-proxy-tools` crate (crates/acp-proxy-tools), which this library never imports.
pub mod chain;
pub mod config;
pub mod dump;
pub mod engine;
#[allow(unsafe_code)] // system calls the std library and rustix do not offer
pub mod platform;
mod redact;
pub mod store;
pub mod subagents;
pub mod transport;
pub mod units;
pub mod wire;
