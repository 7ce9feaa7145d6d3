//! The sans-IO core: frames in, actions out.
//!
//! The engine owns all protocol state (pending requests, sessions, subagents) and never does
//! I/O or reads a clock: the shell passes each frame with a timestamp and carries out the
//! returned [`Action`]s in order. Frames it does not change are forwarded as the same `Bytes`.

pub mod envelope;
pub mod pending;

use bytes::Bytes;

use envelope::{Kind, Parsed};
use pending::PendingRequests;

/// Milliseconds on a monotonic clock chosen by the shell.
pub type Millis = u64;

/// What the shell must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write these bytes (one or more complete lines) to the client.
    ToClient(Bytes),
    /// Write these bytes (one or more complete lines) to the agent.
    ToAgent(Bytes),
    /// A diagnostic worth a line on stderr and a record in the dump.
    Note(Note),
}

/// A diagnostic from the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub level: NoteLevel,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteLevel {
    Info,
    Warn,
}

/// The protocol state machine between one client and one agent.
#[derive(Debug, Default)]
pub struct Engine {
    /// Client requests the agent has not answered yet.
    client_requests: PendingRequests,
}

impl Engine {
    pub fn new() -> Self {
        Self::default()
    }

    /// A frame (one line, terminator included) arrived from the client.
    pub fn from_client(&mut self, frame: Bytes, _now: Millis, out: &mut Vec<Action>) {
        if let Parsed::Message(env) = envelope::parse(&frame) {
            if env.kind() == Kind::Request {
                if let (Some(id), Some(method)) = (env.id, env.method()) {
                    self.client_requests.insert(id, method);
                }
            }
        }
        out.push(Action::ToAgent(frame));
    }

    /// A frame (one line, terminator included) arrived from the agent.
    pub fn from_agent(&mut self, frame: Bytes, _now: Millis, out: &mut Vec<Action>) {
        if let Parsed::Message(env) = envelope::parse(&frame) {
            if env.kind() == Kind::Response {
                if let Some(id) = env.id {
                    self.client_requests.remove(id);
                }
            }
        }
        out.push(Action::ToClient(frame));
    }

    /// The agent is gone: answer every request the client still waits for with an error
    /// that says why, oldest first.
    pub fn agent_gone(&mut self, reason: &str, out: &mut Vec<Action>) {
        for req in self.client_requests.drain_in_order() {
            let line = pending::error_response(
                &req.id,
                -32603,
                &format!(
                    "acp-proxy: the agent exited before answering `{}`: {reason}",
                    req.method
                ),
            );
            out.push(Action::ToClient(line));
        }
    }

    /// Number of client requests still waiting for the agent.
    pub fn pending_client_requests(&self) -> usize {
        self.client_requests.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_agent(engine: &mut Engine, line: &str) -> Vec<Action> {
        let mut out = Vec::new();
        engine.from_agent(Bytes::copy_from_slice(line.as_bytes()), 0, &mut out);
        out
    }

    fn run_client(engine: &mut Engine, line: &str) -> Vec<Action> {
        let mut out = Vec::new();
        engine.from_client(Bytes::copy_from_slice(line.as_bytes()), 0, &mut out);
        out
    }

    #[test]
    fn forwards_unchanged_and_errors_pending_on_exit() {
        let mut e = Engine::new();
        let a = run_client(
            &mut e,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n",
        );
        assert_eq!(
            a,
            vec![Action::ToAgent(Bytes::from_static(
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n"
            ))]
        );
        run_client(
            &mut e,
            "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"session/new\"}\n",
        );
        run_agent(&mut e, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
        assert_eq!(e.pending_client_requests(), 1);
        let mut out = Vec::new();
        e.agent_gone("exit status 3", &mut out);
        let [Action::ToClient(line)] = out.as_slice() else {
            panic!("{out:?}")
        };
        let v: serde_json::Value = serde_json::from_slice(line).expect("json");
        assert_eq!(v["id"], "s");
        assert_eq!(v["error"]["code"], -32603);
        assert!(v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("exit status 3"));
    }
}
