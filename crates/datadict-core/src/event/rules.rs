//! The rules of [`check_event`](super::check_event) that need the whole record, applied to what
//! the walk or the scanner found: the record is an object of `event` and `properties`, and
//! `time`, `distinct_id` and `$insert_id` are present, typed and within the limits of FACTS.md.
//!
//! Which of those fields a route requires, and what it does with a time that is absent or in the
//! future, is data: an [`EventRules`] value, [`EventRules::IMPORT`] for `/import` and
//! [`EventRules::TRACK`] for `/track`. There is one checker; the routes differ only in the value
//! they pass it.

use super::walk::{excerpt, Found, Seen};
use super::EventCheck;
use crate::issue::{child_path, nul_character, Issue, IssueCode};
use crate::limits::Limits;
use crate::time::{format_date, format_datetime, Date};

/// Whether a field must be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Presence {
    /// Absent is an issue (`missing_field`).
    Required,
    /// Absent is allowed; present, the field is checked as when it is required.
    Optional,
}

/// What becomes of `properties.time` when it is absent or later than the receiver's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TimeRule {
    /// Required; more than `Limits::max_future_ms` ahead of the receiver's clock is an issue
    /// (FACTS.md, `/import`), and a time ahead of the clock by less is set to the clock
    /// (reference, `/import`: "If the time value is set in the future, it will be overwritten
    /// with the current present time at ingestion"), as [`TimeRule::ReceiverClock`] does.
    Required,
    /// Optional: absent, the event happened at the receiver's clock; later than the clock, it is
    /// set to the clock (reference, `/track`: "If the time value is set in the future, it will be
    /// overwritten with the current present time at ingestion"). [`EventCheck::time_set`] says
    /// which, so that the receiver stores the time it gave.
    ReceiverClock,
}

/// What `properties.token` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TokenField {
    /// An ordinary property, stored with the event (no route of the service reads it so).
    Property,
    /// The project token that authenticates the event (reference, `/track`): a string, required
    /// or not, and never stored with the event (the receiver removes it, see
    /// [`super::complete_event`]). `Optional` when the request is authenticated otherwise.
    Credential(Presence),
}

/// The properties `/import` requires of every event (FACTS.md "Event import"; `event` is not a
/// property). A dictionary may not drop them: an import would then store events without them, or
/// with the check's values silently gone. The schema rules refuse `dropped: true` on them, and the
/// dictionary check never drops them, whatever an older stored dictionary says.
pub const REQUIRED_EVENT_PROPERTIES: [&str; 3] = ["time", "distinct_id", "$insert_id"];

/// The rules a route applies to each event: which fields are required and how time is treated.
/// Every other rule (sizes, nesting, forbidden ids, the `$insert_id` alphabet, truncation) is the
/// same for every route and comes from [`Limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRules {
    pub time: TimeRule,
    pub distinct_id: Presence,
    /// Optional on `/track`: an event without `$insert_id` cannot be de-duplicated, and every
    /// copy of it is stored.
    pub insert_id: Presence,
    pub token: TokenField,
}

impl EventRules {
    /// `POST /import` (FACTS.md "Event import"): `event`, `time`, `distinct_id` and `$insert_id`
    /// are required; a time more than an hour ahead is refused. The request is authenticated by
    /// its `Authorization` header, but the service's server-side libraries put the project token
    /// in each imported event's `properties.token` too: it is read as the token it is (a string
    /// when present) and not stored, as on `/track`, rather than kept as a property that every
    /// dictionary would flag and every export would carry.
    pub const IMPORT: Self = Self {
        time: TimeRule::Required,
        distinct_id: Presence::Required,
        insert_id: Presence::Required,
        token: TokenField::Credential(Presence::Optional),
    };

    /// `POST`/`GET /track` (reference, issue 19): only `event` is required, with the project
    /// token in `properties.token`; `time` defaults to the receiver's clock and is never later
    /// than it; `distinct_id` and `$insert_id` may be left out.
    pub const TRACK: Self = Self {
        time: TimeRule::ReceiverClock,
        distinct_id: Presence::Optional,
        insert_id: Presence::Optional,
        token: TokenField::Credential(Presence::Required),
    };
}

impl EventRules {
    /// What `properties` must be under these rules, for a message: an object with the fields
    /// they require (`/import`: `time`, `distinct_id` and `$insert_id`; `/track`: the token).
    fn properties(&self) -> String {
        let token = matches!(self.token, TokenField::Credential(Presence::Required));
        let required = [
            (self.time == TimeRule::Required, "`time`"),
            (self.distinct_id == Presence::Required, "`distinct_id`"),
            (self.insert_id == Presence::Required, "`$insert_id`"),
            (token, "`token` (the project token)"),
        ];
        let names: Vec<&str> = required.iter().filter(|(required, _)| *required).map(|(_, name)| *name).collect();
        match names.split_last() {
            None => "an object of the event's properties".to_owned(),
            Some((last, [])) => format!("an object with {last}"),
            Some((last, rest)) => format!("an object with {} and {last}", rest.join(", ")),
        }
    }
}

impl Default for EventRules {
    fn default() -> Self {
        Self::IMPORT
    }
}

/// Why an event's time is the receiver's clock rather than the time it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeSet {
    /// The event has no `properties.time`.
    Absent,
    /// Its time was later than the receiver's clock.
    Future,
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
pub(super) fn finish<'de>(check: &mut EventCheck<'de>, found: Found<'de>, limits: &Limits, rules: &EventRules, now_ms: i64) {
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
            issues.extend(nul_character("event", &name));
            check.event = Some(name);
        }
        Some(other) => issues.push(wrong_type("event", &other, "a string, the name of the user action")),
    }

    match found.properties {
        None => {
            issues.push(missing("properties", &rules.properties()));
            return;
        }
        Some(Seen::Object) => {}
        Some(other) => {
            issues.push(wrong_type("properties", &other, &rules.properties()));
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
        None if rules.time == TimeRule::ReceiverClock => {
            check.time_ms = Some(now_ms);
            check.time_set = Some(TimeSet::Absent);
        }
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
                } else if ms > now_ms.saturating_add(limits.max_future_ms) && rules.time == TimeRule::Required {
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
                } else if ms > now_ms {
                    check.time_set = Some(TimeSet::Future);
                }
                check.time_ms = Some(if check.time_set.is_some() { now_ms } else { ms });
            }
        },
    }
    finish_ids(check, found.distinct_id, found.insert_id, found.token, limits, rules);
}

/// The rules of `distinct_id`, `$insert_id` and `token`.
fn finish_ids<'de>(
    check: &mut EventCheck<'de>,
    distinct_id: Option<Seen<'de>>,
    insert_id: Option<Seen<'de>>,
    token: Option<Seen<'de>>,
    limits: &Limits,
    rules: &EventRules,
) {
    let issues = &mut check.issues;
    const DISTINCT_ID: &str = "properties.distinct_id";
    match distinct_id {
        None if rules.distinct_id == Presence::Optional => {}
        None => issues.push(missing(DISTINCT_ID, "the user's identifier (an empty string when the event has no user)")),
        Some(Seen::Str(Some(id))) => {
            if limits.is_forbidden_id(&id) {
                issues.push(forbidden(DISTINCT_ID, &id, "use the user's real identifier, or an empty string when the event has no user"));
            }
            issues.extend(nul_character(DISTINCT_ID, &id));
            check.distinct_id = Some(id);
        }
        Some(other) => issues.push(wrong_type(DISTINCT_ID, &other, "a string")),
    }

    const INSERT_ID: &str = "properties.$insert_id";
    match insert_id {
        None if rules.insert_id == Presence::Optional => {}
        None => issues.push(missing(INSERT_ID, "a de-duplication id of 1 to 36 characters from `A-Z`, `a-z`, `0-9` and `-`")),
        Some(Seen::Str(Some(id))) => {
            check_insert_id(&id, limits, issues);
            check.insert_id = Some(id);
        }
        Some(other) => issues.push(wrong_type(INSERT_ID, &other, "a string of 1 to 36 characters from `A-Z`, `a-z`, `0-9` and `-`")),
    }

    const TOKEN: &str = "properties.token";
    let TokenField::Credential(presence) = rules.token else { return };
    match token {
        None if presence == Presence::Optional => {}
        None => issues.push(missing(TOKEN, "the project token (or send the request with the project token as its Basic user name)")),
        Some(Seen::Str(Some(token))) => check.token = Some(token),
        Some(other) => issues.push(wrong_type(TOKEN, &other, "a string, the project token")),
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
