//! Data quality (issue 20): the violations of the dictionary seen on arrival, and the records the
//! rules rejected (the "bad store"), per project, UTC day and key (kind or route, entity,
//! property, code), with counts, first and last seen, observed JSON types and a few samples. Both
//! [`Table`]s have the same columns and bounds. Storage is bounded: a day holds at most `max_keys` keys per project,
//! and what arrives beyond goes to the key's `$others` row. Each function runs the same-named one
//! of `sqlite/quality.rs` or `pg/quality.rs`; [`record_violations`] merges here, on both.

use super::conn::{dispatch, Conn};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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

/// The `kind` of an [`Table::EventCounts`] row counting valid events.
pub const GOOD: &str = "good";

/// The `kind` of an [`Table::EventCounts`] row counting rejected events.
pub const BAD: &str = "bad";

impl Table {
    /// Every table, in declaration order (so `table as usize` is its index here).
    pub const ALL: [Table; 3] = [Self::Violations, Self::Rejected, Self::EventCounts];

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
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

impl ViolationRow {
    /// A row of [`Table::EventCounts`]: `count` events named `entity` of `kind` ([`GOOD`] or
    /// [`BAD`]).
    pub fn event_count(kind: &str, entity: String, count: i64, first_seen_ms: i64, last_seen_ms: i64) -> Self {
        let none = String::new;
        Self { kind: kind.to_owned(), entity, property: none(), code: none(), message: none(), count, first_seen_ms, last_seen_ms, types: Vec::new(), samples: Vec::new() }
    }
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
    /// Only rows after this key, in the listing's order: `[day, kind, entity, property, code]`
    /// of the last row of the previous page (a key, not an offset, so that rows added or reset
    /// between pages neither repeat nor go missing).
    pub after: Option<[String; 5]>,
}

/// One request's data-quality rows for one project and UTC day, which the event writer stores in
/// the transaction of the request's events ([`EventSink::send_quality`](super::EventSink::send_quality)).
///
/// The violations of events whose shape has its samples ([`ShapeRows`]) come as `shapes`, counted,
/// rather than as rows of their own; [`QualityRows::expand_shapes`] turns them into rows. They are
/// not serialized with the rows: the SQLite journal writes them its own way (`sqlite::quality_journal`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QualityRows {
    /// The UTC day (`YYYY-MM-DD`) the rows count in.
    pub day: String,
    /// The day's cap of distinct keys per project (see [`record_violations`]).
    pub max_keys: usize,
    /// The most samples kept per key.
    pub max_samples: usize,
    pub violations: Vec<ViolationRow>,
    pub rejected: Vec<ViolationRow>,
    pub counts: Vec<ViolationRow>,
    /// Violations as events of known shapes, counted.
    #[serde(skip)]
    pub shapes: Vec<ShapeCount>,
    /// The shapes of this request's events whose violations are still collecting samples, each
    /// with the sampling tag it was checked under: the event writer marks a shape sampled once
    /// every key of it has its samples (see [`ShapeRows`]).
    #[serde(skip)]
    pub sampling: Vec<(Arc<ShapeRows>, u64)>,
}

impl QualityRows {
    pub fn is_empty(&self) -> bool {
        self.violations.is_empty() && self.rejected.is_empty() && self.counts.is_empty() && self.shapes.is_empty()
    }

    /// Turns the counted shapes into violation rows, and into the valid events' count of their
    /// name when the shape knows it ([`ShapeRows::event`]).
    pub fn expand_shapes(&mut self) {
        for ShapeCount { shape, count, first_seen_ms, last_seen_ms } in std::mem::take(&mut self.shapes) {
            self.violations.extend(shape.rows().iter().map(|row| ViolationRow { count: row.count * count, first_seen_ms, last_seen_ms, ..row.clone() }));
            if let Some(event) = shape.event() {
                self.counts.push(ViolationRow::event_count(GOOD, event.to_owned(), count, first_seen_ms, last_seen_ms));
            }
        }
    }
}

/// The violation rows that one valid event of a given name and shape (its property names and
/// JSON types, in order) produces: the core's dictionary check reads nothing else of an event, so
/// every event of that shape produces the same rows (`ingest::shapes` keeps them per compiled
/// dictionary). Each row counts one event's findings of its key; none has samples or times.
///
/// Once every key of the shape has its samples for the day (the event writer's journal knows,
/// see `sqlite::quality_journal`), it is marked *sampled* with that day's tag, and events of that
/// shape travel as a count of it ([`ShapeCount`]) instead of as rows of their own: a tracking
/// request then makes no row, string or sample for its violations, nor for its count of valid
/// events, which the shape's count stands for too.
#[derive(Debug)]
pub struct ShapeRows {
    /// The event name of the shape, whose count of valid events ([`GOOD`], in
    /// [`Table::EventCounts`]) each event of the shape adds one to; `None` for a shape read back
    /// from a journal row written before shapes carried it, whose request counted its events
    /// itself.
    event: Option<String>,
    rows: Vec<ViolationRow>,
    /// The sampling tag under which every key has its samples (0: none).
    sampled: AtomicU64,
}

impl ShapeRows {
    /// The shape of events named `event` that find `rows` (samples left out), not yet sampled.
    pub fn new(event: Option<String>, rows: Vec<ViolationRow>) -> Self {
        let rows = rows.into_iter().map(|row| ViolationRow { samples: Vec::new(), first_seen_ms: 0, last_seen_ms: 0, ..row }).collect();
        Self { event, rows, sampled: AtomicU64::new(0) }
    }

    pub fn event(&self) -> Option<&str> {
        self.event.as_deref()
    }

    pub fn rows(&self) -> &[ViolationRow] {
        &self.rows
    }

    /// Whether every key of the shape has its samples under `tag` (see
    /// [`Store::sample_tag`](super::Store::sample_tag)).
    pub fn is_sampled(&self, tag: u64) -> bool {
        tag != 0 && self.sampled.load(Ordering::Relaxed) == tag
    }

    pub(crate) fn mark_sampled(&self, tag: u64) {
        self.sampled.store(tag, Ordering::Relaxed);
    }
}

/// Events of one shape in one request (or group): how many, first and last seen.
#[derive(Debug, Clone)]
pub struct ShapeCount {
    pub shape: Arc<ShapeRows>,
    pub count: i64,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
}

/// Stores the quality rows of the requests of one group commit, inside its transaction: the rows
/// of one project and day are merged (one statement per key for the whole group, not one per key
/// and request), and every row is written in one order, by project, day, table and key, so that
/// two transactions on PostgreSQL that touch the same rows lock them in the same order.
pub fn record_quality(conn: &Conn<'_>, mut requests: Vec<(i64, QualityRows)>) -> anyhow::Result<()> {
    requests.iter_mut().for_each(|(_, rows)| rows.expand_shapes());
    requests.sort_by(|a, b| (a.0, &a.1.day).cmp(&(b.0, &b.1.day)));
    let mut requests = requests.into_iter().peekable();
    while let Some((project_id, mut first)) = requests.next() {
        while let Some((_, next)) = requests.next_if(|(p, q)| *p == project_id && q.day == first.day) {
            first.violations.extend(next.violations);
            first.rejected.extend(next.rejected);
            first.counts.extend(next.counts);
        }
        let QualityRows { day, max_keys, max_samples, violations, rejected, counts, .. } = first;
        for (table, rows) in [(Table::Violations, violations), (Table::Rejected, rejected), (Table::EventCounts, counts)] {
            if !rows.is_empty() {
                record_violations(conn, table, project_id, &day, rows, max_keys, max_samples)?;
            }
        }
    }
    Ok(())
}

/// A row's key: kind (or route), entity, property, code.
pub(crate) type RowKey = (String, String, String, String);

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
    let mut rows = merge_equal_keys(rows, max_samples);
    // The day's key count is read only once a new key is met: most groups add to known keys.
    let mut keys: Option<i64> = None;
    // Each final key's row, with the stored row's head when it was read already.
    let mut resolved: std::collections::BTreeMap<RowKey, (ViolationRow, Option<ViolationHead>)> = Default::default();
    for row in &mut rows {
        // PostgreSQL's text holds no zero byte, which an event or property name may; both stores
        // keep the same replacement, so that they list the same keys.
        for text in [&mut row.entity, &mut row.property, &mut row.message] {
            if text.contains('\0') {
                *text = text.replace('\0', "\u{fffd}");
            }
        }
    }
    // The stored heads of every key, read at once (on PostgreSQL one statement rather than one
    // round trip per key): nothing is written before the loop below ends, so each read sees what
    // reading it in the loop saw.
    let wanted: Vec<[&str; 4]> = rows.iter().map(|r| [r.kind.as_str(), r.entity.as_str(), r.property.as_str(), r.code.as_str()]).collect();
    let heads = dispatch!(conn, quality::violation_heads(table, project_id, day, &wanted, max_samples))?;
    for mut row in rows {
        let existing = heads.get(&key(&row)).cloned();
        if existing.is_none() {
            let stored = match keys {
                Some(n) => n,
                None => dispatch!(conn, quality::count_violation_keys(table, project_id, day))?,
            };
            if stored >= max_keys as i64 {
                row.entity = crate::ingest::quality::OTHERS.to_owned();
                row.property = String::new();
                row.message = "records beyond the day's cap of distinct violation keys".to_owned();
                row.types.clear();
                keys = Some(stored);
            } else {
                keys = Some(stored + 1);
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
    let mut writes = Vec::with_capacity(resolved.len());
    for ((kind, entity, property, code), (mut row, existing)) in resolved {
        // An `$others` row is read here, once for all the keys it counts.
        let existing = match existing {
            Some(old) => Some(old),
            None if entity == crate::ingest::quality::OTHERS => {
                dispatch!(conn, quality::violation_head(table, project_id, day, [&kind, &entity, &property, &code], max_samples))?
            }
            None => None,
        };
        // What the row adds to a stored one: its count and times (added in SQL), its types, and
        // its samples only while the stored ones are fewer than `max_samples`. A full row's
        // samples are neither read nor written again, which most rows of a busy day are.
        let mut samples = Samples::Replace;
        if let Some(old) = existing {
            let mut types = old.types;
            types.extend(row.types);
            types.sort();
            types.dedup();
            row.types = types;
            if old.samples >= max_samples || row.samples.is_empty() {
                samples = Samples::Keep;
            } else {
                let stored = dispatch!(conn, quality::get_violation(table, project_id, day, [&kind, &entity, &property, &code]))?;
                let mut all = stored.map(|s| s.samples).unwrap_or_default();
                all.extend(row.samples);
                all.truncate(max_samples);
                row.samples = all;
            }
        }
        writes.push((row, samples));
    }
    // One call for the group's rows: on SQLite one statement prepared for them all.
    dispatch!(conn, quality::upsert_violations(table, project_id, day, &writes))
}

/// The types and the number of samples of a stored row: what merging into it needs, without
/// reading its samples.
///
/// `samples` is read without parsing the samples once the row's count has reached the cap
/// (`max_samples`): every finding of a key comes with a sample, kept while the key has fewer than
/// the cap (`ingest::quality`, and the merges here), so a row holds `min(count, max_samples)`
/// samples, and a row counted `max_samples` times or more is full. Parsing each key's samples
/// (a few KB of JSON) to count them was a tenth of the event writer's CPU under tracking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViolationHead {
    pub types: Vec<String>,
    pub samples: usize,
}

/// Whether an upsert writes the row's samples or keeps the stored ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Samples {
    Replace,
    Keep,
}

/// Merges the rows of one key (adjacent in `rows`, which are sorted by key) into one, as storing
/// them one after the other would: counts add up, times widen, types join, samples are kept in
/// order up to `max_samples`, and the first message stays.
fn merge_equal_keys(rows: Vec<ViolationRow>, max_samples: usize) -> Vec<ViolationRow> {
    let mut out: Vec<ViolationRow> = Vec::with_capacity(rows.len());
    for row in rows {
        match out.last_mut() {
            Some(last) if (&last.kind, &last.entity, &last.property, &last.code) == (&row.kind, &row.entity, &row.property, &row.code) => {
                merge_row(last, row, max_samples);
            }
            _ => out.push(row),
        }
    }
    out
}

/// Adds `row` to `into`, a row of the same key, as storing them one after the other would: counts
/// add up, times widen, types join, samples are kept in order up to `max_samples`, and the first
/// message stays. The key fields of `row` are not read.
pub(super) fn merge_row(into: &mut ViolationRow, row: ViolationRow, max_samples: usize) {
    into.count += row.count;
    into.first_seen_ms = into.first_seen_ms.min(row.first_seen_ms);
    into.last_seen_ms = into.last_seen_ms.max(row.last_seen_ms);
    into.types.extend(row.types);
    into.types.sort();
    into.types.dedup();
    let room = max_samples.saturating_sub(into.samples.len());
    into.samples.extend(row.samples.into_iter().take(room));
}

impl super::Store {
    /// Brings the findings of every request answered so far into the quality tables: what reads
    /// or resets them calls this first. On SQLite the event writer appends them to a journal that
    /// it folds into the tables every quarter second (`sqlite::quality_journal`), and this folds it
    /// now; PostgreSQL writes them into the tables directly.
    pub async fn settle_quality(&self) -> anyhow::Result<()> {
        match &self.backend {
            super::Backend::Sqlite(db) => db.settle_quality().await,
            super::Backend::Postgres(_) => Ok(()),
        }
    }

    /// Deletes a project's data-quality rows (violations, rejected events, event counts) and,
    /// with `events`, its stored events. The findings of every request answered before are
    /// deleted with them: on SQLite the journal is folded in the same hold of the writer as the
    /// deletes, so a group committed meanwhile cannot leave findings of deleted events behind,
    /// and the journal then keeps samples again for the keys it had counted full.
    pub async fn reset_quality(&self, project_id: i64, events: bool) -> anyhow::Result<QualityReset> {
        let delete = move |conn: &Conn<'_>| -> anyhow::Result<QualityReset> {
            Ok(QualityReset {
                violations: delete_violations(conn, Table::Violations, project_id)?,
                rejected: delete_violations(conn, Table::Rejected, project_id)?,
                event_counts: delete_violations(conn, Table::EventCounts, project_id)?,
                events: if events { delete_events(conn, project_id)? } else { 0 },
            })
        };
        match &self.backend {
            super::Backend::Sqlite(db) => db.reset_quality(move |c| delete(&Conn::Sqlite(c))).await,
            super::Backend::Postgres(_) => self.call(move |c| delete(c)).await,
        }
    }

    /// The tag under which a [`ShapeRows`] checked at `now_ms` counts as sampled: the UTC day and
    /// the journal's sampling epoch, which a reset of the quality tables (or a failed commit)
    /// moves on, so that samples are collected again. 0 on PostgreSQL, which records every
    /// request's rows as they are (no shape is ever sampled there).
    pub fn sample_tag(&self, now_ms: i64) -> u64 {
        match &self.backend {
            super::Backend::Sqlite(db) => db.sample_tag(now_ms),
            super::Backend::Postgres(_) => 0,
        }
    }
}

/// A page of violations in (day, kind, entity, property, code) order, after `filter.after`.
pub fn list_violations(conn: &Conn<'_>, table: Table, project_id: i64, filter: &ViolationFilter, limit: usize) -> anyhow::Result<Vec<StoredViolation>> {
    dispatch!(conn, quality::list_violations(table, project_id, filter, limit))
}

/// What [`super::Store::reset_quality`] deleted: rows of each quality table, and events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QualityReset {
    pub violations: usize,
    pub rejected: usize,
    pub event_counts: usize,
    pub events: usize,
}

/// Deletes a project's rows of `table`; returns how many rows went.
pub fn delete_violations(conn: &Conn<'_>, table: Table, project_id: i64) -> anyhow::Result<usize> {
    dispatch!(conn, quality::delete_violations(table, project_id))
}

/// Deletes a project's stored events (and their daily counts); returns how many events went.
pub fn delete_events(conn: &Conn<'_>, project_id: i64) -> anyhow::Result<usize> {
    dispatch!(conn, quality::delete_events(project_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(entity: &str, count: i64, at: i64, types: &[&str], samples: &[i64]) -> ViolationRow {
        ViolationRow {
            kind: "event".into(),
            entity: entity.into(),
            property: "p".into(),
            code: "unknown_property".into(),
            message: format!("m{at}"),
            count,
            first_seen_ms: at,
            last_seen_ms: at,
            types: types.iter().map(|t| t.to_string()).collect(),
            samples: samples.iter().map(|s| Value::from(*s)).collect(),
        }
    }

    /// `Table::ALL` lists each table at its discriminant, as `sqlite::quality` indexes it.
    #[test]
    fn every_table_is_at_its_index() {
        for (i, table) in Table::ALL.into_iter().enumerate() {
            assert_eq!(table as usize, i, "{table:?}");
        }
    }

    /// The rows of one key from several requests of a group become the row that storing them one
    /// after the other would leave: counts added, times widened, types joined, samples in order
    /// up to the cap, the first message; other keys are left alone.
    #[test]
    fn rows_of_one_key_merge_as_successive_upserts_would() {
        let rows = vec![row("a", 2, 20, &["string"], &[1, 2]), row("a", 3, 10, &["number", "string"], &[3, 4]), row("b", 1, 5, &[], &[9])];
        let merged = merge_equal_keys(rows, 3);
        assert_eq!(merged.len(), 2);
        let a = &merged[0];
        assert_eq!((a.count, a.first_seen_ms, a.last_seen_ms, a.message.as_str()), (5, 10, 20, "m20"));
        assert_eq!(a.types, ["number", "string"]);
        assert_eq!(a.samples, [Value::from(1), Value::from(2), Value::from(3)]);
        assert_eq!(merged[1], row("b", 1, 5, &[], &[9]));
    }
}
