//! The few byte-level facts about frames the bench needs, without a JSON parse per frame.
//!
//! The generator and the bench client write these frames themselves in a fixed key order
//! (`{"jsonrpc":"2.0","id":...` first), so a prefix check is exact for them.

const ID_PREFIX: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":\"";

/// A frame without its line terminator.
pub(crate) fn body(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The string id of a request with `method`, when `line` is one.
pub(crate) fn request_id<'a>(line: &'a [u8], method: &[u8]) -> Option<&'a [u8]> {
    let (id, rest) = string_id(line)?;
    let rest = rest.strip_prefix(b",\"method\":\"")?;
    rest.strip_prefix(method)?.strip_prefix(b"\"")?;
    Some(id)
}

/// The string id of a successful response, when `line` is one.
pub(crate) fn response_id(line: &[u8]) -> Option<&[u8]> {
    let (id, rest) = string_id(line)?;
    rest.starts_with(b",\"result\"").then_some(id)
}

fn string_id(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = line.strip_prefix(ID_PREFIX)?;
    let end = memchr::memchr(b'"', rest)?;
    Some((&rest[..end], &rest[end + 1..]))
}

/// The answer to a permission request: allow, echoing a hash of the request's bytes so the
/// agent can check that what arrived is what it sent.
pub(crate) fn permission_answer(id: &[u8], request_body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(ID_PREFIX);
    out.extend_from_slice(id);
    out.extend_from_slice(
        format!(
            "\",\"result\":{{\"outcome\":{{\"outcome\":\"selected\",\"optionId\":\"allow\"}},\"_meta\":{{\"benchHash\":\"{:016x}\"}}}}}}\n",
            hash(request_body)
        )
        .as_bytes(),
    );
}

/// The hash echoed in a permission answer.
pub(crate) fn answer_hash(line: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"benchHash\":\"";
    let at = memchr::memmem::find(line, KEY)? + KEY.len();
    let hex = line.get(at..at + 16)?;
    u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

/// A fast non-cryptographic hash (FxHash over 8-byte words), enough to catch corruption.
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(a)).wrapping_mul(K);
    }
    for &b in words.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_answers() {
        let req = b"{\"jsonrpc\":\"2.0\",\"id\":\"perm-7\",\"method\":\"session/request_permission\",\"params\":{}}\n";
        assert_eq!(
            request_id(req, b"session/request_permission"),
            Some(&b"perm-7"[..])
        );
        assert_eq!(request_id(req, b"session/prompt"), None);
        assert_eq!(response_id(req), None);
        let mut ans = Vec::new();
        permission_answer(b"perm-7", body(req), &mut ans);
        let v: serde_json::Value = serde_json::from_slice(&ans).expect("json");
        assert_eq!(v["id"], "perm-7");
        assert_eq!(response_id(&ans), Some(&b"perm-7"[..]));
        assert_eq!(answer_hash(&ans), Some(hash(body(req))));
        assert_ne!(hash(b"abcdefghi"), hash(b"abcdefghj"));
    }
}
