//! Per-project rate limits (FACTS.md): token buckets kept in memory, one per project and kind of
//! request. A refused request learns how long to wait (`Retry-After`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The kinds of request that are limited separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Requests to the schemas API; a request costs 1.
    Schemas,
    /// Uncompressed bytes sent to `/import` and `/engage`.
    IngestBytes,
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
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    /// Takes `cost` units from the bucket of `(kind, project_id)`, or says how long to wait before
    /// the same request would be accepted. A cost above the limit is charged as the whole limit,
    /// so that one large request is possible on a fresh bucket.
    pub fn check(&self, kind: Kind, project_id: i64, limit: Limit, cost: u64) -> Result<(), Duration> {
        self.check_at(kind, project_id, limit, cost, Instant::now())
    }

    fn check_at(&self, kind: Kind, project_id: i64, limit: Limit, cost: u64, now: Instant) -> Result<(), Duration> {
        let capacity = limit.per_minute.max(1) as f64;
        let rate = capacity / 60.0;
        let cost = (cost as f64).min(capacity);
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
}
