//! The dictionary: the stored schemas of events and profiles (merging is the caller's rule, in
//! the core; only the statements differ between backends).

use super::conn::{dispatch, Conn};
use datadict_core::{EntityType, Schema, SchemaEntry};

/// Inserts or replaces one schema as given (merging is the caller's rule).
pub fn put_schema(conn: &Conn<'_>, project_id: i64, entry: &SchemaEntry) -> anyhow::Result<()> {
    dispatch!(conn, schemas::put_schema(project_id, entry))
}

/// Lists the schemas of a project, optionally of one entity type and one name, ordered by type
/// then name.
pub fn list_schemas(
    conn: &Conn<'_>,
    project_id: i64,
    entity_type: Option<EntityType>,
    name: Option<&str>,
) -> anyhow::Result<Vec<SchemaEntry>> {
    dispatch!(conn, schemas::list_schemas(project_id, entity_type, name))
}

/// The stored schema of one entity, if any.
pub fn get_schema(conn: &Conn<'_>, project_id: i64, entity_type: EntityType, name: &str) -> anyhow::Result<Option<Schema>> {
    dispatch!(conn, schemas::get_schema(project_id, entity_type, name))
}

/// Deletes the schemas of a project, optionally only of one entity type and one name; returns how
/// many were deleted.
pub fn delete_schemas(conn: &Conn<'_>, project_id: i64, entity_type: Option<EntityType>, name: Option<&str>) -> anyhow::Result<usize> {
    dispatch!(conn, schemas::delete_schemas(project_id, entity_type, name))
}

/// The event schemas of a project that may drop something at ingestion (spec §2.4, §2.5): only
/// schemas whose text mentions `dropped` can, and the filter keeps this cheap for a large
/// dictionary; the core's `Dictionary` then reads them properly.
pub fn dropping_schemas(conn: &Conn<'_>, project_id: i64) -> anyhow::Result<Vec<SchemaEntry>> {
    dispatch!(conn, schemas::dropping_schemas(project_id))
}
