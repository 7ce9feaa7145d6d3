//! acp-proxy's tools, linked by the `acp-proxy` binary beside the proxy library: what reads a
//! traffic dump (`dump_tools`), a model of what Zed makes of the frames it gets (`zed_model`),
//! the binary's own subcommands (`cli`: `setup zed`, `doctor`, `check-config`) and the
//! development tools (`devtools`: the demo client and the scripted demo agent).
//!
//! It builds on the library's public API only (`acp_proxy`); the library never imports it, so
//! the product crate is the proxy alone.

// System calls only in the scripted demo agent, which allows it by name.
#![deny(unsafe_code)]

// Layers, bottom up: zed_model ← dump_tools ← cli ← devtools (tests/it/layers.rs checks).
pub mod cli;
pub mod devtools;
pub mod dump_tools;
pub mod zed_model;
