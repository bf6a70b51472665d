//! User profiles: their stored properties, read, replaced and deleted whole (the operations of
//! `/engage` are applied before, by `ingest::apply_profile_updates`).

use super::conn::{dispatch, Conn};
use serde_json::{Map, Value};

/// The properties of a profile, if it exists.
pub fn get_profile(conn: &Conn<'_>, project_id: i64, distinct_id: &str) -> anyhow::Result<Option<Map<String, Value>>> {
    dispatch!(conn, profiles::get_profile(project_id, distinct_id))
}

/// Creates or replaces a profile.
pub fn put_profile(conn: &Conn<'_>, project_id: i64, distinct_id: &str, properties: &Map<String, Value>) -> anyhow::Result<()> {
    dispatch!(conn, profiles::put_profile(project_id, distinct_id, properties))
}

/// Deletes a profile; returns whether it existed.
pub fn delete_profile(conn: &Conn<'_>, project_id: i64, distinct_id: &str) -> anyhow::Result<bool> {
    dispatch!(conn, profiles::delete_profile(project_id, distinct_id))
}
