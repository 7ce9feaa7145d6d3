//! Agent requests for a session the client does not know yet: sent while the `session/new`
//! that creates the session waits for its response (AgentPool runs `terminal/create` then).
//! A client knows a session only once that response arrived and errors requests for others,
//! and the agent waits for the answer before it responds: so the proxy answers at once, as
//! the client would, and the request never reaches the client. Not held: a hold would delay
//! every new session and still end in an error.

use serde_json::Value;

use crate::engine::recent::RecentMap;
use crate::engine::{session_of, Action, Engine};
use crate::wire::envelope::Envelope;
use crate::wire::write;

/// What the client said in its `initialize` it can do for the agent.
#[derive(Debug, Default, Clone, Copy)]
struct ClientCaps {
    terminal: bool,
    read_text_file: bool,
    write_text_file: bool,
}

impl ClientCaps {
    /// Whether the client serves `method` at all (agent methods that need a capability).
    fn serves(self, method: &str) -> bool {
        match method {
            "fs/read_text_file" => self.read_text_file,
            "fs/write_text_file" => self.write_text_file,
            m if m.starts_with("terminal/") => self.terminal,
            _ => true,
        }
    }
}

/// What the engine keeps to tell which sessions the client knows.
#[derive(Debug)]
pub(in crate::engine) struct SessionsKnown {
    caps: ClientCaps,
    /// Client requests whose response creates a session, not answered yet: while there are
    /// none, no agent request is checked (the hot path pays one comparison).
    creating: usize,
    /// Every session the client named in a request (Zed registers a loaded or resumed session
    /// before it sends the request) and every session a `session/new` / `session/fork`
    /// response gave it.
    known: RecentMap<()>,
}

impl Default for SessionsKnown {
    fn default() -> Self {
        SessionsKnown {
            caps: ClientCaps::default(),
            creating: 0,
            known: RecentMap::new(4096),
        }
    }
}

/// Requests whose response creates a session the client will know.
fn creates_session(method: &str) -> bool {
    matches!(method, "session/new" | "session/fork")
}

impl SessionsKnown {
    /// The client's `initialize` params.
    pub(in crate::engine) fn client_initialize(&mut self, params: &Value) {
        let caps = &params["clientCapabilities"];
        let yes = |p: &str| caps.pointer(p).and_then(Value::as_bool) == Some(true);
        self.caps = ClientCaps {
            terminal: yes("/terminal"),
            read_text_file: yes("/fs/readTextFile"),
            write_text_file: yes("/fs/writeTextFile"),
        };
    }

    /// The client sent a request (naming `session`, if it does) on to the agent.
    pub(in crate::engine) fn client_request(&mut self, method: &str, session: Option<&str>) {
        if creates_session(method) {
            self.creating += 1;
        }
        if let Some(sid) = session {
            self.known.insert(sid, ());
        }
    }

    /// The agent answered a client request: a new session becomes known.
    pub(in crate::engine) fn response(&mut self, method: &str, frame: &[u8]) {
        if !creates_session(method) {
            return;
        }
        self.creating = self.creating.saturating_sub(1);
        if let Some(v) = crate::wire::parse_value(frame) {
            if let Some(sid) = v.pointer("/result/sessionId").and_then(Value::as_str) {
                self.known.insert(sid, ());
            }
        }
    }

    /// The agent is gone: nothing is being created any more.
    pub(in crate::engine) fn agent_gone(&mut self) {
        self.creating = 0;
    }

    /// Whether agent requests must be checked now.
    pub(in crate::engine) fn creating(&self) -> bool {
        self.creating > 0
    }

    /// Whether the client knows the session (as a top-level session, or one it opened).
    pub(in crate::engine) fn knows(&self, session: &str) -> bool {
        self.known.contains(session)
    }

    pub(in crate::engine) fn len(&self) -> usize {
        self.known.len()
    }
}

impl Engine {
    /// An agent request while a session is being created: if it names a session the client
    /// does not know, answer it here (as the client would) and return true. Only in the modes
    /// that model subagents: a pure relay (`off`) changes nothing. In `acp` the children the
    /// agent announced itself (a standard client learns of them from `subagent_update`) are
    /// known too.
    pub(in crate::engine) fn answer_early_request(
        &mut self,
        env: &Envelope<'_>,
        out: &mut Vec<Action>,
    ) -> bool {
        if !self.models_subagents() {
            return false;
        }
        let (Some(id), Some(method)) = (env.id, env.method()) else {
            return false;
        };
        let Some(sid) = session_of(env.params) else {
            return false;
        };
        let known = self.sessions.knows(&sid)
            || self.reg.is_child(&sid)
            || self.reg.by_agent_child(&sid).is_some()
            || self.native_children.contains("", &sid);
        if known {
            return false;
        }
        let method = method.to_owned();
        let answer = if self.sessions.caps.serves(&method) {
            write::error(
                id,
                -32002,
                &format!(
                    "acp-proxy: session `{sid}` is not known to the client yet: its `session/new` response has not been sent"
                ),
            )
        } else {
            write::error(
                id,
                -32601,
                &format!("acp-proxy: the client does not support `{method}`"),
            )
        };
        out.push(Action::ToAgent(answer));
        self.report_once(
            "request-before-session-new",
            out,
            format!(
                "the agent sent `{method}` for session {sid} before the response that creates the session: answered by the proxy (the client does not know the session yet); further ones are answered alike"
            ),
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_decide_which_methods_the_client_serves() {
        let mut s = SessionsKnown::default();
        s.client_initialize(&serde_json::json!({"clientCapabilities":
            {"fs": {"readTextFile": true, "writeTextFile": false}, "terminal": false}}));
        assert!(s.caps.serves("fs/read_text_file"));
        assert!(!s.caps.serves("fs/write_text_file"));
        assert!(!s.caps.serves("terminal/create"));
        assert!(s.caps.serves("session/request_permission"));
    }
}
