//! The traffic dump: the recorder the relay writes through, and the tools that read a dump.

mod record;

pub use record::*;
pub mod annotate;
pub mod reader;
