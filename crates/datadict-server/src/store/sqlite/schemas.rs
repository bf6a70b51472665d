//! The dictionary: the stored schemas of events and profiles.

use anyhow::Context;
use datadict_core::{EntityType, Schema, SchemaEntry};
use rusqlite::{params, Connection, OptionalExtension};

/// Inserts or replaces one schema as given (merging is the caller's rule).
pub fn put_schema(conn: &Connection, project_id: i64, entry: &SchemaEntry) -> anyhow::Result<()> {
    // The version first, in the same order as on PostgreSQL (where the order avoids deadlocks,
    // see `pg::schemas`).
    bump_dictionary_version(conn, project_id)?;
    conn.execute(
        "INSERT INTO schemas (project_id, entity_type, name, schema_json) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (project_id, entity_type, name)
         DO UPDATE SET schema_json = excluded.schema_json, updated_at = unixepoch()",
        params![project_id, entry.entity_type.as_str(), entry.name, serde_json::to_string(&entry.schema_json)?],
    )?;
    Ok(())
}

/// Raises the project's dictionary version, in the caller's transaction (see `store::schemas`).
fn bump_dictionary_version(conn: &Connection, project_id: i64) -> anyhow::Result<()> {
    conn.prepare_cached(
        "INSERT INTO dictionary_versions (project_id, version) VALUES (?1, 1)
         ON CONFLICT (project_id) DO UPDATE SET version = version + 1",
    )?
    .execute([project_id])?;
    Ok(())
}

/// The project's dictionary version (0 before its first schema write).
pub fn dictionary_version(conn: &Connection, project_id: i64) -> anyhow::Result<i64> {
    Ok(conn
        .prepare_cached("SELECT version FROM dictionary_versions WHERE project_id = ?1")?
        .query_row([project_id], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Lists the schemas of a project, optionally of one entity type and one name, ordered by type
/// then name.
pub fn list_schemas(
    conn: &Connection,
    project_id: i64,
    entity_type: Option<EntityType>,
    name: Option<&str>,
) -> anyhow::Result<Vec<SchemaEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT entity_type, name, schema_json FROM schemas
         WHERE project_id = ?1 AND (?2 IS NULL OR entity_type = ?2) AND (?3 IS NULL OR name = ?3)
         ORDER BY entity_type, name",
    )?;
    let rows = stmt.query_map(params![project_id, entity_type.map(EntityType::as_str), name], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (entity_type, name, json) = row?;
        let entity_type = entity_type.parse().map_err(anyhow::Error::from)?;
        let schema_json: Schema = serde_json::from_str(&json)
            .with_context(|| format!("stored schema of `{name}` is not readable"))?;
        out.push(SchemaEntry { entity_type, name, schema_json });
    }
    Ok(out)
}

/// The stored schema of one entity, if any.
pub fn get_schema(
    conn: &Connection,
    project_id: i64,
    entity_type: EntityType,
    name: &str,
) -> anyhow::Result<Option<Schema>> {
    let json: Option<String> = conn
        .query_row(
            "SELECT schema_json FROM schemas WHERE project_id = ?1 AND entity_type = ?2 AND name = ?3",
            params![project_id, entity_type.as_str(), name],
            |r| r.get(0),
        )
        .optional()?;
    json.map(|j| serde_json::from_str(&j).with_context(|| format!("stored schema of `{name}` is not readable")))
        .transpose()
}

/// Deletes the schemas of a project, optionally only of one entity type and one name; returns how
/// many were deleted.
pub fn delete_schemas(
    conn: &Connection,
    project_id: i64,
    entity_type: Option<EntityType>,
    name: Option<&str>,
) -> anyhow::Result<usize> {
    // First, as in `put_schema`.
    bump_dictionary_version(conn, project_id)?;
    let deleted = conn.execute(
        "DELETE FROM schemas
         WHERE project_id = ?1 AND (?2 IS NULL OR entity_type = ?2) AND (?3 IS NULL OR name = ?3)",
        params![project_id, entity_type.map(EntityType::as_str), name],
    )?;
    Ok(deleted)
}

/// The event schemas of a project that may drop something at ingestion (spec §2.4, §2.5): only
/// schemas whose text mentions `dropped` can, and the filter keeps this cheap for a large
/// dictionary; the core's `Dictionary` then reads them properly.
pub fn dropping_schemas(conn: &Connection, project_id: i64) -> anyhow::Result<Vec<SchemaEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT name, schema_json FROM schemas
         WHERE project_id = ?1 AND entity_type = 'event' AND instr(schema_json, '\"dropped\"') > 0",
    )?;
    let rows = stmt.query_map([project_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (name, json) = row?;
        let schema_json: Schema = serde_json::from_str(&json)?;
        out.push(SchemaEntry { entity_type: EntityType::Event, name, schema_json });
    }
    Ok(out)
}
