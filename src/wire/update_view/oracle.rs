//! The serde_json reading of a `session/update` that the one-pass walk replaced, kept as the
//! oracle the walk is tested against: a derived struct for the frame and its params, and a
//! visitor that reads every value of the update as a borrowed `RawValue`.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{UpdateFrame, UpdateParts};

/// [`UpdateFrame::parse`] as serde_json did it.
pub(super) fn parse<'a>(text: &'a str) -> Option<UpdateFrame<'a>> {
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

/// [`UpdateFrame::parse_params`] as serde_json did it.
pub(super) fn parse_params<'a>(params: &'a str) -> Option<UpdateFrame<'a>> {
    let p: Params<'a> = serde_json::from_str(params).ok()?;
    let update = p.update.resolve(params)?;
    Some(UpdateFrame {
        session_id: p.session_id,
        update,
    })
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
