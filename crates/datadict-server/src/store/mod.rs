//! Storage: every SQL statement of the server lives behind this module's boundary, so that a
//! server database can later replace the embedded SQLite default without touching handlers.
//! `jobs.rs` holds the statements of warehouse imports, their runs and migration jobs.

pub mod jobs;

use anyhow::Context;
use datadict_core::{EntityType, Schema, SchemaEntry};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};

/// A project's role for a service account (FACTS.md: writes need owner or admin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Owner,
    Admin,
    Consumer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Admin => "admin",
            Self::Consumer => "consumer",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "owner" => Some(Self::Owner),
            "admin" => Some(Self::Admin),
            "consumer" => Some(Self::Consumer),
            _ => None,
        }
    }

    pub fn can_write(self) -> bool {
        matches!(self, Self::Owner | Self::Admin)
    }
}

/// A stored service account: its id and the hash of its secret (the secret itself is never kept).
#[derive(Debug, Clone)]
pub struct ServiceAccount {
    pub id: i64,
    pub username: String,
    pub secret_hash: String,
}

/// The embedded SQLite store. Cloning is cheap. Writes go through one writer connection (SQLite
/// allows one writer at a time anyway, and a single writer keeps every import batch in one
/// transaction without lock contention); reads go through a small pool of reader connections,
/// which WAL mode lets run beside the writer. Every call runs on tokio's blocking pool so that
/// SQLite's synchronous I/O never stalls the reactor.
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    readers: Arc<Vec<Mutex<Connection>>>,
    next_reader: Arc<AtomicUsize>,
    /// The checkpointer's wake-up and the commit count (absent in memory).
    checkpoint: Option<Arc<Checkpoint>>,
    /// The event writer's queue (see [`Store::event_sink`]).
    events: EventWriter,
}

/// The way to the event-writer thread: its queue of jobs, and how many jobs it has been sent and
/// not yet answered.
#[derive(Debug, Clone)]
struct EventWriter {
    jobs: Sender<InsertJob>,
    in_flight: Arc<AtomicUsize>,
}

/// What the writer needs to keep the WAL short (see [`after_write`]).
#[derive(Debug)]
struct Checkpoint {
    /// Wakes the checkpointer thread.
    wake: SyncSender<()>,
    /// Commits so far.
    writes: AtomicU32,
}

/// How many read connections a file-backed store opens.
const READERS: usize = 4;

const MIGRATION: &str = "
CREATE TABLE IF NOT EXISTS projects (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL DEFAULT (unixepoch())
);
CREATE TABLE IF NOT EXISTS service_accounts (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    secret_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (unixepoch())
);
CREATE TABLE IF NOT EXISTS roles (
    service_account_id INTEGER NOT NULL REFERENCES service_accounts(id) ON DELETE CASCADE,
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'consumer')),
    PRIMARY KEY (service_account_id, project_id)
);
CREATE TABLE IF NOT EXISTS schemas (
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    entity_type TEXT NOT NULL CHECK (entity_type IN ('event', 'profile')),
    name TEXT NOT NULL,
    schema_json TEXT NOT NULL,
    updated_at INTEGER NOT NULL DEFAULT (unixepoch()),
    PRIMARY KEY (project_id, entity_type, name)
);
CREATE INDEX IF NOT EXISTS projects_by_token ON projects (token_hash);
-- One row per distinct (event, time, distinct_id, $insert_id): `dedup` is a 128-bit digest of
-- that key (see `dedup_key`); a second copy of an event replaces the first (FACTS.md: the latest
-- ingested copy wins). The unique key leads with `time_ms` although the digest already covers it:
-- events arrive roughly in time order, so a batch's inserts land on a few neighbouring pages of
-- that index instead of on every page of it (a key led by the digest alone is random, and each
-- commit then wrote nearly the whole index to the WAL again). The same index serves the read
-- API's time ordering and ranges, so there is no separate time index. Databases created before
-- keep their older key `(project_id, dedup)` and index `events_by_time`; `insert_events` works
-- with either shape.
CREATE TABLE IF NOT EXISTS events (
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    dedup BLOB NOT NULL,
    event TEXT NOT NULL,
    time_ms INTEGER NOT NULL,
    distinct_id TEXT NOT NULL,
    insert_id TEXT NOT NULL,
    record TEXT NOT NULL,
    ingested_at INTEGER NOT NULL,
    UNIQUE (project_id, time_ms, dedup)
);
-- Events per (project, event name, hour of `time_ms`): what the dictionary's 30-day volumes are
-- read from. The import path adds each batch's new rows here in one statement per name and hour
-- (see `add_volume`). It replaced an index on (project_id, event, time_ms), which cost more than
-- half of each inserted row's CPU (its pages are written in as many places as there are event
-- names), and which a volume query still had to read in full. Reads by event name scan the time
-- key, as reads by distinct_id and property always did.
CREATE TABLE IF NOT EXISTS event_volume (
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    event TEXT NOT NULL,
    hour INTEGER NOT NULL,
    count INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    PRIMARY KEY (project_id, event, hour)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS profiles (
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    distinct_id TEXT NOT NULL,
    properties TEXT NOT NULL,
    updated_at INTEGER NOT NULL DEFAULT (unixepoch()),
    PRIMARY KEY (project_id, distinct_id)
) WITHOUT ROWID;
";

/// When a commit counts as done (SQLite's `synchronous` in WAL mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is fsynced before it returns: a write acknowledged to a client survives a
    /// power cut as well as a crash or `kill -9` of the server. The default.
    #[default]
    Full,
    /// Commits are written to the WAL file but fsynced only at checkpoints: an acknowledged write
    /// survives a crash or `kill -9` of the server (the operating system still has it), not a
    /// power cut or a kernel crash, which may lose the last commits (never corrupt the database).
    Normal,
}

impl Synchronous {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Normal => "normal",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "full" => Some(Self::Full),
            "normal" => Some(Self::Normal),
            _ => None,
        }
    }
}

impl Store {
    /// Opens (creating if needed) the database file at `path`, in WAL mode with foreign keys on and
    /// `synchronous=FULL`.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        Self::open_with(path, Synchronous::Full)
    }

    /// [`Store::open`] with a choice of [`Synchronous`].
    pub fn open_with(path: &Path, synchronous: Synchronous) -> anyhow::Result<Self> {
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open the database file {}", path.display()))?;
        let writer = Self::init_writer(conn, synchronous).with_context(|| format!("cannot use the database file {}", path.display()))?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let conn = Connection::open(path)
                .with_context(|| format!("cannot open the database file {}", path.display()))?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            conn.pragma_update(None, "foreign_keys", "ON")?;
            readers.push(Mutex::new(conn));
        }
        let checkpoint = Some(Arc::new(Checkpoint { wake: spawn_checkpointer(path)?, writes: AtomicU32::new(0) }));
        let conn = Arc::new(Mutex::new(writer));
        let events = spawn_event_writer(conn.clone(), checkpoint.clone())?;
        Ok(Self { conn, readers: Arc::new(readers), next_reader: Arc::default(), checkpoint, events })
    }

    /// An in-memory store, for tools that need no persistence (reads share the one connection).
    pub fn open_in_memory() -> anyhow::Result<Self> {
        let conn = Arc::new(Mutex::new(Self::init_writer(Connection::open_in_memory()?, Synchronous::Full)?));
        let events = spawn_event_writer(conn.clone(), None)?;
        Ok(Self { conn, readers: Arc::default(), next_reader: Arc::default(), checkpoint: None, events })
    }

    fn init_writer(mut conn: Connection, synchronous: Synchronous) -> anyhow::Result<Connection> {
        // 16 KiB pages for a new database (a no-op for an existing one): fewer B-tree pages per
        // ~500-byte event row; measured about 13% less CPU per inserted row than 4 KiB.
        conn.pragma_update(None, "page_size", 16384)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL by default: in WAL mode every commit is fsynced before it returns, so a write
        // acknowledged to a client is on disk before the answer leaves, and survives a power cut
        // as well as a `kill -9`. (NORMAL, the server's `--sqlite-synchronous normal`, survives
        // `kill -9` too, but not a power cut.) The cost is one fsync per commit; the event writer
        // commits the import requests waiting together at once, so it is paid per 2,000 to
        // 16,000 events.
        conn.pragma_update(None, "synchronous", synchronous.as_str())?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Larger pages of cache for the bulk inserts of the import path.
        conn.pragma_update(None, "cache_size", -65536)?;
        // Checkpoints run on their own thread (see `spawn_checkpointer`), not inside the commits
        // of import requests: measured on the bare insert, an automatic checkpoint every 1,000
        // pages halved the insert rate.
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let table_exists = |name: &str| -> rusqlite::Result<bool> {
            conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| r.get::<_, i64>(0))
                .map(|n| n > 0)
        };
        let had_events = table_exists("events")?;
        let had_volume = table_exists("event_volume")?;
        // Rolled back on drop if any step fails.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(MIGRATION).context("cannot create the database tables")?;
        tx.execute_batch(jobs::TABLES).context("cannot create the tables of warehouse imports and migrations")?;
        if had_events && !had_volume {
            // A database from before `event_volume`: count what it holds, once, and drop the
            // index the table replaces.
            tx.execute(
                "INSERT INTO event_volume (project_id, event, hour, count, last_ms)
                 SELECT project_id, event, time_ms / ?1, count(*), max(time_ms) FROM events GROUP BY 1, 2, 3",
                [HOUR_MS],
            )
            .context("cannot count the stored events per name and hour")?;
        }
        tx.execute_batch("DROP INDEX IF EXISTS events_by_name")?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > DEDUP_KEY_VERSION {
            anyhow::bail!(
                "the database was written by a newer datadict (data format {version}; this one reads up to {DEDUP_KEY_VERSION}); \
                 run that newer version, or start this one with another --data-dir"
            );
        }
        if version < DEDUP_KEY_VERSION {
            if had_events {
                let started = std::time::Instant::now();
                let rows = rekey_events(&tx).context("cannot re-key the stored events for de-duplication")?;
                tracing::info!("re-keyed {rows} stored events for de-duplication (once, for the new digest) in {:.1?}", started.elapsed());
            }
            tx.pragma_update(None, "user_version", DEDUP_KEY_VERSION)?;
        }
        tx.commit()?;
        Ok(conn)
    }

    /// Runs `f` with the writer connection on the blocking pool.
    pub async fn call<T, F>(&self, f: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> anyhow::Result<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        let checkpoint = self.checkpoint.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = lock(&conn)?;
            set_foreign_keys(&guard, true)?;
            let out = f(&mut guard);
            after_write(&guard, checkpoint.as_deref());
            out
        })
        .await
        .context("a database task failed")?
    }

    /// Runs a read-only `f` with one of the reader connections on the blocking pool (with the
    /// writer when the store has no readers, as in memory).
    pub async fn read<T, F>(&self, f: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> anyhow::Result<T> + Send + 'static,
    {
        if self.readers.is_empty() {
            return self.call(move |conn| f(conn)).await;
        }
        let readers = self.readers.clone();
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        tokio::task::spawn_blocking(move || {
            // Take the first free reader from a rotating start, and wait on one only if all are busy.
            let n = readers.len();
            for i in 0..n {
                if let Ok(guard) = readers[(start + i) % n].try_lock() {
                    return f(&guard);
                }
            }
            let guard = lock(&readers[start % n])?;
            f(&guard)
        })
        .await
        .context("a database task failed")?
    }

    /// A sink for the events of one request (or one loaded batch), to be stored in one
    /// transaction by the event writer: see [`EventSink`].
    pub fn event_sink(&self, project_id: i64, now_s: i64) -> EventSink {
        EventSink { writer: self.events.clone(), project_id, now_s, parts: None, answer: None }
    }

    /// Stores a batch of events on the current thread as the event writer stores a group: in one
    /// transaction on the writer connection, with the foreign-key checks left off (see
    /// [`set_foreign_keys`]), then a checkpoint if one is due. The bench's bare insert, the
    /// ceiling the server is measured against.
    pub fn write_events(&self, project_id: i64, batch: &EventBatch, now_s: i64) -> anyhow::Result<usize> {
        let mut guard = lock(&self.conn)?;
        set_foreign_keys(&guard, false)?;
        let tx = guard.transaction()?;
        upsert_rows(&tx, project_id, batch, now_s)?;
        tx.commit()?;
        after_write(&guard, self.checkpoint.as_deref());
        Ok(batch.len())
    }

    /// Runs `f` with the writer connection on the current thread (for start-up and the admin CLI).
    pub fn call_sync<T>(&self, f: impl FnOnce(&mut Connection) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let mut guard = lock(&self.conn)?;
        set_foreign_keys(&guard, true)?;
        let out = f(&mut guard);
        after_write(&guard, self.checkpoint.as_deref());
        out
    }
}

/// Takes a connection's lock; a panic while it was held (which poisons it) becomes an error.
fn lock(conn: &Mutex<Connection>) -> anyhow::Result<MutexGuard<'_, Connection>> {
    conn.lock().map_err(|_| anyhow::anyhow!("the database lock is poisoned"))
}

/// Commits between two checkpoints by the writer itself (see [`after_write`]).
const WRITES_PER_WAL_RESTART: u32 = 16;

/// Called with the writer connection after each commit (outside any transaction): wakes the
/// checkpointer and, every few commits, runs a passive checkpoint on the writer connection itself.
/// The checkpointer thread copies most of the WAL concurrently, but under a steady stream of
/// commits it never catches up with the last frames, so the WAL never starts over: measured, it
/// grew to the size of everything imported (300 MB for 400,000 events), and the server's CPU per
/// event grew with it (new file blocks for every write, longer WAL-index searches). Between two
/// transactions of the only writer the checkpoint reaches the end of the WAL (copying only what
/// the checkpointer has not), so the next transaction writes the WAL from its beginning again
/// (50 MB at most in the same run).
fn after_write(conn: &Connection, checkpoint: Option<&Checkpoint>) {
    let Some(checkpoint) = checkpoint else { return };
    // Full: a wake-up is already pending, which is enough; disconnected: the checkpointer is gone
    // (shutdown).
    let _ = checkpoint.wake.try_send(());
    if checkpoint.writes.fetch_add(1, Ordering::Relaxed) % WRITES_PER_WAL_RESTART == WRITES_PER_WAL_RESTART - 1 {
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!("a WAL checkpoint failed: {e}");
        }
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
}

/// What an [`EventSink`] sends to the writer for its job.
#[derive(Debug)]
enum Part {
    Rows(EventBatch),
    /// Every part has been sent: the job may be committed.
    End,
}

impl EventSink {
    /// Sends rows to be stored (an empty batch is not sent).
    pub fn send(&mut self, batch: EventBatch) -> anyhow::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let stopped = || anyhow::anyhow!("the event writer has stopped");
        let parts = match &self.parts {
            Some(parts) => parts,
            None => {
                let (parts, rx) = channel();
                let (done, answer) = tokio::sync::oneshot::channel();
                let job = InsertJob { project_id: self.project_id, parts: rx, now_s: self.now_s, done };
                self.writer.in_flight.fetch_add(1, Ordering::Relaxed);
                if self.writer.jobs.send(job).is_err() {
                    self.writer.in_flight.fetch_sub(1, Ordering::Relaxed);
                    return Err(stopped());
                }
                self.answer = Some(answer);
                self.parts.insert(parts)
            }
        };
        parts.send(Part::Rows(batch)).map_err(|_| stopped())
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
struct InsertJob {
    project_id: i64,
    parts: Receiver<Part>,
    now_s: i64,
    done: tokio::sync::oneshot::Sender<anyhow::Result<usize>>,
}

/// At most this many jobs (import requests) go into one group commit: a group holds the writer,
/// and the first request of a group waits for the last.
const JOBS_PER_GROUP: usize = 8;

/// The event writer: a thread that takes the batches queued by concurrent requests and stores
/// all those waiting in one transaction, so that several requests share one commit and one fsync
/// (and the index pages they all touch are written to the WAL once). Nobody waits for a group to
/// fill: a lone request is committed at once, exactly as before. The thread ends when the last
/// clone of the store is dropped.
fn spawn_event_writer(conn: Arc<Mutex<Connection>>, checkpoint: Option<Arc<Checkpoint>>) -> anyhow::Result<EventWriter> {
    let (tx, rx) = channel::<InsertJob>();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let answered = in_flight.clone();
    std::thread::Builder::new().name("datadict-events".into()).spawn(move || {
        while let Ok(first) = rx.recv() {
            let mut jobs = vec![first];
            while jobs.len() < JOBS_PER_GROUP {
                let Ok(job) = rx.try_recv() else { break };
                jobs.push(job);
            }
            let results = match lock(&conn) {
                Ok(mut guard) => write_group(&mut guard, &jobs),
                Err(e) => fail_each(&jobs, e),
            };
            for (job, result) in jobs.into_iter().zip(results) {
                // The request may have gone (its client disconnected); its rows are stored anyway.
                let _ = job.done.send(result);
                answered.fetch_sub(1, Ordering::Relaxed);
            }
            if let Ok(guard) = conn.lock() {
                after_write(&guard, checkpoint.as_deref());
            }
        }
    })?;
    Ok(EventWriter { jobs: tx, in_flight })
}

/// What the event writer does with a group: [`insert_group`] with the foreign-key checks off,
/// which it leaves off for the next group (see [`set_foreign_keys`]).
fn write_group(conn: &mut Connection, jobs: &[InsertJob]) -> Vec<anyhow::Result<usize>> {
    match set_foreign_keys(conn, false) {
        Ok(()) => insert_group(conn, jobs),
        Err(e) => fail_each(jobs, format!("{e:#}")),
    }
}

/// The outcome of a group in which every job failed for the same reason.
fn fail_each(jobs: &[InsertJob], why: impl std::fmt::Display) -> Vec<anyhow::Result<usize>> {
    jobs.iter().map(|_| Err(anyhow::anyhow!("{why}"))).collect()
}

/// Stores the jobs of a group in one transaction, each in a savepoint; returns each job's outcome.
fn insert_group(conn: &mut Connection, jobs: &[InsertJob]) -> Vec<anyhow::Result<usize>> {
    let mut tx = match conn.transaction() {
        Ok(tx) => tx,
        Err(e) => return fail_each(jobs, format!("cannot begin a transaction: {e}")),
    };
    let mut results = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut stored = || -> anyhow::Result<usize> {
            let sp = tx.savepoint()?;
            let mut rows = 0;
            loop {
                // Waits for the request's next part; the savepoint rolls back (on drop) if the
                // request ends without `End`.
                match job.parts.recv() {
                    Ok(Part::Rows(batch)) => {
                        upsert_rows(&sp, job.project_id, &batch, job.now_s)?;
                        rows += batch.len();
                    }
                    Ok(Part::End) => break,
                    Err(_) => anyhow::bail!("the request ended before all its events were sent"),
                }
            }
            sp.commit()?;
            Ok(rows)
        };
        results.push(stored());
    }
    match tx.commit() {
        Ok(()) => results,
        Err(e) => fail_each(jobs, format!("cannot commit the events: {e}")),
    }
}

/// A thread with its own connection that runs a passive checkpoint after every commit of the
/// writer (wake-ups that arrive while it works make one more), so that the copying of pages into
/// the database file happens beside the writer rather than in it. Passive checkpoints never
/// block the writer; the WAL restarts from the beginning once one has caught up (see
/// [`after_write`] for the writer's own). It used to checkpoint every 16th commit only, to copy
/// the pages every commit changes (the right edges of the table and of the dedup key) less
/// often; the writer's own checkpoint then came first and did nearly all the copying, a sixth of
/// its CPU (`perf`, 4 clients). After every commit, the event writer's CPU per 1,000,000 events
/// fell by 0.3–0.9 s and the checkpointer's rose by 0.4 s (BENCHMARKS.md). The thread ends, after
/// a last full checkpoint, when the last clone of the store is dropped.
fn spawn_checkpointer(path: &Path) -> anyhow::Result<SyncSender<()>> {
    let conn = Connection::open(path).with_context(|| format!("cannot open the database file {}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let (tx, rx) = sync_channel::<()>(1);
    std::thread::Builder::new().name("datadict-checkpoint".into()).spawn(move || {
        while rx.recv().is_ok() {
            if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                tracing::warn!("a WAL checkpoint failed: {e}");
            }
        }
        // A final full checkpoint leaves a small WAL behind on a clean stop.
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    })?;
    Ok(tx)
}

// Queries, as free functions over a connection so that they compose inside one transaction.

pub fn project_count(conn: &Connection) -> anyhow::Result<i64> {
    Ok(conn.query_row("SELECT count(*) FROM projects", [], |r| r.get(0))?)
}

pub fn project_exists(conn: &Connection, project_id: i64) -> anyhow::Result<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM projects WHERE id = ?1", [project_id], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn insert_project(conn: &Connection, name: &str, token_hash: &str) -> anyhow::Result<i64> {
    conn.execute("INSERT INTO projects (name, token_hash) VALUES (?1, ?2)", params![name, token_hash])?;
    Ok(conn.last_insert_rowid())
}

pub fn insert_service_account(conn: &Connection, username: &str, secret_hash: &str) -> anyhow::Result<i64> {
    conn.execute(
        "INSERT INTO service_accounts (username, secret_hash) VALUES (?1, ?2)",
        params![username, secret_hash],
    )
    .with_context(|| format!("cannot create service account `{username}` (is the name taken?)"))?;
    Ok(conn.last_insert_rowid())
}

pub fn service_account_by_name(conn: &Connection, username: &str) -> anyhow::Result<Option<ServiceAccount>> {
    Ok(conn
        .query_row(
            "SELECT id, username, secret_hash FROM service_accounts WHERE username = ?1",
            [username],
            |r| Ok(ServiceAccount { id: r.get(0)?, username: r.get(1)?, secret_hash: r.get(2)? }),
        )
        .optional()?)
}

pub fn set_secret_hash(conn: &Connection, account_id: i64, secret_hash: &str) -> anyhow::Result<()> {
    conn.execute("UPDATE service_accounts SET secret_hash = ?2 WHERE id = ?1", params![account_id, secret_hash])?;
    Ok(())
}

pub fn grant_role(conn: &Connection, account_id: i64, project_id: i64, role: Role) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO roles (service_account_id, project_id, role) VALUES (?1, ?2, ?3)
         ON CONFLICT (service_account_id, project_id) DO UPDATE SET role = excluded.role",
        params![account_id, project_id, role.as_str()],
    )?;
    Ok(())
}

pub fn revoke_role(conn: &Connection, account_id: i64, project_id: i64) -> anyhow::Result<bool> {
    Ok(conn.execute(
        "DELETE FROM roles WHERE service_account_id = ?1 AND project_id = ?2",
        params![account_id, project_id],
    )? > 0)
}

pub fn role_of(conn: &Connection, account_id: i64, project_id: i64) -> anyhow::Result<Option<Role>> {
    let role: Option<String> = conn
        .query_row(
            "SELECT role FROM roles WHERE service_account_id = ?1 AND project_id = ?2",
            params![account_id, project_id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(role.as_deref().and_then(Role::parse))
}

/// Inserts or replaces one schema as given (merging is the caller's rule).
pub fn put_schema(conn: &Connection, project_id: i64, entry: &SchemaEntry) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO schemas (project_id, entity_type, name, schema_json) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (project_id, entity_type, name)
         DO UPDATE SET schema_json = excluded.schema_json, updated_at = unixepoch()",
        params![project_id, entry.entity_type.as_str(), entry.name, serde_json::to_string(&entry.schema_json)?],
    )?;
    Ok(())
}

/// Lists the schemas of a project, optionally of one entity type and one name, ordered by type
/// then name.
pub fn list_schemas(
    conn: &Connection,
    project_id: i64,
    entity_type: Option<EntityType>,
    name: Option<&str>,
) -> anyhow::Result<Vec<SchemaEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT entity_type, name, schema_json FROM schemas
         WHERE project_id = ?1 AND (?2 IS NULL OR entity_type = ?2) AND (?3 IS NULL OR name = ?3)
         ORDER BY entity_type, name",
    )?;
    let rows = stmt.query_map(params![project_id, entity_type.map(EntityType::as_str), name], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (entity_type, name, json) = row?;
        let entity_type = entity_type.parse().map_err(anyhow::Error::from)?;
        let schema_json: Schema = serde_json::from_str(&json)
            .with_context(|| format!("stored schema of `{name}` is not readable"))?;
        out.push(SchemaEntry { entity_type, name, schema_json });
    }
    Ok(out)
}

/// The stored schema of one entity, if any.
pub fn get_schema(
    conn: &Connection,
    project_id: i64,
    entity_type: EntityType,
    name: &str,
) -> anyhow::Result<Option<Schema>> {
    let json: Option<String> = conn
        .query_row(
            "SELECT schema_json FROM schemas WHERE project_id = ?1 AND entity_type = ?2 AND name = ?3",
            params![project_id, entity_type.as_str(), name],
            |r| r.get(0),
        )
        .optional()?;
    json.map(|j| serde_json::from_str(&j).with_context(|| format!("stored schema of `{name}` is not readable")))
        .transpose()
}

/// Deletes the schemas of a project, optionally only of one entity type and one name; returns how
/// many were deleted.
pub fn delete_schemas(
    conn: &Connection,
    project_id: i64,
    entity_type: Option<EntityType>,
    name: Option<&str>,
) -> anyhow::Result<usize> {
    Ok(conn.execute(
        "DELETE FROM schemas
         WHERE project_id = ?1 AND (?2 IS NULL OR entity_type = ?2) AND (?3 IS NULL OR name = ?3)",
        params![project_id, entity_type.map(EntityType::as_str), name],
    )?)
}

/// The hash of project `project_id`'s token (the project exists: callers have authorized it).
pub fn project_token_hash(conn: &Connection, project_id: i64) -> anyhow::Result<String> {
    Ok(conn.query_row("SELECT token_hash FROM projects WHERE id = ?1", [project_id], |r| r.get(0))?)
}

/// The project whose token hashes to `token_hash`.
pub fn project_by_token_hash(conn: &Connection, token_hash: &str) -> anyhow::Result<Option<i64>> {
    Ok(conn
        .query_row("SELECT id FROM projects WHERE token_hash = ?1", [token_hash], |r| r.get(0))
        .optional()?)
}

/// Events ready to be stored: the fields of each event's dedup key, its digest and the record's
/// JSON text. The texts of every row live in one buffer, so that preparing a 2,000-event request
/// costs a couple of allocations instead of five per event (profiled: `malloc`/`free` and the
/// copies of small strings were about a tenth of the import's CPU). Rows are added with
/// [`EventBatch::push`], which computes the digest, so that hashing happens where the rows are
/// prepared (in parallel, on the blocking pool) and not while the writer is held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventBatch {
    text: String,
    rows: Vec<RowSpans>,
}

/// Where a row's texts are in [`EventBatch::text`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct RowSpans {
    event: std::ops::Range<usize>,
    distinct_id: std::ops::Range<usize>,
    insert_id: std::ops::Range<usize>,
    record: std::ops::Range<usize>,
    time_ms: i64,
    dedup: [u8; 16],
}

/// One row of an [`EventBatch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRow<'a> {
    pub event: &'a str,
    pub time_ms: i64,
    pub distinct_id: &'a str,
    pub insert_id: &'a str,
    /// The whole record (`{"event":...,"properties":{...}}`) as it will be served back.
    pub record: &'a str,
    /// `dedup_key` of the four key fields.
    pub dedup: [u8; 16],
}

impl EventBatch {
    /// The bytes of text the batch holds (every row's texts).
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// An empty batch with room for `rows` rows of about `bytes` bytes of text in all.
    pub fn with_capacity(rows: usize, bytes: usize) -> Self {
        Self { text: String::with_capacity(bytes), rows: Vec::with_capacity(rows) }
    }

    /// Adds an event, computing its dedup digest.
    pub fn push(&mut self, event: &str, time_ms: i64, distinct_id: &str, insert_id: &str, record: &str) {
        let dedup = dedup_key(event, time_ms, distinct_id, insert_id);
        let mut add = |s: &str| {
            let start = self.text.len();
            self.text.push_str(s);
            start..self.text.len()
        };
        let spans = RowSpans {
            event: add(event),
            distinct_id: add(distinct_id),
            insert_id: add(insert_id),
            record: add(record),
            time_ms,
            dedup,
        };
        self.rows.push(spans);
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn row(&self, r: &RowSpans) -> EventRow<'_> {
        EventRow {
            event: &self.text[r.event.clone()],
            time_ms: r.time_ms,
            distinct_id: &self.text[r.distinct_id.clone()],
            insert_id: &self.text[r.insert_id.clone()],
            record: &self.text[r.record.clone()],
            dedup: r.dedup,
        }
    }
}

/// The digest that identifies an event for de-duplication (FACTS.md: the key is
/// `(event, time, distinct_id, $insert_id)`): the first 128 bits of the BLAKE3 hash of the
/// length-prefixed fields. Length prefixes make every key a distinct input; 128 bits make an
/// accidental collision negligible, and a cryptographic hash makes a deliberate one (an event
/// crafted to replace another's stored copy) infeasible. BLAKE3, not SHA-256 as before
/// (`DEDUP_KEY_VERSION` 1): on this 88-byte input it takes 150 ns instead of 730 ns on a CPU
/// without SHA extensions, and SHA-256 was 6% of the import's CPU. The digest is what databases
/// hold: a change here needs a new `DEDUP_KEY_VERSION` and a re-key of stored events (see
/// `rekey_events`), or every re-sent event would be stored twice; a test pins it.
pub fn dedup_key(event: &str, time_ms: i64, distinct_id: &str, insert_id: &str) -> [u8; 16] {
    // One call over the whole input.
    let len = 32 + event.len() + distinct_id.len() + insert_id.len();
    let mut stack = [0u8; 256];
    let mut heap = Vec::new();
    let input: &mut [u8] = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        input[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    for field in [event, distinct_id, insert_id] {
        put(&(field.len() as u64).to_le_bytes());
        put(field.as_bytes());
    }
    put(&time_ms.to_le_bytes());
    let digest = blake3::hash(input);
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest.as_bytes()[..16]);
    out
}

/// The format of the digests in `events.dedup`, kept in the database header's `user_version`:
/// 0 (databases from before the version was recorded) and 1 hold SHA-256 digests, 2 BLAKE3
/// (see `dedup_key`). A database of an older version is re-keyed when opened.
pub const DEDUP_KEY_VERSION: i64 = 2;

/// Replaces every stored event's dedup digest with the current `dedup_key` of its fields (in the
/// caller's transaction, 10,000 rows at a time in rowid order). Returns how many rows it re-keyed.
fn rekey_events(conn: &Connection) -> anyhow::Result<usize> {
    let mut read = conn.prepare(
        "SELECT rowid, event, time_ms, distinct_id, insert_id FROM events WHERE rowid > ?1 ORDER BY rowid LIMIT 10000",
    )?;
    let mut write = conn.prepare("UPDATE events SET dedup = ?2 WHERE rowid = ?1")?;
    let (mut after, mut rows) = (i64::MIN, 0);
    loop {
        let keys = read
            .query_map([after], |r| {
                let text = |i| r.get_ref(i).and_then(|v| v.as_str().map_err(Into::into));
                Ok((r.get::<_, i64>(0)?, dedup_key(text(1)?, r.get(2)?, text(3)?, text(4)?)))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let Some(&(last, _)) = keys.last() else { return Ok(rows) };
        for (rowid, key) in &keys {
            write.execute(params![rowid, &key[..]])?;
        }
        rows += keys.len();
        after = last;
    }
}

/// Rows per `INSERT` statement: fewer statement executions and bindings per batch (8 parameters
/// a row stays far below SQLite's limit of 32,766).
const ROWS_PER_INSERT: usize = 50;

/// The insert of `n` rows. A row whose event is already stored (the dedup key: SQLite 3.35+
/// applies `OR IGNORE` to any uniqueness constraint, and the key's columns differ between
/// databases created before and after it gained `time_ms`, see `MIGRATION`) is skipped here and
/// replaced by `replace_copies`, so the common case of only new events costs one plain insert.
fn insert_sql(n: usize) -> String {
    let mut sql = String::from(
        "INSERT OR IGNORE INTO events (project_id, dedup, event, time_ms, distinct_id, insert_id, record, ingested_at) VALUES ",
    );
    for i in 0..n {
        sql.push_str(if i == 0 { "(?,?,?,?,?,?,?,?)" } else { ",(?,?,?,?,?,?,?,?)" });
    }
    sql
}

/// Stores a batch of events in one transaction (one fsync); a copy of an event already stored
/// replaces it. Returns how many rows were written.
pub fn insert_events(conn: &mut Connection, project_id: i64, batch: &EventBatch, now_s: i64) -> anyhow::Result<usize> {
    without_foreign_keys(conn, |conn| {
        let tx = conn.transaction()?;
        upsert_rows(&tx, project_id, batch, now_s)?;
        tx.commit()?;
        Ok(batch.len())
    })?
}

/// Runs `f`, which writes events, with the connection's foreign-key checks off, and then sets
/// them as they were (see [`set_foreign_keys`] for why events are written without them): the
/// caller may write other tables after it.
fn without_foreign_keys<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> T) -> anyhow::Result<T> {
    use rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY;
    let were_on = conn.db_config(SQLITE_DBCONFIG_ENABLE_FKEY).context("cannot read whether foreign keys are checked")?;
    set_foreign_keys(conn, false)?;
    let out = f(conn);
    // It cannot fail outside a transaction (it only sets a flag); if it did, the connection
    // would go on without checks until its next `Store::call`, so say so.
    if let Err(e) = set_foreign_keys(conn, were_on) {
        tracing::error!("{e:#}");
    }
    Ok(out)
}

/// Turns the connection's foreign-key checks on or off. Events are written without them: an
/// `INSERT` checked against a foreign key may fail half-way, so inside a transaction SQLite keeps
/// a statement journal for it, a copy of every page the statement changes that earlier
/// statements had already changed (the right edges of the table and of the dedup key), spilled
/// to a temporary file past 64 KiB. For the event writer that was about a sixth of its CPU (4
/// clients, alternating runs: 4.1–4.3 s against 3.3–3.6 s per 1,000,000 events). The only
/// foreign key of `events` and `event_volume` is the project, which every caller has checked
/// (the request's credentials, or the job's project), and projects are never deleted.
///
/// A change of the setting (SQLite does nothing when it is so already) expires the connection's
/// prepared statements, which are prepared again on their next use: about 0.5 M instructions
/// (callgrind), a fifth of a millisecond. So the event writer leaves the checks off between its
/// group commits, and the other writes on its connection ([`Store::call`], [`Store::call_sync`])
/// turn them on first: under a stream of imports the setting never changes.
fn set_foreign_keys(conn: &Connection, on: bool) -> anyhow::Result<()> {
    use rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY;
    conn.set_db_config(SQLITE_DBCONFIG_ENABLE_FKEY, on)
        .with_context(|| format!("cannot turn the foreign-key checks {}", if on { "on" } else { "off" }))?;
    Ok(())
}

/// The width of an `event_volume` bucket. Integer division as SQLite's `/` does it.
const HOUR_MS: i64 = 3_600_000;

/// New events of a batch per (event name, hour): count and latest time. A list searched from the
/// entry used last, not a hash map: a batch (one part of a request, 250 rows at most) holds few
/// names and hours, and hashing every row's name cost 3% of the import's instructions (callgrind).
/// There is at most one entry per row, so a search is bounded by the part's size.
#[derive(Debug, Default)]
struct Volume<'a> {
    entries: Vec<VolumeEntry<'a>>,
    /// Where the last row was counted: the next row is most often of the same name and hour.
    last: usize,
}

#[derive(Debug)]
struct VolumeEntry<'a> {
    event: &'a str,
    hour: i64,
    count: i64,
    last_ms: i64,
}

fn count_new<'a>(volume: &mut Volume<'a>, row: &EventRow<'a>) {
    let hour = row.time_ms / HOUR_MS;
    let same = |e: &VolumeEntry<'_>| e.hour == hour && e.event == row.event;
    let at = match volume.entries.get(volume.last) {
        Some(e) if same(e) => volume.last,
        _ => match volume.entries.iter().position(same) {
            Some(at) => at,
            None => {
                volume.entries.push(VolumeEntry { event: row.event, hour, count: 0, last_ms: i64::MIN });
                volume.entries.len() - 1
            }
        },
    };
    volume.last = at;
    let entry = &mut volume.entries[at];
    entry.count += 1;
    entry.last_ms = entry.last_ms.max(row.time_ms);
}

/// The rows of a batch, inside the caller's transaction: new events inserted and counted in
/// `event_volume`, copies of stored events replacing them (the latest copy wins, FACTS.md).
fn upsert_rows(conn: &Connection, project_id: i64, batch: &EventBatch, now_s: i64) -> anyhow::Result<()> {
    let mut volume = Volume::default();
    for chunk in batch.rows.chunks(ROWS_PER_INSERT) {
        let mut stmt = conn.prepare_cached(&insert_sql(chunk.len()))?;
        for (i, spans) in chunk.iter().enumerate() {
            let row = batch.row(spans);
            let at = i * 8;
            stmt.raw_bind_parameter(at + 1, project_id)?;
            stmt.raw_bind_parameter(at + 2, &row.dedup[..])?;
            stmt.raw_bind_parameter(at + 3, row.event)?;
            stmt.raw_bind_parameter(at + 4, row.time_ms)?;
            stmt.raw_bind_parameter(at + 5, row.distinct_id)?;
            stmt.raw_bind_parameter(at + 6, row.insert_id)?;
            stmt.raw_bind_parameter(at + 7, row.record)?;
            stmt.raw_bind_parameter(at + 8, now_s)?;
        }
        let inserted = stmt.raw_execute()?;
        if inserted == chunk.len() {
            chunk.iter().for_each(|spans| count_new(&mut volume, &batch.row(spans)));
        } else {
            replace_copies(conn, project_id, batch, chunk, inserted, now_s, &mut volume)?;
        }
    }
    add_volume(conn, project_id, &volume)
}

/// After an insert of `chunk` that skipped some rows: tells the new events from copies and
/// writes each copy over the stored event, in batch order so that the latest copy wins. The
/// `inserted` new rows got the rowids just below and up to `last_insert_rowid` (a rowid table
/// gives each new row the largest rowid plus one); a row found with another rowid, or seen
/// earlier in the chunk, is a copy.
fn replace_copies<'a>(
    conn: &Connection,
    project_id: i64,
    batch: &'a EventBatch,
    chunk: &[RowSpans],
    inserted: usize,
    now_s: i64,
    volume: &mut Volume<'a>,
) -> anyhow::Result<()> {
    let last = conn.last_insert_rowid();
    let first_new = last - inserted as i64 + 1;
    // Empty when nothing was inserted (`first_new` is then past `last`).
    let new_rowids = first_new..=last;
    let mut find = conn.prepare_cached("SELECT rowid FROM events WHERE project_id = ?1 AND time_ms = ?2 AND dedup = ?3")?;
    let mut replace = conn.prepare_cached("UPDATE events SET record = ?2, ingested_at = ?3 WHERE rowid = ?1")?;
    let mut seen: Vec<[u8; 16]> = Vec::with_capacity(chunk.len());
    for spans in chunk {
        let row = batch.row(spans);
        let rowid: i64 = find
            .query_row(params![project_id, row.time_ms, &row.dedup[..]], |r| r.get(0))
            .optional()?
            .with_context(|| format!("the event {:?} at {} was neither stored nor found stored", row.event, row.time_ms))?;
        let copy = seen.contains(&row.dedup) || !new_rowids.contains(&rowid);
        seen.push(row.dedup);
        if copy {
            replace.execute(params![rowid, row.record, now_s])?;
        } else {
            count_new(volume, &row);
        }
    }
    Ok(())
}

/// Adds a batch's new events to `event_volume`.
fn add_volume(conn: &Connection, project_id: i64, volume: &Volume<'_>) -> anyhow::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO event_volume (project_id, event, hour, count, last_ms) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT DO UPDATE SET count = count + excluded.count, last_ms = max(last_ms, excluded.last_ms)",
    )?;
    for e in &volume.entries {
        stmt.execute(params![project_id, e.event, e.hour, e.count, e.last_ms])?;
    }
    Ok(())
}

/// The event schemas of a project that may drop something at ingestion (spec §2.4, §2.5): only
/// schemas whose text mentions `dropped` can, and the filter keeps this cheap for a large
/// dictionary; the core's `Dictionary` then reads them properly.
pub fn dropping_schemas(conn: &Connection, project_id: i64) -> anyhow::Result<Vec<SchemaEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT name, schema_json FROM schemas
         WHERE project_id = ?1 AND entity_type = 'event' AND instr(schema_json, '\"dropped\"') > 0",
    )?;
    let rows = stmt.query_map([project_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (name, json) = row?;
        let schema_json: Schema = serde_json::from_str(&json)?;
        out.push(SchemaEntry { entity_type: EntityType::Event, name, schema_json });
    }
    Ok(out)
}

/// A property filter of the read API: `properties.<property>` equals `value`, where `value`
/// matches the string `value` or the JSON scalar it spells (`12`, `true`, `null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyFilter {
    pub property: String,
    pub value: String,
}

/// What the read API asks of stored events.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    pub event: Option<String>,
    pub distinct_id: Option<String>,
    pub filter: Option<PropertyFilter>,
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
    pub limit: usize,
    /// `(time_ms, rowid)` of the last event of the previous page.
    pub cursor: Option<(i64, i64)>,
}

/// A stored event as the read API serves it.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub rowid: i64,
    pub time_ms: i64,
    pub record: String,
}

/// Stored events matching `q`, newest first (ties broken by storage order).
pub fn query_events(conn: &Connection, project_id: i64, q: &EventQuery) -> anyhow::Result<Vec<StoredEvent>> {
    use rusqlite::types::Value as Sql;
    let mut sql = String::from("SELECT rowid, time_ms, record FROM events WHERE project_id = ?");
    let mut args: Vec<Sql> = vec![Sql::Integer(project_id)];
    if let Some(e) = &q.event {
        sql.push_str(" AND event = ?");
        args.push(Sql::Text(e.clone()));
    }
    if let Some(d) = &q.distinct_id {
        sql.push_str(" AND distinct_id = ?");
        args.push(Sql::Text(d.clone()));
    }
    if let Some(from) = q.from_ms {
        sql.push_str(" AND time_ms >= ?");
        args.push(Sql::Integer(from));
    }
    if let Some(to) = q.to_ms {
        sql.push_str(" AND time_ms < ?");
        args.push(Sql::Integer(to));
    }
    if let Some((t, r)) = q.cursor {
        sql.push_str(" AND (time_ms < ? OR (time_ms = ? AND rowid < ?))");
        args.extend([Sql::Integer(t), Sql::Integer(t), Sql::Integer(r)]);
    }
    if let Some(f) = &q.filter {
        let as_string = serde_json::to_string(&serde_json::Value::String(f.value.clone()))?;
        let as_scalar = match serde_json::from_str::<serde_json::Value>(&f.value) {
            Ok(v) if !v.is_array() && !v.is_object() => serde_json::to_string(&v)?,
            _ => as_string.clone(),
        };
        sql.push_str(" AND (record -> ?) IN (?, ?)");
        args.push(Sql::Text(format!("$.properties.\"{}\"", f.property)));
        args.extend([Sql::Text(as_string), Sql::Text(as_scalar)]);
    }
    sql.push_str(" ORDER BY time_ms DESC, rowid DESC LIMIT ?");
    args.push(Sql::Integer(q.limit as i64));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
        Ok(StoredEvent { rowid: r.get(0)?, time_ms: r.get(1)?, record: r.get(2)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many events of one name happened since a time.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventCount {
    pub event: String,
    pub count: i64,
    /// The time of the latest such event, in milliseconds since epoch.
    pub last_seen_ms: i64,
}

/// Per event name, the events with `time >= since_ms`, most frequent first.
pub fn event_counts(conn: &Connection, project_id: i64, since_ms: i64) -> anyhow::Result<Vec<EventCount>> {
    // Whole hours from `event_volume` (hour h >= 1 holds exactly the times [h, h + 1) hours), and
    // the events before the first whole hour counted one by one, so the cut is exact.
    let first_hour = (since_ms.div_euclid(HOUR_MS) + i64::from(since_ms.rem_euclid(HOUR_MS) != 0)).max(1);
    let mut stmt = conn.prepare_cached(
        "SELECT event, sum(n) AS total, max(last) FROM (
             SELECT event, count AS n, last_ms AS last FROM event_volume WHERE project_id = ?1 AND hour >= ?3
             UNION ALL
             SELECT event, count(*), max(time_ms) FROM events
             WHERE project_id = ?1 AND time_ms >= ?2 AND time_ms < ?4 GROUP BY event
         ) GROUP BY event ORDER BY total DESC, event",
    )?;
    let rows = stmt.query_map(params![project_id, since_ms, first_hour, first_hour.saturating_mul(HOUR_MS)], |r| {
        Ok(EventCount { event: r.get(0)?, count: r.get(1)?, last_seen_ms: r.get(2)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The properties of a profile, if it exists.
pub fn get_profile(
    conn: &Connection,
    project_id: i64,
    distinct_id: &str,
) -> anyhow::Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let json: Option<String> = conn
        .query_row(
            "SELECT properties FROM profiles WHERE project_id = ?1 AND distinct_id = ?2",
            params![project_id, distinct_id],
            |r| r.get(0),
        )
        .optional()?;
    json.map(|j| serde_json::from_str(&j).context("a stored profile is not readable")).transpose()
}

/// Creates or replaces a profile.
pub fn put_profile(
    conn: &Connection,
    project_id: i64,
    distinct_id: &str,
    properties: &serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO profiles (project_id, distinct_id, properties) VALUES (?1, ?2, ?3)
         ON CONFLICT (project_id, distinct_id) DO UPDATE SET properties = excluded.properties, updated_at = unixepoch()",
        params![project_id, distinct_id, serde_json::to_string(properties)?],
    )?;
    Ok(())
}

/// Deletes a profile; returns whether it existed.
pub fn delete_profile(conn: &Connection, project_id: i64, distinct_id: &str) -> anyhow::Result<bool> {
    Ok(conn.execute("DELETE FROM profiles WHERE project_id = ?1 AND distinct_id = ?2", params![project_id, distinct_id])? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(rows: &[(i64, &str, &str)]) -> EventBatch {
        let mut batch = EventBatch::default();
        for (time_ms, insert_id, record) in rows {
            batch.push("Signed Up", *time_ms, "u1", insert_id, record);
        }
        batch
    }

    fn stored(conn: &Connection) -> Vec<(i64, String)> {
        let mut stmt = conn.prepare("SELECT time_ms, record FROM events WHERE project_id = 1 ORDER BY time_ms, record").unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().collect::<Result<_, _>>().unwrap()
    }

    /// Runs `test` on the writer connection of a new in-memory store holding project 1; returns
    /// the store.
    fn with_project_1(test: impl FnOnce(&mut Connection)) -> Store {
        let store = Store::open_in_memory().unwrap();
        store
            .call_sync(|conn| {
                conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", []).unwrap();
                test(conn);
                Ok(())
            })
            .unwrap();
        store
    }

    /// `event_volume` says what the events table holds, per project, name and hour.
    fn assert_volume_matches_events(conn: &Connection) {
        let read = |sql: &str| -> Vec<(i64, String, i64, i64, i64)> {
            let mut stmt = conn.prepare(sql).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let counted = read("SELECT project_id, event, time_ms / 3600000, count(*), max(time_ms) FROM events GROUP BY 1, 2, 3 ORDER BY 1, 2, 3");
        let kept = read("SELECT project_id, event, hour, count, last_ms FROM event_volume ORDER BY 1, 2, 3");
        assert_eq!(kept, counted);
    }

    /// The latest copy wins, within one batch and across batches, and a different time or insert
    /// id is a different event.
    fn check_dedup(conn: &mut Connection) {
        conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", []).unwrap();
        insert_events(conn, 1, &batch(&[(1_000, "a", "first"), (1_000, "a", "second"), (2_000, "a", "other time")]), 0)
            .unwrap();
        insert_events(conn, 1, &batch(&[(1_000, "a", "third"), (1_000, "b", "other id")]), 0).unwrap();
        assert_eq!(
            stored(conn),
            [(1_000, "other id".into()), (1_000, "third".into()), (2_000, "other time".into())]
        );
        assert_volume_matches_events(conn);
        let counts = event_counts(conn, 1, 0).unwrap();
        assert_eq!(counts, [EventCount { event: "Signed Up".into(), count: 3, last_seen_ms: 2_000 }]);
    }

    /// Batches with copies of events in the same batch, in the same 50-row insert, in earlier
    /// batches, and events over several hours: the volumes always match the stored rows and
    /// the latest copy of each event is the one stored.
    #[test]
    fn volumes_follow_new_events_and_not_copies() {
        with_project_1(|conn| {
            let mut seed = 0x2545_F491_4F6C_DD1Du64;
            let mut next = move || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            let mut latest = std::collections::BTreeMap::new();
            for round in 0..30 {
                let mut batch = EventBatch::default();
                for i in 0..(1 + next() % 180) {
                    // Few ids and times: copies are frequent, within and across batches.
                    let name = ["A", "B", "C"][(next() % 3) as usize];
                    let time_ms = (next() % 5) as i64 * 1_800_000 + (next() % 2) as i64;
                    let insert_id = format!("id-{}", next() % 40);
                    let record = format!("{round}-{i}");
                    latest.insert((name, time_ms, insert_id.clone()), record.clone());
                    batch.push(name, time_ms, "u1", &insert_id, &record);
                }
                insert_events(conn, 1, &batch, 0).unwrap();
                assert_volume_matches_events(conn);
            }
            let mut stmt = conn.prepare("SELECT event, time_ms, insert_id, record FROM events").unwrap();
            let stored: std::collections::BTreeMap<(String, i64, String), String> = stmt
                .query_map([], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let expected: std::collections::BTreeMap<_, _> =
                latest.into_iter().map(|((n, t, id), rec)| ((n.to_owned(), t, id), rec)).collect();
            assert_eq!(stored, expected);
        });
    }

    /// The volume of the last days is exact at its start, which falls inside an hour: whole
    /// hours come from `event_volume`, the part hour from the events themselves.
    #[test]
    fn event_counts_cut_exactly_at_the_start() {
        with_project_1(|conn| {
            let since = 10 * HOUR_MS + 1_234;
            let mut batch = EventBatch::default();
            for (name, time_ms) in [("A", since - 1), ("A", since), ("B", since + 1), ("A", 11 * HOUR_MS), ("B", 13 * HOUR_MS + 5), ("B", 9 * HOUR_MS)] {
                batch.push(name, time_ms, "u1", "x", "{}");
            }
            insert_events(conn, 1, &batch, 0).unwrap();
            let counts = event_counts(conn, 1, since).unwrap();
            assert_eq!(
                counts,
                [
                    EventCount { event: "A".into(), count: 2, last_seen_ms: 11 * HOUR_MS },
                    EventCount { event: "B".into(), count: 2, last_seen_ms: 13 * HOUR_MS + 5 },
                ]
            );
            // A start on a whole hour, and one before any event.
            assert_eq!(event_counts(conn, 1, 11 * HOUR_MS).unwrap().iter().map(|c| c.count).sum::<i64>(), 2);
            assert_eq!(event_counts(conn, 1, 0).unwrap().iter().map(|c| c.count).sum::<i64>(), 6);
            assert!(event_counts(conn, 1, 14 * HOUR_MS).unwrap().is_empty());
        });
    }

    /// `.cargo/config.toml` reached the bundled SQLite's build: no memory statistics and no
    /// shared page cache (each takes a global mutex on the import path).
    #[test]
    fn the_bundled_sqlite_has_the_workspace_build_options() {
        let conn = Connection::open_in_memory().unwrap();
        let mut stmt = conn.prepare("PRAGMA compile_options").unwrap();
        let options: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
        assert!(!options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"), "{options:?}");
        assert!(options.iter().any(|o| o == "DEFAULT_LOOKASIDE=1200,1000"), "{options:?}");
    }

    /// The digest is the one databases of `DEDUP_KEY_VERSION` hold: BLAKE3 over the
    /// length-prefixed fields and the time, truncated to 128 bits.
    #[test]
    fn dedup_key_is_unchanged() {
        let cases: [(&str, i64, &str, &str); 3] = [("Signed Up", 1_767_225_600_000, "u1", "a"), ("", 0, "", ""), ("é", -1, &"d".repeat(300)[..], "x-1")];
        for (event, time_ms, distinct_id, insert_id) in cases {
            assert_eq!(dedup_key(event, time_ms, distinct_id, insert_id)[..], blake3_reference(event, time_ms, distinct_id, insert_id)[..16]);
        }
        // Checked with Python's `blake3` package. A change of this value needs a new
        // DEDUP_KEY_VERSION and a re-key (see `rekey_events`).
        assert_eq!(
            dedup_key("Signed Up", 1_000, "u1", "a"),
            [0xaf, 0xe5, 0x82, 0x32, 0xc9, 0x6f, 0x48, 0x62, 0xb3, 0x01, 0xd5, 0xa1, 0x46, 0x47, 0x7d, 0x1b]
        );
    }

    /// The digest input as the key's definition says, built independently of `dedup_key`: each
    /// field with its length in front, then the time.
    fn key_input(event: &str, time_ms: i64, distinct_id: &str, insert_id: &str) -> Vec<u8> {
        let mut input = Vec::new();
        for field in [event, distinct_id, insert_id] {
            input.extend_from_slice(&(field.len() as u64).to_le_bytes());
            input.extend_from_slice(field.as_bytes());
        }
        input.extend_from_slice(&time_ms.to_le_bytes());
        input
    }

    fn blake3_reference(event: &str, time_ms: i64, distinct_id: &str, insert_id: &str) -> [u8; 32] {
        *blake3::hash(&key_input(event, time_ms, distinct_id, insert_id)).as_bytes()
    }

    /// The digest databases held before `DEDUP_KEY_VERSION` 2.
    fn sha256_key(event: &str, time_ms: i64, distinct_id: &str, insert_id: &str) -> Vec<u8> {
        use sha2::{Digest, Sha256};
        Sha256::digest(key_input(event, time_ms, distinct_id, insert_id))[..16].to_vec()
    }

    /// A database whose events hold SHA-256 digests (every one before the version was recorded)
    /// is re-keyed once when opened: a copy sent afterwards still replaces the stored event.
    #[test]
    fn older_digests_are_rekeyed_once() {
        let mut conn = Store::init_writer(Connection::open_in_memory().unwrap(), Synchronous::Full).unwrap();
        conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", []).unwrap();
        // Three rounds of the re-key's 10,000 rows.
        let ids: Vec<String> = (0..25_000).map(|i| format!("i{i}")).collect();
        let rows: Vec<(i64, &str, &str)> = ids.iter().enumerate().map(|(i, id)| (1_000 + i as i64 % 3_000, id.as_str(), "v1")).collect();
        insert_events(&mut conn, 1, &batch(&rows), 0).unwrap();
        // Back to how an older server stored them.
        let keys_of = |conn: &Connection, key: fn(&str, i64, &str, &str) -> Vec<u8>| -> Vec<(i64, Vec<u8>, Vec<u8>)> {
            conn.prepare("SELECT rowid, dedup, event, time_ms, distinct_id, insert_id FROM events ORDER BY rowid")
                .unwrap()
                .query_map([], |r| {
                    let text = |i| r.get::<_, String>(i);
                    Ok((r.get(0)?, r.get(1)?, key(&text(2)?, r.get(3)?, &text(4)?, &text(5)?)))
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        for (rowid, _, old) in keys_of(&conn, sha256_key) {
            conn.execute("UPDATE events SET dedup = ?2 WHERE rowid = ?1", params![rowid, old]).unwrap();
        }
        conn.pragma_update(None, "user_version", 0).unwrap();

        let mut conn = Store::init_writer(conn, Synchronous::Full).unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, DEDUP_KEY_VERSION);
        let rekeyed = keys_of(&conn, |e, t, d, i| dedup_key(e, t, d, i).to_vec());
        assert_eq!(rekeyed.len(), ids.len());
        assert!(rekeyed.iter().all(|(_, stored, current)| stored == current), "every stored digest is the current one");
        // A copy sent now replaces the stored event instead of being stored beside it.
        let again: Vec<(i64, &str, &str)> = rows.iter().step_by(97).map(|(t, id, _)| (*t, *id, "v2")).collect();
        insert_events(&mut conn, 1, &batch(&again), 0).unwrap();
        let (count, replaced): (usize, usize) = conn
            .query_row("SELECT count(*), count(*) FILTER (WHERE record = 'v2') FROM events", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!((count, replaced), (ids.len(), again.len()));
        assert_volume_matches_events(&conn);

        // A database of a newer format is refused with what to do, not misread.
        conn.pragma_update(None, "user_version", DEDUP_KEY_VERSION + 1).unwrap();
        let err = Store::init_writer(conn, Synchronous::Full).unwrap_err().to_string();
        assert!(err.contains("written by a newer datadict") && err.contains("--data-dir"), "{err}");
    }

    #[test]
    fn dedup_on_the_current_table_shape() {
        let store = Store::open_in_memory().unwrap();
        store
            .call_sync(|conn| {
                check_dedup(conn);
                Ok(())
            })
            .unwrap();
    }

    /// Jobs committed together: each is stored or not on its own (a job whose insert fails after
    /// a first part was stored, a request that stops half-way: both rolled back), and the others
    /// are committed. The writer leaves the foreign-key checks off for its next group, and every
    /// other write on the connection turns them on first.
    #[test]
    fn a_group_commit_isolates_each_batch() {
        let store = with_project_1(|conn| {
            let job = |parts: Vec<Part>| {
                let (tx, rx) = channel();
                parts.into_iter().for_each(|p| tx.send(p).unwrap());
                InsertJob { project_id: 1, parts: rx, now_s: 0, done: tokio::sync::oneshot::channel().0 }
            };
            // An insert that fails half-way through a job: a row this trigger refuses, after
            // the job's first part was stored.
            conn.execute_batch(
                "CREATE TEMP TRIGGER refuse BEFORE INSERT ON events WHEN NEW.record = 'refused'
                 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
            )
            .unwrap();
            let jobs = [
                job(vec![Part::Rows(batch(&[(1_000, "a", "first")])), Part::End]),
                job(vec![Part::Rows(batch(&[(5_000, "b", "stored, then rolled back")])), Part::Rows(batch(&[(6_000, "b", "refused")])), Part::End]),
                // A request that failed after sending a part: its part is rolled back.
                job(vec![Part::Rows(batch(&[(3_000, "d", "unfinished")]))]),
                job(vec![Part::Rows(batch(&[(1_000, "a", "second")])), Part::Rows(batch(&[(2_000, "c", "third")])), Part::End]),
            ];
            // As the event writer runs a group.
            let results = write_group(conn, &jobs);
            assert_eq!(results.iter().map(|r| r.as_ref().ok().copied()).collect::<Vec<_>>(), [Some(1), None, None, Some(2)]);
            assert!(format!("{:#}", results[1].as_ref().unwrap_err()).contains("refused by the test"), "{results:?}");
            assert_eq!(stored(conn), [(1_000, "second".into()), (2_000, "third".into())]);
            // The rolled-back parts are not counted either.
            assert_volume_matches_events(conn);
            // The writer leaves the checks off for its next group.
            let on: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
            assert_eq!(on, 0);
        });
        // The other writes on the connection check foreign keys again, whatever ran before: a
        // schema for a project that does not exist is refused.
        let orphan = |conn: &mut Connection| Ok(insert_orphan_schema(conn)?);
        let err = store.call_sync(orphan);
        assert!(format!("{err:?}").contains("FOREIGN KEY"), "{err:?}");
        store.call_sync(|conn| Ok(write_group(conn, &[]))).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let err = rt.block_on(store.call(orphan));
        assert!(format!("{err:?}").contains("FOREIGN KEY"), "{err:?}");
        // `insert_events` sets the checks back as they were.
        store.call_sync(|conn| {
            insert_events(conn, 1, &batch(&[(7_000, "e", "fourth")]), 0)?;
            assert_eq!(conn.query_row("PRAGMA foreign_keys", [], |r| r.get::<_, i64>(0))?, 1);
            Ok(())
        })
        .unwrap();
    }

    /// A schema for project 99, which does not exist: refused when foreign keys are checked.
    fn insert_orphan_schema(conn: &Connection) -> rusqlite::Result<usize> {
        conn.execute("INSERT INTO schemas (project_id, entity_type, name, schema_json) VALUES (99, 'event', 'e', '{}')", [])
    }

    /// `Store::write_events` (the bench's bare insert) stores and de-duplicates as the writer
    /// does, and the next write through the store checks foreign keys again.
    #[test]
    fn write_events_takes_the_writer_steps() {
        let store = with_project_1(|_| {});
        store.write_events(1, &batch(&[(1_000, "a", "first"), (2_000, "b", "other")]), 0).unwrap();
        store.write_events(1, &batch(&[(1_000, "a", "second")]), 0).unwrap();
        store
            .call_sync(|conn| {
                assert_eq!(stored(conn), [(1_000, "second".into()), (2_000, "other".into())]);
                assert_volume_matches_events(conn);
                let err = insert_orphan_schema(conn);
                assert!(format!("{err:?}").contains("FOREIGN KEY"), "{err:?}");
                Ok(())
            })
            .unwrap();
    }

    /// A database created before the dedup key gained `time_ms` keeps its old key, and the insert
    /// still de-duplicates against it.
    #[test]
    fn dedup_on_the_older_table_shape() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,
                 created_at INTEGER NOT NULL DEFAULT (unixepoch()));
             CREATE TABLE events (
                 project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
                 dedup BLOB NOT NULL, event TEXT NOT NULL, time_ms INTEGER NOT NULL, distinct_id TEXT NOT NULL,
                 insert_id TEXT NOT NULL, record TEXT NOT NULL, ingested_at INTEGER NOT NULL,
                 PRIMARY KEY (project_id, dedup));
             CREATE INDEX events_by_time ON events (project_id, time_ms);
             CREATE INDEX events_by_name ON events (project_id, event, time_ms);
             INSERT INTO projects (id, name, token_hash) VALUES (2, 'older', 'h2');
             INSERT INTO events VALUES (2, x'00', 'Old', 7200000, 'u', 'i', '{}', 0), (2, x'01', 'Old', 7200001, 'u', 'i', '{}', 0);",
        )
        .unwrap();
        let mut conn = Store::init_writer(conn, Synchronous::Full).unwrap();
        // The events stored before are counted, and the index the volumes replace is gone.
        assert_eq!(event_counts(&conn, 2, 0).unwrap(), [EventCount { event: "Old".into(), count: 2, last_seen_ms: 7_200_001 }]);
        let index: i64 = conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'events_by_name'", [], |r| r.get(0)).unwrap();
        assert_eq!(index, 0);
        check_dedup(&mut conn);
        // Opening it again counts nothing twice.
        let conn = Store::init_writer(conn, Synchronous::Full).unwrap();
        assert_volume_matches_events(&conn);
    }
}
