//! Checks of one event record (spec §2.8) against the import rules of FACTS.md (or a route's
//! variant of them, [`EventRules`]), in one borrowing pass over the record's bytes: no JSON DOM is
//! built, strings are borrowed from the input when they hold no escapes, and nothing is allocated
//! for a valid event besides the list of its top-level properties.
//!
//! The result is every issue found plus what the rules extracted (`event`, `time` in
//! milliseconds, `distinct_id`, `$insert_id`, each top-level property's JSON type), so a server
//! can store the event and a dictionary check can run without parsing the record again.

//!
//! The check lives in four files: this module (the results and the entry points), `walk.rs` (the
//! serde walk over the record, which finds every issue that can be seen while walking), `scan.rs`
//! (the fast path, which finds the same fields without serde where the walk would find nothing)
//! and `rules.rs` (the rules that need the whole record, applied after either, with the
//! [`EventRules`] of each route). `complete.rs` is what a receiver then changes in a valid event
//! under `/track`'s rules (the time it gave it, `ip`, the token removed).

use crate::issue::{Issue, IssueCode};
use crate::limits::Limits;
use crate::schema::PropertyType;
use rules::finish;
use serde::de::DeserializeSeed;
use std::borrow::Cow;
use walk::{Ctx, Found, RecordSeed, Seen};

pub use complete::{complete_event, complete_event_with, ClientIp, Completion, PropertyLayout};
pub use rules::{check_insert_id, EventRules, Presence, TimeRule, TimeSet, TokenField, REQUIRED_EVENT_PROPERTIES};

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
    /// `properties.token`, when it is a string and the rules read it as the project token
    /// ([`TokenField::Credential`]).
    pub token: Option<Cow<'a, str>>,
    /// Set when the rules gave the event the receiver's clock as its time ([`TimeRule::ReceiverClock`]):
    /// `time_ms` is then that clock, and the stored record must carry it.
    pub time_set: Option<TimeSet>,
    /// Every top-level property in input order (including `time`, `distinct_id`, `$insert_id`).
    pub properties: Vec<PropertySeen<'a>>,
    /// The size of the record in bytes.
    pub bytes: usize,
    /// Problems that make the import reject the record.
    pub issues: Vec<Issue>,
    /// Values the import accepts but alters (strings over the truncation length).
    pub warnings: Vec<Issue>,
    /// Where the scanner found the members of `properties` ([`complete_event_with`]): `None`
    /// where the serde walk read the record, or where a rewrite could not use it.
    pub layout: Option<PropertyLayout>,
}

/// The de-duplication key of an event (FACTS.md: event, time, distinct_id, `$insert_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKey<'k> {
    pub event: &'k str,
    pub time_ms: i64,
    /// Empty when the event has none ([`Presence::Optional`]), as for an event without a user.
    pub distinct_id: &'k str,
    /// Empty when the event has none ([`Presence::Optional`]). A valid `$insert_id` is never
    /// empty, so an empty one means that the event cannot be de-duplicated.
    pub insert_id: &'k str,
}

impl EventCheck<'_> {
    /// Whether the record passes every rule (warnings do not count).
    pub fn is_valid(&self) -> bool {
        self.issues.is_empty()
    }

    /// The key of a record that passes every rule, `None` for one that does not: the rules make
    /// `event` and the time required (the time may be the receiver's), so a caller that stores
    /// valid records needs no second check. `distinct_id` and `$insert_id` are empty when the
    /// rules let the record leave them out.
    pub fn valid_key(&self) -> Option<EventKey<'_>> {
        if !self.is_valid() {
            return None;
        }
        Some(EventKey {
            event: self.event.as_deref()?,
            time_ms: self.time_ms?,
            distinct_id: self.distinct_id.as_deref().unwrap_or_default(),
            insert_id: self.insert_id.as_deref().unwrap_or_default(),
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
            token: own(self.token),
            time_set: self.time_set,
            properties: self
                .properties
                .into_iter()
                .map(|p| PropertySeen { name: Cow::Owned(p.name.into_owned()), kind: p.kind })
                .collect(),
            bytes: self.bytes,
            issues: self.issues,
            warnings: self.warnings,
            layout: self.layout,
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
/// 255 items. Strings over 255 bytes are reported as warnings: the service truncates them. These
/// are [`EventRules::IMPORT`]; [`check_event_with_rules`] takes another route's.
pub fn check_event<'a>(record: &'a [u8], limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_event_with(record, &EventRules::IMPORT, limits, now_ms, true)
}

/// [`check_event`] under the rules of another route ([`EventRules::TRACK`], say): which fields
/// are required and how time is treated come from `rules`, every other rule from `limits`.
pub fn check_event_with_rules<'a>(record: &'a [u8], rules: &EventRules, limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_event_with(record, rules, limits, now_ms, true)
}

/// [`check_event`] without its fast path: every record goes through the serde walk, the
/// reference the fast path is tested against. Not for production use.
#[doc(hidden)]
pub fn check_event_reference<'a>(record: &'a [u8], limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_event_with(record, &EventRules::IMPORT, limits, now_ms, false)
}

/// [`check_event_reference`] under other rules, for the same comparison. Not for production use.
#[doc(hidden)]
pub fn check_event_reference_with_rules<'a>(record: &'a [u8], rules: &EventRules, limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_event_with(record, rules, limits, now_ms, false)
}

/// [`check_event`] for a record already known to be UTF-8 (a caller that validated it, to keep
/// it as text, need not pay for a second validation).
pub fn check_event_text<'a>(record: &'a str, limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_text_with(record, &EventRules::IMPORT, limits, now_ms, true)
}

/// [`check_event_text`] under `rules`.
pub(crate) fn check_event_text_with_rules<'a>(record: &'a str, rules: &EventRules, limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_text_with(record, rules, limits, now_ms, true)
}

/// The fast path alone, on the record that starts at `at` in `body` (the text of a whole request
/// body, say): the record's check and where the record ends, or `None` where the scanner gives up.
/// The record is then found by other means and checked with [`check_event_walk`]. The check is
/// the one [`check_event_text`] gives for the record alone.
pub(crate) fn check_event_at<'a>(body: &'a str, at: usize, rules: &EventRules, limits: &Limits, now_ms: i64) -> Option<(EventCheck<'a>, usize)> {
    let mut properties = Vec::with_capacity(32);
    let (mut found, end) = scan::scan_at(body, at, limits, &mut properties)?;
    let layout = found.layout.take();
    let mut check = EventCheck { bytes: end - at, properties, layout, ..EventCheck::default() };
    finish(&mut check, found, limits, rules, now_ms);
    Some((sized(check, limits), end))
}

/// [`check_event_text`] without trying the fast path, for a record it already gave up on.
pub(crate) fn check_event_walk<'a>(record: &'a str, rules: &EventRules, limits: &Limits, now_ms: i64) -> EventCheck<'a> {
    check_text_with(record, rules, limits, now_ms, false)
}

fn check_event_with<'a>(record: &'a [u8], rules: &EventRules, limits: &Limits, now_ms: i64, fast: bool) -> EventCheck<'a> {
    // Validating UTF-8 once for the whole record (an ASCII fast path) and then parsing as `str`
    // spares serde_json a validation per string, which was the largest single cost of the pass.
    match std::str::from_utf8(record) {
        Ok(text) => check_text_with(text, rules, limits, now_ms, fast),
        Err(e) => sized(not_utf8(record.len(), &e), limits),
    }
}

fn check_text_with<'a>(text: &'a str, rules: &EventRules, limits: &Limits, now_ms: i64, fast: bool) -> EventCheck<'a> {
    let mut ctx = Ctx {
        limits,
        check: EventCheck { bytes: text.len(), properties: Vec::with_capacity(32), ..EventCheck::default() },
        path: Vec::new(),
        deep_reported: false,
    };
    // Most records take the scanner (`scan.rs`); it gives up on anything the walk would report on
    // or that it does not handle, and the walk then decides.
    if fast {
        if let Some(mut found) = scan::scan(text, limits, &mut ctx.check.properties) {
            let mut check = ctx.check;
            check.layout = found.layout.take();
            finish(&mut check, found, limits, rules, now_ms);
            return sized(check, limits);
        }
        ctx.check.properties.clear();
    }
    // Read as bytes, like every JSON read of the crate: `from_str` and `from_slice` give the same
    // results on text, but each is its own copy of serde_json's parser in a wasm build.
    let mut de = serde_json::Deserializer::from_slice(text.as_bytes());
    let parsed = RecordSeed { ctx: &mut ctx }.deserialize(&mut de).and_then(|found| de.end().map(|()| found));
    let mut check = ctx.check;
    match parsed {
        // Findings inside a record that is not JSON would mislead: report the syntax alone.
        Err(err) => check = not_json(check.bytes, &err.to_string()),
        Ok(found) => finish(&mut check, found, limits, rules, now_ms),
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

/// The check of a record of `bytes` bytes that is not UTF-8 text: JSON is UTF-8 (RFC 8259), so
/// this is said apart from a syntax error, which would send the reader looking for one.
fn not_utf8(bytes: usize, err: &std::str::Utf8Error) -> EventCheck<'static> {
    let mut check = EventCheck { bytes, ..EventCheck::default() };
    check.issues.push(Issue::new(
        "",
        IssueCode::InvalidJson,
        format!("the record is not UTF-8 text ({err}); send JSON encoded in UTF-8"),
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

mod complete;
mod rules;
mod scan;
#[cfg(test)]
mod tests;
mod walk;
