//! Shared test helpers.
#![allow(dead_code)]

pub mod harness;
/// The Zed model lives in the library (the demo prints through it too).
pub mod zed_model {
    pub use acp_proxy::devtools::zed_view::*;
}
