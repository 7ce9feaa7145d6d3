//! Proxy-chain mode: acp-proxy as one link of a conductor's chain.
//!
//! A conductor (`agent-client-protocol-conductor`) sends `proxy/initialize` instead of
//! `initialize` and spawns the agent itself. Everything to and from the next link (the
//! "successor", towards the agent) travels wrapped in `proxy/successor`; unwrapped messages come
//! from the predecessor (towards the editor). This adapter translates between that wire and
//! the engine's two sides, so the engine is the same in both modes. Sans-IO, like the engine.
//!
//! Ids: the proxy's own outgoing requests on the one connection (client requests passed on to
//! the successor, agent requests passed on to the predecessor) get ids of their own
//! (`"acp-proxy-chain-N"`), so the two directions can never collide; responses are mapped back.

use std::collections::HashMap;

use bytes::Bytes;
use serde_json::value::RawValue;

use crate::wire::envelope::{self, Kind, Parsed, RawJson};

/// Which generation of the conductor protocol the chain speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `proxy/initialize`, `proxy/successor` (current SDKs).
    Current,
    /// `_proxy/initialize`, `_proxy/successor` (SDK ≤ 3.x).
    Legacy,
}

impl Dialect {
    fn successor(self) -> &'static str {
        match self {
            Dialect::Current => "proxy/successor",
            Dialect::Legacy => "_proxy/successor",
        }
    }
}

/// The dialect, if this frame is a conductor's `proxy/initialize` request.
pub fn chain_initialize(frame: &[u8]) -> Option<Dialect> {
    let Parsed::Message(env) = envelope::parse(frame) else {
        return None;
    };
    match (env.kind(), env.method()) {
        (Kind::Request, Some("proxy/initialize")) => Some(Dialect::Current),
        (Kind::Request, Some("_proxy/initialize")) => Some(Dialect::Legacy),
        _ => None,
    }
}

/// Where a frame from the conductor goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Into the engine as if from the client.
    Client(Bytes),
    /// Into the engine as if from the agent.
    Agent(Bytes),
    /// Not forwarded (e.g. `$/cancel_request`, which never crosses a hop), with the reason.
    Drop(&'static str),
}

/// The translation state of one chain connection.
#[derive(Debug)]
pub struct Chain {
    dialect: Dialect,
    next_id: u64,
    /// Our request id → the client's id, for client requests sent on to the successor.
    to_successor: HashMap<String, Box<RawValue>>,
    /// Our request id → the agent's id, for agent requests sent on to the predecessor.
    to_predecessor: HashMap<String, Box<RawValue>>,
}

impl Chain {
    pub fn new(dialect: Dialect) -> Chain {
        Chain {
            dialect,
            next_id: 0,
            to_successor: HashMap::new(),
            to_predecessor: HashMap::new(),
        }
    }

    fn fresh_id(&mut self) -> String {
        self.next_id += 1;
        format!("\"acp-proxy-chain-{}\"", self.next_id)
    }

    /// A frame from the conductor.
    pub fn route_inbound(&mut self, frame: Bytes) -> Route {
        let Parsed::Message(env) = envelope::parse(&frame) else {
            return Route::Client(frame);
        };
        let method = env.method().unwrap_or("");
        if method == "$/cancel_request" {
            return Route::Drop("$/cancel_request is never forwarded across hops");
        }
        match env.kind() {
            Kind::Request | Kind::Notification if method == self.dialect.successor() => {
                // From the successor: unwrap. Its id stays (answers go back on this link).
                let Some(params) = env.params else {
                    return Route::Drop("proxy/successor without params");
                };
                let Ok(inner) = serde_json::from_str::<Inner<'_>>(params.get()) else {
                    return Route::Drop("proxy/successor params without an inner method");
                };
                Route::Agent(message(
                    env.id,
                    Some(&inner.method),
                    inner.params.map(RawValue::get),
                    None,
                    None,
                ))
            }
            Kind::Request if method == "proxy/initialize" || method == "_proxy/initialize" => {
                Route::Client(message(
                    env.id,
                    Some("initialize"),
                    env.params.map(RawJson::get),
                    None,
                    None,
                ))
            }
            Kind::Response => {
                let key = env.id.map(|i| i.get().to_owned()).unwrap_or_default();
                if let Some(client_id) = self.to_successor.remove(&key) {
                    // The result of a wrapped request is the inner result, unchanged.
                    Route::Agent(message(
                        Some(&client_id),
                        None,
                        None,
                        env.result.map(RawJson::get),
                        env.error.map(RawJson::get),
                    ))
                } else if let Some(agent_id) = self.to_predecessor.remove(&key) {
                    Route::Client(message(
                        Some(&agent_id),
                        None,
                        None,
                        env.result.map(RawJson::get),
                        env.error.map(RawJson::get),
                    ))
                } else {
                    Route::Client(frame.clone())
                }
            }
            _ => Route::Client(frame.clone()),
        }
    }

    /// The engine sends this to the agent: wrap it for the successor.
    pub fn wrap_for_successor(&mut self, frame: Bytes) -> Bytes {
        let Parsed::Message(env) = envelope::parse(&frame) else {
            return frame;
        };
        match env.kind() {
            Kind::Request | Kind::Notification => {
                let Some(method) = env.method() else {
                    return frame.clone();
                };
                let method_json = serde_json::to_string(method).unwrap_or_default();
                let params = env.params.map_or("null", RawJson::get);
                let inner = format!("{{\"method\":{method_json},\"params\":{params}}}");
                let inner = RawValue::from_string(inner).ok();
                let id = match (env.kind(), env.id) {
                    (Kind::Request, Some(client_id)) => {
                        let ours = self.fresh_id();
                        self.to_successor.insert(ours.clone(), client_id.to_owned());
                        RawValue::from_string(ours).ok()
                    }
                    _ => None,
                };
                message(
                    id.as_deref(),
                    Some(self.dialect.successor()),
                    inner.as_deref().map(RawValue::get),
                    None,
                    None,
                )
            }
            // A response to a wrapped request from the successor keeps that request's id.
            _ => frame.clone(),
        }
    }

    /// The engine sends this to the client: requests get an id of our own.
    pub fn wrap_for_predecessor(&mut self, frame: Bytes) -> Bytes {
        let Parsed::Message(env) = envelope::parse(&frame) else {
            return frame;
        };
        match (env.kind(), env.id) {
            (Kind::Request, Some(agent_id)) => {
                let ours = self.fresh_id();
                self.to_predecessor
                    .insert(ours.clone(), agent_id.to_owned());
                let id = RawValue::from_string(ours).ok();
                message(
                    id.as_deref(),
                    env.method(),
                    env.params.map(RawJson::get),
                    None,
                    None,
                )
            }
            _ => frame.clone(),
        }
    }
}

#[derive(serde::Deserialize)]
struct Inner<'a> {
    method: String,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// A JSON-RPC line from its parts, raw JSON kept as is.
fn message(
    id: Option<&RawValue>,
    method: Option<&str>,
    params: Option<&str>,
    result: Option<&str>,
    error: Option<&str>,
) -> Bytes {
    let mut s = String::from("{\"jsonrpc\":\"2.0\"");
    if let Some(id) = id {
        s.push_str(",\"id\":");
        s.push_str(id.get());
    }
    if let Some(m) = method {
        s.push_str(",\"method\":");
        s.push_str(&serde_json::to_string(m).unwrap_or_default());
    }
    for (key, value) in [("params", params), ("result", result), ("error", error)] {
        if let Some(v) = value {
            s.push_str(&format!(",\"{key}\":{v}"));
        }
    }
    s.push_str("}\n");
    Bytes::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn b(v: Value) -> Bytes {
        Bytes::from(format!("{v}\n"))
    }

    fn v(bytes: &Bytes) -> Value {
        serde_json::from_slice(bytes).expect("json")
    }

    #[test]
    fn initialize_and_wrapped_round_trips() {
        let init = b(
            json!({"jsonrpc":"2.0","id":1,"method":"proxy/initialize","params":{"protocolVersion":1}}),
        );
        assert_eq!(chain_initialize(&init), Some(Dialect::Current));
        let mut c = Chain::new(Dialect::Current);
        let Route::Client(inner) = c.route_inbound(init) else {
            panic!("client side")
        };
        assert_eq!(
            v(&inner),
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}})
        );

        // The engine passes initialize on: it goes to the successor wrapped, with our id.
        let out = c.wrap_for_successor(inner);
        let wrapped = v(&out);
        assert_eq!(wrapped["method"], "proxy/successor");
        assert_eq!(
            wrapped["params"],
            json!({"method":"initialize","params":{"protocolVersion":1}})
        );
        let ours = wrapped["id"].clone();
        // Its result comes back as a plain response to our id and is mapped to the client's.
        let Route::Agent(resp) = c.route_inbound(b(
            json!({"jsonrpc":"2.0","id":ours,"result":{"protocolVersion":1}}),
        )) else {
            panic!("agent side")
        };
        assert_eq!(
            v(&resp),
            json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}})
        );
    }

    #[test]
    fn agent_requests_get_ids_that_cannot_collide() {
        let mut c = Chain::new(Dialect::Legacy);
        let wrapped = b(json!({"jsonrpc":"2.0","id":7,"method":"_proxy/successor",
            "params":{"method":"session/request_permission","params":{"sessionId":"s"}}}));
        let Route::Agent(inner) = c.route_inbound(wrapped) else {
            panic!("agent side")
        };
        assert_eq!(v(&inner)["id"], 7);
        let to_client = c.wrap_for_predecessor(inner);
        let ours = v(&to_client)["id"].clone();
        assert_ne!(ours, json!(7));
        let Route::Client(answer) = c.route_inbound(b(
            json!({"jsonrpc":"2.0","id":ours,"result":{"outcome":{"outcome":"cancelled"}}}),
        )) else {
            panic!("client side")
        };
        assert_eq!(v(&answer)["id"], 7);
        // The engine's response to the agent answers the wrapped request as is.
        let resp = c.wrap_for_successor(answer.clone());
        assert_eq!(resp, answer);
        // Cancellation never crosses a hop.
        let cancel =
            b(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}));
        assert!(matches!(c.route_inbound(cancel), Route::Drop(_)));
        // Notifications are wrapped without an id.
        let note = c.wrap_for_successor(b(
            json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}),
        ));
        assert_eq!(
            v(&note),
            json!({"jsonrpc":"2.0","method":"_proxy/successor","params":{"method":"session/cancel","params":{"sessionId":"s"}}})
        );
    }
}
