//! Mechanisms single agent families (or hostile ones) need, apart from the main flow: children
//! the agent replays itself and the proxy fetches (`child_fetch`, OpenCode), calls beside a
//! spawn that carry its child's work (`sibling`, AgentPool) and work folded into text
//! (`folded`), children attributed by timing (`timing`) or by the agent's own child ids
//! bound to spawns (`bind`), end signals outside the card (`end_signals`), cards another link
//! made (`foreign`), announcements refused (`guards`), the agent's own records of children
//! on disk (`records`), and spawns replayed under new tool call ids found by the agent's own
//! child ids (`replayed_ids`).

pub(super) mod bind;
pub(super) mod child_fetch;
pub(super) mod end_signals;
pub(super) mod folded;
pub(super) mod foreign;
pub(super) mod guards;
pub(super) mod records;
pub(super) mod replayed_ids;
pub(super) mod sibling;
pub(super) mod timing;
