//! Violations of the dictionary seen on arrival (issue 20): the core's dictionary checks run on
//! every stored event and every applied profile update (kind `user`, entity `$user`; kind `group`,
//! entity the group key, whose `profile` schema the core checks it against), their findings
//! tallied per request in memory ([`Violations`]) and written once per request, one upsert per key
//! (`store::quality::record_quality`; on SQLite through the event writer's journal, folded every
//! quarter second), so that ingestion pays for a hash-map update per finding rather than a
//! database write. The findings of events are written by the event writer in the
//! transaction of the events ([`Findings::into_rows`]), those of profile updates in the
//! transaction of the updates (`ingest::load::store_profile_updates`).

use super::redact::{redact, redact_refused, Withheld};
use super::shapes::ShapeCache;
use crate::FastHash;
use crate::store::quality::{BAD, GOOD};
use crate::store::{QualityRows, ShapeCount, ShapeRows, ViolationRow};
use serde_json::{json, Value};
use datadict_core::dictionary::profile::operand_type;
use datadict_core::event::{EventCheck, PropertySeen};
use datadict_core::{IssueCode, PropertyType};
use datadict_core::{check_profile_against_dictionary, for_each_dictionary_finding, profile_schema_name, Dictionary, ProfileOperation, ProfileTarget, ProfileUpdate};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The most samples kept per violation key.
pub const MAX_SAMPLES: usize = 5;

/// The longest sample kept, in bytes (cut on a character boundary).
pub const MAX_SAMPLE_BYTES: usize = 4096;

/// The entity name of the row that counts what arrives beyond a day's key cap.
pub const OTHERS: &str = "$others";

/// The key of a tally: the kind of record (`event`, `user`, `group`), the entity (event name),
/// the property (empty for the whole record) and the core's issue code.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    kind: &'static str,
    entity: String,
    property: String,
    code: &'static str,
}

#[derive(Debug, Clone)]
struct Tally {
    message: String,
    count: i64,
    types: BTreeSet<&'static str>,
    samples: Vec<Value>,
}

/// One request's violations (or rejected records, keyed by route), tallied in memory. Every record of a request arrives at the same
/// moment, so first and last seen are the request's time.
///
/// A finding whose key was seen before costs one hash-map lookup and no allocation: the key is
/// written into a reused `scratch` buffer (kind, code, the entity's length, entity, property; the
/// length keeps one (entity, property) pair from spelling another) and looked up by `&[u8]`; only
/// a new key allocates its owned `Key` and its message.
#[derive(Debug, Default)]
pub struct Violations {
    index: HashMap<Vec<u8>, usize, FastHash>,
    tallies: Vec<(Key, Tally)>,
    scratch: Vec<u8>,
    /// The last shape of each event name and where its findings went ([`Shape`]).
    shapes: HashMap<String, Shape, FastHash>,
}

/// What the core's check found in the last event of one name: the event's shape (its property
/// names and JSON types, in order) and the tallies its findings went to, in order.
///
/// The core's check reads nothing of an event but its name and the names and types of its
/// properties, so an event of the same name and shape has the same findings: it adds to the same
/// tallies without asking the core again, building a key or hashing one per finding. Most events
/// of a name share one shape (what an application sends for it), so this turns about a dozen
/// key lookups per event (a finding per unknown property) into one name lookup and a comparison
/// of names. A test checks that tallies made this way equal the core's findings one by one.
#[derive(Debug, Default)]
pub(super) struct Shape {
    /// Each property name, preceded by its length as 8 bytes (so that names cannot run together).
    names: Vec<u8>,
    kinds: Vec<PropertyType>,
    /// The tally of each finding, in the order the core gave them.
    hits: Vec<usize>,
    /// What the dictionary drops of events of this shape, kept out of their samples.
    withheld: Withheld,
}

impl Shape {
    /// Whether `properties` are this shape's, name by name and type by type.
    pub(super) fn matches(&self, properties: &[PropertySeen<'_>]) -> bool {
        if properties.len() != self.kinds.len() {
            return false;
        }
        let mut rest = self.names.as_slice();
        for (p, kind) in properties.iter().zip(&self.kinds) {
            let name = p.name.as_bytes();
            let Some((len, tail)) = rest.split_first_chunk::<8>() else { return false };
            let len = u64::from_le_bytes(*len);
            if p.kind != *kind || len != name.len() as u64 || !tail.starts_with(name) {
                return false;
            }
            rest = &tail[name.len()..];
        }
        true
    }

    /// Makes this the shape of `properties`, with no hits yet (the buffers are reused).
    pub(super) fn set(&mut self, properties: &[PropertySeen<'_>]) {
        self.names.clear();
        self.kinds.clear();
        self.hits.clear();
        self.withheld = Withheld::Nothing;
        for p in properties {
            self.names.extend_from_slice(&(p.name.len() as u64).to_le_bytes());
            self.names.extend_from_slice(p.name.as_bytes());
            self.kinds.push(p.kind);
        }
    }
}

/// Good and bad records per event name of one request. A name already seen costs a lookup and no
/// allocation.
#[derive(Debug, Default)]
pub struct EventCounts {
    good: HashMap<String, i64, FastHash>,
    bad: HashMap<String, i64, FastHash>,
}

impl EventCounts {
    fn add(map: &mut HashMap<String, i64, FastHash>, name: &str) {
        match map.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                map.insert(name.to_owned(), 1);
            }
        }
    }

    pub fn good(&mut self, name: &str) {
        Self::add(&mut self.good, name);
    }

    pub fn bad(&mut self, name: &str) {
        Self::add(&mut self.bad, name);
    }

    pub fn is_empty(&self) -> bool {
        self.good.is_empty() && self.bad.is_empty()
    }

    fn into_rows(self, now_ms: i64) -> Vec<ViolationRow> {
        let rows = |kind: &str, map: HashMap<String, i64, FastHash>| {
            map.into_iter().map(|(entity, count)| ViolationRow::event_count(kind, entity, count, now_ms, now_ms)).collect::<Vec<_>>()
        };
        let mut out = rows(GOOD, self.good);
        out.extend(rows(BAD, self.bad));
        out
    }
}

/// What one request found for the quality record: violations, rejected records, and counts.
#[derive(Debug, Default)]
pub struct Findings {
    pub violations: Violations,
    pub rejected: Violations,
    pub counts: EventCounts,
    /// Events of sampled shapes, counted per shape (see `ingest::shapes`).
    pub(super) shapes: Vec<(Arc<ShapeRows>, i64)>,
    /// The shapes of this request's events that are collecting samples, with the tag they were
    /// checked under.
    pub(super) sampling: Vec<(Arc<ShapeRows>, u64)>,
}

/// A record's bytes as a sample's text: what the dictionary drops of it withheld (see
/// [`Withheld`]), the project token it carries (`token`) redacted (see `redact`), cut (see
/// [`cut_sample`]), and with any invalid UTF-8 replaced (a refused record may hold some; a valid
/// one is checked by the faster `from_utf8`).
fn record_sample(record: &[u8], token: Option<&str>, withheld: &Withheld) -> String {
    match std::str::from_utf8(record) {
        Ok(text) => cut_sample(&redact(&withheld.apply(text), token)),
        Err(_) => cut_sample(&redact(&withheld.apply(&String::from_utf8_lossy(record)), token)),
    }
}

/// A refused record's bytes as a sample's text: as [`record_sample`], with every token the scan
/// of `redact_refused` finds or the caller knows (`tokens`) redacted, since the check may not have
/// read the record's token (a record that is not JSON, say). Cut after the redaction, so that a
/// cut cannot leave the start of a token unredacted. What the dictionary drops is withheld as in
/// [`record_sample`], when the record can be read.
fn refused_sample(record: &[u8], tokens: &[&str], withheld: &Withheld) -> String {
    match std::str::from_utf8(record) {
        Ok(text) => cut_sample(&redact_refused(&withheld.apply(text), tokens)),
        Err(_) => cut_sample(&redact_refused(&withheld.apply(&String::from_utf8_lossy(record)), tokens)),
    }
}

/// Cuts `text` to at most [`MAX_SAMPLE_BYTES`] bytes on a character boundary.
pub fn cut_sample(text: &str) -> String {
    if text.len() <= MAX_SAMPLE_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_SAMPLE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

impl Violations {
    /// Checks one valid event against `dictionary` with the core's check and tallies each finding,
    /// keeping `record` (its bytes) as a sample. Returns nothing: the drops are decided apart, by
    /// `Drops`, which agrees with the core on them.
    pub fn check_event(&mut self, check: &EventCheck<'_>, dictionary: &Dictionary, record: &[u8]) {
        // One sample per event, made on its first use and copied for each finding that keeps it:
        // a tracked event has a finding per unknown property, and converting the record again for
        // each was a twentieth of a tracking request's CPU.
        let mut made: Option<Value> = None;
        let token = check.token.as_deref();
        let Some(name) = check.event.as_deref() else { return };
        let mut shape = match self.shapes.get_mut(name) {
            Some(shape) if shape.matches(&check.properties) => {
                // Same name, same shape: the same findings, with the same types and drops.
                let withheld = &shape.withheld;
                let mut sample = || made.get_or_insert_with(|| Value::from(record_sample(record, token, withheld))).clone();
                for &at in &shape.hits {
                    let tally = &mut self.tallies[at].1;
                    tally.count += 1;
                    if tally.samples.len() < MAX_SAMPLES {
                        tally.samples.push(sample());
                    }
                }
                return;
            }
            // A name seen before with another shape: its buffers are reused.
            Some(shape) => std::mem::take(shape),
            None => Shape::default(),
        };
        shape.set(&check.properties);
        // What the dictionary drops is known only once its finding comes: the samples made
        // before are mended after the check (rare: only events with drops pay for it).
        let mut withheld = Withheld::Nothing;
        let mut sample = || made.get_or_insert_with(|| Value::from(record_sample(record, token, &Withheld::Nothing))).clone();
        for_each_dictionary_finding(check, dictionary, |f| {
            match (f.code, f.property) {
                (IssueCode::DroppedEvent, _) => withheld = Withheld::Event,
                (IssueCode::DroppedProperty, Some(property)) => withheld.add_property(property),
                _ => {}
            }
            let types = f.seen_type().map(PropertyType::as_str);
            let at = self.tally("event", f.event, f.property.unwrap_or_default(), f.code.as_str(), || f.message(), types, &mut sample);
            shape.hits.push(at);
        });
        if let (false, Some(plain)) = (withheld == Withheld::Nothing, made) {
            let mended = Value::from(record_sample(record, token, &withheld));
            for &at in &shape.hits {
                for kept in &mut self.tallies[at].1.samples {
                    if *kept == plain {
                        *kept = mended.clone();
                    }
                }
            }
        }
        shape.withheld = withheld;
        match self.shapes.get_mut(name) {
            Some(slot) => *slot = shape,
            None => {
                self.shapes.insert(name.to_owned(), shape);
            }
        }
    }

    /// Checks one applied profile update against `dictionary` with the core's check and tallies
    /// each finding under kind `user` and entity `$user`, or kind `group` and the group key (the
    /// `profile` schema the core checks it against), keeping the update (without its token) as a
    /// sample.
    pub fn check_profile(&mut self, target: &ProfileTarget, operation: &ProfileOperation, dictionary: &Dictionary) {
        let kind = match target {
            ProfileTarget::User { .. } => "user",
            ProfileTarget::Group { .. } => "group",
        };
        let entity = profile_schema_name(target);
        for issue in check_profile_against_dictionary(target, operation, dictionary) {
            // Paths are the operation and the property (`$set.plan`), or empty for the whole update.
            let property = issue.path.strip_prefix(operation.key()).map(property_name).unwrap_or_default();
            let ty = operand(operation, &property).map(|v| operand_type(operation, v).as_str());
            let sample = || {
                let update = ProfileUpdate { token: None, target: target.clone(), operation: operation.clone() };
                Value::from(cut_sample(&serde_json::to_string(&update).unwrap_or_default()))
            };
            self.tally(kind, entity, &property, issue.code.as_str(), || issue.message.clone(), ty, sample);
        }
    }

    /// Tallies one finding.
    #[allow(clippy::too_many_arguments)]
    pub fn add(&mut self, kind: &'static str, entity: &str, property: &str, code: &'static str, message: &str, ty: Option<&'static str>, sample: impl FnOnce() -> Value) {
        self.tally(kind, entity, property, code, || message.to_owned(), ty, sample);
    }

    /// Tallies one finding, making its message only for a key not seen before in this request.
    #[allow(clippy::too_many_arguments)]
    fn tally(
        &mut self,
        kind: &'static str,
        entity: &str,
        property: &str,
        code: &'static str,
        message: impl FnOnce() -> String,
        ty: Option<&'static str>,
        sample: impl FnOnce() -> Value,
    ) -> usize {
        self.scratch.clear();
        for part in [kind, " ", code, " "] {
            self.scratch.extend_from_slice(part.as_bytes());
        }
        self.scratch.extend_from_slice(&entity.len().to_le_bytes());
        self.scratch.extend_from_slice(entity.as_bytes());
        self.scratch.extend_from_slice(property.as_bytes());
        let at = match self.index.get(self.scratch.as_slice()) {
            Some(&at) => at,
            None => {
                let key = Key { kind, entity: entity.to_owned(), property: property.to_owned(), code };
                self.tallies.push((key, Tally { message: message(), count: 0, types: BTreeSet::new(), samples: Vec::new() }));
                self.index.insert(self.scratch.clone(), self.tallies.len() - 1);
                self.tallies.len() - 1
            }
        };
        let tally = &mut self.tallies[at].1;
        tally.count += 1;
        if let Some(ty) = ty {
            tally.types.insert(ty);
        }
        if tally.samples.len() < MAX_SAMPLES {
            // Only the kept samples are made: most findings add to a count only.
            tally.samples.push(sample());
        }
        at
    }

    pub fn is_empty(&self) -> bool {
        self.tallies.is_empty()
    }

    /// The rows to write, each seen at `now_ms`.
    pub fn into_rows(self, now_ms: i64) -> Vec<ViolationRow> {
        self.tallies
            .into_iter()
            .map(|(k, t)| ViolationRow {
                kind: k.kind.to_owned(),
                entity: k.entity,
                property: k.property,
                code: k.code.to_owned(),
                message: t.message,
                count: t.count,
                first_seen_ms: now_ms,
                last_seen_ms: now_ms,
                types: t.types.into_iter().map(str::to_owned).collect(),
                samples: t.samples,
            })
            .collect()
    }
}

/// The property name of the rest of an issue path after `properties`: `.name` or `["name"]`
/// (the core's `child_path` quotes names that are not plain).
fn property_name(rest: &str) -> String {
    if let Some(plain) = rest.strip_prefix('.') {
        return plain.to_owned();
    }
    rest.strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|quoted| serde_json::from_str::<String>(quoted).ok())
        .unwrap_or_default()
}

/// The value an operation carries for `property` (`None` for `$unset`, `$delete`, or no such
/// property).
fn operand<'o>(operation: &'o ProfileOperation, property: &str) -> Option<&'o Value> {
    match operation {
        ProfileOperation::Set(m)
        | ProfileOperation::SetOnce(m)
        | ProfileOperation::Add(m)
        | ProfileOperation::Union(m)
        | ProfileOperation::Append(m)
        | ProfileOperation::Remove(m) => m.get(property),
        ProfileOperation::Unset(_) | ProfileOperation::Delete => None,
    }
}

/// Tallies one rejected record of `route`: per code of its issues (each once), with the record's
/// text and the first message of that code as the sample, without the project tokens it holds
/// (`tokens`: those the caller knows of; see `refused_sample`).
pub fn reject(rejected: &mut Violations, route: &'static str, event: &str, issues: &[(&'static str, &str)], record: &[u8], tokens: &[&str]) {
    reject_withholding(rejected, route, event, issues, record, tokens, &Withheld::Nothing);
}

/// [`reject`], with what the dictionary drops of the record's event withheld from the sample.
pub fn reject_withholding(
    rejected: &mut Violations,
    route: &'static str,
    event: &str,
    issues: &[(&'static str, &str)],
    record: &[u8],
    tokens: &[&str],
    withheld: &Withheld,
) {
    let mut seen: Vec<&str> = Vec::new();
    for (code, message) in issues {
        if seen.contains(code) {
            continue;
        }
        seen.push(code);
        let sample = || json!({"record": refused_sample(record, tokens, withheld), "message": message});
        rejected.add(route, event, "", code, message, None, sample);
    }
}

impl Findings {
    /// Checks one valid event against `dictionary` and records its violations: as a count of its
    /// shape when `shapes` knows the shape as sampled under `tag`, else through
    /// [`Violations::check_event`] (which keeps `record` as a sample), noting the shape as
    /// collecting samples. True when a shape counted the event: its count then stands for the
    /// event's count of valid events too ([`ShapeRows::event`]), which the caller leaves out of
    /// [`Findings::counts`].
    pub fn check_event(&mut self, check: &EventCheck<'_>, dictionary: &Dictionary, shapes: Option<(&ShapeCache, u64)>, record: &[u8]) -> bool {
        if let Some(shape) = shapes.and_then(|(cache, _)| cache.shape_of(check, dictionary)) {
            let tag = shapes.map_or(0, |(_, tag)| tag);
            if shape.is_sampled(tag) {
                match self.shapes.iter_mut().find(|(s, _)| Arc::ptr_eq(s, &shape)) {
                    Some((_, n)) => *n += 1,
                    None => self.shapes.push((shape, 1)),
                }
                return true;
            }
            if !self.sampling.iter().any(|(s, _)| Arc::ptr_eq(s, &shape)) {
                self.sampling.push((shape, tag));
            }
        }
        self.violations.check_event(check, dictionary, record);
        false
    }

    /// The rows that record these findings, seen at `now_ms`, in the project's day: what the event
    /// writer stores in the transaction of the request's events
    /// ([`EventSink::send_quality`](crate::store::EventSink::send_quality)). `max_keys` is the
    /// day's cap of distinct keys.
    pub fn into_rows(self, now_ms: i64, max_keys: usize) -> QualityRows {
        let Findings { violations, rejected, counts, shapes, sampling } = self;
        QualityRows {
            day: datadict_core::time::format_date(now_ms),
            max_keys,
            max_samples: MAX_SAMPLES,
            violations: violations.into_rows(now_ms),
            rejected: rejected.into_rows(now_ms),
            counts: counts.into_rows(now_ms),
            shapes: (shapes.into_iter())
                .map(|(shape, count)| ShapeCount { shape, count, first_seen_ms: now_ms, last_seen_ms: now_ms })
                .collect(),
            sampling,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample never holds the token its record carried, whole JSON strings only.
    #[test]
    fn samples_redact_the_token() {
        let check = |record: &str, token: Option<&str>, expected: &str| assert_eq!(record_sample(record.as_bytes(), token, &Withheld::Nothing), expected, "{record}");
        check(r#"{"event":"e","properties":{"token":"s3cret","x":"s3cret-ish"}}"#, Some("s3cret"), r#"{"event":"e","properties":{"token":"[redacted]","x":"s3cret-ish"}}"#);
        check(r#"{"$token":"t","$set":{"t":"t","n":"at"}}"#, Some("t"), r#"{"$token":"[redacted]","$set":{"[redacted]":"[redacted]","n":"at"}}"#);
        // Not JSON at all: the token is still found as a string.
        check(r#"{"token":"s3cret", oops"#, Some("s3cret"), r#"{"token":"[redacted]", oops"#);
        check(r#"{"token":"s3cret"}"#, None, r#"{"token":"s3cret"}"#);
        check(r#"{"token":""}"#, Some(""), r#"{"token":""}"#);
    }

    #[test]
    fn property_names_come_back_from_paths() {
        assert_eq!(property_name(".price"), "price");
        assert_eq!(property_name(r#"["a b"]"#), "a b");
        assert_eq!(property_name(""), "");
    }

    #[test]
    fn keys_that_spell_alike_are_tallied_apart() {
        let mut v = Violations::default();
        for (entity, property) in [("ab", "c"), ("a", "bc"), ("ab", "c")] {
            v.add("event", entity, property, "unknown_property", "m", None, || Value::Null);
        }
        let mut got: Vec<(String, String, i64)> = v.into_rows(0).into_iter().map(|r| (r.entity, r.property, r.count)).collect();
        got.sort();
        assert_eq!(got, [("a".to_owned(), "bc".to_owned(), 1), ("ab".to_owned(), "c".to_owned(), 2)]);
    }

    /// Tallies made through the shape memo equal the core's findings counted one by one, for
    /// events of one name in alternating shapes, the same names with other types, duplicate
    /// property names, and names without a schema.
    #[test]
    fn the_shape_memo_tallies_what_the_core_finds() {
        use datadict_core::{check_event, Limits};
        let dictionary = Dictionary::new(&crate::demo::sample_dictionary(), datadict_core::DEFAULT_NAMESPACE);
        let shapes = [
            r#""plan":"pro","color":"red""#,
            r#""plan":1,"color":"red""#,
            r#""color":"red","plan":"pro""#,
            r#""plan":"pro","plan":2,"x":null"#,
            r#""price":"9","card_last4":"4242","items":[]"#,
            r#""path":"/","duration_ms":1.5"#,
            "",
        ];
        let names = ["Sign Up", "Purchase", "Page View", "Debug Ping", "Nope"];
        let now = 1_767_225_600_000;
        let mut memo = Violations::default();
        let mut expected: HashMap<(String, String, String), (i64, BTreeSet<&str>)> = HashMap::new();
        for round in 0..4 {
            for (i, name) in names.iter().enumerate() {
                for props in shapes.iter().skip((i + round) % 3) {
                    let sep = if props.is_empty() { "" } else { "," };
                    let record = format!(r#"{{"event":"{name}","properties":{{"time":{now},"distinct_id":"u","$insert_id":"i"{sep}{props}}}}}"#);
                    let check = check_event(record.as_bytes(), &Limits::default(), now);
                    assert!(check.is_valid(), "{record}: {:?}", check.issues);
                    memo.check_event(&check, &dictionary, record.as_bytes());
                    for_each_dictionary_finding(&check, &dictionary, |f| {
                        let key = (f.event.to_owned(), f.property.unwrap_or_default().to_owned(), f.code.as_str().to_owned());
                        let slot = expected.entry(key).or_default();
                        slot.0 += 1;
                        slot.1.extend(f.seen_type().map(PropertyType::as_str));
                    });
                }
            }
        }
        let got: HashMap<(String, String, String), (i64, BTreeSet<&str>)> = memo
            .tallies
            .iter()
            .map(|(k, t)| ((k.entity.clone(), k.property.clone(), k.code.to_owned()), (t.count, t.types.clone())))
            .collect();
        assert!(got.len() > 10, "{got:?}");
        assert_eq!(got, expected);
        for (key, tally) in &memo.tallies {
            assert_eq!(tally.samples.len(), (tally.count as usize).min(MAX_SAMPLES), "{key:?}");
        }
    }

    #[test]
    fn samples_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_SAMPLE_BYTES);
        let cut = cut_sample(&long);
        assert!(cut.len() <= MAX_SAMPLE_BYTES && cut.len() > MAX_SAMPLE_BYTES - 2);
    }
}
