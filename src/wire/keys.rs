//! Byte tests that decide, before any JSON parse, whether a frame may matter. Searchers are
//! built once: building one costs more than searching a short frame.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use memchr::memmem::Finder;

pub static ID_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"id\""));
pub static TOOL_CALL: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"tool_call"));
pub static SUBAGENT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"subagent"));
pub static SESSION_MESSAGE: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"session_message"));
pub static SESSION_UPDATE: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"\"session/update\""));
pub static SUBAGENT_INFO: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"subagent_session_info"));
pub static TOOL_CALL_ID_KEY: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"\"toolCallId\""));
pub static METHOD_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"method\""));
pub static PERMISSION_METHOD: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"\"session/request_permission\""));
static RESULT_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"result\""));
static ERROR_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"error\""));

/// Whether `hay` contains what `f` looks for.
pub fn has(f: &LazyLock<Finder<'static>>, hay: &[u8]) -> bool {
    f.find(hay).is_some()
}

/// Whether `hay` may be a JSON-RPC response: a response has a `result` or an `error` key and
/// no `method`. A request names its method among its first members, so the walk of those
/// usually tells (an agent's permission request carries kilobytes after them); else two
/// searches at memory speed instead of a parse of the whole frame.
pub fn may_be_response(hay: &[u8]) -> bool {
    if super::envelope::method_first(hay) == Some(true) {
        return false;
    }
    has(&RESULT_KEY, hay) || has(&ERROR_KEY, hay)
}

/// Whether `hay` surely has no `method` member: neither `"method"` nor a backslash (a key
/// written with escapes) occurs in it. A client's answer to the agent usually has neither.
pub fn names_no_method(hay: &[u8]) -> bool {
    !has(&METHOD_KEY, hay) && memchr::memchr(b'\\', hay).is_none()
}

/// Kinds of key an agent frame is searched for, as bits of [`Found`].
pub mod kind {
    /// `"id"`: maybe a request or a response.
    pub const ID: u16 = 1;
    /// `"tool_call…`: a tool call or an update of one.
    pub const TOOL_CALL: u16 = 1 << 1;
    /// `"tool_call"` itself, as a new tool call's kind is written: a frame without it
    /// announces no tool call (an update names `"tool_call_update"`).
    pub const NEW_TOOL_CALL: u16 = 1 << 7;
    /// `subagent…`: a standard subagent update kind or Zed's meta.
    pub const SUBAGENT: u16 = 1 << 2;
    /// `session_message`: a message between sessions.
    pub const SESSION_MESSAGE: u16 = 1 << 3;
    /// A preset's parent-reference key (`"parentToolUseId"`, …).
    pub const PARENT: u16 = 1 << 5;
    /// A preset's spawn marker (tool name, title, input key).
    pub const SPAWN: u16 = 1 << 6;
    /// A preset's end marker: the frame may end a background child (Qwen's later notice).
    pub const END: u16 = 1 << 8;
    /// A preset's sibling marker: maybe a call beside a spawn carrying a child's work.
    pub const SIBLING: u16 = 1 << 9;
    /// `"toolCallId"`: the frame names a tool call.
    pub const TOOL_CALL_ID: u16 = 1 << 10;
    /// `"toolCallId"` more than once: its first is not surely the update's own.
    pub const TOOL_CALL_IDS: u16 = 1 << 11;
}

/// What one pass over a frame found: the [`kind`] bits of every key that occurs in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found(u16);

impl Found {
    pub const fn new(kinds: u16) -> Found {
        Found(kinds)
    }

    pub fn has(self, kinds: u16) -> bool {
        self.0 & kinds != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

const TOOL_CALL_PREFIX: &str = "\"tool_call";
const TOOL_CALL_ID: &str = "\"toolCallId\"";

/// Every string the engine's byte tests look for, found in one pass over the frame (Teddy,
/// a SIMD multi-pattern search, where the CPU has it), however many presets there are, instead
/// of one search per pattern.
///
/// The search reports the longest match at each position and resumes one byte later, so a
/// pattern hidden inside another's match is still found when it starts elsewhere; one that is
/// part of another (`"subagent` in `"subagent_type"`) gives its kind to the longer one.
#[derive(Debug, Clone)]
pub struct KeySet {
    searcher: Searcher,
    /// The kinds of each pattern, by pattern index.
    kinds: Vec<u16>,
    /// Index of the `"tool_call` pattern: a match followed by `"` is a new tool call's kind
    /// ([`kind::NEW_TOOL_CALL`]), told apart without a pattern of its own.
    tool_call: Option<usize>,
    /// Shared by the clones of one set: what was found with a clone holds for the original.
    origin: Arc<()>,
}

#[derive(Debug, Clone)]
enum Searcher {
    Packed(aho_corasick::packed::Searcher),
    /// For CPUs without the SIMD instructions Teddy needs.
    Automaton(aho_corasick::AhoCorasick),
}

impl KeySet {
    /// The fixed keys plus the presets' parent keys, spawn, end and sibling markers (each
    /// quoted as it appears in JSON: `"parentToolUseId"`).
    pub fn new<S: AsRef<str>>(
        parent_markers: &[S],
        spawn_markers: &[S],
        end_markers: &[S],
        sibling_markers: &[S],
    ) -> KeySet {
        let mut patterns: BTreeMap<String, u16> = BTreeMap::new();
        let mut add = |p: &str, k: u16| *patterns.entry(p.to_owned()).or_default() |= k;
        add("\"id\"", kind::ID);
        add(TOOL_CALL_PREFIX, kind::TOOL_CALL);
        add(TOOL_CALL_ID, kind::TOOL_CALL_ID);
        add("subagent", kind::SUBAGENT);
        add("session_message", kind::SESSION_MESSAGE);
        for m in parent_markers {
            add(m.as_ref(), kind::PARENT);
        }
        for m in spawn_markers {
            add(m.as_ref(), kind::SPAWN);
        }
        for m in end_markers {
            add(m.as_ref(), kind::END);
        }
        for m in sibling_markers {
            add(m.as_ref(), kind::SIBLING);
        }
        patterns.retain(|p, _| !p.is_empty());
        let texts: Vec<String> = patterns.keys().cloned().collect();
        let kinds: Vec<u16> = texts
            .iter()
            .map(|p| {
                patterns
                    .iter()
                    .filter(|(q, _)| p.contains(q.as_str()))
                    .fold(0, |acc, (_, k)| acc | k)
            })
            .collect();
        let mut packed = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostLongest)
            .builder();
        packed.extend(&texts);
        let searcher = match packed.build() {
            Some(p) => Searcher::Packed(p),
            None => Searcher::Automaton(
                aho_corasick::AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                    .build(&texts)
                    .expect("a few short literal patterns always build"),
            ),
        };
        let tool_call = texts.iter().position(|t| t == TOOL_CALL_PREFIX);
        KeySet {
            searcher,
            kinds,
            tool_call,
            origin: Arc::new(()),
        }
    }

    /// Whether `other` is this set or a clone of it (the same patterns).
    pub fn same_as(&self, other: &KeySet) -> bool {
        Arc::ptr_eq(&self.origin, &other.origin)
    }

    /// Where the first key in `hay` starts, if any: over a run of frames, the frames before
    /// the one this falls in hold none.
    pub fn find(&self, hay: &[u8]) -> Option<usize> {
        let span = aho_corasick::Span::from(0..hay.len());
        let m = match &self.searcher {
            Searcher::Packed(p) => p.find_in(hay, span),
            Searcher::Automaton(a) => a.find(aho_corasick::Input::new(hay)),
        };
        m.map(|m| m.start())
    }

    /// The kinds of string present in `hay`.
    pub fn scan(&self, hay: &[u8]) -> Found {
        let mut found = 0;
        let mut at = 0;
        while at < hay.len() {
            let span = aho_corasick::Span::from(at..hay.len());
            let m = match &self.searcher {
                Searcher::Packed(p) => p.find_in(hay, span),
                Searcher::Automaton(a) => a.find(aho_corasick::Input::new(hay).span(span)),
            };
            let Some(m) = m else {
                break;
            };
            let pattern = m.pattern().as_usize();
            let kinds = self.kinds[pattern];
            if kinds & found & kind::TOOL_CALL_ID != 0 {
                // Counted once per match: a pattern that holds `"toolCallId"` and a match of
                // it starting later may count one twice, which only costs a search.
                found |= kind::TOOL_CALL_IDS;
            }
            found |= kinds;
            if Some(pattern) == self.tool_call && hay.get(m.end()) == Some(&b'"') {
                found |= kind::NEW_TOOL_CALL;
            }
            at = m.start() + 1;
        }
        Found(found)
    }
}

/// The string after `"key"`: `: "value"`, for a value without escapes.
pub fn string_after_key(rest: &str) -> Option<&str> {
    let value = string_after_key_bytes(rest.as_bytes())?;
    // The value lies between two quotes, so it starts and ends on character boundaries.
    std::str::from_utf8(value).ok()
}

/// [`string_after_key`] over raw bytes: the value's bytes, without escapes.
pub fn string_after_key_bytes(rest: &[u8]) -> Option<&[u8]> {
    let rest = rest.trim_ascii_start().strip_prefix(b":")?;
    let rest = rest.trim_ascii_start().strip_prefix(b"\"")?;
    let end = memchr::memchr(b'"', rest)?;
    let value = &rest[..end];
    memchr::memchr(b'\\', value).is_none().then_some(value)
}

/// The first `"toolCallId"` value in a raw frame, as [`tool_call_ids`] reads it; `None` when
/// there is none.
pub fn first_tool_call_id(raw: &[u8]) -> Option<Option<&str>> {
    tool_call_ids(raw).next()
}

/// Every `"toolCallId"` value in a raw frame, in order: `Some(id)`, or `None` for one that
/// cannot be read without a parse (escaped, cut off, not UTF-8).
pub fn tool_call_ids(raw: &[u8]) -> impl Iterator<Item = Option<&str>> + '_ {
    let key_len = b"\"toolCallId\"".len();
    let mut rest = raw;
    std::iter::from_fn(move || {
        let pos = TOOL_CALL_ID_KEY.find(rest)?;
        rest = &rest[pos + key_len..];
        // A value is short: look at a bounded window, not the rest of the frame.
        let window = &rest[..rest.len().min(512)];
        Some(string_after_key_bytes(window).and_then(|v| std::str::from_utf8(v).ok()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_no_response_whatever_its_params_hold() {
        let long = "x\\n".repeat(2000);
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{{"result":"{long}","error":1}}}}"#
        );
        assert!(!may_be_response(request.as_bytes()));
        // The method after the long member: the first bytes cannot tell, the searches do.
        let late = format!(r#"{{"params":{{"text":"{long}","result":1}},"id":2,"method":"m"}}"#);
        assert!(may_be_response(late.as_bytes()));
        for response in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"method":"x"}}"#,
            r#"{"id":1,"error":{"code":1},"method":null}"#,
            r#"{"m\u0065thod":"x","id":1,"result":{}}"#,
            r#"{"id":1,"result":{}, broken"#,
        ] {
            assert!(may_be_response(response.as_bytes()), "{response}");
        }
        assert!(!may_be_response(br#"{"id":1,"method":"x","params":{}}"#));
        assert!(!may_be_response(br#"{"id":1,"params":{}}"#));
    }

    #[test]
    fn a_frame_names_no_method_only_when_no_key_can_be_method() {
        assert!(names_no_method(
            br#"{"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"selected"}}}"#
        ));
        assert!(names_no_method(b"not json"));
        for frame in [
            r#"{"id":1,"method":"x"}"#,
            r#"{"id":1, "method" :"x"}"#,
            r#"{"id":1,"m\u0065thod":"x"}"#,
            r#"{"id":1,"result":{"text":"a\nb"}}"#,
        ] {
            assert!(!names_no_method(frame.as_bytes()), "{frame}");
        }
    }

    #[test]
    fn the_key_search_tells_one_tool_call_id_from_several() {
        let s = KeySet::new::<&str>(&[], &[], &[], &[]);
        let one = s.scan(
            br#"{"sessionUpdate":"tool_call_update","toolCallId":"a","content":"{\"toolCallId\":1}"}"#,
        );
        assert!(one.has(kind::TOOL_CALL_ID) && !one.has(kind::TOOL_CALL_IDS));
        assert_eq!(
            first_tool_call_id(br#"{"toolCallId":"a","x":1}"#),
            Some(Some("a"))
        );
        let two = s.scan(br#"{"toolCallId":"a","rawOutput":{"toolCallId":"b"}}"#);
        assert!(two.has(kind::TOOL_CALL_IDS));
        let none = s.scan(br#"{"sessionUpdate":"tool_call_update"}"#);
        assert!(!none.has(kind::TOOL_CALL_ID));
        assert_eq!(first_tool_call_id(b"{}"), None);
    }

    #[test]
    fn tool_call_ids_are_read_in_order() {
        let frame = br#"{"toolCallId":"a","x":{"toolCallId":"b\"c"},"toolCallId": "d"}"#;
        let ids: Vec<Option<&str>> = tool_call_ids(frame).collect();
        assert_eq!(ids, [Some("a"), None, Some("d")]);
        assert_eq!(tool_call_ids(b"{}").count(), 0);
    }

    #[test]
    fn one_pass_finds_every_kind_even_when_keys_overlap() {
        let s = KeySet::new(
            &["\"parentToolUseId\""],
            &["\"subagent_type\"", "\"Task\""],
            &["\"background_task_"],
            &["\"subagent:"],
        );
        assert!(s.scan(b"{\"text\":\"hello\"}").is_empty());
        let f = s.scan(br#"{"id":1,"x":{"subagent_type":"a"}}"#);
        assert!(f.has(kind::ID) && f.has(kind::SPAWN) && f.has(kind::SUBAGENT));
        assert!(!f.has(kind::TOOL_CALL | kind::PARENT | kind::END));
        let f = s.scan(br#"{"update":{"_meta":{"source":"background_task_completed"}}}"#);
        assert!(f.has(kind::END) && !f.has(kind::SPAWN | kind::PARENT | kind::SIBLING));
        assert!(!s
            .scan(br#"{"_meta":{"source":"background_notification"}}"#)
            .has(kind::END));
        let f = s.scan(br#"{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","_meta":{"parentToolUseId":"t"}}}}"#);
        assert!(f.has(kind::TOOL_CALL) && f.has(kind::PARENT));
        assert!(!f.has(kind::ID | kind::SPAWN | kind::NEW_TOOL_CALL));
        let f = s.scan(
            br#"{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call"}}}"#,
        );
        assert!(f.has(kind::TOOL_CALL) && f.has(kind::NEW_TOOL_CALL) && !f.has(kind::ID));
        // The quote after `"tool_call` decides; a frame cut right after it says nothing.
        assert!(!s
            .scan(br#"{"a":"x","b":"tool_call"#)
            .has(kind::NEW_TOOL_CALL));
        assert!(s
            .scan(br#"["tool_call_update","tool_call"]"#)
            .has(kind::NEW_TOOL_CALL));
        // A sibling marker, which holds a fixed key: both kinds.
        let f = s.scan(br#"{"toolCallId":"subagent:alpha:1"}"#);
        assert!(f.has(kind::SIBLING) && f.has(kind::SUBAGENT) && !f.has(kind::SPAWN | kind::END));
        assert!(!s.scan(br#"{"toolCallId":"call_1"}"#).has(kind::SIBLING));
        // A pattern inside a longer match elsewhere is still found.
        let f = s.scan(br#"{"a":"xsubagent_typesession_message"}"#);
        assert!(f.has(kind::SUBAGENT) && f.has(kind::SESSION_MESSAGE));
    }
}
