//! Per-project rate limits (FACTS.md): token buckets, one per project and kind of request. On
//! PostgreSQL the buckets are rows of the database, so that every server process on it counts the
//! same requests; on SQLite (one server process) they are kept in this process's memory. A refused
//! request learns how long to wait (`Retry-After`). The FACTS.md values of the schemas API's
//! limits live here too, so that every default is stated once.

use crate::store::{self, Conn, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The kinds of request that are limited separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Requests to the schemas API; a request costs 1.
    Schemas,
    /// Uncompressed bytes sent to `/import` and `/engage`.
    IngestBytes,
    /// Entities plus properties written by schemas create/replace requests.
    SchemaUpdates,
}

impl Kind {
    /// The bucket's name in the database.
    fn as_str(self) -> &'static str {
        match self {
            Self::Schemas => "schemas",
            Self::IngestBytes => "ingest_bytes",
            Self::SchemaUpdates => "schema_updates",
        }
    }
}

/// FACTS.md: the service allows 4,000 events+properties updated a minute per project.
pub const SERVICE_SCHEMA_UPDATES_PER_MINUTE: u64 = 4_000;
/// FACTS.md: at most 3,000 truncations or deletions per schemas request. Unlike the two rates
/// above, this cap is enforced by default, because it protects data rather than capacity.
pub const DEFAULT_SCHEMA_DELETIONS_PER_REQUEST: u64 = 3_000;

/// A clock that only moves when told to, for tests of refills that must not wait a minute.
/// Cloning shares it.
/// It moves both the monotonic time of the in-memory buckets and the wall-clock time of the
/// database's.
#[derive(Debug, Clone)]
pub struct ManualClock {
    start: Instant,
    start_us: i64,
    offset: Arc<Mutex<Duration>>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self { start: Instant::now(), start_us: wall_clock_us(), offset: Arc::default() }
    }
}

impl ManualClock {
    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        *self.offset.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += by;
    }

    fn offset(&self) -> Duration {
        *self.offset.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn now(&self) -> Instant {
        self.start + self.offset()
    }

    fn now_us(&self) -> i64 {
        self.start_us + self.offset().as_micros() as i64
    }
}

/// Microseconds since the epoch by the system clock: the time base the processes sharing a
/// database agree on (their clocks must agree to well under a second).
fn wall_clock_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// A limit of `per_minute` units in any minute, refilled continuously.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub per_minute: u64,
}

/// The buckets of every project. Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct RateLimiter {
    buckets: Arc<Mutex<HashMap<(Kind, i64), Bucket>>>,
    /// `None` reads the system clock.
    clock: Option<ManualClock>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    /// A limiter whose buckets refill by `clock` rather than by the system clock.
    pub fn with_clock(clock: ManualClock) -> Self {
        Self { buckets: Arc::default(), clock: Some(clock) }
    }

    /// Takes `cost` units from the bucket of `(kind, project_id)` where `store` keeps it (see the
    /// module's documentation), or says how long to wait before the same request would be
    /// accepted. On SQLite this costs no trip to the blocking pool.
    pub async fn charge(&self, store: &Store, kind: Kind, project_id: i64, limit: Limit, cost: u64) -> anyhow::Result<Result<(), Duration>> {
        if !store.keeps_rate_limits() {
            return Ok(self.check(kind, project_id, limit, cost));
        }
        let limiter = self.clone();
        store.call(move |conn| limiter.charge_on(conn, kind, project_id, limit, cost)).await
    }

    /// [`RateLimiter::charge`] on a connection the caller holds (inside `Store::call`): on
    /// PostgreSQL the bucket's row is updated by this connection, in its transaction when one is
    /// open, so that a request refused later in that transaction is not charged.
    pub fn charge_on(&self, conn: &Conn<'_>, kind: Kind, project_id: i64, limit: Limit, cost: u64) -> anyhow::Result<Result<(), Duration>> {
        let (capacity, rate, taken) = terms(limit, cost);
        let now_us = self.clock.as_ref().map_or_else(wall_clock_us, ManualClock::now_us);
        let charge = store::Charge { kind: kind.as_str(), project_id, capacity, cost: taken, now_us };
        match store::take_tokens(conn, &charge)? {
            None => Ok(self.check(kind, project_id, limit, cost)),
            Some(Ok(())) => Ok(Ok(())),
            Some(Err(tokens)) => Ok(Err(Duration::from_secs_f64((taken - tokens) / rate))),
        }
    }

    /// Takes `cost` units from this process's bucket of `(kind, project_id)`, or says how long to
    /// wait before the same request would be accepted. A cost above the limit is charged as the
    /// whole limit, so that one large request is possible on a fresh bucket; the schemas routes
    /// refuse such a request before charging it (`routes::schemas`), so only an ingestion body
    /// larger than a configured byte budget gets this.
    pub fn check(&self, kind: Kind, project_id: i64, limit: Limit, cost: u64) -> Result<(), Duration> {
        let now = self.clock.as_ref().map_or_else(Instant::now, ManualClock::now);
        self.check_at(kind, project_id, limit, cost, now)
    }

    fn check_at(&self, kind: Kind, project_id: i64, limit: Limit, cost: u64, now: Instant) -> Result<(), Duration> {
        let (capacity, rate, cost) = terms(limit, cost);
        let mut buckets = self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let bucket = buckets.entry((kind, project_id)).or_insert(Bucket { tokens: capacity, at: now });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(capacity);
        bucket.at = now;
        if bucket.tokens >= cost {
            bucket.tokens -= cost;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((cost - bucket.tokens) / rate))
        }
    }
}

/// A bucket's capacity, its refill per second, and what `cost` takes from it (at most all of it).
fn terms(limit: Limit, cost: u64) -> (f64, f64, f64) {
    let capacity = limit.per_minute.max(1) as f64;
    (capacity, capacity / 60.0, (cost as f64).min(capacity))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_refuses_then_refills() {
        let limiter = RateLimiter::default();
        let limit = Limit { per_minute: 5 };
        let t0 = Instant::now();
        for _ in 0..5 {
            assert!(limiter.check_at(Kind::Schemas, 1, limit, 1, t0).is_ok());
        }
        let wait = limiter.check_at(Kind::Schemas, 1, limit, 1, t0).unwrap_err();
        assert_eq!(wait.as_secs(), 12);
        // Another project and another kind have their own buckets.
        assert!(limiter.check_at(Kind::Schemas, 2, limit, 1, t0).is_ok());
        assert!(limiter.check_at(Kind::IngestBytes, 1, limit, 1, t0).is_ok());
        assert!(limiter.check_at(Kind::Schemas, 1, limit, 1, t0 + Duration::from_secs(12)).is_ok());
    }

    #[test]
    fn a_manual_clock_drives_the_refill() {
        let clock = ManualClock::default();
        let limiter = RateLimiter::with_clock(clock.clone());
        let limit = Limit { per_minute: 60 };
        assert!(limiter.check(Kind::SchemaUpdates, 1, limit, 60).is_ok());
        assert_eq!(limiter.check(Kind::SchemaUpdates, 1, limit, 2).unwrap_err().as_secs(), 2);
        clock.advance(Duration::from_secs(1));
        assert_eq!(limiter.check(Kind::SchemaUpdates, 1, limit, 2).unwrap_err().as_secs(), 1);
        clock.advance(Duration::from_secs(1));
        assert!(limiter.check(Kind::SchemaUpdates, 1, limit, 2).is_ok());
    }
}
