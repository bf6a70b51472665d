//! The extractor of the ingestion routes (`/import`, `/track`, `/engage`, `/groups`):
//! [`IngestCaller`], who a request's `Authorization` header says it is, and then the project it
//! writes to, as FACTS.md describes; and [`token_projects`], the projects of the tokens that
//! records carry (`properties.token`, `$token`) when the request has no such header.

use super::{authenticate, authorize_account, basic_credentials, project_by_token, Access, Authenticated};
use crate::FastHash;
use crate::error::ApiError;
use crate::routes::ingest::IngestError;
use crate::routes::parse_project_id;
use crate::AppState;
use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::http::request::Parts;
use axum::http::header;
use std::collections::HashMap;

// FACTS.md's 401 words are kept word for word (capitalised, with a period), against this
// project's message style, because clients of the service match on them. They are those of wrong
// credentials (the case FACTS.md documents); a missing or unreadable `Authorization` header is a
// client bug, and its 401 says what is wrong with the header instead.
use datadict_core::api::import_status::INVALID_CREDENTIALS;

/// Who an ingestion request's `Authorization` header says it is: a service account (Basic, its
/// secret checked), or the project token as user name with an empty password. Judged before the
/// body is read; its refusal is a 401 in the ingestion API's body ([`IngestError`], FACTS.md's
/// words for wrong credentials).
///
/// The project comes later, from [`IngestCaller::project`]: `project_id` may be a field of a form
/// body as well as a query parameter (the body wins, as for every parameter), so it is known only
/// once the core's wire rules have read the request.
///
/// As `Option<IngestCaller>` it is `None` for a request without an `Authorization` header, which
/// the tracking routes authenticate by the tokens of its records instead.
#[derive(Debug, Clone)]
pub struct IngestCaller(Credential);

#[derive(Debug, Clone)]
enum Credential {
    /// The project token: its project.
    Token { project_id: i64 },
    /// A service account, whose role is asked in the project the request names.
    Account(Authenticated),
}

impl FromRequestParts<AppState> for IngestCaller {
    type Rejection = IngestError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, IngestError> {
        let (user, secret) = basic_credentials(&parts.headers)?;
        if secret.is_empty() {
            return Ok(Self(Credential::Token { project_id: token_project(state, &user).await? }));
        }
        match authenticate(state, (user, secret)).await {
            Ok(account) => Ok(Self(Credential::Account(account))),
            Err(ApiError::Unauthorized(_)) => Err(ApiError::Unauthorized(INVALID_CREDENTIALS.into()).into()),
            Err(e) => Err(e.into()),
        }
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

impl IngestCaller {
    /// The project the request writes to, given its `project_id` parameter as written (`None`
    /// when absent): with the project token, the token's project (a `project_id` naming another
    /// is a 403); with a service account, the project of `project_id`, which it needs (400 when
    /// absent or malformed) and where it needs the owner or admin role (403).
    pub async fn project(&self, state: &AppState, asked: Option<&str>) -> Result<i64, ApiError> {
        match &self.0 {
            Credential::Token { project_id } => {
                if let Some(asked) = asked.map(parse_project_id).transpose()?.filter(|p| p != project_id) {
                    return Err(ApiError::Forbidden(format!(
                        "the project token is not the token of project {asked}; send that project's token or leave out `project_id`"
                    )));
                }
                Ok(*project_id)
            }
            Credential::Account(account) => {
                let project = asked
                    .ok_or_else(|| {
                        ApiError::BadRequest(
                            "`project_id` is required with service account credentials; add `?project_id=<id>` to the URL (or a `project_id` field to a form body)".into(),
                        )
                    })
                    .and_then(parse_project_id);
                Ok(authorize_account(state, account, project, Access::Write).await?.project_id)
            }
        }
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
/// `Authorization` header, [`IngestCaller::project`]) when there is one, else the project of the
/// first token that names one, in record order. `None` when no token names a project.
pub fn records_project(caller: Option<i64>, tokens: &[String], known: &HashMap<String, Option<i64>, FastHash>) -> Option<i64> {
    caller.or_else(|| tokens.iter().find_map(|t| known.get(t).copied().flatten()))
}
