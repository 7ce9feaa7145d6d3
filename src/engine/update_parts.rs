//! A `session/update` notification taken apart in one pass over its bytes: the session id, the
//! fields of the update the router reads, its `_meta`, and the exact JSON text of the update
//! (what a child's transcript records and replays).
//!
//! Reading the update's extent as a `RawValue` and then parsing its fields from that text
//! walks every byte of a (often 20 KiB) update twice. Here each value of the update is read
//! once, as a borrowed raw slice: the small ones the router needs are parsed from their slice,
//! and the update's own text is the span from its `{` to its `}`, found from where its first
//! key and last value lie in the input.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The fields of an update the router reads, with the update's text, borrowed from the frame.
#[derive(Debug)]
pub struct UpdateParts<'a> {
    /// The update object's exact JSON text.
    pub raw: &'a str,
    /// `sessionUpdate`.
    pub kind: Cow<'a, str>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub title: Option<Cow<'a, str>>,
    pub has_status: bool,
    /// The raw text of the update's `_meta`, if any.
    pub meta: Option<&'a str>,
}

/// A whole `session/update` notification, taken apart.
#[derive(Debug)]
pub struct UpdateFrame<'a> {
    pub session_id: Cow<'a, str>,
    pub update: UpdateParts<'a>,
}

impl<'a> UpdateFrame<'a> {
    /// Take apart a frame's text (`{"method":"session/update","params":{...}}`). `None` when
    /// it is anything else, or unusual enough (escaped keys in the update, an empty update) that
    /// the caller should take the general path.
    pub fn parse(text: &'a str) -> Option<UpdateFrame<'a>> {
        let whole: Whole<'a> = serde_json::from_str(text).ok()?;
        if whole.method != "session/update" {
            return None;
        }
        let update = whole.params.update.resolve(text)?;
        Some(UpdateFrame {
            session_id: whole.params.session_id,
            update,
        })
    }

    /// Take apart the text of a `session/update`'s `params` object.
    pub fn parse_params(params: &'a str) -> Option<UpdateFrame<'a>> {
        let p: Params<'a> = serde_json::from_str(params).ok()?;
        let update = p.update.resolve(params)?;
        Some(UpdateFrame {
            session_id: p.session_id,
            update,
        })
    }
}

#[derive(Deserialize)]
struct Whole<'a> {
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, rename = "sessionId")]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    update: Scanned<'a>,
}

/// What one pass over the update object found, before its extent is resolved.
struct Scanned<'a> {
    /// The first key (borrowed from the input: it points at the key's text there).
    first_key: &'a str,
    /// The last value's raw text (it ends where the value ends in the input).
    last_value: &'a str,
    kind: Option<Cow<'a, str>>,
    tool_call_id: Option<Cow<'a, str>>,
    title: Option<Cow<'a, str>>,
    has_status: bool,
    meta: Option<&'a str>,
}

impl<'a> Scanned<'a> {
    /// The update's text in `input` (which the scan read): from the `{` before the first key
    /// to the `}` after the last value, with only whitespace between.
    fn resolve(self, input: &'a str) -> Option<UpdateParts<'a>> {
        let base = input.as_ptr() as usize;
        let key_at = (self.first_key.as_ptr() as usize).checked_sub(base)?;
        let value_end =
            (self.last_value.as_ptr() as usize).checked_sub(base)? + self.last_value.len();
        let bytes = input.as_bytes();
        // The key's opening quote, then whitespace, then the object's brace.
        let before = bytes.get(..key_at.checked_sub(1)?)?;
        let open = before.iter().rposition(|b| !b.is_ascii_whitespace())?;
        let after = bytes.get(value_end..)?;
        let close = value_end + after.iter().position(|b| !b.is_ascii_whitespace())?;
        if bytes[open] != b'{' || bytes[close] != b'}' || bytes[key_at - 1] != b'"' {
            return None;
        }
        Some(UpdateParts {
            raw: input.get(open..=close)?,
            kind: self.kind?,
            tool_call_id: self.tool_call_id,
            title: self.title,
            has_status: self.has_status,
            meta: self.meta,
        })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Scanned<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ScanVisitor(std::marker::PhantomData))
    }
}

struct ScanVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ScanVisitor<'a> {
    type Value = Scanned<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a session update object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scanned<'a>, A::Error> {
        use serde::de::Error;
        // Keys must borrow from the input (no escapes): their position is what locates the
        // update. An escaped key fails the parse and the caller takes the general path.
        let Some(first_key) = map.next_key::<&'de str>()? else {
            return Err(A::Error::custom("an empty update"));
        };
        let mut s = Scanned {
            first_key,
            last_value: "",
            kind: None,
            tool_call_id: None,
            title: None,
            has_status: false,
            meta: None,
        };
        let mut key = Some(first_key);
        while let Some(k) = key {
            let value: &'de RawValue = map.next_value()?;
            let text = value.get();
            let string =
                || serde_json::from_str::<Option<Cow<'de, str>>>(text).map_err(A::Error::custom);
            match k {
                "sessionUpdate" => s.kind = string()?,
                "toolCallId" => s.tool_call_id = string()?,
                "title" => s.title = string()?,
                "status" => s.has_status = string()?.is_some(),
                "_meta" => s.meta = Some(text),
                _ => {}
            }
            s.last_value = text;
            key = map.next_key::<&'de str>()?;
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_update_text_is_exactly_the_object_in_the_frame() {
        let text = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update": { "_meta":{"claudeCode":{"parentToolUseId":"t0"}},"toolCallId":"t1","sessionUpdate":"tool_call","title":"Read","status":"pending","rawInput":{"a":[1,{"b":"}"}]} } }}"#;
        let f = UpdateFrame::parse(text).expect("parsed");
        assert_eq!(f.session_id, "s1");
        let u = &f.update;
        assert_eq!(
            u.raw,
            r#"{ "_meta":{"claudeCode":{"parentToolUseId":"t0"}},"toolCallId":"t1","sessionUpdate":"tool_call","title":"Read","status":"pending","rawInput":{"a":[1,{"b":"}"}]} }"#
        );
        assert_eq!(u.kind, "tool_call");
        assert_eq!(u.tool_call_id.as_deref(), Some("t1"));
        assert_eq!(u.title.as_deref(), Some("Read"));
        assert!(u.has_status);
        assert_eq!(u.meta, Some(r#"{"claudeCode":{"parentToolUseId":"t0"}}"#));
        let v: serde_json::Value = serde_json::from_str(u.raw).expect("the text is JSON");
        assert_eq!(v["rawInput"]["a"][1]["b"], "}");
    }

    #[test]
    fn agrees_with_a_full_parse_on_params() {
        let params = r#"{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"h\u00e9 \"x\""},"status":null},"sessionId":"s\"2"}"#;
        let f = UpdateFrame::parse_params(params).expect("parsed");
        assert_eq!(f.session_id, "s\"2");
        assert_eq!(f.update.kind, "agent_message_chunk");
        assert!(!f.update.has_status, "a null status is no status");
        let full: serde_json::Value = serde_json::from_str(params).expect("json");
        let ours: serde_json::Value = serde_json::from_str(f.update.raw).expect("json");
        assert_eq!(ours, full["update"]);
    }

    #[test]
    fn unusual_updates_are_left_to_the_general_path() {
        for text in [
            r#"{"method":"session/update","params":{"sessionId":"s","update":{}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"\u0073essionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"content":1}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":7}}}"#,
            r#"{"method":"session/other","params":{"sessionId":"s","update":{"sessionUpdate":"x"}}}"#,
            r#"{"method":"session/update","params":{"sessionId":"s","update":[1]}}"#,
        ] {
            assert!(UpdateFrame::parse(text).is_none(), "{text}");
        }
    }
}
