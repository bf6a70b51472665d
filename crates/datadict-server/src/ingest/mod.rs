//! What every way of ingesting shares, routes and background workers alike: the batch check with
//! the dictionary's drops ([`batch`]), each project's dictionary compiled and kept in memory ([`cache`]), the dictionary check on arrival and its tallies ([`quality`]), the violation rows of each event shape ([`shapes`]), the tokens kept out of their samples ([`redact`]) and the loading of a job's events and profiles ([`load`]).
//! The ingestion routes (`routes::import`, `routes::track`, `routes::profiles`), `warehouse` and
//! `migrate` import it; it imports no route.

pub mod batch;
pub mod cache;
pub mod load;
pub mod quality;
pub mod redact;
pub mod shapes;

pub use batch::{body_tokens, check_batch, check_body, send_checked, store_events, Checked, Drops, Intake, RecordSource, Tokens, INLINE_BYTES};
pub use load::{apply_profile_updates, migrate_profiles, record_refused, set_profiles, store_profile_updates, Loaded, Loader, Refused, RefusedRecord};

/// The current time in milliseconds since the epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}
