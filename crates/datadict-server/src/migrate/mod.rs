//! The migration service (spec §4.3, §8): a job per request that downloads the source tool's export
//! for the range, counts what the core's transform makes of it, refuses more than the event limit,
//! and (unless it is a dry run) loads the events through [`crate::ingest::load`] and the latest profile
//! `$set` per user. The job's state is stored after every archive member, so its status can be
//! followed; the credentials are never stored.

pub mod source;

use crate::ingest::{set_profiles, Loader};
use crate::ingest::now_ms;
use crate::store::jobs::{self as store_jobs, MigrationJob, MigrationPhase, MAX_REJECTIONS};
use crate::AppState;
use datadict_core::amplitude::{transform_ndjson, ExportArchive, ProfileAccumulator};
use datadict_core::migration::DateRange;
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

/// The largest member of an export this server inflates.
const MAX_MEMBER_BYTES: usize = 1 << 30;

/// Starts a job in the background.
pub fn spawn(state: AppState, job: MigrationJob, range: DateRange, secrets: Secrets) {
    tokio::spawn(async move {
        let mut job = job;
        let _holding = crate::jobs::hold(&state, crate::jobs::OwnedJob::Migration(job.job_id.clone()));
        if let Err(e) = run(&state, &mut job, range, secrets).await {
            tracing::error!("migration job {} failed: {e:#}", job.job_id);
            fail(&mut job, "the migration stopped on an internal error; see the server log, then start it again".into());
        }
        if let Err(e) = save(&state, &job).await {
            tracing::error!("cannot save migration job {}: {e:#}", job.job_id);
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

/// One member read and transformed on a blocking thread.
struct Member {
    ndjson: Vec<u8>,
    events: u64,
    errors: Vec<String>,
}

async fn transform_member(archive: Arc<Vec<u8>>, name: String, profiles: Option<ProfileAccumulator>, limits: datadict_core::Limits) -> anyhow::Result<(Result<Member, String>, Option<ProfileAccumulator>)> {
    Ok(tokio::task::spawn_blocking(move || {
        let mut profiles = profiles;
        let mut scratch = ProfileAccumulator::default();
        let read = ExportArchive::new(&archive).and_then(|mut a| a.read_member(&name, MAX_MEMBER_BYTES));
        let data = match read {
            Ok(d) => d,
            Err(e) => return (Err(e.to_string()), profiles),
        };
        let t = transform_ndjson(&data, &limits, profiles.as_mut().unwrap_or(&mut scratch));
        let errors = t.errors.into_iter().map(|(line, e)| format!("{name}, line {line}: {e}")).collect();
        (Ok(Member { ndjson: t.ndjson, events: t.events, errors }), profiles)
    })
    .await?)
}

/// Runs a job to its end, saving its state as it goes.
pub async fn run(state: &AppState, job: &mut MigrationJob, range: DateRange, secrets: Secrets) -> anyhow::Result<()> {
    job.phase = MigrationPhase::Exporting;
    save(state, job).await?;
    let base = if job.region.as_deref() == Some("EU") { state.config.jobs.amplitude_eu_url.clone() } else { state.config.jobs.amplitude_url.clone() };
    let download = tokio::task::spawn_blocking(move || source::download(&base, &secrets.key, &secrets.secret, &range)).await?;
    let archive = match download {
        Err(e) => {
            fail(job, e);
            return Ok(());
        }
        Ok(None) => Vec::new(),
        Ok(Some(bytes)) => bytes,
    };
    let archive = Arc::new(archive);
    let names = if archive.is_empty() {
        Vec::new()
    } else {
        match ExportArchive::new(&archive).and_then(|a| a.member_names()) {
            Ok(n) => n,
            Err(e) => {
                fail(job, e.to_string());
                return Ok(());
            }
        }
    };
    let limits = state.config.limits.clone();

    // Pass 1: count what the transform accepts, and the profiles, before anything is written.
    job.phase = MigrationPhase::Counting;
    save(state, job).await?;
    let mut profiles = Some(ProfileAccumulator::default());
    for name in &names {
        let (member, p) = transform_member(archive.clone(), name.clone(), profiles.take(), limits.clone()).await?;
        profiles = p;
        match member {
            Ok(m) => {
                job.events.counted += m.events;
                job.events.rejected += m.errors.len() as u64;
                for e in m.errors {
                    note(job, e);
                }
            }
            Err(e) => {
                fail(job, format!("the export cannot be read: {e}"));
                return Ok(());
            }
        }
    }
    let profiles = profiles.unwrap_or_default();
    job.profiles.counted = profiles.len() as u64;
    let max = state.config.jobs.max_migration_events;
    if job.events.counted > max {
        fail(job, format!(
            "the range holds {} events, more than the {max} the migration service takes; nothing was loaded: split the range into shorter ones",
            job.events.counted
        ));
        return Ok(());
    }
    if job.dry_run {
        job.phase = MigrationPhase::Succeeded;
        job.finished_at = Some(now_ms());
        return Ok(());
    }

    // Pass 2: load, member by member, in batches within the import's limits.
    job.phase = MigrationPhase::Loading;
    save(state, job).await?;
    let loader = Loader::new(state, job.project_id).await?;
    let max_events = Loader::max_events(state);
    let max_bytes = limits.max_request_bytes;
    // The next member is read and transformed while the current one loads, so that the two
    // halves of the work overlap on separate threads.
    let start = |i: usize| names.get(i).map(|n| tokio::spawn(transform_member(archive.clone(), n.clone(), None, limits.clone())));
    let mut next = start(0);
    for (i, name) in names.iter().enumerate() {
        let Some(current) = next.take() else { break };
        let (member, _) = current.await??;
        next = start(i + 1);
        let member = match member {
            Ok(m) => m,
            Err(e) => {
                fail(job, format!("the export cannot be read: {e}"));
                return Ok(());
            }
        };
        let mut batch = Vec::new();
        let mut n: u64 = 0;
        for line in member.ndjson.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            if n > 0 && (n >= max_events as u64 || batch.len() + line.len() + 1 > max_bytes) {
                load(state, &loader, job, std::mem::take(&mut batch), n, name).await?;
                n = 0;
            }
            batch.extend_from_slice(line);
            batch.push(b'\n');
            n += 1;
        }
        load(state, &loader, job, batch, n, name).await?;
        save(state, job).await?;
    }
    let updates: Vec<_> = profiles
        .updates()
        .into_iter()
        .filter_map(|u| match (u.target, u.operation) {
            (datadict_core::ProfileTarget::User { distinct_id }, datadict_core::ProfileOperation::Set(p)) => Some((distinct_id, p)),
            _ => None,
        })
        .collect();
    for chunk in updates.chunks(limits.max_profile_updates_per_request.max(1)) {
        // A profile the rules refuse (over the property cap) is counted as rejected, as `/engage`
        // refuses that update and keeps the others.
        let (applied, refused) = set_profiles(state, job.project_id, chunk.to_vec()).await?;
        job.profiles.loaded += applied as u64;
        job.profiles.rejected += refused.len() as u64;
    }
    job.phase = MigrationPhase::Succeeded;
    job.finished_at = Some(now_ms());
    Ok(())
}

async fn load(state: &AppState, loader: &Loader, job: &mut MigrationJob, batch: Vec<u8>, events: u64, member: &str) -> anyhow::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    match loader.load(state, batch).await {
        Ok(l) => {
            job.events.loaded += (l.stored + l.dropped) as u64;
            job.events.rejected += l.failed.len() as u64;
            for f in l.failed {
                note(job, format!("{member}: `{}` {}: {}", f.insert_id, f.field, f.message));
            }
            Ok(())
        }
        Err(crate::ApiError::Internal(e)) => Err(e),
        // The store takes no more writes: the job stops rather than count every batch refused.
        Err(crate::ApiError::Unavailable(why)) => Err(anyhow::anyhow!(why)),
        Err(e) => {
            job.events.rejected += events;
            note(job, format!("{member}: a batch of {events} events was refused: {e}"));
            Ok(())
        }
    }
}
