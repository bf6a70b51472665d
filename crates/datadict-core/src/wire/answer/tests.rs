//! Answers, the callback rule and the pixel, one table each.

use super::*;
use crate::request::Method;
use crate::wire::{decode_request, Route, WireRequest};

#[test]
fn callback_names() {
    #[track_caller]
    fn check(name: &[u8], expected: Result<(), CallbackError>) {
        assert_eq!(check_callback(name).map(|ok| assert_eq!(ok.as_bytes(), name)), expected, "{}", String::from_utf8_lossy(name));
    }
    use CallbackError::*;
    for ok in ["cb", "_", "$", "jQuery3600_1700000000", "window.app.$onTrack", "a1.b2._c", "newer", "this_", "imports.x"] {
        check(ok.as_bytes(), Ok(()));
    }
    check(&[b'a'; MAX_CALLBACK_BYTES], Ok(()));
    check(&[b'a'; MAX_CALLBACK_BYTES + 1], Err(TooLong { len: 129 }));
    check(&[b'a'; 100_000], Err(TooLong { len: 100_000 }));
    check(b"", Err(Empty));
    // Script, markup and separators.
    check(b"alert(1);x", Err(BadByte { at: 5 }));
    check(b"</script>", Err(BadByte { at: 0 }));
    check(b"a b", Err(BadByte { at: 1 }));
    check(b"a-b", Err(BadByte { at: 1 }));
    check(b"a[\"b\"]", Err(BadByte { at: 1 }));
    check(b"x//", Err(BadByte { at: 1 }));
    check(b"cb\n", Err(BadByte { at: 2 }));
    check(b"cb\0", Err(BadByte { at: 2 }));
    // Unicode look-alikes and invisible characters, although JavaScript allows many of them.
    check("а".as_bytes(), Err(BadByte { at: 0 })); // Cyrillic a
    check("cb\u{200b}".as_bytes(), Err(BadByte { at: 2 })); // zero-width space
    check("cb\u{2028}x".as_bytes(), Err(BadByte { at: 2 })); // line separator
    check("a\u{202e}b".as_bytes(), Err(BadByte { at: 1 })); // right-to-left override
    check("ｃｂ".as_bytes(), Err(BadByte { at: 0 })); // full-width letters
    check(b"\xff", Err(BadByte { at: 0 }));
    // Parts.
    check(b"1cb", Err(BadPart { at: 0 }));
    check(b".cb", Err(BadPart { at: 0 }));
    check(b"cb.", Err(BadPart { at: 3 }));
    check(b"a..b", Err(BadPart { at: 2 }));
    check(b"a.1", Err(BadPart { at: 2 }));
    check(b".", Err(BadPart { at: 0 }));
    // Reserved words would make another expression than a call.
    check(b"new", Err(ReservedWord { at: 0 }));
    check(b"import", Err(ReservedWord { at: 0 }));
    check(b"typeof", Err(ReservedWord { at: 0 }));
    check(b"this.cb", Err(ReservedWord { at: 0 }));
    check(b"app.delete", Err(ReservedWord { at: 4 }));
}

#[test]
fn callback_messages_never_repeat_the_name() {
    for name in ["alert(1);x", "</script>", "evil_but_too_long".repeat(10).as_str(), "new", "a..b"] {
        let message = check_callback(name.as_bytes()).unwrap_err().to_string();
        assert!(!message.contains(name), "{message}");
        assert!(!message.contains('<'), "{message}");
    }
}

/// `expected` is `(status, content type, body)`.
#[track_caller]
fn check(kind: AnswerKind, outcome: Outcome<'_>, expected: (u16, &str, &[u8])) {
    let got = answer(&kind, outcome);
    assert_eq!((got.status, got.content_type, &*got.body), expected, "{kind:?} {outcome:?}: {}", String::from_utf8_lossy(&got.body));
}

#[test]
fn answers() {
    let script = |verbose| AnswerKind::Script { callback: "app.cb".to_owned(), verbose };
    let refused = Outcome::Failure { status: 400, message: "`data` is empty; send `data=<JSON>`" };
    let unauthorized = Outcome::Failure { status: 401, message: "Invalid credentials" };
    check(AnswerKind::Text, Outcome::Success, (200, "text/plain; charset=utf-8", b"1"));
    check(AnswerKind::Text, refused, (400, "text/plain; charset=utf-8", b"0"));
    check(AnswerKind::Verbose, Outcome::Success, (200, "application/json", br#"{"status":1,"error":null}"#));
    check(AnswerKind::Verbose, unauthorized, (401, "application/json", br#"{"status":0,"error":"Invalid credentials"}"#));
    let quoted = Outcome::Failure { status: 413, message: "a \"b\"\n\\c" };
    check(AnswerKind::Verbose, quoted, (413, "application/json", br#"{"status":0,"error":"a \"b\"\n\\c"}"#));
    check(AnswerKind::Pixel, Outcome::Success, (200, "image/gif", &TRANSPARENT_GIF));
    check(AnswerKind::Pixel, refused, (400, "image/gif", &TRANSPARENT_GIF));
    // A script answer is always 200: a browser would not run it otherwise.
    check(script(false), Outcome::Success, (200, "text/javascript; charset=utf-8", b"app.cb(1)"));
    check(script(false), unauthorized, (200, "text/javascript; charset=utf-8", b"app.cb(0)"));
    check(script(true), Outcome::Success, (200, "text/javascript; charset=utf-8", br#"app.cb({"status":1,"error":null})"#));
    let hostile = Outcome::Failure { status: 400, message: "</script><script>alert(1)</script> & \u{2028}\u{2029}" };
    let escaped = br#"app.cb({"status":0,"error":"\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e \u0026 \u2028\u2029"})"#;
    check(script(true), hostile, (200, "text/javascript; charset=utf-8", escaped));
}

/// A hostile `callback` never reaches the answer: the request is refused as plain JSON.
#[test]
fn hostile_callbacks_are_answered_as_json() {
    for encoded in ["alert(1)%3Bx", "%3C%2Fscript%3E", "%D0%B0", "cb%E2%80%8B", "", "x".repeat(500).as_str(), "new"] {
        let query = format!("callback={encoded}&img=1&data=%5B%5D");
        let request = WireRequest { route: Route::Track, method: Method::Get, content_type: None, query: &query, body: b"" };
        let decoded = decode_request(&request);
        let error = decoded.payload.expect_err(&query);
        let reply = answer(&decoded.params.answer, Outcome::Failure { status: error.status_code(), message: &error.to_string() });
        assert_eq!((reply.status, reply.content_type), (400, "application/json"), "{query}");
        let body: serde_json::Value = serde_json::from_slice(&reply.body).expect("JSON");
        assert_eq!(body["status"], 0, "{query}");
        let text = String::from_utf8_lossy(&reply.body);
        assert!(text.contains("`callback`") && !text.contains("script") && !text.contains("alert") && !text.contains("xxxx"), "{text}");
    }
}

/// The pixel is a well-formed 1x1 GIF whose one pixel is the transparent colour.
#[test]
fn the_pixel_is_one_transparent_pixel() {
    let gif = &TRANSPARENT_GIF;
    assert_eq!(&gif[..6], b"GIF89a");
    let word = |at: usize| u16::from_le_bytes([gif[at], gif[at + 1]]);
    assert_eq!((word(6), word(8)), (1, 1), "logical screen size");
    let flags = gif[10];
    assert_eq!(flags & 0x80, 0x80, "global colour table");
    let table_len = 3 * (2usize << (flags & 0x07));
    let mut at = 13 + table_len;
    // Graphic control extension: its transparency flag and index.
    assert_eq!(&gif[at..at + 3], [0x21, 0xf9, 0x04]);
    assert_eq!(gif[at + 3] & 0x01, 0x01, "transparency flag");
    let transparent = gif[at + 6];
    assert_eq!(gif[at + 7], 0, "extension terminator");
    at += 8;
    // Image descriptor: 1x1 at the origin, no local table.
    assert_eq!(gif[at], 0x2c);
    assert_eq!((word(at + 1), word(at + 3), word(at + 5), word(at + 7), gif[at + 9]), (0, 0, 1, 1, 0));
    at += 10;
    // Image data: LZW codes of (min + 1) bits, read least significant bit first.
    let min = gif[at];
    let len = usize::from(gif[at + 1]);
    let data = &gif[at + 2..at + 2 + len];
    let bits = u32::from(min) + 1;
    let stream = data.iter().rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let codes: Vec<u64> = (0..(8 * len as u32) / bits).map(|i| (stream >> (i * bits)) & ((1 << bits) - 1)).collect();
    let (clear, end) = (1u64 << min, (1u64 << min) + 1);
    assert_eq!(&codes[..3], [clear, u64::from(transparent), end], "clear, the transparent colour, end");
    assert_eq!(&gif[at + 2 + len..], [0x00, 0x3b], "block terminator and trailer");
}
