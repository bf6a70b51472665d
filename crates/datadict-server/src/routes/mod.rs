//! One router per resource; [`crate::app`] merges them.

pub mod data;
pub mod engage;
pub mod import;
pub mod ingest;
pub mod meta;
pub mod migrate;
pub mod schemas;
pub mod warehouse;

use crate::error::ApiError;
use datadict_core::EntityType;

/// Parses the `projectId` path segment; the message says what a project id looks like.
pub fn parse_project_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        ApiError::BadRequest(format!("`{raw}` is not a project id: use the project's positive integer id"))
    })
}

/// Parses the `entityType` path segment.
pub fn parse_entity_type(raw: &str) -> Result<EntityType, ApiError> {
    raw.parse().map_err(|e: datadict_core::schema::UnknownEntityType| ApiError::BadRequest(e.to_string()))
}
