//! The part of reading an agent frame that needs none of the engine's state: the byte search
//! for the keys the router tests and, for the `session/update`s it will read, taking the
//! update apart. The relay runs it on its reader thread, beside the engine; the result is
//! handed over as offsets into the frame.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::keys::{self, Found, KeySet};
use super::line_body;
use super::sieve::Sieve;
use super::update_view::{UpdateFrame, UpdateParts};

/// What [`Scanner::scan`] found in one frame.
#[derive(Debug, Clone)]
pub struct AgentScan {
    pub(crate) found: Found,
    pub(crate) update: Pre,
}

impl AgentScan {
    /// Whether the frame holds none of the keys.
    pub fn is_plain(&self) -> bool {
        self.found.is_empty()
    }

    /// A frame that holds none of the keys.
    pub(crate) fn plain() -> AgentScan {
        AgentScan::found(Found::default())
    }

    /// What the key search found, the update left to the engine.
    pub(crate) fn found(found: Found) -> AgentScan {
        AgentScan {
            found,
            update: Pre::NotTried,
        }
    }
}

/// A line of a run of frames that holds one of the keys, and what the scanner found in it.
#[derive(Debug, Clone)]
pub struct ScannedLine {
    /// `start..end` in the run, terminator included.
    pub start: usize,
    pub end: usize,
    pub scan: AgentScan,
}

/// What [`Scanner::scan_run`] found in a run of frames: every line with a key, in order. A
/// line not listed holds none.
#[derive(Debug, Clone)]
pub struct RunScan {
    pub lines: Vec<ScannedLine>,
    /// The keys searched for (the engine uses the result only if they are still its own).
    key_set: KeySet,
}

impl RunScan {
    pub(crate) fn searched_for(&self, key_set: &KeySet) -> bool {
        self.key_set.same_as(key_set)
    }
}

/// The frame's `session/update`, if the scanner took it apart.
#[derive(Debug, Clone)]
pub(crate) enum Pre {
    /// Not tried: the engine decides (most frames pass without it).
    NotTried,
    /// Not a plain `session/update` (the general path reads it).
    Refused,
    Parsed(UpdateSpans),
}

/// Frames with one of these keys are taken apart ahead: the engine reads every one of them.
/// (Updates of tool calls are read only when they name a known id: left to the engine.)
const READ_AHEAD: u16 = keys::kind::NEW_TOOL_CALL
    | keys::kind::PARENT
    | keys::kind::SUBAGENT
    | keys::kind::SESSION_MESSAGE
    | keys::kind::SPAWN
    | keys::kind::END;

/// Scans agent frames for the keys an engine's presets test for; cheap to clone, `Send`.
#[derive(Debug, Clone)]
pub struct Scanner {
    key_set: KeySet,
    /// Whether the engine reads new tool calls now (see [`Scanner::reads_new_tool_calls`]);
    /// shared by the clones.
    new_tool_calls: Arc<AtomicBool>,
}

impl Scanner {
    pub fn new(key_set: KeySet) -> Scanner {
        Scanner {
            key_set,
            new_tool_calls: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Whether a new tool call that names no spawn, parent or child kind is taken apart ahead:
    /// the engine reads one only while a legacy child runs or a permission request waits
    /// (otherwise it passes on its bytes alone, and the walk would be wasted). A hint, set by
    /// the relay from [`Engine::reads_new_tool_calls`](crate::engine::Engine): a frame not
    /// taken apart ahead is read by the engine itself, so a late hint costs time, never a
    /// decision.
    pub fn reads_new_tool_calls(&self, yes: bool) {
        self.new_tool_calls.store(yes, Ordering::Relaxed);
    }

    /// The keys it searches for.
    pub fn key_set(&self) -> &KeySet {
        &self.key_set
    }

    /// `frame` is one line, terminator included.
    pub fn scan(&self, frame: &[u8]) -> AgentScan {
        self.read(frame, self.key_set.scan(frame))
    }

    /// Every line of `run` (whole lines) that holds a key, found in one pass over its bytes
    /// ([`Sieve`]), each scanned as [`Scanner::scan`] does.
    pub fn scan_run(&self, run: &[u8]) -> RunScan {
        let lines = Sieve::Keys(&self.key_set)
            .lines(run)
            .map(|h| {
                // No key starts before the hit: the line's keys are those from there on.
                let found = self.key_set.scan(&run[h.hit..h.end]);
                ScannedLine {
                    start: h.start,
                    end: h.end,
                    scan: self.read(&run[h.start..h.end], found),
                }
            })
            .collect();
        RunScan {
            lines,
            key_set: self.key_set.clone(),
        }
    }

    /// The rest of [`Scanner::scan`], given what the key search found in `frame`.
    fn read(&self, frame: &[u8], found: Found) -> AgentScan {
        let wanted = if self.new_tool_calls.load(Ordering::Relaxed) {
            READ_AHEAD
        } else {
            READ_AHEAD & !keys::kind::NEW_TOOL_CALL
        };
        let read_ahead = !found.has(keys::kind::ID)
            && found.has(wanted)
            && keys::has(&keys::SESSION_UPDATE, frame);
        let update = if read_ahead {
            let parsed = super::skip::utf8(line_body(frame))
                .and_then(|text| UpdateFrame::parse(text).map(|f| UpdateSpans::of(&f, text)));
            match parsed {
                Some(spans) => Pre::Parsed(spans),
                None => Pre::Refused,
            }
        } else {
            Pre::NotTried
        };
        AgentScan { found, update }
    }
}

/// A string of the update: where it is in the frame's text, or decoded (it had escapes).
#[derive(Debug, Clone)]
enum Text {
    At(Range<usize>),
    Decoded(String),
}

impl Text {
    fn of(s: Cow<'_, str>, base: &str) -> Text {
        match s {
            Cow::Borrowed(b) => Text::At(span(b, base)),
            Cow::Owned(o) => Text::Decoded(o),
        }
    }

    fn view<'a>(&'a self, base: &'a str) -> Option<Cow<'a, str>> {
        match self {
            Text::At(r) => base.get(r.clone()).map(Cow::Borrowed),
            Text::Decoded(s) => Some(Cow::Borrowed(s.as_str())),
        }
    }
}

/// Where `part` (a slice of `base`) lies in `base`.
fn span(part: &str, base: &str) -> Range<usize> {
    let start = (part.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize);
    start..start + part.len()
}

/// An [`UpdateFrame`] as offsets into the frame's text, to cross threads without a copy.
#[derive(Debug, Clone)]
pub(crate) struct UpdateSpans {
    session_id: Text,
    raw: Range<usize>,
    kind: Text,
    tool_call_id: Option<Text>,
    title: Option<Text>,
    has_status: bool,
    meta: Option<Range<usize>>,
}

impl UpdateSpans {
    fn of(f: &UpdateFrame<'_>, base: &str) -> UpdateSpans {
        let u = &f.update;
        UpdateSpans {
            session_id: Text::of(f.session_id.clone(), base),
            raw: span(u.raw, base),
            kind: Text::of(u.kind.clone(), base),
            tool_call_id: u.tool_call_id.clone().map(|t| Text::of(t, base)),
            title: u.title.clone().map(|t| Text::of(t, base)),
            has_status: u.has_status,
            meta: u.meta.map(|m| span(m, base)),
        }
    }

    /// The frame again, borrowed from `base` (the same text it was taken from); `None` if the
    /// offsets do not fit it.
    pub(crate) fn view<'a>(&'a self, base: &'a str) -> Option<UpdateFrame<'a>> {
        let opt = |t: &'a Option<Text>| match t {
            Some(t) => t.view(base).map(Some),
            None => Some(None),
        };
        Some(UpdateFrame {
            session_id: self.session_id.view(base)?,
            update: UpdateParts {
                raw: base.get(self.raw.clone())?,
                kind: self.kind.view(base)?,
                tool_call_id: opt(&self.tool_call_id)?,
                title: opt(&self.title)?,
                has_status: self.has_status,
                meta: match &self.meta {
                    Some(m) => Some(base.get(m.clone())?),
                    None => None,
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_give_back_the_same_frame() {
        let text = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u0031","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read \"a\"","status":"pending","_meta":{"claudeCode":{"parentToolUseId":"p"}}}}}"#;
        let f = UpdateFrame::parse(text).expect("parses");
        let spans = UpdateSpans::of(&f, text);
        let g = spans.view(text).expect("fits");
        assert_eq!(format!("{f:?}"), format!("{g:?}"));
        assert_eq!(g.session_id, "s1");
        assert_eq!(g.update.title.as_deref(), Some("Read \"a\""));
        assert!(
            spans.view("{}").is_none(),
            "offsets past another text are refused"
        );
    }
}
