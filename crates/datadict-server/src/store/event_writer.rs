//! The event writer: a thread that stores the events of concurrent import requests in group
//! commits, and the [`EventSink`] through which a request hands it its events in parts, then its
//! data-quality rows ([`QualityRows`]), which the group's transaction writes after the events, so
//! that a request costs one commit. The thread and the sink are the same on both backends; each
//! backend writes a group its own way (`sqlite::event_writer`, `pg::events`), and the group's
//! quality rows with it: PostgreSQL with [`record_quality`](super::quality::record_quality),
//! SQLite into its quality journal (`sqlite::quality_journal`). On SQLite, a syncer thread makes
//! the groups durable and answers their requests ([`spawn_syncer`]).

use super::events::EventBatch;
use super::quality::QualityRows;
use super::Store;
use anyhow::Context;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, RecvError, Sender, TryRecvError};
use std::sync::Arc;

impl Store {
    /// A sink for the events of one request (or one loaded batch), to be stored in one
    /// transaction by the event writer: see [`EventSink`].
    pub fn event_sink(&self, project_id: i64, now_s: i64) -> EventSink {
        EventSink { writer: self.events.clone(), project_id, now_s, parts: None, answer: None, held: None }
    }

    /// A sink for a request checked all at once on its own task (a small body): its parts are
    /// held in the sink and handed to the writer with its job on [`EventSink::close`], so the
    /// writer never waits for them, and a group may take more such jobs than `JOBS_PER_GROUP`
    /// (see `READY_JOBS_PER_GROUP`).
    pub fn ready_event_sink(&self, project_id: i64, now_s: i64) -> EventSink {
        EventSink { held: Some(ReadyParts::default()), ..self.event_sink(project_id, now_s) }
    }
}

/// The way to the event-writer thread: its queue of jobs, and how many jobs it has been sent and
/// not yet answered.
#[derive(Debug, Clone)]
pub(crate) struct EventWriter {
    jobs: Sender<ToWriter>,
    in_flight: Arc<AtomicUsize>,
    /// Tells the writer to stop once the last clone is dropped (its own thread and the syncer's
    /// hold senders too, so the channel alone would never close).
    _stop: Arc<StopOnDrop>,
}

/// What the event-writer thread receives. Nearly every message is a job, so a boxed job would
/// only add an allocation per request.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ToWriter {
    /// A request's job.
    Job(InsertJob),
    /// The syncer made the last group it was given durable (see [`spawn_syncer`]).
    Synced,
    /// The last handle to the writer is gone: store what was queued before, then end.
    Stop,
}

#[derive(Debug)]
struct StopOnDrop(Sender<ToWriter>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(ToWriter::Stop);
    }
}

impl EventWriter {
    /// A writer's handle and the ends its thread keeps: the queue it reads, a sender for its
    /// syncer, and the count of jobs not yet answered, which [`answer`] lowers.
    pub(crate) fn channel() -> (Self, Receiver<ToWriter>, Sender<ToWriter>, Arc<AtomicUsize>) {
        let (tx, rx) = channel();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let writer = Self { jobs: tx.clone(), in_flight: in_flight.clone(), _stop: Arc::new(StopOnDrop(tx.clone())) };
        (writer, rx, tx, in_flight)
    }
}

/// The events of one request on their way to the event writer, sent in parts as they are
/// prepared, so that the writer stores the first rows of a request while the next are still
/// being checked and hashed (with a single client, preparing and inserting then overlap on two cores instead
/// of following each other). The parts of a request are stored in one savepoint of one
/// transaction: all of them or none. [`EventSink::close`] gives a [`PendingInsert`] that answers
/// once that transaction is committed; a sink dropped without `close` (the request failed
/// half-way) has its parts rolled back.
#[derive(Debug)]
pub struct EventSink {
    writer: EventWriter,
    project_id: i64,
    now_s: i64,
    /// Open once the first part is sent (an empty request never reaches the writer).
    parts: Option<Sender<Part>>,
    answer: Option<tokio::sync::oneshot::Receiver<anyhow::Result<usize>>>,
    /// The parts of a ready sink ([`Store::ready_event_sink`]), handed over with its job on close.
    held: Option<ReadyParts>,
}

/// What an [`EventSink`] sends to the writer for its job.
#[derive(Debug)]
pub(crate) enum Part {
    Rows(EventBatch),
    /// The request's data-quality rows, sent once, after its last rows.
    Quality(QualityRows),
    /// Every part has been sent: the job may be committed.
    End,
}

fn stopped() -> anyhow::Error {
    anyhow::anyhow!("the event writer has stopped")
}

impl EventSink {
    /// Sends rows to be stored (an empty batch is not sent).
    pub fn send(&mut self, batch: EventBatch) -> anyhow::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        if let Some(held) = &mut self.held {
            held.batches.push(batch);
            return Ok(());
        }
        // A closed channel: the writer ended this job early (a store failure, such as a full disk,
        // which is then the job's answer) or has stopped (the answer then says so). Either way
        // `close` hands back that answer, which says more than this send could.
        let _ = self.parts()?.send(Part::Rows(batch));
        Ok(())
    }

    /// Sends the request's data-quality rows, to be written in the transaction of its events
    /// (nothing is sent for none). A request whose records were all refused still reaches the
    /// writer this way, so that its rejected records are recorded.
    pub fn send_quality(&mut self, rows: QualityRows) -> anyhow::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        if let Some(held) = &mut self.held {
            held.quality = Some(rows);
            return Ok(());
        }
        // As in `send`: the job's answer says why the writer no longer takes its parts.
        let _ = self.parts()?.send(Part::Quality(rows));
        Ok(())
    }

    /// Queues this sink's job with its parts: a channel for a streaming sink, the held parts for
    /// a ready one; the answer comes back on `self.answer`.
    fn queue(&mut self, parts: JobParts) -> anyhow::Result<()> {
        let (done, answer) = tokio::sync::oneshot::channel();
        let job = InsertJob { project_id: self.project_id, parts, now_s: self.now_s, done };
        self.writer.in_flight.fetch_add(1, Ordering::Relaxed);
        if self.writer.jobs.send(ToWriter::Job(job)).is_err() {
            self.writer.in_flight.fetch_sub(1, Ordering::Relaxed);
            return Err(stopped());
        }
        self.answer = Some(answer);
        Ok(())
    }

    /// The way to a streaming sink's job, which the first part opens.
    fn parts(&mut self) -> anyhow::Result<&Sender<Part>> {
        if self.parts.is_none() {
            let (parts, rx) = channel();
            self.queue(JobParts::Streaming(rx))?;
            self.parts = Some(parts);
        }
        self.parts.as_ref().ok_or_else(stopped)
    }

    /// Whether the event writer has no request in hand or waiting. A request that checks its
    /// records one part at a time makes the writer wait for each part; that overlaps checking with
    /// inserting when the writer has nothing else to do, and holds up other requests otherwise.
    pub fn writer_is_idle(&self) -> bool {
        self.writer.in_flight.load(Ordering::Relaxed) == 0
    }

    /// Closes the sink without waiting: the rows sent are committed by the writer, and the
    /// returned [`PendingInsert`] resolves to their count once they are.
    pub fn close(mut self) -> PendingInsert {
        if let Some(held) = self.held.take().filter(|held| !held.is_empty()) {
            if let Err(e) = self.queue(JobParts::Ready(Some(held))) {
                // The writer has gone: the answer says so rather than counting nothing stored.
                let (done, answer) = tokio::sync::oneshot::channel();
                let _ = done.send(Err(e));
                return PendingInsert { answer: Some(answer) };
            }
            return PendingInsert { answer: self.answer.take() };
        }
        if let Some(parts) = self.parts.take() {
            // A send error means the writer has gone; the answer channel then says so.
            let _ = parts.send(Part::End);
        }
        PendingInsert { answer: self.answer.take() }
    }
}

/// The answer of a closed [`EventSink`].
#[derive(Debug)]
pub struct PendingInsert {
    answer: Option<tokio::sync::oneshot::Receiver<anyhow::Result<usize>>>,
}

impl PendingInsert {
    /// Waits until the rows are committed (at once when none were sent).
    pub async fn wait(self) -> anyhow::Result<usize> {
        match self.answer {
            None => Ok(0),
            Some(answer) => answer.await.context("the event writer has stopped")?,
        }
    }
}

/// The rows of one sink, as the event writer receives them, and where its answer goes.
pub(crate) struct InsertJob {
    pub(crate) project_id: i64,
    pub(crate) parts: JobParts,
    pub(crate) now_s: i64,
    pub(crate) done: tokio::sync::oneshot::Sender<anyhow::Result<usize>>,
}

/// How a job's parts reach the writer.
pub(crate) enum JobParts {
    /// Over a channel, as the request prepares them: storing the job may wait for the request.
    Streaming(Receiver<Part>),
    /// All of them with the job (a ready sink): storing it never waits for the request. Taken
    /// once, by [`InsertJob::drain`] or [`InsertJob::take_ready`].
    Ready(Option<ReadyParts>),
}

/// What a job sent once drained: the number of rows stored, and its quality rows.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    pub(crate) rows: usize,
    pub(crate) quality: Option<QualityRows>,
}

impl InsertJob {
    /// Whether every part came with the job (a ready sink).
    pub(crate) fn ready(&self) -> bool {
        matches!(self.parts, JobParts::Ready(_))
    }

    /// Receives the request's parts until its `End`, handing each batch to `store`; returns the
    /// number of rows stored and the quality rows, which the caller writes with the group's. A
    /// request that ends without `End` is an error, so the caller's savepoint rolls back.
    pub(crate) fn drain(&mut self, mut store: impl FnMut(&EventBatch) -> anyhow::Result<()>) -> anyhow::Result<Drained> {
        let rx = match &mut self.parts {
            JobParts::Streaming(rx) => rx,
            JobParts::Ready(_) => {
                let parts = self.take_ready()?;
                for batch in &parts.batches {
                    store(batch)?;
                }
                return Ok(Drained { rows: parts.rows(), quality: parts.quality });
            }
        };
        let mut drained = Drained::default();
        loop {
            match rx.recv() {
                Ok(Part::Rows(batch)) => {
                    store(&batch)?;
                    drained.rows += batch.len();
                }
                Ok(Part::Quality(rows)) => drained.quality = Some(rows),
                Ok(Part::End) => return Ok(drained),
                Err(_) => anyhow::bail!("the request ended before all its events were sent"),
            }
        }
    }

    /// The parts of a ready job: held by the caller, a group can be stored a second time (see
    /// `sqlite::event_writer`). A streaming job, or one already taken, is an error.
    pub(crate) fn take_ready(&mut self) -> anyhow::Result<ReadyParts> {
        match &mut self.parts {
            JobParts::Ready(parts) => parts.take().context("the parts of a request were taken twice"),
            JobParts::Streaming(_) => anyhow::bail!("a request still sending its events is not ready"),
        }
    }
}

/// The parts of a ready job ([`JobParts::Ready`]).
#[derive(Debug, Default)]
pub(crate) struct ReadyParts {
    pub(crate) batches: Vec<EventBatch>,
    pub(crate) quality: Option<QualityRows>,
}

impl ReadyParts {
    pub(crate) fn rows(&self) -> usize {
        self.batches.iter().map(EventBatch::len).sum()
    }

    fn is_empty(&self) -> bool {
        self.batches.is_empty() && self.quality.is_none()
    }
}

/// At most this many jobs (import requests) that stream their parts go into one group commit: a
/// group holds the writer, and the first request of a group waits for the last.
const JOBS_PER_GROUP: usize = 8;

/// At most this many jobs in all go into one group, when the others are ready jobs (small
/// requests whose parts were all queued with the job, see [`Store::ready_event_sink`]): each
/// costs the writer a few statements and never makes it wait, and every request a group takes
/// shares its one fsync. Tracking requests are such jobs: with 8 per group, 16 clients could
/// never have more than 8 requests per fsync.
const READY_JOBS_PER_GROUP: usize = 64;

/// The event writer of PostgreSQL: a thread that takes the batches queued by concurrent requests
/// and stores all those waiting in one transaction with `write` (the backend's group commit), so
/// that several requests share one commit and one fsync (and the index pages they all touch are
/// written once). Nobody waits for a group to fill: a lone request is committed at once. `after`
/// runs once the group's requests have their answers. The thread ends when the last clone of the
/// store is dropped. SQLite's writer (`sqlite::event_writer`) takes its groups the same way
/// ([`Gather`]) and pipelines its commits with a syncer ([`spawn_syncer`]).
pub(crate) fn spawn_event_writer(
    mut write: impl FnMut(&mut [InsertJob]) -> Vec<anyhow::Result<usize>> + Send + 'static,
    mut after: impl FnMut() + Send + 'static,
) -> anyhow::Result<EventWriter> {
    let (writer, rx, _, in_flight) = EventWriter::channel();
    std::thread::Builder::new().name("datadict-events".into()).spawn(move || {
        let mut group = Gather::default();
        while let Some(first) = group.first(&rx) {
            let mut jobs = vec![first];
            while let Some(job) = group.more(&rx, &jobs) {
                jobs.push(job);
            }
            let results = write(&mut jobs);
            answer(jobs.into_iter().map(|job| job.done).zip(results).collect(), &in_flight);
            after();
        }
    })?;
    Ok(writer)
}

/// Takes the jobs of a group from the writer's queue: the first one, waiting for it, then those
/// already waiting, up to the limits of a group ([`JOBS_PER_GROUP`], [`READY_JOBS_PER_GROUP`]).
/// Jobs read past a group's limits wait in a backlog for the next group.
#[derive(Default)]
pub(crate) struct Gather {
    backlog: VecDeque<InsertJob>,
    stopping: bool,
    /// The last group given to the syncer is not yet durable.
    pub(crate) syncing: bool,
}

impl Gather {
    fn receive(&mut self, message: Result<ToWriter, RecvError>) {
        match message {
            Ok(ToWriter::Job(job)) => self.backlog.push_back(job),
            Ok(ToWriter::Synced) => self.syncing = false,
            Ok(ToWriter::Stop) => self.stopping = true,
            // Every sender is gone: no sync will be reported either.
            Err(RecvError) => (self.stopping, self.syncing) = (true, false),
        }
    }

    /// The first job of the next group, waiting for it; `None` once the writer is to stop and
    /// every job queued before has been taken.
    pub(crate) fn first(&mut self, rx: &Receiver<ToWriter>) -> Option<InsertJob> {
        loop {
            if let Some(job) = self.backlog.pop_front() {
                return Some(job);
            }
            if self.stopping {
                return None;
            }
            self.receive(rx.recv());
        }
    }

    /// One more job for the group of `jobs`, if one is waiting and the group has room for it.
    pub(crate) fn more(&mut self, rx: &Receiver<ToWriter>, jobs: &[InsertJob]) -> Option<InsertJob> {
        loop {
            if let Some(job) = self.backlog.front() {
                return has_room(jobs, job).then(|| self.backlog.pop_front()).flatten();
            }
            match rx.try_recv() {
                Ok(message) => self.receive(Ok(message)),
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => self.receive(Err(RecvError)),
            }
            if self.stopping && self.backlog.is_empty() {
                return None;
            }
        }
    }

    /// [`Gather::more`], but while the syncer makes the last group durable it waits for the next
    /// job rather than answer `None`: the group stays open, taking the jobs that arrive, until
    /// the syncer is done (or the group is full and it is done), when it may be committed.
    pub(crate) fn while_syncing(&mut self, rx: &Receiver<ToWriter>, jobs: &[InsertJob]) -> Option<InsertJob> {
        loop {
            if let Some(job) = self.more(rx, jobs) {
                return Some(job);
            }
            if !self.syncing {
                return None;
            }
            self.receive(rx.recv());
        }
    }
}

/// Whether a group of `jobs` can take `job` too.
fn has_room(jobs: &[InsertJob], job: &InsertJob) -> bool {
    let streaming = jobs.iter().filter(|j| !j.ready()).count() + usize::from(!job.ready());
    streaming <= JOBS_PER_GROUP && jobs.len() < READY_JOBS_PER_GROUP
}

/// A job's answer channel and its outcome.
pub(crate) type Answer = (tokio::sync::oneshot::Sender<anyhow::Result<usize>>, anyhow::Result<usize>);

/// Sends each job its outcome and counts it answered.
pub(crate) fn answer(answers: Vec<Answer>, in_flight: &AtomicUsize) {
    for (done, result) in answers {
        // The request may have gone (its client disconnected); its rows are stored anyway.
        let _ = done.send(result);
        in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The syncer: a thread that makes committed groups durable with `sync` (SQLite's WAL fsync),
/// answers their jobs, then tells the writer (`wake`), which meanwhile stores the next group.
/// Returns where the writer sends a committed group's answers. A failed sync answers each job
/// with a [`WritesRefused`] error: its rows may be stored, but they were not made durable.
pub(crate) fn spawn_syncer(
    mut sync: impl FnMut() -> anyhow::Result<()> + Send + 'static,
    in_flight: Arc<AtomicUsize>,
    wake: Sender<ToWriter>,
) -> anyhow::Result<Sender<Vec<Answer>>> {
    let (tx, rx) = channel::<Vec<Answer>>();
    std::thread::Builder::new().name("datadict-sync".into()).spawn(move || {
        while let Ok(answers) = rx.recv() {
            match sync() {
                Ok(()) => answer(answers, &in_flight),
                Err(e) => {
                    let why = format!("the events were written but may not be on disk: {e:#}");
                    tracing::error!("{why}");
                    let refused = answers.into_iter().map(|(done, _)| (done, Err(anyhow::Error::new(WritesRefused(why.clone())))));
                    answer(refused.collect(), &in_flight);
                }
            }
            if wake.send(ToWriter::Synced).is_err() {
                return;
            }
        }
    })?;
    Ok(tx)
}

/// A write refused because the store can no longer promise that what it acknowledges is on disk:
/// an fsync of its log failed. After a failed fsync the kernel may have dropped the pages it
/// could not write, and a later fsync can succeed without them, so the store takes no more
/// writes until the server is restarted (reads go on). The API answers it 503 with the message.
#[derive(Debug)]
pub struct WritesRefused(pub String);

impl WritesRefused {
    /// The refusal in `err` or in any error it wraps.
    pub fn in_chain(err: &anyhow::Error) -> Option<&WritesRefused> {
        err.chain().find_map(|e| e.downcast_ref::<WritesRefused>())
    }
}

impl std::fmt::Display for WritesRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WritesRefused {}

/// The outcome of a group in which every job failed for the same reason.
/// An outage (a full disk, an unreachable database) stays one for each job (see `outage::again`).
pub(crate) fn fail_each(jobs: &[InsertJob], why: &anyhow::Error) -> Vec<anyhow::Result<usize>> {
    jobs.iter().map(|_| Err(super::outage::again(why))).collect()
}

