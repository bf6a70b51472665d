//! Lookup tables (callers name the statements `store::lookup::foo`): the tables of a project, and
//! their rows keyed by the first column, the primary key. Times are milliseconds since the epoch.
//!
//! A table's rows are only ever replaced whole ([`replace_rows`]), in one transaction: the old
//! rows are gone only once the new ones are stored. Each function runs the same-named one of
//! `sqlite/lookup.rs` or `pg/lookup.rs`.

use super::conn::{dispatch, Conn};

/// A lookup table as stored, without its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupTable {
    /// A UUID, in lower case.
    pub id: String,
    pub project_id: i64,
    pub name: String,
    /// The header of the last CSV stored (empty before the first).
    pub columns: Vec<String>,
    pub row_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One row to store: its primary key, and its whole record as a JSON array of strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRow {
    pub key: String,
    pub record: String,
}

/// A stored row: its primary key and its record (a JSON array of strings, the key first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRow {
    pub key: String,
    pub record: String,
}

/// What [`create_table`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    Created(LookupTable),
    /// The project already has a table of that name (its id).
    NameTaken(String),
}

/// Creates an empty table `name` with the id `id` (a new UUID), unless the project has a table of
/// that name. It runs its own transaction, so it takes the connection, not a caller's transaction.
pub fn create_table(conn: &mut Conn<'_>, project_id: i64, id: &str, name: &str, now_ms: i64) -> anyhow::Result<Created> {
    dispatch!(conn, lookup::create_table(project_id, id, name, now_ms))
}

/// The project's tables, by name (byte order), then id.
pub fn list_tables(conn: &Conn<'_>, project_id: i64) -> anyhow::Result<Vec<LookupTable>> {
    dispatch!(conn, lookup::list_tables(project_id))
}

/// One table of the project, if it has a table with that id.
pub fn get_table(conn: &Conn<'_>, project_id: i64, id: &str) -> anyhow::Result<Option<LookupTable>> {
    dispatch!(conn, lookup::get_table(project_id, id))
}

/// Deletes a table with its rows; returns whether the project had it.
pub fn delete_table(conn: &mut Conn<'_>, project_id: i64, id: &str) -> anyhow::Result<bool> {
    dispatch!(conn, lookup::delete_table(project_id, id))
}

/// Replaces every row of a table, and its columns, in one transaction: if any step fails (a
/// duplicate key among `rows`), nothing changes. Returns the table as stored now, or `None` (and
/// changes nothing) when the project has no table with that id.
pub fn replace_rows(
    conn: &mut Conn<'_>,
    project_id: i64,
    id: &str,
    columns: &[String],
    rows: &[NewRow],
    now_ms: i64,
) -> anyhow::Result<Option<LookupTable>> {
    dispatch!(conn, lookup::replace_rows(project_id, id, columns, rows, now_ms))
}

/// Up to `limit` rows of a table in the order of their keys (byte order), starting after the key
/// `after` when given: a keyset page.
pub fn read_rows(conn: &Conn<'_>, table_id: &str, after: Option<&str>, limit: usize) -> anyhow::Result<Vec<StoredRow>> {
    dispatch!(conn, lookup::read_rows(table_id, after, limit))
}

/// A table of the project and a page of its rows (as [`read_rows`]), read from one snapshot, so
/// that the page belongs to the table described even while a replace commits.
pub fn read_page(
    conn: &Conn<'_>,
    project_id: i64,
    id: &str,
    after: Option<&str>,
    limit: usize,
) -> anyhow::Result<(Option<LookupTable>, Vec<StoredRow>)> {
    dispatch!(conn, lookup::read_page(project_id, id, after, limit))
}
