//! The read API's queries: stored events by name, user, property and time, and the 30-day
//! counts per event name.

use super::conn::{dispatch, Conn};

/// A property filter of the read API: `properties.<property>` equals `value`, where `value`
/// matches the string `value` or the JSON scalar it spells (`12`, `true`, `null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyFilter {
    pub property: String,
    pub value: String,
}

/// What the read API asks of stored events.
#[derive(Debug, Clone, Default)]
pub struct EventQuery {
    pub event: Option<String>,
    pub distinct_id: Option<String>,
    pub filter: Option<PropertyFilter>,
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
    pub limit: usize,
    /// The most bytes of records a page holds: rows stop at the first that reaches it (a page
    /// of 1,000 events of up to 1 MiB each would otherwise be a gigabyte in memory).
    pub max_bytes: usize,
    /// `(time_ms, rowid)` of the last event of the previous page.
    pub cursor: Option<(i64, i64)>,
}

/// A stored event as the read API serves it.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub rowid: i64,
    pub time_ms: i64,
    pub record: String,
}

/// How many events of one name happened since a time.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventCount {
    pub event: String,
    pub count: i64,
    /// The time of the latest such event, in milliseconds since epoch.
    pub last_seen_ms: i64,
}

/// Stored events matching `q`, newest first (ties broken by storage order).
pub fn query_events(conn: &Conn<'_>, project_id: i64, q: &EventQuery) -> anyhow::Result<Vec<StoredEvent>> {
    dispatch!(conn, reads::query_events(project_id, q))
}

/// Per event name, the events with `time >= since_ms`, most frequent first.
pub fn event_counts(conn: &Conn<'_>, project_id: i64, since_ms: i64) -> anyhow::Result<Vec<EventCount>> {
    dispatch!(conn, reads::event_counts(project_id, since_ms))
}
