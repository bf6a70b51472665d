//! The sync runner: a tokio task per run that reads the source on a blocking thread, maps each
//! row, loads events through [`crate::ingest::load`] (profiles through [`crate::ingest::set_profiles`]) and
//! writes the run's progress after every chunk. A row that fails is counted and explained; only a
//! source that cannot be read at all fails the run.

use super::source::{self, ReadRow};
use super::{row_to_event, row_to_profile, Mapping, Source, UNREADABLE_ROW};
use crate::ingest::quality::{self, Findings};
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

/// The rejections of one chunk of rows: those refused before loading (also recorded in the
/// project's rejected store, route `job`, as the loader records its own) and those the loader
/// refused, put into the run in row order at the chunk's end.
#[derive(Default)]
struct Rejected {
    rows: Vec<Rejection>,
    findings: Findings,
}

impl Rejected {
    /// A row refused before loading: `entity` is its event name (`$user` for a profile update, ``
    /// when unknown), `record` what the rejected store keeps as its sample.
    fn before_load(&mut self, n: u64, entity: &str, code: &'static str, reason: String, record: &[u8], events: bool) {
        quality::reject(&mut self.findings.rejected, "job", entity, &[(code, reason.as_str())], record, &[]);
        if events {
            self.findings.counts.bad(entity);
        }
        self.rows.push(Rejection { row: n, reason });
    }

    /// Puts the chunk's rejections into `run` in row order (the first [`MAX_REJECTIONS`] keep
    /// their reasons) and records those refused before loading; called once per chunk.
    async fn close(self, state: &AppState, project_id: i64, run: &mut Run) -> anyhow::Result<()> {
        let Rejected { mut rows, findings } = self;
        rows.sort_by_key(|r| r.row);
        run.rows_rejected += rows.len() as u64;
        let room = MAX_REJECTIONS.saturating_sub(run.rejections.len());
        run.rejections.extend(rows.into_iter().take(room));
        let quality = findings.into_rows(now_ms(), state.config.quality_max_keys);
        if !quality.rejected.is_empty() {
            state.store.call(move |conn| crate::store::quality::record_quality(conn, vec![(project_id, quality)])).await?;
        }
        Ok(())
    }
}

/// What a row that cannot be read leaves as the rejected store's sample.
fn unreadable_sample(n: u64) -> Vec<u8> {
    format!("row {n} of the source, which could not be read").into_bytes()
}

/// Why the source's columns no longer fit the import's mapping (a CSV header or a table changed
/// since the import was created), or why they cannot be read; `Ok` when they fit or cannot be
/// known before reading (NDJSON).
async fn check_columns(source: &Source, kind: &str, mapping: &Mapping) -> anyhow::Result<Result<(), String>> {
    let s = source.clone();
    let columns = match tokio::task::spawn_blocking(move || source::columns(&s)).await? {
        Ok(Some(columns)) => columns,
        Ok(None) => return Ok(Ok(())),
        Err(e) => return Ok(Err(e)),
    };
    let mut issues = Vec::new();
    super::check_mapping(kind, mapping, Some(&columns), &mut issues);
    if issues.is_empty() {
        return Ok(Ok(()));
    }
    let problems: Vec<String> = issues.into_iter().map(|i| format!("{} ({})", i.message, i.path)).collect();
    Ok(Err(format!(
        "the source no longer fits the import's mapping: {}; put the columns back in the source, or delete the import and create it for the new columns",
        problems.join("; ")
    )))
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
    // The file rules are checked again at each run: the file may have gone, or become a link or
    // a named pipe, since.
    let root = state.config.jobs.warehouse_file_root.clone();
    let source = match job.source.check_file(root.as_deref()).and_then(|()| job.source.resolved(root.as_deref())) {
        Ok(source) => source,
        Err(e) => {
            run.status = "failed".into();
            run.error = Some(e);
            run.finished_at = Some(now_ms());
            return save(state, &run).await;
        }
    };
    if let Err(e) = check_columns(&source, &job.kind, &job.mapping).await? {
        run.status = "failed".into();
        run.error = Some(e);
        run.finished_at = Some(now_ms());
        return save(state, &run).await;
    }
    let loader = Loader::new(state, job.project_id).await?;
    let limits = state.config.limits.clone();
    // Two chunks in flight: the reader stays one chunk ahead of the loader, no more.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<ReadRow>>(2);
    let reader = tokio::task::spawn_blocking(move || source::read(&source, |chunk| tx.blocking_send(chunk).is_ok()));
    let max_events = Loader::max_events(state);
    let max_bytes = limits.max_request_bytes;
    while let Some(chunk) = rx.recv().await {
        run.rows_read += chunk.len() as u64;
        let mut rejected = Rejected::default();
        if job.kind == "people" {
            // `numbers[i]` is the source row of update `i`.
            let mut updates = Vec::with_capacity(chunk.len());
            let mut numbers = Vec::with_capacity(chunk.len());
            for (n, row) in chunk {
                match row {
                    Err(reason) => rejected.before_load(n, "$user", UNREADABLE_ROW, reason, &unreadable_sample(n), false),
                    Ok(r) => match row_to_profile(&job.mapping, &r, &limits) {
                        Ok(u) => {
                            updates.push(u);
                            numbers.push(n);
                        }
                        Err(e) => rejected.before_load(n, "$user", e.code, e.message, &serde_json::to_vec(&r)?, false),
                    },
                }
            }
            let (applied, refused) = set_profiles(state, job.project_id, updates).await?;
            run.events_loaded += applied as u64;
            for r in refused {
                rejected.rows.push(Rejection { row: numbers[r.index], reason: r.issue.message });
            }
        } else {
            // Batches within the import's limits; `numbers[i]` is the source row of event `i`.
            let mut body = Vec::new();
            let mut numbers = Vec::new();
            for (n, row) in chunk {
                let r = match row {
                    Ok(r) => r,
                    Err(reason) => {
                        let name = job.mapping.event_name.as_deref().unwrap_or_default();
                        rejected.before_load(n, name, UNREADABLE_ROW, reason, &unreadable_sample(n), true);
                        continue;
                    }
                };
                match row_to_event(&job.mapping, job.import_id, &job.run_id, &r, &limits) {
                    Ok(e) => {
                        let bytes = serde_json::to_vec(&e)?;
                        if !numbers.is_empty() && (numbers.len() >= max_events || body.len() + bytes.len() + 1 > max_bytes) {
                            load(state, &loader, &mut rejected, std::mem::take(&mut body), std::mem::take(&mut numbers)).await?;
                        }
                        body.extend_from_slice(&bytes);
                        body.push(b'\n');
                        numbers.push(n);
                    }
                    Err(e) => {
                        let name = event_name(&job.mapping, &r);
                        rejected.before_load(n, &name, e.code, e.message, &serde_json::to_vec(&r)?, true);
                    }
                }
            }
            run.events_loaded += load(state, &loader, &mut rejected, body, numbers).await?;
        }
        rejected.close(state, job.project_id, &mut run).await?;
        save(state, &run).await?;
    }
    let read = reader.await?;
    run.finished_at = Some(now_ms());
    match read {
        // A run that read rows and loaded none did not import anything: it is a failure, with
        // the reasons in its rejections, not a success with zero events.
        Ok(()) if run.rows_read > 0 && run.events_loaded == 0 => {
            run.status = "failed".into();
            let first = run.rejections.first().map(|r| format!("; the first, row {}: {}", r.row, r.reason)).unwrap_or_default();
            run.error = Some(format!(
                "none of the {} rows read was loaded: every row was rejected (see `rejections`{first}); fix the source or the mapping, then sync again",
                run.rows_read
            ));
        }
        Ok(()) => run.status = "succeeded".into(),
        Err(e) => {
            run.status = "failed".into();
            run.error = Some(e);
        }
    }
    save(state, &run).await
}

/// The event name of a row refused before loading, for the rejected store: the mapping's constant
/// name, or the row's name column when it holds one (`` when not).
fn event_name(m: &Mapping, row: &super::Row) -> String {
    match (&m.event_name, &m.event_column_name) {
        (Some(n), _) => n.clone(),
        (None, Some(c)) => row.get(c).and_then(|v| v.as_str()).unwrap_or_default().to_owned(),
        (None, None) => String::new(),
    }
}

/// Loads a batch of events; returns how many were loaded (stored, or dropped by the dictionary).
/// The loader records the events it refuses in the rejected store itself.
async fn load(state: &AppState, loader: &Loader, rejected: &mut Rejected, body: Vec<u8>, numbers: Vec<u64>) -> anyhow::Result<u64> {
    if numbers.is_empty() {
        return Ok(0);
    }
    match loader.load(state, body).await {
        Ok(loaded) => {
            for f in loaded.failed {
                let row = numbers.get(f.index).copied().unwrap_or_default();
                rejected.rows.push(Rejection { row, reason: format!("`{}`: {}", f.field, f.message) });
            }
            Ok((loaded.stored + loaded.dropped) as u64)
        }
        Err(crate::ApiError::Internal(e)) => Err(e),
        // The storage is out or takes no writes: the run fails rather than reject every row.
        Err(e @ (crate::ApiError::Outage(_) | crate::ApiError::Unavailable(_))) => Err(anyhow::anyhow!("{e}")),
        // A batch refused as a whole (it cannot happen within the limits above, but if it does,
        // its rows are rejected and the run goes on).
        Err(e) => {
            for n in numbers {
                rejected.rows.push(Rejection { row: n, reason: e.to_string() });
            }
            Ok(0)
        }
    }
}
