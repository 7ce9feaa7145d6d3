//! Folded transcripts: a child's work the agent folded into text, read with a preset's line
//! grammar (`grammar`) and turned back into child updates (`fold`).

pub mod fold;
pub mod grammar;
