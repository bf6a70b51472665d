//! One router per resource; [`crate::app`] merges them.
//!
//! The ingestion routes answer with a trailing slash as well (`/track/`, `/engage/`, `/groups/`,
//! `/import/`): the browser tracking library sends its requests to those paths by default.
//! `/openapi.json` names them in each operation's description rather than as paths of their own.

pub mod data;
pub mod engage;
pub mod groups;
pub mod import;
pub mod ingest;
pub mod lookup;
pub mod meta;
pub mod migrate;
pub mod profiles;
pub mod quality;
pub mod quality_draft;
pub mod responses;
pub mod schemas;
pub mod track;
pub mod warehouse;
pub mod wire;

use crate::error::ApiError;
use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
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

/// The query string as axum read it, or the API's 400 saying why it cannot be read (a repeated
/// key, for example). Handlers take the `Result` and call this after authenticating, so that a
/// caller without valid credentials gets 401 whatever the query holds.
pub fn read_query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query.map(|Query(q)| q).map_err(|e| {
        ApiError::BadRequest(format!("the query string cannot be read ({}); see the parameters in /openapi.json", e.body_text()))
    })
}
