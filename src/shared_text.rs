//! JSON text the engine hands to the store's thread: cut from a shared buffer (no allocation
//! per text) or an owned string. Always valid UTF-8.

use std::fmt;
use std::ops::Deref;

use bytes::{Bytes, BytesMut};

/// Immutable UTF-8 text behind a reference-counted [`Bytes`]: cloning it, or taking it from
/// a frame that holds it, copies nothing.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SharedText(Bytes);

impl SharedText {
    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor takes its bytes from a `&str` or a `String`, and the
        // bytes behind a `Bytes` never change.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }
}

/// Copies texts into shared buffers of [`TextArena::CHUNK`] bytes, handing each out as a
/// [`SharedText`]: one allocation per buffer instead of one per text. A buffer is freed when
/// the last text in it is dropped; the texts' reader (the store) drops them in order, so no
/// more than one partly used buffer outlives the texts still waiting.
#[derive(Debug, Default)]
pub struct TextArena {
    buf: BytesMut,
}

impl TextArena {
    pub const CHUNK: usize = 256 * 1024;

    pub fn share(&mut self, text: &str) -> SharedText {
        if self.buf.capacity() < text.len() {
            // A new buffer; the old one lives on in the texts cut from it.
            self.buf = BytesMut::with_capacity(Self::CHUNK.max(text.len()));
        }
        self.buf.extend_from_slice(text.as_bytes());
        SharedText(self.buf.split().freeze())
    }
}

impl From<String> for SharedText {
    fn from(s: String) -> SharedText {
        SharedText(Bytes::from(s))
    }
}

impl From<&str> for SharedText {
    fn from(s: &str) -> SharedText {
        SharedText(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl Deref for SharedText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SharedText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_share_a_buffer_until_it_is_full() {
        let mut arena = TextArena::default();
        let a = arena.share("{\"a\":\"é\"}");
        let b = arena.share("");
        let c = arena.share("[1,2]");
        assert_eq!(
            (a.as_str(), b.as_str(), c.as_str()),
            ("{\"a\":\"é\"}", "", "[1,2]")
        );
        // Cut from the same allocation, one after the other.
        assert_eq!(c.as_ptr() as usize, a.as_ptr() as usize + a.len());
        let big = "x".repeat(TextArena::CHUNK + 1);
        let d = arena.share(&big);
        assert_eq!(d.as_str(), big);
        let e = arena.share("{}");
        assert_eq!(e.as_str(), "{}");
        assert_ne!(
            e.as_ptr() as usize,
            c.as_ptr() as usize + c.len(),
            "a new buffer"
        );
        drop((a, b, c, d));
        assert_eq!(SharedText::from(String::from("ü")).as_str(), "ü");
        assert_eq!(SharedText::from("[]").as_str(), "[]");
    }
}
