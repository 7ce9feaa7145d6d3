//! acp-proxy: an ACP proxy that shows an agent's subagents as real subagents in the editor.
//!
//! The crate is a sans-IO protocol [`engine`] wrapped by a thin tokio shell in [`transport`].
//! `docs/architecture.md` maps the modules and how a frame travels through them.

// System calls and SIMD intrinsics only, in the modules that allow it by name.
#![deny(unsafe_code)]

// Layers (listed alphabetically), bottom up: {units, wire, zed_view} ← subagents ← engine ←
// {chain, dump, store, transport} ← config ← dump_tools ← devtools; each imports only the
// ones below it (tests/it/layers.rs checks).
mod chain;
pub mod config;
pub mod dump;
pub mod dump_tools;
pub mod engine;
#[allow(unsafe_code)] // system calls the std library and rustix do not offer
pub mod platform;
mod redact;
pub mod store;
pub mod subagents;
pub mod transport;
pub mod units;
pub mod wire;
pub mod zed_view;

/// Development tools the `acp-proxy` binary runs (`demo`, `demo-agent`); not an API.
#[doc(hidden)]
pub mod devtools;
