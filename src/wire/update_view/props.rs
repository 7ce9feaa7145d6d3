//! Property tests of the one-pass walk against the serde_json reading it replaced
//! ([`super::oracle`]), on generated frames written with random key order, whitespace and
//! escape forms, and on those frames cut short or mangled.

use proptest::prelude::*;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::{oracle, UpdateFrame};
use crate::wire::skip::tests::{json_value, tricky_char};

/// A JSON document as it will be written: object members in order, keys possibly repeated.
#[derive(Debug, Clone)]
enum Node {
    Leaf(Value),
    Object {
        members: Vec<(String, Node)>,
        /// Whether keys may be written with escapes that were not needed.
        escape_keys: bool,
    },
}

fn object(members: Vec<(String, Node)>, escape_keys: bool) -> Node {
    Node::Object {
        members,
        escape_keys,
    }
}

/// Writes a document, drawing whitespace and the form of each escape from a seed.
struct Writer {
    state: u64,
    out: String,
}

impl Writer {
    fn new(seed: u64) -> Self {
        Writer {
            state: seed,
            out: String::new(),
        }
    }

    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn ws(&mut self) {
        let ws = match self.next() % 10 {
            0 => " ",
            1 => "\n  ",
            2 => "\t\r\n ",
            _ => "",
        };
        self.out.push_str(ws);
    }

    fn string(&mut self, s: &str, escape_freely: bool) {
        self.out.push('"');
        for c in s.chars() {
            let roll = self.next() % 16;
            match c {
                '"' if roll < 12 => self.out.push_str("\\\""),
                '\\' if roll < 12 => self.out.push_str("\\\\"),
                '\n' if roll < 12 => self.out.push_str("\\n"),
                '\t' if roll < 12 => self.out.push_str("\\t"),
                '/' if escape_freely && roll < 4 => self.out.push_str("\\/"),
                '"' | '\\' | '\u{0}'..='\u{1f}' => self.unicode_escape(c),
                _ if escape_freely && roll == 0 => self.unicode_escape(c),
                _ => self.out.push(c),
            }
        }
        self.out.push('"');
    }

    /// `c` as `\uXXXX` (a surrogate pair beyond the BMP), hex in either case.
    fn unicode_escape(&mut self, c: char) {
        let upper = self.next().is_multiple_of(2);
        let mut units = [0; 2];
        for unit in c.encode_utf16(&mut units) {
            if upper {
                self.out.push_str(&format!("\\u{unit:04X}"));
            } else {
                self.out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }

    fn value(&mut self, v: &Value) {
        self.ws();
        match v {
            Value::String(s) => self.string(s, true),
            Value::Array(items) => {
                self.out.push('[');
                self.ws();
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        self.out.push(',');
                    }
                    self.value(item);
                }
                self.out.push(']');
            }
            Value::Object(map) => {
                let members: Vec<_> = map.iter().collect();
                self.members(
                    members.iter().map(|(k, v)| (k.as_str(), *v)),
                    true,
                    |w, v| w.value(v),
                );
            }
            other => self.out.push_str(&other.to_string()),
        }
        self.ws();
    }

    fn node(&mut self, n: &Node) {
        match n {
            Node::Leaf(v) => self.value(v),
            Node::Object {
                members,
                escape_keys,
            } => {
                self.ws();
                let members = members.iter().map(|(k, v)| (k.as_str(), v));
                self.members(members, *escape_keys, |w, n| w.node(n));
                self.ws();
            }
        }
    }

    fn members<'v, T: 'v>(
        &mut self,
        members: impl Iterator<Item = (&'v str, &'v T)>,
        escape_keys: bool,
        mut write: impl FnMut(&mut Self, &T),
    ) {
        self.out.push('{');
        self.ws();
        for (k, (key, value)) in members.enumerate() {
            if k > 0 {
                self.out.push(',');
                self.ws();
            }
            self.string(key, escape_keys);
            self.ws();
            self.out.push(':');
            write(self, value);
        }
        self.out.push('}');
    }
}

fn write(n: &Node, seed: u64) -> String {
    let mut w = Writer::new(seed);
    w.node(n);
    w.out
}

fn tricky_string() -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_char(), 0..30).prop_map(String::from_iter)
}

/// A value for one of the string fields: mostly a string, sometimes null or something else.
fn string_field(wild: bool) -> BoxedStrategy<Option<Value>> {
    let string = tricky_string().prop_map(|s| Some(Value::String(s)));
    if wild {
        prop_oneof![
            24 => string,
            3 => Just(None),
            3 => Just(Some(Value::Null)),
            1 => json_value().prop_map(Some),
        ]
        .boxed()
    } else {
        prop_oneof![3 => string, 1 => Just(None), 1 => Just(Some(Value::Null))].boxed()
    }
}

/// Keys for extra members: usual ones, the fields read (a repeat when `wild`), or anything.
fn extra_key(wild: bool) -> BoxedStrategy<String> {
    let usual = prop::sample::select(vec!["content", "rawInput", "locations", "kind", "x"])
        .prop_map(str::to_owned);
    if wild {
        let fields = prop::sample::select(vec![
            "sessionUpdate",
            "toolCallId",
            "title",
            "status",
            "_meta",
            "sessionId",
            "update",
            "method",
            "params",
        ])
        .prop_map(str::to_owned);
        prop_oneof![12 => usual, 1 => fields, 1 => tricky_string()].boxed()
    } else {
        usual.boxed()
    }
}

fn extras(wild: bool, most: usize) -> impl Strategy<Value = Vec<(String, Node)>> {
    prop::collection::vec(
        (extra_key(wild), json_value().prop_map(Node::Leaf)),
        0..=most,
    )
}

/// When `wild`, the fields the walk reads once more (the last of them counts), with values
/// that keep the update readable: a string or null.
fn repeats(wild: bool) -> impl Strategy<Value = Vec<(String, Node)>> {
    let field = prop::sample::select(vec!["sessionUpdate", "toolCallId", "title", "status"]);
    let value = prop_oneof![tricky_string().prop_map(Value::String), Just(Value::Null),];
    let repeat = (field, value).prop_map(|(k, v)| (k.to_owned(), Node::Leaf(v)));
    prop::collection::vec(repeat, 0..=if wild { 3 } else { 0 })
}

/// A member list from named optional values plus extras, in random order.
fn shuffled(
    named: Vec<(&'static str, Option<Node>)>,
    extra: Vec<(String, Node)>,
) -> impl Strategy<Value = Vec<(String, Node)>> {
    let mut members: Vec<(String, Node)> = named
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v?)))
        .collect();
    members.extend(extra);
    Just(members).prop_shuffle()
}

/// An update object. When not `wild`, one the walk must take apart: `sessionUpdate` is a
/// string, the other fields strings or null, no key repeated or escaped.
fn update(wild: bool) -> impl Strategy<Value = Node> {
    let kind = if wild {
        string_field(true)
    } else {
        tricky_string().prop_map(|s| Some(Value::String(s))).boxed()
    };
    let meta = prop::option::weighted(0.5, json_value());
    (
        kind,
        string_field(wild),
        string_field(wild),
        string_field(wild),
        meta,
        (extras(wild, 4), repeats(wild)),
        prop::bool::weighted(0.1),
    )
        .prop_flat_map(move |(kind, tool, title, status, meta, extra, escape)| {
            let leaf = |v: Option<Value>| v.map(Node::Leaf);
            let extra = [extra.0, extra.1].concat();
            shuffled(
                vec![
                    ("sessionUpdate", leaf(kind)),
                    ("toolCallId", leaf(tool)),
                    ("title", leaf(title)),
                    ("status", leaf(status)),
                    ("_meta", leaf(meta)),
                ],
                extra,
            )
            .prop_map(move |members| object(members, wild && escape))
        })
}

/// A `params` object; keys at this level may be written with any escapes.
fn params(wild: bool) -> impl Strategy<Value = Node> {
    let session = if wild {
        string_field(true)
    } else {
        tricky_string().prop_map(|s| Some(Value::String(s))).boxed()
    };
    let update = if wild {
        prop_oneof![
            30 => update(true).prop_map(Some),
            1 => Just(None),
            1 => json_value().prop_map(|v| Some(Node::Leaf(v))),
        ]
        .boxed()
    } else {
        update(false).prop_map(Some).boxed()
    };
    (session, update, extras(wild, 2)).prop_flat_map(|(session, update, extra)| {
        shuffled(
            vec![("sessionId", session.map(Node::Leaf)), ("update", update)],
            extra,
        )
        .prop_map(|members| object(members, true))
    })
}

/// A whole frame.
fn frame(wild: bool) -> impl Strategy<Value = Node> {
    let method = if wild {
        prop_oneof![
            30 => Just(Some(Value::from("session/update"))),
            1 => Just(Some(Value::from("session/updates"))),
            1 => Just(None),
            1 => json_value().prop_map(Some),
        ]
        .boxed()
    } else {
        Just(Some(Value::from("session/update"))).boxed()
    };
    (method, params(wild), extras(wild, 2)).prop_flat_map(|(method, params, extra)| {
        let named = vec![
            ("jsonrpc", Some(Node::Leaf(Value::from("2.0")))),
            ("method", method.map(Node::Leaf)),
            ("params", Some(params)),
        ];
        shuffled(named, extra).prop_map(|members| object(members, true))
    })
}

/// Both readings found the same thing (or both nothing).
fn assert_same(ours: &Option<UpdateFrame<'_>>, theirs: &Option<UpdateFrame<'_>>, text: &str) {
    match (ours, theirs) {
        (None, None) => {}
        (Some(a), Some(b)) => {
            assert_eq!(a.session_id, b.session_id, "{text}");
            let (a, b) = (&a.update, &b.update);
            assert_eq!(a.raw, b.raw, "{text}");
            assert_eq!(a.raw.as_ptr(), b.raw.as_ptr(), "the same span: {text}");
            assert_eq!(a.kind, b.kind, "{text}");
            assert_eq!(a.tool_call_id, b.tool_call_id, "{text}");
            assert_eq!(a.title, b.title, "{text}");
            assert_eq!(a.has_status, b.has_status, "{text}");
            assert_eq!(a.meta, b.meta, "{text}");
        }
        (Some(_), None) => panic!("only the walk took it apart: {text}"),
        (None, Some(_)) => assert!(positional(text), "only serde_json took it apart: {text}"),
    }
}

/// A frame or params written as an array: a derived struct reads those by position, the walk
/// (like JSON-RPC's named params) wants objects.
fn positional(text: &str) -> bool {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(_)) => true,
        Ok(v) => v.get("params").is_some_and(Value::is_array),
        Err(_) => false,
    }
}

/// Errors of a full parse about values that a skip of them does not check.
fn only_a_skip_accepts(e: &serde_json::Error) -> bool {
    let message = e.to_string();
    ["number out of range", "surrogate", "end of hex escape"]
        .iter()
        .any(|m| message.contains(m))
}

fn params_text(frame: &Node, seed: u64) -> Option<String> {
    let Node::Object { members, .. } = frame else {
        return None;
    };
    let (_, params) = members.iter().find(|(k, _)| k == "params")?;
    Some(write(params, seed))
}

/// Cut `text` short or change a few characters (kept a `&str`, as the caller hands it over).
fn mutate(text: &str, edits: &[(prop::sample::Index, u8, char)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for (at, how, c) in edits {
        let i = at.index(chars.len() + 1);
        match how {
            0 => chars.truncate(i),
            1 => chars.insert(i, *c),
            2 if i < chars.len() => {
                chars.remove(i);
            }
            _ if i < chars.len() => chars[i] = *c,
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn edits() -> impl Strategy<Value = Vec<(prop::sample::Index, u8, char)>> {
    let c = prop::sample::select(
        "\"\\{}[],: \n0-.eEnulltr\u{1}xé/"
            .chars()
            .collect::<Vec<_>>(),
    );
    prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, c), 0..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Frames the walk must take apart: it does, with the fields they were built with, and
    /// agrees with serde_json on every field and on the update's span.
    #[test]
    fn well_formed_frames_are_taken_apart(root in frame(false), seed in any::<u64>()) {
        let text = write(&root, seed);
        let ours = UpdateFrame::parse(&text);
        let Some(f) = &ours else {
            panic!("not taken apart: {text}");
        };
        let full: Value = serde_json::from_str(&text).expect("the frame is JSON");
        let update = &full["params"]["update"];
        prop_assert_eq!(&*f.session_id, full["params"]["sessionId"].as_str().unwrap_or("?"));
        prop_assert_eq!(Some(&*f.update.kind), update["sessionUpdate"].as_str());
        prop_assert_eq!(f.update.tool_call_id.as_deref(), update["toolCallId"].as_str());
        prop_assert_eq!(f.update.title.as_deref(), update["title"].as_str());
        prop_assert_eq!(f.update.has_status, update["status"].is_string());
        let meta = f.update.meta.map(|m| serde_json::from_str::<Value>(m).expect("json"));
        prop_assert_eq!(meta.as_ref(), update.get("_meta"));
        let raw: Value = serde_json::from_str(f.update.raw).expect("the update is JSON");
        prop_assert_eq!(&raw, update);
        assert_same(&ours, &oracle::parse(&text), &text);

        let params = params_text(&root, seed).expect("params");
        assert_same(&UpdateFrame::parse_params(&params), &oracle::parse_params(&params), &params);
        prop_assert!(UpdateFrame::parse_params(&params).is_some());
    }

    /// Any generated frame (odd types, repeated and escaped keys, missing fields): the walk
    /// and serde_json agree, on the frame and on its params.
    #[test]
    fn any_frame_is_read_as_serde_json_reads_it(root in frame(true), seed in any::<u64>()) {
        let text = write(&root, seed);
        assert_same(&UpdateFrame::parse(&text), &oracle::parse(&text), &text);
        if let Some(params) = params_text(&root, seed) {
            assert_same(&UpdateFrame::parse_params(&params), &oracle::parse_params(&params), &params);
        }
    }

    /// Cut short or mangled: never a panic, nothing taken apart that is not JSON, and still
    /// the same reading as serde_json's.
    #[test]
    fn mangled_frames_are_refused_unless_json(
        root in frame(true),
        seed in any::<u64>(),
        edits in edits(),
        whole in any::<bool>(),
        junk in prop::sample::select(vec!["", "", "", " \n\t\r", " x", ",", "}", "{}", "\"\""]),
    ) {
        let text = if whole { write(&root, seed) } else { params_text(&root, seed).unwrap_or_default() };
        let text = mutate(&text, &edits) + junk;
        let ours = if whole { UpdateFrame::parse(&text) } else { UpdateFrame::parse_params(&text) };
        if serde_json::from_str::<IgnoredAny>(&text).is_err() {
            prop_assert!(ours.is_none(), "not JSON, yet taken apart: {}", text);
        }
        if let Err(e) = serde_json::from_str::<Value>(&text) {
            prop_assert!(ours.is_none() || only_a_skip_accepts(&e), "{}: {}", e, text);
        }
        let theirs = if whole { oracle::parse(&text) } else { oracle::parse_params(&text) };
        assert_same(&ours, &theirs, &text);
    }
}
