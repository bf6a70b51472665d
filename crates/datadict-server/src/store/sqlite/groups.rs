//! Group profiles on SQLite: the stored properties of each group, keyed by project, `$group_key`
//! and `$group_id`, read, replaced and deleted whole, and listed a page at a time.

use crate::store::groups::StoredGroup;
use anyhow::Context;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{Map, Value};

/// The table of group profiles, created when the store opens (`tables::create`, in the same
/// transaction as the others). A database written before group profiles existed gains it then:
/// the table is new and empty, so there is nothing to upgrade and the data format
/// (`DEDUP_KEY_VERSION`) does not change.
pub(crate) const TABLES: &str = "
CREATE TABLE IF NOT EXISTS group_profiles (
    project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    group_key TEXT NOT NULL,
    group_id TEXT NOT NULL,
    properties TEXT NOT NULL,
    updated_at INTEGER NOT NULL DEFAULT (unixepoch()),
    PRIMARY KEY (project_id, group_key, group_id)
) WITHOUT ROWID;
";

fn properties(json: &str) -> anyhow::Result<Map<String, Value>> {
    serde_json::from_str(json).context("a stored group profile is not readable")
}

/// The properties of a group profile, if it exists.
pub fn get_group(conn: &Connection, project_id: i64, key: &str, id: &str) -> anyhow::Result<Option<Map<String, Value>>> {
    let json: Option<String> = conn
        .query_row(
            "SELECT properties FROM group_profiles WHERE project_id = ?1 AND group_key = ?2 AND group_id = ?3",
            params![project_id, key, id],
            |r| r.get(0),
        )
        .optional()?;
    json.as_deref().map(properties).transpose()
}

/// Creates or replaces a group profile.
pub fn put_group(conn: &Connection, project_id: i64, key: &str, id: &str, properties: &Map<String, Value>) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO group_profiles (project_id, group_key, group_id, properties) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (project_id, group_key, group_id) DO UPDATE SET properties = excluded.properties, updated_at = unixepoch()",
        params![project_id, key, id, serde_json::to_string(properties)?],
    )?;
    Ok(())
}

/// Deletes a group profile; returns whether it existed.
pub fn delete_group(conn: &Connection, project_id: i64, key: &str, id: &str) -> anyhow::Result<bool> {
    let deleted = conn.execute(
        "DELETE FROM group_profiles WHERE project_id = ?1 AND group_key = ?2 AND group_id = ?3",
        params![project_id, key, id],
    )?;
    Ok(deleted > 0)
}

/// At most `limit` group profiles of a project in `(group_key, group_id)` order: of one
/// `group_key` when given, and after the group `after` (the last one of the previous page).
pub fn list_groups(conn: &Connection, project_id: i64, key: Option<&str>, after: Option<(&str, &str)>, limit: usize) -> anyhow::Result<Vec<StoredGroup>> {
    let (after_key, after_id) = after.unzip();
    // Row values compare `(group_key, group_id)` as the primary key orders them, so a page
    // starts where the last one ended with one seek.
    let mut stmt = conn.prepare_cached(
        "SELECT group_key, group_id, properties FROM group_profiles
         WHERE project_id = ?1 AND (?2 IS NULL OR group_key = ?2) AND (?3 IS NULL OR (group_key, group_id) > (?3, ?4))
         ORDER BY group_key, group_id LIMIT ?5",
    )?;
    let rows = stmt.query_map(params![project_id, key, after_key, after_id, limit as i64], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
    })?;
    rows.map(|row| {
        let (key, id, json) = row?;
        Ok(StoredGroup { key, id, properties: properties(&json)? })
    })
    .collect()
}
