//! Project tokens kept out of data-quality samples (see `quality::record_sample`).

use std::borrow::Cow;

/// `text` with every JSON string equal to `token` written `"[redacted]"`. Samples are shown to
/// whoever reads the project's data quality, while tokens are kept only as hashes; a refused
/// record may also carry another project's token. Only whole JSON strings are replaced, so a
/// short token sent by mistake does not garble the rest of the sample, and no parse of the record
/// is needed (a refused record may not be JSON at all). A string written with escapes
/// (`"\u0073..."`) is compared by its value, so escaping the token does not keep it.
pub fn redact<'a>(text: &'a str, token: Option<&str>) -> Cow<'a, str> {
    let Some(token) = token.filter(|t| !t.is_empty()) else { return Cow::Borrowed(text) };
    if !text.contains('\\') {
        // No escapes anywhere (nearly every record): the token's plain JSON form is all there is.
        return match serde_json::to_string(token) {
            Ok(quoted) if text.contains(&quoted) => Cow::Owned(text.replace(&quoted, "\"[redacted]\"")),
            _ => Cow::Borrowed(text),
        };
    }
    let bytes = text.as_bytes();
    let mut out = String::new();
    let (mut copied, mut at) = (0, 0);
    while let Some(open) = text[at..].find('"').map(|p| p + at) {
        let (mut end, mut escaped) = (open + 1, false);
        while end < bytes.len() && bytes[end] != b'"' {
            if bytes[end] == b'\\' {
                escaped = true;
                end += 1;
            }
            end += 1;
        }
        if end >= bytes.len() {
            break;
        }
        // `open` and `end` are quotes (ASCII), so both are character boundaries.
        let literal = &text[open..=end];
        let equal = match escaped {
            true => serde_json::from_str::<String>(literal).is_ok_and(|value| value == token),
            false => &literal[1..literal.len() - 1] == token,
        };
        if equal {
            out.push_str(&text[copied..open]);
            out.push_str("\"[redacted]\"");
            copied = end + 1;
        }
        at = end + 1;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, token: &str, expected: &str) {
        assert_eq!(redact(text, Some(token)), expected, "{text}");
    }

    /// Written with escapes, the token is found by its value, wherever the escapes are.
    #[test]
    fn an_escaped_token_is_redacted_by_its_value() {
        check(r#"{"token":"\u0073\u0033cret","n":"a\"b","x":"s3cret"}"#, "s3cret", r#"{"token":"[redacted]","n":"a\"b","x":"[redacted]"}"#);
        check(r#"{"p":"s\/3","token":"s/3"}"#, "s/3", r#"{"p":"[redacted]","token":"[redacted]"}"#);
        check(r#"{"é":"\u00e9","t":"\é"#, "é", r#"{"[redacted]":"[redacted]","t":"\é"#);
    }

    /// An escaped string of another value, a longer one, and an unterminated one stay as sent.
    #[test]
    fn other_strings_stay_as_sent() {
        check(r#"{"token":"s3cre\u0074!","tail":"s3cr"#, "s3cret", r#"{"token":"s3cre\u0074!","tail":"s3cr"#);
        check(r#"{"a":"x\n","b":"s3cret-ish"}"#, "s3cret", r#"{"a":"x\n","b":"s3cret-ish"}"#);
        check(r#"not json \ "s3cret"#, "s3cret", r#"not json \ "s3cret"#);
    }
}
