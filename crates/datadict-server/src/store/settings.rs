//! Settings the database remembers about itself, one text value per key (`server_settings`):
//! the dictionary's namespace, stored at the first start (see `startup::check_namespace`). The
//! table is created at start on both backends (`sqlite::tables`, `pg::migrations`); a server
//! that predates it never reads it.

use super::conn::Conn;
use rusqlite::OptionalExtension;

/// The table, in SQL both SQLite and PostgreSQL take.
pub(super) const TABLE: &str = "CREATE TABLE IF NOT EXISTS server_settings (key text PRIMARY KEY, value text NOT NULL)";

/// The key of the dictionary's namespace.
pub const NAMESPACE: &str = "namespace";

/// Stores `value` under `key` unless the key has one already, and returns the stored value and
/// whether it was stored now. Atomic on both stores, so two servers starting at once on one
/// PostgreSQL database agree.
pub fn remember(conn: &Conn<'_>, key: &str, value: &str) -> anyhow::Result<(String, bool)> {
    const INSERT: &str = "INSERT INTO server_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING";
    const SELECT: &str = "SELECT value FROM server_settings WHERE key = $1";
    match conn {
        Conn::Sqlite(c) => {
            let inserted = c.execute(INSERT, [key, value])? == 1;
            Ok((c.query_row(SELECT, [key], |r| r.get(0))?, inserted))
        }
        Conn::Postgres(c) => {
            let mut c = c.borrow_mut();
            let inserted = c.execute(INSERT, &[&key, &value])? == 1;
            Ok((c.query_one(SELECT, &[&key])?.get(0), inserted))
        }
    }
}

/// The value stored under `key`, if any.
pub fn get(conn: &Conn<'_>, key: &str) -> anyhow::Result<Option<String>> {
    const SELECT: &str = "SELECT value FROM server_settings WHERE key = $1";
    match conn {
        Conn::Sqlite(c) => Ok(c.query_row(SELECT, [key], |r| r.get(0)).optional()?),
        Conn::Postgres(c) => Ok(c.borrow_mut().query_opt(SELECT, &[&key])?.map(|r| r.get(0))),
    }
}
