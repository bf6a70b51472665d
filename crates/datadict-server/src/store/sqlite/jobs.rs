//! Warehouse imports, their runs, and migration jobs on SQLite. Times are milliseconds since the
//! epoch.

use crate::store::jobs::{ImportRow, MigrationJob, MigrationPhase, Queued, Run};
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
    finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS warehouse_runs_by_import ON warehouse_runs (import_id, created_at);
CREATE TABLE IF NOT EXISTS migration_jobs (
    id TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
";

/// Fails the runs and jobs that a stopped process left unfinished (the tables exist: the store
/// creates them when it opens).
pub fn fail_interrupted(conn: &Connection, now_ms: i64) -> anyhow::Result<()> {
    conn.execute(
        "UPDATE warehouse_runs SET status = 'failed', finished_at = ?1,
         error = 'the server stopped during the run; sync again'
         WHERE status IN ('queued', 'running')",
        [now_ms],
    )?;
    let mut stmt = conn.prepare("SELECT id, state FROM migration_jobs")?;
    let jobs: Vec<(String, String)> = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    drop(stmt);
    for (_id, json) in jobs {
        let Ok(mut job) = serde_json::from_str::<MigrationJob>(&json) else { continue };
        if !job.phase.is_final() {
            job.phase = MigrationPhase::Failed;
            job.errors.push("the server stopped during the migration; start it again (a rerun makes no duplicates)".into());
            job.finished_at = Some(now_ms);
            save_migration(conn, &job)?;
        }
    }
    Ok(())
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

pub fn insert_import(conn: &Connection, row: &ImportRow) -> anyhow::Result<i64> {
    conn.execute(
        "INSERT INTO warehouse_imports (project_id, name, kind, source, mapping, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![row.project_id, row.name, row.kind, row.source, row.mapping, row.created_at],
    )?;
    Ok(conn.last_insert_rowid())
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

/// Deletes an import and its run history; returns whether it existed.
pub fn delete_import(conn: &Connection, project_id: i64, import_id: i64) -> anyhow::Result<bool> {
    conn.execute("DELETE FROM warehouse_runs WHERE import_id = (SELECT id FROM warehouse_imports WHERE project_id = ?1 AND id = ?2)", params![project_id, import_id])?;
    Ok(conn.execute("DELETE FROM warehouse_imports WHERE project_id = ?1 AND id = ?2", params![project_id, import_id])? > 0)
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
pub fn queue_manual_run(conn: &Connection, import_id: i64, run_id: &str, per_hour: u32, now_ms: i64) -> anyhow::Result<Queued> {
    const HOUR_MS: i64 = 3_600_000;
    // The caller holds the connection alone (`Store::call`), so no other transaction is open on it.
    let tx = conn.unchecked_transaction()?;
    let busy: Option<String> = tx
        .query_row("SELECT id FROM warehouse_runs WHERE import_id = ?1 AND status IN ('queued', 'running') LIMIT 1", [import_id], |r| r.get(0))
        .optional()?;
    if let Some(id) = busy {
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
        "INSERT INTO warehouse_runs (id, import_id, trigger, status, created_at) VALUES (?1, ?2, 'manual', 'queued', ?3)",
        params![run_id, import_id, now_ms],
    )?;
    tx.commit()?;
    Ok(Queued::Queued)
}

/// Writes the progress or the outcome of a run.
pub fn update_run(conn: &Connection, run: &Run) -> anyhow::Result<()> {
    conn.execute(
        "UPDATE warehouse_runs SET status = ?2, rows_read = ?3, events_loaded = ?4, rows_rejected = ?5, rejections = ?6,
         error = ?7, started_at = ?8, finished_at = ?9 WHERE id = ?1",
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

pub fn save_migration(conn: &Connection, job: &MigrationJob) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO migration_jobs (id, project_id, state, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (id) DO UPDATE SET state = excluded.state",
        params![job.job_id, job.project_id, serde_json::to_string(job)?, job.created_at],
    )?;
    Ok(())
}

pub fn get_migration(conn: &Connection, job_id: &str) -> anyhow::Result<Option<MigrationJob>> {
    let json: Option<String> = conn.query_row("SELECT state FROM migration_jobs WHERE id = ?1", [job_id], |r| r.get(0)).optional()?;
    json.map(|j| Ok(serde_json::from_str(&j)?)).transpose()
}
