//! The SQLite event writer's group commit: the jobs of a group in one transaction, each in a
//! savepoint (a group of ready jobs: none, unless one fails), then the data-quality rows of the
//! jobs stored appended to the quality journal (`quality_journal`, folded into the quality tables
//! every quarter second and before they are read), on the writer connection.

use super::events::{set_foreign_keys, upsert_rows};
use super::{after_write, lock, Sqlite};
use crate::store::event_writer::{fail_each, spawn_event_writer, EventWriter, InsertJob, ReadyParts};
use super::quality_journal::Journal;
use crate::store::quality::QualityRows;
use rusqlite::{Connection, Transaction};

impl Sqlite {
    /// Starts the event writer on this database's writer connection.
    pub(crate) fn spawn_event_writer(&self) -> anyhow::Result<EventWriter> {
        let (conn, after_conn) = (self.conn.clone(), self.conn.clone());
        let (checkpoint, known) = (self.checkpoint.clone(), self.known.clone());
        let (journal, after_journal) = (self.journal.clone(), self.journal.clone());
        spawn_event_writer(
            move |jobs| match (lock(&conn), journal.lock()) {
                (Ok(mut guard), Ok(mut journal)) => write_group(&mut guard, jobs, &mut journal),
                (Err(e), _) => fail_each(jobs, e),
                (_, Err(_)) => fail_each(jobs, "the data-quality journal is unusable (a writer panicked)"),
            },
            move || {
                if let (Ok(guard), Ok(mut journal)) = (after_conn.lock(), after_journal.lock()) {
                    journal.fold_when_due(&guard);
                    after_write(&guard, checkpoint.as_deref(), known.as_deref());
                }
            },
        )
    }
}

/// What the event writer does with a group: [`insert_group`] with the foreign-key checks off,
/// which it leaves off for the next group (see [`set_foreign_keys`]).
pub(super) fn write_group(conn: &mut Connection, jobs: &mut [InsertJob], journal: &mut Journal) -> Vec<anyhow::Result<usize>> {
    match set_foreign_keys(conn, false) {
        Ok(()) => insert_group(conn, jobs, journal),
        Err(e) => fail_each(jobs, format!("{e:#}")),
    }
}

/// Stores the jobs of a group in one transaction, each in a savepoint, then the quality rows of
/// the jobs stored; returns each job's outcome. A group of ready jobs only goes
/// [`insert_ready_group`]'s way.
fn insert_group(conn: &mut Connection, jobs: &mut [InsertJob], journal: &mut Journal) -> Vec<anyhow::Result<usize>> {
    if !jobs.is_empty() && jobs.iter().all(InsertJob::ready) {
        return insert_ready_group(conn, jobs, journal);
    }
    let mut tx = match conn.transaction() {
        Ok(tx) => tx,
        Err(e) => return fail_each(jobs, format!("cannot begin a transaction: {e}")),
    };
    let mut results = Vec::with_capacity(jobs.len());
    let mut quality = Vec::new();
    for job in jobs.iter_mut() {
        let mut stored = || -> anyhow::Result<usize> {
            let sp = tx.savepoint()?;
            // Waits for each of the request's parts; the savepoint rolls back (on drop) if the
            // request ends without `End`.
            let (project_id, now_s) = (job.project_id, job.now_s);
            let drained = job.drain(|batch| upsert_rows(&sp, project_id, batch, now_s))?;
            sp.commit()?;
            quality.extend(drained.quality.map(|q| (job.project_id, q)));
            Ok(drained.rows)
        };
        results.push(stored());
    }
    commit_group(tx, jobs, results, quality, journal)
}

/// Stores a group of ready jobs (small requests whose parts were all queued with the job, such
/// as tracking requests): all of them in the transaction itself, with no savepoint. In WAL mode a
/// savepoint makes SQLite copy every page a job changes into its sub-journal first, and the
/// requests of a tracking group each change the same few pages (the right edges of the events
/// table and of its key, the hour's volume): a tenth of the event writer's CPU at 16 clients
/// (`perf`). Their parts were checked whole before they were queued, so only the store can fail
/// one; if it does, the transaction is rolled back and the group stored again from the held
/// parts with a savepoint per job, so that only that job fails.
fn insert_ready_group(conn: &mut Connection, jobs: &mut [InsertJob], journal: &mut Journal) -> Vec<anyhow::Result<usize>> {
    let mut parts: Vec<anyhow::Result<ReadyParts>> = jobs.iter_mut().map(InsertJob::take_ready).collect();
    let jobs = &*jobs;
    match store_ready(conn, jobs, &mut parts, false, journal) {
        Some(results) => results,
        None => store_ready(conn, jobs, &mut parts, true, journal).unwrap_or_else(|| fail_each(jobs, "the events could not be stored")),
    }
}

/// One attempt of [`insert_ready_group`]: with `isolate`, each job in a savepoint of its own;
/// without it, `None` (the transaction rolled back) as soon as one job fails.
fn store_ready(
    conn: &mut Connection,
    jobs: &[InsertJob],
    parts: &mut [anyhow::Result<ReadyParts>],
    isolate: bool,
    journal: &mut Journal,
) -> Option<Vec<anyhow::Result<usize>>> {
    let mut tx = match conn.transaction() {
        Ok(tx) => tx,
        Err(e) => return Some(fail_each(jobs, format!("cannot begin a transaction: {e}"))),
    };
    let mut results = Vec::with_capacity(jobs.len());
    for (job, part) in jobs.iter().zip(parts.iter()) {
        let store = |conn: &Connection| -> anyhow::Result<usize> {
            let part = part.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
            for batch in &part.batches {
                upsert_rows(conn, job.project_id, batch, job.now_s)?;
            }
            Ok(part.rows())
        };
        let result = match isolate {
            false => store(&tx),
            true => tx.savepoint().map_err(anyhow::Error::from).and_then(|sp| {
                let n = store(&sp)?;
                sp.commit()?;
                Ok(n)
            }),
        };
        if result.is_err() && !isolate {
            return None;
        }
        results.push(result);
    }
    // Only now, once this attempt stands, are the quality rows taken from the held parts.
    let quality = (jobs.iter().zip(parts.iter_mut()).zip(&results))
        .filter(|(_, result)| result.is_ok())
        .filter_map(|((job, part), _)| part.as_mut().ok()?.quality.take().map(|q| (job.project_id, q)))
        .collect();
    Some(commit_group(tx, jobs, results, quality, journal))
}

/// Appends the quality rows of a group's stored jobs to the journal and commits the group;
/// returns `results`, or the failure for every job.
fn commit_group(
    tx: Transaction<'_>,
    jobs: &[InsertJob],
    results: Vec<anyhow::Result<usize>>,
    quality: Vec<(i64, QualityRows)>,
    journal: &mut Journal,
) -> Vec<anyhow::Result<usize>> {
    if let Err(e) = journal.append(&tx, quality) {
        journal.forget();
        return fail_each(jobs, format!("cannot record the data quality of the events: {e:#}"));
    }
    match tx.commit() {
        Ok(()) => {
            journal.committed();
            results
        }
        Err(e) => {
            // The journal counted findings that were not committed: forget them all.
            journal.forget();
            fail_each(jobs, format!("cannot commit the events: {e}"))
        }
    }
}
