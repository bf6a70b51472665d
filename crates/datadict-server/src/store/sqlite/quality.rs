//! Data quality on SQLite: the violation and rejected-record rows of each project and UTC day
//! (see `store::quality`).

use crate::store::quality::{RowKey, Samples, StoredViolation, Table, ViolationFilter, ViolationHead, ViolationRow};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::sync::LazyLock;

/// The tables of violations, of rejected records and of good and bad counts (the same columns),
/// each with a table of its rows' samples, created when the store opens (`tables::create`).
/// Types and samples are JSON arrays.
///
/// A key's samples are kept apart from its counts: every group commit adds to the counts of the
/// keys it saw, while a key's samples are written only until it has `max_samples` of them. In
/// one row, a count's update rewrote the samples too (about 3 KB a key), and the pages of all
/// the keys a tracking group touched (most of the commit's WAL frames) were written again by
/// every commit; apart, the counts of a day's keys fill a page or two.
pub(crate) fn tables() -> String {
    // A row's key, the same in both tables.
    let key = "project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    day TEXT NOT NULL,
    kind TEXT NOT NULL,
    entity TEXT NOT NULL,
    property TEXT NOT NULL,
    code TEXT NOT NULL";
    Table::ALL
        .iter()
        .map(|table| {
            let name = table.name();
            format!(
                "CREATE TABLE IF NOT EXISTS {name} (
    {key},
    message TEXT NOT NULL,
    count INTEGER NOT NULL,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    types TEXT NOT NULL,
    PRIMARY KEY (project_id, day, kind, entity, property, code)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {name}_samples (
    {key},
    samples TEXT NOT NULL,
    PRIMARY KEY (project_id, day, kind, entity, property, code)
) WITHOUT ROWID;
"
            )
        })
        .chain([super::quality_journal::TABLE.to_owned()])
        .collect()
}

/// Moves the samples of a database written before they were kept apart (a `samples` column in
/// each quality table) into the tables of samples, and drops the column; returns whether there
/// was anything to move. Run by `tables::create` after [`tables`], in its transaction.
pub(crate) fn move_samples_apart(conn: &Connection) -> anyhow::Result<bool> {
    let mut moved = false;
    for name in Table::ALL.map(Table::name) {
        let has_samples: bool =
            conn.query_row(&format!("SELECT count(*) FROM pragma_table_info('{name}') WHERE name = 'samples'"), [], |r| r.get::<_, i64>(0))? > 0;
        if has_samples {
            conn.execute_batch(&format!(
                "INSERT INTO {name}_samples (project_id, day, kind, entity, property, code, samples)
                 SELECT project_id, day, kind, entity, property, code, samples FROM {name} WHERE samples <> '[]';
                 ALTER TABLE {name} DROP COLUMN samples;"
            ))?;
            moved = true;
        }
    }
    Ok(moved)
}

pub fn count_violation_keys(conn: &Connection, table: Table, project_id: i64, day: &str) -> anyhow::Result<i64> {
    let sql = format!("SELECT count(*) FROM {t} WHERE project_id = ?1 AND day = ?2", t = table.name());
    Ok(conn.prepare_cached(&sql)?.query_row(params![project_id, day], |r| r.get(0))?)
}

/// The row of one key, `[kind, entity, property, code]`, if stored.
pub fn get_violation(conn: &Connection, table: Table, project_id: i64, day: &str, key: [&str; 4]) -> anyhow::Result<Option<ViolationRow>> {
    let [kind, entity, property, code] = key;
    // Prepared once per connection: this runs for every key of a group commit whose samples are
    // not yet full.
    let row = conn
        .prepare_cached(&format!(
            "SELECT message, count, first_seen_ms, last_seen_ms, types, coalesce(s.samples, '[]') FROM {t} v LEFT JOIN {t}_samples s USING (project_id, day, kind, entity, property, code)
             WHERE v.project_id = ?1 AND v.day = ?2 AND v.kind = ?3 AND v.entity = ?4 AND v.property = ?5 AND v.code = ?6",
            t = table.name()
        ))?
        .query_row(
            params![project_id, day, kind, entity, property, code],
            |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get::<_, String>(4)?, r.get::<_, String>(5)?)),
        )
        .optional()?;
    row.map(|(message, count, first_seen_ms, last_seen_ms, types, samples)| {
        Ok(ViolationRow {
            kind: kind.to_owned(),
            entity: entity.to_owned(),
            property: property.to_owned(),
            code: code.to_owned(),
            message,
            count,
            first_seen_ms,
            last_seen_ms,
            types: serde_json::from_str(&types)?,
            samples: serde_json::from_str(&samples)?,
        })
    })
    .transpose()
}

/// The statements the event writer runs for every key of a group, one set per table (at its
/// index in `Table::ALL`), made once: a statement is found in the connection's cache by its text.
struct KeyStatements {
    head: String,
    upsert: String,
    samples: String,
}

fn key_statements(table: Table) -> &'static KeyStatements {
    static ALL: LazyLock<[KeyStatements; 3]> = LazyLock::new(|| {
        Table::ALL.map(|table| KeyStatements {
            // Parsing the samples to count them only while the count is under the cap (see
            // `ViolationHead`).
            head: format!(
                "SELECT types, CASE WHEN count >= ?7 THEN ?7 ELSE
                     coalesce((SELECT json_array_length(s.samples) FROM {t}_samples s
                               WHERE s.project_id = ?1 AND s.day = ?2 AND s.kind = ?3 AND s.entity = ?4 AND s.property = ?5 AND s.code = ?6), 0) END
                 FROM {t} WHERE project_id = ?1 AND day = ?2 AND kind = ?3 AND entity = ?4 AND property = ?5 AND code = ?6",
                t = table.name()
            ),
            upsert: format!(
                "INSERT INTO {t} (project_id, day, kind, entity, property, code, message, count, first_seen_ms, last_seen_ms, types)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT (project_id, day, kind, entity, property, code) DO UPDATE SET
                     count = count + excluded.count, first_seen_ms = min(first_seen_ms, excluded.first_seen_ms),
                     last_seen_ms = max(last_seen_ms, excluded.last_seen_ms), types = excluded.types",
                t = table.name()
            ),
            samples: format!(
                "INSERT INTO {t}_samples (project_id, day, kind, entity, property, code, samples) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (project_id, day, kind, entity, property, code) DO UPDATE SET samples = excluded.samples",
                t = table.name()
            ),
        })
    });
    &ALL[table as usize]
}

/// The heads of the stored rows among `keys` (`[kind, entity, property, code]` each), by key:
/// one statement, run once per key, which costs no round trip in a file.
pub fn violation_heads(conn: &Connection, table: Table, project_id: i64, day: &str, keys: &[[&str; 4]], max_samples: usize) -> anyhow::Result<HashMap<RowKey, ViolationHead>> {
    let mut heads = HashMap::new();
    let mut stmt = conn.prepare_cached(&key_statements(table).head)?;
    for &key in keys {
        if let Some(head) = read_head(&mut stmt, project_id, day, key, max_samples)? {
            let [kind, entity, property, code] = key.map(str::to_owned);
            heads.insert((kind, entity, property, code), head);
        }
    }
    Ok(heads)
}

/// The types and sample count of one key's row, `[kind, entity, property, code]`, if stored.
pub fn violation_head(conn: &Connection, table: Table, project_id: i64, day: &str, key: [&str; 4], max_samples: usize) -> anyhow::Result<Option<ViolationHead>> {
    read_head(&mut *conn.prepare_cached(&key_statements(table).head)?, project_id, day, key, max_samples)
}

fn read_head(stmt: &mut rusqlite::Statement<'_>, project_id: i64, day: &str, key: [&str; 4], max_samples: usize) -> anyhow::Result<Option<ViolationHead>> {
    let [kind, entity, property, code] = key;
    let head = stmt
        .query_row(params![project_id, day, kind, entity, property, code, max_samples as i64], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .optional()?;
    head.map(|(types, samples)| Ok(ViolationHead { types: serde_json::from_str(&types)?, samples: samples as usize })).transpose()
}

/// Adds each row to its key's stored row (or stores it), with one statement for them all, and
/// writes the samples of the rows that replace them.
pub fn upsert_violations(conn: &Connection, table: Table, project_id: i64, day: &str, rows: &[(ViolationRow, Samples)]) -> anyhow::Result<()> {
    let statements = key_statements(table);
    let mut upsert = conn.prepare_cached(&statements.upsert)?;
    let mut write_samples = conn.prepare_cached(&statements.samples)?;
    for (row, samples) in rows {
        upsert.execute(params![
            project_id,
            day,
            row.kind,
            row.entity,
            row.property,
            row.code,
            row.message,
            row.count,
            row.first_seen_ms,
            row.last_seen_ms,
            serde_json::to_string(&row.types)?,
        ])?;
        if *samples == Samples::Replace && !row.samples.is_empty() {
            write_samples.execute(params![
                project_id,
                day,
                row.kind,
                row.entity,
                row.property,
                row.code,
                serde_json::to_string(&row.samples)?
            ])?;
        }
    }
    Ok(())
}

pub fn list_violations(conn: &Connection, table: Table, project_id: i64, f: &ViolationFilter, limit: usize) -> anyhow::Result<Vec<StoredViolation>> {
    let after = f.after.as_ref();
    let key = |i: usize| after.map(|k| k[i].as_str());
    let mut stmt = conn.prepare_cached(
        &format!("SELECT day, kind, entity, property, code, message, count, first_seen_ms, last_seen_ms, types, coalesce(s.samples, '[]')
         FROM {t} v LEFT JOIN {t}_samples s USING (project_id, day, kind, entity, property, code)
         WHERE project_id = ?1 AND (?2 IS NULL OR day >= ?2) AND (?3 IS NULL OR day <= ?3) AND (?4 IS NULL OR entity = ?4)
           AND (?5 IS NULL OR property = ?5) AND (?6 IS NULL OR code = ?6) AND (?7 IS NULL OR kind = ?7)
           AND (?9 IS NULL OR (day, kind, entity, property, code) > (?9, ?10, ?11, ?12, ?13))
         ORDER BY day, kind, entity, property, code LIMIT ?8", t = table.name()),
    )?;
    let rows = stmt.query_map(
        params![project_id, f.since_day, f.until_day, f.event, f.property, f.code, f.kind, limit as i64, key(0), key(1), key(2), key(3), key(4)],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                [r.get::<_, String>(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
                [r.get::<_, i64>(6)?, r.get(7)?, r.get(8)?],
                [r.get::<_, String>(9)?, r.get(10)?],
            ))
        },
    )?;
    rows.map(|row| {
        let (day, [kind, entity, property, code, message], [count, first_seen_ms, last_seen_ms], [types, samples]) = row?;
        let types = serde_json::from_str(&types)?;
        let samples = serde_json::from_str(&samples)?;
        Ok(StoredViolation { day, row: ViolationRow { kind, entity, property, code, message, count, first_seen_ms, last_seen_ms, types, samples } })
    })
    .collect()
}

pub fn delete_violations(conn: &Connection, table: Table, project_id: i64) -> anyhow::Result<usize> {
    conn.execute(&format!("DELETE FROM {t}_samples WHERE project_id = ?1", t = table.name()), [project_id])?;
    Ok(conn.execute(&format!("DELETE FROM {t} WHERE project_id = ?1", t = table.name()), [project_id])?)
}

pub fn delete_events(conn: &Connection, project_id: i64) -> anyhow::Result<usize> {
    conn.execute("DELETE FROM event_volume WHERE project_id = ?1", [project_id])?;
    Ok(conn.execute("DELETE FROM events WHERE project_id = ?1", [project_id])?)
}
