//! Loading events and profiles produced by a job (a warehouse sync, a migration) through the same
//! path as `POST /import` and `POST /engage`: the core's checks via `routes::import::check_batch`,
//! the dictionary's drops, then the event writer (`Store::event_sink`) with its de-duplication.
//! There is no second way of inserting events.

use crate::error::ApiError;
use crate::routes::import::{check_batch, now_ms, Drops};
use crate::store;
use crate::AppState;
use datadict_core::{FailedRecord, InputFormat};
use serde_json::{Map, Value};

/// What loading one batch did.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Events stored (new or replacing an earlier copy with the same dedup key).
    pub stored: usize,
    /// Valid events that the dictionary drops (counted as loaded, as `/import` counts them).
    pub dropped: usize,
    /// Events the core's rules rejected; `index` is the 0-based position in the batch.
    pub failed: Vec<FailedRecord>,
}

/// A project's event loader: the dictionary is read once per job, not per batch.
#[derive(Debug, Clone)]
pub struct Loader {
    pub project_id: i64,
    drops: std::sync::Arc<Drops>,
}

impl Loader {
    pub async fn new(state: &AppState, project_id: i64) -> anyhow::Result<Self> {
        let entries = state.store.read(move |conn| store::dropping_schemas(conn, project_id)).await?;
        let drops = Drops::new(&entries, &state.config.namespace);
        Ok(Self { project_id, drops: std::sync::Arc::new(drops) })
    }

    /// The most events one [`Loader::load`] call takes (the import's per-request limit).
    pub fn max_events(state: &AppState) -> usize {
        state.config.limits.max_events_per_request
    }

    /// Checks and stores a batch of NDJSON events (at most [`Loader::max_events`] events and the
    /// import's byte limit), exactly as an `/import` request without `strict` would.
    pub async fn load(&self, state: &AppState, ndjson: Vec<u8>) -> Result<Loaded, ApiError> {
        if ndjson.iter().all(u8::is_ascii_whitespace) {
            return Ok(Loaded::default());
        }
        let limits = state.config.limits.clone();
        let drops = self.drops.clone();
        let now = now_ms();
        let mut sink = state.store.event_sink(self.project_id, now / 1000);
        let (checked, pending) = tokio::task::spawn_blocking(move || {
            let checked = check_batch(&ndjson, InputFormat::Ndjson, &limits, &drops, now, &mut sink)?;
            Ok::<_, ApiError>((checked, sink.close()))
        })
        .await
        .map_err(|e| ApiError::Internal(e.into()))??;
        pending.wait().await?;
        Ok(Loaded { stored: checked.stored, dropped: checked.dropped, failed: checked.failed })
    }
}

/// Applies `$set` updates (spec §2.9: a profile holds the latest value of each property) in one
/// transaction, as `/engage` stores them. Returns how many profiles were written.
pub async fn set_profiles(state: &AppState, project_id: i64, updates: Vec<(String, Map<String, Value>)>) -> anyhow::Result<usize> {
    if updates.is_empty() {
        return Ok(0);
    }
    state
        .store
        .call(move |conn| {
            let tx = conn.transaction()?;
            let n = updates.len();
            for (distinct_id, set) in updates {
                let mut props = store::get_profile(&tx, project_id, &distinct_id)?.unwrap_or_default();
                for (k, v) in set {
                    props.insert(k, v);
                }
                store::put_profile(&tx, project_id, &distinct_id, &props)?;
            }
            tx.commit()?;
            Ok(n)
        })
        .await
}
