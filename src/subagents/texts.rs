//! A child's updates as the JSON text the proxy replays, appended into a few growing buffers
//! rather than one allocation per update: a child records an update for nearly every event
//! its agent sends, and each allocation and free was a measurable part of the relay's time.

/// First buffer of a child; each next one doubles, up to [`MAX_CHUNK`].
const FIRST_CHUNK: usize = 4 * 1024;
const MAX_CHUNK: usize = 64 * 1024;

/// Texts in order. A text longer than a buffer gets a buffer of its own size.
#[derive(Debug, Clone, Default)]
pub struct Texts {
    chunks: Vec<String>,
    /// Each text's (buffer, start, end).
    spans: Vec<(usize, usize, usize)>,
    bytes: usize,
}

impl Texts {
    pub fn push(&mut self, text: &str) {
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= text.len());
        if !fits {
            let next = self
                .chunks
                .last()
                .map_or(FIRST_CHUNK, |c| (c.capacity() * 2).min(MAX_CHUNK));
            self.chunks
                .push(String::with_capacity(next.max(text.len())));
        }
        let index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[index];
        let start = chunk.len();
        chunk.push_str(text);
        self.spans.push((index, start, chunk.len()));
        self.bytes += text.len();
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.spans
            .iter()
            .map(|&(chunk, start, end)| &self.chunks[chunk][start..end])
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Total length of the texts.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl<S: AsRef<str>> FromIterator<S> for Texts {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Texts {
        let mut texts = Texts::default();
        for t in iter {
            texts.push(t.as_ref());
        }
        texts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_come_back_in_order_across_buffers() {
        let sizes = [0, 1, 100, 4000, 200, 70_000, 5, 64 * 1024, 3, 9000];
        let want: Vec<String> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let c = char::from(b'a' + i as u8);
                std::iter::repeat_n(c, n).collect()
            })
            .collect();
        let mut texts = Texts::default();
        for w in &want {
            texts.push(w);
        }
        let got: Vec<&str> = texts.iter().collect();
        assert_eq!(got, want.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(texts.len(), want.len());
        assert_eq!(texts.bytes(), sizes.iter().sum::<usize>());
        // Small texts share buffers.
        assert!(texts.chunks.len() < want.len());
        let again: Texts = got.iter().collect();
        assert!(again.iter().eq(texts.iter()));
    }

    #[test]
    fn multibyte_text_keeps_its_boundaries() {
        let mut texts = Texts::default();
        for t in ["é", "{\"a\":\"ü\"}", "", "日本"] {
            texts.push(t);
        }
        assert_eq!(
            texts.iter().collect::<Vec<_>>(),
            ["é", "{\"a\":\"ü\"}", "", "日本"]
        );
    }
}
