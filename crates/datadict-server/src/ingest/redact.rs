//! Project tokens kept out of data-quality samples (see `quality::record_sample` and
//! `quality::refused_sample`).

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
    let mut out = String::new();
    let (mut copied, mut at) = (0, 0);
    while let Some(open) = text[at..].find('"').map(|p| p + at) {
        let literal = Literal::at(text, open);
        if !literal.closed {
            break;
        }
        if literal.value(text).is_some_and(|value| value == token) {
            out.push_str(&text[copied..open]);
            out.push_str("\"[redacted]\"");
            copied = literal.end;
        }
        at = literal.end;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The sample text of a refused record: `text` (which may not be JSON: cut short, not UTF-8, a
/// bad escape) with every token written `"[redacted]"` as [`redact`] does. The tokens are those
/// the caller knows of (`known`: the one the check read, those of the request's other records)
/// and the value of every member named `token` or `$token` that a scan finds without parsing the
/// record (its name may be written with escapes). A value cut short by the end of the record is
/// cut off from its opening quote, since what is left of it is the start of a token.
pub fn redact_refused<'a>(text: &'a str, known: &[&str]) -> Cow<'a, str> {
    let (found, cut) = token_members(text);
    let mut out = match cut {
        Some(open) => Cow::Owned(format!("{}\"[redacted]", &text[..open])),
        None => Cow::Borrowed(text),
    };
    for token in known.iter().copied().chain(found.iter().map(|t| t.as_ref())) {
        if let Cow::Owned(redacted) = redact(&out, Some(token)) {
            out = Cow::Owned(redacted);
        }
    }
    out
}

/// What the dictionary drops of one event (spec §2.4, §2.5: dropped data is "dropped at ingestion
/// time"), kept out of the event's data-quality samples: a sample is shown to whoever reads the
/// project's data quality, so a value the dictionary drops would otherwise be kept after all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Withheld {
    #[default]
    Nothing,
    /// The whole event: every property value goes, the names stay.
    Event,
    /// These properties' values.
    Properties(Vec<String>),
}

/// What a withheld value is written as in a sample.
pub const WITHHELD: &str = "[dropped]";

impl Withheld {
    /// Adds a dropped property (an event already withheld whole stays so).
    pub fn add_property(&mut self, name: &str) {
        match self {
            Self::Nothing => *self = Self::Properties(vec![name.to_owned()]),
            Self::Properties(names) if !names.iter().any(|n| n == name) => names.push(name.to_owned()),
            Self::Properties(_) | Self::Event => {}
        }
    }

    /// `text` (a record) with every value this withholds under its `properties` written
    /// [`WITHHELD`]. Text that is not a JSON object with an object of `properties` is kept as is:
    /// a refused record may not be JSON, and then no property can be found in it.
    pub fn apply<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if *self == Self::Nothing {
            return Cow::Borrowed(text);
        }
        let Ok(serde_json::Value::Object(mut record)) = serde_json::from_str::<serde_json::Value>(text) else {
            return Cow::Borrowed(text);
        };
        let Some(serde_json::Value::Object(properties)) = record.get_mut("properties") else { return Cow::Borrowed(text) };
        let mut changed = false;
        for (name, value) in properties.iter_mut() {
            let withheld = match self {
                Self::Event => true,
                Self::Properties(names) => names.iter().any(|n| n == name),
                Self::Nothing => false,
            };
            if withheld {
                *value = serde_json::Value::from(WITHHELD);
                changed = true;
            }
        }
        match changed {
            true => serde_json::to_string(&record).map_or(Cow::Borrowed(text), Cow::Owned),
            false => Cow::Borrowed(text),
        }
    }
}

/// A string literal of text that may not be JSON: its opening quote, where it ends (after its
/// closing quote, or at the end of the text when it is not closed), and whether it holds escapes.
struct Literal {
    open: usize,
    end: usize,
    closed: bool,
    escaped: bool,
}

impl Literal {
    /// The literal that opens at `open`, a `"` of `text`.
    fn at(text: &str, open: usize) -> Self {
        let bytes = text.as_bytes();
        let (mut end, mut escaped) = (open + 1, false);
        while end < bytes.len() && bytes[end] != b'"' {
            if bytes[end] == b'\\' {
                escaped = true;
                end += 1;
            }
            end += 1;
        }
        match end < bytes.len() {
            true => Self { open, end: end + 1, closed: true, escaped },
            false => Self { open, end: bytes.len(), closed: false, escaped },
        }
    }

    /// Its value, when it is closed and its escapes are valid JSON.
    fn value<'t>(&self, text: &'t str) -> Option<Cow<'t, str>> {
        // Both ends are quotes (ASCII), hence character boundaries.
        let literal = text.get(self.open..self.end).filter(|_| self.closed)?;
        match self.escaped {
            true => serde_json::from_str::<String>(literal).ok().map(Cow::Owned),
            false => Some(Cow::Borrowed(&literal[1..literal.len() - 1])),
        }
    }
}

/// The values of the members named `token` or `$token` in `text`, read without parsing it, and
/// where such a value opens when the text ends inside it.
fn token_members(text: &str) -> (Vec<Cow<'_, str>>, Option<usize>) {
    let (mut found, mut cut) = (Vec::new(), None);
    let blank = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    let mut at = 0;
    while let Some(open) = text[at..].find('"').map(|p| p + at) {
        let name = Literal::at(text, open);
        at = name.end;
        if !matches!(name.value(text).as_deref(), Some("token" | "$token")) {
            continue;
        }
        let Some(rest) = text[at..].trim_start_matches(blank).strip_prefix(':') else { continue };
        let rest = rest.trim_start_matches(blank);
        if !rest.starts_with('"') {
            continue;
        }
        let value = Literal::at(text, text.len() - rest.len());
        match value.value(text) {
            Some(token) => found.push(token),
            None if !value.closed => cut = Some(value.open),
            // Closed, with an escape JSON does not have: no value to look for.
            None => {}
        }
        at = value.end;
    }
    (found, cut)
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

    fn refused(text: &str, known: &[&str], expected: &str) {
        assert_eq!(redact_refused(text, known), expected, "{text}");
    }

    /// In a refused record the values of `token` and `$token` members are redacted wherever they
    /// are written, without a parse: the record may be no JSON at all.
    #[test]
    fn token_members_are_found_in_records_that_are_not_json() {
        let not_utf8 = String::from_utf8_lossy(b"{\"\\u0074oken\":\"s3cret\",\"x\":\"\xff\"}").into_owned();
        refused(&not_utf8, &[], "{\"\\u0074oken\":\"[redacted]\",\"x\":\"\u{fffd}\"}");
        refused(r#"{"event":"e","properties":{"token":"s3cret","x":"\x41"},"y":"s3cret"}"#, &[], r#"{"event":"e","properties":{"token":"[redacted]","x":"\x41"},"y":"[redacted]"}"#);
        refused(r#"{"$token" : "s3cret", "$set": {"#, &[], r#"{"$token" : "[redacted]", "$set": {"#);
        refused(r#"{"token":"\u0073\u0033cret","a":"s3cret"}"#, &[], r#"{"token":"[redacted]","a":"[redacted]"}"#);
        // Cut short inside the token: what is left of it goes.
        refused(r#"{"event":"e","properties":{"token":"s3c"#, &[], r#"{"event":"e","properties":{"token":"[redacted]"#);
        refused(r#"{"token":"s3c\"#, &[], r#"{"token":"[redacted]"#);
        // The tokens the caller knows go wherever they are whole strings; other members stay.
        refused(r#"{"properties":{"key":"s3cret"},"tokens":"x","token":5}"#, &["s3cret"], r#"{"properties":{"key":"[redacted]"},"tokens":"x","token":5}"#);
        refused(r#"{"token":"","a":""}"#, &[""], r#"{"token":"","a":""}"#);
        refused(r#"{"x":"token":"a"}"#, &[], r#"{"x":"token":"[redacted]"}"#);
    }

    /// What the dictionary drops is written `[dropped]`: a dropped property's value, every value
    /// of a dropped event (the names stay); text that is not a record is kept as is.
    #[test]
    fn dropped_values_are_withheld() {
        let record = r#"{"event":"e","properties":{"card":"4242","n":1,"o":{"card":2}}}"#;
        let mut card = Withheld::Nothing;
        card.add_property("card");
        card.add_property("card");
        assert_eq!(card, Withheld::Properties(vec!["card".into()]));
        assert_eq!(card.apply(record), r#"{"event":"e","properties":{"card":"[dropped]","n":1,"o":{"card":2}}}"#);
        assert_eq!(Withheld::Event.apply(record), r#"{"event":"e","properties":{"card":"[dropped]","n":"[dropped]","o":"[dropped]"}}"#);
        assert_eq!(Withheld::Nothing.apply(record), record);
        let mut event = Withheld::Event;
        event.add_property("n");
        assert_eq!(event, Withheld::Event);
        for text in [r#"{"event":"e","properties":{"card":"42"#, r#"{"event":"e","properties":[1]}"#, "not json"] {
            assert_eq!(Withheld::Event.apply(text), text);
        }
        assert_eq!(card.apply(r#"{"event":"e","properties":{"n":1}}"#), r#"{"event":"e","properties":{"n":1}}"#);
    }
}
