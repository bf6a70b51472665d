//! Warehouse imports, their runs, and migration jobs on PostgreSQL. Times are milliseconds since
//! the epoch.

use crate::store::events::HOUR_MS;
use crate::store::jobs::{Deleted, ImportRow, Job, Lease, MigrationJob, MigrationPhase, Queued, Run, INTERRUPTED};
use postgres::GenericClient;
use postgres::{Client, Row};

/// Fails the unfinished runs and jobs whose lease expired, or that no process holds.
pub fn fail_interrupted(c: &mut Client, now_ms: i64) -> anyhow::Result<()> {
    let mut tx = c.transaction()?;
    tx.execute(
        "UPDATE warehouse_runs SET status = 'failed', finished_at = $1, error = $2
         WHERE status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < $1)",
        &[&now_ms, &INTERRUPTED],
    )?;
    // Locked, so that a process renewing one of them meanwhile waits and then finds it done.
    let rows = tx.query(
        "SELECT id, state FROM migration_jobs WHERE NOT done AND (lease_until IS NULL OR lease_until < $1) FOR UPDATE",
        &[&now_ms],
    )?;
    for row in rows {
        let (id, state): (String, String) = (row.get(0), row.get(1));
        let mut state = state;
        if let Ok(mut job) = serde_json::from_str::<MigrationJob>(&state) {
            if !job.phase.is_final() {
                job.phase = MigrationPhase::Failed;
                job.errors
                    .push("the server stopped during the migration; start it again (a rerun makes no duplicates)".into());
                job.finished_at = Some(now_ms);
                state = serde_json::to_string(&job)?;
            }
        }
        tx.execute("UPDATE migration_jobs SET state = $2, done = true WHERE id = $1", &[&id, &state])?;
    }
    tx.commit()?;
    Ok(())
}

pub fn any_interrupted(c: &mut Client, now_ms: i64) -> anyhow::Result<bool> {
    Ok(c.query_one(
        "SELECT EXISTS (SELECT 1 FROM warehouse_runs WHERE status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < $1))
             OR EXISTS (SELECT 1 FROM migration_jobs WHERE NOT done AND (lease_until IS NULL OR lease_until < $1))",
        &[&now_ms],
    )?
    .get(0))
}

pub fn claim_run(c: &mut Client, run_id: &str, now_ms: i64, lease: &Lease<'_>) -> anyhow::Result<bool> {
    Ok(c.execute(
        "UPDATE warehouse_runs SET status = 'running', started_at = $2, owner = $3, lease_until = $4
         WHERE id = $1 AND status = 'queued'",
        &[&run_id, &now_ms, &lease.owner, &lease.until_ms],
    )? == 1)
}

pub fn renew_lease(c: &mut Client, job: Job<'_>, lease: &Lease<'_>) -> anyhow::Result<bool> {
    let (sql, id) = match job {
        Job::Run(id) => (
            "UPDATE warehouse_runs SET lease_until = $3 WHERE id = $1 AND owner = $2 AND status IN ('queued', 'running')",
            id,
        ),
        Job::Migration(id) => ("UPDATE migration_jobs SET lease_until = $3 WHERE id = $1 AND owner = $2 AND NOT done", id),
    };
    Ok(c.execute(sql, &[&id, &lease.owner, &lease.until_ms])? == 1)
}

fn import_row(r: &Row) -> ImportRow {
    ImportRow {
        id: r.get(0),
        project_id: r.get(1),
        name: r.get(2),
        kind: r.get(3),
        source: r.get(4),
        mapping: r.get(5),
        created_at: r.get(6),
    }
}

const IMPORT_COLUMNS: &str = "id, project_id, name, kind, source, mapping, created_at";

pub fn insert_import(c: &mut Client, row: &ImportRow) -> anyhow::Result<i64> {
    Ok(c.query_one(
        "INSERT INTO warehouse_imports (project_id, name, kind, source, mapping, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        &[&row.project_id, &row.name, &row.kind, &row.source, &row.mapping, &row.created_at],
    )?
    .get(0))
}

pub fn list_imports(c: &mut Client, project_id: i64) -> anyhow::Result<Vec<ImportRow>> {
    let rows = c.query(
        &format!("SELECT {IMPORT_COLUMNS} FROM warehouse_imports WHERE project_id = $1 ORDER BY id"),
        &[&project_id],
    )?;
    Ok(rows.iter().map(import_row).collect())
}

pub fn get_import(c: &mut Client, project_id: i64, import_id: i64) -> anyhow::Result<Option<ImportRow>> {
    let row = c.query_opt(
        &format!("SELECT {IMPORT_COLUMNS} FROM warehouse_imports WHERE project_id = $1 AND id = $2"),
        &[&project_id, &import_id],
    )?;
    Ok(row.as_ref().map(import_row))
}

/// The run of an import that is queued or running with a lease current at `now_ms`, if any.
fn busy(c: &mut impl GenericClient, import_id: i64, now_ms: i64) -> anyhow::Result<Option<String>> {
    let row = c.query_opt(
        "SELECT id FROM warehouse_runs WHERE import_id = $1 AND status IN ('queued', 'running') AND lease_until >= $2 LIMIT 1",
        &[&import_id, &now_ms],
    )?;
    Ok(row.map(|r| r.get(0)))
}

/// Deletes an import, its run history and with `delete_data` its events, unless a run is busy.
pub fn delete_import(c: &mut Client, project_id: i64, import_id: i64, now_ms: i64, delete_data: bool) -> anyhow::Result<Deleted> {
    let mut tx = c.transaction()?;
    // Locked as `queue_manual_run` locks it, so that no run is queued between the check and the delete.
    let found = tx.query_opt("SELECT id FROM warehouse_imports WHERE project_id = $1 AND id = $2 FOR UPDATE", &[&project_id, &import_id])?;
    if found.is_none() {
        return Ok(Deleted::NotFound);
    }
    if let Some(run) = busy(&mut tx, import_id, now_ms)? {
        return Ok(Deleted::Busy(run));
    }
    let events = if delete_data { delete_import_events(&mut tx, project_id, import_id)? } else { 0 };
    // The runs go with the import (`ON DELETE CASCADE`).
    tx.execute("DELETE FROM warehouse_imports WHERE project_id = $1 AND id = $2", &[&project_id, &import_id])?;
    tx.commit()?;
    Ok(Deleted::Deleted { events })
}

/// As SQLite's: the events whose `$warehouse_import_id` is `import_id`, out of the hourly counts too.
fn delete_import_events(c: &mut impl GenericClient, project_id: i64, import_id: i64) -> anyhow::Result<usize> {
    let gone = c.query(
        "DELETE FROM events WHERE project_id = $1 AND (record::jsonb -> 'properties' ->> '$warehouse_import_id') = $2 RETURNING event, time_ms",
        &[&project_id, &import_id.to_string()],
    )?;
    let mut hours: std::collections::BTreeMap<(String, i64), i64> = std::collections::BTreeMap::new();
    for row in &gone {
        let (event, time_ms): (String, i64) = (row.get(0), row.get(1));
        *hours.entry((event, time_ms.div_euclid(HOUR_MS))).or_default() += 1;
    }
    // In key order, so that two deletes lock shared rows in one order.
    for ((event, hour), n) in hours {
        c.execute("UPDATE event_volume SET count = count - $4 WHERE project_id = $1 AND event = $2 AND hour = $3", &[&project_id, &event, &hour, &n])?;
    }
    c.execute("DELETE FROM event_volume WHERE project_id = $1 AND count <= 0", &[&project_id])?;
    Ok(gone.len())
}

fn run_row(r: &Row) -> Run {
    Run {
        run_id: r.get(0),
        import_id: r.get(1),
        trigger: r.get(2),
        status: r.get(3),
        rows_read: r.get::<_, i64>(4) as u64,
        events_loaded: r.get::<_, i64>(5) as u64,
        rows_rejected: r.get::<_, i64>(6) as u64,
        rejections: serde_json::from_str(r.get(7)).unwrap_or_default(),
        error: r.get(8),
        created_at: r.get(9),
        started_at: r.get(10),
        finished_at: r.get(11),
    }
}

const RUN_COLUMNS: &str =
    "id, import_id, trigger, status, rows_read, events_loaded, rows_rejected, rejections, error, created_at, started_at, finished_at";

/// Queues a manual run as SQLite's does. The import's row is locked first, so that two processes
/// asking at once queue one run, not two.
pub fn queue_manual_run(c: &mut Client, import_id: i64, run_id: &str, per_hour: u32, now_ms: i64, lease: &Lease<'_>) -> anyhow::Result<Queued> {
    const HOUR_MS: i64 = 3_600_000;
    let mut tx = c.transaction()?;
    tx.execute("SELECT id FROM warehouse_imports WHERE id = $1 FOR UPDATE", &[&import_id])?;
    // As on SQLite: a run whose lease expired is failed as interrupted, and does not count.
    tx.execute(
        "UPDATE warehouse_runs SET status = 'failed', finished_at = $2, error = $3
         WHERE import_id = $1 AND status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < $2)",
        &[&import_id, &now_ms, &INTERRUPTED],
    )?;
    if let Some(id) = busy(&mut tx, import_id, now_ms)? {
        return Ok(Queued::Busy(id));
    }
    let row = tx.query_one(
        "SELECT count(*), min(created_at) FROM warehouse_runs WHERE import_id = $1 AND trigger = 'manual' AND created_at > $2",
        &[&import_id, &(now_ms - HOUR_MS)],
    )?;
    let (count, oldest): (i64, Option<i64>) = (row.get(0), row.get(1));
    if count >= i64::from(per_hour) {
        let wait = oldest.map_or(HOUR_MS, |o| o + HOUR_MS - now_ms).max(1);
        return Ok(Queued::Limited(wait));
    }
    tx.execute(
        "INSERT INTO warehouse_runs (id, import_id, trigger, status, created_at, owner, lease_until)
         VALUES ($1, $2, 'manual', 'queued', $3, $4, $5)",
        &[&run_id, &import_id, &now_ms, &lease.owner, &lease.until_ms],
    )?;
    tx.commit()?;
    Ok(Queued::Queued)
}

pub fn update_run(c: &mut Client, run: &Run) -> anyhow::Result<()> {
    c.execute(
        "UPDATE warehouse_runs SET status = $2, rows_read = $3, events_loaded = $4, rows_rejected = $5, rejections = $6,
         error = $7, started_at = $8, finished_at = $9 WHERE id = $1 AND status IN ('queued', 'running')",
        &[
            &run.run_id,
            &run.status,
            &(run.rows_read as i64),
            &(run.events_loaded as i64),
            &(run.rows_rejected as i64),
            &serde_json::to_string(&run.rejections)?,
            &run.error,
            &run.started_at,
            &run.finished_at,
        ],
    )?;
    Ok(())
}

pub fn list_runs(c: &mut Client, import_id: i64, limit: usize) -> anyhow::Result<Vec<Run>> {
    let rows = c.query(
        &format!("SELECT {RUN_COLUMNS} FROM warehouse_runs WHERE import_id = $1 ORDER BY created_at DESC, seq DESC LIMIT $2"),
        &[&import_id, &(limit as i64)],
    )?;
    Ok(rows.iter().map(run_row).collect())
}

pub fn get_run(c: &mut Client, import_id: i64, run_id: &str) -> anyhow::Result<Option<Run>> {
    let row = c.query_opt(
        &format!("SELECT {RUN_COLUMNS} FROM warehouse_runs WHERE import_id = $1 AND id = $2"),
        &[&import_id, &run_id],
    )?;
    Ok(row.as_ref().map(run_row))
}

pub fn save_migration(c: &mut Client, job: &MigrationJob, lease: &Lease<'_>) -> anyhow::Result<()> {
    c.execute(
        "INSERT INTO migration_jobs (id, project_id, state, created_at, owner, lease_until, done) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (id) DO UPDATE SET state = excluded.state, owner = excluded.owner, lease_until = excluded.lease_until,
         done = excluded.done WHERE NOT migration_jobs.done",
        &[
            &job.job_id,
            &job.project_id,
            &serde_json::to_string(job)?,
            &job.created_at,
            &lease.owner,
            &lease.until_ms,
            &job.phase.is_final(),
        ],
    )?;
    Ok(())
}

pub fn get_migration(c: &mut Client, job_id: &str) -> anyhow::Result<Option<MigrationJob>> {
    let row = c.query_opt("SELECT state FROM migration_jobs WHERE id = $1", &[&job_id])?;
    row.map(|r| Ok(serde_json::from_str(r.get(0))?)).transpose()
}
