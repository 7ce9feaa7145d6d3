//! The client's side of subagents: what it sends about child sessions (`child_sessions`),
//! parents it reopens (`reopen`), the agent's requests to it (`permissions`), and requests for
//! a session it is still creating (`early_requests`).

pub(super) mod child_sessions;
pub(super) mod early_requests;
pub(super) mod permissions;
pub(super) mod reopen;
