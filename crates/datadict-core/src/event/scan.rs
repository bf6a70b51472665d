//! The fast path of [`check_event`](super::check_event): a hand-written scanner over the bytes of
//! a record that finds what the rules read (the same [`Found`] and property list as the serde
//! walk) without serde's per-value dispatch, without parsing the numbers the rules do not read and
//! without building any path.
//!
//! It only answers for records the walk would find nothing to say about while walking: it gives up
//! (`None`) on anything else, and the caller then runs the serde walk, which stays the reference
//! for every message. Giving up is always safe; answering is only allowed when the walk would
//! have produced exactly the same result. So the scanner gives up on: any syntax error, a record
//! that is not an object, a top-level key other than `event` and `properties`, `properties` that is
//! not an object, any escape in a key it keeps or in a string the rules read, a `\u` escape
//! anywhere (the walk rejects lone surrogates), a number with an exponent or more than 18 integer
//! digits (the walk turns those into floats or rejects them), `-0` (a float for the walk), a float
//! the rules read, containers nested deeper than the limit, too many keys or items, and strings
//! that may be over the truncation length. The equivalence is tested against the walk on the
//! fixtures, on generated records and on mutations of them (`tests/check_fast_path.rs`).

use super::{Found, PropertyLayout, PropertySeen, Seen};
use crate::limits::Limits;
use crate::words::{find_in_words, flag_below, flag_byte};
use std::borrow::Cow;

/// Scans `text`, one whole record. On `Some`, `properties` holds every top-level property in
/// input order; on `None` it may hold some and the caller must clear it.
pub(super) fn scan<'a>(text: &'a str, limits: &Limits, properties: &mut Vec<PropertySeen<'a>>) -> Option<Found<'a>> {
    let (found, end) = scan_at(text, 0, limits, properties)?;
    let mut s = Scanner { text, bytes: text.as_bytes(), at: end, limits };
    s.skip_ws();
    (s.at == s.bytes.len()).then_some(found)
}

/// Scans the record that starts at `at` in `text` (a record, or a whole body holding records)
/// and returns what [`scan`] would, with where the record ends (after its closing `}`); what
/// follows the record is not looked at.
pub(super) fn scan_at<'a>(text: &'a str, at: usize, limits: &Limits, properties: &mut Vec<PropertySeen<'a>>) -> Option<(Found<'a>, usize)> {
    let mut s = Scanner { text, bytes: text.as_bytes(), at, limits };
    let mut found = Found::default();
    s.expect(b'{')?;
    if !s.peek_is(b'}') {
        loop {
            s.skip_ws();
            let key = s.plain_string()?;
            s.expect(b':')?;
            match key {
                "event" => found.event = Some(s.value(0, true)?),
                "properties" => {
                    let layout = s.properties(&mut found, properties)?;
                    // A second `properties` leaves no layout a rewrite could trust.
                    found.layout = layout.filter(|_| found.properties.is_none()).map(|l| l.relative_to(at));
                    found.properties = Some(Seen::Object);
                }
                _ => return None,
            }
            if !s.comma_or(b'}')? {
                break;
            }
        }
    } else {
        s.at += 1;
    }
    Some((found, s.at))
}

/// Where the members of a record's `properties` object are, for a rewrite that keeps every
/// other byte of the record ([`super::complete_event`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PropertyMembers<'a> {
    /// The `properties` object, from its `{` to its `}`.
    pub(super) object: std::ops::Range<usize>,
    /// Each member in input order: its name, and where it is, from the name's opening quote to
    /// the end of its value.
    pub(super) members: Vec<(&'a str, std::ops::Range<usize>)>,
}

/// The members of `text`'s `properties`, with the scanner's grammar and `limits`: `None` where
/// the scanner gives up (an escaped name, a top-level key other than `event` and `properties`,
/// no `properties`, anything after the record, ...), and the caller then rewrites the record
/// through serde_json instead.
pub(super) fn property_members<'a>(text: &'a str, limits: &Limits) -> Option<PropertyMembers<'a>> {
    let mut s = Scanner { text, bytes: text.as_bytes(), at: 0, limits };
    let mut found = None;
    s.expect(b'{')?;
    loop {
        s.skip_ws();
        let key = s.plain_string()?;
        s.expect(b':')?;
        match key {
            "event" => {
                s.value(0, false)?;
            }
            "properties" if found.is_none() => found = Some(s.members()?),
            _ => return None,
        }
        if !s.comma_or(b'}')? {
            break;
        }
    }
    s.skip_ws();
    (s.at == s.bytes.len()).then_some(found)?
}

/// Bytes that end the quick run through a string: the closing quote, an escape, a control
/// character (which JSON does not allow unescaped).
static STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// XORed into a word, maps `"` to 0x20 and the bytes below 0x20 onto themselves (see [`find_stop`]).
const QUOTE_TO_SPACE: u64 = u64::from_le_bytes([0x02; 8]);

/// The index of the first byte at or after `i` that ends a quick run through a string (see
/// [`STOPS`]), or `None` when the text ends first. Eight bytes at a time while eight are left
/// (`"`, `\`, or a byte below 0x20: see [`crate::words`]), then byte by byte.
#[inline]
fn find_stop(bytes: &[u8], i: usize) -> Option<usize> {
    // XOR with 0x02 moves `"` (0x22) to 0x20 and the control characters among themselves, and
    // moves nothing else below 0x21: one test below 0x21 finds both (the space, now 0x22, is not).
    let mut i = match find_in_words(bytes, i, usize::MAX, |w| flag_below(w ^ QUOTE_TO_SPACE, 0x21) | flag_byte(w, b'\\')) {
        Ok(found) => return Some(found),
        Err(i) => i,
    };
    while !STOPS[usize::from(*bytes.get(i)?)] {
        i += 1;
    }
    Some(i)
}

struct Scanner<'a, 'l> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    limits: &'l Limits,
}

impl<'a> Scanner<'a, '_> {
    #[inline]
    fn skip_ws(&mut self) {
        // Compact JSON has no blanks: one comparison settles most calls.
        if self.bytes.get(self.at).is_some_and(|&b| b > b' ') {
            return;
        }
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// Skips white space, then whether the next byte is `byte` (not consumed).
    #[inline]
    fn peek_is(&mut self, byte: u8) -> bool {
        self.skip_ws();
        self.bytes.get(self.at) == Some(&byte)
    }

    #[inline]
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.peek_is(byte).then(|| self.at += 1)
    }

    /// After a member or item: `,` (true, another follows) or `close` (false, the container ends).
    #[inline]
    fn comma_or(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        match b {
            b',' => Some(true),
            _ if b == close => Some(false),
            _ => None,
        }
    }

    /// A string without escapes, borrowed from the input (the cursor is on its opening quote).
    #[inline(always)]
    fn plain_string(&mut self) -> Option<&'a str> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let i = find_stop(self.bytes, start)?;
        if self.bytes[i] != b'"' {
            return None;
        }
        self.at = i + 1;
        // Both ends are ASCII quotes of a `str`, so they are character boundaries.
        Some(&self.text[start..i])
    }

    /// Any string whose value is not kept: simple escapes are allowed, `\u` is not. Returns the
    /// length of its text as written, which is at least the length of its value.
    #[inline(always)]
    fn skip_string(&mut self) -> Option<usize> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let mut i = start;
        loop {
            i = find_stop(self.bytes, i)?;
            match self.bytes[i] {
                b'"' => break,
                b'\\' => match self.bytes.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    _ => return None,
                },
                _ => return None,
            }
        }
        self.at = i + 1;
        Some(i - start)
    }

    /// The top-level `properties` object: each property's name and type, and the values of the
    /// four the rules read. Returns where its members are when a rewrite can use that
    /// ([`PropertyLayout`]): members written without blanks between them, `time` and `token` at
    /// most once each.
    fn properties(&mut self, found: &mut Found<'a>, properties: &mut Vec<PropertySeen<'a>>) -> Option<Option<PropertyLayout>> {
        self.skip_ws();
        let open = self.at;
        self.expect(b'{')?;
        if self.peek_is(b'}') {
            self.at += 1;
            return Some(None);
        }
        let mut layout = PropertyLayout { object: open..open, members: 0, token: None, time: None };
        // Where the next member starts when no blank comes before it.
        let mut next = open + 1;
        let mut usable = true;
        loop {
            self.skip_ws();
            let from = self.at;
            let name = self.plain_string()?;
            self.expect(b':')?;
            let slot = match name {
                "time" => Some(&mut found.time),
                "distinct_id" => Some(&mut found.distinct_id),
                "$insert_id" => Some(&mut found.insert_id),
                "token" => Some(&mut found.token),
                _ => None,
            };
            let seen = self.value(0, slot.is_some())?;
            properties.push(PropertySeen { name: Cow::Borrowed(name), kind: seen.kind() });
            if let Some(slot) = slot {
                *slot = Some(seen);
            }
            let to = self.at;
            let place = match name {
                "time" => Some(&mut layout.time),
                "token" => Some(&mut layout.token),
                _ => None,
            };
            if let Some(place) = place {
                usable &= place.replace(from..to).is_none();
            }
            usable &= from == next;
            layout.members += 1;
            let more = self.comma_or(b'}')?;
            // The `,` or `}` right after the value.
            usable &= self.at == to + 1;
            next = self.at;
            if !more {
                layout.object.end = self.at;
                return Some(usable.then_some(layout));
            }
        }
    }

    /// An object's members (the cursor is before its `{`), for [`property_members`].
    fn members(&mut self) -> Option<PropertyMembers<'a>> {
        self.skip_ws();
        let start = self.at;
        self.expect(b'{')?;
        let mut members = Vec::new();
        if self.peek_is(b'}') {
            self.at += 1;
        } else {
            loop {
                self.skip_ws();
                let from = self.at;
                let name = self.plain_string()?;
                self.expect(b':')?;
                self.value(0, false)?;
                members.push((name, from..self.at));
                if !self.comma_or(b'}')? {
                    break;
                }
            }
        }
        Some(PropertyMembers { object: start..self.at, members })
    }

    /// One value whose parent container is at nesting level `depth` (0 for a top-level
    /// property's value). `keep`: the rules read this value, so strings and numbers carry it;
    /// otherwise they carry no payload (a string as `Str(None)`, a float as `Float(0.0)`, an
    /// integer as `UInt(0)`).
    #[inline(always)]
    fn value(&mut self, depth: usize, keep: bool) -> Option<Seen<'a>> {
        // Scalars (most values) are read here, inlined into the loops over members and items;
        // containers, which recurse, in `container`.
        self.skip_ws();
        match *self.bytes.get(self.at)? {
            b'"' => {
                let max = self.limits.string_truncate_bytes;
                if keep {
                    let s = self.plain_string()?;
                    (s.len() <= max).then_some(Seen::Str(Some(Cow::Borrowed(s))))
                } else {
                    (self.skip_string()? <= max).then_some(Seen::Str(None))
                }
            }
            open @ (b'{' | b'[') => self.container(depth, open),
            b't' => self.literal(b"true", Seen::Bool(true)),
            b'f' => self.literal(b"false", Seen::Bool(false)),
            b'n' => self.literal(b"null", Seen::Null),
            b'-' | b'0'..=b'9' => self.number(keep),
            _ => None,
        }
    }

    /// An object or array (the cursor is on `open`) whose parent is at nesting level `depth`.
    #[inline(never)]
    fn container(&mut self, depth: usize, open: u8) -> Option<Seen<'a>> {
        let level = self.enter(depth)?;
        let close = if open == b'{' { b'}' } else { b']' };
        let mut count = 0usize;
        if self.peek_is(close) {
            self.at += 1;
        } else {
            loop {
                if open == b'{' {
                    self.skip_ws();
                    self.skip_string()?;
                    self.expect(b':')?;
                }
                self.value(level, false)?;
                count += 1;
                if !self.comma_or(close)? {
                    break;
                }
            }
        }
        if open == b'{' {
            (count < self.limits.object_keys_below).then_some(Seen::Object)
        } else {
            (count < self.limits.array_items_below).then_some(Seen::Array)
        }
    }

    /// Steps into a container (the cursor is on its bracket); gives up where the walk would
    /// report it as nested too deep.
    #[inline]
    fn enter(&mut self, depth: usize) -> Option<usize> {
        let level = depth + 1;
        self.at += 1;
        (level <= self.limits.max_depth).then_some(level)
    }

    #[inline]
    fn literal(&mut self, word: &[u8], seen: Seen<'a>) -> Option<Seen<'a>> {
        self.bytes[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            seen
        })
    }

    /// A number by the JSON grammar, without an exponent and with at most 18 integer digits, so
    /// that an integer always fits the walk's `i64` / `u64` as written.
    fn number(&mut self, keep: bool) -> Option<Seen<'a>> {
        let negative = self.bytes[self.at] == b'-';
        if negative {
            self.at += 1;
        }
        let start = self.at;
        match *self.bytes.get(self.at)? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
                    self.at += 1;
                }
            }
            _ => return None,
        }
        let digits = &self.bytes[start..self.at];
        if digits.len() > 18 {
            return None;
        }
        let fraction = self.bytes.get(self.at) == Some(&b'.');
        if fraction {
            self.at += 1;
            let first = self.at;
            while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
                self.at += 1;
            }
            if self.at == first {
                return None;
            }
        }
        // An exponent, or a digit after a leading zero (`01`, not JSON).
        if let Some(b'e' | b'E' | b'0'..=b'9') = self.bytes.get(self.at) {
            return None;
        }
        if fraction {
            return (!keep).then_some(Seen::Float(0.0));
        }
        // The walk reads `-0` as the float -0.0.
        if negative && digits == b"0" {
            return None;
        }
        if !keep {
            return Some(Seen::UInt(0));
        }
        let magnitude = digits.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        // At most 18 digits: below 10^18, within `i64`.
        Some(if negative { Seen::Int(-(magnitude as i64)) } else { Seen::UInt(magnitude) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time search stops exactly where a byte-by-byte reading of [`STOPS`] does,
    /// for every stop byte and its neighbours (the space and `!` next to the quote, 0x1f and
    /// 0x7f, a non-ASCII byte) at every offset in strings of every length up to three words.
    #[test]
    fn find_stop_stops_where_a_byte_by_byte_search_does() {
        let fillers = [b'a', b' ', b'!', b'#', 0x7f, 0xc3, b'Z'];
        let specials = [b'"', b'\\', 0x00, 0x01, b'\n', 0x1f, b' ', b'!', b'#', b'"' ^ 0x80];
        for len in 0..=24 {
            for &filler in &fillers {
                for &special in &specials {
                    for at in 0..=len {
                        let mut bytes = vec![filler; len];
                        if at < len {
                            bytes[at] = special;
                        }
                        for start in 0..=len {
                            let expected = (start..len).find(|&i| STOPS[usize::from(bytes[i])]);
                            assert_eq!(find_stop(&bytes, start), expected, "{bytes:?} from {start}");
                        }
                    }
                }
            }
        }
    }

    /// The scanner answers (does not hand the record to the walk) for ordinary records: spaces,
    /// punctuation and non-ASCII text in strings, escapes in values nobody reads, nesting, all
    /// kinds of numbers it handles.
    #[test]
    fn ordinary_records_take_the_fast_path() {
        let records = [
            r#"{"event":"Page View","properties":{"time":1767225600,"distinct_id":"user 1!","$insert_id":"a-1"}}"#,
            r#"{"event":"Café #1","properties":{"time":1767225600123,"distinct_id":"","$insert_id":"b","url":"https://x.test/a?b=1&c=d#e","note":"say \"hi\"\n"}}"#,
            r#"{ "event" : "e" , "properties" : { "time" : 1767225600 , "distinct_id" : "u" , "$insert_id" : "c" , "cart" : { "items" : [ 1 , -2.5 , true , null , "x" ] } } }"#,
        ];
        for record in records {
            let mut properties = Vec::new();
            assert!(scan(record, &Limits::default(), &mut properties).is_some(), "{record}");
            assert!(properties.len() >= 3, "{record}");
        }
    }
}
