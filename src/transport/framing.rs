//! Newline-delimited framing for JSON-RPC over stdio.
//!
//! A frame is one line *including* its terminator (`\n` or `\r\n`), so a frame the engine does
//! not change can be written out as the exact bytes that came in. Blank lines are frames too
//! (they are forwarded like anything else; the engine ignores them).
//!
//! Lines longer than the configured maximum are not buffered whole: once a line passes the limit
//! the decoder hands it out as [`Frame::Piece`]s that the relay forwards verbatim, so a huge line
//! reaches the other side intact while the proxy's memory stays bounded. A line over the limit
//! that arrived whole in one read is handed out as a single piece (first and last): it is not
//! inspected either.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// One unit handed out by [`LineCodec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, terminator included (a final line without one at EOF gets `\n` added).
    Line(Bytes),
    /// One or more complete lines, each with its terminator, from a [`LineCodec::batched`]
    /// decoder: every line that was complete in the buffer, handed out at once so the relay
    /// can forward untouched runs with one write. Split it with [`wire::lines`](crate::wire::lines).
    Lines(Bytes),
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
            Frame::Line(b) | Frame::Lines(b) | Frame::Piece { bytes: b, .. } => b,
        }
    }
}

/// Decoder for `\n`-delimited frames with a size limit that degrades to streaming pieces.
#[derive(Debug)]
pub struct LineCodec {
    max_frame: usize,
    /// Hand out every complete line in the buffer as one [`Frame::Lines`].
    batched: bool,
    /// Bytes of the buffer already searched for `\n`, so each byte is scanned once.
    scanned: usize,
    /// Inside an oversized line: everything up to its `\n` goes out as pieces.
    in_oversize: bool,
}

impl LineCodec {
    pub fn new(max_frame: usize) -> Self {
        LineCodec {
            max_frame: max_frame.max(1),
            batched: false,
            scanned: 0,
            in_oversize: false,
        }
    }

    /// A decoder that hands out all complete lines of a read at once ([`Frame::Lines`]);
    /// oversized lines still come as [`Frame::Piece`]s.
    pub fn batched(max_frame: usize) -> Self {
        LineCodec {
            batched: true,
            ..LineCodec::new(max_frame)
        }
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        // The decoder may move to another buffer with the reading (`agent_reader`): never
        // trust the scan mark past the bytes at hand.
        self.scanned = self.scanned.min(buf.len());
        if self.batched && !self.in_oversize {
            // Only the end of the last complete line matters: searched from the back.
            if let Some(pos) = memchr::memrchr(b'\n', &buf[self.scanned..]) {
                let end = self.scanned + pos + 1;
                self.scanned = 0;
                return Ok(Some(Frame::Lines(buf.split_to(end).freeze())));
            }
        } else if let Some(pos) = memchr(&buf[self.scanned..]) {
            let end = self.scanned + pos + 1;
            self.scanned = 0;
            let bytes = buf.split_to(end).freeze();
            if self.in_oversize || end > self.max_frame {
                // The end of an oversized line, or one that arrived whole: either way it is
                // passed on without being inspected.
                let first = !std::mem::take(&mut self.in_oversize);
                return Ok(Some(Frame::Piece {
                    bytes,
                    first,
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
    use crate::wire::{line_body, lines};

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

    /// Frames flattened to single lines, a line over `max` counted as oversized (as the relay
    /// does); pieces kept as they are.
    fn flatten(frames: &[Frame], max: usize) -> Vec<Frame> {
        let mut out = Vec::new();
        for f in frames {
            match f {
                Frame::Lines(chunk) => {
                    for (a, b) in lines(chunk) {
                        let bytes = chunk.slice(a..b);
                        out.push(if b - a > max {
                            Frame::Piece {
                                bytes,
                                first: true,
                                last: true,
                            }
                        } else {
                            Frame::Line(bytes)
                        });
                    }
                }
                other => out.push(other.clone()),
            }
        }
        out
    }

    #[test]
    fn batched_decoder_hands_out_the_same_lines_in_chunks() {
        let input: &[u8] =
            b"{\"a\":1}\n\r\n{\"b\":2}\r\n\nxxxxxxxxxxxxxxxxxxxxxxxxx\nlong line ahead\nlast";
        for chunk in [1, 3, 7, 16, 1000] {
            let single = decode_all(&mut LineCodec::new(12), input, chunk);
            let batched = decode_all(&mut LineCodec::batched(12), input, chunk);
            assert_eq!(flatten(&batched, 12), single, "read size {chunk}");
            if chunk == 1000 {
                assert!(matches!(batched.first(), Some(Frame::Lines(b)) if b.len() > 20));
            }
        }
    }

    #[test]
    fn lines_splits_at_terminators() {
        let got: Vec<(usize, usize)> = lines(b"ab\n\ncd").collect();
        assert_eq!(got, vec![(0, 3), (3, 4), (4, 6)]);
        assert_eq!(lines(b"").count(), 0);
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
