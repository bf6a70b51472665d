//! User profiles: their stored properties, read, replaced and deleted whole (the operations of
//! `/engage` are applied before, by `ingest::apply_profile_updates`).

use anyhow::Context;
use rusqlite::{params, Connection, OptionalExtension};

/// The properties of a profile, if it exists.
pub fn get_profile(
    conn: &Connection,
    project_id: i64,
    distinct_id: &str,
) -> anyhow::Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let json: Option<String> = conn
        .query_row(
            "SELECT properties FROM profiles WHERE project_id = ?1 AND distinct_id = ?2",
            params![project_id, distinct_id],
            |r| r.get(0),
        )
        .optional()?;
    json.map(|j| serde_json::from_str(&j).context("a stored profile is not readable")).transpose()
}

/// Creates or replaces a profile.
pub fn put_profile(
    conn: &Connection,
    project_id: i64,
    distinct_id: &str,
    properties: &serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<()> {
    conn.execute(
        "INSERT INTO profiles (project_id, distinct_id, properties) VALUES (?1, ?2, ?3)
         ON CONFLICT (project_id, distinct_id) DO UPDATE SET properties = excluded.properties, updated_at = unixepoch()",
        params![project_id, distinct_id, serde_json::to_string(properties)?],
    )?;
    Ok(())
}

/// Deletes a profile; returns whether it existed.
pub fn delete_profile(conn: &Connection, project_id: i64, distinct_id: &str) -> anyhow::Result<bool> {
    Ok(conn.execute("DELETE FROM profiles WHERE project_id = ?1 AND distinct_id = ?2", params![project_id, distinct_id])? > 0)
}
