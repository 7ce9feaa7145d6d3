//! A one-pass JSON walker over bytes: where a string or any value ends, validated on the way,
//! with no allocation and nothing built.
//!
//! Child events carry long strings dense with escapes (`\n`, `\"`, `\u00e9`). A byte-wise
//! skipper stops and restarts at every one of them. Here a string is scanned 64 bytes at a time
//! (SSE2 on x86_64): masks of the block's backslashes, quotes and control bytes; which bytes
//! are escaped, from bit arithmetic on the backslash mask; the string's end, as the first quote
//! not escaped. Escapes are checked with one more mask for the common ones (`\"`, `\\`, `\n`,
//! `\t`) and one by one for the rest, so an escape never restarts the scan. Where the CPU has
//! AVX2 (checked once, at run time), each block takes two 32-byte lanes instead of four
//! 16-byte ones: half the instructions per byte of a long string.
//!
//! Acceptance follows serde_json's when it skips a value: `\u` escapes need four hex digits
//! but are not checked for surrogate pairing, and the bytes are not checked for UTF-8 (callers
//! walk a `&str`).

/// The deepest nesting of arrays and objects accepted, counting the containers the walk starts
/// in: the most `serde_json::Value` accepts, so anything walked here would also parse there.
pub(super) const MAX_DEPTH: usize = 127;

/// The first index at or after `i` that is not JSON whitespace.
#[inline]
pub(super) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The index of the quote closing the string whose contents start at `start` (just after its
/// opening quote). `None` if the string is unterminated, holds a control byte, or has an
/// invalid escape.
#[inline]
pub(super) fn string_end(b: &[u8], start: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(end) = sse2::short_string_end(b, start) {
        return Some(end);
    }
    #[cfg(target_arch = "x86_64")]
    let start = match block_scan(b, start) {
        sse2::Stop::Quote(at) => return Some(at),
        sse2::Stop::Invalid => return None,
        sse2::Stop::Tail(at) => at,
    };
    scalar_string_end(b, start)
}

/// `bytes` as text, if they are UTF-8 (what `std::str::from_utf8` accepts). A frame is nearly
/// always ASCII: with AVX2 that is told 128 bytes at a time, several times faster than the
/// validation (a permission request's kilobytes were 5 % of a Zed-mode round trip); anything
/// else is validated by std.
pub(super) fn utf8(bytes: &[u8]) -> Option<&str> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the CPU has AVX2, the one feature `avx2::is_ascii` is compiled for.
        let ascii = avx2::available() && unsafe { avx2::is_ascii(bytes) };
        if ascii {
            // SAFETY: ASCII bytes are valid UTF-8.
            return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
    }
    std::str::from_utf8(bytes).ok()
}

/// The block scan of a string's contents from `p`: AVX2 where the CPU has it, else SSE2.
/// Kept out of line, so that [`string_end`]'s short path stays small where it is inlined.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn block_scan(b: &[u8], p: usize) -> sse2::Stop {
    if avx2::available() {
        // SAFETY: the CPU has AVX2, the one feature `avx2::scan` is compiled for.
        unsafe { avx2::scan(b, p) }
    } else {
        sse2::scan(b, p)
    }
}

/// [`string_end`] a byte at a time: the whole scan off x86_64, the tail shorter than a block
/// on it.
fn scalar_string_end(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        match *b.get(i)? {
            b'"' => return Some(i),
            b'\\' => i = escape_end(b, i)?,
            0..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// The index just after the escape whose backslash is at `at`, if it is a valid one.
#[inline]
fn escape_end(b: &[u8], at: usize) -> Option<usize> {
    match *b.get(at + 1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(at + 2),
        b'u' => {
            let hex = b.get(at + 2..at + 6)?;
            hex.iter().all(u8::is_ascii_hexdigit).then_some(at + 6)
        }
        _ => None,
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    use super::escaped_in_block;

    const BLOCK: usize = 64;
    const LANE: usize = 16;

    /// Where the block scan stopped.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) enum Stop {
        /// At the closing quote.
        Quote(usize),
        /// At a control byte or an invalid escape.
        Invalid,
        /// Less than a block from the end: the rest is for the scalar scan, from here.
        Tail(usize),
    }

    /// Scan whole blocks from `p`. Each block gives a mask of its backslashes and one of its
    /// quotes and control bytes; the bytes escaped by a backslash come from bit arithmetic on
    /// the backslash mask (runs of backslashes included, carried from block to block), so the
    /// string stops at the first quote or control byte not escaped, and only the escaped bytes
    /// before it need checking.
    #[inline(never)]
    pub(super) fn scan(b: &[u8], mut p: usize) -> Stop {
        // 1 when the previous block ended in a backslash that escapes this block's first byte.
        let mut carry = 0;
        while let Some(block) = block_at(b, p) {
            let (backslash, quote_or_control) = masks(block);
            let escaped = escaped_in_block(backslash, &mut carry);
            // An escaped control byte is no stop, but an invalid escape below.
            let stop = quote_or_control & !escaped;
            // The escaped bytes before the stop (all of them if the string goes on).
            let escaped = escaped & stop.wrapping_sub(1) & !stop;
            if escaped != 0 && !escapes_valid(b, p, escaped & !common_escapes(block)) {
                return Stop::Invalid;
            }
            if stop != 0 {
                let k = stop.trailing_zeros() as usize;
                return match block[k] {
                    b'"' => Stop::Quote(p + k),
                    _ => Stop::Invalid,
                };
            }
            p += BLOCK;
        }
        // An escape cut by the end of the last block is read again whole, from its backslash.
        Stop::Tail(p - carry as usize)
    }

    /// Most strings (keys, ids, kinds) are short and plain: the closing quote, if it is the
    /// first quote, backslash or control byte of the next 16 bytes.
    #[inline(always)]
    pub(super) fn short_string_end(b: &[u8], p: usize) -> Option<usize> {
        let lane: &[u8; LANE] = b.get(p..p.checked_add(LANE)?)?.try_into().ok()?;
        // SAFETY: as in `masks`; the load reads the 16 bytes of `lane`.
        let (quote, special) = unsafe {
            let v = _mm_loadu_si128(lane.as_ptr().cast());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            let special = _mm_or_si128(_mm_or_si128(quote, backslash), control);
            (_mm_movemask_epi8(quote), _mm_movemask_epi8(special))
        };
        let first = special & special.wrapping_neg();
        (quote & first != 0).then(|| p + first.trailing_zeros() as usize)
    }

    /// Whether the bytes marked in `rare` (escaped by a backslash, and none of the common
    /// `\"`, `\\`, `\n`, `\t`, which a mask of the block clears) make valid escapes: each is
    /// checked on its own.
    #[inline(always)]
    pub(super) fn escapes_valid(b: &[u8], p: usize, mut rare: u64) -> bool {
        while rare != 0 {
            // The escaped byte is at `p + k`, its backslash just before.
            let backslash = p + rare.trailing_zeros() as usize - 1;
            if super::escape_end(b, backslash).is_none() {
                return false;
            }
            rare &= rare - 1;
        }
        true
    }

    /// Bit `k` says whether byte `k` of the block is `"`, `\`, `n` or `t`: what follows a
    /// backslash in most escapes.
    #[inline(always)]
    fn common_escapes(block: &[u8; BLOCK]) -> u64 {
        let mut mask = 0;
        for lane in 0..BLOCK / LANE {
            let offset = lane * LANE;
            // SAFETY: as in `masks`.
            let bits = unsafe {
                let v = _mm_loadu_si128(block.as_ptr().add(offset).cast());
                let is = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
                let quotes = _mm_or_si128(is(b'"'), is(b'\\'));
                _mm_movemask_epi8(_mm_or_si128(quotes, _mm_or_si128(is(b'n'), is(b't'))))
            };
            mask |= u64::from(bits as u16) << offset;
        }
        mask
    }

    /// The `BLOCK` bytes at `p`, if the slice holds that many.
    #[inline(always)]
    fn block_at(b: &[u8], p: usize) -> Option<&[u8; BLOCK]> {
        b.get(p..p.checked_add(BLOCK)?)?.try_into().ok()
    }

    /// Bit `k` of the first mask says whether byte `k` of the block is a backslash, of the
    /// second whether it is a quote or below 0x20.
    #[inline(always)]
    fn masks(block: &[u8; BLOCK]) -> (u64, u64) {
        let (mut backslash, mut quote_or_control) = (0, 0);
        for lane in 0..BLOCK / LANE {
            let offset = lane * LANE;
            // SAFETY: SSE2 is part of the x86_64 baseline, so its intrinsics always exist; the
            // unaligned load reads bytes `offset..offset + 16` of the block, and
            // `offset + 16 <= BLOCK`.
            let (s, qc) = unsafe {
                let v = _mm_loadu_si128(block.as_ptr().add(offset).cast());
                let s = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                let q = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                // Unsigned `v <= 0x1f`: min(v, 0x1f) == v.
                let c = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
                (_mm_movemask_epi8(s), _mm_movemask_epi8(_mm_or_si128(q, c)))
            };
            backslash |= u64::from(s as u16) << offset;
            quote_or_control |= u64::from(qc as u16) << offset;
        }
        (backslash, quote_or_control)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };

    use super::escaped_in_block;
    use super::sse2::{escapes_valid, Stop};

    const BLOCK: usize = 64;
    const LANE: usize = 32;

    /// Whether the CPU has AVX2 (std detects it once and keeps the answer).
    #[inline(always)]
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
    }

    /// Whether every byte is ASCII (below 0x80): the high bits of four lanes at a time, or'd.
    #[target_feature(enable = "avx2")]
    pub(super) fn is_ascii(bytes: &[u8]) -> bool {
        let mut chunks = bytes.chunks_exact(4 * LANE);
        for chunk in &mut chunks {
            let p = chunk.as_ptr();
            // SAFETY: the four unaligned loads read the chunk's 128 bytes, 32 at a time.
            let (a, b, c, d) = unsafe {
                (
                    _mm256_loadu_si256(p.cast()),
                    _mm256_loadu_si256(p.add(LANE).cast()),
                    _mm256_loadu_si256(p.add(2 * LANE).cast()),
                    _mm256_loadu_si256(p.add(3 * LANE).cast()),
                )
            };
            let high = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
            if _mm256_movemask_epi8(high) != 0 {
                return false;
            }
        }
        chunks.remainder().is_ascii()
    }

    /// `sse2::scan` with 32-byte lanes: the same masks, the same stops.
    #[target_feature(enable = "avx2")]
    pub(super) fn scan(b: &[u8], mut p: usize) -> Stop {
        let mut carry = 0;
        while let Some(block) = block_at(b, p) {
            let lanes = [load(block, 0), load(block, LANE)];
            let (backslash, quote_or_control) = masks(&lanes);
            let escaped = escaped_in_block(backslash, &mut carry);
            let stop = quote_or_control & !escaped;
            let escaped = escaped & stop.wrapping_sub(1) & !stop;
            if escaped != 0 && !escapes_valid(b, p, escaped & !common_escapes(&lanes)) {
                return Stop::Invalid;
            }
            if stop != 0 {
                let k = stop.trailing_zeros() as usize;
                return match block[k] {
                    b'"' => Stop::Quote(p + k),
                    _ => Stop::Invalid,
                };
            }
            p += BLOCK;
        }
        Stop::Tail(p - carry as usize)
    }

    #[inline(always)]
    fn block_at(b: &[u8], p: usize) -> Option<&[u8; BLOCK]> {
        b.get(p..p.checked_add(BLOCK)?)?.try_into().ok()
    }

    /// The 32 bytes of `block` at `offset`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn load(block: &[u8; BLOCK], offset: usize) -> __m256i {
        assert!(offset + LANE <= BLOCK);
        // SAFETY: the unaligned load reads bytes `offset..offset + 32` of the block, in bounds
        // (checked above; the check folds away at each call's constant offset).
        unsafe { _mm256_loadu_si256(block.as_ptr().add(offset).cast()) }
    }

    /// As `sse2::masks`: the block's backslashes, and its quotes and control bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn masks(lanes: &[__m256i; 2]) -> (u64, u64) {
        let (mut backslash, mut quote_or_control) = (0, 0);
        for (i, &v) in lanes.iter().enumerate() {
            let s = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
            let q = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
            // Unsigned `v <= 0x1f`: min(v, 0x1f) == v.
            let c = _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(0x1f)), v);
            let shift = i * LANE;
            backslash |= u64::from(_mm256_movemask_epi8(s) as u32) << shift;
            quote_or_control |=
                u64::from(_mm256_movemask_epi8(_mm256_or_si256(q, c)) as u32) << shift;
        }
        (backslash, quote_or_control)
    }

    /// As `sse2::common_escapes`: bytes that are `"`, `\`, `n` or `t`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn common_escapes(lanes: &[__m256i; 2]) -> u64 {
        let mut mask = 0;
        for (i, &v) in lanes.iter().enumerate() {
            let quote = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
            let backslash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
            let n = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'n' as i8));
            let t = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b't' as i8));
            let common = _mm256_or_si256(_mm256_or_si256(quote, backslash), _mm256_or_si256(n, t));
            mask |= u64::from(_mm256_movemask_epi8(common) as u32) << (i * LANE);
        }
        mask
    }
}

/// Of a block's bytes, those escaped by a backslash, given the mask of its backslashes: the
/// byte after a run of backslashes of odd length, and every second backslash of a run.
/// `carry` is 1 when the block's first byte is escaped by the previous block, and is set for
/// the next block. (The subtraction trick of simdjson's stage 1: subtracting a run's start
/// bits from its shifted bits ripples through the run, and the odd-bit mask turns that into
/// parity, all without a loop over the run.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn escaped_in_block(backslash: u64, carry: &mut u64) -> u64 {
    const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;
    // A backslash that is itself escaped starts nothing.
    let starts = backslash & !*carry;
    let code = ((starts << 1 | ODD_BITS).wrapping_sub(starts)) ^ ODD_BITS;
    let escaped = code ^ (backslash | *carry);
    *carry = (code & backslash) >> 63;
    escaped
}

/// The index just after the JSON value starting at `i` (its first byte, not whitespace).
/// `enclosing` is how many arrays and objects are already open around it; more than
/// [`MAX_DEPTH`] in all gives `None`, like any invalid JSON. Iterative: one bit per open
/// container says whether it is an object.
pub(super) fn value_end(b: &[u8], mut i: usize, enclosing: usize) -> Option<usize> {
    let room = MAX_DEPTH.checked_sub(enclosing)?;
    // Bit 0 is the innermost open container: 1 for an object, 0 for an array.
    let mut objects: u128 = 0;
    let mut depth = 0;
    loop {
        // `i` is at the start of a value.
        let opened = match *b.get(i)? {
            b'{' => Some(true),
            b'[' => Some(false),
            b'"' => {
                i = string_end(b, i + 1)? + 1;
                None
            }
            b't' => {
                i = literal_end(b, i, b"true")?;
                None
            }
            b'f' => {
                i = literal_end(b, i, b"false")?;
                None
            }
            b'n' => {
                i = literal_end(b, i, b"null")?;
                None
            }
            b'-' | b'0'..=b'9' => {
                i = number_end(b, i)?;
                None
            }
            _ => return None,
        };
        if let Some(object) = opened {
            if depth == room {
                return None;
            }
            depth += 1;
            objects = objects << 1 | u128::from(object);
            i = skip_ws(b, i + 1);
            let close = if object { b'}' } else { b']' };
            if b.get(i) != Some(&close) {
                i = if object { member_value(b, i)? } else { i };
                continue;
            }
            i += 1;
            depth -= 1;
            objects >>= 1;
        }
        // After a value: close what ends here, then on to the next element, or done.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = skip_ws(b, i);
            let object = objects & 1 == 1;
            match (*b.get(i)?, object) {
                (b',', false) => {
                    i = skip_ws(b, i + 1);
                    break;
                }
                (b',', true) => {
                    i = member_value(b, skip_ws(b, i + 1))?;
                    break;
                }
                (b'}', true) | (b']', false) => {
                    i += 1;
                    depth -= 1;
                    objects >>= 1;
                }
                _ => return None,
            }
        }
    }
}

/// From a member's key (at `i`, its opening quote) past its colon: the start of its value.
fn member_value(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let i = skip_ws(b, string_end(b, i + 1)? + 1);
    (b.get(i) == Some(&b':')).then(|| skip_ws(b, i + 1))
}

/// The index after `word` (`true`, `false`, `null`) if it is what starts at `i`.
#[inline]
pub(super) fn literal_end(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    let end = i.checked_add(word.len())?;
    (b.get(i..end)? == word).then_some(end)
}

/// The index after the number starting at `i`: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match *b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits_end(b, i + 1),
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = some_digits_end(b, i + 1)?;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        i = some_digits_end(b, i)?;
    }
    Some(i)
}

/// The index after the run of ASCII digits at `i` (`i` itself if there is none).
#[inline]
fn digits_end(b: &[u8], mut i: usize) -> usize {
    while let Some(b'0'..=b'9') = b.get(i) {
        i += 1;
    }
    i
}

/// Like [`digits_end`], but at least one digit is required.
#[inline]
fn some_digits_end(b: &[u8], i: usize) -> Option<usize> {
    let end = digits_end(b, i);
    (end > i).then_some(end)
}

#[cfg(test)]
pub(crate) mod tests;
