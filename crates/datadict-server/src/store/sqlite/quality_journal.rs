//! The data-quality journal of the SQLite event writer: each group commit appends its requests'
//! quality rows ([`QualityRows`]), merged by key, as one row of `quality_journal` in the
//! transaction of their events, and adds them to a merged copy in memory; every [`FOLD_EVERY`]
//! the writer writes that copy into the quality tables with `store::quality::record_quality` and
//! empties the journal, in one transaction ([`Journal::fold`]).
//!
//! Why: merged into the tables at every group commit, a tracking group's rows cost two statements
//! per key (a read of the stored head, an upsert), about seventy keys a group for events with a
//! dozen unknown properties. That was 44% of the writer's CPU, and the writer is the one thread
//! every request waits for (`perf`; with it skipped, /track served 13,000 requests/s instead of
//! 7,000-9,000). One insert per group and one merge every [`FOLD_EVERY`] cost a fraction of that.
//!
//! Nothing is less durable: the journal row commits with the events whose findings it holds, and
//! the store folds what a stopped process left in the journal when it opens ([`recover`]). What
//! reads the quality tables, or resets them, folds first ([`crate::store::Store::settle_quality`]),
//! so every reader sees the findings of every request answered before it asked, as before.
//!
//! A key's samples are kept until it has `max_samples` of them. A journal row leaves out the
//! samples of keys that already had that many findings counted since this process started or the
//! quality tables were last reset (`Journal::counted`): a lower bound of the key's count,
//! since every finding comes with a sample while its key has room. Those samples would be cut when
//! folded anyway; left out, a busy group's row is its counts only.
//!
//! The same counts tell when a shape of events ([`ShapeRows`], `ingest::shapes`) has its samples:
//! once every key of a shape collecting samples is counted full, the journal marks it sampled
//! with the request's tag (the day and [`SampleEpoch`]), and later events of that shape come as a
//! count of it. A journal row counts a shape by an id and gives the shape's rows only the first
//! time since the journal was last emptied ([`EntryOut`]), so a tracking group's row stays a few
//! numbers long.

use crate::FastHash;
use crate::store::quality::{merge_row, record_quality, QualityRows, RowKey, ShapeCount, ShapeRows, Table, ViolationRow};
use crate::store::Conn;
use rusqlite::{Connection, TransactionBehavior};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The journal's table, created with the quality tables.
pub(crate) const TABLE: &str = "CREATE TABLE IF NOT EXISTS quality_journal (id INTEGER PRIMARY KEY, requests TEXT NOT NULL);";

/// How often the event writer folds the journal while requests arrive.
pub(crate) const FOLD_EVERY: Duration = Duration::from_millis(250);

/// Forget the counted findings past this many keys (a busy server over many days): forgetting
/// only means some samples are journaled and then cut.
const MAX_COUNTED_KEYS: usize = 200_000;

/// The sampling epoch of the journal's counts (see [`ShapeRows`]): moved on whenever the counts
/// stop being a lower bound of the stored ones (a reset of the quality tables, a failed commit,
/// too many keys), which makes every shape collect samples again.
#[derive(Debug, Clone)]
pub(crate) struct SampleEpoch(Arc<AtomicU64>);

impl Default for SampleEpoch {
    fn default() -> Self {
        Self(Arc::new(AtomicU64::new(1)))
    }
}

impl SampleEpoch {
    /// The epoch in the high half, the UTC day (from 1) in the low half: never 0.
    pub(crate) fn tag(&self, now_ms: i64) -> u64 {
        let day = (now_ms.div_euclid(86_400_000) + 1) as u64 & 0xffff_ffff;
        (self.0.load(Ordering::Relaxed) << 32) | day
    }

    fn advance(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn epoch_of(tag: u64) -> u64 {
        tag >> 32
    }
}

/// The journal's side in the event writer, shared with [`crate::store::Store::settle_quality`].
#[derive(Debug, Default)]
pub(crate) struct Journal {
    /// What the journal table holds, merged: what the next fold writes.
    pending: Merged,
    /// A group's rows appended in its open transaction, added to `pending` once it commits.
    staged: Option<Vec<(i64, QualityRows)>>,
    /// Findings counted per key (project, table, day, kind, entity, property, code, each
    /// length-prefixed) since this process started or the tables were last deleted from.
    counted: HashMap<Vec<u8>, i64, FastHash>,
    /// When the journal was last folded.
    folded_at: Option<Instant>,
    /// The epoch of `counted`.
    epoch: SampleEpoch,
    /// The shapes whose rows the journal table holds (it was not emptied since), by address, with
    /// their ids: a journal row counts a shape by id, and gives its rows only the first time. The
    /// `Arc` keeps an address from being reused while it is here.
    shape_ids: HashMap<usize, (u64, Arc<ShapeRows>), FastHash>,
    /// The addresses the open group added to `shape_ids`, taken out again if it is not committed.
    staged_ids: Vec<usize>,
    next_shape_id: u64,
}

impl Journal {
    /// The sampling epoch, for requests to read without this lock.
    pub(crate) fn epoch(&self) -> SampleEpoch {
        self.epoch.clone()
    }

    /// Appends a group's quality rows, merged, in the group's transaction; [`Journal::committed`]
    /// or [`Journal::forget`] follows the commit.
    pub(crate) fn append(&mut self, conn: &Connection, mut requests: Vec<(i64, QualityRows)>) -> anyhow::Result<()> {
        self.staged = None;
        self.unstage_ids();
        requests.retain(|(_, rows)| !rows.is_empty());
        if requests.is_empty() {
            return Ok(());
        }
        if self.counted.len() > MAX_COUNTED_KEYS {
            self.forget_counts();
        }
        self.leave_out_full_samples(&mut requests);
        self.mark_sampled_shapes(&mut requests);
        let mut group = Merged::default();
        group.add(requests);
        let rows = group.into_requests();
        let mut entries = Vec::with_capacity(rows.len());
        for (project_id, rows) in &rows {
            let mut entry = EntryOut { rows, named_shapes: Vec::new(), shape_counts: Vec::new() };
            for counted in &rows.shapes {
                let at = Arc::as_ptr(&counted.shape) as usize;
                let id = match self.shape_ids.get(&at) {
                    Some((id, _)) => *id,
                    None => {
                        let id = self.next_shape_id;
                        self.next_shape_id += 1;
                        self.shape_ids.insert(at, (id, counted.shape.clone()));
                        self.staged_ids.push(at);
                        entry.named_shapes.push((id, counted.shape.event(), counted.shape.rows()));
                        id
                    }
                };
                entry.shape_counts.push((id, counted.count, counted.first_seen_ms, counted.last_seen_ms));
            }
            entries.push((project_id, entry));
        }
        conn.prepare_cached("INSERT INTO quality_journal (requests) VALUES (?1)")?.execute([serde_json::to_string(&entries)?])?;
        self.staged = Some(rows);
        Ok(())
    }

    /// The group of the last [`Journal::append`] was committed.
    pub(crate) fn committed(&mut self) {
        self.staged_ids.clear();
        if let Some(rows) = self.staged.take() {
            self.pending.add(rows);
        }
    }

    /// The group of the last [`Journal::append`] was not committed: what it counted is forgotten
    /// with the rest (counting is a lower bound).
    pub(crate) fn forget(&mut self) {
        self.staged = None;
        self.unstage_ids();
        self.forget_counts();
    }

    /// Takes out of `shape_ids` the shapes a group that was not committed gave ids to.
    fn unstage_ids(&mut self) {
        for at in self.staged_ids.drain(..) {
            self.shape_ids.remove(&at);
        }
    }

    /// The quality tables lost rows (a reset): what was counted no longer is, and no shape is
    /// sampled any more.
    pub(crate) fn forget_counts(&mut self) {
        self.counted.clear();
        self.epoch.advance();
    }

    /// Marks sampled the shapes that requests were collecting samples for, once every key of a
    /// shape was counted full in this epoch (its findings' samples are then journaled).
    fn mark_sampled_shapes(&mut self, requests: &mut [(i64, QualityRows)]) {
        let epoch = SampleEpoch::epoch_of(self.epoch.tag(0));
        let mut key = Vec::new();
        for (project_id, rows) in requests.iter_mut() {
            for (shape, tag) in std::mem::take(&mut rows.sampling) {
                if SampleEpoch::epoch_of(tag) != epoch || shape.is_sampled(tag) {
                    continue;
                }
                let full = shape.rows().iter().all(|row| {
                    count_key(&mut key, *project_id, Table::Violations, &rows.day, row);
                    self.counted.get(key.as_slice()).is_some_and(|&n| n >= rows.max_samples as i64)
                });
                if full {
                    shape.mark_sampled(tag);
                }
            }
        }
    }

    /// Cuts the samples of each row to the room its key has left by what was counted, and counts
    /// the row.
    fn leave_out_full_samples(&mut self, requests: &mut [(i64, QualityRows)]) {
        let mut key = Vec::new();
        for (project_id, rows) in requests {
            let QualityRows { day, max_samples, violations, rejected, counts, .. } = rows;
            for (table, rows) in [(Table::Violations, violations), (Table::Rejected, rejected), (Table::EventCounts, counts)] {
                for row in rows.iter_mut() {
                    count_key(&mut key, *project_id, table, day, row);
                    let counted = match self.counted.get_mut(key.as_slice()) {
                        Some(n) => n,
                        None => self.counted.entry(key.clone()).or_default(),
                    };
                    let room = (*max_samples as i64).saturating_sub(*counted).max(0) as usize;
                    row.samples.truncate(room);
                    *counted += row.count;
                }
            }
        }
    }

    /// Folds the journal when it holds rows and the last fold is [`FOLD_EVERY`] old (run by the
    /// event writer after a group's answers are sent). A failure is logged: the rows stay in the
    /// journal for the next fold.
    pub(crate) fn fold_when_due(&mut self, conn: &Connection) {
        if self.pending.is_empty() || self.folded_at.is_some_and(|at| at.elapsed() < FOLD_EVERY) {
            return;
        }
        if let Err(e) = self.fold(conn) {
            tracing::warn!("cannot fold the data-quality journal into its tables (it is kept): {e:#}");
        }
    }

    /// Writes what the journal holds into the quality tables and empties it, in one transaction.
    pub(crate) fn fold(&mut self, conn: &Connection) -> anyhow::Result<()> {
        self.folded_at = Some(Instant::now());
        if self.pending.is_empty() {
            return Ok(());
        }
        // A copy: on a failure the journal keeps what it holds, for the next fold.
        write_and_empty(conn, self.pending.clone())?;
        self.pending = Merged::default();
        self.shape_ids.clear();
        Ok(())
    }
}

/// Writes into `key` the key of `row` in `counted`.
fn count_key(key: &mut Vec<u8>, project_id: i64, table: Table, day: &str, row: &ViolationRow) {
    key.clear();
    key.extend_from_slice(&project_id.to_le_bytes());
    key.push(table as u8);
    for part in [day, &row.kind, &row.entity, &row.property, &row.code] {
        key.extend_from_slice(&part.len().to_le_bytes());
        key.extend_from_slice(part.as_bytes());
    }
}

/// Writes the journal rows a stopped process left into the quality tables and empties the
/// journal, in one transaction (nothing when it is empty): run when the store opens.
pub(crate) fn recover(conn: &Connection) -> anyhow::Result<()> {
    let mut read = conn.prepare("SELECT requests FROM quality_journal ORDER BY id")?;
    let texts: Vec<String> = read.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    drop(read);
    if texts.is_empty() {
        return Ok(());
    }
    let mut merged = Merged::default();
    let mut shapes: HashMap<u64, Arc<ShapeRows>> = HashMap::new();
    for text in &texts {
        let mut requests = Vec::new();
        for (project_id, EntryIn { mut rows, shape_defs, named_shapes, shape_counts }) in serde_json::from_str::<Vec<(i64, EntryIn)>>(text)? {
            // A shape written without its name: its requests counted their valid events as rows.
            shapes.extend(shape_defs.into_iter().map(|(id, rows)| (id, Arc::new(ShapeRows::new(None, rows)))));
            shapes.extend(named_shapes.into_iter().map(|(id, event, rows)| (id, Arc::new(ShapeRows::new(event, rows)))));
            for (id, count, first_seen_ms, last_seen_ms) in shape_counts {
                let shape = shapes.get(&id).cloned().with_context(|| format!("a journal row counts shape {id}, which no earlier row defines"))?;
                rows.shapes.push(ShapeCount { shape, count, first_seen_ms, last_seen_ms });
            }
            requests.push((project_id, rows));
        }
        merged.add(requests);
    }
    write_and_empty(conn, merged)
}

/// Writes `merged` into the quality tables and empties the journal, in one transaction.
fn write_and_empty(conn: &Connection, merged: Merged) -> anyhow::Result<()> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    record_quality(&Conn::Sqlite(&tx), merged.into_requests())?;
    tx.execute("DELETE FROM quality_journal", [])?;
    tx.commit()?;
    Ok(())
}

/// Quality rows merged by project, day, table and key, as storing them one after the other
/// would leave them ([`merge_row`]).
#[derive(Debug, Clone, Default)]
struct Merged {
    days: BTreeMap<(i64, String), Day>,
}

/// One project's and day's merged rows, by table (at its index in `Table::ALL`) and key; a row's
/// own key fields are left empty while it is in the map.
#[derive(Debug, Clone, Default)]
struct Day {
    max_keys: usize,
    max_samples: usize,
    tables: [HashMap<RowKey, ViolationRow, FastHash>; 3],
    /// Counted shapes, by the address of their `ShapeRows` (kept alive by the count's `Arc`).
    shapes: HashMap<usize, ShapeCount, FastHash>,
}

impl Merged {
    fn is_empty(&self) -> bool {
        self.days.is_empty()
    }

    fn add(&mut self, requests: Vec<(i64, QualityRows)>) {
        for (project_id, rows) in requests {
            let QualityRows { day, max_keys, max_samples, violations, rejected, counts, shapes, .. } = rows;
            let slot = self.days.entry((project_id, day)).or_default();
            (slot.max_keys, slot.max_samples) = (max_keys, max_samples);
            for shape in shapes {
                match slot.shapes.entry(Arc::as_ptr(&shape.shape) as usize) {
                    std::collections::hash_map::Entry::Occupied(mut into) => {
                        let into = into.get_mut();
                        into.count += shape.count;
                        into.first_seen_ms = into.first_seen_ms.min(shape.first_seen_ms);
                        into.last_seen_ms = into.last_seen_ms.max(shape.last_seen_ms);
                    }
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(shape);
                    }
                }
            }
            for (map, rows) in slot.tables.iter_mut().zip([violations, rejected, counts]) {
                for mut row in rows {
                    let key = (std::mem::take(&mut row.kind), std::mem::take(&mut row.entity), std::mem::take(&mut row.property), std::mem::take(&mut row.code));
                    match map.entry(key) {
                        std::collections::hash_map::Entry::Occupied(mut into) => merge_row(into.get_mut(), row, max_samples),
                        std::collections::hash_map::Entry::Vacant(slot) => {
                            slot.insert(row);
                        }
                    }
                }
            }
        }
    }

    fn into_requests(self) -> Vec<(i64, QualityRows)> {
        (self.days.into_iter())
            .map(|((project_id, day), Day { max_keys, max_samples, tables, shapes })| {
                let [violations, rejected, counts] = tables.map(|map| {
                    map.into_iter()
                        .map(|((kind, entity, property, code), row)| ViolationRow { kind, entity, property, code, ..row })
                        .collect::<Vec<_>>()
                });
                let shapes = shapes.into_values().collect();
                (project_id, QualityRows { day, max_keys, max_samples, violations, rejected, counts, shapes, sampling: Vec::new() })
            })
            .collect()
    }
}

/// One project's and day's rows in a journal row: [`QualityRows`] as it serializes (its plain
/// rows), its counted shapes by id (`shape_counts`: id, count, first and last seen), and the event
/// name and rows of the shapes that no earlier row of the journal gave (`named_shapes`: id, name,
/// rows). A shape's count stands for its events' count of valid events too
/// ([`ShapeRows::event`]).
#[derive(Serialize)]
struct EntryOut<'a> {
    #[serde(flatten)]
    rows: &'a QualityRows,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    named_shapes: Vec<(u64, Option<&'a str>, &'a [ViolationRow])>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shape_counts: Vec<(u64, i64, i64, i64)>,
}

/// [`EntryOut`] read back. A row written before shapes has no shape field; one written before
/// shapes carried their name gives them as `shape_defs` (id, rows), whose events were counted
/// as plain rows.
#[derive(Deserialize)]
struct EntryIn {
    #[serde(flatten)]
    rows: QualityRows,
    #[serde(default)]
    shape_defs: Vec<(u64, Vec<ViolationRow>)>,
    #[serde(default)]
    named_shapes: Vec<(u64, Option<String>, Vec<ViolationRow>)>,
    #[serde(default)]
    shape_counts: Vec<(u64, i64, i64, i64)>,
}
