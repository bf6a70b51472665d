//! Warehouse imports, their runs, and migration jobs (callers name them `store::jobs::foo`).
//! Times are milliseconds since the epoch.

use super::conn::{dispatch, Conn};
use serde::{Deserialize, Serialize};

/// Fails the runs and jobs left unfinished by a process that stopped: those no process holds a
/// lease on (see [`Lease`]), or whose lease expired before `now_ms`. A job another live process
/// runs keeps its lease renewed, and is left alone.
pub fn fail_interrupted(conn: &mut Conn<'_>, now_ms: i64) -> anyhow::Result<()> {
    dispatch!(conn, jobs::fail_interrupted(now_ms))
}

/// Whether some run or job is unfinished with a lease that expired before `now_ms` (or none):
/// what [`fail_interrupted`] would fail. A read, so that the routes that show jobs can ask it
/// on every request and take the write lock only when there is something to fail.
pub fn any_interrupted(conn: &Conn<'_>, now_ms: i64) -> anyhow::Result<bool> {
    dispatch!(conn, jobs::any_interrupted(now_ms))
}

/// Claims a queued run for the lease's owner and marks it running; `false` when it is no longer
/// queued (another process, or another task, claimed it first). One statement
/// (`UPDATE ... WHERE status = 'queued'`), so two claimers cannot both win.
pub fn claim_run(conn: &Conn<'_>, run_id: &str, now_ms: i64, lease: &Lease<'_>) -> anyhow::Result<bool> {
    dispatch!(conn, jobs::claim_run(run_id, now_ms, lease))
}

/// Extends the lease of an unfinished job its owner runs; `false` when the job is finished or no
/// longer the owner's (a process that found the lease expired failed it).
pub fn renew_lease(conn: &Conn<'_>, job: Job<'_>, lease: &Lease<'_>) -> anyhow::Result<bool> {
    dispatch!(conn, jobs::renew_lease(job, lease))
}

pub fn insert_import(conn: &Conn<'_>, row: &ImportRow) -> anyhow::Result<i64> {
    dispatch!(conn, jobs::insert_import(row))
}

pub fn list_imports(conn: &Conn<'_>, project_id: i64) -> anyhow::Result<Vec<ImportRow>> {
    dispatch!(conn, jobs::list_imports(project_id))
}

pub fn get_import(conn: &Conn<'_>, project_id: i64, import_id: i64) -> anyhow::Result<Option<ImportRow>> {
    dispatch!(conn, jobs::get_import(project_id, import_id))
}

/// Deletes an import and its run history, and with `delete_data` the events it loaded (those
/// whose `$warehouse_import_id` is its id), in one transaction; refused while a run of the import
/// holds a lease that has not expired at `now_ms` (it would go on loading for an import that no
/// longer exists).
pub fn delete_import(conn: &mut Conn<'_>, project_id: i64, import_id: i64, now_ms: i64, delete_data: bool) -> anyhow::Result<Deleted> {
    dispatch!(conn, jobs::delete_import(project_id, import_id, now_ms, delete_data))
}

/// What asking to delete an import gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deleted {
    /// Deleted, with this many of its events.
    Deleted { events: usize },
    /// The project has no such import.
    NotFound,
    /// A run of the import is queued or running (its id), its lease current.
    Busy(String),
}

/// The error of a run that was queued or running when its process stopped (its lease expired).
pub const INTERRUPTED: &str = "the server stopped during the run; sync again";

/// Queues a manual run, unless one is queued or running, or `per_hour` manual runs of the import
/// were queued in the hour before `now_ms` (then the wait until the oldest leaves the window).
/// The queued run is held by `lease`, so that no other process fails it before it is claimed.
/// A queued or running run whose lease expired before `now_ms` (its process stopped, and no
/// start-up since has failed it) is failed first, as interrupted, and does not count as running.
pub fn queue_manual_run(conn: &mut Conn<'_>, import_id: i64, run_id: &str, per_hour: u32, now_ms: i64, lease: &Lease<'_>) -> anyhow::Result<Queued> {
    dispatch!(conn, jobs::queue_manual_run(import_id, run_id, per_hour, now_ms, lease))
}

/// Writes the progress or the outcome of a run, unless it is finished already (failed by a
/// process that found its lease expired): a finished run is never changed again.
pub fn update_run(conn: &Conn<'_>, run: &Run) -> anyhow::Result<()> {
    dispatch!(conn, jobs::update_run(run))
}

/// The runs of an import, newest first.
pub fn list_runs(conn: &Conn<'_>, import_id: i64, limit: usize) -> anyhow::Result<Vec<Run>> {
    dispatch!(conn, jobs::list_runs(import_id, limit))
}

pub fn get_run(conn: &Conn<'_>, import_id: i64, run_id: &str) -> anyhow::Result<Option<Run>> {
    dispatch!(conn, jobs::get_run(import_id, run_id))
}

/// Creates or updates a migration job held by `lease`, unless it is finished already (as for
/// [`update_run`]).
pub fn save_migration(conn: &Conn<'_>, job: &MigrationJob, lease: &Lease<'_>) -> anyhow::Result<()> {
    dispatch!(conn, jobs::save_migration(job, lease))
}

pub fn get_migration(conn: &Conn<'_>, job_id: &str) -> anyhow::Result<Option<MigrationJob>> {
    dispatch!(conn, jobs::get_migration(job_id))
}

/// A process's claim on a job: the process's id (`Store::instance_id`) and the time, in
/// milliseconds since the epoch, until which the claim holds unless renewed.
#[derive(Debug, Clone, Copy)]
pub struct Lease<'a> {
    pub owner: &'a str,
    pub until_ms: i64,
}

/// A job a process may hold a lease on.
#[derive(Debug, Clone, Copy)]
pub enum Job<'a> {
    /// A warehouse run, by its id.
    Run(&'a str),
    /// A migration job, by its id.
    Migration(&'a str),
}

/// A stored warehouse import; `source` and `mapping` are kept as JSON.
#[derive(Debug, Clone)]
pub struct ImportRow {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    pub kind: String,
    pub source: String,
    pub mapping: String,
    pub created_at: i64,
}

/// One rejected row of a run: its 1-based row number in the source, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub row: u64,
    pub reason: String,
}

/// A sync run of a warehouse import, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub run_id: String,
    pub import_id: i64,
    /// `manual` (the manual-sync endpoint).
    pub trigger: String,
    /// `queued`, `running`, `succeeded` or `failed`.
    pub status: String,
    pub rows_read: u64,
    pub events_loaded: u64,
    pub rows_rejected: u64,
    /// The first rejections (at most [`MAX_REJECTIONS`]); `rows_rejected` counts them all.
    pub rejections: Vec<Rejection>,
    /// Why the run failed as a whole (the source could not be read).
    pub error: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// How many rejections a run keeps with their reasons.
pub const MAX_REJECTIONS: usize = 100;

/// What asking for a manual run gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Queued {
    Queued,
    /// The hourly limit is reached: wait this many milliseconds.
    Limited(i64),
    /// A run of the import is queued or running already (its id).
    Busy(String),
}

/// The phase of a migration job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationPhase {
    Queued,
    Exporting,
    Counting,
    Loading,
    Succeeded,
    Failed,
}

impl MigrationPhase {
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

/// Counts of one kind of record in a migration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Every record of this kind in the export: `counted = loaded + rejected`.
    pub counted: u64,
    /// Records stored in the project (in a dry run, those a real run would store; events the
    /// dictionary drops count here, as `/import` counts them).
    pub loaded: u64,
    /// Records the transform or the import's rules rejected, once each.
    pub rejected: u64,
}

/// A migration job as `GET /migrate/jobs/{id}` shows it. It holds no credential: the key, the
/// secret and the token live only in the memory of the running task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationJob {
    pub job_id: String,
    pub source_tool: String,
    pub project_id: i64,
    pub phase: MigrationPhase,
    pub dry_run: bool,
    pub region: Option<String>,
    pub start_date: String,
    pub end_date: String,
    pub events: Counts,
    pub profiles: Counts,
    /// What went wrong: the first problems (at most [`MAX_REJECTIONS`]), and why a failed job failed.
    pub errors: Vec<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}
