//! User profiles on PostgreSQL, stored as the same JSON text as on SQLite.

use super::NOW_S;
use anyhow::Context;
use postgres::Client;
use serde_json::{Map, Value};

pub fn get_profile(c: &mut Client, project_id: i64, distinct_id: &str) -> anyhow::Result<Option<Map<String, Value>>> {
    let row = c.query_opt(
        "SELECT properties FROM profiles WHERE project_id = $1 AND distinct_id = $2",
        &[&project_id, &distinct_id],
    )?;
    row.map(|r| serde_json::from_str(r.get(0)).context("a stored profile is not readable"))
        .transpose()
}

pub fn put_profile(c: &mut Client, project_id: i64, distinct_id: &str, properties: &Map<String, Value>) -> anyhow::Result<()> {
    c.execute(
        &format!(
            "INSERT INTO profiles (project_id, distinct_id, properties) VALUES ($1, $2, $3)
             ON CONFLICT (project_id, distinct_id) DO UPDATE SET properties = excluded.properties, updated_at = {NOW_S}"
        ),
        &[&project_id, &distinct_id, &serde_json::to_string(properties)?],
    )?;
    Ok(())
}

pub fn delete_profile(c: &mut Client, project_id: i64, distinct_id: &str) -> anyhow::Result<bool> {
    Ok(c.execute(
        "DELETE FROM profiles WHERE project_id = $1 AND distinct_id = $2",
        &[&project_id, &distinct_id],
    )? > 0)
}
