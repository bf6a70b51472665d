//! The import's insert path on SQLite: the insert that lets the latest copy of an event win, the
//! per-hour volumes it keeps, and the foreign-key setting events are written under.

use crate::FastHash;
use crate::store::events::{EventBatch, EventRow, RowSpans, HOUR_MS};
use anyhow::Context;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;

/// Rows per `INSERT` statement: fewer statement executions and bindings per batch (8 parameters
/// a row stays far below SQLite's limit of 32,766).
const ROWS_PER_INSERT: usize = 50;

/// The insert of `n` rows. A row whose event is already stored (the dedup key: SQLite 3.35+
/// applies `OR IGNORE` to any uniqueness constraint, and the key's columns differ between
/// databases created before and after it gained `time_ms`, see `MIGRATION`) is skipped here and
/// replaced by `replace_copies`, so the common case of only new events costs one plain insert.
fn insert_sql(n: usize) -> String {
    let mut sql = String::from(
        "INSERT OR IGNORE INTO events (project_id, dedup, event, time_ms, distinct_id, insert_id, record, ingested_at) VALUES ",
    );
    for i in 0..n {
        sql.push_str(if i == 0 { "(?,?,?,?,?,?,?,?)" } else { ",(?,?,?,?,?,?,?,?)" });
    }
    sql
}

#[cfg(test)]
/// Stores a batch of events in one transaction (one fsync); a copy of an event already stored
/// replaces it. Returns how many rows were written.
pub fn insert_events(conn: &mut Connection, project_id: i64, batch: &EventBatch, now_s: i64) -> anyhow::Result<usize> {
    without_foreign_keys(conn, |conn| {
        let tx = conn.transaction()?;
        upsert_rows(&tx, project_id, batch, now_s)?;
        tx.commit()?;
        Ok(batch.len())
    })?
}

#[cfg(test)]
/// Runs `f`, which writes events, with the connection's foreign-key checks off, and then sets
/// them as they were (see [`set_foreign_keys`] for why events are written without them): the
/// caller may write other tables after it.
fn without_foreign_keys<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> T) -> anyhow::Result<T> {
    use rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY;
    let were_on = conn.db_config(SQLITE_DBCONFIG_ENABLE_FKEY).context("cannot read whether foreign keys are checked")?;
    set_foreign_keys(conn, false)?;
    let out = f(conn);
    // It cannot fail outside a transaction (it only sets a flag); if it did, the connection
    // would go on without checks until its next `Store::call`, so say so.
    if let Err(e) = set_foreign_keys(conn, were_on) {
        tracing::error!("{e:#}");
    }
    Ok(out)
}

/// Turns the connection's foreign-key checks on or off. Events are written without them: an
/// `INSERT` checked against a foreign key may fail half-way, so inside a transaction SQLite keeps
/// a statement journal for it, a copy of every page the statement changes that earlier
/// statements had already changed (the right edges of the table and of the dedup key), spilled
/// to a temporary file past 64 KiB. For the event writer that was about a sixth of its CPU (4
/// clients, alternating runs: 4.1–4.3 s against 3.3–3.6 s per 1,000,000 events). The only
/// foreign key of `events` and `event_volume` is the project, which every caller has checked
/// (the request's credentials, or the job's project), and projects are never deleted.
///
/// A change of the setting (SQLite does nothing when it is so already) expires the connection's
/// prepared statements, which are prepared again on their next use: about 0.5 M instructions
/// (callgrind), a fifth of a millisecond. So the event writer leaves the checks off between its
/// group commits, and the other writes on its connection
/// ([`Sqlite::call`](super::Sqlite::call), [`Sqlite::call_sync`](super::Sqlite::call_sync)) turn them
/// on first: under a stream of imports the setting never changes.
pub(super) fn set_foreign_keys(conn: &Connection, on: bool) -> anyhow::Result<()> {
    use rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY;
    conn.set_db_config(SQLITE_DBCONFIG_ENABLE_FKEY, on)
        .with_context(|| format!("cannot turn the foreign-key checks {}", if on { "on" } else { "off" }))?;
    Ok(())
}

/// New events of a batch per (event name, hour): count and latest time. A list searched from the
/// entry used last, not a hash map: a batch (one part of a request, 250 rows at most) holds few
/// names and hours, and hashing every row's name cost 3% of the import's instructions (callgrind).
/// There is at most one entry per row, so a search is bounded by the part's size.
#[derive(Debug, Default)]
struct Volume<'a> {
    entries: Vec<VolumeEntry<'a>>,
    /// Where the last row was counted: the next row is most often of the same name and hour.
    last: usize,
}

#[derive(Debug)]
struct VolumeEntry<'a> {
    event: &'a str,
    hour: i64,
    count: i64,
    last_ms: i64,
}

fn count_new<'a>(volume: &mut Volume<'a>, row: &EventRow<'a>) {
    let hour = row.time_ms / HOUR_MS;
    let same = |e: &VolumeEntry<'_>| e.hour == hour && e.event == row.event;
    let at = match volume.entries.get(volume.last) {
        Some(e) if same(e) => volume.last,
        _ => match volume.entries.iter().position(same) {
            Some(at) => at,
            None => {
                volume.entries.push(VolumeEntry { event: row.event, hour, count: 0, last_ms: i64::MIN });
                volume.entries.len() - 1
            }
        },
    };
    volume.last = at;
    let entry = &mut volume.entries[at];
    entry.count += 1;
    entry.last_ms = entry.last_ms.max(row.time_ms);
}

/// The new events of an event writer's job per (event name, hour), with owned names: the writer
/// adds those of the jobs it stored to `event_volume` once per group commit
/// ([`VolumeTally::write`]), instead of one statement per job. In a group of tracking requests,
/// all of one name and hour, that was one upsert of the same row per request, about a seventh of
/// the writer's instructions (callgrind). Keyed by name first, so that a part's names are looked
/// up without allocating. [`upsert_rows`] (a batch in a transaction of its own) writes its
/// batch's tally at once.
#[derive(Debug, Default)]
pub(super) struct VolumeTally {
    by_event: HashMap<String, Vec<HourCount>, FastHash>,
}

#[derive(Debug)]
struct HourCount {
    project_id: i64,
    hour: i64,
    count: i64,
    last_ms: i64,
}

impl HourCount {
    /// Adds its count to the entry of its project and hour in `hours`, or becomes that entry.
    fn add_to(self, hours: &mut Vec<HourCount>) {
        match hours.iter_mut().find(|h| h.project_id == self.project_id && h.hour == self.hour) {
            Some(h) => {
                h.count += self.count;
                h.last_ms = h.last_ms.max(self.last_ms);
            }
            None => hours.push(self),
        }
    }
}

impl VolumeTally {
    fn add(&mut self, project_id: i64, event: &str, hour: i64, count: i64, last_ms: i64) {
        let hours = match self.by_event.get_mut(event) {
            Some(hours) => hours,
            None => self.by_event.entry(event.to_owned()).or_default(),
        };
        HourCount { project_id, hour, count, last_ms }.add_to(hours);
    }

    /// Adds another tally's counts (another job of the group) to this one, moving its names.
    pub(super) fn merge(&mut self, other: VolumeTally) {
        for (event, hours) in other.by_event {
            let mine = self.by_event.entry(event).or_default();
            hours.into_iter().for_each(|h| h.add_to(mine));
        }
    }

    /// Adds the counts to `event_volume`, inside the caller's transaction.
    pub(super) fn write(&self, conn: &Connection) -> anyhow::Result<()> {
        let mut stmt = conn.prepare_cached(
            "INSERT INTO event_volume (project_id, event, hour, count, last_ms) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT DO UPDATE SET count = count + excluded.count, last_ms = max(last_ms, excluded.last_ms)",
        )?;
        for (event, hours) in &self.by_event {
            for h in hours {
                stmt.execute(params![h.project_id, event, h.hour, h.count, h.last_ms])?;
            }
        }
        Ok(())
    }
}

/// The rows of a batch, inside the caller's transaction: new events inserted and counted in
/// `event_volume`, copies of stored events replacing them (the latest copy wins, FACTS.md).
pub(super) fn upsert_rows(conn: &Connection, project_id: i64, batch: &EventBatch, now_s: i64) -> anyhow::Result<()> {
    let mut tally = VolumeTally::default();
    upsert_rows_tallied(conn, project_id, batch, now_s, &mut tally)?;
    tally.write(conn)
}

/// [`upsert_rows`] for the event writer: the new events are added to `tally`, for the group's
/// commit to write to `event_volume`.
pub(super) fn upsert_rows_tallied(conn: &Connection, project_id: i64, batch: &EventBatch, now_s: i64, tally: &mut VolumeTally) -> anyhow::Result<()> {
    let volume = insert_rows(conn, project_id, batch, now_s)?;
    for e in &volume.entries {
        tally.add(project_id, e.event, e.hour, e.count, e.last_ms);
    }
    Ok(())
}

/// The rows of a batch inserted, or written over the stored copies; returns the new events'
/// counts.
fn insert_rows<'b>(conn: &Connection, project_id: i64, batch: &'b EventBatch, now_s: i64) -> anyhow::Result<Volume<'b>> {
    let mut volume = Volume::default();
    for chunk in batch.rows.chunks(ROWS_PER_INSERT) {
        let mut stmt = conn.prepare_cached(&insert_sql(chunk.len()))?;
        for (i, spans) in chunk.iter().enumerate() {
            let row = batch.row(spans);
            let at = i * 8;
            stmt.raw_bind_parameter(at + 1, project_id)?;
            stmt.raw_bind_parameter(at + 2, &row.dedup[..])?;
            stmt.raw_bind_parameter(at + 3, row.event)?;
            stmt.raw_bind_parameter(at + 4, row.time_ms)?;
            stmt.raw_bind_parameter(at + 5, row.distinct_id)?;
            stmt.raw_bind_parameter(at + 6, row.insert_id)?;
            stmt.raw_bind_parameter(at + 7, row.record)?;
            stmt.raw_bind_parameter(at + 8, now_s)?;
        }
        let inserted = stmt.raw_execute()?;
        if inserted == chunk.len() {
            chunk.iter().for_each(|spans| count_new(&mut volume, &batch.row(spans)));
        } else {
            replace_copies(conn, project_id, batch, chunk, inserted, now_s, &mut volume)?;
        }
    }
    Ok(volume)
}

/// After an insert of `chunk` that skipped some rows: tells the new events from copies and
/// writes each copy over the stored event, in batch order so that the latest copy wins. The
/// `inserted` new rows got the rowids just below and up to `last_insert_rowid` (a rowid table
/// gives each new row the largest rowid plus one); a row found with another rowid, or seen
/// earlier in the chunk, is a copy.
fn replace_copies<'a>(
    conn: &Connection,
    project_id: i64,
    batch: &'a EventBatch,
    chunk: &[RowSpans],
    inserted: usize,
    now_s: i64,
    volume: &mut Volume<'a>,
) -> anyhow::Result<()> {
    let last = conn.last_insert_rowid();
    let first_new = last - inserted as i64 + 1;
    // Empty when nothing was inserted (`first_new` is then past `last`).
    let new_rowids = first_new..=last;
    let mut find = conn.prepare_cached("SELECT rowid FROM events WHERE project_id = ?1 AND time_ms = ?2 AND dedup = ?3")?;
    let mut replace = conn.prepare_cached("UPDATE events SET record = ?2, ingested_at = ?3 WHERE rowid = ?1")?;
    let mut seen: Vec<[u8; 16]> = Vec::with_capacity(chunk.len());
    for spans in chunk {
        let row = batch.row(spans);
        let rowid: i64 = find
            .query_row(params![project_id, row.time_ms, &row.dedup[..]], |r| r.get(0))
            .optional()?
            .with_context(|| format!("the event {:?} at {} was neither stored nor found stored", row.event, row.time_ms))?;
        let copy = seen.contains(&row.dedup) || !new_rowids.contains(&rowid);
        seen.push(row.dedup);
        if copy {
            replace.execute(params![rowid, row.record, now_s])?;
        } else {
            count_new(volume, &row);
        }
    }
    Ok(())
}
