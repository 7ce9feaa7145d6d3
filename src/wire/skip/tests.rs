use super::*;

use proptest::prelude::*;
use serde::de::IgnoredAny;

/// `string_end` on `body` placed after `lead` filler bytes and an opening quote, followed by
/// `trail` more bytes (so the end of the slice falls at varied places relative to the blocks).
/// Returns the end relative to the start of `body`, or `None`.
fn end_in(lead: usize, body: &[u8], trail: usize) -> Option<usize> {
    let mut input = vec![b'x'; lead];
    input.push(b'"');
    input.extend_from_slice(body);
    input.extend(std::iter::repeat_n(b'y', trail));
    let start = lead + 1;
    let got = string_end(&input, start);
    assert_eq!(
        got,
        scalar_string_end(&input, start),
        "block and scalar scans agree"
    );
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2.
        let wide = unsafe { avx2::scan(&input, start) };
        assert_eq!(wide, sse2::scan(&input, start), "AVX2 and SSE2 scans agree");
    }
    got.map(|end| end - start)
}

/// Every placement that matters for 64-byte blocks: the string starting at a few alignments,
/// and the slice ending right after the string or a block or more later.
fn ends(body: &[u8]) -> Vec<Option<usize>> {
    let mut all = Vec::new();
    for lead in [0, 1, 15, 63] {
        for trail in [0, 1, 16, 64, 200] {
            all.push(end_in(lead, body, trail));
        }
    }
    all
}

fn assert_end(body: &[u8], want: Option<usize>) {
    for got in ends(body) {
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(body));
    }
}

/// [`escaped_in_block`] the slow way: walk the bits in order.
fn escaped_one_by_one(backslash: u64, carry: u64) -> (u64, u64) {
    let mut escaped = 0;
    let mut pending = carry == 1;
    for k in 0..64 {
        if pending {
            escaped |= 1 << k;
            pending = false;
        } else if backslash & (1 << k) != 0 {
            pending = true;
        }
    }
    (escaped, u64::from(pending))
}

#[test]
fn escaped_bytes_from_backslash_masks() {
    // Every pattern of 16 bits, at the start, in the middle and at the end of the block, with
    // and without an escape carried in.
    for pattern in 0..=u64::from(u16::MAX) {
        for shift in [0, 1, 24, 47, 48] {
            let backslash = pattern << shift;
            for carry in [0, 1] {
                let mut got_carry = carry;
                let got = escaped_in_block(backslash, &mut got_carry);
                let want = escaped_one_by_one(backslash, carry);
                assert_eq!((got, got_carry), want, "{backslash:064b} carry {carry}");
            }
        }
    }
    for backslash in [
        u64::MAX,
        u64::MAX - 1,
        u64::MAX >> 1,
        1 << 63,
        0x5555_5555_5555_5555,
    ] {
        for carry in [0, 1] {
            let mut got_carry = carry;
            let got = escaped_in_block(backslash, &mut got_carry);
            assert_eq!((got, got_carry), escaped_one_by_one(backslash, carry));
        }
    }
}

#[test]
fn an_escape_anywhere_across_block_boundaries() {
    for escape in [
        &br#"\n"#[..],
        br#"\""#,
        br"\\",
        br"\/",
        br"\b",
        br"\f",
        br"\r",
        br"\t",
        br"\u00e9",
        br"\uABCD",
    ] {
        for len in [
            0, 1, 15, 16, 17, 31, 32, 33, 62, 63, 64, 65, 127, 128, 129, 200,
        ] {
            for at in 0..=len {
                let mut body = vec![b'a'; at];
                body.extend_from_slice(escape);
                body.extend(std::iter::repeat_n(b'b', len - at));
                let content = body.len();
                body.push(b'"');
                assert_end(&body, Some(content));
            }
        }
    }
}

#[test]
fn escapes_back_to_back_across_blocks() {
    for unit in [&br#"\""#[..], br"\\", br"\u0041", br#"a\n"#, br#"\"\\"#] {
        for count in [1, 10, 31, 32, 33, 64, 100] {
            let mut body = unit.repeat(count);
            let content = body.len();
            body.push(b'"');
            assert_end(&body, Some(content));
        }
    }
}

#[test]
fn runs_of_backslashes_before_a_quote() {
    for at in [0, 1, 14, 15, 16, 60, 61, 62, 63, 64, 65, 100] {
        for run in 1..=5 {
            let mut body = vec![b'a'; at];
            body.extend(std::iter::repeat_n(b'\\', run));
            body.push(b'"');
            if run % 2 == 0 {
                // The backslashes escape each other: the quote closes the string.
                assert_end(&body, Some(at + run));
            } else {
                // The last backslash escapes the quote: the string goes on.
                assert_end(&body, None);
                body.extend_from_slice(b"tail\"");
                assert_end(&body, Some(body.len() - 1));
            }
        }
    }
}

#[test]
fn unicode_escapes_need_four_hex_digits() {
    for at in [0, 1, 58, 59, 60, 61, 62, 63, 64, 65, 120] {
        let lead = vec![b'a'; at];
        for good in [
            &br"\u0000"[..],
            br"\uffff",
            br"\uFfFf",
            br"\ud800",
            br"\u12aB",
        ] {
            let mut body = [&lead[..], good, b"z\""].concat();
            assert_end(&body, Some(body.len() - 1));
            // Without its closing quote it is unterminated.
            body.pop();
            assert_end(&body, None);
        }
        for bad in [
            &br"\u"[..],
            br"\u1",
            br"\u12",
            br"\u123",
            br"\u12g4",
            br"\uG123",
            br"\u 123",
            br#"\u12"4"#,
            br"\u12\\",
            br"\U1234",
        ] {
            assert_end(&[&lead[..], bad, b"zzzz\""].concat(), None);
            assert_end(&[&lead[..], bad].concat(), None);
        }
    }
}

#[test]
fn invalid_escapes_are_refused() {
    for at in [0, 5, 62, 63, 64, 70] {
        for c in [b'a', b'x', b'0', b'\'', b' ', b'U', b'N', 0x01, 0xc3] {
            let mut body = vec![b'a'; at];
            body.extend_from_slice(&[b'\\', c]);
            body.extend_from_slice(b"aaaa\"");
            assert_end(&body, None);
        }
    }
}

#[test]
fn control_bytes_are_refused_and_others_pass() {
    for at in [0, 1, 15, 16, 63, 64, 65, 130] {
        for c in 0u8..0x20 {
            let mut body = vec![b'a'; at];
            body.push(c);
            body.extend_from_slice(b"a\"");
            assert_end(&body, None);
        }
        // The neighbours of the control range, and bytes that are negative as `i8`.
        for c in [0x20, 0x21, 0x7e, 0x7f, 0x80, 0x9f, 0xc3, 0xff] {
            let mut body = vec![b'a'; at];
            body.push(c);
            body.extend_from_slice(b"a\"");
            assert_end(&body, Some(at + 2));
        }
    }
}

#[test]
fn unterminated_strings_are_refused() {
    assert_eq!(string_end(b"", 0), None);
    assert_eq!(string_end(b"\"", 1), None);
    assert_eq!(string_end(b"\"\\", 1), None);
    assert_eq!(string_end(b"\"\\\"", 1), None);
    for len in [0, 1, 16, 63, 64, 65, 300] {
        assert_end(&vec![b'a'; len], None);
        assert_end(&[vec![b'a'; len], b"\\".to_vec()].concat(), None);
    }
    // A start past the end is no string at all, not a panic.
    assert_eq!(string_end(b"\"a\"", 7), None);
}

#[test]
fn multi_byte_utf8_is_content() {
    for text in ["é", "日本語", "😀", "aé\\n😀\\\"日"] {
        for at in [0, 1, 60, 61, 62, 63, 64, 100] {
            let body = format!("{}{}\"", "a".repeat(at), text.repeat(20));
            assert_end(body.as_bytes(), Some(body.len() - 1));
        }
    }
}

#[test]
fn values_end_where_serde_json_says() {
    for (value, after) in [
        ("0", ""),
        ("-0", ""),
        ("12.5e-3", ","),
        ("1E+9", "]"),
        ("0.0", ""),
        ("true", " "),
        ("false", "}"),
        ("null", ""),
        (r#""a\"b""#, ":"),
        ("[]", "]"),
        ("{}", ""),
        ("[ 1 , [ ] , { } ,\t\"x\"\r\n]", " "),
        (r#"{"a" : {"b":[1,{"c":null}]} , "d":"}"}"#, "}"),
    ] {
        let text = format!("{value}{after}");
        assert_eq!(
            value_end(text.as_bytes(), 0, 0),
            Some(value.len()),
            "{text}"
        );
    }
}

#[test]
fn invalid_values_are_refused() {
    for text in [
        "",
        "-",
        "1.",
        "1.e5",
        "1e",
        "1e+",
        ".5",
        "+1",
        "tru",
        "nul",
        "True",
        "[",
        "[1",
        "[1,",
        "[1,]",
        "[,1]",
        "{",
        "{\"a\"",
        "{\"a\":",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:2}",
        "{\"a\":1]",
        "[1}",
        "[1 2]",
        "{\"a\":1 \"b\":2}",
        "\"abc",
        "}",
        "]",
        ",",
        "x",
    ] {
        assert_eq!(value_end(text.as_bytes(), 0, 0), None, "{text:?}");
    }
    // What follows the value is the caller's: a leading zero ends the number.
    assert_eq!(value_end(b"01", 0, 0), Some(1));
}

#[test]
fn nesting_is_limited_like_serde_json() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let ok = nested(MAX_DEPTH);
    assert_eq!(value_end(ok.as_bytes(), 0, 0), Some(ok.len()));
    assert!(serde_json::from_str::<serde_json::Value>(&ok).is_ok());
    let deep = nested(MAX_DEPTH + 1);
    assert_eq!(value_end(deep.as_bytes(), 0, 0), None);
    assert!(serde_json::from_str::<serde_json::Value>(&deep).is_err());
    // Enclosing containers count.
    assert_eq!(value_end(ok.as_bytes(), 0, 1), None);
    let inner = nested(MAX_DEPTH - 3);
    assert_eq!(value_end(inner.as_bytes(), 0, 3), Some(inner.len()));
    assert_eq!(value_end(b"1", 0, MAX_DEPTH + 5), None);
    let objects = format!("{}1{}", "{\"a\":".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
    assert_eq!(value_end(objects.as_bytes(), 0, 0), Some(objects.len()));
    // Far deeper than any limit: refused, without recursion.
    let huge = nested(100_000);
    assert_eq!(value_end(huge.as_bytes(), 0, 0), None);
}

/// Where serde_json, skipping a value, says the string opened by the first byte of `input`
/// ends (the index of its closing quote), or `None` if it refuses it.
fn serde_string_end(input: &[u8]) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_slice(input).into_iter::<IgnoredAny>();
    match values.next()? {
        Ok(_) => Some(values.byte_offset() - 1),
        Err(_) => None,
    }
}

/// Characters that make string scanning hard: quotes, backslashes, control characters,
/// multi-byte UTF-8, and plain letters to space them out.
pub(crate) fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        6 => proptest::char::range('a', 'z'),
        2 => Just('"'),
        2 => Just('\\'),
        2 => proptest::char::range('\u{0}', '\u{1f}'),
        1 => Just('/'),
        1 => proptest::char::range('\u{80}', '\u{7ff}'),
        1 => proptest::char::range('\u{800}', '\u{ffff}'),
        1 => proptest::char::range('\u{10000}', '\u{10ffff}'),
    ]
}

/// One piece of a string's JSON text: a plain character or any escape JSON allows, including
/// `\u` escapes with either case of hex and unpaired surrogates (which a skip accepts).
fn text_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => proptest::char::range('a', 'z').prop_map(String::from),
        2 => proptest::char::range('\u{80}', '\u{10ffff}').prop_map(String::from),
        4 => prop::sample::select(vec!["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"])
            .prop_map(str::to_owned),
        2 => (any::<u16>(), any::<bool>()).prop_map(|(u, upper)| if upper {
            format!("\\u{u:04X}")
        } else {
            format!("\\u{u:04x}")
        }),
    ]
}

/// Bytes after an opening quote, drawn so that strings often run past a block or two before
/// their first quote, with plenty of escapes, bad escapes and control bytes on the way.
fn tricky_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        30 => proptest::num::u8::ANY.prop_filter("not special", |b| {
            *b >= 0x20 && *b != b'"' && *b != b'\\'
        }),
        1 => Just(b'"'),
        6 => Just(b'\\'),
        3 => Just(b'u'),
        3 => prop::sample::select(b"0123456789abcdefABCDEFgG".to_vec()),
        2 => prop::sample::select(b"nrtbf/".to_vec()),
        1 => 0u8..0x20,
    ];
    prop::collection::vec(byte, 0..300)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any backslash mask, with or without an escape carried in.
    #[test]
    fn escaped_bytes_from_any_backslash_mask(backslash in any::<u64>(), carry in 0u64..2) {
        let mut got_carry = carry;
        let got = escaped_in_block(backslash, &mut got_carry);
        prop_assert_eq!((got, got_carry), escaped_one_by_one(backslash, carry));
    }

    /// A string serde_json wrote ends exactly where its text says.
    #[test]
    fn serialized_strings_end_at_their_closing_quote(
        s in prop::collection::vec(tricky_char(), 0..200).prop_map(String::from_iter),
        lead in 0usize..70,
        after in prop::sample::select(vec!["", ",", "}", "\"", ",\"k\":\"v\"}", "\\"]),
    ) {
        let json = serde_json::to_string(&s).expect("a string serializes");
        let input = format!("{}{json}{after}", " ".repeat(lead));
        let end = lead + json.len() - 1;
        prop_assert_eq!(string_end(input.as_bytes(), lead + 1), Some(end));
        prop_assert_eq!(serde_string_end(&input.as_bytes()[lead..]), Some(json.len() - 1));
    }

    /// A string's text built from any allowed escapes ends where it was built to end.
    #[test]
    fn built_strings_end_at_their_closing_quote(
        pieces in prop::collection::vec(text_piece(), 0..120),
        trail in 0usize..80,
    ) {
        let body = pieces.concat();
        let input = format!("\"{body}\"{}", "x".repeat(trail));
        prop_assert_eq!(string_end(input.as_bytes(), 1), Some(body.len() + 1));
        prop_assert_eq!(serde_string_end(input.as_bytes()), Some(body.len() + 1));
    }

    /// On arbitrary bytes after a quote, the scan accepts exactly what serde_json accepts when
    /// it skips a string, and finds the same end.
    #[test]
    fn any_bytes_after_a_quote_are_judged_like_serde_json(bytes in tricky_bytes()) {
        let input = [&b"\""[..], &bytes].concat();
        let ours = string_end(&input, 1);
        prop_assert_eq!(ours, serde_string_end(&input));
        prop_assert_eq!(ours, scalar_string_end(&input, 1));
    }

    /// Any JSON serde_json writes (compact or pretty) is walked to its end.
    #[test]
    fn generated_values_are_walked_to_their_end(v in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&v)
        } else {
            serde_json::to_string(&v)
        }
        .expect("a value serializes");
        prop_assert_eq!(value_end(text.as_bytes(), 0, 0), Some(text.len()));
    }

    /// Cut short or with one byte changed, a value is refused whenever serde_json refuses it,
    /// and otherwise ends where serde_json says; never a panic.
    #[test]
    fn mutated_values_are_judged_like_serde_json(
        v in json_value(),
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(b"\"\\{}[],: 0-.eEnu\x01xa".to_vec()),
        how in 0u8..3,
    ) {
        let mut text = serde_json::to_vec(&v).expect("a value serializes");
        let i = at.index(text.len() + 1);
        match how {
            0 => text.truncate(i),
            1 => text.insert(i, byte),
            _ => {
                if i < text.len() {
                    text[i] = byte;
                }
            }
        }
        let mut values = serde_json::Deserializer::from_slice(&text).into_iter::<IgnoredAny>();
        let serde_end = match values.next() {
            Some(Ok(_)) => Some(values.byte_offset()),
            _ => None,
        };
        let start = skip_ws(&text, 0);
        let ours = value_end(&text, start, 0);
        match (ours, serde_end) {
            (Some(a), Some(b)) => prop_assert_eq!(a, b),
            (None, None) => {}
            // serde_json's stream also wants a number or a literal to be followed by a
            // delimiter; what follows a value is the walk's caller's to check.
            (Some(a), None) => {
                let shown = String::from_utf8_lossy(&text);
                prop_assert!(!matches!(text[start], b'"' | b'[' | b'{'), "{a}: {shown:?}");
                let alone = serde_json::from_slice::<IgnoredAny>(&text[..a]);
                prop_assert!(alone.is_ok(), "accepted up to {a}: {shown:?}");
            }
            (None, Some(_)) => prop_assert!(false, "refused {:?}", String::from_utf8_lossy(&text)),
        }
    }
}

/// Any JSON value, a few levels deep, with tricky strings and varied numbers.
pub(crate) fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let string = prop::collection::vec(tricky_char(), 0..40)
        .prop_map(String::from_iter)
        .boxed();
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        string.clone().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((string.clone(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// The ASCII fast path and std's validation agree, wherever a non-ASCII byte or a cut
/// character falls relative to the 128-byte chunks and the tail.
#[test]
fn text_is_utf8_exactly_when_std_says_so() {
    for len in [0, 1, 31, 32, 127, 128, 129, 255, 256, 300] {
        let ascii = vec![b'a'; len];
        assert_eq!(utf8(&ascii), std::str::from_utf8(&ascii).ok());
        for at in [0, 1, 31, 32, 64, 96, 127, 128, 200, 299] {
            if at >= len {
                continue;
            }
            for odd in [&[0xc3, 0xa9][..], &[0xc3], &[0xff], &[0x80], &[0xe2, 0x82]] {
                let mut bytes = ascii.clone();
                let end = (at + odd.len()).min(len);
                bytes[at..end].copy_from_slice(&odd[..end - at]);
                assert_eq!(
                    utf8(&bytes),
                    std::str::from_utf8(&bytes).ok(),
                    "len {len}, {odd:?} at {at}"
                );
            }
        }
    }
}

proptest! {
    #[test]
    fn any_bytes_are_text_exactly_when_std_says_so(bytes in tricky_bytes()) {
        prop_assert_eq!(utf8(&bytes), std::str::from_utf8(&bytes).ok());
    }
}
