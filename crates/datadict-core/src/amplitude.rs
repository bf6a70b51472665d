//! The migration's source side (FACTS.md "Migration from another analytics tool"): reading the
//! source tool's export archive (a zip of gzipped NDJSON files) from bytes, one member at a time,
//! and transforming each source record (`transform`) into an event of spec §2.8 with a valid,
//! deterministic `$insert_id`, or a profile update; plus the latest value of each migrated profile
//! property per user and group ([`ProfileAccumulator`]).

mod transform;

pub use transform::{hashed_insert_id, transform_event, transform_record, valid_insert_id, SourceRecord, TransformError, Transformed};

use crate::gzip::{gunzip, GzipError};
use crate::limits::Limits;
use crate::profile::{ProfileOperation, ProfileTarget, ProfileUpdate};
use crate::unzip::{ZipError, ZipReader};
use serde_json::{Map, Value};
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

    /// The NDJSON of one member, gunzipped (a member not ending in `.gz` is returned as stored;
    /// a member made of several gzip members is read whole, as `gunzip` does); fails when it
    /// would exceed `max_bytes`.
    pub fn read_member(&mut self, name: &str, max_bytes: usize) -> Result<Vec<u8>, ExportError> {
        // A name the archive lacks is the archive's fault, not one member's.
        if !self.zip.names().any(|n| n == name) {
            return Err(ZipError("the archive has no member of that name").into());
        }
        let raw = self.zip.read(name).map_err(|source| ExportError::Member { name: name.to_owned(), source })?;
        if !name.ends_with(".gz") {
            return Ok(raw);
        }
        gunzip(&raw, max_bytes).map_err(|source| ExportError::Gzip { name: name.to_owned(), source })
    }
}

/// The latest value of every migrated profile property per user and per group, across all the
/// records seen (spec §2.9: a profile holds the latest value of each property).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileAccumulator {
    users: BTreeMap<String, BTreeMap<String, (i64, Value)>>,
    groups: BTreeMap<(String, String), BTreeMap<String, (i64, Value)>>,
}

/// The values of an accumulated profile.
fn values(profile: &BTreeMap<String, (i64, Value)>) -> Map<String, Value> {
    profile.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect()
}

/// Records `properties` at `time_ms` into `profile`: a later (or equally timed, later read) value
/// replaces an earlier one.
fn add_to(profile: &mut BTreeMap<String, (i64, Value)>, time_ms: i64, properties: &Map<String, Value>) {
    for (k, v) in properties {
        match profile.get(k) {
            Some((t, _)) if *t > time_ms => {}
            _ => {
                profile.insert(k.clone(), (time_ms, v.clone()));
            }
        }
    }
}

impl ProfileAccumulator {
    /// Records the user properties of a record at `time_ms`.
    pub fn add(&mut self, user_id: &str, time_ms: i64, properties: &Map<String, Value>) {
        add_to(self.users.entry(user_id.to_owned()).or_default(), time_ms, properties);
    }

    /// Records the properties of group `id` of group key `key` at `time_ms`.
    pub fn add_group(&mut self, key: &str, id: &str, time_ms: i64, properties: &Map<String, Value>) {
        add_to(self.groups.entry((key.to_owned(), id.to_owned())).or_default(), time_ms, properties);
    }

    /// The number of profiles seen, users and groups.
    pub fn len(&self) -> usize {
        self.users.len() + self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty() && self.groups.is_empty()
    }

    /// One `$set_once` update per user (ordered by user id), for `/engage`: a migrated value
    /// fills a property the profile does not have yet and never replaces one it has, since what
    /// the project received live (or from a migration run before) may be newer than the export.
    pub fn updates(&self) -> Vec<ProfileUpdate> {
        self.users
            .iter()
            .map(|(user, p)| ProfileUpdate { token: None, target: ProfileTarget::User { distinct_id: user.clone() }, operation: ProfileOperation::SetOnce(values(p)) })
            .collect()
    }

    /// One `$set_once` update per group (ordered by key and id), for `/groups`; see
    /// [`ProfileAccumulator::updates`].
    pub fn group_updates(&self) -> Vec<ProfileUpdate> {
        self.groups
            .iter()
            .map(|((key, id), p)| ProfileUpdate {
                token: None,
                target: ProfileTarget::Group { key: key.clone(), id: id.clone() },
                operation: ProfileOperation::SetOnce(values(p)),
            })
            .collect()
    }

    /// Records what `record` holds for profiles.
    pub fn add_record(&mut self, record: &SourceRecord) {
        match record {
            SourceRecord::Event(Transformed { profile: Some((user, props)), time_ms, .. }) | SourceRecord::Identify { profile: Some((user, props)), time_ms } => {
                self.add(user, *time_ms, props)
            }
            SourceRecord::GroupIdentify { time_ms, groups } => {
                for (key, id, props) in groups {
                    self.add_group(key, id, *time_ms, props);
                }
            }
            _ => {}
        }
    }
}

/// The non-blank lines of NDJSON with their 1-based line numbers.
pub fn ndjson_lines(data: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    data.split(|b| *b == b'\n').enumerate().filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace)).map(|(i, l)| (i as u64 + 1, l))
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

/// Transforms every line of one member's NDJSON, feeding profile properties into `profiles`
/// (`$identify` and `$groupidentify` rows only feed them).
pub fn transform_ndjson(data: &[u8], limits: &Limits, profiles: &mut ProfileAccumulator) -> MemberTransform {
    let mut out = MemberTransform { ndjson: Vec::with_capacity(data.len()), ..MemberTransform::default() };
    for (line_no, line) in ndjson_lines(data) {
        match transform_record(line, limits) {
            Ok(record) => {
                profiles.add_record(&record);
                if let SourceRecord::Event(t) = record {
                    out.ndjson.extend_from_slice(&t.event);
                    out.ndjson.push(b'\n');
                    out.events += 1;
                }
            }
            Err(e) => out.errors.push((line_no, e)),
        }
    }
    out
}

#[cfg(test)]
mod tests;
