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

use crate::store::quality::{merge_row, record_quality, QualityRows, RowKey, Table, ViolationRow};
use crate::store::Conn;
use rusqlite::{Connection, TransactionBehavior};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The journal's table, created with the quality tables.
pub(crate) const TABLE: &str = "CREATE TABLE IF NOT EXISTS quality_journal (id INTEGER PRIMARY KEY, requests TEXT NOT NULL);";

/// How often the event writer folds the journal while requests arrive.
pub(crate) const FOLD_EVERY: Duration = Duration::from_millis(250);

/// Forget the counted findings past this many keys (a busy server over many days): forgetting
/// only means some samples are journaled and then cut.
const MAX_COUNTED_KEYS: usize = 200_000;

type FastHash = foldhash::fast::RandomState;

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
}

impl Journal {
    /// Appends a group's quality rows, merged, in the group's transaction; [`Journal::committed`]
    /// or [`Journal::forget`] follows the commit.
    pub(crate) fn append(&mut self, conn: &Connection, mut requests: Vec<(i64, QualityRows)>) -> anyhow::Result<()> {
        self.staged = None;
        requests.retain(|(_, rows)| !rows.is_empty());
        if requests.is_empty() {
            return Ok(());
        }
        if self.counted.len() > MAX_COUNTED_KEYS {
            self.counted.clear();
        }
        self.leave_out_full_samples(&mut requests);
        let mut group = Merged::default();
        group.add(requests);
        let rows = group.into_requests();
        conn.prepare_cached("INSERT INTO quality_journal (requests) VALUES (?1)")?.execute([serde_json::to_string(&rows)?])?;
        self.staged = Some(rows);
        Ok(())
    }

    /// The group of the last [`Journal::append`] was committed.
    pub(crate) fn committed(&mut self) {
        if let Some(rows) = self.staged.take() {
            self.pending.add(rows);
        }
    }

    /// The group of the last [`Journal::append`] was not committed: what it counted is forgotten
    /// with the rest (counting is a lower bound).
    pub(crate) fn forget(&mut self) {
        self.staged = None;
        self.counted.clear();
    }

    /// The quality tables lost rows (a reset): what was counted no longer is.
    pub(crate) fn forget_counts(&mut self) {
        self.counted.clear();
    }

    /// Cuts the samples of each row to the room its key has left by what was counted, and counts
    /// the row.
    fn leave_out_full_samples(&mut self, requests: &mut [(i64, QualityRows)]) {
        let mut key = Vec::new();
        for (project_id, rows) in requests {
            let QualityRows { day, max_samples, violations, rejected, counts, .. } = rows;
            for (table, rows) in [(Table::Violations, violations), (Table::Rejected, rejected), (Table::EventCounts, counts)] {
                for row in rows.iter_mut() {
                    key.clear();
                    key.extend_from_slice(&project_id.to_le_bytes());
                    key.push(table as u8);
                    for part in [day.as_str(), &row.kind, &row.entity, &row.property, &row.code] {
                        key.extend_from_slice(&part.len().to_le_bytes());
                        key.extend_from_slice(part.as_bytes());
                    }
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
        Ok(())
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
    for text in &texts {
        merged.add(serde_json::from_str::<Vec<(i64, QualityRows)>>(text)?);
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
}

impl Merged {
    fn is_empty(&self) -> bool {
        self.days.is_empty()
    }

    fn add(&mut self, requests: Vec<(i64, QualityRows)>) {
        for (project_id, rows) in requests {
            let QualityRows { day, max_keys, max_samples, violations, rejected, counts } = rows;
            let slot = self.days.entry((project_id, day)).or_default();
            (slot.max_keys, slot.max_samples) = (max_keys, max_samples);
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
            .map(|((project_id, day), Day { max_keys, max_samples, tables })| {
                let [violations, rejected, counts] = tables.map(|map| {
                    map.into_iter()
                        .map(|((kind, entity, property, code), row)| ViolationRow { kind, entity, property, code, ..row })
                        .collect::<Vec<_>>()
                });
                (project_id, QualityRows { day, max_keys, max_samples, violations, rejected, counts })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Sqlite, Synchronous};
    use super::*;
    use crate::store::quality::{list_violations, StoredViolation, ViolationFilter};
    use serde_json::Value;

    fn row(entity: &str, property: &str, count: i64, at: i64, types: &[&str], samples: &[&str]) -> ViolationRow {
        ViolationRow {
            kind: "event".into(),
            entity: entity.into(),
            property: property.into(),
            code: "unknown_property".into(),
            message: format!("{entity}.{property} at {at}"),
            count,
            first_seen_ms: at,
            last_seen_ms: at,
            types: types.iter().map(|t| t.to_string()).collect(),
            samples: samples.iter().map(|s| Value::from(*s)).collect(),
        }
    }

    fn request(day: &str, violations: Vec<ViolationRow>, counts: Vec<ViolationRow>) -> (i64, QualityRows) {
        (1, QualityRows { day: day.into(), max_keys: 100, max_samples: 3, violations, rejected: Vec::new(), counts })
    }

    /// Groups of requests: one key in every group (more findings than samples kept, new types
    /// late, each group's samples and times), keys of one group only, two days, and counts.
    fn groups() -> Vec<Vec<(i64, QualityRows)>> {
        (0..4i64)
            .map(|g| {
                let at = 1_000 * (g + 1);
                let mut group = vec![
                    request("2026-01-01", vec![row("Buy", "coupon", 2, at, &["string"], &[&format!("g{g}a"), &format!("g{g}b")])], Vec::new()),
                    request(
                        "2026-01-01",
                        vec![row("Buy", "coupon", 1, at + 1, if g == 3 { &["number"] } else { &["string"] }, &[&format!("g{g}c")])],
                        vec![ViolationRow { kind: "good".into(), code: String::new(), property: String::new(), ..row("Buy", "", 3, at, &[], &[]) }],
                    ),
                ];
                group.push(request("2026-01-02", vec![row(&format!("Only {g}"), "p", 1, at, &[], &[&format!("only {g}")])], Vec::new()));
                group
            })
            .collect()
    }

    fn stored(db: &Sqlite) -> Vec<Vec<StoredViolation>> {
        let all = ViolationFilter::default();
        (Table::ALL.iter())
            .map(|&t| db.call_sync(|conn| list_violations(&Conn::Sqlite(conn), t, 1, &all, 1_000, 0)).unwrap())
            .collect()
    }

    fn with_project(db: &Sqlite) {
        db.call_sync(|conn| Ok(conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", [])?)).unwrap();
    }

    /// Appends `group` as the event writer does, in a transaction of its own.
    fn append(db: &Sqlite, group: Vec<(i64, QualityRows)>) {
        let journal = db.journal.clone();
        db.call_sync(move |conn| {
            let mut journal = journal.lock().unwrap();
            let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Deferred)?;
            journal.append(&tx, group)?;
            tx.commit()?;
            journal.committed();
            Ok(())
        })
        .unwrap();
    }

    fn fold_now(db: &Sqlite) {
        let journal = db.journal.clone();
        db.call_sync(move |conn| journal.lock().unwrap().fold(conn)).unwrap();
    }

    /// Journaled groups, folded twice along the way, leave the quality tables as writing each
    /// group into them directly does: counts, times, types, the first message, and the first
    /// samples in order, up to the cap.
    #[test]
    fn folded_groups_store_what_direct_writes_store() {
        let direct = Sqlite::open_in_memory().unwrap();
        with_project(&direct);
        for group in groups() {
            direct
                .call_sync(|conn| {
                    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Deferred)?;
                    record_quality(&Conn::Sqlite(&tx), group)?;
                    Ok(tx.commit()?)
                })
                .unwrap();
        }
        let journaled = Sqlite::open_in_memory().unwrap();
        with_project(&journaled);
        for (i, group) in groups().into_iter().enumerate() {
            append(&journaled, group);
            if i == 1 {
                fold_now(&journaled);
            }
        }
        let pending: i64 = journaled.call_sync(|c| Ok(c.query_row("SELECT count(*) FROM quality_journal", [], |r| r.get(0))?)).unwrap();
        assert_eq!(pending, 2, "the groups since the first fold wait in the journal");
        fold_now(&journaled);
        let expected = stored(&direct);
        assert_eq!(expected[0].len(), 5, "{expected:?}");
        assert_eq!(expected[0][0].row.samples, ["g0a", "g0b", "g0c"].map(Value::from), "{expected:?}");
        assert_eq!(expected[0][0].row.types, ["number", "string"], "{expected:?}");
        assert_eq!(stored(&journaled), expected);
        let left: i64 = journaled.call_sync(|c| Ok(c.query_row("SELECT count(*) FROM quality_journal", [], |r| r.get(0))?)).unwrap();
        assert_eq!(left, 0);
    }

    /// Rows journaled by a process that stopped before folding them are in the tables once the
    /// database is opened again.
    #[test]
    fn a_reopened_store_folds_what_was_journaled() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("q.sqlite3");
        let db = Sqlite::open_with(&file, Synchronous::Full).unwrap();
        with_project(&db);
        for group in groups() {
            append(&db, group);
        }
        drop(db);
        let reopened = Sqlite::open_with(&file, Synchronous::Full).unwrap();
        let rows = stored(&reopened);
        assert_eq!(rows[0].iter().map(|v| v.row.count).sum::<i64>(), 16, "{rows:?}");
        assert_eq!(rows[2].iter().map(|v| v.row.count).sum::<i64>(), 12, "{rows:?}");
    }

    /// Samples left out of the journal once a key had its share come back after the key's rows
    /// are deleted by a reset, which tells the store (`quality_deleted`).
    #[test]
    fn samples_are_journaled_again_after_a_reset() {
        let db = Sqlite::open_in_memory().unwrap();
        with_project(&db);
        let one = |sample: &str| vec![request("2026-01-01", vec![row("Buy", "coupon", 1, 1, &[], &[sample])], Vec::new())];
        for s in ["a", "b", "c", "d"] {
            append(&db, one(s));
        }
        let staged: String = db.call_sync(|c| Ok(c.query_row("SELECT requests FROM quality_journal ORDER BY id DESC", [], |r| r.get(0))?)).unwrap();
        assert!(!staged.contains("\"d\""), "a key with its samples counted is journaled without more: {staged}");
        fold_now(&db);
        assert_eq!(stored(&db)[0][0].row.samples, ["a", "b", "c"].map(Value::from));
        db.call_sync(|c| Ok(c.execute_batch("DELETE FROM quality_violations_samples WHERE project_id = 1; DELETE FROM quality_violations WHERE project_id = 1;")?))
            .unwrap();
        db.quality_deleted();
        append(&db, one("e"));
        fold_now(&db);
        let rows = stored(&db);
        assert_eq!((rows[0][0].row.count, rows[0][0].row.samples.clone()), (1, vec![Value::from("e")]));
    }
}
