//! Violations of the dictionary seen on arrival (issue 20): the core's dictionary checks run on
//! every stored event and every applied user profile update (kind `user`, entity `$user`; group
//! updates have no schema to check against), their findings tallied per request in memory
//! ([`Violations`]) and written once per request, one upsert per key
//! (`store::quality::record_quality`), so that ingestion pays for a hash-map update per finding
//! rather than a database write. The findings of events are written by the event writer in the
//! transaction of the events ([`Findings::into_rows`]), those of profile updates in one
//! transaction of their own ([`record`]).

use crate::store::{QualityRows, ViolationRow};
use serde_json::{json, Value};
use datadict_core::dictionary::profile::operand_type;
use datadict_core::event::EventCheck;
use datadict_core::{check_profile_against_dictionary, for_each_dictionary_finding, Dictionary, ProfileOperation, ProfileTarget, ProfileUpdate, USER_PROFILE};
use std::collections::{BTreeSet, HashMap};

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
/// a new key allocates its owned [`Key`] and its message.
#[derive(Debug, Default)]
pub struct Violations {
    index: HashMap<Vec<u8>, usize>,
    tallies: Vec<(Key, Tally)>,
    scratch: Vec<u8>,
}

/// Good and bad records per event name of one request. A name already seen costs a lookup and no
/// allocation.
#[derive(Debug, Default)]
pub struct EventCounts {
    good: HashMap<String, i64>,
    bad: HashMap<String, i64>,
}

impl EventCounts {
    fn add(map: &mut HashMap<String, i64>, name: &str) {
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
        let rows = |kind: &str, map: HashMap<String, i64>| {
            map.into_iter()
                .map(|(entity, count)| ViolationRow {
                    kind: kind.to_owned(),
                    entity,
                    property: String::new(),
                    code: String::new(),
                    message: String::new(),
                    count,
                    first_seen_ms: now_ms,
                    last_seen_ms: now_ms,
                    types: Vec::new(),
                    samples: Vec::new(),
                })
                .collect::<Vec<_>>()
        };
        let mut out = rows("good", self.good);
        out.extend(rows("bad", self.bad));
        out
    }
}

/// What one request found for the quality record: violations, rejected records, and counts.
#[derive(Debug, Default)]
pub struct Findings {
    pub violations: Violations,
    pub rejected: Violations,
    pub counts: EventCounts,
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
        for_each_dictionary_finding(check, dictionary, |f| {
            let property = f.property.unwrap_or_default();
            // The type recorded is that of the first property of the name, as sent.
            let types = match check.properties.iter().find(|p| p.name == property) {
                Some(p) if !property.is_empty() => Some(p.kind.as_str()),
                _ => None,
            };
            let sample = || Value::from(cut_sample(&String::from_utf8_lossy(record)));
            self.tally("event", f.event, property, f.code.as_str(), || f.message(), types, sample);
        });
    }

    /// Checks one applied profile update against `dictionary` with the core's check and tallies
    /// each finding under kind `user` and entity `$user`, keeping the update (without its token) as
    /// a sample. The core checks no group update.
    pub fn check_profile(&mut self, target: &ProfileTarget, operation: &ProfileOperation, dictionary: &Dictionary) {
        for issue in check_profile_against_dictionary(target.kind(), operation, dictionary) {
            // Paths are the operation and the property (`$set.plan`), or empty for the whole update.
            let property = issue.path.strip_prefix(operation.key()).map(property_name).unwrap_or_default();
            let ty = operand(operation, &property).map(|v| operand_type(operation, v).as_str());
            let sample = || {
                let update = ProfileUpdate { token: None, target: target.clone(), operation: operation.clone() };
                Value::from(cut_sample(&serde_json::to_string(&update).unwrap_or_default()))
            };
            self.tally("user", USER_PROFILE, &property, issue.code.as_str(), || issue.message.clone(), ty, sample);
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
    ) {
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
/// text and the first message of that code as the sample.
pub fn reject(rejected: &mut Violations, route: &'static str, event: &str, issues: &[(&'static str, &str)], record: &[u8]) {
    let mut seen: Vec<&str> = Vec::new();
    for (code, message) in issues {
        if seen.contains(code) {
            continue;
        }
        seen.push(code);
        let sample = || json!({"record": cut_sample(&String::from_utf8_lossy(record)), "message": message});
        rejected.add(route, event, "", code, message, None, sample);
    }
}

impl Findings {
    /// The rows that record these findings, seen at `now_ms`, in the project's day: what the event
    /// writer stores in the transaction of the request's events
    /// ([`EventSink::send_quality`](crate::store::EventSink::send_quality)). `max_keys` is the
    /// day's cap of distinct keys.
    pub fn into_rows(self, now_ms: i64, max_keys: usize) -> QualityRows {
        let Findings { violations, rejected, counts } = self;
        QualityRows {
            day: datadict_core::time::format_date(now_ms),
            max_keys,
            max_samples: MAX_SAMPLES,
            violations: violations.into_rows(now_ms),
            rejected: rejected.into_rows(now_ms),
            counts: counts.into_rows(now_ms),
        }
    }
}

/// Writes a request's findings, seen at `now_ms`, to the project's day (nothing for none), in a
/// transaction of their own: for the profile updates of `/engage`; events send theirs with the
/// events ([`Findings::into_rows`]).
pub async fn record(state: &crate::AppState, project_id: i64, findings: Findings, now_ms: i64) -> Result<(), crate::error::ApiError> {
    let rows = findings.into_rows(now_ms, state.config.quality_max_keys);
    if rows.is_empty() {
        return Ok(());
    }
    state
        .store
        .call(move |conn| {
            // One transaction for the request's rows: without it every statement commits (and
            // fsyncs) on its own, dozens per request.
            let tx = conn.transaction()?;
            crate::store::quality::record_quality(&tx, vec![(project_id, rows)])?;
            tx.commit()
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn samples_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_SAMPLE_BYTES);
        let cut = cut_sample(&long);
        assert!(cut.len() <= MAX_SAMPLE_BYTES && cut.len() > MAX_SAMPLE_BYTES - 2);
    }
}
