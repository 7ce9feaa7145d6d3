//! Subagents: one model of them (`model`, its lifecycle `life`, `ids`, `entries`, `persist`), the per-agent
//! signatures that find them in the agent's traffic (`preset/`: the preset language, its
//! matcher and the folded transcripts it reads), the agents' own records of their children on
//! disk (`records`), and the renderers that show them to the client (`render/`).

pub(crate) mod entries;
pub mod ids;
mod life;
pub mod model;
pub(crate) mod pair;
pub mod persist;
pub mod preset;
pub mod records;
pub mod render;
pub mod thread;
