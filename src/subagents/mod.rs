//! Subagents: one model of them, the per-agent signatures that find them in the agent's
//! traffic (presets, read by the detector), and the renderers that show them to the client.

pub(crate) mod detect;
pub(crate) mod entries;
pub mod ids;
pub mod model;
pub(crate) mod pair;
pub mod persist;
pub mod presets;
pub mod render;
