//! Data quality (issue 20): the violations of the dictionary seen on arrival, and the records the
//! rules rejected (the "bad store"), per project, UTC day and key (kind or route, entity,
//! property, code), with counts, first and last seen, observed JSON types and a few samples. Both
//! [`Table`]s have the same columns and bounds. Storage is bounded: a day holds at most `max_keys` keys per project,
//! and what arrives beyond goes to the key's `$others` row. Each function runs the same-named one
//! of `sqlite/quality.rs` or `pg/quality.rs`; [`record_violations`] merges here, on both.

use super::conn::{dispatch, Conn};
use serde::Serialize;
use serde_json::Value;

/// Which record of quality a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// Violations of the dictionary by stored records; `kind` is `event`, `user` or `group`.
    Violations,
    /// Records the rules rejected; `kind` is the route (`import`, `track`, `job`), `property` is
    /// empty, and each sample is `{"record": "...", "message": "..."}`.
    Rejected,
    /// Good and bad counts per event name: `kind` is `good` (stored or dropped by the
    /// dictionary) or `bad` (rejected); `property`, `code` and `message` are empty, no samples.
    EventCounts,
}

impl Table {
    /// The SQL table (a constant: it is written into statements).
    pub fn name(self) -> &'static str {
        match self {
            Self::Violations => "quality_violations",
            Self::Rejected => "quality_rejected",
            Self::EventCounts => "quality_event_counts",
        }
    }
}

/// One key's tally of a request, or a stored row (then `count` and the times are the day's).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ViolationRow {
    pub kind: String,
    pub entity: String,
    pub property: String,
    pub code: String,
    pub message: String,
    pub count: i64,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
    pub types: Vec<String>,
    #[schema(value_type = Vec<Object>)]
    pub samples: Vec<Value>,
}

/// A stored violation row with its day (`YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredViolation {
    pub day: String,
    pub row: ViolationRow,
}

/// The filters of a listing; `None` is no filter. Days are `YYYY-MM-DD` and inclusive.
#[derive(Debug, Clone, Default)]
pub struct ViolationFilter {
    pub since_day: Option<String>,
    pub until_day: Option<String>,
    pub event: Option<String>,
    pub property: Option<String>,
    pub code: Option<String>,
    pub kind: Option<String>,
}

/// A row's key: kind (or route), entity, property, code.
type RowKey = (String, String, String, String);

/// Adds a request's tallies to the day `day` of a project: an existing key adds its count and
/// widens its times, merges its types and keeps samples up to `max_samples`; a new key past the
/// day's `max_keys` is counted in the `$others` row of its kind and code instead.
pub fn record_violations(conn: &Conn<'_>, table: Table, project_id: i64, day: &str, mut rows: Vec<ViolationRow>, max_keys: usize, max_samples: usize) -> anyhow::Result<()> {
    // The keys are resolved first (a new key past the cap becomes its `$others` key, which only
    // reading tells) and the rows written afterwards in the order of their final keys: requests
    // recording in one transaction each then lock shared rows in one order, so that two of them
    // on PostgreSQL cannot deadlock. Written in the order of the keys as sent, a request locked
    // an existing key before `$others` while another locked `$others` (for a new name sorting
    // first) before that key, and PostgreSQL broke the deadlock by failing one (a test sends such
    // requests at once). The reads take no lock.
    let key = |r: &ViolationRow| (r.kind.clone(), r.entity.clone(), r.property.clone(), r.code.clone());
    // Which new keys fit under the cap is decided in key order as sent, as before.
    rows.sort_by(|a, b| (&a.kind, &a.entity, &a.property, &a.code).cmp(&(&b.kind, &b.entity, &b.property, &b.code)));
    let mut keys = dispatch!(conn, quality::count_violation_keys(table, project_id, day))?;
    // Each final key's row, with the stored row of that key when it was read already.
    let mut resolved: std::collections::BTreeMap<RowKey, (ViolationRow, Option<ViolationRow>)> = Default::default();
    for mut row in rows {
        // PostgreSQL's text holds no zero byte, which an event or property name may; both stores
        // keep the same replacement, so that they list the same keys.
        for text in [&mut row.entity, &mut row.property, &mut row.message] {
            if text.contains('\0') {
                *text = text.replace('\0', "\u{fffd}");
            }
        }
        let existing = dispatch!(conn, quality::get_violation(table, project_id, day, [&row.kind, &row.entity, &row.property, &row.code]))?;
        if existing.is_none() {
            if keys >= max_keys as i64 {
                row.entity = crate::ingest::quality::OTHERS.to_owned();
                row.property = String::new();
                row.message = "records beyond the day's cap of distinct violation keys".to_owned();
                row.types.clear();
            } else {
                keys += 1;
            }
        }
        match resolved.entry(key(&row)) {
            // Several new keys of one kind and code past the cap share their `$others` row.
            std::collections::btree_map::Entry::Occupied(mut slot) => {
                let (into, _) = slot.get_mut();
                into.count += row.count;
                into.first_seen_ms = into.first_seen_ms.min(row.first_seen_ms);
                into.last_seen_ms = into.last_seen_ms.max(row.last_seen_ms);
                into.samples.extend(row.samples);
                into.samples.truncate(max_samples);
            }
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert((row, existing));
            }
        }
    }
    for ((kind, entity, property, code), (mut row, existing)) in resolved {
        // An `$others` row is read here, once for all the keys it counts.
        let existing = match existing {
            Some(old) => Some(old),
            None if entity == crate::ingest::quality::OTHERS => dispatch!(conn, quality::get_violation(table, project_id, day, [&kind, &entity, &property, &code]))?,
            None => None,
        };
        if let Some(old) = existing {
            let mut types = old.types;
            types.extend(row.types);
            types.sort();
            types.dedup();
            row.types = types;
            let mut samples = old.samples;
            samples.extend(row.samples);
            samples.truncate(max_samples);
            row.samples = samples;
        }
        dispatch!(conn, quality::upsert_violation(table, project_id, day, &row))?;
    }
    Ok(())
}

/// A page of violations in (day, kind, entity, property, code) order, from `offset`.
pub fn list_violations(conn: &Conn<'_>, table: Table, project_id: i64, filter: &ViolationFilter, limit: usize, offset: usize) -> anyhow::Result<Vec<StoredViolation>> {
    dispatch!(conn, quality::list_violations(table, project_id, filter, limit, offset))
}

/// Deletes a project's rows of `table`; returns how many rows went.
pub fn delete_violations(conn: &Conn<'_>, table: Table, project_id: i64) -> anyhow::Result<usize> {
    dispatch!(conn, quality::delete_violations(table, project_id))
}

/// Deletes a project's stored events (and their daily counts); returns how many events went.
pub fn delete_events(conn: &Conn<'_>, project_id: i64) -> anyhow::Result<usize> {
    dispatch!(conn, quality::delete_events(project_id))
}
