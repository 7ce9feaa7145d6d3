//! Subagents: the model, the per-agent detectors (presets), and the Zed renderer.

pub mod detect;
pub mod entries;
pub mod ids;
pub mod model;
pub mod pair;
pub mod persist;
pub mod presets;
pub mod transcript;
pub mod zed;
