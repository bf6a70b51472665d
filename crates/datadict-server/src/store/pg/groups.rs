//! Group profiles on PostgreSQL (migration 3), stored as the same JSON text as on SQLite. Keys and
//! ids compare bytewise (`COLLATE "C"`), so pages follow SQLite's order.

use super::NOW_S;
use crate::store::groups::StoredGroup;
use anyhow::Context;
use postgres::Client;
use serde_json::{Map, Value};

fn properties(json: &str) -> anyhow::Result<Map<String, Value>> {
    serde_json::from_str(json).context("a stored group profile is not readable")
}

pub fn get_group(c: &mut Client, project_id: i64, key: &str, id: &str) -> anyhow::Result<Option<Map<String, Value>>> {
    let row = c.query_opt(
        "SELECT properties FROM group_profiles WHERE project_id = $1 AND group_key = $2 AND group_id = $3",
        &[&project_id, &key, &id],
    )?;
    row.map(|r| properties(r.get(0))).transpose()
}

pub fn put_group(c: &mut Client, project_id: i64, key: &str, id: &str, properties: &Map<String, Value>) -> anyhow::Result<()> {
    c.execute(
        &format!(
            "INSERT INTO group_profiles (project_id, group_key, group_id, properties) VALUES ($1, $2, $3, $4)
             ON CONFLICT (project_id, group_key, group_id) DO UPDATE SET properties = excluded.properties, updated_at = {NOW_S}"
        ),
        &[&project_id, &key, &id, &serde_json::to_string(properties)?],
    )?;
    Ok(())
}

pub fn delete_group(c: &mut Client, project_id: i64, key: &str, id: &str) -> anyhow::Result<bool> {
    Ok(c.execute(
        "DELETE FROM group_profiles WHERE project_id = $1 AND group_key = $2 AND group_id = $3",
        &[&project_id, &key, &id],
    )? > 0)
}

pub fn list_groups(
    c: &mut Client,
    project_id: i64,
    key: Option<&str>,
    after: Option<(&str, &str)>,
    limit: usize,
) -> anyhow::Result<Vec<StoredGroup>> {
    let (after_key, after_id) = after.unzip();
    // The row comparison follows the primary key's order, so a page starts where the last one
    // ended with one index seek, as on SQLite.
    let rows = c.query(
        "SELECT group_key, group_id, properties FROM group_profiles
         WHERE project_id = $1 AND ($2::text IS NULL OR group_key = $2)
           AND ($3::text IS NULL OR (group_key, group_id) > ($3::text, $4::text))
         ORDER BY group_key, group_id LIMIT $5",
        &[&project_id, &key, &after_key, &after_id, &(limit as i64)],
    )?;
    rows.iter()
        .map(|r| Ok(StoredGroup { key: r.get(0), id: r.get(1), properties: properties(r.get(2))? }))
        .collect()
}
