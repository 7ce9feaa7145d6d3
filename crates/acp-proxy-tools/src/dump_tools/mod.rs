//! The tools that read a traffic dump: `acp-proxy dump view|stats|check|html` and
//! `acp-proxy replay`. They sit above the config (a replay runs the engine with the settings a
//! dump recorded), and judge what the proxy sent with the model of Zed in [`crate::zed_model`].

pub mod annotate;
pub mod check;
pub mod cli;
pub mod html;
pub mod replay;
pub mod stats;
pub mod view;
