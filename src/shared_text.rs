//! JSON text that the engine hands to the store without copying it: a slice of the frame it
//! arrived in, or an owned string. Always valid UTF-8.

use std::fmt;
use std::ops::Deref;

use bytes::Bytes;

/// Immutable UTF-8 text behind a reference-counted [`Bytes`]: cloning it, or taking it from
/// a frame that holds it, copies nothing.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SharedText(Bytes);

impl SharedText {
    /// `text` as a slice of `frame` when it lies inside the frame's bytes (no copy), else a
    /// copy of it.
    pub fn within(frame: &Bytes, text: &str) -> SharedText {
        let base = frame.as_ptr() as usize;
        let at = text.as_ptr() as usize;
        let inside = at >= base && at + text.len() <= base + frame.len();
        if inside && !text.is_empty() {
            SharedText(frame.slice_ref(text.as_bytes()))
        } else {
            SharedText(Bytes::copy_from_slice(text.as_bytes()))
        }
    }

    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor takes its bytes from a `&str` or a `String`, and the
        // bytes behind a `Bytes` never change.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
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
    fn a_slice_of_the_frame_shares_its_bytes() {
        let frame = Bytes::from_static(br#"{"update":{"a":"\u00e9 x"}}"#);
        let text = std::str::from_utf8(&frame[10..frame.len() - 1]).expect("ascii");
        let shared = SharedText::within(&frame, text);
        assert_eq!(shared.as_str(), text);
        assert_eq!(shared.as_ptr(), text.as_ptr(), "no copy");
    }

    #[test]
    fn text_from_elsewhere_is_copied() {
        let frame = Bytes::from_static(b"{\"a\":1}");
        let other = String::from("{\"b\":\"é\"}");
        let shared = SharedText::within(&frame, &other);
        assert_eq!(&*shared, other.as_str());
        assert_ne!(shared.as_ptr(), other.as_ptr());
        assert_eq!(&*SharedText::within(&frame, ""), "");
        assert_eq!(SharedText::from(other.clone()).as_str(), other);
    }
}
