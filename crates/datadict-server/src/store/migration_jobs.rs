//! A project's migration jobs, newest first, a page at a time (callers name the statement
//! `store::migration_jobs::list`); each function runs the same-named one of
//! `sqlite/migration_jobs.rs` or `pg/migration_jobs.rs`. The jobs themselves are saved and read
//! one by one through `store::jobs`.

use super::conn::{dispatch, Conn};
use super::jobs::MigrationJob;

/// Up to `limit` migration jobs of `project_id`, newest first (by creation time, then id),
/// starting after `after` (the creation time and id of the last job of the previous page).
pub fn list(conn: &Conn<'_>, project_id: i64, after: Option<(i64, String)>, limit: usize) -> anyhow::Result<Vec<MigrationJob>> {
    dispatch!(conn, migration_jobs::list(project_id, after, limit))
}
