//! The answers of the tracking routes (reference: the `Received` response and the `verbose`,
//! `img` and `callback` parameters): `1` or `0`, `{"status":1,"error":null}` or
//! `{"status":0,"error":"..."}`, a transparent pixel, or a JavaScript call; and the rule that keeps
//! a `callback` name from carrying script.

use super::params::AnswerKind;
use super::{media, MAX_CALLBACK_BYTES, TRANSPARENT_GIF};
use std::borrow::Cow;

/// What happened to a request, as the answer tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'m> {
    /// The records were stored (reference: `1`, "one or more objects provided are valid").
    Success,
    /// Nothing was stored; `status` is the HTTP status the server would answer (400, 401, 413,
    /// 415, 429) and `message` says what is wrong and how to fix it.
    Failure { status: u16, message: &'m str },
}

/// A rendered answer: status, `Content-Type` and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Cow<'static, [u8]>,
}

/// The `verbose=1` body (reference: "two keys: `status`, with the value 1 on success and 0 on
/// failure, and `error`").
#[derive(serde::Serialize)]
struct Verbose<'a> {
    status: u8,
    error: Option<&'a str>,
}

/// Renders the answer of `outcome` in the form `kind` asks for.
///
/// The status is the outcome's (200 on success), with one exception: a `callback` answer is
/// always 200, because a browser does not run a script that comes with an error status, and the
/// page's callback would then never learn of the failure it is told about.
pub fn answer(kind: &AnswerKind, outcome: Outcome<'_>) -> Answer {
    let (status, error) = match outcome {
        Outcome::Success => (200, None),
        Outcome::Failure { status, message } => (status, Some(message)),
    };
    let flag: &'static [u8] = if error.is_none() { b"1" } else { b"0" };
    let verbose =
        || serde_json::to_vec(&Verbose { status: u8::from(error.is_none()), error }).expect("a struct of a number and a string serializes");
    match kind {
        AnswerKind::Text => Answer { status, content_type: media::ANSWER_TEXT, body: Cow::Borrowed(flag) },
        AnswerKind::Verbose => Answer { status, content_type: media::ANSWER_JSON, body: Cow::Owned(verbose()) },
        AnswerKind::Pixel => Answer { status, content_type: media::ANSWER_GIF, body: Cow::Borrowed(&TRANSPARENT_GIF) },
        AnswerKind::Script { callback, verbose: wants_json } => {
            let argument = if *wants_json { script_safe(&verbose()) } else { flag.to_vec() };
            let mut body = Vec::with_capacity(callback.len() + argument.len() + 2);
            body.extend_from_slice(callback.as_bytes());
            body.push(b'(');
            body.extend_from_slice(&argument);
            body.push(b')');
            Answer { status: 200, content_type: media::ANSWER_JAVASCRIPT, body: Cow::Owned(body) }
        }
    }
}

/// JSON made safe to stand in a script: `<`, `>` and `&` (which could close a `<script>` element
/// if the answer were ever inlined in a page) and U+2028 and U+2029 (line terminators in older
/// JavaScript strings) are written as `\u` escapes. They can only occur inside JSON strings,
/// where the escape means the same character.
fn script_safe(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len());
    let mut i = 0;
    while i < json.len() {
        let escape: Option<(&[u8], usize)> = match &json[i..] {
            [b'<', ..] => Some((b"\\u003c", 1)),
            [b'>', ..] => Some((b"\\u003e", 1)),
            [b'&', ..] => Some((b"\\u0026", 1)),
            [0xe2, 0x80, 0xa8, ..] => Some((b"\\u2028", 3)),
            [0xe2, 0x80, 0xa9, ..] => Some((b"\\u2029", 3)),
            _ => None,
        };
        match escape {
            Some((with, len)) => {
                out.extend_from_slice(with);
                i += len;
            }
            None => {
                out.push(json[i]);
                i += 1;
            }
        }
    }
    out
}

/// Why a `callback` name is refused. The messages never repeat the name: it may be an attack,
/// and the refusal is shown to whoever sent it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    #[error("`callback` is empty; give the name of a JavaScript function, such as `onTracked`, or leave `callback` out")]
    Empty,
    #[error("`callback` is {len} bytes long; use a function name of at most {MAX_CALLBACK_BYTES} bytes")]
    TooLong { len: usize },
    #[error("`callback` has a byte at offset {at} that is not an ASCII letter, digit, `_`, `$` or `.`; use a plain function name such as `app.onTracked`")]
    BadByte { at: usize },
    #[error("`callback` has a part that is empty or starts with a digit (at offset {at}); each part between dots must start with a letter, `_` or `$`")]
    BadPart { at: usize },
    #[error("`callback` uses a JavaScript reserved word (the part at offset {at}); name the function differently")]
    ReservedWord { at: usize },
}

/// JavaScript's reserved words (ECMAScript, with the strict-mode and literal ones). One as the
/// first part would turn `NAME(...)` into another expression (`new(...)`, `import(...)`,
/// `typeof(...)`); they are refused in every part so the rule stays one line long.
const RESERVED: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// Checks a `callback` name (issue 19): dot-separated parts of ASCII letters, digits, `_` and `$`,
/// none empty, none starting with a digit, none a reserved word, at most
/// [`MAX_CALLBACK_BYTES`] bytes in all. Such a name can only make the answer a call of an
/// existing function with the server's own argument; anything else (parentheses, quotes, `<`,
/// spaces, non-ASCII look-alikes and invisible characters) is refused, not cleaned.
pub fn check_callback(name: &[u8]) -> Result<&str, CallbackError> {
    if name.is_empty() {
        return Err(CallbackError::Empty);
    }
    if name.len() > MAX_CALLBACK_BYTES {
        return Err(CallbackError::TooLong { len: name.len() });
    }
    if let Some(at) = name.iter().position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'))) {
        return Err(CallbackError::BadByte { at });
    }
    let mut at = 0;
    for part in name.split(|&b| b == b'.') {
        if part.first().is_none_or(u8::is_ascii_digit) {
            return Err(CallbackError::BadPart { at });
        }
        if RESERVED.iter().any(|word| word.as_bytes() == part) {
            return Err(CallbackError::ReservedWord { at });
        }
        at += part.len() + 1;
    }
    // Every byte was checked to be ASCII above.
    Ok(std::str::from_utf8(name).expect("ASCII is UTF-8"))
}

#[cfg(test)]
mod tests;
