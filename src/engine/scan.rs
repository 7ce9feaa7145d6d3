//! Byte tests that decide, before any JSON parse, whether a frame may matter. Searchers are
//! built once: building one costs more than searching a short frame.

use std::sync::LazyLock;

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

/// Whether `hay` contains what `f` looks for.
pub fn has(f: &LazyLock<Finder<'static>>, hay: &[u8]) -> bool {
    f.find(hay).is_some()
}

/// Searchers for a set of owned needles (built once per detector).
#[derive(Debug, Clone)]
pub struct Needles(Vec<Finder<'static>>);

impl Needles {
    pub fn new<S: AsRef<[u8]>>(needles: &[S]) -> Needles {
        Needles(
            needles
                .iter()
                .map(|n| Finder::new(n.as_ref()).into_owned())
                .collect(),
        )
    }

    pub fn any_in(&self, hay: &[u8]) -> bool {
        self.0.iter().any(|f| f.find(hay).is_some())
    }
}
