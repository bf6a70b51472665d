//! Group profiles (`/groups`, reference): the stored properties of each group, named by its
//! `$group_key` (the kind of group, such as `Company`) and `$group_id`, read, replaced and deleted
//! whole like user profiles (the operations are applied before, by
//! `ingest::apply_profile_updates`), and listed a page at a time for the read API. Each function
//! runs the same-named one of `sqlite/groups.rs` or `pg/groups.rs`.

use super::conn::{dispatch, Conn};
use serde_json::{Map, Value};

/// A stored group profile.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredGroup {
    pub key: String,
    pub id: String,
    pub properties: Map<String, Value>,
}

/// The properties of a group profile, if it exists.
pub fn get_group(conn: &Conn<'_>, project_id: i64, key: &str, id: &str) -> anyhow::Result<Option<Map<String, Value>>> {
    dispatch!(conn, groups::get_group(project_id, key, id))
}

/// Creates or replaces a group profile.
pub fn put_group(conn: &Conn<'_>, project_id: i64, key: &str, id: &str, properties: &Map<String, Value>) -> anyhow::Result<()> {
    dispatch!(conn, groups::put_group(project_id, key, id, properties))
}

/// Deletes a group profile; returns whether it existed.
pub fn delete_group(conn: &Conn<'_>, project_id: i64, key: &str, id: &str) -> anyhow::Result<bool> {
    dispatch!(conn, groups::delete_group(project_id, key, id))
}

/// At most `limit` group profiles of a project in `(group_key, group_id)` order (byte order): of
/// one `group_key` when given, and after the group `after` (the last one of the previous page).
pub fn list_groups(
    conn: &Conn<'_>,
    project_id: i64,
    key: Option<&str>,
    after: Option<(&str, &str)>,
    limit: usize,
) -> anyhow::Result<Vec<StoredGroup>> {
    dispatch!(conn, groups::list_groups(project_id, key, after, limit))
}
