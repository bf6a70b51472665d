//! The PostgreSQL backend: a small pool of blocking clients (the `postgres` crate, the one the
//! warehouse sources use), work run on tokio's blocking pool as SQLite's is, and the statements
//! in one file per resource (`accounts.rs`, `buckets.rs`, `schemas.rs`, `profiles.rs`, `groups.rs`, `reads.rs`,
//! `events.rs`, `jobs.rs`, `lookup.rs`, `migration_jobs.rs`); `migrations.rs` applies the versioned schema at start.

pub(super) mod accounts;
pub(super) mod buckets;
pub(super) mod events;
pub(super) mod groups;
pub(super) mod jobs;
pub(super) mod lookup;
pub(super) mod migration_jobs;
mod migrations;
pub(super) mod profiles;
pub(super) mod quality;
pub(super) mod reads;
pub(super) mod schemas;

use anyhow::Context;
use postgres::{Client, NoTls};
use std::sync::{Arc, Condvar, Mutex};

/// How many connections a server process opens at most: the blocking pool's work and the event
/// writer share them; a request waits for a free one rather than opening more.
const MAX_CONNECTIONS: usize = 8;

/// The resources of the store that have no PostgreSQL statements yet. Opening a PostgreSQL
/// store refuses to start while this is not empty, naming them, so that a route never fails at
/// request time for a missing implementation. Code that exists on SQLite only reaches its
/// connection through `Conn::sqlite`, and adds its resource here.
pub(super) const MISSING: &[&str] = &[];

/// A PostgreSQL database: its connection pool. Cloning is cheap.
#[derive(Clone)]
pub(crate) struct Postgres {
    pool: Arc<Pool>,
}

impl Postgres {
    /// Connects, applies the migrations the database lacks, and checks that every resource is
    /// implemented (see [`MISSING`]).
    pub(crate) fn open(url: &str) -> anyhow::Result<Self> {
        if !MISSING.is_empty() {
            anyhow::bail!(
                "this server cannot run on PostgreSQL yet: {} are not implemented there; run it on SQLite (--data-dir)",
                MISSING.join(", ")
            );
        }
        let config: postgres::Config = url.parse().with_context(|| {
            format!(
                "`{}` is not a PostgreSQL connection URL; pass postgres://user:password@host:port/database",
                redact(url)
            )
        })?;
        let pool = Arc::new(Pool {
            config,
            state: Mutex::new(PoolState::default()),
            free: Condvar::new(),
        });
        let mut client = pool
            .get()
            .with_context(|| format!("cannot connect to the PostgreSQL database {}", redact(url)))?;
        migrations::apply(&mut client).with_context(|| format!("cannot prepare the PostgreSQL database {}", redact(url)))?;
        drop(client);
        Ok(Self { pool })
    }

    /// Runs `f` with a pooled client on the blocking pool.
    pub(crate) async fn run<T, F>(&self, f: F) -> anyhow::Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Client) -> anyhow::Result<T> + Send + 'static,
    {
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || {
            let mut client = pool.get()?;
            f(&mut client)
        })
        .await
        .context("a database task failed")?
    }

    /// Runs `f` with a pooled client on the current thread (start-up, the admin CLI). The blocking
    /// client runs a runtime of its own, which tokio forbids inside another's worker thread: there
    /// (`app()` starts the jobs from inside the server's runtime) the worker is handed over to
    /// blocking work first.
    pub(crate) fn run_sync<T>(&self, f: impl FnOnce(&mut Client) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let run = || {
            let mut client = self.pool.get()?;
            f(&mut client)
        };
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Err(_) => run(),
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(run),
            Ok(_) => {
                anyhow::bail!("a PostgreSQL store cannot run blocking work on a single-threaded tokio runtime; use the multi-threaded one")
            }
        }
    }

    /// Starts the event writer: each group of import requests in one transaction on a pooled
    /// client (see `events::write_group`).
    pub(crate) fn spawn_event_writer(&self) -> anyhow::Result<super::event_writer::EventWriter> {
        let pool = self.pool.clone();
        super::event_writer::spawn_event_writer(
            move |jobs| match pool.get() {
                Ok(mut client) => events::write_group(&mut client, jobs),
                Err(e) => super::event_writer::fail_each(jobs, &e),
            },
            || {},
        )
    }
}

/// The URL without its password, for messages: the password of `user:password@` and the value
/// of a `password` or `sslpassword` query parameter become `***`. A text that is not a URL
/// (`host=h password=p`, `postgres:u:p@h`) is not repeated at all, since where its password lies
/// is unknown.
pub fn redact(url: &str) -> String {
    let Some(scheme) = url.find("://") else { return "(the value given, not repeated since it may hold a password)".to_owned() };
    let (rest, query) = match url[scheme + 3..].split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (&url[scheme + 3..], None),
    };
    let mut out = url[..scheme + 3].to_owned();
    match rest.rfind('@') {
        Some(at) => {
            match rest[..at].split_once(':') {
                Some((user, _)) => out.push_str(&format!("{user}:***")),
                None => out.push_str(&rest[..at]),
            }
            out.push_str(&rest[at..]);
        }
        None => out.push_str(rest),
    }
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") || key.eq_ignore_ascii_case("sslpassword") => format!("{key}=***"),
                _ => param.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// A pool of at most [`MAX_CONNECTIONS`] clients, opened on demand and kept while they work.
struct Pool {
    config: postgres::Config,
    state: Mutex<PoolState>,
    free: Condvar,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Client>,
    /// Clients open, idle or lent.
    open: usize,
}

impl Pool {
    /// A client: an idle one, a new one while fewer than [`MAX_CONNECTIONS`] are open, or the
    /// next one given back.
    fn get(&self) -> anyhow::Result<Pooled<'_>> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| anyhow::anyhow!("the connection pool's lock is poisoned"))?;
        loop {
            if let Some(client) = state.idle.pop() {
                return Ok(Pooled {
                    pool: self,
                    client: Some(client),
                });
            }
            if state.open < MAX_CONNECTIONS {
                state.open += 1;
                drop(state);
                return match self.config.connect(NoTls) {
                    Ok(client) => Ok(Pooled {
                        pool: self,
                        client: Some(client),
                    }),
                    Err(e) => {
                        self.give_back(None);
                        Err(anyhow::Error::from(e).context("cannot connect to PostgreSQL"))
                    }
                };
            }
            state = self
                .free
                .wait(state)
                .map_err(|_| anyhow::anyhow!("the connection pool's lock is poisoned"))?;
        }
    }

    /// Takes back a lent client (`None` or a closed one is forgotten, freeing its place).
    fn give_back(&self, client: Option<Client>) {
        let Ok(mut state) = self.state.lock() else { return };
        match client {
            Some(client) if !client.is_closed() => state.idle.push(client),
            _ => state.open -= 1,
        }
        self.free.notify_one();
    }
}

/// A client lent by the [`Pool`], given back when dropped.
struct Pooled<'a> {
    pool: &'a Pool,
    client: Option<Client>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().expect("a lent client is there until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().expect("a lent client is there until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        self.pool.give_back(self.client.take());
    }
}

/// The current time in seconds since the epoch, as SQLite's `unixepoch()` gives it.
pub(super) const NOW_S: &str = "(extract(epoch from now())::bigint)";

#[cfg(test)]
mod tests {
    #[test]
    fn redact_hides_only_the_password() {
        let check = |url: &str, expected: &str| assert_eq!(super::redact(url), expected, "{url}");
        check("postgres://u:secret@h:5432/d", "postgres://u:***@h:5432/d");
        check("postgres://u:se@cret@h/d", "postgres://u:***@h/d");
        check("postgres://u@h/d", "postgres://u@h/d");
        check("postgres://u@h/d?password=secret&sslmode=disable", "postgres://u@h/d?password=***&sslmode=disable");
        check("postgres://h/d?sslpassword=secret", "postgres://h/d?sslpassword=***");
        check("postgres://h/d?x=@&PASSWORD=secret", "postgres://h/d?x=@&PASSWORD=***");
        for not_a_url in ["host=h user=u password=secret", "postgres:u:secret@h/d"] {
            assert!(!super::redact(not_a_url).contains("secret"), "{not_a_url}");
        }
    }
}
