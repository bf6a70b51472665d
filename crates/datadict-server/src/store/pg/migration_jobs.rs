//! A project's migration jobs, newest first, on PostgreSQL (see `store::migration_jobs`).

use crate::store::jobs::MigrationJob;
use postgres::Client;

pub fn list(c: &mut Client, project_id: i64, after: Option<(i64, String)>, limit: usize) -> anyhow::Result<Vec<MigrationJob>> {
    // Without a cursor, a position after every job: later than any time, then any id.
    let (at, id) = after.unwrap_or((i64::MAX, String::new()));
    let rows = c.query(
        "SELECT state FROM migration_jobs WHERE project_id = $1 AND (created_at < $2 OR (created_at = $2 AND id < $3))
         ORDER BY created_at DESC, id DESC LIMIT $4",
        &[&project_id, &at, &id, &(limit as i64)],
    )?;
    rows.iter().map(|r| Ok(serde_json::from_str(r.get(0))?)).collect()
}
