//! The wire: newline-delimited JSON-RPC as bytes, and everything read from or written to it
//! without state. Frame bodies and line splitting (here), the borrowed [`envelope`], byte
//! scans for the keys the router tests ([`keys`]), a validating JSON skipper (`skip`), the
//! one-pass `session/update` reader ([`update_view`]) and agent request reader
//! ([`request_view`]), JSON pointers read off the text ([`pointer`]), whether a text is
//! serde_json's own compact writing of it ([`compact`]), the lines of a run of frames that
//! need reading at all ([`sieve`]), the state-free reading done ahead on the reader thread
//! ([`read_ahead`]) and the lines the proxy writes itself ([`write`](mod@write)).
//!
//! The bottom layer: nothing here imports another module of the crate.

#[cfg(test)]
mod captures;
pub mod compact;
pub mod envelope;
pub mod keys;
pub mod pointer;
pub mod read_ahead;
pub mod request_view;
pub mod sieve;
#[allow(unsafe_code)] // SSE2 and AVX2 intrinsics for the string scan
mod skip;
pub mod update_view;
pub mod write;

use serde_json::Value;

/// Strip the line terminator (`\n`, `\r\n`) from a frame's bytes.
pub fn line_body(raw: &[u8]) -> &[u8] {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw.strip_suffix(b"\r").unwrap_or(raw)
}

/// The lines of a chunk of frames (or any bytes), each with its terminator, as
/// `(start, end)` offsets; a last line without terminator is included as it is.
pub fn lines(chunk: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= chunk.len() {
            return None;
        }
        let start = pos;
        pos = memchr::memchr(b'\n', &chunk[start..]).map_or(chunk.len(), |i| start + i + 1);
        Some((start, pos))
    })
}

/// A frame parsed as a whole, for the few frames the proxy rewrites; `None` when it is not
/// JSON (the caller then forwards it as it is).
pub fn parse_value(frame: &[u8]) -> Option<Value> {
    serde_json::from_slice(line_body(frame)).ok()
}
