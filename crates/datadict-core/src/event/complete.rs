//! What a receiver changes in a valid event before storing it under rules such as
//! [`EventRules::TRACK`]: the time the rules gave it (absent, or later than the receiver's
//! clock), the connection's address as `ip` and, for an event without `distinct_id`, a
//! `distinct_id` hashed from that address (`ip=1`, reference), and the project token removed
//! (it authenticates the event, and tokens are kept only as hashes). A record is parsed and
//! written again only when one of these applies; most tracked events carry their own time.

use super::scan::property_members;
use super::{EventCheck, EventRules, TokenField};
use crate::limits::Limits;
use crate::dictionary::RewriteError;
use serde_json::Value;
use std::ops::Range;
use std::sync::LazyLock;

/// The connection's address of a request that asked for it with `ip=1`, and the `distinct_id`
/// the reference derives from it for events that have none: "use the ip address of the incoming
/// request and compute a distinct_id using a hash function if no distinct_id is provided".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIp {
    pub ip: String,
    /// 32 hex digits of the SHA-256 of `ip:` and the address: the same address gives the same id,
    /// so one sender's events are one user's. An address is easy to guess back from it: this
    /// names a sender, it does not hide one.
    pub distinct_id: String,
}

impl ClientIp {
    pub fn new(ip: impl Into<String>) -> Self {
        use sha2::{Digest, Sha256};
        let ip = ip.into();
        let digest = Sha256::digest(format!("ip:{ip}").as_bytes());
        let distinct_id = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Self { ip, distinct_id }
    }
}

/// What to change in one event's `properties`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Completion<'a> {
    /// `time` to write, in milliseconds since the epoch, when the rules set it
    /// ([`EventCheck::time_set`]).
    pub time_ms: Option<i64>,
    /// `ip` to add: the connection's address, for an event that has no `ip` of its own.
    pub ip: Option<&'a str>,
    /// `distinct_id` to add: the one hashed from the connection's address, for an event that
    /// has none ([`ClientIp`]).
    pub distinct_id: Option<&'a str>,
    /// Whether to remove `token`.
    pub remove_token: bool,
}

impl<'a> Completion<'a> {
    /// What `rules` ask to change in the event `check` describes, with `client` the connection's
    /// address when the request asked for it (`ip=1`).
    pub fn of(check: &EventCheck<'_>, rules: &EventRules, client: Option<&'a ClientIp>) -> Self {
        let has = |name: &str| check.properties.iter().any(|p| p.name == name);
        Self {
            time_ms: check.time_set.and(check.time_ms),
            ip: client.map(|c| c.ip.as_str()).filter(|_| !has("ip")),
            distinct_id: client.map(|c| c.distinct_id.as_str()).filter(|_| !has("distinct_id")),
            remove_token: matches!(rules.token, TokenField::Credential(_)) && has("token"),
        }
    }

    /// Whether the record is stored as it came.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Where the members of a record's `properties` are, as the check's scanner found them
/// ([`EventCheck::layout`]), so that [`complete_event_with`] need not scan the record again (that
/// second scan was a twentieth of a tracking request's instructions). Offsets are from the
/// record's first byte. Only given where the members follow one another without blanks and
/// `time` and `token` come at most once: the rewrite then gives what [`complete_event`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyLayout {
    /// The `properties` object, from its `{` to after its `}`.
    pub(super) object: Range<usize>,
    /// How many members it has.
    pub(super) members: usize,
    /// The `token` member, from its name's opening quote to the end of its value.
    pub(super) token: Option<Range<usize>>,
    /// The `time` member, likewise.
    pub(super) time: Option<Range<usize>>,
}

impl PropertyLayout {
    /// The layout with `at` (where the record starts in the scanned text) taken off its offsets.
    pub(super) fn relative_to(self, at: usize) -> Self {
        let shift = |r: Range<usize>| r.start - at..r.end - at;
        Self { object: shift(self.object), members: self.members, token: self.token.map(shift), time: self.time.map(shift) }
    }
}

/// [`complete_event`] with the layout the check found in this same record: the record's bytes
/// are copied around the members that change, without a second scan. Without a layout, or with
/// one that does not fit the record, it is [`complete_event`].
pub fn complete_event_with(record: &[u8], completion: &Completion<'_>, layout: Option<&PropertyLayout>) -> Result<Vec<u8>, RewriteError> {
    match layout.and_then(|layout| splice_laid_out(record, completion, layout)) {
        Some(spliced) => Ok(spliced),
        None => complete_event(record, completion),
    }
}

/// The splice of [`complete_event`] where `layout` says where the members are; `None` where the
/// layout does not fit `record` or lacks a member `completion` changes.
fn splice_laid_out(record: &[u8], completion: &Completion<'_>, layout: &PropertyLayout) -> Option<Vec<u8>> {
    let object = layout.object.clone();
    let member_fits = |r: &Range<usize>, name: &[u8]| r.start > object.start && r.end < object.end && record[r.start..].starts_with(name);
    if object.end < object.start + 2 || object.end > record.len() || record[object.start] != b'{' || record[object.end - 1] != b'}' {
        return None;
    }
    // The members inside the braces, and the cuts: the token with one comma beside it, the time's
    // member (its value replaced).
    let inner = object.start + 1..object.end - 1;
    let token = match (completion.remove_token, &layout.token) {
        (false, _) => None,
        (true, None) => return None,
        (true, Some(r)) if member_fits(r, br#""token""#) => Some(if r.end < inner.end {
            r.start..r.end + 1
        } else if r.start > inner.start {
            r.start - 1..r.end
        } else {
            r.clone()
        }),
        (true, Some(_)) => return None,
    };
    let time = match (completion.time_ms, &layout.time) {
        (Some(_), Some(r)) if member_fits(r, br#""time""#) => Some(r.clone()),
        (Some(_), Some(_)) => return None,
        _ => None,
    };
    let ms = completion.time_ms.map(|ms| ms.to_string());
    let mut cuts = [token.map(|r| (r, false)), time.map(|r| (r, true))];
    cuts.sort_by_key(|cut| cut.as_ref().map(|(r, _)| r.start));
    let mut out = Vec::with_capacity(record.len() + 48);
    let mut at = 0;
    for (range, is_time) in cuts.into_iter().flatten() {
        // Overlapping cuts come only from another record's layout.
        if range.start < at {
            return None;
        }
        out.extend_from_slice(&record[at..range.start]);
        if let (true, Some(ms)) = (is_time, &ms) {
            out.extend_from_slice(br#""time":"#);
            out.extend_from_slice(ms.as_bytes());
        }
        at = range.end;
    }
    out.extend_from_slice(&record[at..inner.end]);
    let members = layout.members - usize::from(completion.remove_token);
    let added_time = if layout.time.is_none() { ms.as_deref() } else { None };
    push_added(&mut out, members, added_time, completion)?;
    out.extend_from_slice(&record[inner.end..]);
    Some(out)
}

/// Appends the members a completion adds after the last one of `properties`, in both splices:
/// `time` (where the record had none), then `distinct_id` and `ip`. `members` is how many the
/// object holds so far: a comma goes before each added member unless the object is still empty.
fn push_added(out: &mut Vec<u8>, mut members: usize, time_ms: Option<&str>, completion: &Completion<'_>) -> Option<()> {
    let ip = completion.ip.map(serde_json::to_string).transpose().ok()?;
    let distinct_id = completion.distinct_id.map(serde_json::to_string).transpose().ok()?;
    let added = [(&br#""time":"#[..], time_ms), (br#""distinct_id":"#, distinct_id.as_deref()), (br#""ip":"#, ip.as_deref())];
    for (name, value) in added {
        let Some(value) = value else { continue };
        if members > 0 {
            out.push(b',');
        }
        members += 1;
        out.extend_from_slice(name);
        out.extend_from_slice(value.as_bytes());
    }
    Some(())
}

/// Applies `completion` to a record (one JSON object with `properties`), keeping every other key
/// in its order; a new `time`, `distinct_id` or `ip` goes last. Where the scanner reads the record (nearly every
/// tracked event), the record's own bytes are kept and only the members that change are cut or
/// written (`splice`); otherwise it is parsed and written again through serde_json.
pub fn complete_event(record: &[u8], completion: &Completion<'_>) -> Result<Vec<u8>, RewriteError> {
    match std::str::from_utf8(record).ok().and_then(|text| splice(text, completion)) {
        Some(spliced) => Ok(spliced),
        None => rewrite(record, completion),
    }
}

/// [`complete_event`] through serde_json: the record parsed, changed and written again.
fn rewrite(record: &[u8], completion: &Completion<'_>) -> Result<Vec<u8>, RewriteError> {
    let mut value: Value = serde_json::from_slice(record)?;
    if let Some(Value::Object(props)) = value.get_mut("properties") {
        if let Some(ms) = completion.time_ms {
            props.insert("time".to_owned(), Value::from(ms));
        }
        if let Some(distinct_id) = completion.distinct_id {
            props.insert("distinct_id".to_owned(), Value::from(distinct_id));
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

/// [`complete_event`] on the record's text, keeping its bytes: every `token` member cut, the
/// value of every `time` member replaced (or `time` added), `ip` added. Parsing the record into a
/// `Value` and writing it again was a tenth of a tracking request's CPU on the server. `None`
/// where the scanner gives up on the record. The limits only bound the scan (the record was
/// checked against the real ones): a deep record is left to serde_json rather than recursed into.
fn splice(text: &str, completion: &Completion<'_>) -> Option<Vec<u8>> {
    // Made once: a `Limits` holds strings (the forbidden ids), which every call allocated.
    static SCAN: LazyLock<Limits> = LazyLock::new(|| Limits {
        max_depth: 16,
        object_keys_below: usize::MAX,
        array_items_below: usize::MAX,
        string_truncate_bytes: usize::MAX,
        ..Limits::default()
    });
    let found = property_members(text, &SCAN)?;
    let bytes = text.as_bytes();
    let time = completion.time_ms.map(|ms| ms.to_string());
    let mut out = Vec::with_capacity(text.len() + 32);
    out.extend_from_slice(&bytes[..found.object.start]);
    out.push(b'{');
    let mut members = 0;
    let mut had_time = false;
    for (name, range) in &found.members {
        if *name == "token" && completion.remove_token {
            continue;
        }
        if members > 0 {
            out.push(b',');
        }
        members += 1;
        match (*name, &time) {
            ("time", Some(ms)) => {
                had_time = true;
                out.extend_from_slice(br#""time":"#);
                out.extend_from_slice(ms.as_bytes());
            }
            _ => out.extend_from_slice(&bytes[range.clone()]),
        }
    }
    push_added(&mut out, members, time.as_deref().filter(|_| !had_time), completion)?;
    out.push(b'}');
    out.extend_from_slice(&bytes[found.object.end..]);
    Some(out)
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
        let client = ip.map(ClientIp::new);
        let completion = Completion::of(&check, &rules, client.as_ref());
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
        // `ip` is added unless the event has one, and a `distinct_id` hashed from it unless the
        // event has one; the token is removed.
        let hashed = ClientIp::new("10.0.0.1").distinct_id;
        let tracked = r#"{"event":"e","properties":{"token":"t","time":1767225500,"distinct_id":"u"}}"#;
        assert_eq!(complete(tracked, Some("10.0.0.1")).1, r#"{"event":"e","properties":{"time":1767225500,"distinct_id":"u","ip":"10.0.0.1"}}"#);
        // All added, after the record's own members: the time, the distinct_id, then the ip (both
        // splices write them through `push_added`).
        assert_eq!(
            complete(r#"{"event":"e","properties":{"token":"t","x":1}}"#, Some("10.0.0.1")).1,
            format!(r#"{{"event":"e","properties":{{"x":1,"time":{NOW},"distinct_id":"{hashed}","ip":"10.0.0.1"}}}}"#)
        );
        let own_ip = r#"{"event":"e","properties":{"time":1767225500,"ip":"1.2.3.4","distinct_id":""}}"#;
        assert_eq!(complete(own_ip, Some("10.0.0.1")).1, own_ip);
    }

    /// The reference's `ip=1`: "compute a distinct_id using a hash function if no distinct_id is
    /// provided": one address gives one id, another address another.
    #[test]
    fn the_distinct_id_of_an_address_is_stable_and_its_own() {
        let a = ClientIp::new("10.0.0.1");
        assert_eq!(a, ClientIp::new("10.0.0.1"));
        assert_ne!(a.distinct_id, ClientIp::new("10.0.0.2").distinct_id);
        assert_eq!(a.distinct_id.len(), 32);
        assert!(a.distinct_id.bytes().all(|b| b.is_ascii_hexdigit()), "{}", a.distinct_id);
    }

    /// Where the scanner reads a record, the splice keeps its bytes and gives the record the
    /// serde_json rewrite gives (compared parsed: the rewrite writes compact JSON and keeps one
    /// member per name); where it does not (an escaped name, an exponent, another top-level
    /// key), `complete_event` is the rewrite.
    #[test]
    fn the_splice_agrees_with_the_rewrite() {
        let records = [
            r#"{"event":"e","properties":{"token":"t","time":1767225500,"x":1}}"#,
            r#"{"event":"e","properties":{"time":1767225500,"x":{"a":[1,2,{"b":null}]},"token":"t"}}"#,
            r#"{ "event" : "e" , "properties" : { "x" : 1.50 , "token" : "t" , "y" : "z\"q" } }"#,
            r#"{"properties":{"token":"t"},"event":"e"}"#,
            r#"{"event":"e","properties":{}}"#,
            r#"{"event":"e","properties":{"time":1,"x":1,"time":2,"token":"a","token":"b","x":3}}"#,
            r#"{"event":"e","properties":{"t\u006fken":"t","x":1}}"#,
            r#"{"event":"e","properties":{"token":"t","x":1e3}}"#,
            r#"{"event":"e","properties":{"token":"t"},"extra":1}"#,
        ];
        let completions = [
            Completion { time_ms: None, ip: None, distinct_id: None, remove_token: true },
            Completion { time_ms: Some(NOW), ip: Some("10.0.0.1"), distinct_id: Some("d"), remove_token: true },
            Completion { time_ms: Some(NOW), ip: Some("a\"b"), distinct_id: None, remove_token: false },
        ];
        let parsed = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).unwrap();
        for record in records {
            for completion in &completions {
                let rewritten = rewrite(record.as_bytes(), completion).unwrap();
                let completed = complete_event(record.as_bytes(), completion).unwrap();
                assert_eq!(parsed(&completed), parsed(&rewritten), "{record} {completion:?}");
                match splice(record, completion) {
                    Some(spliced) => assert_eq!(spliced, completed, "{record}"),
                    None => assert_eq!(completed, rewritten, "{record}"),
                }
            }
        }
        // The bytes of the members that do not change are kept as sent.
        let spaced = r#"{ "event" : "e" , "properties" : { "x" : 1.50 , "token" : "t" , "y" : [ 1 ] } }"#;
        let spliced = splice(spaced, &completions[0]).unwrap();
        assert_eq!(String::from_utf8(spliced).unwrap(), r#"{ "event" : "e" , "properties" : {"x" : 1.50,"y" : [ 1 ]} }"#);
        // Escaped names, exponents and other top-level keys are left to the rewrite.
        for record in &records[6..] {
            assert_eq!(splice(record, &completions[0]), None, "{record}");
        }
    }

    /// With the layout the check found, the record is the one `complete_event` gives, byte for
    /// byte, wherever `token` and `time` stand (first, last, alone, absent), with or without an
    /// `ip` to add; where the check gives no layout (blanks between members, a repeated `time`),
    /// it is `complete_event` itself. A layout from another record is not trusted.
    #[test]
    fn the_laid_out_splice_gives_what_complete_event_gives() {
        let rules = EventRules { token: TokenField::Credential(crate::event::Presence::Optional), ..EventRules::TRACK };
        let members = [r#""token":"t""#, r#""time":1767225500"#, r#""x":{"a":[1,"]"]}"#, r#""y":"z\"q""#];
        let mut records = Vec::new();
        // Every order of every subset of the members.
        for mask in 1u32..16 {
            let chosen: Vec<&str> = (0..4).filter(|i| mask & (1 << i) != 0).map(|i| members[i]).collect();
            let mut order: Vec<usize> = (0..chosen.len()).collect();
            loop {
                let body: Vec<&str> = order.iter().map(|&i| chosen[i]).collect();
                records.push(format!(r#"{{"event":"e","properties":{{{}}}}}"#, body.join(",")));
                records.push(format!(r#"{{"properties":{{{}}},"event":"e"}}"#, body.join(",")));
                // The next permutation, in lexical order.
                let Some(i) = (1..order.len()).rev().find(|&i| order[i - 1] < order[i]) else { break };
                let j = (i..order.len()).rev().find(|&j| order[j] > order[i - 1]).unwrap();
                order.swap(i - 1, j);
                order[i..].reverse();
            }
        }
        let completions = [
            Completion { time_ms: None, ip: None, distinct_id: None, remove_token: true },
            Completion { time_ms: Some(NOW), ip: None, distinct_id: None, remove_token: true },
            Completion { time_ms: Some(NOW), ip: Some("10.0.0.1"), distinct_id: Some("d\"1"), remove_token: true },
            Completion { time_ms: Some(NOW), ip: Some("a\"b"), distinct_id: None, remove_token: false },
            Completion { time_ms: None, ip: Some("10.0.0.1"), distinct_id: None, remove_token: false },
        ];
        let mut laid_out = 0;
        for record in &records {
            let check = check_event_with_rules(record.as_bytes(), &rules, &Limits::default(), NOW);
            assert!(check.layout.is_some(), "{record}");
            for completion in &completions {
                let expected = complete_event(record.as_bytes(), completion).unwrap();
                let got = complete_event_with(record.as_bytes(), completion, check.layout.as_ref()).unwrap();
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(expected).unwrap(), "{record} {completion:?}");
                laid_out += usize::from(splice_laid_out(record.as_bytes(), completion, check.layout.as_ref().unwrap()).is_some());
            }
        }
        assert!(laid_out > records.len() * 3, "the layout was used {laid_out} times");
        // No layout where the splice would drop blanks or meets a name twice.
        for record in [
            r#"{"event":"e","properties":{ "token":"t","x":1}}"#,
            r#"{"event":"e","properties":{"token":"t" ,"x":1}}"#,
            r#"{"event":"e","properties":{"token":"t","x":1 }}"#,
            r#"{"event":"e","properties":{"time":1,"time":2,"token":"t"}}"#,
            r#"{"event":"e","properties":{"token":"t","token":"u"}}"#,
            r#"{"event":"e","properties":{"token":"t"},"properties":{"token":"t"}}"#,
        ] {
            let check = check_event_with_rules(record.as_bytes(), &rules, &Limits::default(), NOW);
            assert_eq!(check.layout, None, "{record}");
        }
        // Members may hold blanks inside them: the splice keeps those bytes.
        let inner = r#"{"event":"e","properties":{"token" : "t","x": [ 1 ]}}"#;
        let check = check_event_with_rules(inner.as_bytes(), &rules, &Limits::default(), NOW);
        let got = complete_event_with(inner.as_bytes(), &completions[1], check.layout.as_ref()).unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), format!(r#"{{"event":"e","properties":{{"x": [ 1 ],"time":{NOW}}}}}"#));
        // A layout that does not fit the record is not used.
        let layout = check.layout.unwrap();
        let other = r#"{"event":"e","properties":{"x":1,"token":"t"}}"#;
        assert_eq!(splice_laid_out(other.as_bytes(), &completions[0], &layout), None);
        let got = complete_event_with(other.as_bytes(), &completions[0], Some(&layout)).unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), r#"{"event":"e","properties":{"x":1}}"#);
        // Nor, without a panic, one whose members overlap or whose object is empty in this record.
        let nested = r#"{"event":"e","properties":{"token":"t","x":{"time":1}}}"#;
        let laid_out = check_event_with_rules(nested.as_bytes(), &rules, &Limits::default(), NOW).layout.unwrap();
        let inner_time = nested.find(r#""time""#).unwrap();
        let token = laid_out.token.clone().unwrap();
        let overlapping = PropertyLayout { token: Some(token.start..inner_time + 8), time: Some(inner_time..inner_time + 8), ..laid_out.clone() };
        assert_eq!(splice_laid_out(nested.as_bytes(), &completions[1], &overlapping), None);
        let empty = PropertyLayout { object: 0..0, ..laid_out };
        assert_eq!(splice_laid_out(nested.as_bytes(), &completions[1], &empty), None);
    }

    /// Under IMPORT the time is always the event's, and a `token` (which server-side libraries
    /// add) is read as the token and removed; an event without one is left as it is.
    #[test]
    fn import_rules_remove_only_the_token() {
        let record = r#"{"event":"e","properties":{"time":1767225500,"distinct_id":"u","$insert_id":"i","token":"t"}}"#;
        let check = check_event_with_rules(record.as_bytes(), &EventRules::IMPORT, &Limits::default(), NOW);
        let completion = Completion::of(&check, &EventRules::IMPORT, None);
        assert!(completion.remove_token && completion.time_ms.is_none() && completion.ip.is_none(), "{completion:?}");
        assert_eq!(check.token.as_deref(), Some("t"));
        let stored = complete_event(record.as_bytes(), &completion).unwrap();
        assert_eq!(String::from_utf8(stored).unwrap(), r#"{"event":"e","properties":{"time":1767225500,"distinct_id":"u","$insert_id":"i"}}"#);
        let without = r#"{"event":"e","properties":{"time":1767225500,"distinct_id":"u","$insert_id":"i"}}"#;
        let check = check_event_with_rules(without.as_bytes(), &EventRules::IMPORT, &Limits::default(), NOW);
        assert!(Completion::of(&check, &EventRules::IMPORT, None).is_empty());
    }
}
