//! Standard subagent announcements (`subagent_update`) from a hostile or broken agent that
//! would put a child in the wrong place: a child whose session is its parent's own or
//! another top-level session's (every event of that session would vanish into the child),
//! a child session already announced under another parent (one id reused for two children,
//! or children nested in a cycle), or nesting and counts beyond `[limits]`. Such an
//! announcement is refused, once noted per kind: no card, the session's events go where they
//! went without it (a refused child's events pass through under its own session id, as
//! events before any announcement do), and children announced inside a refused one are
//! refused too, so a thousand-deep chain costs one entry each in a bounded set.

use crate::engine::recent::RecentMap;
use crate::engine::{Action, Engine};
use crate::subagents::ids;

/// Agent child sessions whose announcement was refused (their own children are too).
#[derive(Debug)]
pub(in crate::engine) struct Refused {
    children: RecentMap<()>,
}

impl Default for Refused {
    fn default() -> Self {
        Refused {
            children: RecentMap::new(4096),
        }
    }
}

impl Refused {
    pub(in crate::engine) fn len(&self) -> usize {
        self.children.len()
    }
}

impl Engine {
    /// Whether the announcement on session `on` of the agent's child session `agent_child`
    /// (whose card would go to `parent`, in top-level session `top`) must be refused; says
    /// why, once per kind.
    pub(in crate::engine) fn refuse_announcement(
        &mut self,
        on: &str,
        agent_child: &str,
        parent: &str,
        top: &str,
        out: &mut Vec<Action>,
    ) -> bool {
        let existing = self.reg.by_agent_child(agent_child).cloned();
        let (kind, why) = if agent_child == on {
            ("own", "that is the session it is announced on".to_owned())
        } else if let Some(cid) = existing {
            // Known already: the same parent may announce it again (state, title, a new turn).
            match self.reg.get(&cid) {
                Some(child) if child.parent.as_str() != parent => (
                    "reused",
                    format!(
                        "it is already the subagent {cid} of {}, whose card shows it",
                        child.parent
                    ),
                ),
                _ => return false,
            }
        } else if self.sessions.knows(agent_child)
            || self.reg.is_child(agent_child)
            || self.reg.in_top_session(agent_child).next().is_some()
        {
            (
                "client-session",
                "the client already has a session with that id".to_owned(),
            )
        } else if self.refused.children.contains(on) {
            // Its whole subtree is refused with it.
            self.refused.children.insert(agent_child, ());
            (
                "inside-refused",
                format!("its parent session {on} was refused as a subagent"),
            )
        } else {
            let spawn_id = ids::synthesized_spawn_id(agent_child);
            if self.spawn_allowed(parent, top, &spawn_id, out) {
                return false;
            }
            // `spawn_allowed` said why.
            self.refused.children.insert(agent_child, ());
            return true;
        };
        self.report_once(
            &format!("announcement-refused:{kind}"),
            out,
            format!(
                "subagent_update on session {on} announces child session {agent_child}, but {why}: refused (no card; that session's events pass as they are; further ones alike)"
            ),
        );
        true
    }
}
