//! Storage: every SQL statement of the server lives behind this module's boundary, on one of two
//! backends: embedded SQLite (the default, `sqlite/`) or a PostgreSQL server (`pg/`).
//!
//! Callers name the statements `store::foo` and run them through [`Store::call`],
//! [`Store::read`] or [`Store::call_sync`], which hand them a backend-neutral [`Conn`]; each
//! `store::foo` matches on it once and runs `sqlite::<resource>::foo` or `pg::<resource>::foo`.
//! The top-level files hold, per resource, the types callers see and that dispatch:
//! `accounts.rs` (projects, service accounts, roles, tokens), `schemas.rs` (the dictionary),
//! `events.rs` (the import's rows and de-duplication digest), `event_writer.rs` (the
//! event-writer thread and its group commits), `profiles.rs`, `groups.rs` (group profiles),
//! `reads.rs` (the read API's queries and 30-day counts), `buckets.rs` (rate-limit buckets kept by
//! the database), `jobs.rs` (warehouse imports, their runs and migration jobs, named
//! `store::jobs::foo`), `lookup.rs` (lookup tables and their rows, named `store::lookup::foo`)
//! and `quality.rs` (data quality: violations of the dictionary seen on arrival, named
//! `store::quality::foo`), and `outage.rs` (a full disk or an unreachable PostgreSQL, told from faults), and `settings.rs` (what the database remembers about itself, such as
//! its namespace, named `store::settings::foo`). `conn.rs` holds [`Conn`] and its transaction [`Tx`].
//!
//! Queries are free functions over a connection, so that they compose inside one transaction.

mod accounts;
mod buckets;
mod conn;
mod event_writer;
mod events;
mod groups;
pub mod jobs;
pub mod outage;
pub mod lookup;
pub mod migration_jobs;
mod pg;
mod profiles;
pub mod quality;
mod reads;
mod schemas;
pub mod settings;
mod sqlite;

pub use accounts::*;
pub use buckets::{take_tokens, Charge};
pub use conn::{Conn, Tx};
pub use event_writer::{EventSink, PendingInsert, WritesRefused};
pub use events::{dedup_key, EventBatch, EventRow};
pub use groups::{delete_group, get_group, list_groups, put_group, StoredGroup};
pub use profiles::*;
pub use quality::{QualityRows, ShapeCount, ShapeRows, StoredViolation, ViolationFilter, ViolationRow};
pub use reads::*;
pub use schemas::*;
pub use sqlite::tables::DEDUP_KEY_VERSION;
pub use sqlite::Synchronous;
pub use pg::redact as redact_database_url;

use event_writer::EventWriter;
use std::cell::RefCell;
use std::path::Path;

/// The store: a database and the event writer that stores imported events in group commits.
/// Cloning is cheap. Every call runs on tokio's blocking pool, so that the databases' synchronous
/// I/O never stalls the reactor.
#[derive(Clone)]
pub struct Store {
    backend: Backend,
    /// The event writer's queue (see [`Store::event_sink`]).
    events: EventWriter,
    /// A random id of this opened store, which names its process in the leases of the jobs it
    /// runs (see [`Store::instance_id`]).
    instance: std::sync::Arc<str>,
}

#[derive(Clone)]
enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(pg::Postgres),
}

impl Store {
    /// Opens (creating if needed) the SQLite database file at `path`, in WAL mode with foreign
    /// keys on and `synchronous=FULL`.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        Self::open_with(path, Synchronous::Full)
    }

    /// [`Store::open`] with a choice of [`Synchronous`].
    pub fn open_with(path: &Path, synchronous: Synchronous) -> anyhow::Result<Self> {
        Self::from_sqlite(sqlite::Sqlite::open_with(path, synchronous)?)
    }

    /// An in-memory SQLite store, for tools that need no persistence.
    pub fn open_in_memory() -> anyhow::Result<Self> {
        Self::from_sqlite(sqlite::Sqlite::open_in_memory()?)
    }

    fn from_sqlite(db: sqlite::Sqlite) -> anyhow::Result<Self> {
        let events = db.spawn_event_writer()?;
        Ok(Self {
            backend: Backend::Sqlite(db),
            events,
            instance: new_instance_id(),
        })
    }

    /// Connects to the PostgreSQL database at `url` (`postgres://user:password@host:port/db`),
    /// applies the schema migrations it lacks, and refuses a database written by a newer server.
    pub fn open_postgres(url: &str) -> anyhow::Result<Self> {
        let db = pg::Postgres::open(url)?;
        let events = db.spawn_event_writer()?;
        Ok(Self {
            backend: Backend::Postgres(db),
            events,
            instance: new_instance_id(),
        })
    }

    /// The id this store (opened once per process) gives itself as the owner of the jobs it runs,
    /// so that another process on the same database tells its jobs from those of a stopped one.
    pub fn instance_id(&self) -> &str {
        &self.instance
    }

    /// Which database this store runs on, for people: `SQLite` or `PostgreSQL`.
    pub fn kind(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => "SQLite",
            Backend::Postgres(_) => "PostgreSQL",
        }
    }

    /// Runs `f` with a connection that may write, on the blocking pool (SQLite: the writer
    /// connection; PostgreSQL: a pooled client).
    pub async fn call<T, F>(&self, f: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&mut Conn<'c>) -> anyhow::Result<T> + Send + 'static,
    {
        match &self.backend {
            Backend::Sqlite(db) => db.call(move |c| f(&mut Conn::Sqlite(c))).await,
            Backend::Postgres(db) => db.run(move |c| f(&mut Conn::Postgres(RefCell::new(c)))).await,
        }
    }

    /// Runs a read-only `f` on the blocking pool (SQLite: one of the reader connections;
    /// PostgreSQL: a pooled client).
    pub async fn read<T, F>(&self, f: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&Conn<'c>) -> anyhow::Result<T> + Send + 'static,
    {
        match &self.backend {
            Backend::Sqlite(db) => db.read(move |c| f(&Conn::Sqlite(c))).await,
            Backend::Postgres(db) => db.run(move |c| f(&Conn::Postgres(RefCell::new(c)))).await,
        }
    }

    /// Runs a read-only `f` that is one lookup by an index, such as `/track`'s token lookup on
    /// every request. On SQLite it runs on the calling task when a reader connection is free: a
    /// lookup in pages SQLite has cached takes a few microseconds, less than the hand-over to the
    /// blocking pool and back, which was a tenth of a tracking request's CPU. Otherwise, and on
    /// PostgreSQL (a round trip to another process), it runs as [`Store::read`] does.
    pub async fn read_lookup<T, F>(&self, f: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&Conn<'c>) -> anyhow::Result<T> + Send + 'static,
    {
        if let Backend::Sqlite(db) = &self.backend {
            match db.read_here(move |c| f(&Conn::Sqlite(c))) {
                Ok(out) => return out,
                Err(f) => return db.read(f).await,
            }
        }
        self.read(f).await
    }

    /// The project whose token hashes to `token_hash`, with its dictionary version: on a SQLite
    /// file, from memory once known (`sqlite::known`); otherwise one indexed read for both.
    pub async fn project_and_version_by_token_hash(&self, token_hash: String) -> anyhow::Result<Option<(i64, i64)>> {
        let known = self.known();
        if let Some(project_id) = known.and_then(|k| k.project(&token_hash)) {
            return Ok(Some((project_id, self.dictionary_version(project_id).await?)));
        }
        let unknown = known.map(sqlite::known::Known::unknown);
        let hash = token_hash.clone();
        let found = self.read_lookup(move |conn| project_and_dictionary_by_token_hash(conn, &hash)).await?;
        if let (Some(known), Some(unknown), Some((project_id, version))) = (known, unknown, found) {
            known.remember_project(&token_hash, project_id);
            known.remember_version(project_id, version, unknown);
        }
        Ok(found)
    }

    /// The project's dictionary version (see `ingest::cache`): on a SQLite file, from memory once
    /// known (`sqlite::known`); otherwise one indexed read.
    pub async fn dictionary_version(&self, project_id: i64) -> anyhow::Result<i64> {
        let known = self.known();
        let unknown = match known.map(|k| k.version(project_id)) {
            Some(Ok(version)) => return Ok(version),
            Some(Err(unknown)) => Some(unknown),
            None => None,
        };
        let version = self.read_lookup(move |conn| dictionary_version(conn, project_id)).await?;
        if let (Some(known), Some(unknown)) = (known, unknown) {
            known.remember_version(project_id, version, unknown);
        }
        Ok(version)
    }

    fn known(&self) -> Option<&sqlite::known::Known> {
        match &self.backend {
            Backend::Sqlite(db) => db.known(),
            Backend::Postgres(_) => None,
        }
    }

    /// Runs `f` with a connection that may write on the current thread (for start-up and the
    /// admin CLI).
    pub fn call_sync<T>(&self, f: impl for<'c> FnOnce(&mut Conn<'c>) -> anyhow::Result<T>) -> anyhow::Result<T> {
        match &self.backend {
            Backend::Sqlite(db) => db.call_sync(|c| f(&mut Conn::Sqlite(c))),
            Backend::Postgres(db) => db.run_sync(|c| f(&mut Conn::Postgres(RefCell::new(c)))),
        }
    }

    /// Stores a batch of events on the current thread as the event writer stores a group (see
    /// `sqlite::Sqlite::write_events`): the bench's bare insert, on SQLite only for now.
    pub fn write_events(&self, project_id: i64, batch: &EventBatch, now_s: i64) -> anyhow::Result<usize> {
        match &self.backend {
            Backend::Sqlite(db) => db.write_events(project_id, batch, now_s),
            Backend::Postgres(_) => anyhow::bail!("the bare insert of the bench runs on SQLite only; open the store with --data-dir"),
        }
    }
}

fn new_instance_id() -> std::sync::Arc<str> {
    format!("{:032x}", rand::random::<u128>()).into()
}
