//! The dictionary's statements on PostgreSQL: the same rows as SQLite's, ordered bytewise.

use super::NOW_S;
use anyhow::Context;
use datadict_core::{EntityType, Schema, SchemaEntry};
use postgres::Client;

pub fn put_schema(c: &mut Client, project_id: i64, entry: &SchemaEntry) -> anyhow::Result<()> {
    // The version row first: every transaction that writes a project's schemas locks it before
    // any schema row, so that two of them on PostgreSQL wait for each other rather than deadlock.
    bump_dictionary_version(c, project_id)?;
    c.execute(
        &format!(
            "INSERT INTO schemas (project_id, entity_type, name, schema_json) VALUES ($1, $2, $3, $4)
             ON CONFLICT (project_id, entity_type, name)
             DO UPDATE SET schema_json = excluded.schema_json, updated_at = {NOW_S}"
        ),
        &[
            &project_id,
            &entry.entity_type.as_str(),
            &entry.name,
            &serde_json::to_string(&entry.schema_json)?,
        ],
    )?;
    Ok(())
}

/// Raises the project's dictionary version, in the caller's transaction (see `store::schemas`).
fn bump_dictionary_version(c: &mut Client, project_id: i64) -> anyhow::Result<()> {
    c.execute(
        "INSERT INTO dictionary_versions (project_id, version) VALUES ($1, 1)
         ON CONFLICT (project_id) DO UPDATE SET version = dictionary_versions.version + 1",
        &[&project_id],
    )?;
    Ok(())
}

/// The project's dictionary version (0 before its first schema write).
pub fn dictionary_version(c: &mut Client, project_id: i64) -> anyhow::Result<i64> {
    Ok(c.query_opt("SELECT version FROM dictionary_versions WHERE project_id = $1", &[&project_id])?.map_or(0, |r| r.get(0)))
}

pub fn list_schemas(
    c: &mut Client,
    project_id: i64,
    entity_type: Option<EntityType>,
    name: Option<&str>,
) -> anyhow::Result<Vec<SchemaEntry>> {
    let rows = c.query(
        "SELECT entity_type, name, schema_json FROM schemas
         WHERE project_id = $1 AND ($2::text IS NULL OR entity_type = $2) AND ($3::text IS NULL OR name = $3)
         ORDER BY entity_type, name",
        &[&project_id, &entity_type.map(EntityType::as_str), &name],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let (entity_type, name, json): (&str, String, &str) = (row.get(0), row.get(1), row.get(2));
        let entity_type = entity_type.parse().map_err(anyhow::Error::from)?;
        let schema_json: Schema = serde_json::from_str(json).with_context(|| format!("stored schema of `{name}` is not readable"))?;
        out.push(SchemaEntry {
            entity_type,
            name,
            schema_json,
        });
    }
    Ok(out)
}

pub fn get_schema(c: &mut Client, project_id: i64, entity_type: EntityType, name: &str) -> anyhow::Result<Option<Schema>> {
    let row = c.query_opt(
        "SELECT schema_json FROM schemas WHERE project_id = $1 AND entity_type = $2 AND name = $3",
        &[&project_id, &entity_type.as_str(), &name],
    )?;
    row.map(|r| serde_json::from_str(r.get(0)).with_context(|| format!("stored schema of `{name}` is not readable")))
        .transpose()
}

pub fn delete_schemas(c: &mut Client, project_id: i64, entity_type: Option<EntityType>, name: Option<&str>) -> anyhow::Result<usize> {
    // First, as in `put_schema`.
    bump_dictionary_version(c, project_id)?;
    let deleted = c.execute(
        "DELETE FROM schemas WHERE project_id = $1 AND ($2::text IS NULL OR entity_type = $2) AND ($3::text IS NULL OR name = $3)",
        &[&project_id, &entity_type.map(EntityType::as_str), &name],
    )? as usize;
    Ok(deleted)
}

pub fn dropping_schemas(c: &mut Client, project_id: i64) -> anyhow::Result<Vec<SchemaEntry>> {
    let rows = c.query(
        "SELECT name, schema_json FROM schemas WHERE project_id = $1 AND entity_type = 'event' AND strpos(schema_json, '\"dropped\"') > 0",
        &[&project_id],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let schema_json: Schema = serde_json::from_str(row.get(1))?;
        out.push(SchemaEntry {
            entity_type: EntityType::Event,
            name: row.get(0),
            schema_json,
        });
    }
    Ok(out)
}
