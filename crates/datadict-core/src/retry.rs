//! The import's retry policy as pure logic (FACTS.md "Clients"): no clock and no sleep inside. The
//! caller reports how an attempt ended and supplies a random number; the policy answers whether
//! and after how long to try again.

use crate::time::Date;
use serde::{Deserialize, Serialize};

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The server answered with this status.
    Status(u16),
    /// No answer: the connection failed or timed out.
    NetworkError,
}

/// Why the policy stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GiveUp {
    /// FACTS.md: a 400 is never resent as is (the valid records were ingested; fix the others).
    InvalidRequest,
    /// 401/403: the credentials are missing, wrong or lack permission.
    Unauthorized,
    /// 413: the request is too large; split it.
    TooLarge,
    /// Another status that retrying will not change.
    NotRetryable,
    /// The attempt cap is reached.
    TooManyAttempts,
}

/// The policy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The request succeeded.
    Done,
    /// Send the same request again after this many milliseconds.
    RetryAfterMs(u64),
    /// Stop.
    GiveUp(GiveUp),
}

/// FACTS.md: retry 429, 502 and 503 and network errors, backing off from 2 s, doubling up to 60 s,
/// plus 1–5 s of jitter; honour `Retry-After`; never resend a 400 as is. The attempt cap is this
/// implementation's choice, so that a dead endpoint cannot hold a client forever.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetryPolicy {
    pub initial_backoff_ms: u64,
    pub max_backoff_ms: u64,
    pub jitter_min_ms: u64,
    pub jitter_max_ms: u64,
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Statuses worth retrying.
    pub retry_statuses: Vec<u16>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            initial_backoff_ms: 2_000,
            max_backoff_ms: 60_000,
            jitter_min_ms: 1_000,
            jitter_max_ms: 5_000,
            max_attempts: 10,
            retry_statuses: vec![429, 502, 503],
        }
    }
}

impl RetryPolicy {
    /// The backoff before attempt `attempt + 1`, without jitter: 2 s, 4 s, 8 s, ... capped.
    pub fn backoff_ms(&self, attempt: u32) -> u64 {
        let shift = attempt.saturating_sub(1).min(32);
        self.initial_backoff_ms.saturating_mul(1u64 << shift).min(self.max_backoff_ms)
    }

    /// Decides what follows attempt number `attempt` (1 for the first) that ended with `outcome`.
    /// `retry_after_ms` is the server's `Retry-After` already converted (see
    /// [`parse_retry_after`]); `unit_random` is a caller-supplied random number in `[0, 1)` that
    /// places the jitter.
    pub fn decide(&self, attempt: u32, outcome: Attempt, retry_after_ms: Option<u64>, unit_random: f64) -> Decision {
        let retryable = match outcome {
            Attempt::Status(s) if (200..300).contains(&s) => return Decision::Done,
            Attempt::Status(s) => {
                if self.retry_statuses.contains(&s) {
                    true
                } else {
                    return Decision::GiveUp(match s {
                        400 => GiveUp::InvalidRequest,
                        401 | 403 => GiveUp::Unauthorized,
                        413 => GiveUp::TooLarge,
                        _ => GiveUp::NotRetryable,
                    });
                }
            }
            Attempt::NetworkError => true,
        };
        debug_assert!(retryable);
        if attempt >= self.max_attempts {
            return Decision::GiveUp(GiveUp::TooManyAttempts);
        }
        let r = if unit_random.is_finite() { unit_random.clamp(0.0, 1.0) } else { 0.0 };
        let jitter = self.jitter_min_ms + ((self.jitter_max_ms.saturating_sub(self.jitter_min_ms)) as f64 * r) as u64;
        let backoff = self.backoff_ms(attempt) + jitter;
        // The server knows its own load: wait at least as long as it asks.
        Decision::RetryAfterMs(backoff.max(retry_after_ms.unwrap_or(0)))
    }
}

/// Reads a `Retry-After` header: delay-seconds (`120`) or an HTTP date (`Sun, 06 Nov 1994 08:49:37
/// GMT`, which needs the caller's clock `now_ms`). Returns the wait in milliseconds.
pub fn parse_retry_after(value: &str, now_ms: i64) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs.saturating_mul(1000));
    }
    let at = parse_http_date(value)?;
    Some(u64::try_from(at - now_ms).unwrap_or(0))
}

/// Parses the IMF-fixdate form of RFC 9110 (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn parse_http_date(s: &str) -> Option<i64> {
    let rest = s.split_once(", ")?.1;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts[..] else {
        return None;
    };
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    let date = Date::parse(&format!("{year:0>4}-{month:02}-{day:0>2}"))?;
    let hms: Vec<i64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [h, m, sec] = hms[..] else {
        return None;
    };
    Some(date.start_ms() + ((h * 60 + m) * 60 + sec) * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(attempt: u32, outcome: Attempt, retry_after: Option<u64>, random: f64, expected: Decision) {
        let got = RetryPolicy::default().decide(attempt, outcome, retry_after, random);
        assert_eq!(got, expected, "attempt {attempt} {outcome:?}");
    }

    #[test]
    fn decisions() {
        use Attempt::*;
        check(1, Status(200), None, 0.5, Decision::Done);
        check(1, Status(400), None, 0.5, Decision::GiveUp(GiveUp::InvalidRequest));
        check(1, Status(401), None, 0.5, Decision::GiveUp(GiveUp::Unauthorized));
        check(1, Status(413), None, 0.5, Decision::GiveUp(GiveUp::TooLarge));
        check(1, Status(404), None, 0.5, Decision::GiveUp(GiveUp::NotRetryable));
        // 2 s backoff plus jitter between 1 s and 5 s.
        check(1, Status(429), None, 0.0, Decision::RetryAfterMs(3_000));
        check(1, Status(503), None, 0.999_999, Decision::RetryAfterMs(6_999));
        check(2, Status(502), None, 0.5, Decision::RetryAfterMs(7_000));
        check(3, NetworkError, None, 0.0, Decision::RetryAfterMs(9_000));
        // Doubling stops at 60 s.
        check(6, NetworkError, None, 0.0, Decision::RetryAfterMs(61_000));
        check(9, NetworkError, None, 0.0, Decision::RetryAfterMs(61_000));
        check(10, Status(429), None, 0.0, Decision::GiveUp(GiveUp::TooManyAttempts));
        // Retry-After longer than the backoff wins; shorter does not shorten it.
        check(1, Status(429), Some(120_000), 0.0, Decision::RetryAfterMs(120_000));
        check(1, Status(429), Some(1_000), 0.0, Decision::RetryAfterMs(3_000));
        check(1, Status(429), None, f64::NAN, Decision::RetryAfterMs(3_000));
    }

    #[test]
    fn retry_after_values() {
        let now = Date::parse("1994-11-06").unwrap().start_ms() + (8 * 3600 + 49 * 60 + 7) * 1000;
        assert_eq!(parse_retry_after("120", now), Some(120_000));
        assert_eq!(parse_retry_after(" 0 ", now), Some(0));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), Some(30_000));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:48:37 GMT", now), Some(0));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("Sun, 06 Foo 1994 08:49:37 GMT", now), None);
    }
}
