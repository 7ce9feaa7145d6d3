//! The traffic dump's format: the recorder the relay writes through ([`record`]'s items,
//! re-exported here) and the streaming [`reader`] the dump tools read it with.

mod record;

pub use record::*;

pub mod reader;
