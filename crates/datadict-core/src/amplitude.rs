//! The migration's source side (FACTS.md "Migration from another analytics tool"): reading the
//! source tool's export archive (a zip of gzipped NDJSON files) from bytes, one member at a time,
//! and transforming each source event into an event of spec §2.8, plus the latest profile `$set`
//! per user (spec §2.9), with valid, deterministic `$insert_id`s.

use crate::gzip::{gunzip_member, GzipError};
use crate::limits::Limits;
use crate::profile::ProfileUpdate;
use crate::time::parse_naive_utc_ms;
use crate::unzip::{ZipError, ZipReader};
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Why an export archive or one of its members cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("the export is not a readable zip archive ({0}); pass the body of the export response as it was downloaded")]
    Zip(#[from] ZipError),
    #[error("member `{name}` cannot be read ({source}); the archive may be truncated")]
    Member { name: String, source: ZipError },
    #[error("member `{name}`: {source}")]
    Gzip { name: String, source: GzipError },
}

/// An export archive held in memory; members are decompressed one at a time on request.
pub struct ExportArchive<'a> {
    zip: ZipReader<'a>,
}

impl std::fmt::Debug for ExportArchive<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportArchive").field("members", &self.zip.len()).finish()
    }
}

impl<'a> ExportArchive<'a> {
    /// Opens the archive (reads its central directory only).
    pub fn new(bytes: &'a [u8]) -> Result<Self, ExportError> {
        Ok(Self { zip: ZipReader::new(bytes)? })
    }

    /// The number of members, directories included.
    pub fn len(&self) -> usize {
        self.zip.len()
    }

    pub fn is_empty(&self) -> bool {
        self.zip.len() == 0
    }

    /// The names of the data members (`<app_id>/<app_id>_<YYYY-MM-DD>_<H>#<n>.json.gz`), sorted,
    /// so that members are read in time order whatever order the archive stores them in.
    pub fn member_names(&self) -> Result<Vec<String>, ExportError> {
        let mut names = Vec::with_capacity(self.zip.len());
        for name in self.zip.names() {
            if !name.ends_with('/') {
                names.push(name.to_owned());
            }
        }
        crate::order::sort(&mut names);
        Ok(names)
    }

    /// The NDJSON of one member, gunzipped (a member not ending in `.gz` is returned as stored);
    /// fails when it would exceed `max_bytes`.
    pub fn read_member(&mut self, name: &str, max_bytes: usize) -> Result<Vec<u8>, ExportError> {
        // A name the archive lacks is the archive's fault, not one member's.
        if !self.zip.names().any(|n| n == name) {
            return Err(ZipError("the archive has no member of that name").into());
        }
        let raw = self.zip.read(name).map_err(|source| ExportError::Member { name: name.to_owned(), source })?;
        if !name.ends_with(".gz") {
            return Ok(raw);
        }
        gunzip_member(&raw, max_bytes).map_err(|source| ExportError::Gzip { name: name.to_owned(), source })
    }
}

/// The fields of a source event the mapping reads (FACTS.md); everything else is ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SourceEvent {
    event_type: Option<String>,
    event_time: Option<String>,
    user_id: Option<Value>,
    device_id: Option<Value>,
    #[serde(rename = "$insert_id")]
    dollar_insert_id: Option<Value>,
    insert_id: Option<Value>,
    event_properties: Option<Map<String, Value>>,
    user_properties: Option<Map<String, Value>>,
    os_name: Option<Value>,
    os_version: Option<Value>,
    device_model: Option<Value>,
    device_brand: Option<Value>,
    city: Option<Value>,
    region: Option<Value>,
    country: Option<Value>,
    ip_address: Option<Value>,
}

/// Why one source event cannot be transformed; the caller reports it with the line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    #[error("the line is not a JSON object ({0}); the export may be corrupt")]
    Json(String),
    #[error("`event_type` is missing or empty; the source event has no name")]
    NoEventType,
    #[error("`event_time` is {0:?}; expected `YYYY-MM-DD HH:MM:SS[.ffffff]` in UTC")]
    BadTime(String),
}

/// One transformed source event.
#[derive(Debug, Clone, PartialEq)]
pub struct Transformed {
    /// The event of spec §2.8 as JSON bytes, ready for the batcher.
    pub event: Vec<u8>,
    pub time_ms: i64,
    /// `(user_id, user_properties)` when the source event carries both.
    pub profile: Option<(String, Map<String, Value>)>,
}

/// A string form of an id that may be a string or a number in the export; empty and null are none.
fn id_string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A deterministic `$insert_id` from parts: 32 hex digits of their SHA-256, which satisfies the
/// import's `[A-Za-z0-9-]{1,36}` (FACTS.md).
pub fn hashed_insert_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        // Length-prefixing keeps ("ab","c") and ("a","bc") apart.
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// FACTS.md: the source insert id when the import accepts it as is; otherwise (a `:` or other
/// character outside `[A-Za-z0-9-]`, too long, a placeholder) its hash; without one, a hash of
/// (device_id, event_time, event_type).
pub fn valid_insert_id(source: Option<&str>, device_id: &str, event_time: &str, event_type: &str, limits: &Limits) -> String {
    match source {
        Some(id) if !id.is_empty() => {
            let mut issues = Vec::new();
            crate::event::check_insert_id(id, limits, &mut issues);
            if issues.is_empty() {
                id.to_owned()
            } else {
                hashed_insert_id(&["insert_id", id])
            }
        }
        _ => hashed_insert_id(&[device_id, event_time, event_type]),
    }
}

/// Transforms one source event (one NDJSON line of the export) by the mapping of FACTS.md:
/// `event` ← `event_type`; `time` ← `event_time` as UTC milliseconds; `distinct_id` ← `user_id`
/// or else `device_id`; `$device_id`, `$user_id`; a valid `$insert_id`; `ip` ← `ip_address`;
/// `$city`, `$region`, `mp_country_code`; `$os`, `$os_version`, `$model`, `$brand`; then
/// `user_properties` and `event_properties` spread into the properties (the event's own win, and
/// neither overrides the mapped fields).
pub fn transform_event(line: &[u8], limits: &Limits) -> Result<Transformed, TransformError> {
    let src: SourceEvent = serde_json::from_slice(line).map_err(|e| TransformError::Json(e.to_string()))?;
    let event_type = src.event_type.filter(|s| !s.is_empty()).ok_or(TransformError::NoEventType)?;
    let event_time = src.event_time.unwrap_or_default();
    let time_ms = parse_naive_utc_ms(&event_time).ok_or_else(|| TransformError::BadTime(event_time.clone()))?;
    let user_id = id_string(src.user_id.as_ref());
    let device_id = id_string(src.device_id.as_ref());
    let source_insert = id_string(src.dollar_insert_id.as_ref()).or_else(|| id_string(src.insert_id.as_ref()));
    let insert_id = valid_insert_id(source_insert.as_deref(), device_id.as_deref().unwrap_or(""), &event_time, &event_type, limits);

    let mut props = Map::new();
    props.insert("time".into(), Value::from(time_ms));
    // FACTS.md: an empty distinct_id is allowed (the event is not tied to a user).
    props.insert("distinct_id".into(), Value::from(user_id.clone().or_else(|| device_id.clone()).unwrap_or_default()));
    props.insert("$insert_id".into(), Value::from(insert_id));
    if let Some(d) = &device_id {
        props.insert("$device_id".into(), Value::from(d.as_str()));
    }
    if let Some(u) = &user_id {
        props.insert("$user_id".into(), Value::from(u.as_str()));
    }
    let mapped = [
        ("ip", src.ip_address),
        ("$city", src.city),
        ("$region", src.region),
        ("mp_country_code", src.country),
        ("$os", src.os_name),
        ("$os_version", src.os_version),
        ("$model", src.device_model),
        ("$brand", src.device_brand),
    ];
    for (name, value) in mapped {
        match value {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(v) => {
                props.insert(name.into(), v);
            }
        }
    }
    let reserved: Vec<String> = props.keys().cloned().collect();
    let mut spread = Map::new();
    for (k, v) in src.user_properties.iter().flatten().chain(src.event_properties.iter().flatten()) {
        spread.insert(k.clone(), v.clone());
    }
    for (k, v) in spread {
        if !reserved.contains(&k) {
            props.insert(k, v);
        }
    }
    let mut event = Map::new();
    event.insert("event".into(), Value::from(event_type));
    event.insert("properties".into(), Value::Object(props));
    let profile = match (user_id, src.user_properties) {
        (Some(u), Some(p)) if !p.is_empty() => Some((u, p)),
        _ => None,
    };
    Ok(Transformed { event: serde_json::to_vec(&Value::Object(event)).expect("a JSON value serializes"), time_ms, profile })
}

/// The latest value of every profile property per user, across all the events seen (spec §2.9:
/// a profile holds the latest value of each property).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileAccumulator {
    users: BTreeMap<String, BTreeMap<String, (i64, Value)>>,
}

impl ProfileAccumulator {
    /// Records the user properties of an event at `time_ms`; a later (or equally timed, later
    /// read) value replaces an earlier one.
    pub fn add(&mut self, user_id: &str, time_ms: i64, properties: &Map<String, Value>) {
        let user = self.users.entry(user_id.to_owned()).or_default();
        for (k, v) in properties {
            match user.get(k) {
                Some((t, _)) if *t > time_ms => {}
                _ => {
                    user.insert(k.clone(), (time_ms, v.clone()));
                }
            }
        }
    }

    /// The number of users seen.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// One `$set` update per user, ordered by user id.
    pub fn updates(&self) -> Vec<ProfileUpdate> {
        self.users
            .iter()
            .map(|(user, props)| ProfileUpdate::set(user.as_str(), props.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect()))
            .collect()
    }
}

/// The outcome of transforming one NDJSON member.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemberTransform {
    /// The transformed events as NDJSON, ready to push into a batcher.
    pub ndjson: Vec<u8>,
    pub events: u64,
    /// `(1-based line, error)` of every line that could not be transformed.
    pub errors: Vec<(u64, TransformError)>,
}

/// Transforms every line of one member's NDJSON, feeding user properties into `profiles`.
pub fn transform_ndjson(data: &[u8], limits: &Limits, profiles: &mut ProfileAccumulator) -> MemberTransform {
    let mut out = MemberTransform { ndjson: Vec::with_capacity(data.len()), ..MemberTransform::default() };
    for (i, line) in data.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match transform_event(line, limits) {
            Ok(t) => {
                if let Some((user, props)) = &t.profile {
                    profiles.add(user, t.time_ms, props);
                }
                out.ndjson.extend_from_slice(&t.event);
                out.ndjson.push(b'\n');
                out.events += 1;
            }
            Err(e) => out.errors.push((i as u64 + 1, e)),
        }
    }
    out
}

#[cfg(test)]
mod tests;
