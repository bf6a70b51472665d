//! The extractor of the ingestion routes (`/import`, `/track`, `/engage`, `/groups`):
//! [`IngestCaller`], the project a request writes to, found from its `Authorization` header as
//! FACTS.md describes; and [`token_projects`], the projects of the tokens that records carry
//! (`properties.token`, `$token`) when the request has no such header.

use super::{authorize, basic_credentials, project_by_token, Access};
use crate::FastHash;
use crate::error::ApiError;
use crate::routes::ingest::IngestError;
use crate::routes::parse_project_id;
use crate::AppState;
use axum::extract::{FromRequestParts, OptionalFromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::header;
use std::collections::HashMap;

// FACTS.md's 401 words are kept word for word (capitalised, with a period), against this
// project's message style, because clients of the service match on them. They are those of wrong
// credentials (the case FACTS.md documents); a missing or unreadable `Authorization` header is a
// client bug, and its 401 says what is wrong with the header instead.
use datadict_core::api::import_status::INVALID_CREDENTIALS;

/// The project an ingestion request writes to: Basic auth with a service account that may write
/// to the project of the `project_id` query parameter, or with the project token as user name and
/// an empty password (then `project_id` may be left out). Refusals use the ingestion API's body
/// ([`IngestError`]): 401 (FACTS.md's words for wrong credentials), then 400 for a missing or
/// malformed `project_id`, then 403.
///
/// As `Option<IngestCaller>` it is `None` for a request without an `Authorization` header, which
/// `/engage` authenticates by the `$token` of its updates instead.
#[derive(Debug, Clone, Copy)]
pub struct IngestCaller {
    pub project_id: i64,
}

impl FromRequestParts<AppState> for IngestCaller {
    type Rejection = IngestError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, IngestError> {
        let asked = query_project_id(parts);
        let project_id = caller_project(state, &parts.headers, asked).await?;
        Ok(Self { project_id })
    }
}

impl OptionalFromRequestParts<AppState> for IngestCaller {
    type Rejection = IngestError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Option<Self>, IngestError> {
        if !parts.headers.contains_key(header::AUTHORIZATION) {
            return Ok(None);
        }
        <Self as FromRequestParts<AppState>>::from_request_parts(parts, state).await.map(Some)
    }
}

/// The project of a token that ingestion presents (as the Basic user name, or in the records), or
/// FACTS.md's 401.
pub async fn token_project(state: &AppState, token: &str) -> Result<i64, ApiError> {
    project_by_token(state, token).await?.ok_or_else(|| ApiError::Unauthorized(INVALID_CREDENTIALS.into()))
}

/// The project of each token that the records of a request carry, `None` for a token of no
/// project: one lookup per distinct token (a request's records nearly always carry one).
pub async fn token_projects(state: &AppState, tokens: Vec<String>) -> Result<HashMap<String, Option<i64>, FastHash>, ApiError> {
    let mut known = HashMap::with_capacity_and_hasher(tokens.len(), FastHash::default());
    for token in tokens {
        let project = project_by_token(state, &token).await?;
        known.insert(token, project);
    }
    Ok(known)
}

/// [`token_projects`] with the dictionary version of each project found, read in the same query
/// (`ingest::cache` uses it to know whether its copy of the project's dictionary is current).
pub async fn token_projects_versioned(state: &AppState, tokens: Vec<String>) -> Result<(HashMap<String, Option<i64>, FastHash>, HashMap<i64, i64, FastHash>), ApiError> {
    let mut known = HashMap::with_capacity_and_hasher(tokens.len(), FastHash::default());
    let mut versions = HashMap::default();
    for token in tokens {
        let hash = super::hash_token(&token);
        let found = state.store.project_and_version_by_token_hash(hash).await?;
        if let Some((project, version)) = found {
            versions.insert(project, version);
        }
        known.insert(token, found.map(|(project, _)| project));
    }
    Ok((known, versions))
}

/// The project of a request authenticated by the tokens of its records: the caller's (from its
/// `Authorization` header) when there is one, else the project of the first token that names one,
/// in record order. `None` when no token names a project.
pub fn records_project(caller: Option<IngestCaller>, tokens: &[String], known: &HashMap<String, Option<i64>, FastHash>) -> Option<i64> {
    caller.map(|c| c.project_id).or_else(|| tokens.iter().find_map(|t| known.get(t).copied().flatten()))
}

/// The `project_id` query parameter as written (`None` when absent), or why the query string
/// cannot be read; either is judged only after the credentials.
fn query_project_id(parts: &Parts) -> Result<Option<String>, ApiError> {
    let Query(mut query) = Query::<HashMap<String, String>>::try_from_uri(&parts.uri).map_err(|e| {
        ApiError::BadRequest(format!("the query string cannot be read ({e}); use `?strict=1&project_id=<id>`"))
    })?;
    Ok(query.remove("project_id"))
}

async fn caller_project(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    asked: Result<Option<String>, ApiError>,
) -> Result<i64, ApiError> {
    let (user, secret) = basic_credentials(headers)?;
    if secret.is_empty() {
        let token_project = token_project(state, &user).await?;
        // Credentials first: a malformed `project_id` is only reported to a valid token.
        let asked = asked?.as_deref().map(parse_project_id).transpose()?;
        if let Some(asked) = asked.filter(|p| *p != token_project) {
            return Err(ApiError::Forbidden(format!(
                "the project token is not the token of project {asked}; send that project's token or leave out `project_id`"
            )));
        }
        return Ok(token_project);
    }
    let project = asked.and_then(|asked| {
        let raw = asked.ok_or_else(|| {
            ApiError::BadRequest("`project_id` is required with service account credentials; add `?project_id=<id>` to the URL".into())
        })?;
        parse_project_id(&raw)
    });
    match authorize(state, (user, secret), project, Access::Write).await {
        Err(ApiError::Unauthorized(_)) => Err(ApiError::Unauthorized(INVALID_CREDENTIALS.into())),
        other => other.map(|principal| principal.project_id),
    }
}
