//! What the engine asks the durable store to keep, and what it gets back after a restart.
//! The types are the store's own: plain data, so the engine stays free of I/O.

pub use crate::store::{StoreOp, StoredChild, TurnRange};
