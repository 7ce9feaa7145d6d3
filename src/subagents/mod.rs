//! Subagents: the model, the per-agent detectors (presets as data: `spec` as written, `vocab`
//! and `preset` compiled, `presets` the set, `select` the choice per agent, `lines` the
//! transcript grammar, `detect` the matcher), and the Zed renderer.

pub mod detect;
pub mod entries;
pub mod ids;
pub mod lines;
pub mod model;
pub mod pair;
pub mod persist;
pub mod preset;
pub mod presets;
pub mod select;
pub mod spec;
pub mod transcript;
pub mod vocab;
pub mod zed;
