//! Warehouse imports, their runs, and migration jobs on SQLite. Times are milliseconds since the
//! epoch.

use crate::store::events::HOUR_MS;
use crate::store::jobs::{Deleted, ImportRow, Job, Lease, MigrationJob, MigrationPhase, Queued, Run, INTERRUPTED};
use rusqlite::{params, Connection, OptionalExtension, Row};

/// The tables of warehouse imports and migrations, created with the rest of the schema when the
/// store opens (`tables::create`).
pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS warehouse_imports (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    mapping TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS warehouse_imports_by_project ON warehouse_imports (project_id);
-- The highest import id ever given (one row): a new import gets the next, so that an id is never
-- given twice, even after the import that had it was deleted (its events keep it in
-- `$warehouse_import_id`). `INTEGER PRIMARY KEY` alone reuses the highest id once it is deleted.
CREATE TABLE IF NOT EXISTS warehouse_import_ids (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    last INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS warehouse_runs (
    id TEXT PRIMARY KEY,
    import_id INTEGER NOT NULL REFERENCES warehouse_imports(id) ON DELETE CASCADE,
    trigger TEXT NOT NULL,
    status TEXT NOT NULL,
    rows_read INTEGER NOT NULL DEFAULT 0,
    events_loaded INTEGER NOT NULL DEFAULT 0,
    rows_rejected INTEGER NOT NULL DEFAULT 0,
    rejections TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    finished_at INTEGER,
    owner TEXT,
    lease_until INTEGER
);
CREATE INDEX IF NOT EXISTS warehouse_runs_by_import ON warehouse_runs (import_id, created_at);
CREATE TABLE IF NOT EXISTS migration_jobs (
    id TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    owner TEXT,
    lease_until INTEGER,
    done INTEGER NOT NULL DEFAULT 0
);
";

/// Adds the lease columns (which process runs a job, until when) to the tables of a database
/// created before them; an older server reading the database ignores them.
pub(crate) fn add_lease_columns(conn: &Connection) -> anyhow::Result<()> {
    let has = |table: &str, column: &str| -> rusqlite::Result<bool> {
        conn.query_row("SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", [table, column], |r| r.get::<_, i64>(0)).map(|n| n > 0)
    };
    if !has("warehouse_runs", "owner")? {
        conn.execute_batch("ALTER TABLE warehouse_runs ADD COLUMN owner TEXT; ALTER TABLE warehouse_runs ADD COLUMN lease_until INTEGER;")?;
    }
    if !has("migration_jobs", "owner")? {
        conn.execute_batch(
            "ALTER TABLE migration_jobs ADD COLUMN owner TEXT; ALTER TABLE migration_jobs ADD COLUMN lease_until INTEGER;
             ALTER TABLE migration_jobs ADD COLUMN done INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    Ok(())
}

/// Starts the high-water mark of import ids (`warehouse_import_ids`) in a database that has
/// none: above every import id it holds and every `$warehouse_import_id` its events carry (the
/// ids of imports deleted before the mark existed), read once. True when it was started.
pub(crate) fn start_import_ids(conn: &Connection) -> anyhow::Result<bool> {
    let has: i64 = conn.query_row("SELECT count(*) FROM warehouse_import_ids", [], |r| r.get(0))?;
    if has > 0 {
        return Ok(false);
    }
    let imports: i64 = conn.query_row("SELECT coalesce(max(id), 0) FROM warehouse_imports", [], |r| r.get(0))?;
    let events: i64 = conn.query_row(
        "SELECT coalesce(max(CAST(record ->> '$.properties.\"$warehouse_import_id\"' AS INTEGER)), 0) FROM events",
        [],
        |r| r.get(0),
    )?;
    conn.execute("INSERT INTO warehouse_import_ids (one, last) VALUES (1, ?1)", [imports.max(events)])?;
    Ok(true)
}

/// Fails the unfinished runs and jobs whose lease expired, or that no process holds (the tables
/// exist: the store creates them when it opens).
pub fn fail_interrupted(conn: &Connection, now_ms: i64) -> anyhow::Result<()> {
    // `IMMEDIATE`: the write lock first, so that another process (`admin` opens the same file)
    // cannot renew a lease between this read and this write.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    tx.execute(
        "UPDATE warehouse_runs SET status = 'failed', finished_at = ?1, error = ?2
         WHERE status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < ?1)",
        params![now_ms, INTERRUPTED],
    )?;
    let mut stmt = tx.prepare("SELECT id, state FROM migration_jobs WHERE NOT done AND (lease_until IS NULL OR lease_until < ?1)")?;
    let jobs: Vec<(String, String)> = stmt.query_map([now_ms], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    drop(stmt);
    for (id, mut state) in jobs {
        if let Ok(mut job) = serde_json::from_str::<MigrationJob>(&state) {
            if !job.phase.is_final() {
                job.phase = MigrationPhase::Failed;
                job.errors.push("the server stopped during the migration; start it again (a rerun makes no duplicates)".into());
                job.finished_at = Some(now_ms);
                state = serde_json::to_string(&job)?;
            }
        }
        tx.execute("UPDATE migration_jobs SET state = ?2, done = 1 WHERE id = ?1", params![id, state])?;
    }
    tx.commit()?;
    Ok(())
}

pub fn any_interrupted(conn: &Connection, now_ms: i64) -> anyhow::Result<bool> {
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM warehouse_runs WHERE status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < ?1))
             OR EXISTS (SELECT 1 FROM migration_jobs WHERE NOT done AND (lease_until IS NULL OR lease_until < ?1))",
        [now_ms],
        |r| r.get(0),
    )?)
}

pub fn claim_run(conn: &Connection, run_id: &str, now_ms: i64, lease: &Lease<'_>) -> anyhow::Result<bool> {
    Ok(conn.execute(
        "UPDATE warehouse_runs SET status = 'running', started_at = ?2, owner = ?3, lease_until = ?4 WHERE id = ?1 AND status = 'queued'",
        params![run_id, now_ms, lease.owner, lease.until_ms],
    )? == 1)
}

pub fn renew_lease(conn: &Connection, job: Job<'_>, lease: &Lease<'_>) -> anyhow::Result<bool> {
    let (sql, id) = match job {
        Job::Run(id) => ("UPDATE warehouse_runs SET lease_until = ?3 WHERE id = ?1 AND owner = ?2 AND status IN ('queued', 'running')", id),
        Job::Migration(id) => ("UPDATE migration_jobs SET lease_until = ?3 WHERE id = ?1 AND owner = ?2 AND NOT done", id),
    };
    Ok(conn.execute(sql, params![id, lease.owner, lease.until_ms])? == 1)
}

fn import_row(r: &Row<'_>) -> rusqlite::Result<ImportRow> {
    Ok(ImportRow {
        id: r.get(0)?,
        project_id: r.get(1)?,
        name: r.get(2)?,
        kind: r.get(3)?,
        source: r.get(4)?,
        mapping: r.get(5)?,
        created_at: r.get(6)?,
    })
}

const IMPORT_COLUMNS: &str = "id, project_id, name, kind, source, mapping, created_at";

/// Inserts an import with the next id of `warehouse_import_ids` (never one given before).
pub fn insert_import(conn: &Connection, row: &ImportRow) -> anyhow::Result<i64> {
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    // `max` with the imports' ids too: an older server may have added imports without the mark.
    let id: i64 = tx.query_row(
        "UPDATE warehouse_import_ids SET last = max(last, (SELECT coalesce(max(id), 0) FROM warehouse_imports)) + 1 RETURNING last",
        [],
        |r| r.get(0),
    )?;
    tx.execute(
        "INSERT INTO warehouse_imports (id, project_id, name, kind, source, mapping, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![id, row.project_id, row.name, row.kind, row.source, row.mapping, row.created_at],
    )?;
    tx.commit()?;
    Ok(id)
}

pub fn list_imports(conn: &Connection, project_id: i64) -> anyhow::Result<Vec<ImportRow>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {IMPORT_COLUMNS} FROM warehouse_imports WHERE project_id = ?1 ORDER BY id"))?;
    let rows = stmt.query_map([project_id], import_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn get_import(conn: &Connection, project_id: i64, import_id: i64) -> anyhow::Result<Option<ImportRow>> {
    Ok(conn
        .query_row(
            &format!("SELECT {IMPORT_COLUMNS} FROM warehouse_imports WHERE project_id = ?1 AND id = ?2"),
            params![project_id, import_id],
            import_row,
        )
        .optional()?)
}

/// The run of an import that is queued or running with a lease current at `now_ms`, if any.
fn busy(conn: &Connection, import_id: i64, now_ms: i64) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT id FROM warehouse_runs WHERE import_id = ?1 AND status IN ('queued', 'running') AND lease_until >= ?2 LIMIT 1",
        params![import_id, now_ms],
        |r| r.get(0),
    )
    .optional()
}

/// Deletes an import, its run history and with `delete_data` its events, unless a run is busy.
pub fn delete_import(conn: &Connection, project_id: i64, import_id: i64, now_ms: i64, delete_data: bool) -> anyhow::Result<Deleted> {
    // `IMMEDIATE`: no run can be queued between the check and the delete.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    let exists: i64 = tx.query_row("SELECT count(*) FROM warehouse_imports WHERE project_id = ?1 AND id = ?2", params![project_id, import_id], |r| r.get(0))?;
    if exists == 0 {
        return Ok(Deleted::NotFound);
    }
    if let Some(run) = busy(&tx, import_id, now_ms)? {
        return Ok(Deleted::Busy(run));
    }
    let events = if delete_data { delete_import_events(&tx, project_id, import_id)? } else { 0 };
    tx.execute("DELETE FROM warehouse_runs WHERE import_id = ?1", [import_id])?;
    tx.execute("DELETE FROM warehouse_imports WHERE project_id = ?1 AND id = ?2", params![project_id, import_id])?;
    tx.commit()?;
    Ok(Deleted::Deleted { events })
}

/// Deletes the events of a project whose `$warehouse_import_id` is `import_id` (as text, how an
/// import writes it), taking them out of the hourly counts too; returns how many went.
fn delete_import_events(conn: &Connection, project_id: i64, import_id: i64) -> anyhow::Result<usize> {
    let mut stmt = conn.prepare("DELETE FROM events WHERE project_id = ?1 AND (record ->> '$.properties.\"$warehouse_import_id\"') = ?2 RETURNING event, time_ms")?;
    let gone: Vec<(String, i64)> = stmt.query_map(params![project_id, import_id.to_string()], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    drop(stmt);
    let mut hours: std::collections::BTreeMap<(&str, i64), i64> = std::collections::BTreeMap::new();
    for (event, time_ms) in &gone {
        *hours.entry((event.as_str(), time_ms.div_euclid(HOUR_MS))).or_default() += 1;
    }
    let mut lower = conn.prepare("UPDATE event_volume SET count = count - ?4 WHERE project_id = ?1 AND event = ?2 AND hour = ?3")?;
    for ((event, hour), n) in hours {
        lower.execute(params![project_id, event, hour, n])?;
    }
    conn.execute("DELETE FROM event_volume WHERE project_id = ?1 AND count <= 0", [project_id])?;
    Ok(gone.len())
}

fn run_row(r: &Row<'_>) -> rusqlite::Result<Run> {
    let rejections: String = r.get(7)?;
    Ok(Run {
        run_id: r.get(0)?,
        import_id: r.get(1)?,
        trigger: r.get(2)?,
        status: r.get(3)?,
        rows_read: r.get::<_, i64>(4)? as u64,
        events_loaded: r.get::<_, i64>(5)? as u64,
        rows_rejected: r.get::<_, i64>(6)? as u64,
        rejections: serde_json::from_str(&rejections).unwrap_or_default(),
        error: r.get(8)?,
        created_at: r.get(9)?,
        started_at: r.get(10)?,
        finished_at: r.get(11)?,
    })
}

const RUN_COLUMNS: &str =
    "id, import_id, trigger, status, rows_read, events_loaded, rows_rejected, rejections, error, created_at, started_at, finished_at";

/// Queues a manual run, unless one is queued or running, or `per_hour` manual runs of the import
/// were queued in the hour before `now_ms` (then the wait until the oldest leaves the window).
pub fn queue_manual_run(conn: &Connection, import_id: i64, run_id: &str, per_hour: u32, now_ms: i64, lease: &Lease<'_>) -> anyhow::Result<Queued> {
    const HOUR_MS: i64 = 3_600_000;
    // The caller holds the connection alone (`Store::call`), so no other transaction is open on
    // it. `IMMEDIATE` takes the write lock before the check, so that another process on the same
    // file cannot queue a run between this check and this insert.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    // A run whose lease expired was interrupted (its process stopped): it is failed here, not
    // only at the next start-up, so that it cannot refuse every later sync.
    tx.execute(
        "UPDATE warehouse_runs SET status = 'failed', finished_at = ?2, error = ?3
         WHERE import_id = ?1 AND status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < ?2)",
        params![import_id, now_ms, INTERRUPTED],
    )?;
    if let Some(id) = busy(&tx, import_id, now_ms)? {
        return Ok(Queued::Busy(id));
    }
    let (count, oldest): (i64, Option<i64>) = tx.query_row(
        "SELECT count(*), min(created_at) FROM warehouse_runs WHERE import_id = ?1 AND trigger = 'manual' AND created_at > ?2",
        params![import_id, now_ms - HOUR_MS],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if count >= i64::from(per_hour) {
        let wait = oldest.map_or(HOUR_MS, |o| o + HOUR_MS - now_ms).max(1);
        return Ok(Queued::Limited(wait));
    }
    tx.execute(
        "INSERT INTO warehouse_runs (id, import_id, trigger, status, created_at, owner, lease_until) VALUES (?1, ?2, 'manual', 'queued', ?3, ?4, ?5)",
        params![run_id, import_id, now_ms, lease.owner, lease.until_ms],
    )?;
    tx.commit()?;
    Ok(Queued::Queued)
}

/// Writes the progress or the outcome of a run, unless it is finished already.
pub fn update_run(conn: &Connection, run: &Run) -> anyhow::Result<()> {
    conn.execute(
        "UPDATE warehouse_runs SET status = ?2, rows_read = ?3, events_loaded = ?4, rows_rejected = ?5, rejections = ?6,
         error = ?7, started_at = ?8, finished_at = ?9 WHERE id = ?1 AND status IN ('queued', 'running')",
        params![
            run.run_id,
            run.status,
            run.rows_read as i64,
            run.events_loaded as i64,
            run.rows_rejected as i64,
            serde_json::to_string(&run.rejections)?,
            run.error,
            run.started_at,
            run.finished_at
        ],
    )?;
    Ok(())
}

/// The runs of an import, newest first.
pub fn list_runs(conn: &Connection, import_id: i64, limit: usize) -> anyhow::Result<Vec<Run>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM warehouse_runs WHERE import_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![import_id, limit as i64], run_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn get_run(conn: &Connection, import_id: i64, run_id: &str) -> anyhow::Result<Option<Run>> {
    Ok(conn
        .query_row(&format!("SELECT {RUN_COLUMNS} FROM warehouse_runs WHERE import_id = ?1 AND id = ?2"), params![import_id, run_id], run_row)
        .optional()?)
}

pub fn save_migration(conn: &Connection, job: &MigrationJob, lease: &Lease<'_>) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO migration_jobs (id, project_id, state, created_at, owner, lease_until, done) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (id) DO UPDATE SET state = excluded.state, owner = excluded.owner, lease_until = excluded.lease_until,
         done = excluded.done WHERE NOT migration_jobs.done",
        params![job.job_id, job.project_id, serde_json::to_string(job)?, job.created_at, lease.owner, lease.until_ms, job.phase.is_final()],
    )?;
    Ok(())
}

pub fn get_migration(conn: &Connection, job_id: &str) -> anyhow::Result<Option<MigrationJob>> {
    let json: Option<String> = conn.query_row("SELECT state FROM migration_jobs WHERE id = ?1", [job_id], |r| r.get(0)).optional()?;
    json.map(|j| Ok(serde_json::from_str(&j)?)).transpose()
}
