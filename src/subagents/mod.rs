//! Subagents: one model of them, the per-agent signatures that find them in the agent's
//! traffic (presets as data: `spec` as written, `vocab` and `preset` compiled, `presets` the
//! set, `select` the choice per agent, `lines` the transcript grammar, `detect` the matcher),
//! folded transcripts read back into child updates (`fold`), the agents' own records of their
//! children on disk (`records`), and the renderers that show them
//! to the client.

pub mod detect;
pub(crate) mod entries;
pub mod fold;
pub mod ids;
pub mod lines;
pub mod model;
pub(crate) mod pair;
pub mod persist;
pub mod preset;
pub mod presets;
pub mod records;
pub mod render;
pub mod select;
pub mod spec;
pub mod vocab;
