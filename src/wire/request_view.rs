//! The parts of an agent's request the router reads (a permission request, an elicitation),
//! taken apart in one pass over its bytes with the validating walker (`wire::skip`).
//!
//! A permission request carries a whole tool call, often kilobytes of text dense with escapes,
//! which serde_json's skipping stops at one by one. Anything unusual (an escaped key, a
//! repeated field, a value of another type than expected, invalid JSON) gives `None`, and the
//! caller reads the frame with serde_json as before: the same answer, only slower.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::envelope::{self, Parsed};
use super::skip::{skip_ws, value_end};
use super::update_view::{members, nullable_string_at, only_whitespace_after};

/// A request's method and the fields of its `params` the router reads, borrowed from the frame.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RequestView<'a> {
    pub method: Option<Cow<'a, str>>,
    /// `None` when the request has no `params` object (or `null`).
    pub params: Option<RequestParams<'a>>,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct RequestParams<'a> {
    pub session_id: Option<Cow<'a, str>>,
    /// The exact JSON text of `toolCall`, if any.
    pub tool_call: Option<&'a str>,
    /// `toolCall`'s id and whether it has a string `title`, when `toolCall` is an object whose
    /// `toolCallId` is a string or absent.
    pub head: Option<ToolCallHead<'a>>,
    /// A session-scoped elicitation's tool call.
    pub tool_call_id: Option<Cow<'a, str>>,
    pub mode: Option<Cow<'a, str>>,
    pub url: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct ToolCallHead<'a> {
    pub tool_call_id: Option<Cow<'a, str>>,
    pub titled: bool,
}

impl<'a> RequestView<'a> {
    /// Read a frame's line body: with the walk, else with serde_json. `None`: not a request
    /// object these fields can be read from (serde_json refuses it).
    pub fn read(body: &'a [u8]) -> Option<RequestView<'a>> {
        super::skip::utf8(body)
            .and_then(RequestView::walk)
            .or_else(|| RequestView::by_serde(body))
    }

    /// A frame read once: its envelope ([`envelope::parse`]) and, taken in the same pass, the
    /// view [`RequestView::read`] would give of it, when the walk could read it (`params`
    /// absent, `null` or an object of the usual shape). `None` for the view: read it apart
    /// with [`RequestView::read`] if it is needed.
    pub fn read_message(raw: &'a [u8]) -> (Parsed<'a>, Option<RequestView<'a>>) {
        let mut read = None;
        let (parsed, walked) = envelope::parse_with(raw, |text, at| {
            let (params, end) = read_params(text, at)?;
            read = Some(params);
            Some(end)
        });
        let view = match &parsed {
            // The walk read `params` as an object, or met none (or `null`).
            Parsed::Message(env) if walked && (read.is_some() || env.params.is_none()) => {
                Some(RequestView {
                    method: env.method.clone(),
                    params: read,
                })
            }
            _ => None,
        };
        (parsed, view)
    }

    /// The one-pass walk; `None` for anything unusual.
    fn walk(text: &'a str) -> Option<RequestView<'a>> {
        let mut view = RequestView::default();
        let (mut method_seen, mut params_seen) = (false, false);
        let end = members(text, skip_ws(text.as_bytes(), 0), |key, at| {
            match key.plain()? {
                "method" if !method_seen => {
                    method_seen = true;
                    let (method, end) = nullable_string_at(text, at)?;
                    view.method = method;
                    Some(end)
                }
                "params" if !params_seen => {
                    params_seen = true;
                    if text.as_bytes().get(at) == Some(&b'n') {
                        return value_end(text.as_bytes(), at, 1);
                    }
                    let (params, end) = read_params(text, at)?;
                    view.params = Some(params);
                    Some(end)
                }
                // A repeated field: a derived struct refuses it.
                "method" | "params" => None,
                _ => value_end(text.as_bytes(), at, 1),
            }
        })?;
        only_whitespace_after(text, end).then_some(view)
    }

    /// The same fields read by serde_json's derived structs.
    fn by_serde(body: &'a [u8]) -> Option<RequestView<'a>> {
        #[derive(Deserialize)]
        struct Request<'a> {
            #[serde(borrow, default)]
            method: Option<Cow<'a, str>>,
            #[serde(borrow, default)]
            params: Option<Params<'a>>,
        }
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow, rename = "sessionId", default)]
            session_id: Option<Cow<'a, str>>,
            #[serde(borrow, rename = "toolCall", default)]
            tool_call: Option<&'a RawValue>,
            #[serde(borrow, rename = "toolCallId", default)]
            tool_call_id: Option<Cow<'a, str>>,
            #[serde(borrow, default)]
            mode: Option<Cow<'a, str>>,
            #[serde(borrow, default)]
            url: Option<Cow<'a, str>>,
        }
        #[derive(Deserialize)]
        struct Head<'a> {
            #[serde(borrow, rename = "toolCallId", default)]
            tool_call_id: Option<Cow<'a, str>>,
            #[serde(borrow, default)]
            title: Option<&'a RawValue>,
        }
        let req: Request<'_> = serde_json::from_slice(body).ok()?;
        Some(RequestView {
            method: req.method,
            params: req.params.map(|p| {
                let raw = p.tool_call.map(RawValue::get);
                RequestParams {
                    session_id: p.session_id,
                    tool_call: raw,
                    head: raw
                        .and_then(|t| serde_json::from_str::<Head<'_>>(t).ok())
                        .map(|h| ToolCallHead {
                            tool_call_id: h.tool_call_id,
                            titled: h.title.is_some_and(|t| t.get().starts_with('"')),
                        }),
                    tool_call_id: p.tool_call_id,
                    mode: p.mode,
                    url: p.url,
                }
            }),
        })
    }
}

fn read_params(text: &str, at: usize) -> Option<(RequestParams<'_>, usize)> {
    let mut p = RequestParams::default();
    let mut seen = [false; 5];
    let end = members(text, at, |key, at| {
        let (slot, field) = match key.plain()? {
            "sessionId" => (0, &mut p.session_id),
            "toolCallId" => (1, &mut p.tool_call_id),
            "mode" => (2, &mut p.mode),
            "url" => (3, &mut p.url),
            "toolCall" => {
                if std::mem::replace(&mut seen[4], true) {
                    return None;
                }
                if text.as_bytes().get(at) == Some(&b'n') {
                    return value_end(text.as_bytes(), at, 2);
                }
                let end = if text.as_bytes().get(at) == Some(&b'{') {
                    let (head, end) = read_head(text, at)?;
                    p.head = Some(head);
                    end
                } else {
                    value_end(text.as_bytes(), at, 2)?
                };
                p.tool_call = Some(text.get(at..end)?);
                return Some(end);
            }
            _ => return value_end(text.as_bytes(), at, 2),
        };
        if std::mem::replace(&mut seen[slot], true) {
            return None;
        }
        let (value, end) = nullable_string_at(text, at)?;
        *field = value;
        Some(end)
    })?;
    Some((p, end))
}

/// The `toolCall` object at `at` (inside `params`): its id and whether its title is a string,
/// and the index after it.
fn read_head(text: &str, at: usize) -> Option<(ToolCallHead<'_>, usize)> {
    let mut head = ToolCallHead::default();
    let (mut id_seen, mut title_seen) = (false, false);
    let end = members(text, at, |key, at| match key.plain()? {
        "toolCallId" if !id_seen => {
            id_seen = true;
            let (id, end) = nullable_string_at(text, at)?;
            head.tool_call_id = id;
            Some(end)
        }
        "title" if !title_seen => {
            title_seen = true;
            head.titled = text.as_bytes().get(at) == Some(&b'"');
            value_end(text.as_bytes(), at, 3)
        }
        "toolCallId" | "title" => None,
        _ => value_end(text.as_bytes(), at, 3),
    })?;
    Some((head, end))
}

#[cfg(test)]
mod tests;
