//! Checks of one event record (spec §2.8) against the import rules of FACTS.md, in one borrowing
//! pass over the record's bytes: no JSON DOM is built, strings are borrowed from the input when
//! they hold no escapes, and nothing is allocated for a valid event besides the list of its
//! top-level properties.
//!
//! The result is every issue found plus what the rules extracted (`event`, `time` in
//! milliseconds, `distinct_id`, `$insert_id`, each top-level property's JSON type), so a server
//! can store the event and a dictionary check can run without parsing the record again.

use crate::issue::{child_path, index_path, Issue, IssueCode};
use crate::limits::Limits;
use crate::schema::PropertyType;
use crate::time::{format_date, format_datetime, Date};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A top-level property of an event as the checker saw it: its name and its JSON type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertySeen<'a> {
    pub name: Cow<'a, str>,
    /// `Integer` for a number written without fraction or exponent, `Number` otherwise.
    pub kind: PropertyType,
}

/// What [`check_event`] found in one record: every issue, the warnings (values the service
/// accepts but changes), and the fields the import rules need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventCheck<'a> {
    /// `event`, when it is a string.
    pub event: Option<Cow<'a, str>>,
    /// `properties.time` converted to milliseconds since the epoch, when it is a number.
    pub time_ms: Option<i64>,
    /// `properties.distinct_id`, when it is a string.
    pub distinct_id: Option<Cow<'a, str>>,
    /// `properties.$insert_id`, when it is a string.
    pub insert_id: Option<Cow<'a, str>>,
    /// Every top-level property in input order (including `time`, `distinct_id`, `$insert_id`).
    pub properties: Vec<PropertySeen<'a>>,
    /// The size of the record in bytes.
    pub bytes: usize,
    /// Problems that make the import reject the record.
    pub issues: Vec<Issue>,
    /// Values the import accepts but alters (strings over the truncation length).
    pub warnings: Vec<Issue>,
}

/// The de-duplication key of an event (FACTS.md: event, time, distinct_id, `$insert_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKey<'k> {
    pub event: &'k str,
    pub time_ms: i64,
    pub distinct_id: &'k str,
    pub insert_id: &'k str,
}

impl EventCheck<'_> {
    /// Whether the record passes every rule (warnings do not count).
    pub fn is_valid(&self) -> bool {
        self.issues.is_empty()
    }

    /// The key of a record that passes every rule, `None` for one that does not: the rules make
    /// the four fields required, so a caller that stores valid records needs no second check.
    pub fn valid_key(&self) -> Option<EventKey<'_>> {
        if !self.is_valid() {
            return None;
        }
        Some(EventKey {
            event: self.event.as_deref()?,
            time_ms: self.time_ms?,
            distinct_id: self.distinct_id.as_deref()?,
            insert_id: self.insert_id.as_deref()?,
        })
    }

    /// Cuts `event` and `distinct_id` to what the service stores of them (strings over `max` bytes
    /// are truncated, FACTS.md), so that the columns an event is found, counted, de-duplicated and
    /// dropped by agree with its stored record ([`truncate_strings`] cuts the record the same
    /// way). `$insert_id` is at most 36 bytes when valid; `time` is a number.
    pub fn truncate_key_fields(&mut self, max: usize) {
        for field in [&mut self.event, &mut self.distinct_id].into_iter().flatten() {
            if field.len() > max {
                *field = match std::mem::take(field) {
                    Cow::Borrowed(s) => Cow::Borrowed(truncated(s, max)),
                    Cow::Owned(mut s) => {
                        s.truncate(truncated(&s, max).len());
                        Cow::Owned(s)
                    }
                };
            }
        }
    }

    /// Detaches the result from the input buffer.
    pub fn into_owned(self) -> EventCheck<'static> {
        let own = |c: Option<Cow<'_, str>>| c.map(|c| Cow::Owned(c.into_owned()));
        EventCheck {
            event: own(self.event),
            time_ms: self.time_ms,
            distinct_id: own(self.distinct_id),
            insert_id: own(self.insert_id),
            properties: self
                .properties
                .into_iter()
                .map(|p| PropertySeen { name: Cow::Owned(p.name.into_owned()), kind: p.kind })
                .collect(),
            bytes: self.bytes,
            issues: self.issues,
            warnings: self.warnings,
        }
    }
}

/// The longest start of `s` of at most `max` bytes that ends on a character boundary: what the
/// service keeps of a string over the truncation length (FACTS.md: "strings are truncated at 255
/// bytes"; a character is never split).
pub fn truncated(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

/// Truncates every string value in `value` (at any depth; object keys are left as they are) with
/// [`truncated`].
pub fn truncate_strings(value: &mut serde_json::Value, max: usize) {
    match value {
        serde_json::Value::String(s) if s.len() > max => {
            let keep = truncated(s, max).len();
            s.truncate(keep);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| truncate_strings(v, max)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| truncate_strings(v, max)),
        _ => {}
    }
}

/// Checks one event record given as the bytes of one JSON object and returns every issue with
/// what it extracted. `now_ms` is the receiver's clock in milliseconds since the epoch; the core
/// never reads a clock itself.
///
/// Rules (all from FACTS.md "Event import" unless noted): `event` (spec §2.8) is a non-empty
/// string; `properties` (spec §2.8) is an object holding `time` (seconds or milliseconds since the
/// epoch, not before 1971-01-01, at most `limits.max_future_ms` ahead of `now_ms`), `distinct_id`
/// (a string, may be empty, not a forbidden placeholder) and `$insert_id` (1–36 bytes of
/// `[A-Za-z0-9-]`, not a forbidden placeholder); the record is under 1 MB, has fewer than 255
/// properties, nests at most 3 levels, nested objects have fewer than 255 keys and arrays fewer than
/// 255 items. Strings over 255 bytes are reported as warnings: the service truncates them.
pub fn check_event<'a>(record: &'a [u8], limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_event_with(record, limits, now_ms, true)
}

/// [`check_event`] without its fast path: every record goes through the serde walk, the
/// reference the fast path is tested against. Not for production use.
#[doc(hidden)]
pub fn check_event_reference<'a>(record: &'a [u8], limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_event_with(record, limits, now_ms, false)
}

/// [`check_event`] for a record already known to be UTF-8 (a caller that validated it, to keep
/// it as text, need not pay for a second validation).
pub fn check_event_text<'a>(record: &'a str, limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_text_with(record, limits, now_ms, true)
}

/// The fast path alone, on the record that starts at `at` in `body` (the text of a whole request
/// body, say): the record's check and where the record ends, or `None` where the scanner gives up.
/// The record is then found by other means and checked with [`check_event_walk`]. The check is
/// the one [`check_event_text`] gives for the record alone.
pub(crate) fn check_event_at<'a>(body: &'a str, at: usize, limits: &Limits, now_ms: i64) -> Option<(EventCheck<'a>, usize)> {
    let mut properties = Vec::with_capacity(32);
    let (found, end) = scan::scan_at(body, at, limits, &mut properties)?;
    let mut check = EventCheck { bytes: end - at, properties, ..EventCheck::default() };
    finish(&mut check, found, limits, now_ms);
    Some((sized(check, limits), end))
}

/// [`check_event_text`] without trying the fast path, for a record it already gave up on.
pub(crate) fn check_event_walk<'a>(record: &'a str, limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_text_with(record, limits, now_ms, false)
}

fn check_event_with<'a>(record: &'a [u8], limits: &Limits, now_ms: i64, fast: bool) -> EventCheck<'a> {
    // Validating UTF-8 once for the whole record (an ASCII fast path) and then parsing as `str`
    // spares serde_json a validation per string, which was the largest single cost of the pass.
    match std::str::from_utf8(record) {
        Ok(text) => check_text_with(text, limits, now_ms, fast),
        Err(e) => sized(not_json(record.len(), &e.to_string()), limits),
    }
}

fn check_text_with<'a>(text: &'a str, limits: &Limits, now_ms: i64, fast: bool) -> EventCheck<'a> {
    let mut ctx = Ctx {
        limits,
        check: EventCheck { bytes: text.len(), properties: Vec::with_capacity(32), ..EventCheck::default() },
        path: Vec::new(),
        deep_reported: false,
    };
    // Most records take the scanner (`scan.rs`); it gives up on anything the walk would report on
    // or that it does not handle, and the walk then decides.
    if fast {
        if let Some(found) = scan::scan(text, limits, &mut ctx.check.properties) {
            let mut check = ctx.check;
            finish(&mut check, found, limits, now_ms);
            return sized(check, limits);
        }
        ctx.check.properties.clear();
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = RecordSeed { ctx: &mut ctx }.deserialize(&mut de).and_then(|found| de.end().map(|()| found));
    let mut check = ctx.check;
    match parsed {
        // Findings inside a record that is not JSON would mislead: report the syntax alone.
        Err(err) => check = not_json(check.bytes, &err.to_string()),
        Ok(found) => finish(&mut check, found, limits, now_ms),
    }
    sized(check, limits)
}

/// The check of a record of `bytes` bytes that is not JSON: the syntax error alone.
fn not_json(bytes: usize, err: &str) -> EventCheck<'static> {
    let mut check = EventCheck { bytes, ..EventCheck::default() };
    check.issues.push(Issue::new(
        "",
        IssueCode::InvalidJson,
        format!("the record is not valid JSON ({err}); send one JSON object per event"),
    ));
    check
}

/// Adds the size rule, first: it holds whatever else was found.
fn sized<'a>(mut check: EventCheck<'a>, limits: &Limits) -> EventCheck<'a> {
    if check.bytes >= limits.event_bytes_below {
        check.issues.insert(
            0,
            Issue::new(
                "",
                IssueCode::TooLarge,
                format!(
                    "the event is {} bytes of JSON; it must be under {} bytes: move large values out of the event",
                    check.bytes, limits.event_bytes_below
                ),
            ),
        );
    }
    check
}

/// Checks one event given as JSON text and returns only its issues (warnings excluded).
pub fn validate_event_json(text: &str, limits: &Limits, now_ms: i64) -> Vec<Issue> {
    check_event(text.as_bytes(), limits, now_ms).issues
}

/// The value of a field as the walk saw it; strings are kept only for the fields the rules read.
#[derive(Debug)]
enum Seen<'de> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(Option<Cow<'de, str>>),
    Array,
    Object,
}

impl Seen<'_> {
    fn kind(&self) -> PropertyType {
        match self {
            Seen::Null => PropertyType::Null,
            Seen::Bool(_) => PropertyType::Boolean,
            Seen::Int(_) | Seen::UInt(_) => PropertyType::Integer,
            Seen::Float(_) => PropertyType::Number,
            Seen::Str(_) => PropertyType::String,
            Seen::Array => PropertyType::Array,
            Seen::Object => PropertyType::Object,
        }
    }

    /// Names the value for a message: its type and, for scalars, the value itself.
    fn describe(&self) -> String {
        match self {
            Seen::Null => "null".to_owned(),
            Seen::Bool(b) => format!("the boolean {b}"),
            Seen::Int(n) => format!("the number {n}"),
            Seen::UInt(n) => format!("the number {n}"),
            Seen::Float(n) => format!("the number {n}"),
            Seen::Str(Some(s)) => format!("the string {:?}", excerpt(s)),
            Seen::Str(None) => "a string".to_owned(),
            Seen::Array => "an array".to_owned(),
            Seen::Object => "an object".to_owned(),
        }
    }
}

fn excerpt(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(40) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

#[derive(Debug)]
enum Seg<'de> {
    Key(Cow<'de, str>),
    Index(usize),
}

struct Ctx<'l, 'de> {
    limits: &'l Limits,
    check: EventCheck<'de>,
    /// The path of the value being walked, built into a string only when an issue is reported.
    path: Vec<Seg<'de>>,
    /// `too_deep` is reported once per top-level property, not once per nested level.
    deep_reported: bool,
}

impl Ctx<'_, '_> {
    fn path_string(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            out = match seg {
                Seg::Key(k) => child_path(&out, k),
                Seg::Index(i) => index_path(&out, *i),
            };
        }
        out
    }

    fn issue(&mut self, code: IssueCode, message: String) {
        let path = self.path_string();
        self.check.issues.push(Issue::new(path, code, message));
    }
}

/// The fields of a record that the rules read after the walk.
#[derive(Default)]
struct Found<'de> {
    is_object: Option<Seen<'de>>,
    event: Option<Seen<'de>>,
    properties: Option<Seen<'de>>,
    time: Option<Seen<'de>>,
    distinct_id: Option<Seen<'de>>,
    insert_id: Option<Seen<'de>>,
    unknown_top: Vec<Cow<'de, str>>,
}

/// A map key, borrowed from the input when it holds no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

struct RecordSeed<'c, 'l, 'de> {
    ctx: &'c mut Ctx<'l, 'de>,
}

impl<'de> DeserializeSeed<'de> for RecordSeed<'_, '_, 'de> {
    type Value = Found<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RecordSeed<'_, '_, 'de> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = Found::default();
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "event" => {
                    self.ctx.path.push(Seg::Key(Cow::Borrowed("event")));
                    found.event = Some(map.next_value_seed(Walk { ctx: self.ctx, depth: 0, keep: true })?);
                    self.ctx.path.pop();
                }
                "properties" => {
                    self.ctx.path.push(Seg::Key(Cow::Borrowed("properties")));
                    found.properties = Some(map.next_value_seed(PropertiesSeed { ctx: self.ctx, found: &mut found })?);
                    self.ctx.path.pop();
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    found.unknown_top.push(key);
                }
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Found { is_object: Some(Seen::Array), ..Found::default() })
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Bool(v)), ..Found::default() })
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Int(v)), ..Found::default() })
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::UInt(v)), ..Found::default() })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Float(v)), ..Found::default() })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Str(Some(Cow::Owned(v.to_owned())))), ..Found::default() })
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Found { is_object: Some(Seen::Null), ..Found::default() })
    }
}

/// Walks the `properties` object: counts properties, records each one's type and keeps the values
/// of `time`, `distinct_id` and `$insert_id`.
struct PropertiesSeed<'c, 'f, 'l, 'de> {
    ctx: &'c mut Ctx<'l, 'de>,
    found: &'f mut Found<'de>,
}

impl<'de> DeserializeSeed<'de> for PropertiesSeed<'_, '_, '_, 'de> {
    type Value = Seen<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PropertiesSeed<'_, '_, '_, 'de> {
    type Value = Seen<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of properties")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while let Some(Key(name)) = map.next_key()? {
            let slot = match name.as_ref() {
                "time" => Some(&mut self.found.time),
                "distinct_id" => Some(&mut self.found.distinct_id),
                "$insert_id" => Some(&mut self.found.insert_id),
                _ => None,
            };
            self.ctx.path.push(Seg::Key(name.clone()));
            self.ctx.deep_reported = false;
            let seen = map.next_value_seed(Walk { ctx: self.ctx, depth: 0, keep: slot.is_some() })?;
            self.ctx.path.pop();
            self.ctx.check.properties.push(PropertySeen { name, kind: seen.kind() });
            if let Some(slot) = slot {
                *slot = Some(seen);
            }
        }
        Ok(Seen::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Seen::Array)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Seen::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Seen::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Seen::UInt(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Seen::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Seen::Str(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Seen::Null)
    }
}

/// Walks any value below the top level, checking nesting depth, object keys, array items and
/// string lengths. `depth` is the nesting level of the value's parent container (0 for the value
/// of a top-level property).
struct Walk<'c, 'l, 'de> {
    ctx: &'c mut Ctx<'l, 'de>,
    depth: usize,
    /// Whether to keep a string's value (only the fields the rules read are kept).
    keep: bool,
}

impl Walk<'_, '_, '_> {
    fn enter(&mut self, what: &str) -> usize {
        let level = self.depth + 1;
        if level > self.ctx.limits.max_depth && !self.ctx.deep_reported {
            self.ctx.deep_reported = true;
            let max = self.ctx.limits.max_depth;
            self.ctx.issue(
                IssueCode::TooDeep,
                format!("{what} here is nested {level} levels deep; at most {max} levels are allowed: flatten the value"),
            );
        }
        level
    }

    fn string(&mut self, len: usize) {
        let max = self.ctx.limits.string_truncate_bytes;
        if len > max {
            let path = self.ctx.path_string();
            self.ctx.check.warnings.push(Issue::new(
                path,
                IssueCode::StringTruncated,
                format!("the string is {len} bytes; the service keeps the first {max} bytes, shorten it to keep all of it"),
            ));
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_, 'de> {
    type Value = Seen<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_, 'de> {
    type Value = Seen<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        let level = self.enter("an object");
        let mut keys = 0usize;
        while let Some(Key(key)) = map.next_key()? {
            keys += 1;
            self.ctx.path.push(Seg::Key(key));
            map.next_value_seed(Walk { ctx: self.ctx, depth: level, keep: false })?;
            self.ctx.path.pop();
        }
        let limit = self.ctx.limits.object_keys_below;
        if keys >= limit {
            self.ctx.issue(
                IssueCode::TooManyKeys,
                format!("the object has {keys} keys; a nested object must have fewer than {limit}"),
            );
        }
        Ok(Seen::Object)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        let level = self.enter("an array");
        let mut items = 0usize;
        loop {
            self.ctx.path.push(Seg::Index(items));
            let next = seq.next_element_seed(Walk { ctx: self.ctx, depth: level, keep: false })?;
            self.ctx.path.pop();
            if next.is_none() {
                break;
            }
            items += 1;
        }
        let limit = self.ctx.limits.array_items_below;
        if items >= limit {
            self.ctx.issue(
                IssueCode::TooManyItems,
                format!("the array has {items} items; an array must have fewer than {limit}"),
            );
        }
        Ok(Seen::Array)
    }

    fn visit_borrowed_str<E: de::Error>(mut self, v: &'de str) -> Result<Self::Value, E> {
        self.string(v.len());
        Ok(Seen::Str(self.keep.then_some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<Self::Value, E> {
        self.string(v.len());
        Ok(Seen::Str(self.keep.then(|| Cow::Owned(v.to_owned()))))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Seen::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Seen::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Seen::UInt(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Seen::Float(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Seen::Null)
    }
}

/// A number below this is read as seconds, at or above it as milliseconds. 10^11 seconds is in the
/// year 5138 and 10^11 milliseconds is in 1973, so any time the rules accept is read one way only
/// (FACTS.md: "seconds or milliseconds since epoch").
const SECONDS_BELOW: f64 = 1e11;

fn time_to_ms(seen: &Seen<'_>) -> Option<i64> {
    let v = match *seen {
        Seen::Int(n) => n as f64,
        Seen::UInt(n) => n as f64,
        Seen::Float(f) => f,
        _ => return None,
    };
    if let (Seen::Int(_) | Seen::UInt(_), false) = (seen, v.abs() < SECONDS_BELOW) {
        // Whole milliseconds: keep the exact integer instead of going through f64.
        return Some(match *seen {
            Seen::Int(n) => n,
            Seen::UInt(n) => i64::try_from(n).unwrap_or(i64::MAX),
            _ => unreachable!(),
        });
    }
    let ms = if v.abs() < SECONDS_BELOW { v * 1000.0 } else { v };
    // `as` saturates, so absurd values still compare as too early or too late.
    Some(ms.floor() as i64)
}

/// Applies the rules that need the whole record.
fn finish<'de>(check: &mut EventCheck<'de>, found: Found<'de>, limits: &Limits, now_ms: i64) {
    let issues = &mut check.issues;
    if let Some(other) = found.is_object {
        issues.push(Issue::new(
            "",
            IssueCode::WrongType,
            format!("the record is {}; an event must be an object with `event` and `properties`", other.describe()),
        ));
        return;
    }
    for key in &found.unknown_top {
        issues.push(Issue::new(
            child_path("", key),
            IssueCode::UnknownField,
            format!("`{key}` is not a field of an event; an event has `event` and `properties`: move it under `properties`"),
        ));
    }

    match found.event {
        None => issues.push(missing("event", "the name of the user action")),
        Some(Seen::Str(Some(name))) => {
            if name.trim().is_empty() {
                issues.push(Issue::new("event", IssueCode::InvalidName, "`event` is empty; give the name of the user action"));
            }
            check.event = Some(name);
        }
        Some(other) => issues.push(wrong_type("event", &other, "a string, the name of the user action")),
    }

    match found.properties {
        None => {
            issues.push(missing("properties", "an object with `time`, `distinct_id` and `$insert_id`"));
            return;
        }
        Some(Seen::Object) => {}
        Some(other) => {
            issues.push(wrong_type("properties", &other, "an object with `time`, `distinct_id` and `$insert_id`"));
            return;
        }
    }

    let count = check.properties.len();
    if count >= limits.properties_below {
        issues.push(Issue::new(
            "properties",
            IssueCode::TooManyProperties,
            format!("the event has {count} properties; it must have fewer than {}", limits.properties_below),
        ));
    }

    const TIME: &str = "properties.time";
    match found.time {
        None => issues.push(missing(TIME, "the time of the action in seconds or milliseconds since the epoch")),
        Some(seen) => match time_to_ms(&seen) {
            None => issues.push(wrong_type(TIME, &seen, "a number of seconds or milliseconds since the epoch")),
            Some(ms) => {
                // Described only for a message: formatting it for every event cost 3 % of a check.
                let raw = || seen.describe();
                if ms < limits.min_time_ms {
                    issues.push(Issue::new(
                        TIME,
                        IssueCode::TimeTooEarly,
                        format!(
                            "`{TIME}` is {} ({}); it must be on or after {}, in seconds or milliseconds since the epoch",
                            raw(),
                            format_date(ms),
                            Date::from_ms(limits.min_time_ms)
                        ),
                    ));
                } else if ms > now_ms.saturating_add(limits.max_future_ms) {
                    issues.push(Issue::new(
                        TIME,
                        IssueCode::TimeInFuture,
                        format!(
                            "`{TIME}` is {} ({}); it must be at most {} s after the receiver's clock ({}): send the time the action took place, in seconds or milliseconds since the epoch",
                            raw(),
                            format_datetime(ms),
                            limits.max_future_ms / 1000,
                            format_datetime(now_ms)
                        ),
                    ));
                }
                check.time_ms = Some(ms);
            }
        },
    }

    const DISTINCT_ID: &str = "properties.distinct_id";
    match found.distinct_id {
        None => issues.push(missing(DISTINCT_ID, "the user's identifier (an empty string when the event has no user)")),
        Some(Seen::Str(Some(id))) => {
            if limits.is_forbidden_id(&id) {
                issues.push(forbidden(DISTINCT_ID, &id, "use the user's real identifier, or an empty string when the event has no user"));
            }
            check.distinct_id = Some(id);
        }
        Some(other) => issues.push(wrong_type(DISTINCT_ID, &other, "a string")),
    }

    const INSERT_ID: &str = "properties.$insert_id";
    match found.insert_id {
        None => issues.push(missing(INSERT_ID, "a de-duplication id of 1 to 36 characters from `A-Z`, `a-z`, `0-9` and `-`")),
        Some(Seen::Str(Some(id))) => {
            check_insert_id(&id, limits, issues);
            check.insert_id = Some(id);
        }
        Some(other) => issues.push(wrong_type(INSERT_ID, &other, "a string of 1 to 36 characters from `A-Z`, `a-z`, `0-9` and `-`")),
    }
}

/// The bytes an `$insert_id` may hold: `A-Z`, `a-z`, `0-9` and `-`.
static INSERT_ID_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric() || b == b'-' as usize;
        b += 1;
    }
    t
};

/// FACTS.md: `$insert_id` is 1–36 bytes of `[A-Za-z0-9-]` and not a forbidden value.
pub fn check_insert_id(id: &str, limits: &Limits, issues: &mut Vec<Issue>) {
    const INSERT_ID: &str = "properties.$insert_id";
    if id.is_empty() {
        issues.push(Issue::new(INSERT_ID, IssueCode::InvalidInsertId, "`properties.$insert_id` is empty; give 1 to 36 characters from `A-Z`, `a-z`, `0-9` and `-`"));
        return;
    }
    // The byte test (a table) is the common, fast path; the character is found only to name it.
    if !id.bytes().all(|b| INSERT_ID_BYTES[usize::from(b)]) {
        let bad = id.chars().find(|&c| !c.is_ascii() || !INSERT_ID_BYTES[c as usize]).unwrap_or('?');
        issues.push(Issue::new(
            INSERT_ID,
            IssueCode::InvalidInsertId,
            format!("`properties.$insert_id` {:?} contains {bad:?}; only `A-Z`, `a-z`, `0-9` and `-` are allowed (hash other ids)", excerpt(id)),
        ));
    }
    if id.len() > limits.max_insert_id_bytes {
        issues.push(Issue::new(
            INSERT_ID,
            IssueCode::InsertIdTooLong,
            format!("`properties.$insert_id` is {} bytes; it must be at most {} bytes (hash longer ids)", id.len(), limits.max_insert_id_bytes),
        ));
    }
    if limits.is_forbidden_id(id) {
        issues.push(forbidden(INSERT_ID, id, "generate a unique id per event"));
    }
}

fn forbidden(path: &str, id: &str, fix: &str) -> Issue {
    Issue::new(path, IssueCode::ForbiddenId, format!("`{path}` is {id:?}, a placeholder value the import rejects; {fix}"))
}

fn missing(path: &str, what: &str) -> Issue {
    Issue::new(path, IssueCode::MissingField, format!("`{path}` is required; give {what}"))
}

fn wrong_type(path: &str, found: &Seen<'_>, expected: &str) -> Issue {
    Issue::new(path, IssueCode::WrongType, format!("`{path}` is {}; it must be {expected}", found.describe()))
}

mod scan;
#[cfg(test)]
mod tests;
