//! Lookup tables on PostgreSQL, with SQLite's semantics: a name is unique per project, a replace
//! swaps every row in one transaction, pages follow the keys in byte order, and a deleted table
//! takes its rows with it. Times are milliseconds since the epoch.
//!
//! A key is stored as `bytea` (migration 2): a CSV field may hold a zero byte, which a PostgreSQL
//! `text` refuses and SQLite keeps, and `bytea` compares bytewise, which is SQLite's order.

use crate::store::lookup::{Created, LookupTable, NewRow, StoredRow};
use anyhow::Context;
use postgres::error::SqlState;
use postgres::{Client, GenericClient, IsolationLevel, Row};
use std::collections::HashSet;

const COLUMNS: &str = "id, project_id, name, columns, row_count, created_at, updated_at";

fn table_row(r: &Row) -> anyhow::Result<LookupTable> {
    let columns: &str = r.get(3);
    Ok(LookupTable {
        id: r.get(0),
        project_id: r.get(1),
        name: r.get(2),
        columns: serde_json::from_str(columns).context("the stored columns of a lookup table are not a JSON array of names")?,
        row_count: r.get(4),
        created_at: r.get(5),
        updated_at: r.get(6),
    })
}

fn stored_row(r: &Row) -> anyhow::Result<StoredRow> {
    let key: Vec<u8> = r.get(0);
    Ok(StoredRow {
        key: String::from_utf8(key).context("a stored lookup key is not UTF-8")?,
        record: r.get(1),
    })
}

/// Creates an empty table `name` with the id `id` (a new UUID), unless the project has a table of
/// that name. The insert itself tells a taken name (`ON CONFLICT DO NOTHING`), so two requests
/// creating the same name at once get one table and one `NameTaken`.
pub fn create_table(c: &mut Client, project_id: i64, id: &str, name: &str, now_ms: i64) -> anyhow::Result<Created> {
    let mut tx = c.transaction()?;
    let created = tx.query_opt(
        &format!(
            "INSERT INTO lookup_tables (id, project_id, name, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
             ON CONFLICT (project_id, name) DO NOTHING RETURNING {COLUMNS}"
        ),
        &[&id, &project_id, &name, &now_ms],
    )?;
    let out = match created {
        Some(row) => Created::Created(table_row(&row)?),
        None => {
            // The conflicting row is visible to this statement, and its id never changes.
            let taken = tx
                .query_one("SELECT id FROM lookup_tables WHERE project_id = $1 AND name = $2", &[&project_id, &name])
                .context("a lookup table name is taken, but its table cannot be read")?;
            Created::NameTaken(taken.get(0))
        }
    };
    tx.commit()?;
    Ok(out)
}

/// The project's tables, by name (byte order), then id.
pub fn list_tables(c: &mut Client, project_id: i64) -> anyhow::Result<Vec<LookupTable>> {
    let rows = c.query(&format!("SELECT {COLUMNS} FROM lookup_tables WHERE project_id = $1 ORDER BY name, id"), &[&project_id])?;
    rows.iter().map(table_row).collect()
}

/// One table of the project, if it has a table with that id.
pub fn get_table(c: &mut Client, project_id: i64, id: &str) -> anyhow::Result<Option<LookupTable>> {
    get_table_in(c, project_id, id)
}

/// [`get_table`] on a client or inside a transaction.
fn get_table_in(c: &mut impl GenericClient, project_id: i64, id: &str) -> anyhow::Result<Option<LookupTable>> {
    let row = c.query_opt(&format!("SELECT {COLUMNS} FROM lookup_tables WHERE project_id = $1 AND id = $2"), &[&project_id, &id])?;
    row.as_ref().map(table_row).transpose()
}

/// Deletes a table with its rows (`ON DELETE CASCADE`, always enforced here); returns whether the
/// project had it.
pub fn delete_table(c: &mut Client, project_id: i64, id: &str) -> anyhow::Result<bool> {
    Ok(c.execute("DELETE FROM lookup_tables WHERE id = $1 AND project_id = $2", &[&id, &project_id])? > 0)
}

/// Replaces every row of a table, and its columns, in one transaction: if any step fails, nothing
/// changes. The update comes first and locks the table's row, so concurrent replaces of one table
/// run one after the other, as SQLite's single writer runs them. Returns the table as stored now,
/// or `None` when the project has no table with that id.
pub fn replace_rows(
    c: &mut Client,
    project_id: i64,
    id: &str,
    columns: &[String],
    rows: &[NewRow],
    now_ms: i64,
) -> anyhow::Result<Option<LookupTable>> {
    let mut tx = c.transaction()?;
    let updated = tx.query_opt(
        &format!(
            "UPDATE lookup_tables SET columns = $3, row_count = $4, updated_at = $5 WHERE id = $1 AND project_id = $2
             RETURNING {COLUMNS}"
        ),
        &[&id, &project_id, &serde_json::to_string(columns)?, &(rows.len() as i64), &now_ms],
    )?;
    let Some(table) = updated else { return Ok(None) };
    tx.execute("DELETE FROM lookup_rows WHERE table_id = $1", &[&id])?;
    // One statement per chunk of rows rather than one per row: a table may hold many thousands.
    for chunk in rows.chunks(10_000) {
        let keys: Vec<&[u8]> = chunk.iter().map(|r| r.key.as_bytes()).collect();
        let records: Vec<&str> = chunk.iter().map(|r| r.record.as_str()).collect();
        tx.execute(
            "INSERT INTO lookup_rows (table_id, key, record) SELECT $1, k, r FROM unnest($2::bytea[], $3::text[]) AS t(k, r)",
            &[&id, &keys, &records],
        )
        .map_err(|e| match (e.code() == Some(&SqlState::UNIQUE_VIOLATION), first_duplicate(rows)) {
            (true, Some(key)) => anyhow::Error::new(e).context(format!("cannot store the row of key `{key}`")),
            _ => anyhow::Error::new(e).context("cannot store the rows of a lookup table"),
        })?;
    }
    let table = table_row(&table)?;
    tx.commit()?;
    Ok(Some(table))
}

/// The first key that `rows` holds twice, to name it as SQLite's row-by-row insert does.
fn first_duplicate(rows: &[NewRow]) -> Option<&str> {
    let mut seen = HashSet::new();
    rows.iter().map(|r| r.key.as_str()).find(|k| !seen.insert(*k))
}

/// Up to `limit` rows of a table in the order of their keys (byte order), starting after the key
/// `after` when given: a keyset page.
pub fn read_rows(c: &mut Client, table_id: &str, after: Option<&str>, limit: usize) -> anyhow::Result<Vec<StoredRow>> {
    read_rows_in(c, table_id, after, limit)
}

/// [`read_rows`] on a client or inside a transaction.
fn read_rows_in(c: &mut impl GenericClient, table_id: &str, after: Option<&str>, limit: usize) -> anyhow::Result<Vec<StoredRow>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let after = after.map(str::as_bytes);
    let rows = c.query(
        "SELECT key, record FROM lookup_rows WHERE table_id = $1 AND ($2::bytea IS NULL OR key > $2) ORDER BY key LIMIT $3",
        &[&table_id, &after, &limit],
    )?;
    rows.iter().map(stored_row).collect()
}

/// A table and a page of its rows (as [`read_rows`]), read in one repeatable-read snapshot, so
/// that the page belongs to the table described even while a replace commits.
pub fn read_page(
    c: &mut Client,
    project_id: i64,
    id: &str,
    after: Option<&str>,
    limit: usize,
) -> anyhow::Result<(Option<LookupTable>, Vec<StoredRow>)> {
    let mut tx = c.build_transaction().isolation_level(IsolationLevel::RepeatableRead).read_only(true).start()?;
    let table = get_table_in(&mut tx, project_id, id)?;
    let rows = read_rows_in(&mut tx, id, after, limit)?;
    tx.commit()?;
    Ok((table, rows))
}
