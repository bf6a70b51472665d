//! Lookup tables on SQLite: the tables of a project, and their rows keyed by the first column,
//! the primary key. Times are milliseconds since the epoch.
//!
//! A table's rows are only ever replaced whole ([`replace_rows`]), in one transaction: the old
//! rows are gone only once the new ones are stored.

use crate::store::lookup::{Created, LookupTable, NewRow, StoredRow};
use anyhow::Context;
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction, TransactionBehavior};

/// The tables of lookup tables, created with the rest of the schema when the store opens
/// (`tables::create`); a database written before them gains them then, since every
/// statement here is `IF NOT EXISTS`.
///
/// `columns` is the header of the last CSV stored, as a JSON array of names, and `row_count` the
/// number of its rows, kept here so that listing tables never counts rows. A row keeps its whole
/// record as a JSON array of strings (the primary key first, as in the CSV), beside the key it is
/// found and ordered by.
pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS lookup_tables (
    id TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    columns TEXT NOT NULL DEFAULT '[]',
    row_count INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (project_id, name)
);
CREATE TABLE IF NOT EXISTS lookup_rows (
    table_id TEXT NOT NULL REFERENCES lookup_tables(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (table_id, key)
) WITHOUT ROWID;
";

const COLUMNS: &str = "id, project_id, name, columns, row_count, created_at, updated_at";

fn table_row(r: &Row<'_>) -> rusqlite::Result<LookupTable> {
    let columns: String = r.get(3)?;
    let columns = serde_json::from_str(&columns)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, Box::new(e)))?;
    Ok(LookupTable {
        id: r.get(0)?,
        project_id: r.get(1)?,
        name: r.get(2)?,
        columns,
        row_count: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

/// Creates an empty table `name` with the id `id` (a new UUID), unless the project has a table of
/// that name.
pub fn create_table(conn: &Connection, project_id: i64, id: &str, name: &str, now_ms: i64) -> anyhow::Result<Created> {
    let tx = write_transaction(conn)?;
    let taken: Option<String> = tx
        .query_row("SELECT id FROM lookup_tables WHERE project_id = ?1 AND name = ?2", params![project_id, name], |r| r.get(0))
        .optional()?;
    if let Some(id) = taken {
        return Ok(Created::NameTaken(id));
    }
    tx.execute(
        "INSERT INTO lookup_tables (id, project_id, name, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
        params![id, project_id, name, now_ms],
    )?;
    let table = get_table(&tx, project_id, id)?.context("a lookup table just created cannot be read")?;
    tx.commit()?;
    Ok(Created::Created(table))
}

/// The project's tables, by name.
pub fn list_tables(conn: &Connection, project_id: i64) -> anyhow::Result<Vec<LookupTable>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM lookup_tables WHERE project_id = ?1 ORDER BY name, id"))?;
    let rows = stmt.query_map([project_id], table_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One table of the project, if it has a table with that id.
pub fn get_table(conn: &Connection, project_id: i64, id: &str) -> anyhow::Result<Option<LookupTable>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM lookup_tables WHERE project_id = ?1 AND id = ?2"))?;
    Ok(stmt.query_row(params![project_id, id], table_row).optional()?)
}

/// Deletes a table with its rows; returns whether the project had it.
pub fn delete_table(conn: &Connection, project_id: i64, id: &str) -> anyhow::Result<bool> {
    let tx = write_transaction(conn)?;
    // The rows first, explicitly: the cascade would do it too, but only with foreign-key
    // enforcement on, which the connection's user decides.
    tx.execute(
        "DELETE FROM lookup_rows WHERE table_id = ?1 AND EXISTS (SELECT 1 FROM lookup_tables WHERE id = ?1 AND project_id = ?2)",
        params![id, project_id],
    )?;
    let deleted = tx.execute("DELETE FROM lookup_tables WHERE id = ?1 AND project_id = ?2", params![id, project_id])? > 0;
    tx.commit()?;
    Ok(deleted)
}

/// Replaces every row of a table, and its columns, in one transaction: if any step fails (a
/// duplicate key among `rows`, a full disk), nothing changes. Returns the table as stored now, or
/// `None` (and changes nothing) when the project has no table with that id.
pub fn replace_rows(
    conn: &Connection,
    project_id: i64,
    id: &str,
    columns: &[String],
    rows: &[NewRow],
    now_ms: i64,
) -> anyhow::Result<Option<LookupTable>> {
    let tx = write_transaction(conn)?;
    let updated = tx.execute(
        "UPDATE lookup_tables SET columns = ?3, row_count = ?4, updated_at = ?5 WHERE id = ?1 AND project_id = ?2",
        params![id, project_id, serde_json::to_string(columns)?, rows.len() as i64, now_ms],
    )?;
    if updated == 0 {
        return Ok(None);
    }
    tx.execute("DELETE FROM lookup_rows WHERE table_id = ?1", [id])?;
    {
        let mut insert = tx.prepare_cached("INSERT INTO lookup_rows (table_id, key, record) VALUES (?1, ?2, ?3)")?;
        for row in rows {
            insert.execute(params![id, row.key, row.record]).with_context(|| format!("cannot store the row of key `{}`", row.key))?;
        }
    }
    let table = get_table(&tx, project_id, id)?.context("a lookup table just replaced cannot be read")?;
    tx.commit()?;
    Ok(Some(table))
}

/// Up to `limit` rows of a table in the order of their keys (byte order), starting after the key
/// `after` when given: a keyset page.
pub fn read_rows(conn: &Connection, table_id: &str, after: Option<&str>, limit: usize) -> anyhow::Result<Vec<StoredRow>> {
    let map = |r: &Row<'_>| Ok(StoredRow { key: r.get(0)?, record: r.get(1)? });
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = match after {
        Some(after) => {
            let mut stmt = conn.prepare_cached(
                "SELECT key, record FROM lookup_rows WHERE table_id = ?1 AND key > ?2 ORDER BY key LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![table_id, after, limit], map)?;
            rows.collect::<Result<_, _>>()?
        }
        None => {
            let mut stmt = conn.prepare_cached("SELECT key, record FROM lookup_rows WHERE table_id = ?1 ORDER BY key LIMIT ?2")?;
            let rows = stmt.query_map(params![table_id, limit], map)?;
            rows.collect::<Result<_, _>>()?
        }
    };
    Ok(rows)
}

/// A table and a page of its rows (as [`read_rows`]), read in one transaction so that the page
/// belongs to the table described even while a replace commits.
pub fn read_page(
    conn: &Connection,
    project_id: i64,
    id: &str,
    after: Option<&str>,
    limit: usize,
) -> anyhow::Result<(Option<LookupTable>, Vec<StoredRow>)> {
    let tx = conn.unchecked_transaction()?;
    let table = get_table(&tx, project_id, id)?;
    let rows = read_rows(&tx, id, after, limit)?;
    Ok((table, rows))
}

/// A transaction that takes the write lock when it begins. A deferred one that reads first and
/// then writes fails at once (`SQLITE_BUSY_SNAPSHOT`, without waiting) when another connection has
/// written or restarted the WAL since its read; this one waits for the lock instead.
///
/// The caller holds the connection alone (`Store::call`) with no transaction open on it, which is
/// what rusqlite's checked `transaction` would enforce.
fn write_transaction(conn: &Connection) -> rusqlite::Result<Transaction<'_>> {
    Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
}
