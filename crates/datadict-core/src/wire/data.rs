//! A `data` value, decoded: JSON as sent, or base64 of JSON (issue 19: tracking libraries send
//! both, in the standard and the URL-safe alphabets, padded or not).

use super::form::printable;
use super::{Place, WireError};
use crate::split::{is_blank, BOM};
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::{DecodeError, Engine};
use std::borrow::Cow;

/// Where the JSON text of `bytes` starts: after a byte-order mark and blanks. `None` when there
/// is nothing else.
pub(crate) fn json_start(bytes: &[u8]) -> Option<usize> {
    let at = if bytes.starts_with(BOM) { BOM.len() } else { 0 };
    bytes[at..].iter().position(|&b| !is_blank(b)).map(|p| at + p)
}

/// Whether `b` opens what every route takes, a JSON object or array.
pub(crate) fn opens_records(b: u8) -> bool {
    matches!(b, b'{' | b'[')
}

/// The first bytes at `at`, for a message.
pub(crate) fn start_of(bytes: &[u8], at: usize) -> String {
    let rest = &bytes[at.min(bytes.len())..];
    printable(&rest[..rest.len().min(16)])
}

/// A decoded `data` value: its JSON text, where the text starts, and whether it was base64.
#[derive(Debug)]
pub(crate) struct Data<'a> {
    pub bytes: Cow<'a, [u8]>,
    pub start: usize,
    pub base64: bool,
}

/// Decodes a (percent-decoded) `data` value. JSON is recognised by its first byte, `{` or `[`,
/// neither of which is a base64 character, so the two readings never compete.
pub(crate) fn decode_data(value: Cow<'_, [u8]>, place: Place) -> Result<Data<'_>, WireError> {
    let Some(start) = json_start(&value) else { return Err(WireError::EmptyData { place }) };
    if opens_records(value[start]) {
        return Ok(Data { bytes: value, start, base64: false });
    }
    let decoded = decode_base64(&value).map_err(|reason| WireError::DataNotJson { place, found: start_of(&value, start), reason })?;
    match json_start(&decoded) {
        Some(start) if opens_records(decoded[start]) => Ok(Data { bytes: Cow::Owned(decoded), start, base64: true }),
        other => Err(WireError::Base64NotJson { place, found: other.map_or_else(|| "nothing".to_owned(), |at| start_of(&decoded, at)) }),
    }
}

/// The standard and URL-safe engines, both taking padding or none (libraries differ), and
/// ignoring nonzero bits after the last byte, which hold no data.
const CONFIG: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent).with_decode_allow_trailing_bits(true);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, CONFIG);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, CONFIG);

/// Which kinds of characters a text holds, each found with `memchr`'s vectorised search: three
/// byte-at-a-time `any` scans over a tracking request's `data=` were the largest of the request
/// path's own costs (`perf`), and a one-pass loop over the bytes was not vectorised.
struct Seen {
    /// A space, tab or line break.
    blank: bool,
    space: bool,
    /// `+` or `/`.
    standard: bool,
    /// `-` or `_`.
    url_safe: bool,
}

impl Seen {
    fn of(text: &[u8]) -> Self {
        let space = memchr::memchr(b' ', text).is_some();
        Seen {
            blank: space || memchr::memchr3(b'\r', b'\n', b'\t', text).is_some(),
            space,
            standard: memchr::memchr2(b'+', b'/', text).is_some(),
            url_safe: memchr::memchr2(b'-', b'_', text).is_some(),
        }
    }
}

/// Decodes base64 text, or says why it is not base64.
///
/// Two repairs, neither of which can change data: a space is read as `+` (a `+` sent without
/// percent-encoding in a form becomes a space, and base64 has no spaces), and line breaks are
/// skipped (MIME encoders wrap lines at 76 characters). The alphabet is the one whose own
/// characters (`+` `/` or `-` `_`) appear; text with both is refused.
fn decode_base64(text: &[u8]) -> Result<Vec<u8>, String> {
    let seen = Seen::of(text);
    let cleaned: Cow<'_, [u8]> = if seen.blank {
        Cow::Owned(text.iter().filter(|&&b| !matches!(b, b'\r' | b'\n' | b'\t')).map(|&b| if b == b' ' { b'+' } else { b }).collect())
    } else {
        Cow::Borrowed(text)
    };
    // A space read as `+` makes the text standard.
    let engine = match (seen.standard || seen.space, seen.url_safe) {
        (true, true) => return Err("it mixes the standard (`+`, `/`) and URL-safe (`-`, `_`) alphabets".to_owned()),
        (false, true) => &URL_SAFE,
        _ => &STANDARD,
    };
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(decoded) = decode_vectorised(&cleaned, seen.url_safe) {
        return Ok(decoded);
    }
    engine.decode(&cleaned).map_err(|e| match e {
        DecodeError::InvalidByte(at, b) => format!("`{}` at offset {at} is not a base64 character", printable(&[b])),
        DecodeError::InvalidLength(len) => format!("{len} base64 characters cannot encode whole bytes"),
        DecodeError::InvalidLastSymbol(at, b) => {
            format!("the last character `{}` at offset {at} is not a possible ending", printable(&[b]))
        }
        DecodeError::InvalidPadding => "its `=` padding is wrong".to_owned(),
    })
}

/// `text` decoded by `base64-simd` (SIMD where the CPU has it, about a fifth of the `base64`
/// crate's instructions on a tracking request's `data=`), or `None` where it refuses, which
/// leaves the text to [`STANDARD`] or [`URL_SAFE`]: they give the same bytes for every text this
/// accepts (tested), and their own answer for the rest, such as nonzero bits after the last byte,
/// which they ignore and this refuses.
#[cfg(not(target_arch = "wasm32"))]
fn decode_vectorised(text: &[u8], url_safe: bool) -> Option<Vec<u8>> {
    let padded = text.last() == Some(&b'=');
    let engine = match (url_safe, padded) {
        (false, true) => &base64_simd::STANDARD,
        (false, false) => &base64_simd::STANDARD_NO_PAD,
        (true, true) => &base64_simd::URL_SAFE,
        (true, false) => &base64_simd::URL_SAFE_NO_PAD,
    };
    engine.decode_to_vec(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose;

    /// What [`decode_data`] gives: the JSON text from its start and whether it was base64, or
    /// the error's message.
    #[track_caller]
    fn check(value: &[u8], expected: Result<(&str, bool), &str>) {
        let got =
            decode_data(Cow::Borrowed(value), Place::Body).map(|d| (String::from_utf8_lossy(&d.bytes[d.start..]).into_owned(), d.base64));
        match (got, expected) {
            (Ok((text, base64)), Ok((want, want_base64))) => assert_eq!((text.as_str(), base64), (want, want_base64), "{value:?}"),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{value:?}: `{e}` lacks `{want}`"),
            (got, want) => panic!("{}: got {got:?}, want {want:?}", printable(value)),
        }
    }

    /// The token makes the standard base64 hold `+` and `/` and end in `=`.
    const JSON: &str = r#"[{"event":"a","properties":{"token":">?>?>?"}}]"#;

    #[test]
    fn json_and_base64_values() {
        let encodings: [(&str, GeneralPurpose); 4] = [
            ("standard", general_purpose::STANDARD),
            ("standard, no padding", general_purpose::STANDARD_NO_PAD),
            ("url-safe", general_purpose::URL_SAFE),
            ("url-safe, no padding", general_purpose::URL_SAFE_NO_PAD),
        ];
        let mut seen = Vec::new();
        for (name, engine) in encodings {
            let encoded = engine.encode(JSON);
            assert!(!seen.contains(&encoded), "{name} encodes like another alphabet");
            check(encoded.as_bytes(), Ok((JSON, true)));
            seen.push(encoded);
        }
        check(JSON.as_bytes(), Ok((JSON, false)));
        check(b"  \n{\"a\":1}", Ok(("{\"a\":1}", false)));
        check(b"\xEF\xBB\xBF[1]", Ok(("[1]", false)));
        // A `+` that arrived as a space, and a wrapped line.
        let with_plus = general_purpose::STANDARD.encode(JSON);
        assert!(with_plus.contains('+') && with_plus.contains('/') && with_plus.ends_with('='), "{with_plus}");
        check(with_plus.replace('+', " ").as_bytes(), Ok((JSON, true)));
        let wrapped = format!("{}\r\n{}\n", &with_plus[..8], &with_plus[8..]);
        check(wrapped.as_bytes(), Ok((JSON, true)));
        // Base64 of JSON after blanks, or after a byte-order mark.
        check(general_purpose::STANDARD.encode(" \n[1]").as_bytes(), Ok(("[1]", true)));
        check(general_purpose::STANDARD.encode("\u{feff}{}").as_bytes(), Ok(("{}", true)));
    }

    proptest::proptest! {
        /// Whatever the vectorised decoder accepts, the `base64` crate's engine decodes to the
        /// same bytes; and it accepts every canonical encoding, padded or not, in both alphabets.
        #[test]
        fn vectorised_decoding_agrees(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            alphabet in 0..4usize,
            cuts in proptest::collection::vec((0..300usize, proptest::prelude::any::<u8>()), 0..3),
        ) {
            let encoders = [general_purpose::STANDARD, general_purpose::STANDARD_NO_PAD, general_purpose::URL_SAFE, general_purpose::URL_SAFE_NO_PAD];
            let canonical = encoders[alphabet].encode(&bytes).into_bytes();
            let url_safe = alphabet >= 2;
            let engine = if url_safe { &URL_SAFE } else { &STANDARD };
            proptest::prop_assert_eq!(decode_vectorised(&canonical, url_safe), Some(bytes.clone()));
            // Bytes replaced: other characters, padding in the middle, nonzero trailing bits.
            let mut changed = canonical.clone();
            for (at, b) in cuts {
                if !changed.is_empty() {
                    let at = at % changed.len();
                    changed[at] = if b % 3 == 0 { b'=' } else { b };
                }
            }
            for text in [&changed, &canonical[..canonical.len().saturating_sub(1)].to_vec()] {
                if let Some(fast) = decode_vectorised(text, url_safe) {
                    proptest::prop_assert_eq!(engine.decode(text).ok(), Some(fast), "{:?}", String::from_utf8_lossy(text));
                }
            }
        }
    }

    #[test]
    fn vectorised_decoding_leaves_the_forgiven_to_the_engine() {
        // `e30` is `{}`; `e31` has a nonzero bit after the last byte, which the engine ignores.
        assert_eq!(decode_vectorised(b"e31", false), None);
        assert_eq!(STANDARD.decode(b"e31").ok(), Some(b"{}".to_vec()));
        check(b"e31", Ok(("{}", true)));
    }

    #[test]
    fn refused_values() {
        check(b"", Err("`data` in the body is empty"));
        check(b"  \n", Err("`data` in the body is empty"));
        check(
            b"hello",
            Err("neither JSON (it starts with `hello`, not `{` or `[`) nor base64 (5 base64 characters cannot encode whole bytes)"),
        );
        check(b"\"text\"", Err("`\"` at offset 0 is not a base64 character"));
        check(b"e30*", Err("`*` at offset 3 is not a base64 character"));
        check(b"ab+c-_==", Err("it mixes the standard"));
        check(b"YWJj", Err("what it encodes is not a JSON object or array (it starts with `abc`)"));
        check(b"MTIz", Err("(it starts with `123`)"));
        check(general_purpose::STANDARD.encode("  ").as_bytes(), Err("(it starts with `nothing`)"));
        check(b"e30=x", Err("nor base64 (`=` at offset 3 is not a base64 character)"));
        check(b"\xff\xfe", Err("`\\xff` at offset 0 is not a base64 character"));
    }
}
