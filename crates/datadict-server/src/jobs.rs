//! What warehouse imports and migrations share: their settings and the start-up step that creates
//! their tables and closes runs a previous process left unfinished.

use crate::store::jobs as store_jobs;
use crate::AppState;

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
    /// Migrations of more events than this are refused before anything is loaded.
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
/// or running when a previous process stopped as failed, so that none stays "running" forever.
/// Their tables are created with the rest of the schema when the store opens; this step is
/// [`crate::app`]'s, not the store's, because other processes (the admin commands) open the same
/// database while a server runs, and must not fail its running jobs. A failure is logged rather
/// than fatal, so that the rest of the API is still served.
pub fn init(state: &AppState) {
    if let Err(e) = state.store.call_sync(|conn| store_jobs::fail_interrupted(conn, crate::ingest::now_ms())) {
        tracing::error!("cannot mark the interrupted warehouse runs and migrations as failed: {e:#}");
    }
}

/// A new random identifier: 32 lowercase hex digits.
pub fn new_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}
