//! `POST /engage` (spec §2.9, FACTS.md "Profiles"): user-profile updates, each
//! `{"$token", "$distinct_id", <one operation>}`, as a JSON array or NDJSON, gzipped or not. The
//! core validates each update; this module applies the operations so that a profile always holds
//! the latest value of each property.
//!
//! Authentication: Basic with a service account (`?project_id=`) or the project token (empty
//! password), as for `/import`; without an `Authorization` header the project is the one whose
//! token the updates carry in `$token`, as the service's own `/engage` works. Answers use the
//! import's bodies (the service answers `1`/`0`, which tells a client nothing about which update
//! failed).

use crate::auth::{hash_secret, token_project, IngestCaller};
use crate::error::ApiError;
use crate::ingest::apply_profile_updates;
use crate::routes::ingest::{batch_response, charge, input_format, parse_strict, read_raw, IngestError};
use crate::routes::responses::IngestRefusals;
use crate::store;
use crate::AppState;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use utoipa_axum::{router::OpenApiRouter, routes};
use datadict_core::api::import_status::INVALID_CREDENTIALS;
use datadict_core::{parse_profile_update, split_body, FailedRecord, InputFormat, Limits, ProfileUpdate, TokenRule};
use std::collections::HashMap;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(engage))
}

#[utoipa::path(post, path = "/engage", tag = "User Profiles",
    params(("strict" = Option<String>, Query, description = "`1`: answer 400 listing every invalid update (valid ones are still applied)"),
        ("project_id" = Option<i64>, Query, description = "required with service-account credentials")),
    request_body(content = Object, description = "a JSON array (or NDJSON) of `{\"$token\", \"$distinct_id\", <one of $set, $set_once, $add, $union, $append, $remove, $unset, $delete>}`"),
    responses(
        (status = 200, description = "`{\"code\":200,\"num_records_imported\":N,\"status\":\"OK\"}`", body = Object),
        (status = 400, description = "strict mode: some records failed (`failed_records`), the valid ones were stored; or the body cannot be read", body = Object),
        IngestRefusals
    ),
    security((), ("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn engage(
    caller: Option<IngestCaller>,
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
    body: Body,
) -> Result<Response, IngestError> {
    let limits = state.config.limits.clone();
    let raw = read_raw(&headers, body, limits.max_request_bytes).await;
    let Query(query) = query.map_err(|e| ApiError::BadRequest(format!("the query string cannot be read ({e}); use `?strict=1`")))?;
    let strict = parse_strict(query.get("strict").map(String::as_str))?;
    // With an `Authorization` header the caller is its project; without one, the project is the
    // one of the updates' `$token`, which every update must then carry.
    let header_project = caller.map(|c| c.project_id);
    let body = raw.decode().await?;
    let rules = if header_project.is_some() { TokenRule::Optional } else { TokenRule::Required };
    let format = input_format(&headers);
    let parsed = tokio::task::spawn_blocking(move || parse_updates(&body, format, &limits, rules))
        .await
        .map_err(|e| ApiError::Internal(e.into()))??;
    let (mut updates, mut failed) = parsed;

    // The project, and which updates belong to it: every `$token` must be that project's token.
    let project_id = match header_project {
        Some(p) => p,
        None => {
            let Some(first) = updates.iter().find_map(|u| u.update.token.as_deref()) else {
                return Err(ApiError::Unauthorized(INVALID_CREDENTIALS.into()).into());
            };
            token_project(&state, first).await?
        }
    };
    charge(&state, project_id, updates.iter().map(|u| u.bytes).sum()).await?;
    let token_hashes: Vec<Option<String>> = updates.iter().map(|u| u.update.token.as_deref().map(hash_secret)).collect();
    let limits = state.config.limits.clone();
    let (applied, rejected) = state
        .store
        .call(move |conn| {
            let tx = conn.transaction()?;
            let project_token = store::project_token_hash(&tx, project_id)?;
            let (ours, theirs): (Vec<_>, Vec<_>) =
                updates.drain(..).zip(token_hashes).partition(|(_, token_hash)| token_hash.as_ref().is_none_or(|h| *h == project_token));
            let mut rejected: Vec<FailedRecord> = theirs
                .into_iter()
                .map(|(update, _)| FailedRecord {
                    index: update.index,
                    insert_id: String::new(),
                    field: "$token".into(),
                    message: format!("`$token` is not the token of project {project_id}; send each project's updates in their own request"),
                })
                .collect();
            let (applied, refused) =
                apply_profile_updates(&tx, project_id, ours.iter().map(|(u, _)| (u.index, u.update.distinct_id.as_str(), &u.update.operation)), &limits)?;
            rejected.extend(refused.into_iter().map(|r| FailedRecord { index: r.index, insert_id: String::new(), field: r.issue.path, message: r.issue.message }));
            tx.commit()?;
            Ok((applied, rejected))
        })
        .await?;
    failed.extend(rejected);
    failed.sort_by_key(|f| f.index);
    Ok(batch_response(applied, failed, strict))
}

/// A valid update with its place in the request and its size (for the rate limit).
#[derive(Debug)]
struct Update {
    index: usize,
    bytes: usize,
    update: ProfileUpdate,
}

type Parsed = (Vec<Update>, Vec<FailedRecord>);

fn parse_updates(body: &[u8], format: InputFormat, limits: &Limits, rules: TokenRule) -> Result<Parsed, ApiError> {
    let ranges: Vec<_> = split_body(body, format)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?
        .into_iter()
        .map(|r| r.range)
        .collect();
    if ranges.is_empty() {
        return Err(ApiError::BadRequest("the body holds no profile updates; send at least one update".into()));
    }
    if ranges.len() > limits.max_profile_updates_per_request {
        return Err(ApiError::PayloadTooLarge(format!(
            "the request holds {} profile updates; send at most {} per request",
            ranges.len(),
            limits.max_profile_updates_per_request
        )));
    }
    let mut updates = Vec::with_capacity(ranges.len());
    let mut failed = Vec::new();
    for (index, range) in ranges.into_iter().enumerate() {
        let bytes = range.len();
        let text = match std::str::from_utf8(&body[range]) {
            Ok(t) => t,
            Err(_) => {
                failed.push(FailedRecord {
                    index,
                    insert_id: String::new(),
                    field: String::new(),
                    message: "the update is not UTF-8 text; send JSON encoded in UTF-8".into(),
                });
                continue;
            }
        };
        match parse_profile_update(text, limits, rules) {
            Ok(update) => updates.push(Update { index, bytes, update }),
            Err(issues) => failed.extend(issues.into_iter().map(|i| FailedRecord { index, insert_id: String::new(), field: i.path, message: i.message })),
        }
    }
    Ok((updates, failed))
}
