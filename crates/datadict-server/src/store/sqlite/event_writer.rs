//! The SQLite event writer's group commit: the jobs of a group in one transaction, each in a
//! savepoint, then the data-quality rows of the jobs stored, on the writer connection.

use super::events::{set_foreign_keys, upsert_rows};
use super::{after_write, lock, Sqlite};
use crate::store::event_writer::{fail_each, spawn_event_writer, EventWriter, InsertJob};
use crate::store::quality::record_quality;
use crate::store::Conn;
use rusqlite::Connection;

impl Sqlite {
    /// Starts the event writer on this database's writer connection.
    pub(crate) fn spawn_event_writer(&self) -> anyhow::Result<EventWriter> {
        let (conn, after_conn) = (self.conn.clone(), self.conn.clone());
        let checkpoint = self.checkpoint.clone();
        spawn_event_writer(
            move |jobs| match lock(&conn) {
                Ok(mut guard) => write_group(&mut guard, jobs),
                Err(e) => fail_each(jobs, e),
            },
            move || {
                if let Ok(guard) = after_conn.lock() {
                    after_write(&guard, checkpoint.as_deref());
                }
            },
        )
    }
}

/// What the event writer does with a group: [`insert_group`] with the foreign-key checks off,
/// which it leaves off for the next group (see [`set_foreign_keys`]).
pub(super) fn write_group(conn: &mut Connection, jobs: &[InsertJob]) -> Vec<anyhow::Result<usize>> {
    match set_foreign_keys(conn, false) {
        Ok(()) => insert_group(conn, jobs),
        Err(e) => fail_each(jobs, format!("{e:#}")),
    }
}

/// Stores the jobs of a group in one transaction, each in a savepoint, then the quality rows of
/// the jobs stored; returns each job's outcome.
fn insert_group(conn: &mut Connection, jobs: &[InsertJob]) -> Vec<anyhow::Result<usize>> {
    let mut tx = match conn.transaction() {
        Ok(tx) => tx,
        Err(e) => return fail_each(jobs, format!("cannot begin a transaction: {e}")),
    };
    let mut results = Vec::with_capacity(jobs.len());
    let mut quality = Vec::new();
    for job in jobs {
        let mut stored = || -> anyhow::Result<usize> {
            let sp = tx.savepoint()?;
            // Waits for each of the request's parts; the savepoint rolls back (on drop) if the
            // request ends without `End`.
            let drained = job.drain(|batch| upsert_rows(&sp, job.project_id, batch, job.now_s))?;
            sp.commit()?;
            quality.extend(drained.quality.map(|q| (job.project_id, q)));
            Ok(drained.rows)
        };
        results.push(stored());
    }
    if let Err(e) = record_quality(&Conn::Sqlite(&tx), quality) {
        return fail_each(jobs, format!("cannot record the data quality of the events: {e:#}"));
    }
    match tx.commit() {
        Ok(()) => results,
        Err(e) => fail_each(jobs, format!("cannot commit the events: {e}")),
    }
}
