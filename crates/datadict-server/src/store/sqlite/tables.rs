//! The database's tables: their definitions, and the upgrade of a database written by an older
//! server (its `user_version`), both applied when the store opens.

use crate::store::events::{dedup_key, HOUR_MS};
use anyhow::Context;
use rusqlite::{params, Connection};

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
-- A counter per project, raised in the transaction of every write to its schemas (see
-- `store::schemas`): the ingestion routes keep each project's compiled dictionary in memory and
-- read this counter (with the token lookup) to know whether it is still current. No row is 0.
CREATE TABLE IF NOT EXISTS dictionary_versions (
    project_id INTEGER PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    version INTEGER NOT NULL
);
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
-- read from. The event writer adds a group's new rows here at its commit, in one statement per
-- name and hour (see `VolumeTally`). It replaced an index on (project_id, event, time_ms), which cost more than
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

/// Creates the tables a database lacks (with those of `jobs.rs`, `lookup.rs` and `groups.rs`) and upgrades one written by an
/// older server, in one transaction; refuses a database written by a newer server. Called by
/// `Store::init_writer` on the writer connection.
///
/// A new table needs no new `user_version`: its `CREATE TABLE IF NOT EXISTS` adds it to an older
/// database here, and an older server never reads it. The version changes only when stored data
/// must be rewritten (as the dedup digests were) or an older server would misread it.
pub(super) fn create(conn: &mut Connection) -> anyhow::Result<()> {
    let table_exists = |name: &str| -> rusqlite::Result<bool> {
        conn.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| r.get::<_, i64>(0))
            .map(|n| n > 0)
    };
    let had_events = table_exists("events")?;
    let had_volume = table_exists("event_volume")?;
    // Rolled back on drop if any step fails.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(MIGRATION).context("cannot create the database tables")?;
    tx.execute_batch(super::jobs::TABLES).context("cannot create the tables of warehouse imports and migrations")?;
    super::jobs::add_lease_columns(&tx).context("cannot add the lease columns to the tables of warehouse imports and migrations")?;
    if super::jobs::start_import_ids(&tx).context("cannot start the counter of warehouse import ids")? && had_events {
        tracing::info!("started the counter of warehouse import ids above every id the stored events name (once)");
    }
    tx.execute_batch(super::lookup::TABLES).context("cannot create the tables of lookup tables")?;
    tx.execute_batch(super::groups::TABLES).context("cannot create the table of group profiles")?;
    tx.execute_batch(&super::quality::tables()).context("cannot create the table of data quality")?;
    tx.execute_batch(crate::store::settings::TABLE).context("cannot create the table of server settings")?;
    if super::quality::move_samples_apart(&tx).context("cannot move the data-quality samples to their own tables")? {
        tracing::info!("moved the data-quality samples to their own tables (once)");
    }
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
    if version > DATA_FORMAT {
        anyhow::bail!(
            "the database was written by a newer datadict (data format {version}; this one reads up to {DATA_FORMAT}); \
             run that newer version, or start this one with another --data-dir"
        );
    }
    if version < DEDUP_KEY_VERSION && had_events {
        let started = std::time::Instant::now();
        let rows = rekey_events(&tx).context("cannot re-key the stored events for de-duplication")?;
        tracing::info!("re-keyed {rows} stored events for de-duplication (once, for the new digest) in {:.1?}", started.elapsed());
    }
    if version < DATA_FORMAT {
        tx.pragma_update(None, "user_version", DATA_FORMAT)?;
    }
    tx.commit()?;
    Ok(())
}

/// Refuses a database of another application: one with tables, none of them datadict's
/// `projects`, and no datadict format in its header. A file named like datadict's (or a
/// `--data-dir` pointed at another program's folder) would otherwise get datadict's tables
/// beside its own without a word. Called before anything is set on the file (WAL mode changes
/// its header).
pub(super) fn refuse_another_applications(conn: &Connection) -> anyhow::Result<()> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if tables.is_empty() || version > 0 || tables.iter().any(|t| t == "projects") {
        return Ok(());
    }
    let shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
    anyhow::bail!(
        "it is not a datadict database: it holds tables of another application ({}{}) and none of datadict's; \
         give this server a folder of its own with --data-dir",
        shown.join(", "),
        if tables.len() > shown.len() { ", ..." } else { "" }
    )
}

/// The format of the digests in `events.dedup`, kept in the database header's `user_version`:
/// 0 (databases from before the version was recorded) and 1 hold SHA-256 digests, 2 and later
/// BLAKE3 (see `dedup_key`). A database of an older version is re-keyed when opened.
pub const DEDUP_KEY_VERSION: i64 = 2;

/// The database's format, in its header's `user_version`: [`DEDUP_KEY_VERSION`], then 3 since
/// the data-quality samples are kept in tables of their own (`quality::move_samples_apart`),
/// which a server of format 2 would not find. A server refuses a database of a newer format.
pub const DATA_FORMAT: i64 = 3;

/// Replaces every stored event's dedup digest with the current `dedup_key` of its fields (in the
/// caller's transaction, 10,000 rows at a time in rowid order). Returns how many rows it re-keyed.
fn rekey_events(conn: &Connection) -> anyhow::Result<usize> {
    // Events without an `$insert_id` (`/track` allows them) have a digest that is no function of
    // their fields, unique to each (see `EventBatch::push`): keyed again from their fields, copies
    // of one event would collide. They keep theirs.
    let mut read = conn.prepare(
        "SELECT rowid, event, time_ms, distinct_id, insert_id FROM events WHERE rowid > ?1 AND insert_id <> '' ORDER BY rowid LIMIT 10000",
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
