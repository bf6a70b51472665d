//! The embedded SQLite backend: opening the database, its writer and reader connections, the
//! checkpointer, and running work on them on the blocking pool. The statements live in one file
//! per resource (`accounts.rs`, `schemas.rs`, `profiles.rs`, `groups.rs`, `reads.rs`, `events.rs`
//! and `event_writer.rs` for the import's insert path and group commits, `quality.rs` and
//! `quality_journal.rs` for data quality, `jobs.rs`, `lookup.rs`);
//! `tables.rs` creates the tables and upgrades older databases when the store opens.

pub(super) mod accounts;
pub(super) mod event_writer;
pub(super) mod events;
pub(super) mod groups;
pub(super) mod jobs;
pub(crate) mod known;
pub(super) mod lookup;
pub(super) mod migration_jobs;
pub(super) mod profiles;
pub(super) mod quality;
pub(super) mod quality_journal;
pub(super) mod reads;
pub(super) mod schemas;
pub(super) mod tables;
#[cfg(test)]
mod tests;

use anyhow::Context;
use super::event_writer::WritesRefused;
use super::events::EventBatch;
use events::{set_foreign_keys, upsert_rows};
use known::Known;
use quality_journal::{Journal, SampleEpoch};
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};

/// The embedded SQLite store. Cloning is cheap. Writes go through one writer connection (SQLite
/// allows one writer at a time anyway, and a single writer keeps every import batch in one
/// transaction without lock contention); reads go through a small pool of reader connections,
/// which WAL mode lets run beside the writer. Every call runs on tokio's blocking pool so that
/// SQLite's synchronous I/O never stalls the reactor.
#[derive(Clone)]
pub(crate) struct Sqlite {
    conn: Arc<Mutex<Connection>>,
    readers: Arc<Vec<Mutex<Connection>>>,
    next_reader: Arc<AtomicUsize>,
    /// The checkpointer's wake-up and the commit count (absent in memory).
    checkpoint: Option<Arc<Checkpoint>>,
    /// Token hashes and dictionary versions known without a read (absent in memory, where reads
    /// share the writer connection).
    known: Option<Arc<Known>>,
    /// The data-quality journal of the event writer (see `quality_journal`).
    journal: Arc<Mutex<Journal>>,
    /// The journal's sampling epoch, read by requests without the journal's lock.
    sample_epoch: SampleEpoch,
    /// The WAL file, which the event writer's syncer fsyncs itself (see `event_writer`), when
    /// commits must be durable (`Synchronous::Full`) and the database is a file.
    wal: Option<Arc<WalFile>>,
    /// The event writer left the writer connection's commits without their fsync
    /// (`synchronous = NORMAL`, see `event_writer`): any other write sets them back to `FULL`
    /// first ([`durable_commits`]). Read and written only under the connection's lock.
    deferred: Arc<AtomicBool>,
}

/// Called with the writer connection before any write but the event writer's: refuses it once
/// an fsync of the WAL has failed ([`WalFile::sync`]); if the event writer left its commits
/// without their fsync, makes them fsync again (an error then fails the write rather than let it
/// commit without).
fn durable_commits(conn: &Connection, deferred: &AtomicBool, wal: Option<&WalFile>) -> anyhow::Result<()> {
    if let Some(wal) = wal {
        wal.refuse_after_failure()?;
    }
    if deferred.load(Ordering::Relaxed) {
        conn.pragma_update(None, "synchronous", "full").context("cannot make the writer connection's commits durable")?;
        deferred.store(false, Ordering::Relaxed);
    }
    Ok(())
}

/// The event writer's side of [`durable_commits`]: leaves the writer connection's commits
/// without their fsync (its syncer's makes them durable) until another write sets them back.
/// Returns whether they are deferred: a failure (it only sets a flag) is logged and leaves them
/// fsyncing, which is only slower.
pub(super) fn defer_commits(conn: &Connection, deferred: &AtomicBool) -> bool {
    if !deferred.load(Ordering::Relaxed) {
        match conn.pragma_update(None, "synchronous", "normal") {
            Ok(()) => deferred.store(true, Ordering::Relaxed),
            Err(e) => tracing::error!("cannot set synchronous = normal on the writer connection: {e}"),
        }
    }
    deferred.load(Ordering::Relaxed)
}

/// A database's WAL file, opened on its first fsync. SQLite keeps the file (and its inode) while
/// any connection is open, and a checkpoint that truncates it keeps the inode too.
#[derive(Debug)]
pub(super) struct WalFile {
    path: std::path::PathBuf,
    file: Mutex<Option<std::fs::File>>,
    /// Why an fsync of the WAL failed, once one has: from then on the store refuses writes
    /// (see [`WritesRefused`]).
    failed: std::sync::OnceLock<String>,
}

impl WalFile {
    fn new(path: std::path::PathBuf) -> WalFile {
        WalFile { path, file: Mutex::new(None), failed: std::sync::OnceLock::new() }
    }

    /// Makes everything written to the WAL so far durable (`fdatasync`, which includes a change
    /// of the file's size). A failed fsync is final: this and every later call, and every write
    /// of the store ([`durable_commits`]), fail with [`WritesRefused`].
    pub(super) fn sync(&self) -> anyhow::Result<()> {
        self.refuse_after_failure()?;
        let mut file = self.file.lock().map_err(|_| anyhow::anyhow!("the WAL file's lock is poisoned"))?;
        let file = match &mut *file {
            Some(file) => file,
            none => none.insert(std::fs::File::open(&self.path).with_context(|| format!("cannot open {}", self.path.display()))?),
        };
        file.sync_data().map_err(|e| self.fail(&e))
    }

    /// Records a failed fsync; returns the error every write gets from now on.
    fn fail(&self, e: &dyn std::fmt::Display) -> anyhow::Error {
        let why = format!(
            "the disk failed to make written data durable (fsync of {}: {e}); the server takes no more writes until it is restarted, \
             since data written before may be lost; its reads still work",
            self.path.display()
        );
        let why = self.failed.get_or_init(|| why).clone();
        anyhow::Error::new(WritesRefused(why))
    }

    /// `Err` once an fsync of the WAL has failed.
    pub(super) fn refuse_after_failure(&self) -> anyhow::Result<()> {
        match self.failed.get() {
            Some(why) => Err(anyhow::Error::new(WritesRefused(why.clone()))),
            None => Ok(()),
        }
    }
}

/// What the writer needs to keep the WAL short (see [`after_write`]).
#[derive(Debug)]
pub(super) struct Checkpoint {
    /// Wakes the checkpointer thread.
    wake: SyncSender<()>,
    /// The WAL's length in frames when the checkpointer was last woken.
    woken_at: AtomicU32,
}

/// How many read connections a file-backed store opens.
const READERS: usize = 4;

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

impl Sqlite {
    /// Opens (creating if needed) the database file at `path`, in WAL mode with foreign keys on and
    /// the given [`Synchronous`].
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
        let checkpoint = Some(Arc::new(Checkpoint { wake: spawn_checkpointer(path)?, woken_at: AtomicU32::new(0) }));
        let known = Arc::new(Known::default());
        watch_writes(&writer, known.clone());
        let journal = Journal::default();
        let sample_epoch = journal.epoch();
        let journal = Arc::new(Mutex::new(journal));
        // What a stopped process journaled is in the quality tables before anything reads them.
        quality_journal::recover(&writer).context("cannot fold the data-quality journal into its tables")?;
        // Only a database in WAL mode has a WAL file to fsync (a file system without shared
        // memory leaves it in its rollback journal, whose commits fsync themselves).
        let in_wal = writer.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))?.eq_ignore_ascii_case("wal");
        let conn = Arc::new(Mutex::new(writer));
        let wal = (synchronous == Synchronous::Full && in_wal).then(|| {
            let mut wal = path.as_os_str().to_owned();
            wal.push("-wal");
            Arc::new(WalFile::new(wal.into()))
        });
        Ok(Self { conn, readers: Arc::new(readers), next_reader: Arc::default(), checkpoint, known: Some(known), journal, sample_epoch, wal, deferred: Arc::default() })
    }

    /// An in-memory store, for tools that need no persistence (reads share the one connection).
    pub fn open_in_memory() -> anyhow::Result<Self> {
        let writer = Self::init_writer(Connection::open_in_memory()?, Synchronous::Full)?;
        let journal = Journal::default();
        let sample_epoch = journal.epoch();
        let (journal, conn) = (Arc::new(Mutex::new(journal)), Arc::new(Mutex::new(writer)));
        Ok(Self { conn, readers: Arc::default(), next_reader: Arc::default(), checkpoint: None, known: None, journal, sample_epoch, wal: None, deferred: Arc::default() })
    }

    fn init_writer(mut conn: Connection, synchronous: Synchronous) -> anyhow::Result<Connection> {
        tables::refuse_another_applications(&conn)?;
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
        // After the pragma, which replaces any WAL hook: `after_write` reads what this notes.
        conn.wal_hook(Some(note_wal_frames));
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        tables::create(&mut conn)?;
        Ok(conn)
    }

    /// Runs `f` with the writer connection on the blocking pool.
    pub async fn call<T, F>(&self, f: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> anyhow::Result<T> + Send + 'static,
    {
        let (conn, checkpoint, known) = (self.conn.clone(), self.checkpoint.clone(), self.known.clone());
        let (deferred, wal) = (self.deferred.clone(), self.wal.clone());
        tokio::task::spawn_blocking(move || {
            let mut guard = lock(&conn)?;
            durable_commits(&guard, &deferred, wal.as_deref())?;
            set_foreign_keys(&guard, true)?;
            let out = f(&mut guard);
            after_write(&guard, checkpoint.as_deref(), known.as_deref());
            out
        })
        .await
        .context("a database task failed")?
    }

    /// What this store knows without a read (`None` in memory).
    pub fn known(&self) -> Option<&Known> {
        self.known.as_deref()
    }

    /// Runs a read-only `f` with a free reader connection on the calling thread, or hands `f`
    /// back when every reader is busy (or the store has none).
    pub fn read_here<T, F>(&self, f: F) -> Result<anyhow::Result<T>, F>
    where
        F: FnOnce(&Connection) -> anyhow::Result<T>,
    {
        let n = self.readers.len();
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        for i in 0..n {
            if let Ok(guard) = self.readers[(start + i) % n].try_lock() {
                return Ok(f(&guard));
            }
        }
        Err(f)
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

    /// Stores a batch of events on the current thread as the event writer stores a group: in one
    /// transaction on the writer connection, with the foreign-key checks left off (see
    /// [`set_foreign_keys`]), then a checkpoint if one is due. The bench's bare insert, the
    /// ceiling the server is measured against.
    pub fn write_events(&self, project_id: i64, batch: &EventBatch, now_s: i64) -> anyhow::Result<usize> {
        let mut guard = lock(&self.conn)?;
        durable_commits(&guard, &self.deferred, self.wal.as_deref())?;
        set_foreign_keys(&guard, false)?;
        let tx = guard.transaction()?;
        upsert_rows(&tx, project_id, batch, now_s)?;
        tx.commit()?;
        after_write(&guard, self.checkpoint.as_deref(), self.known.as_deref());
        Ok(batch.len())
    }

    /// Folds the data-quality journal into its tables now (see `quality_journal`).
    pub async fn settle_quality(&self) -> anyhow::Result<()> {
        let journal = self.journal.clone();
        self.call(move |conn| lock_journal(&journal)?.fold(conn)).await
    }

    /// See [`crate::store::Store::sample_tag`].
    pub fn sample_tag(&self, now_ms: i64) -> u64 {
        self.sample_epoch.tag(now_ms)
    }

    /// Folds the data-quality journal, then runs `delete` (which deletes quality rows) in a
    /// transaction, both in one hold of the writer connection, so that no group commit journals
    /// findings in between; then the journal forgets what it had counted.
    pub async fn reset_quality<T: Send + 'static>(
        &self,
        delete: impl FnOnce(&rusqlite::Connection) -> anyhow::Result<T> + Send + 'static,
    ) -> anyhow::Result<T> {
        let journal = self.journal.clone();
        self.call(move |conn| {
            let mut journal = lock_journal(&journal)?;
            journal.fold(conn)?;
            let tx = conn.transaction()?;
            let out = delete(&tx)?;
            tx.commit()?;
            journal.forget_counts();
            Ok(out)
        })
        .await
    }

    /// Runs `f` with the writer connection on the current thread (for start-up and the admin CLI).
    pub fn call_sync<T>(&self, f: impl FnOnce(&mut Connection) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let mut guard = lock(&self.conn)?;
        durable_commits(&guard, &self.deferred, self.wal.as_deref())?;
        set_foreign_keys(&guard, true)?;
        let out = f(&mut guard);
        after_write(&guard, self.checkpoint.as_deref(), self.known.as_deref());
        out
    }
}

/// Takes a connection's lock; a panic while it was held (which poisons it) becomes an error.
pub(super) fn lock(conn: &Mutex<Connection>) -> anyhow::Result<MutexGuard<'_, Connection>> {
    conn.lock().map_err(|_| anyhow::anyhow!("the database lock is poisoned"))
}

/// The data-quality journal, taken after the writer connection (always in that order).
pub(super) fn lock_journal(journal: &Mutex<Journal>) -> anyhow::Result<MutexGuard<'_, Journal>> {
    journal.lock().map_err(|_| anyhow::anyhow!("the data-quality journal is unusable (a writer panicked)"))
}

/// The WAL's growth, in frames (pages), that wakes the checkpointer: 1 MiB of 16 KiB pages. A
/// commit of a 2,000-event import writes more than that, so each wakes it, as every commit once
/// did; a tracking request's commit writes a few pages, the same few each time (the right edges
/// of the events table and of its key, the day's data-quality rows), and a checkpoint copies
/// each page once however many commits rewrote it since the last one. Woken after every commit,
/// the checkpointer copied and fsynced those pages again for every group of tracking requests.
const FRAMES_PER_WAKE: u32 = 64;

/// The WAL's length, in frames, past which the writer itself checkpoints after its commit, so
/// that the next transaction writes the WAL from its beginning again (see [`after_write`]): 16
/// MiB of 16 KiB pages, about 16 commits of 2,000-event imports.
const FRAMES_PER_WAL_RESTART: u32 = 1024;

thread_local! {
    /// The WAL's length in frames after the last commit on this thread's connection, as SQLite's
    /// WAL hook reports it; 0 once read. The hook runs inside the commit, on the committing
    /// thread, and [`after_write`] runs right after on the same thread.
    static WAL_FRAMES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The writer connection's WAL hook (a plain function, as rusqlite takes it).
fn note_wal_frames(_: &rusqlite::hooks::Wal, frames: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_FRAMES.set(u32::try_from(frames).unwrap_or(0));
    Ok(())
}

/// Watches the writer connection's writes (its update hook, called for each row written to a
/// rowid table): a row of `dictionary_versions` tells `known` that a dictionary is changing.
fn watch_writes(writer: &Connection, known: Arc<Known>) {
    writer.update_hook(Some(move |_: rusqlite::hooks::Action, _: &str, table: &str, _: i64| {
        if table == "dictionary_versions" {
            known.changing();
        }
    }));
}

/// Called with the writer connection after its work (outside any transaction): wakes the
/// checkpointer once the WAL has grown by [`FRAMES_PER_WAKE`] since it was last woken, and once
/// the WAL is longer than [`FRAMES_PER_WAL_RESTART`] runs a passive checkpoint on the writer
/// connection itself. The checkpointer thread copies most of the WAL concurrently, but under a
/// steady stream of commits it never catches up with the last frames, so the WAL never starts
/// over: measured, it grew to the size of everything imported (300 MB for 400,000 events), and
/// the server's CPU per event grew with it (new file blocks for every write, longer WAL-index
/// searches). Between two transactions of the only writer the checkpoint reaches the end of the
/// WAL (copying only what the checkpointer has not), so the next transaction writes the WAL from
/// its beginning again (50 MB at most in the same run). Work that committed nothing leaves the
/// WAL as it was and wakes nobody. Its end also settles a change of dictionary versions (see
/// [`Known::settle`]).
pub(super) fn after_write(conn: &Connection, checkpoint: Option<&Checkpoint>, known: Option<&Known>) {
    if let Some(known) = known {
        known.settle();
    }
    let Some(checkpoint) = checkpoint else { return };
    let frames = WAL_FRAMES.take();
    if frames == 0 {
        return;
    }
    let woken_at = checkpoint.woken_at.load(Ordering::Relaxed);
    // A WAL shorter than at the last wake-up has started over: count from its beginning.
    if frames >= woken_at.saturating_add(FRAMES_PER_WAKE) || frames < woken_at {
        checkpoint.woken_at.store(frames, Ordering::Relaxed);
        // Full: a wake-up is already pending, which is enough; disconnected: the checkpointer is
        // gone (shutdown).
        let _ = checkpoint.wake.try_send(());
    }
    if frames >= FRAMES_PER_WAL_RESTART {
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!("a WAL checkpoint failed: {e}");
        }
    }
}

/// A thread with its own connection that runs a passive checkpoint whenever the writer wakes it
/// (see [`after_write`]; wake-ups that arrive while it works make one more), so that the copying of pages into
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
