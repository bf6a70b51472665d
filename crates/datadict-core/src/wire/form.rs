//! Reading `application/x-www-form-urlencoded` text, the format of form bodies and query
//! strings: `name=value` pairs joined by `&`, `+` for a space, `%XX` for any byte. Unlike a
//! browser's lenient parser, a `%` that is not followed by two hex digits is an error here, since
//! guessing what it meant could change the records.

use std::borrow::Cow;

/// One `name=value` pair, still encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPair<'a> {
    pub name: &'a [u8],
    /// Empty when the pair has no `=`.
    pub value: &'a [u8],
    /// Where the pair starts in the text, for messages.
    pub offset: usize,
}

/// The pairs of a form body or query string in order. Empty pieces (`a=1&&b=2`, a trailing `&`)
/// are skipped, as browsers do.
pub fn raw_pairs(text: &[u8]) -> impl Iterator<Item = RawPair<'_>> {
    // Split at each `&` with memchr: a tracking body is one long `data=` value, which a
    // byte-at-a-time split read at three instructions a byte.
    let mut offset = 0;
    std::iter::from_fn(move || {
        while offset <= text.len() {
            let at = offset;
            let rest = &text[at..];
            let end = memchr::memchr(b'&', rest).unwrap_or(rest.len());
            offset += end + 1;
            let piece = &rest[..end];
            if piece.is_empty() {
                continue;
            }
            let (name, value) = match memchr::memchr(b'=', piece) {
                Some(eq) => (&piece[..eq], &piece[eq + 1..]),
                None => (piece, &piece[piece.len()..]),
            };
            return Some(RawPair { name, value, offset: at });
        }
        None
    })
}

/// A `%` without two hex digits after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PercentError {
    /// The offset of the `%` in the decoded slice.
    pub at: usize,
    /// The `%` and the (at most two) bytes after it, printable.
    pub found: String,
}

/// Decodes one encoded name or value: `+` is a space and `%XX` the byte `XX`. Borrows the input
/// when it holds neither, which is the case of raw JSON and of most base64.
pub fn percent_decode(encoded: &[u8]) -> Result<Cow<'_, [u8]>, PercentError> {
    let Some(first) = memchr::memchr2(b'%', b'+', encoded) else {
        return Ok(Cow::Borrowed(encoded));
    };
    let mut out = Vec::with_capacity(encoded.len());
    let mut i = first;
    out.extend_from_slice(&encoded[..i]);
    // From one `%` or `+` to the next, the bytes between copied at once.
    loop {
        match encoded[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                let hex = encoded.get(i + 1..i + 3).and_then(|h| Some(hex_value(h[0])? << 4 | hex_value(h[1])?));
                let Some(byte) = hex else {
                    let end = encoded.len().min(i + 3);
                    return Err(PercentError { at: i, found: printable(&encoded[i..end]) });
                };
                out.push(byte);
                i += 3;
            }
        }
        let next = memchr::memchr2(b'%', b'+', &encoded[i..]).map_or(encoded.len(), |n| i + n);
        out.extend_from_slice(&encoded[i..next]);
        if next == encoded.len() {
            break;
        }
        i = next;
    }
    Ok(Cow::Owned(out))
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Bytes for a message: printable ASCII as is, anything else as `\xNN`, so that a message never
/// carries control characters or broken UTF-8.
pub(crate) fn printable(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_graphic() || b == b' ' {
            out.push(b as char);
        } else {
            write!(out, "\\x{b:02x}").unwrap_or_default();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        #[track_caller]
        fn check(input: &str, expected: Result<&[u8], (usize, &str)>) {
            let got = percent_decode(input.as_bytes());
            match (got, expected) {
                (Ok(got), Ok(want)) => assert_eq!(&*got, want, "{input}"),
                (Err(e), Err((at, found))) => assert_eq!((e.at, e.found.as_str()), (at, found), "{input}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
        check("", Ok(b""));
        check("abc", Ok(b"abc"));
        check("a+b", Ok(b"a b"));
        check("%7B%22a%22%3A1%7D", Ok(b"{\"a\":1}"));
        check("%7b%7D", Ok(b"{}"));
        check("%2B%2F%3D", Ok(b"+/="));
        check("%00%ff", Ok(b"\x00\xff"));
        check("caf%C3%A9", Ok("café".as_bytes()));
        check("100%", Err((3, "%")));
        check("%4", Err((0, "%4")));
        check("a%zz", Err((1, "%zz")));
        check("%%41", Err((0, "%%4")));
        check("ok%2Gx", Err((2, "%2G")));
    }

    #[test]
    fn borrows_when_nothing_is_encoded() {
        assert!(matches!(percent_decode(br#"{"event":"a"}"#), Ok(Cow::Borrowed(_))));
        assert!(matches!(percent_decode(b"a%20b"), Ok(Cow::Owned(_))));
    }

    #[test]
    fn pairs() {
        #[track_caller]
        fn check(input: &str, expected: &[(&str, &str, usize)]) {
            let got: Vec<(&[u8], &[u8], usize)> = raw_pairs(input.as_bytes()).map(|p| (p.name, p.value, p.offset)).collect();
            let want: Vec<(&[u8], &[u8], usize)> = expected.iter().map(|(n, v, o)| (n.as_bytes(), v.as_bytes(), *o)).collect();
            assert_eq!(got, want, "{input}");
        }
        check("", &[]);
        check("&&", &[]);
        check("data=x", &[("data", "x", 0)]);
        check("data=x&verbose=1", &[("data", "x", 0), ("verbose", "1", 7)]);
        check("a&b=", &[("a", "", 0), ("b", "", 2)]);
        check("a=1&&b=2&", &[("a", "1", 0), ("b", "2", 5)]);
        check("data=a=b", &[("data", "a=b", 0)]);
        check("=x", &[("", "x", 0)]);
    }

    #[test]
    fn printable_bytes() {
        assert_eq!(printable(b"ab c"), "ab c");
        assert_eq!(printable(b"a\n\xff"), "a\\x0a\\xff");
    }
}
