//! Rate-limit buckets kept in the database, so that every server process on it counts the same
//! requests (`ratelimit.rs` holds the rules and the in-memory buckets). PostgreSQL keeps them;
//! SQLite, served by one process, does not, and its callers keep theirs in memory.

use super::conn::Conn;

/// One charge to the bucket of `(kind, project_id)`: the bucket holds at most `capacity` units,
/// refills `capacity` a minute, and is charged `cost` (at most `capacity`) if it holds that many.
#[derive(Debug, Clone, Copy)]
pub struct Charge<'a> {
    pub kind: &'a str,
    pub project_id: i64,
    pub capacity: f64,
    pub cost: f64,
    /// The time of the charge, in microseconds since the epoch.
    pub now_us: i64,
}

/// Charges a bucket in one atomic statement: `Some(Ok(()))` when charged, `Some(Err(tokens))`
/// with what the bucket held when it was refused, and `None` when this database keeps no buckets.
pub fn take_tokens(conn: &Conn<'_>, charge: &Charge<'_>) -> anyhow::Result<Option<Result<(), f64>>> {
    match conn {
        Conn::Sqlite(_) => Ok(None),
        Conn::Postgres(c) => super::pg::buckets::take_tokens(&mut c.borrow_mut(), charge).map(Some),
    }
}

impl super::Store {
    /// Whether the database keeps the rate-limit buckets ([`take_tokens`] answers `Some`).
    pub fn keeps_rate_limits(&self) -> bool {
        matches!(self.backend, super::Backend::Postgres(_))
    }
}
