//! The sync runner: a tokio task per run that reads the source on a blocking thread, maps each
//! row, loads events through [`crate::ingest::load`] (profiles through [`crate::ingest::set_profiles`]) and
//! writes the run's progress after every chunk. A row that fails is counted and explained; only a
//! source that cannot be read at all fails the run.

use super::source::{self, ReadRow};
use super::{row_to_event, row_to_profile, Mapping, Source};
use crate::ingest::{set_profiles, Loader};
use crate::ingest::now_ms;
use crate::store::jobs::{self as store_jobs, Rejection, Run, MAX_REJECTIONS};
use crate::AppState;

/// What a sync needs to know of its import.
#[derive(Debug, Clone)]
pub struct SyncJob {
    pub project_id: i64,
    pub import_id: i64,
    pub kind: String,
    pub source: Source,
    pub mapping: Mapping,
    pub run_id: String,
}

/// Starts a queued run in the background. Its lease is renewed while the task runs.
pub fn spawn(state: AppState, job: SyncJob) {
    tokio::spawn(async move {
        let run_id = job.run_id.clone();
        let import_id = job.import_id;
        let _holding = crate::jobs::hold(&state, crate::jobs::OwnedJob::Run(run_id.clone()));
        if let Err(e) = run(&state, job).await {
            tracing::error!("warehouse run {run_id} of import {import_id} failed: {e:#}");
            let _ = state
                .store
                .call(move |conn| {
                    if let Some(mut r) = store_jobs::get_run(conn, import_id, &run_id)? {
                        r.status = "failed".into();
                        r.error = Some("the run stopped on an internal error; see the server log, then sync again".into());
                        r.finished_at = Some(now_ms());
                        store_jobs::update_run(conn, &r)?;
                    }
                    Ok(())
                })
                .await;
        }
    });
}

fn reject(run: &mut Run, row: u64, reason: String) {
    run.rows_rejected += 1;
    if run.rejections.len() < MAX_REJECTIONS {
        run.rejections.push(Rejection { row, reason });
    }
}

async fn save(state: &AppState, run: &Run) -> anyhow::Result<()> {
    let r = run.clone();
    state.store.call(move |conn| store_jobs::update_run(conn, &r)).await
}

/// Claims a queued run and runs it to its end; a run no longer queued (claimed by another task
/// or process, or failed) is left alone.
pub async fn run(state: &AppState, job: SyncJob) -> anyhow::Result<()> {
    let started = now_ms();
    let (s, id) = (state.clone(), job.run_id.clone());
    let claimed = state.store.call(move |conn| store_jobs::claim_run(conn, &id, started, &crate::jobs::lease(&s))).await?;
    if !claimed {
        tracing::info!("warehouse run {} of import {} was not queued any more; not run again", job.run_id, job.import_id);
        return Ok(());
    }
    let mut run = Run {
        run_id: job.run_id.clone(),
        import_id: job.import_id,
        trigger: "manual".into(),
        status: "running".into(),
        rows_read: 0,
        events_loaded: 0,
        rows_rejected: 0,
        rejections: Vec::new(),
        error: None,
        created_at: started,
        started_at: Some(started),
        finished_at: None,
    };
    // The folder rule is checked again at each run: the file may have become a link since.
    if let Some(path) = job.source.path() {
        if !super::inside(path, state.config.jobs.warehouse_file_root.as_deref()) {
            run.status = "failed".into();
            run.error = Some("the source file is outside the folder this server reads warehouse files from; move it there".into());
            run.finished_at = Some(now_ms());
            return save(state, &run).await;
        }
    }
    let loader = Loader::new(state, job.project_id).await?;
    let limits = state.config.limits.clone();
    // Two chunks in flight: the reader stays one chunk ahead of the loader, no more.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<ReadRow>>(2);
    let source = job.source.clone();
    let reader = tokio::task::spawn_blocking(move || source::read(&source, |chunk| tx.blocking_send(chunk).is_ok()));
    let max_events = Loader::max_events(state);
    let max_bytes = limits.max_request_bytes;
    while let Some(chunk) = rx.recv().await {
        run.rows_read += chunk.len() as u64;
        if job.kind == "people" {
            // `numbers[i]` is the source row of update `i`.
            let mut updates = Vec::with_capacity(chunk.len());
            let mut numbers = Vec::with_capacity(chunk.len());
            for (n, row) in chunk {
                match row.and_then(|r| row_to_profile(&job.mapping, &r, &limits)) {
                    Ok(u) => {
                        updates.push(u);
                        numbers.push(n);
                    }
                    Err(reason) => reject(&mut run, n, reason),
                }
            }
            let (applied, refused) = set_profiles(state, job.project_id, updates).await?;
            run.events_loaded += applied as u64;
            for r in refused {
                reject(&mut run, numbers[r.index], r.issue.message);
            }
        } else {
            // Batches within the import's limits; `numbers[i]` is the source row of event `i`.
            let mut body = Vec::new();
            let mut numbers = Vec::new();
            for (n, row) in chunk {
                let event = row.and_then(|r| row_to_event(&job.mapping, job.import_id, &job.run_id, &r, &limits));
                match event {
                    Ok(e) => {
                        let bytes = serde_json::to_vec(&e)?;
                        if !numbers.is_empty() && (numbers.len() >= max_events || body.len() + bytes.len() + 1 > max_bytes) {
                            load(state, &loader, &mut run, std::mem::take(&mut body), std::mem::take(&mut numbers)).await?;
                        }
                        body.extend_from_slice(&bytes);
                        body.push(b'\n');
                        numbers.push(n);
                    }
                    Err(reason) => reject(&mut run, n, reason),
                }
            }
            load(state, &loader, &mut run, body, numbers).await?;
        }
        save(state, &run).await?;
    }
    let read = reader.await?;
    run.finished_at = Some(now_ms());
    match read {
        Ok(()) => run.status = "succeeded".into(),
        Err(e) => {
            run.status = "failed".into();
            run.error = Some(e);
        }
    }
    save(state, &run).await
}

async fn load(state: &AppState, loader: &Loader, run: &mut Run, body: Vec<u8>, numbers: Vec<u64>) -> anyhow::Result<()> {
    if numbers.is_empty() {
        return Ok(());
    }
    match loader.load(state, body).await {
        Ok(loaded) => {
            run.events_loaded += (loaded.stored + loaded.dropped) as u64;
            for f in loaded.failed {
                let row = numbers.get(f.index).copied().unwrap_or_default();
                reject(run, row, format!("`{}`: {}", f.field, f.message));
            }
        }
        Err(crate::ApiError::Internal(e)) => return Err(e),
        // A batch refused as a whole (it cannot happen within the limits above, but if it does,
        // its rows are rejected and the run goes on).
        Err(e) => {
            for n in numbers {
                reject(run, n, e.to_string());
            }
        }
    }
    Ok(())
}
