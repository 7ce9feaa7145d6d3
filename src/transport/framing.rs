//! Newline-delimited framing for JSON-RPC over stdio.
//!
//! A frame is one line *including* its terminator (`\n` or `\r\n`), so a frame the engine does
//! not change can be written out as the exact bytes that came in. Blank lines are frames too
//! (they are forwarded like anything else; the engine ignores them).
//!
//! Lines longer than the configured maximum are not buffered whole: once a line passes the limit
//! the decoder hands it out as [`Frame::Piece`]s that the relay forwards verbatim, so a huge line
//! reaches the other side intact while the proxy's memory stays bounded.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// One unit handed out by [`LineCodec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, terminator included (a final line without one at EOF gets `\n` added).
    Line(Bytes),
    /// A part of a line longer than the maximum frame size. `first` marks the piece that starts
    /// the line, `last` the one that ends it (it then includes the terminator).
    Piece {
        bytes: Bytes,
        first: bool,
        last: bool,
    },
}

impl Frame {
    /// The bytes to write to the other side.
    pub fn bytes(&self) -> &Bytes {
        match self {
            Frame::Line(b) | Frame::Piece { bytes: b, .. } => b,
        }
    }
}

/// Strip the line terminator (`\n`, `\r\n`) from a frame's bytes.
pub fn line_body(raw: &[u8]) -> &[u8] {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw.strip_suffix(b"\r").unwrap_or(raw)
}

/// Decoder for `\n`-delimited frames with a size limit that degrades to streaming pieces.
#[derive(Debug)]
pub struct LineCodec {
    max_frame: usize,
    /// Bytes of the buffer already searched for `\n`, so each byte is scanned once.
    scanned: usize,
    /// Inside an oversized line: everything up to its `\n` goes out as pieces.
    in_oversize: bool,
}

impl LineCodec {
    pub fn new(max_frame: usize) -> Self {
        LineCodec {
            max_frame: max_frame.max(1),
            scanned: 0,
            in_oversize: false,
        }
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(pos) = memchr(&buf[self.scanned..]) {
            let end = self.scanned + pos + 1;
            self.scanned = 0;
            let bytes = buf.split_to(end).freeze();
            if self.in_oversize {
                self.in_oversize = false;
                return Ok(Some(Frame::Piece {
                    bytes,
                    first: false,
                    last: true,
                }));
            }
            return Ok(Some(Frame::Line(bytes)));
        }
        self.scanned = buf.len();
        if self.in_oversize && !buf.is_empty() {
            self.scanned = 0;
            let bytes = buf.split().freeze();
            return Ok(Some(Frame::Piece {
                bytes,
                first: false,
                last: false,
            }));
        }
        if buf.len() > self.max_frame {
            self.scanned = 0;
            self.in_oversize = true;
            let bytes = buf.split().freeze();
            return Ok(Some(Frame::Piece {
                bytes,
                first: true,
                last: false,
            }));
        }
        Ok(None)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if buf.is_empty() {
            if self.in_oversize {
                // The oversized line ended without a terminator: close it so the peer's
                // framing does not glue it to whatever comes next.
                self.in_oversize = false;
                return Ok(Some(Frame::Piece {
                    bytes: Bytes::from_static(b"\n"),
                    first: false,
                    last: true,
                }));
            }
            return Ok(None);
        }
        // A last line without terminator: complete it so the peer sees a whole frame.
        self.scanned = 0;
        let mut line = buf.split();
        line.extend_from_slice(b"\n");
        if std::mem::take(&mut self.in_oversize) {
            return Ok(Some(Frame::Piece {
                bytes: line.freeze(),
                first: false,
                last: true,
            }));
        }
        Ok(Some(Frame::Line(line.freeze())))
    }
}

fn memchr(hay: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', hay)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(codec: &mut LineCodec, input: &[u8], chunk: usize) -> Vec<Frame> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for part in input.chunks(chunk.max(1)) {
            buf.extend_from_slice(part);
            while let Some(f) = codec.decode(&mut buf).expect("decode") {
                out.push(f);
            }
        }
        while let Some(f) = codec.decode_eof(&mut buf).expect("eof") {
            out.push(f);
        }
        out
    }

    #[test]
    fn splits_lines_keeping_terminators() {
        let mut c = LineCodec::new(1024);
        let frames = decode_all(&mut c, b"{\"a\":1}\n\r\n{\"b\":2}\r\n\nlast", 3);
        let lines: Vec<&[u8]> = frames.iter().map(|f| f.bytes().as_ref()).collect();
        assert_eq!(
            lines,
            vec![
                &b"{\"a\":1}\n"[..],
                b"\r\n",
                b"{\"b\":2}\r\n",
                b"\n",
                b"last\n"
            ]
        );
        assert_eq!(line_body(b"{\"b\":2}\r\n"), b"{\"b\":2}");
    }

    #[test]
    fn oversized_line_streams_as_pieces_and_recovers() {
        let mut c = LineCodec::new(10);
        let mut input = vec![b'x'; 95];
        input.extend_from_slice(b"\nok\n");
        let frames = decode_all(&mut c, &input, 7);
        let joined: Vec<u8> = frames.iter().flat_map(|f| f.bytes().to_vec()).collect();
        assert_eq!(joined, input);
        assert!(matches!(
            frames.first(),
            Some(Frame::Piece { first: true, .. })
        ));
        assert_eq!(
            frames.last(),
            Some(&Frame::Line(Bytes::from_static(b"ok\n")))
        );
        let last_piece = frames
            .iter()
            .filter(|f| matches!(f, Frame::Piece { last: true, .. }));
        assert_eq!(last_piece.count(), 1);
        for f in &frames {
            if let Frame::Piece { bytes, .. } = f {
                assert!(bytes.len() <= 17, "pieces stay bounded");
            }
        }
    }

    #[test]
    fn oversized_line_without_terminator_is_closed_at_eof() {
        let mut c = LineCodec::new(4);
        let frames = decode_all(&mut c, b"abcdefghij", 100);
        let joined: Vec<u8> = frames.iter().flat_map(|f| f.bytes().to_vec()).collect();
        assert_eq!(joined, b"abcdefghij\n");
        assert!(matches!(
            frames.last(),
            Some(Frame::Piece { last: true, .. })
        ));
    }
}
