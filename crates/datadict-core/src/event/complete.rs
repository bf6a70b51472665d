//! What a receiver changes in a valid event before storing it under rules such as
//! [`EventRules::TRACK`]: the time the rules gave it (absent, or later than the receiver's
//! clock), the connection's address as `ip` (`ip=1`, reference), and the project token removed
//! (it authenticates the event, and tokens are kept only as hashes). A record is parsed and
//! written again only when one of these applies; most tracked events carry their own time.

use super::{EventCheck, EventRules, TokenField};
use crate::dictionary::RewriteError;
use serde_json::Value;

/// What to change in one event's `properties`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Completion<'a> {
    /// `time` to write, in milliseconds since the epoch, when the rules set it
    /// ([`EventCheck::time_set`]).
    pub time_ms: Option<i64>,
    /// `ip` to add: the connection's address, for an event that has no `ip` of its own.
    pub ip: Option<&'a str>,
    /// Whether to remove `token`.
    pub remove_token: bool,
}

impl<'a> Completion<'a> {
    /// What `rules` ask to change in the event `check` describes, with `ip` the connection's
    /// address when the request asked for it (`ip=1`).
    pub fn of(check: &EventCheck<'_>, rules: &EventRules, ip: Option<&'a str>) -> Self {
        let has = |name: &str| check.properties.iter().any(|p| p.name == name);
        Self {
            time_ms: check.time_set.and(check.time_ms),
            ip: ip.filter(|_| !has("ip")),
            remove_token: matches!(rules.token, TokenField::Credential(_)) && has("token"),
        }
    }

    /// Whether the record is stored as it came.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Applies `completion` to a record (one JSON object with `properties`), keeping every other key
/// in its order; a new `time` or `ip` goes last.
pub fn complete_event(record: &[u8], completion: &Completion<'_>) -> Result<Vec<u8>, RewriteError> {
    let mut value: Value = serde_json::from_slice(record)?;
    if let Some(Value::Object(props)) = value.get_mut("properties") {
        if let Some(ms) = completion.time_ms {
            props.insert("time".to_owned(), Value::from(ms));
        }
        if let Some(ip) = completion.ip {
            props.insert("ip".to_owned(), Value::from(ip));
        }
        if completion.remove_token {
            props.shift_remove("token");
        }
    }
    Ok(serde_json::to_vec(&value)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{check_event_with_rules, TimeSet};
    use crate::Limits;

    const NOW: i64 = 1_767_225_600_000;

    /// The completion of a record under TRACK (with the token optional, as for a request
    /// authenticated by its header), and the record it gives.
    fn complete(record: &str, ip: Option<&str>) -> (Option<TimeSet>, String) {
        let rules = EventRules { token: TokenField::Credential(crate::event::Presence::Optional), ..EventRules::TRACK };
        let check = check_event_with_rules(record.as_bytes(), &rules, &Limits::default(), NOW);
        assert!(check.is_valid(), "{record}: {:?}", check.issues);
        let completion = Completion::of(&check, &rules, ip);
        let out = if completion.is_empty() { record.to_owned() } else { String::from_utf8(complete_event(record.as_bytes(), &completion).unwrap()).unwrap() };
        (check.time_set, out)
    }

    #[test]
    fn the_time_the_ip_and_the_token() {
        // Nothing to change: stored as sent.
        let plain = r#"{"event":"e","properties":{"time":1767225500,"x":1}}"#;
        assert_eq!(complete(plain, None), (None, plain.to_owned()));
        // An absent time is the receiver's; a later one is set to it, in place.
        assert_eq!(complete(r#"{"event":"e","properties":{"x":1}}"#, None), (Some(TimeSet::Absent), format!(r#"{{"event":"e","properties":{{"x":1,"time":{NOW}}}}}"#)));
        assert_eq!(
            complete(r#"{"event":"e","properties":{"time":1767229200.5,"x":1}}"#, None),
            (Some(TimeSet::Future), format!(r#"{{"event":"e","properties":{{"time":{NOW},"x":1}}}}"#))
        );
        // `ip` is added unless the event has one; the token is removed.
        let tracked = r#"{"event":"e","properties":{"token":"t","time":1767225500}}"#;
        assert_eq!(complete(tracked, Some("10.0.0.1")).1, r#"{"event":"e","properties":{"time":1767225500,"ip":"10.0.0.1"}}"#);
        let own_ip = r#"{"event":"e","properties":{"time":1767225500,"ip":"1.2.3.4"}}"#;
        assert_eq!(complete(own_ip, Some("10.0.0.1")).1, own_ip);
    }

    /// Under IMPORT, `token` is an ordinary property and the time is always the event's.
    #[test]
    fn import_rules_change_nothing() {
        let record = r#"{"event":"e","properties":{"time":1767225500,"distinct_id":"u","$insert_id":"i","token":"t"}}"#;
        let check = check_event_with_rules(record.as_bytes(), &EventRules::IMPORT, &Limits::default(), NOW);
        assert!(Completion::of(&check, &EventRules::IMPORT, None).is_empty());
        assert_eq!(check.token, None);
    }
}
