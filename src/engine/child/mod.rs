//! A child's life in the engine, whatever wire announced it: the spawn tool call of a legacy
//! wire (`spawn`) or a standard `subagent_update` (`standard`), its own events (`events`)
//! recorded in its thread (`thread`), its end, continuation, cancellation and release
//! (`lifecycle`), the paced progress of its card (`pace`), and a spawn card's progress frames
//! read by their text (`progress_frame`).

pub(super) mod events;
pub(super) mod lifecycle;
pub(super) mod pace;
pub(super) mod progress_frame;
pub(super) mod spawn;
pub(super) mod standard;
pub(super) mod thread;
