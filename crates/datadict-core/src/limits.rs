//! The limits of the event-import and profile-update interfaces, in one struct, so a limit is
//! changed in one place and the server, the web app and the npm module all read the same values.
//!
//! Every default comes from FACTS.md (the vendor's public documentation); the spec itself says
//! "Size limits of the import request: not shown" (§8).

use serde::{Deserialize, Serialize};

/// One mebibyte. The vendor's documents write "1 MB" / "10 MB" and the OpenAPI 413 example says
/// 2,097,152 bytes, so the vendor counts in binary units.
pub const MB: usize = 1024 * 1024;

/// 1971-01-01T00:00:00Z in milliseconds since the epoch (FACTS.md: earlier times are rejected).
pub const MIN_EVENT_TIME_MS: i64 = 31_536_000_000;

/// FACTS.md: these `distinct_id` / `$insert_id` values are rejected (placeholders that would merge
/// unrelated users). Compared ignoring ASCII case.
pub const FORBIDDEN_IDS: [&str; 17] = [
    "00000000-0000-0000-0000-000000000000",
    "anon",
    "anonymous",
    "nil",
    "none",
    "null",
    "n/a",
    "na",
    "undefined",
    "unknown",
    "<nil>",
    "0",
    "-1",
    "true",
    "false",
    "[]",
    "{}",
];

/// The limits enforced on imported events and profile updates.
///
/// Fields named `max_*` are inclusive ("at most"); fields named `*_below` are exclusive bounds
/// ("fewer than" / "under"), matching how FACTS.md states each rule. Serialized in camelCase so the
/// server can report the limits it enforces and a JavaScript client can adopt them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Limits {
    /// FACTS.md: at most 2,000 events per import request.
    pub max_events_per_request: usize,
    /// FACTS.md: at most 10 MB of uncompressed JSON per import request (configurable because the
    /// vendor's own 413 example still says 2,097,152 bytes).
    pub max_request_bytes: usize,
    /// FACTS.md: each event is under 1 MB of JSON.
    pub event_bytes_below: usize,
    /// FACTS.md: an event has fewer than 255 properties.
    pub properties_below: usize,
    /// FACTS.md: nested objects are at most 3 levels deep. A property's value counts as level 1
    /// when it is an object or array, its children as level 2, and so on.
    pub max_depth: usize,
    /// FACTS.md: a nested object has fewer than 255 keys.
    pub object_keys_below: usize,
    /// FACTS.md: an array has fewer than 255 elements.
    pub array_items_below: usize,
    /// FACTS.md: strings longer than this many bytes are truncated by the service (a warning, not
    /// an error).
    pub string_truncate_bytes: usize,
    /// FACTS.md: `$insert_id` is at most 36 bytes.
    pub max_insert_id_bytes: usize,
    /// FACTS.md: the forbidden `distinct_id` / `$insert_id` values.
    pub forbidden_ids: Vec<String>,
    /// FACTS.md: `time` may be at most one hour ahead of the receiver's clock.
    pub max_future_ms: i64,
    /// FACTS.md: `time` before 1971-01-01 is rejected.
    pub min_time_ms: i64,
    /// FACTS.md (`/engage`): at most 2,000 profile updates per request.
    pub max_profile_updates_per_request: usize,
    /// FACTS.md (`/engage`): at most 1 MB per profile update.
    pub max_profile_update_bytes: usize,
    /// FACTS.md (`/engage`): at most 2,000 properties per profile.
    pub max_profile_properties: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_events_per_request: 2_000,
            max_request_bytes: 10 * MB,
            event_bytes_below: MB,
            properties_below: 255,
            max_depth: 3,
            object_keys_below: 255,
            array_items_below: 255,
            string_truncate_bytes: 255,
            max_insert_id_bytes: 36,
            forbidden_ids: FORBIDDEN_IDS.iter().map(|s| (*s).to_owned()).collect(),
            max_future_ms: 3_600_000,
            min_time_ms: MIN_EVENT_TIME_MS,
            max_profile_updates_per_request: 2_000,
            max_profile_update_bytes: MB,
            max_profile_properties: 2_000,
        }
    }
}

impl Limits {
    /// Whether `id` is one of the forbidden placeholder ids (ASCII case is ignored, so `None` and
    /// `NULL` are caught as well as `none` and `null`).
    pub fn is_forbidden_id(&self, id: &str) -> bool {
        self.forbidden_ids.iter().any(|f| f.eq_ignore_ascii_case(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_values() {
        let l = Limits::default();
        assert_eq!(l.max_events_per_request, 2000);
        assert_eq!(l.max_request_bytes, 10_485_760);
        assert_eq!(l.event_bytes_below, 1_048_576);
        assert_eq!((l.properties_below, l.max_depth, l.object_keys_below, l.array_items_below), (255, 3, 255, 255));
        assert_eq!((l.string_truncate_bytes, l.max_insert_id_bytes), (255, 36));
        assert_eq!(l.forbidden_ids.len(), 17);
        // 1971-01-01 is 365 days after the epoch.
        assert_eq!(l.min_time_ms, 365 * 86_400_000);
    }

    #[test]
    fn forbidden_ids_ignore_case() {
        let l = Limits::default();
        for id in ["null", "NULL", "None", "n/a", "00000000-0000-0000-0000-000000000000", "{}", "-1"] {
            assert!(l.is_forbidden_id(id), "{id}");
        }
        for id in ["", "nulls", "user-1", "1", "anon1"] {
            assert!(!l.is_forbidden_id(id), "{id}");
        }
    }

    #[test]
    fn limits_round_trip_in_camel_case_and_fill_defaults() {
        let l = Limits { max_request_bytes: 2_097_152, ..Limits::default() };
        let json = serde_json::to_value(&l).unwrap();
        assert_eq!(json["maxRequestBytes"], 2_097_152);
        let back: Limits = serde_json::from_value(json).unwrap();
        assert_eq!(back, l);
        let partial: Limits = serde_json::from_str(r#"{"maxEventsPerRequest": 50}"#).unwrap();
        assert_eq!(partial, Limits { max_events_per_request: 50, ..Limits::default() });
    }
}
