//! The SQLite event writer's group commits: the jobs of a group in one transaction, then the
//! data-quality rows of the jobs stored appended to the quality journal (`quality_journal`,
//! folded into the quality tables every quarter second and before they are read), on the writer
//! connection.
//!
//! Durability (`Synchronous::Full`, the default, on a file): the writer commits a group without
//! the fsync (`synchronous = NORMAL`, left so between its groups and set back to `FULL` by every
//! other write on the connection, see `Sqlite::deferred`), hands the group's answers to the
//! syncer thread (`event_writer::spawn_syncer`), which fsyncs the WAL and only then answers the
//! group's requests, and meanwhile opens the next group: the jobs that arrive while the syncer
//! works are stored in it at once, and it is committed as soon as the syncer is done. So a
//! request's answer still waits for the fsync of its commit, but the fsync no longer holds up the
//! storing of the next requests, and a group commits at most once per fsync. Every other write on
//! the connection keeps `synchronous = FULL` and its own fsync.

use super::events::{set_foreign_keys, upsert_rows_tallied, VolumeTally};
use super::quality_journal::Journal;
use super::{after_write, defer_commits, lock, lock_journal, Sqlite, WalFile};
use crate::store::event_writer::{answer, fail_each, spawn_syncer, Answer, EventWriter, Gather, InsertJob, ReadyParts, ToWriter};
use crate::store::quality::QualityRows;
use rusqlite::Connection;

impl Sqlite {
    /// Starts the event writer on this database's writer connection, and its syncer when commits
    /// must be durable.
    pub(crate) fn spawn_event_writer(&self) -> anyhow::Result<EventWriter> {
        let (writer, rx, wake, in_flight) = EventWriter::channel();
        let syncer = match self.wal.clone() {
            Some(wal) => Some(spawn_syncer(move || wal.sync(), in_flight.clone(), wake)?),
            None => None,
        };
        let (conn, journal, deferred, wal) = (self.conn.clone(), self.journal.clone(), self.deferred.clone(), self.wal.clone());
        let (checkpoint, known) = (self.checkpoint.clone(), self.known.clone());
        std::thread::Builder::new().name("datadict-events".into()).spawn(move || {
            let mut gather = Gather::default();
            while let Some(first) = gather.first(&rx) {
                // After a failed fsync no job is written (see `WalFile::sync`).
                if let Some(Err(e)) = wal.as_deref().map(WalFile::refuse_after_failure) {
                    answer(vec![(first.done, Err(e))], &in_flight);
                    continue;
                }
                let (mut conn, mut journal) = match lock(&conn).and_then(|conn| Ok((conn, lock_journal(&journal)?))) {
                    Ok(both) => both,
                    Err(e) => {
                        answer(vec![(first.done, Err(e))], &in_flight);
                        continue;
                    }
                };
                let deferring = syncer.is_some() && defer_commits(&conn, &deferred);
                let (answers, committed) = write_gathered(&mut conn, &mut journal, first, &mut gather, &rx, deferring);
                match &syncer {
                    Some(syncer) if committed => match syncer.send(answers) {
                        Ok(()) => gather.syncing = true,
                        Err(e) => {
                            let failed = e.0.into_iter().map(|(done, _)| (done, Err(anyhow::anyhow!("the event writer's syncer has stopped"))));
                            answer(failed.collect(), &in_flight);
                        }
                    },
                    _ => answer(answers, &in_flight),
                }
                journal.fold_when_due(&conn);
                after_write(&conn, checkpoint.as_deref(), known.as_deref());
            }
        })?;
        Ok(writer)
    }
}

/// Stores `first` and the jobs `gather` gives after it as one group, and commits it: with
/// `deferred` (the connection's commits do not fsync, the syncer's does), taking the jobs that
/// arrive until the syncer has made the last group durable. Returns each job's answer, and
/// whether the group committed.
fn write_gathered(
    conn: &mut Connection,
    journal: &mut Journal,
    first: InsertJob,
    gather: &mut Gather,
    rx: &std::sync::mpsc::Receiver<ToWriter>,
    deferred: bool,
) -> (Vec<Answer>, bool) {
    let mut group = Group::begin(conn);
    group.absorb(first);
    loop {
        let next = match deferred {
            true => gather.while_syncing(rx, &group.jobs),
            false => gather.more(rx, &group.jobs),
        };
        match next {
            Some(job) => group.absorb(job),
            None => break,
        }
    }
    let (jobs, results, committed) = group.commit(journal);
    (jobs.into_iter().map(|job| job.done).zip(results).collect(), committed)
}

/// Runs a statement without parameters from the connection's cache (a transaction's `BEGIN`,
/// `COMMIT` or `ROLLBACK`: preparing them for every group showed in the writer's CPU).
fn run(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// The jobs of a group in one transaction, each stored as it is absorbed, and committed at once.
/// Every job stands alone: a job that fails rolls back alone.
///
/// Ready jobs (small requests whose parts came with the job, such as tracking requests) are
/// stored in the transaction itself, with no savepoint: in WAL mode a savepoint makes SQLite copy
/// every page a job changes into its sub-journal first, and the requests of a tracking group
/// each change the same few pages (the right edges of the events table and of its key), a tenth
/// of the event writer's CPU at 16 clients (`perf`). Their parts were
/// checked whole before they were queued, so only the store can fail one; if it does, the
/// transaction is rolled back and the group stored again from the held parts, a savepoint per
/// job, as every later job of the group then is. A job that streams its parts is stored in a
/// savepoint, and so is every job after it.
struct Group<'c> {
    conn: &'c mut Connection,
    jobs: Vec<InsertJob>,
    /// Per job: its outcome, and its quality rows (a ready job's held parts keep theirs).
    done: Vec<Stored>,
    isolate: bool,
    /// Why the group cannot be stored (its transaction could not begin or roll back).
    broken: Option<anyhow::Error>,
}

/// What became of one job of a [`Group`].
struct Stored {
    result: anyhow::Result<usize>,
    /// Its new events, for `event_volume` (written at the commit, for the jobs stored).
    volume: VolumeTally,
    /// A ready job's parts, kept to store it again after a rollback.
    held: Option<ReadyParts>,
    /// A streaming job's quality rows.
    quality: Option<QualityRows>,
}

impl<'c> Group<'c> {
    fn begin(conn: &'c mut Connection) -> Self {
        let broken = match set_foreign_keys(conn, false).and_then(|()| Ok(run(conn, "BEGIN")?)) {
            Ok(()) => None,
            Err(e) => Some(e.context("cannot begin a transaction")),
        };
        Self { conn, jobs: Vec::new(), done: Vec::new(), isolate: false, broken }
    }

    fn absorb(&mut self, mut job: InsertJob) {
        let target = (job.project_id, job.now_s);
        let stored = match &self.broken {
            Some(why) => Stored::failed(crate::store::outage::again(why)),
            None if job.ready() => match job.take_ready() {
                Ok(parts) => self.store_ready(target, parts),
                Err(e) => Stored::failed(e),
            },
            None => {
                self.isolate = true;
                let mut volume = VolumeTally::default();
                let drained = self.conn.savepoint().map_err(anyhow::Error::from).and_then(|sp| {
                    // Waits for each of the request's parts; the savepoint rolls back (on drop)
                    // if the request ends without `End`.
                    let drained = job.drain(|batch| upsert_rows_tallied(&sp, target.0, batch, target.1, &mut volume))?;
                    sp.commit()?;
                    Ok(drained)
                });
                match drained {
                    Ok(drained) => Stored { result: Ok(drained.rows), volume, held: None, quality: drained.quality },
                    Err(e) => Stored::failed(e),
                }
            }
        };
        self.jobs.push(job);
        self.done.push(stored);
    }

    /// Stores a ready job's parts for `target` (its project and time): in a savepoint once the
    /// group isolates its jobs; otherwise in the transaction itself, and if that fails, after a
    /// rollback that stores the group's earlier jobs again, each in a savepoint.
    fn store_ready(&mut self, target: (i64, i64), parts: ReadyParts) -> Stored {
        if !self.isolate {
            match store_parts(self.conn, &parts, target) {
                Ok((n, volume)) => return Stored { result: Ok(n), volume, held: Some(parts), quality: None },
                Err(_) => self.isolate = true,
            }
            // A failure such as a full disk may have rolled the transaction back already.
            let restarted = match self.conn.is_autocommit() {
                true => run(self.conn, "BEGIN"),
                false => run(self.conn, "ROLLBACK").and_then(|()| run(self.conn, "BEGIN")),
            };
            if let Err(e) = restarted {
                let why = anyhow::Error::from(e).context("cannot roll back a transaction");
                self.done.iter_mut().for_each(|stored| stored.result = Err(crate::store::outage::again(&why)));
                let failed = Stored::failed(crate::store::outage::again(&why));
                self.broken = Some(why);
                return failed;
            }
            // Before the rollback every job was a ready one, stored whole: store each again.
            for (job, stored) in self.jobs.iter().zip(&mut self.done) {
                if let Some(held) = stored.held.take() {
                    *stored = Stored::from_savepoint(self.conn, held, (job.project_id, job.now_s));
                }
            }
        }
        Stored::from_savepoint(self.conn, parts, target)
    }

    /// Appends the quality rows of the jobs stored to the journal and commits; returns the jobs,
    /// each one's outcome (the failure for every job if the group could not commit), and whether
    /// the group committed.
    fn commit(self, journal: &mut Journal) -> (Vec<InsertJob>, Vec<anyhow::Result<usize>>, bool) {
        let Self { conn, jobs, mut done, broken, .. } = self;
        if let Some(why) = broken {
            let results = fail_each(&jobs, &why);
            return (jobs, results, false);
        }
        if conn.is_autocommit() {
            // A failure such as a full disk rolled the whole transaction back, not only its
            // statement: nothing of the group is stored, for the reason of the job that failed.
            let why = match done.iter().find_map(|stored| stored.result.as_ref().err()) {
                Some(e) => crate::store::outage::again(e),
                None => anyhow::anyhow!("the transaction of the events was rolled back"),
            };
            let results = fail_each(&jobs, &why);
            return (jobs, results, false);
        }
        let mut volume = VolumeTally::default();
        let quality: Vec<(i64, QualityRows)> = (jobs.iter().zip(&mut done))
            .filter(|(_, stored)| stored.result.is_ok())
            .filter_map(|(job, stored)| {
                volume.merge(std::mem::take(&mut stored.volume));
                let rows = stored.quality.take().or_else(|| stored.held.as_mut()?.quality.take())?;
                Some((job.project_id, rows))
            })
            .collect();
        let outcome = (volume.write(conn))
            .map_err(|e| e.context("cannot count the events in their hourly volumes"))
            .and_then(|()| journal.append(conn, quality).map_err(|e| e.context("cannot record the data quality of the events")))
            .and_then(|()| run(conn, "COMMIT").map_err(|e| anyhow::Error::from(e).context("cannot commit the events")));
        match outcome {
            Ok(()) => {
                journal.committed();
                let results = done.into_iter().map(|stored| stored.result).collect();
                (jobs, results, true)
            }
            Err(why) => {
                // The journal counted findings that were not committed: forget them all.
                journal.forget();
                // A failed COMMIT (a full disk) may have rolled the transaction back already:
                // a ROLLBACK then fails with "no transaction is active", which said nothing.
                if !conn.is_autocommit() {
                    if let Err(e) = run(conn, "ROLLBACK") {
                        tracing::error!("cannot roll back a failed group commit: {e}");
                    }
                }
                let results = fail_each(&jobs, &why);
                (jobs, results, false)
            }
        }
    }
}

impl Stored {
    fn failed(e: anyhow::Error) -> Self {
        Self { result: Err(e), volume: VolumeTally::default(), held: None, quality: None }
    }

    /// A ready job's parts stored in a savepoint of their own: a failure rolls back this job only.
    fn from_savepoint(conn: &mut Connection, parts: ReadyParts, target: (i64, i64)) -> Self {
        let stored = conn.savepoint().map_err(anyhow::Error::from).and_then(|sp| {
            let stored = store_parts(&sp, &parts, target)?;
            sp.commit()?;
            Ok(stored)
        });
        match stored {
            Ok((n, volume)) => Stored { result: Ok(n), volume, held: Some(parts), quality: None },
            Err(e) => Stored { held: Some(parts), ..Stored::failed(e) },
        }
    }
}

/// Stores a ready job's batches in the current transaction; returns its row count and its new
/// events.
fn store_parts(conn: &Connection, parts: &ReadyParts, (project_id, now_s): (i64, i64)) -> anyhow::Result<(usize, VolumeTally)> {
    let mut volume = VolumeTally::default();
    for batch in &parts.batches {
        upsert_rows_tallied(conn, project_id, batch, now_s, &mut volume)?;
    }
    Ok((parts.rows(), volume))
}

/// Stores `jobs` as one group, committed with the connection's own `synchronous`: the event
/// writer's work on a group, for tests.
#[cfg(test)]
pub(super) fn write_group(conn: &mut Connection, jobs: impl IntoIterator<Item = InsertJob>, journal: &mut Journal) -> Vec<anyhow::Result<usize>> {
    let mut group = Group::begin(conn);
    for job in jobs {
        group.absorb(job);
    }
    group.commit(journal).1
}
