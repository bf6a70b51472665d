//! Loading events and profiles produced by a job (a warehouse sync, a migration) through the same
//! path as `POST /import` and `POST /engage`: the core's checks via [`crate::ingest::check_batch`],
//! the dictionary's drops, then the event writer (`Store::event_sink`) with its de-duplication.
//! There is no second way of inserting events.

use crate::error::ApiError;
use crate::ingest::quality::{self, Findings};
use crate::ingest::batch::check_and_store;
use crate::ingest::{now_ms, Drops, Intake};
use crate::store;
use crate::AppState;
use datadict_core::profile::{self, ProfileOperation, ProfileTarget};
use datadict_core::{profile_schema_name, Dictionary, FailedRecord, InputFormat, Issue, Limits, ProfileUpdate};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

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
    /// The dictionary the check on arrival uses (`None` when it is off).
    dictionary: Option<std::sync::Arc<datadict_core::Dictionary>>,
}

impl Loader {
    pub async fn new(state: &AppState, project_id: i64) -> anyhow::Result<Self> {
        let compiled = crate::ingest::cache::compiled_dictionary(state, project_id, None).await?;
        Ok(Self { project_id, drops: compiled.drops, dictionary: compiled.dictionary })
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
        let intake = Intake { dictionary: self.dictionary.clone(), route: "job", ..Intake::default() };
        let checked = check_and_store(state, self.project_id, ndjson, InputFormat::Ndjson, intake, self.drops.clone()).await?;
        Ok(Loaded { stored: checked.stored, dropped: checked.dropped, failed: checked.failed })
    }

    /// What [`Loader::load`] would do with a batch, without storing or recording anything (a
    /// migration's dry run): the same rules and the same drops; `stored` counts the events a load
    /// would store.
    pub async fn check(&self, state: &AppState, ndjson: Vec<u8>) -> Result<Loaded, ApiError> {
        if ndjson.iter().all(u8::is_ascii_whitespace) {
            return Ok(Loaded::default());
        }
        let limits = state.config.limits.clone();
        let drops = self.drops.clone();
        let now = now_ms();
        tokio::task::spawn_blocking(move || {
            let rules = Intake::default().rules;
            let refuse = |e: datadict_core::ImportBodyError| ApiError::BadRequest(e.to_string());
            let mut records = datadict_core::check_import_records(&ndjson, InputFormat::Ndjson, &rules, &limits, now).map_err(refuse)?;
            let mut out = Loaded::default();
            for record in records.by_ref() {
                let record = record.map_err(refuse)?;
                if !record.check.is_valid() {
                    continue;
                }
                match drops.of(&record.check) {
                    None => out.dropped += 1,
                    Some(_) => out.stored += 1,
                }
            }
            out.failed = records.failed_records;
            Ok(out)
        })
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
    }
}

/// One record a job refused before the import's checks (a migration's line that cannot be
/// transformed): the event's name if known, the core's code, the message and the record's text.
#[derive(Debug)]
pub struct RefusedRecord {
    pub event: String,
    pub code: &'static str,
    pub message: String,
    pub record: Vec<u8>,
}

/// Keeps records a job refused itself in the bad store, as route `job`, like the records the
/// import's checks refuse (`GET .../rejected`).
pub async fn record_refused(state: &AppState, project_id: i64, refused: Vec<RefusedRecord>) -> anyhow::Result<()> {
    if refused.is_empty() {
        return Ok(());
    }
    let mut findings = Findings::default();
    for r in &refused {
        quality::reject(&mut findings.rejected, "job", &r.event, &[(r.code, r.message.as_str())], &r.record, &[]);
        findings.counts.bad(&r.event);
    }
    let rows = findings.into_rows(now_ms(), state.config.quality_max_keys);
    state.store.call(move |conn| crate::store::quality::record_quality(conn, vec![(project_id, rows)])).await
}

/// Why one profile update was refused: its position among the updates given, and the core's issue.
#[derive(Debug)]
pub struct Refused {
    pub index: usize,
    pub issue: Issue,
}

/// Applies profile updates to the stored profiles of a project (user profiles, or group
/// profiles: each update names its [`ProfileTarget`]) with the core's
/// [`datadict_core::profile::apply`], the one place where the operations and the 2,000-property
/// cap live. `/engage`, `/groups`, warehouse syncs and migrations all store profiles through
/// here. An update that breaks a rule is refused and the others are kept, as `/engage` does. Runs
/// inside the caller's transaction; returns how many updates were applied and the refused ones.
pub fn apply_profile_updates<'a>(
    conn: &store::Conn<'_>,
    project_id: i64,
    updates: impl IntoIterator<Item = (usize, &'a ProfileTarget, &'a ProfileOperation)>,
    limits: &Limits,
) -> anyhow::Result<(usize, Vec<Refused>)> {
    // Each profile is read once and written once, whatever the number of its updates.
    let mut profiles: HashMap<&ProfileTarget, Option<Map<String, Value>>> = HashMap::new();
    let mut applied = 0;
    let mut refused = Vec::new();
    for (index, target, operation) in updates {
        if !profiles.contains_key(target) {
            let stored = match target {
                ProfileTarget::User { distinct_id } => store::get_profile(conn, project_id, distinct_id)?,
                ProfileTarget::Group { key, id } => store::get_group(conn, project_id, key, id)?,
            };
            profiles.insert(target, stored);
        }
        let slot = profiles.get_mut(target).expect("inserted above");
        match profile::apply(slot.as_ref(), operation, limits) {
            Ok(next) => {
                *slot = next;
                applied += 1;
            }
            Err(issues) => refused.extend(issues.into_iter().map(|issue| Refused { index, issue })),
        }
    }
    for (target, profile) in &profiles {
        match (target, profile) {
            (ProfileTarget::User { distinct_id }, Some(props)) => store::put_profile(conn, project_id, distinct_id, props)?,
            (ProfileTarget::User { distinct_id }, None) => {
                store::delete_profile(conn, project_id, distinct_id)?;
            }
            (ProfileTarget::Group { key, id }, Some(props)) => store::put_group(conn, project_id, key, id, props)?,
            (ProfileTarget::Group { key, id }, None) => {
                store::delete_group(conn, project_id, key, id)?;
            }
        }
    }
    Ok((applied, refused))
}

/// Applies updates (user or group, each with its position among the updates given) in one
/// transaction through [`apply_profile_updates`], then checks the applied ones against the
/// project's dictionary on arrival (unless the server runs with `--no-dictionary-check`) and
/// records what it finds (`ingest::quality`), with the updates `apply` refused as rejected records
/// of `route` (the bad store) besides those the caller refused before (`rejected`). `/engage`,
/// `/groups`, warehouse syncs and migrations all store profiles through here. Returns how many
/// updates were applied and the refused ones.
pub async fn store_profile_updates(
    state: &AppState,
    project_id: i64,
    updates: Vec<(usize, ProfileTarget, ProfileOperation)>,
    route: &'static str,
    rejected: quality::Violations,
) -> Result<(usize, Vec<Refused>), ApiError> {
    // The project's compiled dictionary holds its profile schemas too: `$user` for user updates,
    // the schema named by the group key for group updates (`None` when the check is off).
    let dictionary = crate::ingest::cache::compiled_dictionary(state, project_id, None).await?.dictionary;
    let limits = state.config.limits.clone();
    let max_keys = state.config.quality_max_keys;
    let now = now_ms();
    // The updates and the data-quality rows they make are written in one transaction (one
    // commit, one fsync): with two, a failure of the second answered an error for updates that
    // were stored.
    state
        .store
        .call(move |conn| {
            let tx = conn.transaction()?;
            let (applied, refused) = apply_profile_updates(&tx, project_id, updates.iter().map(|(i, target, op)| (*i, target, op)), &limits)?;
            let findings = profile_findings(&updates, &refused, rejected, route, dictionary.as_deref());
            let rows = findings.into_rows(now, max_keys);
            if !rows.is_empty() {
                crate::store::quality::record_quality(&tx, vec![(project_id, rows)])?;
            }
            tx.commit()?;
            Ok((applied, refused))
        })
        .await
        .map_err(ApiError::from)
}

/// What the data quality records of a request's profile updates: the updates `apply` refused, as
/// rejected records of `route` (the bad store) besides those the caller refused before
/// (`rejected`), and what the check on arrival finds in the applied ones against `dictionary`
/// (`None`: the check is off).
fn profile_findings(
    updates: &[(usize, ProfileTarget, ProfileOperation)],
    refused: &[Refused],
    rejected: quality::Violations,
    route: &'static str,
    dictionary: Option<&Dictionary>,
) -> Findings {
    let mut findings = Findings { rejected, ..Findings::default() };
    // A refused update is kept in the bad store, its sample the update as parsed (without token).
    for r in refused {
        if let Some((_, target, operation)) = updates.iter().find(|(i, _, _)| *i == r.index) {
            let update = ProfileUpdate { token: None, target: target.clone(), operation: operation.clone() };
            let text = serde_json::to_vec(&update).unwrap_or_default();
            let issues = [(r.issue.code.as_str(), r.issue.message.as_str())];
            // Parsed without its token: nothing to redact.
            quality::reject(&mut findings.rejected, route, profile_schema_name(target), &issues, &text, &[]);
        }
    }
    if let Some(dictionary) = dictionary {
        // Only stored updates are checked: a refused one is reported to the sender instead.
        let refused_at: HashSet<usize> = refused.iter().map(|r| r.index).collect();
        for (_, target, operation) in updates.iter().filter(|(i, _, _)| !refused_at.contains(i)) {
            findings.violations.check_profile(target, operation, dictionary);
        }
    }
    findings
}


/// Applies a migration's profile updates (each names its user or group profile) through
/// [`store_profile_updates`], as `/engage` and `/groups` do, the check on arrival included; with
/// `dry`, applies them in a transaction that is rolled back, so that a dry run meets the same
/// refusals (the property cap, against the stored profiles) without storing or recording
/// anything. Returns how many updates were (or would be) applied and the refused ones.
pub async fn migrate_profiles(state: &AppState, project_id: i64, updates: Vec<ProfileUpdate>, dry: bool) -> anyhow::Result<(usize, Vec<Refused>)> {
    if updates.is_empty() {
        return Ok((0, Vec::new()));
    }
    let operations: Vec<(usize, ProfileTarget, ProfileOperation)> = updates.into_iter().enumerate().map(|(i, u)| (i, u.target, u.operation)).collect();
    if !dry {
        return Ok(store_profile_updates(state, project_id, operations, "job", quality::Violations::default()).await?);
    }
    let limits = state.config.limits.clone();
    state
        .store
        .call(move |conn| {
            let tx = conn.transaction()?;
            let outcome = apply_profile_updates(&tx, project_id, operations.iter().map(|(i, target, op)| (*i, target, op)), &limits)?;
            // Dropped without a commit: rolled back.
            drop(tx);
            Ok(outcome)
        })
        .await
}

/// Applies a job's `$set` updates (spec §2.9: a profile holds the latest value of each property)
/// through [`store_profile_updates`], as `/engage` does, the check on arrival included. Returns
/// how many updates were applied and the refused ones (`index` into `updates`).
pub async fn set_profiles(state: &AppState, project_id: i64, updates: Vec<(String, Map<String, Value>)>) -> anyhow::Result<(usize, Vec<Refused>)> {
    if updates.is_empty() {
        return Ok((0, Vec::new()));
    }
    let operations =
        updates.into_iter().enumerate().map(|(i, (distinct_id, set))| (i, ProfileTarget::User { distinct_id }, ProfileOperation::Set(set))).collect();
    Ok(store_profile_updates(state, project_id, operations, "job", quality::Violations::default()).await?)
}
