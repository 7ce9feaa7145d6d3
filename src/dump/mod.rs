//! The traffic dump: the recorder the relay writes through, and the tools that read a dump
//! (`acp-proxy dump view|stats|check|html`, `acp-proxy replay`).

mod record;

pub use record::*;

pub mod annotate;
pub mod check;
pub mod cli;
pub mod html;
pub mod reader;
pub mod replay;
pub mod stats;
pub mod view;
