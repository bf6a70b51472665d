//! The dictionary: the stored schemas of events and profiles (merging is the caller's rule, in
//! the core; only the statements differ between backends).
//!
//! Every write to a project's schemas goes through [`put_schema`] or [`delete_schemas`], and both
//! raise the project's [`dictionary_version`] in the same statement sequence, hence in the
//! caller's transaction: a process that reads the version sees a new one exactly when the schemas
//! it would read have changed (`ingest::cache` keeps compiled dictionaries by it).

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

/// A counter of the project's schema writes (0 before the first): it changes in the transaction
/// of every write that changes what [`list_schemas`] returns.
pub fn dictionary_version(conn: &Conn<'_>, project_id: i64) -> anyhow::Result<i64> {
    dispatch!(conn, schemas::dictionary_version(project_id))
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
