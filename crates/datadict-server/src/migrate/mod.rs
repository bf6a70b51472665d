//! The migration service (spec §4.3, §8): a job per request that downloads the source tool's
//! export for the range (`source`), counts its event records and refuses a range of the event
//! limit or more, then reads it again member by member (`member`) and sends its events through
//! the import's checks: stored by [`crate::ingest::Loader::load`], or, in a dry run, only checked
//! by [`crate::ingest::Loader::check`]. Profile updates are built from the events that passed
//! those checks and from the source's `$identify` and `$groupidentify` rows, as `$set_once`: a
//! migrated value never replaces a value the profile has. The job's state is stored after every
//! archive member, so its status can be followed; the credentials are never stored.
//!
//! The counts add up: `events.counted` is every event record of the export (lines that cannot be
//! transformed included), `loaded` those stored (in a dry run: those a real run would store) and
//! `rejected` the others, each once however many problems it has. Events the dictionary drops
//! count as loaded, as `/import` counts them, and a note in `errors` says how many there were.

mod member;
pub mod source;

use crate::ingest::{migrate_profiles, now_ms, record_refused, Loader, RefusedRecord};
use crate::store::jobs::{self as store_jobs, MigrationJob, MigrationPhase, MAX_REJECTIONS};
use crate::AppState;
use datadict_core::amplitude::{ExportArchive, ProfileAccumulator, SourceRecord};
use datadict_core::migration::DateRange;
use member::{Batch, Member};
use std::collections::BTreeSet;
use std::sync::Arc;

/// What the job needs beyond its stored state: the credentials, only in memory.
#[derive(Clone)]
pub struct Secrets {
    pub key: String,
    pub secret: String,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets { .. }")
    }
}

/// Starts a job in the background; the server log says when it starts and how it ends.
pub fn spawn(state: AppState, job: MigrationJob, range: DateRange, secrets: Secrets) {
    tokio::spawn(async move {
        let mut job = job;
        let _holding = crate::jobs::hold(&state, crate::jobs::OwnedJob::Migration(job.job_id.clone()));
        tracing::info!(
            "migration {} started: {} into project {}, {} to {}{}{}",
            job.job_id,
            job.source_tool,
            job.project_id,
            job.start_date,
            job.end_date,
            if job.region.as_deref() == Some("EU") { ", EU region" } else { "" },
            if job.dry_run { ", dry run" } else { "" }
        );
        if let Err(e) = run(&state, &mut job, range, secrets).await {
            tracing::error!("migration {} stopped on an internal error: {e:#}", job.job_id);
            fail(&mut job, "the migration stopped on an internal error; see the server log, then start it again".into());
        }
        if let Err(e) = save(&state, &job).await {
            tracing::error!("cannot save migration job {}: {e:#}", job.job_id);
        }
        let (e, p) = (job.events, job.profiles);
        let counts = format!(
            "events counted {} loaded {} rejected {}, profiles counted {} loaded {} rejected {}",
            e.counted, e.loaded, e.rejected, p.counted, p.loaded, p.rejected
        );
        match job.phase {
            MigrationPhase::Failed => tracing::warn!("migration {} failed ({counts}): {}", job.job_id, job.errors.last().map(String::as_str).unwrap_or_default()),
            _ => tracing::info!("migration {} succeeded ({counts}{})", job.job_id, if job.dry_run { "; dry run, nothing stored" } else { "" }),
        }
    });
}

fn fail(job: &mut MigrationJob, error: String) {
    job.phase = MigrationPhase::Failed;
    job.errors.push(error);
    job.finished_at = Some(now_ms());
}

fn note(job: &mut MigrationJob, error: String) {
    if job.errors.len() < MAX_REJECTIONS {
        job.errors.push(error);
    }
}

/// Stores the job's state; each save renews this process's lease on it too.
async fn save(state: &AppState, job: &MigrationJob) -> anyhow::Result<()> {
    let (s, j) = (state.clone(), job.clone());
    state.store.call(move |conn| store_jobs::save_migration(conn, &j, &crate::jobs::lease(&s))).await
}

/// What the loading pass tallies besides the job's counts.
#[derive(Default)]
struct Tally {
    /// Events the dictionary drops (counted as loaded).
    dropped: u64,
    /// Events that could not carry some source fields, with the first of them.
    left_out: u64,
    first_left_out: Option<String>,
}

/// Runs a job to its end, saving its state as it goes.
pub async fn run(state: &AppState, job: &mut MigrationJob, range: DateRange, secrets: Secrets) -> anyhow::Result<()> {
    job.phase = MigrationPhase::Exporting;
    save(state, job).await?;
    let base = if job.region.as_deref() == Some("EU") { state.config.jobs.amplitude_eu_url.clone() } else { state.config.jobs.amplitude_url.clone() };
    let settings = state.config.migration_source.clone();
    let download = tokio::task::spawn_blocking(move || source::download(&base, &secrets.key, &secrets.secret, &range, &settings)).await?;
    let export = match download {
        Err(e) => {
            fail(job, e);
            return Ok(());
        }
        Ok(None) => {
            note(job, format!("the source has no data from {} to {} (it answered 404): nothing to migrate", job.start_date, job.end_date));
            source::Export::default()
        }
        Ok(Some(export)) => export,
    };
    let names = if export.bytes.is_empty() {
        Vec::new()
    } else {
        match ExportArchive::new(&export.bytes).and_then(|a| a.member_names()) {
            Ok(n) => n,
            Err(e) => {
                let why = match e {
                    datadict_core::ExportError::Zip(z) => z.to_string(),
                    other => other.to_string(),
                };
                fail(job, format!(
                    "{}, which is not the zip archive its export API sends ({why}); check the server's source URL setting (DATADICT_AMPLITUDE_URL, or DATADICT_AMPLITUDE_EU_URL for REGION EU), then start the migration again",
                    export.describe()
                ));
                return Ok(());
            }
        }
    };
    let archive = Arc::new(export.bytes);
    let limits = state.config.limits.clone();

    // Pass 1: count the event records before anything is checked or written.
    job.phase = MigrationPhase::Counting;
    save(state, job).await?;
    for name in &names {
        match member::read(archive.clone(), name.clone(), limits.clone()).await? {
            Ok(m) => job.events.counted += m.records(),
            Err(e) => {
                fail(job, e);
                return Ok(());
            }
        }
    }
    let max = state.config.jobs.max_migration_events;
    if job.events.counted >= max {
        fail(job, format!(
            "the range holds {} events; the migration service takes ranges of under {max} events, so nothing was loaded: split the range into shorter ones (a single day of {max} or more cannot be migrated here: export that day from the source and send it to /import in batches)",
            job.events.counted
        ));
        return Ok(());
    }

    // Pass 2: check (and, unless it is a dry run, store) member by member.
    job.phase = MigrationPhase::Loading;
    save(state, job).await?;
    let loader = Loader::new(state, job.project_id).await?;
    let mut profiles = ProfileAccumulator::default();
    let mut tally = Tally::default();
    // The next member is read and transformed while the current one loads, so that the two
    // halves of the work overlap on separate threads.
    let start = |i: usize| names.get(i).map(|n| tokio::spawn(member::read(archive.clone(), n.clone(), limits.clone())));
    let mut next = start(0);
    for (i, name) in names.iter().enumerate() {
        let Some(current) = next.take() else { break };
        let read = current.await??;
        next = start(i + 1);
        let member = match read {
            Ok(m) => m,
            Err(e) => {
                fail(job, e);
                return Ok(());
            }
        };
        load_member(state, &loader, job, name, member, &mut profiles, &mut tally).await?;
        save(state, job).await?;
    }

    let mut updates = profiles.updates();
    updates.extend(profiles.group_updates());
    job.profiles.counted = updates.len() as u64;
    for chunk in updates.chunks(limits.max_profile_updates_per_request.max(1)) {
        // A profile the rules refuse (over the property cap) is counted as rejected, as `/engage`
        // refuses that update and keeps the others.
        let (applied, refused) = migrate_profiles(state, job.project_id, chunk.to_vec(), job.dry_run).await?;
        job.profiles.loaded += applied as u64;
        let refused_at: BTreeSet<usize> = refused.iter().map(|r| r.index).collect();
        job.profiles.rejected += refused_at.len() as u64;
        for r in refused {
            note(job, format!("the profile update of `{}` was refused: {}", profile_name(&chunk[r.index].target), r.issue.message));
        }
    }
    if tally.dropped > 0 {
        note(job, format!(
            "{} events were dropped by the project's dictionary (`dropped` on their schema); like /import, the migration counts them as loaded, but they are not stored",
            tally.dropped
        ));
    }
    if let Some(first) = tally.first_left_out {
        note(job, format!("{} events could not carry some source fields without breaking an import rule (too many properties, or nested too deep), and were loaded without them; the first: {first}", tally.left_out));
    }
    job.phase = MigrationPhase::Succeeded;
    job.finished_at = Some(now_ms());
    Ok(())
}

fn profile_name(target: &datadict_core::ProfileTarget) -> String {
    match target {
        datadict_core::ProfileTarget::User { distinct_id } => distinct_id.clone(),
        datadict_core::ProfileTarget::Group { key, id } => format!("{key}/{id}"),
    }
}

/// Checks (and stores, unless it is a dry run) one member's events; what passed the checks feeds
/// `profiles`, with the member's profile rows.
async fn load_member(state: &AppState, loader: &Loader, job: &mut MigrationJob, name: &str, member: Member, profiles: &mut ProfileAccumulator, tally: &mut Tally) -> anyhow::Result<()> {
    if let Some((line, fields)) = &member.left_out {
        tally.left_out += member.left_out_count;
        tally.first_left_out.get_or_insert_with(|| format!("{name}, line {line}: {}", fields.join(", ")));
    }
    let mut refused = Vec::new();
    for bad in member.bad_lines {
        job.events.rejected += 1;
        note(job, format!("{name}, line {}: {}", bad.line, bad.error));
        refused.push(RefusedRecord { event: bad.event, code: bad.error.code().as_str(), message: format!("{name}, line {}: {}", bad.line, bad.error), record: bad.text });
    }
    if !job.dry_run {
        record_refused(state, job.project_id, refused).await?;
    }
    for record in &member.profile_rows {
        profiles.add_record(record);
    }
    for batch in member.batches {
        load_batch(state, loader, job, name, batch, profiles, tally).await?;
    }
    Ok(())
}

async fn load_batch(state: &AppState, loader: &Loader, job: &mut MigrationJob, name: &str, batch: Batch, profiles: &mut ProfileAccumulator, tally: &mut Tally) -> anyhow::Result<()> {
    let Batch { ndjson, lines, profiles: carried } = batch;
    let events = lines.len() as u64;
    let outcome = if job.dry_run { loader.check(state, ndjson).await } else { loader.load(state, ndjson).await };
    let loaded = match outcome {
        Ok(l) => l,
        Err(crate::ApiError::Internal(e)) => return Err(e),
        // The store takes no more writes: the job stops rather than count every batch refused.
        Err(crate::ApiError::Unavailable(why)) => return Err(anyhow::anyhow!(why)),
        Err(e @ crate::ApiError::Outage(_)) => return Err(anyhow::anyhow!("{e}")),
        Err(e) => {
            job.events.rejected += events;
            note(job, format!("{name}: a batch of {events} events (lines {} to {}) was refused: {e}", lines[0], lines[lines.len() - 1]));
            return Ok(());
        }
    };
    job.events.loaded += (loaded.stored + loaded.dropped) as u64;
    tally.dropped += loaded.dropped as u64;
    // One entry per problem: an event is rejected once however many it has.
    let failed: BTreeSet<usize> = loaded.failed.iter().map(|f| f.index).collect();
    job.events.rejected += failed.len() as u64;
    for f in &loaded.failed {
        let line = lines.get(f.index).copied().unwrap_or_default();
        note(job, format!("{name}, line {line}: the import refused the event (`$insert_id` {}): `{}`: {}", f.insert_id, f.field, f.message));
    }
    for (i, carried) in carried.into_iter().enumerate() {
        if let (Some((user, time_ms, props)), false) = (carried, failed.contains(&i)) {
            profiles.add_record(&SourceRecord::Identify { time_ms, profile: Some((user, props)) });
        }
    }
    Ok(())
}
