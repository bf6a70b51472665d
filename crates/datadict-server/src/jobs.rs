//! What warehouse imports and migrations share: their settings, the leases by which a process
//! holds the jobs it runs, and the start-up step that fails the jobs a stopped process left
//! unfinished.
//!
//! Several server processes may share one database. Each job is held by the process that runs it
//! (`Store::instance_id`) until a time in the database, its lease, which that process renews
//! while the job runs ([`hold`]). A process starting fails only the unfinished jobs whose lease
//! expired, that is whose process stopped, not those another live process runs.

use crate::store::jobs::{self as store_jobs, Job, Lease};
use crate::AppState;
use std::time::Duration;

/// How long a lease holds without renewal. A process that stopped is known as stopped this long
/// after its last renewal; the clocks of the processes sharing a database must agree to well
/// under this.
pub const LEASE: Duration = Duration::from_secs(60);
/// How often a running job's lease is renewed: a few renewals may fail (a busy database) before
/// the lease expires.
const RENEW_EVERY: Duration = Duration::from_secs(15);

/// FACTS.md: API-triggered syncs are limited to 5 per hour per import.
pub const DEFAULT_MANUAL_SYNCS_PER_HOUR: u32 = 5;
/// Spec §8: the free migration service takes sources of under 15 million events.
pub const DEFAULT_MAX_MIGRATION_EVENTS: u64 = 15_000_000;
/// The source tool's export host (FACTS.md: `GET <source host>/api/2/export`).
pub const AMPLITUDE_URL: &str = "https://amplitude.com";
/// The source tool's EU export host (FACTS.md: EU data lives on a separate host).
pub const AMPLITUDE_EU_URL: &str = "https://analytics.eu.amplitude.com";

/// Settings of warehouse imports and migrations.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// Manual syncs per hour per import; more are answered 429.
    pub manual_syncs_per_hour: u32,
    /// A migration's range must hold fewer events than this (spec §8: "under"); one that holds
    /// this many or more is refused before anything is loaded.
    pub max_migration_events: u64,
    /// Base URL of the source tool's export API (default region).
    pub amplitude_url: String,
    /// Base URL of the source tool's export API for `REGION: "EU"`.
    pub amplitude_eu_url: String,
    /// When set, file sources of warehouse imports must lie inside this folder; otherwise any
    /// project admin could read any file the server can. The library default is unset (tests
    /// and embedders choose); the `datadict-server` binary always sets it, by default to
    /// `<data-dir>/warehouse-files`.
    pub warehouse_file_root: Option<std::path::PathBuf>,
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self {
            manual_syncs_per_hour: DEFAULT_MANUAL_SYNCS_PER_HOUR,
            max_migration_events: DEFAULT_MAX_MIGRATION_EVENTS,
            amplitude_url: AMPLITUDE_URL.to_owned(),
            amplitude_eu_url: AMPLITUDE_EU_URL.to_owned(),
            warehouse_file_root: None,
        }
    }
}

impl JobsConfig {
    /// The defaults, overridden by `DATADICT_MANUAL_SYNCS_PER_HOUR`, `DATADICT_MAX_MIGRATION_EVENTS`,
    /// `DATADICT_AMPLITUDE_URL`, `DATADICT_AMPLITUDE_EU_URL` and `DATADICT_WAREHOUSE_FILE_ROOT` when
    /// they are set.
    pub fn from_env() -> Self {
        let mut c = Self::default();
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(n) = var("DATADICT_MANUAL_SYNCS_PER_HOUR").and_then(|v| v.trim().parse().ok()) {
            c.manual_syncs_per_hour = n;
        }
        if let Some(n) = var("DATADICT_MAX_MIGRATION_EVENTS").and_then(|v| v.trim().parse().ok()) {
            c.max_migration_events = n;
        }
        if let Some(u) = var("DATADICT_AMPLITUDE_URL") {
            c.amplitude_url = u.trim().trim_end_matches('/').to_owned();
        }
        if let Some(u) = var("DATADICT_AMPLITUDE_EU_URL") {
            c.amplitude_eu_url = u.trim().trim_end_matches('/').to_owned();
        }
        if let Some(root) = var("DATADICT_WAREHOUSE_FILE_ROOT") {
            c.warehouse_file_root = Some(root.trim().into());
        }
        c
    }
}

/// The start-up step of warehouse imports and the migration service: marks runs that were queued
/// or running when a previous process stopped as failed (their lease expired), so that none stays
/// "running" forever. Their tables are created with the rest of the schema when the store opens;
/// this step is [`crate::app`]'s, not the store's, because the admin commands open the same
/// database while a server runs and have no business with its jobs. A failure is logged rather
/// than fatal, so that the rest of the API is still served.
pub fn init(state: &AppState) {
    if let Err(e) = state.store.call_sync(|conn| store_jobs::fail_interrupted(conn, crate::ingest::now_ms())) {
        tracing::error!("cannot mark the interrupted warehouse runs and migrations as failed: {e:#}");
    }
}

/// Fails the runs and jobs whose lease ran out, as [`init`] does at start: a process that
/// stopped (a crash, `kill -9`) within a lease left them unfinished, and no server may start
/// again for a long time. The routes that show runs and jobs call this first, so that none shows
/// `queued` or `running` forever; it takes the write lock only when a read finds one to fail.
pub async fn settle(state: &AppState) -> Result<(), crate::error::ApiError> {
    let now = crate::ingest::now_ms();
    if state.store.read(move |conn| store_jobs::any_interrupted(conn, now)).await? {
        state.store.call(move |conn| store_jobs::fail_interrupted(conn, now)).await?;
    }
    Ok(())
}

/// A lease of this process (`state`'s store) from now on.
pub fn lease(state: &AppState) -> Lease<'_> {
    Lease { owner: state.store.instance_id(), until_ms: crate::ingest::now_ms() + LEASE.as_millis() as i64 }
}

/// Renews this process's lease on `job` every `RENEW_EVERY` until the returned guard is dropped
/// (the job's task ends, however it ends).
pub fn hold(state: &AppState, job: OwnedJob) -> Holding {
    let state = state.clone();
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(RENEW_EVERY);
        // The first tick is at once, and the job was just leased.
        tick.tick().await;
        loop {
            tick.tick().await;
            let (s, j) = (state.clone(), job.clone());
            let renewed = state.store.call(move |conn| store_jobs::renew_lease(conn, j.as_job(), &lease(&s))).await;
            match renewed {
                Ok(true) => {}
                // Finished, or failed by a process that found the lease expired: nothing to hold.
                Ok(false) => return,
                Err(e) => tracing::warn!("cannot renew the lease of {job:?}: {e:#}"),
            }
        }
    });
    Holding(task)
}

/// A job by an owned id, for [`hold`]'s task.
#[derive(Debug, Clone)]
pub enum OwnedJob {
    Run(String),
    Migration(String),
}

impl OwnedJob {
    fn as_job(&self) -> Job<'_> {
        match self {
            Self::Run(id) => Job::Run(id),
            Self::Migration(id) => Job::Migration(id),
        }
    }
}

/// Stops renewing a lease when dropped (see [`hold`]).
#[derive(Debug)]
pub struct Holding(tokio::task::JoinHandle<()>);

impl Drop for Holding {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A new random identifier: 32 lowercase hex digits.
pub fn new_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}
