//! Borrowed JSON-RPC envelope: what a frame is, without copying or re-serialising it.
//!
//! Only the top-level keys the router needs are looked at; `params`, `result` and `id` stay raw
//! JSON slices of the input, so a frame that is not rewritten is never touched.
//!
//! The frame is taken apart in one pass with the validating walker (`wire::skip`): a
//! permission request carries a whole tool call, kilobytes of text dense with escapes, which
//! serde_json's skipping stops at one by one (it was half of the proxy's work per round trip
//! of such a request). Anything unusual (an escaped or repeated key, invalid JSON) is read by
//! serde_json's derived struct instead, which gives the same answer, only slower.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::line_body;
use super::skip::{skip_ws, value_end};
use super::update_view::{members, nullable_string_at, only_whitespace_after};

/// The top-level shape of a JSON-RPC message, borrowed from the frame's bytes. A member that
/// is `null` reads as absent.
#[derive(Debug)]
pub struct Envelope<'a> {
    pub method: Option<Cow<'a, str>>,
    pub id: Option<&'a RawValue>,
    pub params: Option<RawJson<'a>>,
    pub result: Option<RawJson<'a>>,
    pub error: Option<RawJson<'a>>,
}

/// A JSON value's exact text in the frame (validated, not parsed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawJson<'a>(&'a str);

impl<'a> RawJson<'a> {
    pub fn get(self) -> &'a str {
        self.0
    }
}

/// What kind of message a frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
    /// Valid JSON that is not a JSON-RPC message we route (arrays, scalars, odd objects).
    Other,
}

impl Envelope<'_> {
    pub fn kind(&self) -> Kind {
        match (&self.method, self.id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, Some(_)) if self.result.is_some() || self.error.is_some() => Kind::Response,
            _ => Kind::Other,
        }
    }

    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The id as its raw JSON text (`1`, `"abc"`), usable as a map key: JSON-RPC ids are
    /// compared by value, and peers echo the id they received, so the text is stable.
    pub fn id_text(&self) -> Option<&str> {
        self.id.map(RawValue::get)
    }
}

/// Outcome of classifying one frame.
#[derive(Debug)]
pub enum Parsed<'a> {
    Message(Envelope<'a>),
    /// Empty or whitespace-only line.
    Blank,
    /// Not valid UTF-8 JSON of an object shape (includes batches and garbage).
    NotJsonRpc,
}

/// Classify a frame (terminator included or not).
pub fn parse(raw: &[u8]) -> Parsed<'_> {
    parse_with(raw, |_, _| None).0
}

/// [`parse`], with a say in the walk of `params`: `read_params(text, at)` is called when the
/// walk reaches the value of `params` at `text[at..]` and returns the index after it, having
/// read it in the same pass; `None` leaves the value to the walker. The flag tells whether
/// the walk answered: if not (serde_json read the frame, or nothing could), whatever
/// `read_params` saw is not this frame's reading.
pub(super) fn parse_with<'a>(
    raw: &'a [u8],
    read_params: impl FnMut(&'a str, usize) -> Option<usize>,
) -> (Parsed<'a>, bool) {
    let body = line_body(raw);
    let trimmed = body.trim_ascii();
    if trimmed.is_empty() {
        return (Parsed::Blank, false);
    }
    if trimmed[0] != b'{' {
        return (Parsed::NotJsonRpc, false);
    }
    // serde_json skips the values of keys it is not asked for without checking their UTF-8:
    // check the whole line, or a frame with invalid bytes in such a key passes as a message.
    let Some(text) = super::skip::utf8(body) else {
        return (Parsed::NotJsonRpc, false);
    };
    if let Some(env) = walk(text, read_params) {
        return (Parsed::Message(env), true);
    }
    match by_serde(text) {
        Some(env) => (Parsed::Message(env), false),
        None => (Parsed::NotJsonRpc, false),
    }
}

/// Bytes of a frame [`method_first`] and [`request_method`] look at: the members before
/// `method` are short.
pub const HEAD: usize = 256;

/// The frame's first [`HEAD`] bytes as text (a character cut by the limit left out).
fn head_text(raw: &[u8]) -> Option<&str> {
    let body = line_body(raw);
    let head = &body[..body.len().min(HEAD)];
    match std::str::from_utf8(head) {
        Ok(text) => Some(text),
        // Cut inside a character: the valid part is enough.
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
    }
}

/// Whether the frame's top-level object names a string `method` before any `result` or `error`
/// member: then it is a request or a notification, never a response, whatever follows. Only
/// the members before it are walked (a request's `params` may be kilobytes). `None` when the
/// walk of the frame's first bytes cannot tell (an escaped key, a long member first, invalid
/// JSON).
pub fn method_first(raw: &[u8]) -> Option<bool> {
    let text = head_text(raw)?;
    let b = text.as_bytes();
    let mut verdict = None;
    members(text, skip_ws(b, 0), |key, at| match key.plain()? {
        "method" => {
            verdict = Some(b.get(at) == Some(&b'"'));
            None
        }
        "result" | "error" => {
            verdict = Some(false);
            None
        }
        _ => value_end(b, at, 1),
    });
    verdict
}

/// The method of a frame whose first members are a string `method` (without escapes) and an
/// `id` that is not `null`, read from the frame's first bytes only: the frame is that request
/// if it is valid JSON-RPC at all (only [`parse`] tells). `None` when the first bytes cannot
/// tell: a `result`, `error` or `params` member first, an escaped key, a long member, no id.
pub fn request_method(raw: &[u8]) -> Option<&str> {
    let text = head_text(raw)?;
    let b = text.as_bytes();
    let (mut method, mut id) = (None, false);
    members(text, skip_ws(b, 0), |key, at| {
        let end = match key.plain()? {
            "method" => match nullable_string_at(text, at)? {
                (Some(Cow::Borrowed(m)), end) => {
                    method = Some(m);
                    end
                }
                _ => return None,
            },
            "id" if b.get(at) != Some(&b'n') => {
                id = true;
                value_end(b, at, 1)?
            }
            "id" | "params" | "result" | "error" => return None,
            _ => value_end(b, at, 1)?,
        };
        // Both read: nothing after them can make the frame anything but this request.
        (method.is_none() || !id).then_some(end)
    });
    method.filter(|_| id)
}

/// The one-pass walk; `None` for anything unusual (the caller asks serde_json).
fn walk<'a>(
    text: &'a str,
    mut read_params: impl FnMut(&'a str, usize) -> Option<usize>,
) -> Option<Envelope<'a>> {
    let b = text.as_bytes();
    let mut env = Envelope {
        method: None,
        id: None,
        params: None,
        result: None,
        error: None,
    };
    // The fields met so far, one bit each: a derived struct refuses a repeated field.
    let mut seen = 0u8;
    let end = members(text, skip_ws(b, 0), |key, at| {
        let name = key.plain()?;
        let bit = match name {
            "method" => 1,
            "id" => 2,
            "params" => 4,
            "result" => 8,
            "error" => 16,
            _ => return value_end(b, at, 1),
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        if bit == 1 {
            let (method, end) = nullable_string_at(text, at)?;
            env.method = method;
            return Some(end);
        }
        let end = match bit {
            4 => read_params(text, at).or_else(|| value_end(b, at, 1))?,
            _ => value_end(b, at, 1)?,
        };
        let raw = text.get(at..end)?;
        if raw != "null" {
            match bit {
                // Ids are short: serde_json's own borrowed value, for the maps keyed by it.
                2 => env.id = Some(serde_json::from_str::<&RawValue>(raw).ok()?),
                4 => env.params = Some(RawJson(raw)),
                8 => env.result = Some(RawJson(raw)),
                _ => env.error = Some(RawJson(raw)),
            }
        }
        Some(end)
    })?;
    only_whitespace_after(text, end).then_some(env)
}

/// The same fields read by serde_json's derived struct.
fn by_serde<'a>(text: &'a str) -> Option<Envelope<'a>> {
    #[derive(Deserialize)]
    struct Fields<'a> {
        #[serde(borrow, default)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
        #[serde(borrow, default)]
        result: Option<&'a RawValue>,
        #[serde(borrow, default)]
        error: Option<&'a RawValue>,
    }
    let f: Fields<'a> = serde_json::from_str(text).ok()?;
    let raw = |v: Option<&'a RawValue>| v.map(|v| RawJson(v.get()));
    Some(Envelope {
        method: f.method,
        id: f.id,
        params: raw(f.params),
        result: raw(f.result),
        error: raw(f.error),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(raw: &str) -> Envelope<'_> {
        match parse(raw.as_bytes()) {
            Parsed::Message(e) => e,
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn classifies_messages() {
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#).kind(),
            Kind::Request
        );
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#).kind(),
            Kind::Notification
        );
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#).kind(),
            Kind::Response
        );
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#).kind(),
            Kind::Response
        );
        assert_eq!(env(r#"{"foo":1}"#).kind(), Kind::Other);
    }

    #[test]
    fn keeps_ids_and_params_raw() {
        let e = env(r#"{"id":"a\/b","method":"m\u0065","params":{"n":1.0e3}}"#);
        assert_eq!(e.id_text(), Some(r#""a\/b""#));
        assert_eq!(e.method(), Some("me"));
        assert_eq!(e.params.map(RawJson::get), Some(r#"{"n":1.0e3}"#));
    }

    #[test]
    fn rejects_non_messages() {
        assert!(matches!(parse(b"[1,2]\n"), Parsed::NotJsonRpc));
        assert!(matches!(parse(b"{broken\n"), Parsed::NotJsonRpc));
        assert!(matches!(parse(b"\xff\xfe\n"), Parsed::NotJsonRpc));
        // Invalid UTF-8 in a key the envelope does not read.
        assert!(matches!(
            parse(b"{\"id\":5,\"result\":{},\"x\":\"\xff\"}\n"),
            Parsed::NotJsonRpc
        ));
        assert!(matches!(parse(b"  \r\n"), Parsed::Blank));
    }

    /// The envelope's fields as text, to compare the two readings.
    type Shape = (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );

    fn shape(e: &Envelope<'_>) -> Shape {
        (
            e.method().map(str::to_owned),
            e.id.map(|i| i.get().to_owned()),
            e.params.map(|p| p.get().to_owned()),
            e.result.map(|p| p.get().to_owned()),
            e.error.map(|p| p.get().to_owned()),
        )
    }

    /// The walk agrees with serde_json whenever it answers, and refuses what serde_json
    /// refuses. Returns whether the walk answered.
    fn check(text: &str) -> bool {
        let fast = walk(text, |_, _| None);
        match (&fast, by_serde(text)) {
            (Some(f), Some(o)) => assert_eq!(shape(f), shape(&o), "{text}"),
            (Some(f), None) => panic!("the walk read what serde_json refuses: {text}: {f:?}"),
            (None, _) => {}
        }
        fast.is_some()
    }

    #[test]
    fn walks_messages_as_serde_json_reads_them() {
        for text in [
            r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"rawInput":{"content":"a\nb \"q\" \u00e9"}}}}"#,
            r#"{"jsonrpc":"2.0","id":"a\/b","result":{"outcome":{"outcome":"selected"}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#,
            r#" {"method":"m\u0065","params":[1,2.5e3,true,null]} "#,
            r#"{"id":null,"method":null,"params":null,"result":null,"error":null}"#,
            r#"{"id":{"a":[1]},"x":{"id":2,"id":3},"jsonrpc":"2.0","jsonrpc":"1"}"#,
            r#"{}"#,
        ] {
            assert!(check(text), "the walk should read {text}");
        }
        // A response whose result is null reads as having none, as before.
        assert_eq!(
            env(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).kind(),
            Kind::Other
        );
    }

    #[test]
    fn leaves_the_unusual_to_serde_json() {
        for text in [
            r#"{"m\u0065thod":"x","id":1}"#,
            r#"{"method":"x","method":"y"}"#,
            r#"{"id":1,"id":2,"result":{}}"#,
            r#"{"id":1,"result":{},"result":{}}"#,
            r#"{"method":1,"id":1}"#,
            r#"{"method":"x"} x"#,
            r#"{"method":"x","params":{"a":tru}}"#,
            r#"{"method":"x","params":{"a":"\q"}}"#,
            r#"{"method":"x","id":01}"#,
            r#"{"method":"x","params":{"a":1,}}"#,
        ] {
            assert!(!check(text), "the walk should leave {text} to serde_json");
        }
    }

    #[test]
    fn tells_a_request_by_its_first_members() {
        let long = "x".repeat(300);
        for (text, method) in [
            (
                r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"toolCall":{}}}"#,
                Some("session/request_permission"),
            ),
            (
                r#" { "method" : "m" , "id" : {"a":[1]} , "params": "#,
                Some("m"),
            ),
            // No id, a null id, an escaped key or method, params or a result first.
            (
                r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#,
                None,
            ),
            (r#"{"method":"m","id":null,"params":{}}"#, None),
            (r#"{"\u0069d":1,"method":"m"}"#, None),
            (r#"{"id":1,"method":"m\u0065"}"#, None),
            (r#"{"params":{},"id":1,"method":"m"}"#, None),
            (r#"{"id":1,"result":{},"method":"m"}"#, None),
            (r#"{"id":1,"error":{},"method":"m"}"#, None),
            (r#"{"id":1,"method":2}"#, None),
            ("[1]", None),
        ] {
            assert_eq!(request_method(text.as_bytes()), method, "{text}");
        }
        // A long member first: the first bytes cannot tell.
        let late = format!(r#"{{"x":"{long}","id":1,"method":"m"}}"#);
        assert_eq!(request_method(late.as_bytes()), None);
    }

    /// What the first members tell is what the whole frame says, whenever it is a message.
    #[test]
    fn a_request_told_by_its_first_members_is_that_request() {
        let mut told = 0;
        let tricky = [
            r#"{"id":1,"method":"m","method":"n"}"#,
            r#"{"id":1,"method":"m","id":null}"#,
            r#"{"id":1,"method":"m","params":{"a":tru}}"#,
            r#"{"id":1,"method":"m","m\u0065thod":"n"}"#,
        ];
        let frames = crate::wire::captures::frames().into_iter().map(|(_, f)| f);
        for frame in frames.chain(tricky.map(str::to_owned)) {
            let Some(method) = request_method(frame.as_bytes()) else {
                continue;
            };
            told += 1;
            if let Parsed::Message(env) = parse(frame.as_bytes()) {
                assert_eq!(env.kind(), Kind::Request, "{frame}");
                assert_eq!(env.method(), Some(method), "{frame}");
            }
        }
        assert!(told > 100, "only {told} requests told");
    }

    /// Every frame of the captures reads the same both ways.
    #[test]
    fn agrees_on_every_frame_of_the_captures() {
        let mut read = 0;
        for (path, frame) in crate::wire::captures::frames() {
            // Lines that are not JSON objects (an agent's stderr) are neither's to read.
            if frame.trim_start().starts_with('{') {
                assert!(check(&frame), "{}: {frame}", path.display());
                read += 1;
            }
        }
        assert!(read > 1000, "only {read} frames in the captures");
    }
}
