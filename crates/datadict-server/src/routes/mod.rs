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

/// A page cursor: `key` (the last row's sort key) as JSON in URL-safe base64, so that it needs no
/// escaping in a query string whatever the key holds.
pub fn encode_cursor<T: serde::Serialize>(key: &T) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_string(key).unwrap_or_default())
}

/// The key an [`encode_cursor`] cursor holds, or `None` when `raw` is not one of that shape.
pub fn decode_cursor<T: serde::de::DeserializeOwned>(raw: &str) -> Option<T> {
    use base64::Engine;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(raw).ok()?;
    serde_json::from_slice(&json).ok()
}

/// The query string as axum read it, or the API's 400 saying why it cannot be read (a repeated
/// key, for example). Handlers take the `Result` and call this after authenticating, so that a
/// caller without valid credentials gets 401 whatever the query holds.
///
/// The read API's parameter structs refuse names they do not know (`deny_unknown_fields`): a
/// misspelt filter (`Event=`, `event_name=`) would otherwise answer every row, and a CI check
/// built on it would pass on anything.
pub fn read_query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query.map(|Query(q)| q).map_err(|e| {
        let text = e.body_text();
        ApiError::BadRequest(match unknown_parameter(&text) {
            Some((name, known)) => format!(
                "`{name}` is not a parameter of this route (names are case-sensitive); it takes {}",
                if known.is_empty() { "none".to_owned() } else { known }
            ),
            None => format!("the query string cannot be read ({text}); see the parameters in /openapi.json"),
        })
    })
}

/// The name and the expected names of serde's "unknown field `x`, expected one of `a`, `b`" (or
/// "expected `a`", "there are no fields").
fn unknown_parameter(text: &str) -> Option<(&str, String)> {
    let rest = &text[text.find("unknown field `")? + "unknown field `".len()..];
    let (name, rest) = rest.split_once("`, ")?;
    let known = match rest.strip_prefix("expected one of ").or_else(|| rest.strip_prefix("expected ")) {
        Some(list) => list.to_owned(),
        None => String::new(),
    };
    Some((name, known))
}
