//! What `/engage` (user profiles) and `/groups` (group profiles) share: one handler,
//! [`update_profiles`], for both kinds of update (the core's [`ProfileKind`]). A request in any
//! wire format (`routes::wire`) is read into updates, each parsed and checked by the core's one
//! profile parser; the project is the caller's (an `Authorization` header) or the one whose token
//! the updates carry in `$token` (a request of updates that name no project is a 401 when all
//! were read, else a 400 listing their problems); the valid updates of that project are applied in one
//! transaction by `ingest::store_profile_updates` (the core's `profile::apply`, with the property
//! cap; then the dictionary check on arrival of the applied user updates), and the others are
//! reported.

use crate::auth::{records_project, token_projects, IngestCaller};
use crate::error::ApiError;
use crate::ingest::batch::{unknown_token, TOKEN_REFUSED};
use crate::ingest::quality::{reject, Violations};
use crate::ingest::store_profile_updates;
use crate::routes::ingest::{charge, IngestError};
use crate::routes::wire::{answer_batch, caller_project_and_records, receive, Refused, Style, Tally};
use crate::AppState;
use axum::body::Bytes;
use axum::extract::Request;
use axum::response::Response;
use datadict_core::api::import_status::INVALID_CREDENTIALS;
use datadict_core::wire::Route;
use datadict_core::{
    parse_profile_update, profile_schema_name, split_body, FailedRecord, InputFormat, IssueCode, Limits, ProfileKind, ProfileUpdate, TokenRule, USER_PROFILE,
};

/// Handles a request of `/engage` (`ProfileKind::User`) or `/groups` (`ProfileKind::Group`).
/// `caller` is who the request's `Authorization` header names, `None` without one; its refusal,
/// and then that of the project its `project_id` names, is answered in the style the request
/// asked for, before anything of the records is.
pub async fn update_profiles(
    kind: ProfileKind,
    caller: Result<Option<IngestCaller>, IngestError>,
    state: AppState,
    request: Request,
) -> Result<Response, Refused> {
    let route = match kind {
        ProfileKind::User => Route::Engage,
        ProfileKind::Group => Route::Groups,
    };
    let limits = state.config.limits.clone();
    let received = receive(route, request, limits.max_request_bytes).await;
    let refuse = Refused::with(&received.style);
    let caller = caller.map_err(|e| refuse(e.0))?;
    let (caller, records) = caller_project_and_records(&state, caller.as_ref(), &received.params, received.records).await.map_err(&refuse)?;
    // With an `Authorization` header the caller is its project; without one, the project is the
    // one of the updates' `$token`, which every update must then carry.
    let token = if caller.is_some() { TokenRule::Optional } else { TokenRule::Required };
    let (body, format) = (records.bytes, records.format);
    let parsed = tokio::task::spawn_blocking(move || parse_updates(&body, format, kind, &limits, token, route_name(kind)))
        .await
        .map_err(|e| refuse(ApiError::Internal(e.into())))?;
    let Parsed { updates, mut failed, records, tokens, mut rejected } = parsed.map_err(&refuse)?;
    let known = token_projects(&state, tokens.clone()).await.map_err(&refuse)?;
    let Some(project_id) = records_project(caller, &tokens, &known) else {
        // Every update read, only tokens missing or wrong: the request lacks credentials. Else a
        // 401 would blame the credentials for what the sender must fix first, and a `$token`
        // inside an update that cannot be read is not seen at all: nothing is applied, and every
        // problem is listed, the tokens that name no project included.
        if failed.iter().all(|f| f.field == TOKEN) {
            return Err(refuse(ApiError::Unauthorized(no_project(&received.style, kind, tokens.len()))));
        }
        // Without a header every valid update carries a `$token` (the rule requires one), of no project.
        failed.extend(updates.iter().map(|u| FailedRecord { index: u.index, insert_id: String::new(), field: TOKEN.into(), message: unknown_token(TOKEN) }));
        failed.sort_by_key(|f| f.index);
        return Ok(answer_batch(&received.style, Tally { records, stored: 0, failed, noun: "update", verb: "applied" }));
    };
    charge(&state, project_id, updates.iter().map(|u| u.bytes).sum()).await.map_err(&refuse)?;
    // Every `$token` must be the project's.
    let (ours, theirs): (Vec<Update>, Vec<Update>) =
        updates.into_iter().partition(|u| u.update.token.as_ref().is_none_or(|t| known.get(t).copied().flatten() == Some(project_id)));
    for u in theirs {
        let message = format!("`$token` is not the token of project {project_id}; send each project's updates in their own request");
        // Kept in the bad store without the token, which is another project's.
        let update = ProfileUpdate { token: None, ..u.update };
        let text = serde_json::to_vec(&update).unwrap_or_default();
        reject(&mut rejected, route_name(kind), profile_schema_name(&update.target), &[(TOKEN_REFUSED, message.as_str())], &text, &[]);
        failed.push(FailedRecord { index: u.index, insert_id: String::new(), field: "$token".into(), message });
    }
    let ours = ours.into_iter().map(|u| (u.index, u.update.target, u.update.operation)).collect();
    let (applied, refused) = store_profile_updates(&state, project_id, ours, route_name(kind), rejected).await.map_err(&refuse)?;
    failed.extend(refused.into_iter().map(|r| FailedRecord { index: r.index, insert_id: String::new(), field: r.issue.path, message: r.issue.message }));
    failed.sort_by_key(|f| f.index);
    Ok(answer_batch(&received.style, Tally { records, stored: applied, failed, noun: "update", verb: "applied" }))
}

/// The field of an update that holds the project token.
const TOKEN: &str = "$token";

/// The 401 of a request whose updates, all read, carry no token of a project. The ingestion API's body keeps
/// FACTS.md's words, which its clients match on; a tracking answer, read by a developer, says
/// what to send.
fn no_project(style: &Style, kind: ProfileKind, tokens: usize) -> String {
    if !style.is_tracking() {
        return INVALID_CREDENTIALS.into();
    }
    let found = match tokens {
        0 => "no update carries `$token`".to_owned(),
        n => format!("the {n} `$token` value(s) of the updates name no project"),
    };
    let route = if kind == ProfileKind::User { "/engage" } else { "/groups" };
    format!("{found}; give each update the project token as `$token` (or send {route} with the project token as the Basic user name)")
}

/// The route name of the bad store's rows for `kind`.
fn route_name(kind: ProfileKind) -> &'static str {
    match kind {
        ProfileKind::User => "engage",
        ProfileKind::Group => "groups",
    }
}

/// A valid update with its place in the request and its size (for the rate limit).
#[derive(Debug)]
struct Update {
    index: usize,
    bytes: usize,
    update: ProfileUpdate,
}

/// The updates of a body: the valid ones, every problem of the others, how many there are, and
/// the `$token` values they carry (of invalid updates too, so that a request whose updates are
/// all refused is told why rather than 401), each once, in the order of their first update; and
/// the refused updates tallied for the bad store (recorded only once the project is known).
#[derive(Debug)]
struct Parsed {
    updates: Vec<Update>,
    failed: Vec<FailedRecord>,
    records: usize,
    tokens: Vec<String>,
    rejected: Violations,
}

/// The entity a refused update is kept under in the bad store: `$user` for a user update, the
/// group key of a group update when the update is JSON with a string `$group_key`, else empty.
fn refused_entity(value: Option<&serde_json::Value>, kind: ProfileKind) -> String {
    match kind {
        ProfileKind::User => USER_PROFILE.to_owned(),
        ProfileKind::Group => value.and_then(|v| v.get("$group_key")?.as_str()).unwrap_or_default().to_owned(),
    }
}

fn parse_updates(body: &Bytes, format: InputFormat, kind: ProfileKind, limits: &Limits, token: TokenRule, route: &'static str) -> Result<Parsed, ApiError> {
    let ranges: Vec<_> = split_body(body, format).map_err(|e| ApiError::BadRequest(e.to_string()))?.into_iter().map(|r| r.range).collect();
    let what = if kind == ProfileKind::User { "profile updates" } else { "group profile updates" };
    if ranges.is_empty() {
        return Err(ApiError::BadRequest(format!("the body holds no {what}; send at least one update")));
    }
    if ranges.len() > limits.max_profile_updates_per_request {
        return Err(ApiError::PayloadTooLarge(format!(
            "the request holds {} {what}; send at most {} per request",
            ranges.len(),
            limits.max_profile_updates_per_request
        )));
    }
    let records = ranges.len();
    let mut updates = Vec::with_capacity(records);
    let mut failed = Vec::new();
    let mut tokens: Vec<String> = Vec::new();
    let mut rejected = Violations::default();
    for (index, range) in ranges.into_iter().enumerate() {
        let bytes = range.len();
        let Ok(text) = std::str::from_utf8(&body[range.clone()]) else {
            let message: String = "the update is not UTF-8 text; send JSON encoded in UTF-8".into();
            // Not text: its `$token` cannot be told apart to redact it, so the record is not kept.
            let sample = b"[not UTF-8 text: not kept, as it may hold the project token]";
            reject(&mut rejected, route, &refused_entity(None, kind), &[(IssueCode::InvalidJson.as_str(), message.as_str())], sample, &[]);
            failed.push(FailedRecord { index, insert_id: String::new(), field: String::new(), message });
            continue;
        };
        let token = match parse_profile_update(text, kind, limits, token) {
            Ok(update) => {
                let token = update.token.clone();
                updates.push(Update { index, bytes, update });
                token
            }
            Err(issues) => {
                // Read again for its token and group key: refused updates are few.
                let value = serde_json::from_str::<serde_json::Value>(text).ok();
                let token = value.as_ref().and_then(|v| v.get("$token")?.as_str().map(str::to_owned));
                let codes: Vec<(&'static str, &str)> = issues.iter().map(|i| (i.code.as_str(), i.message.as_str())).collect();
                reject(&mut rejected, route, &refused_entity(value.as_ref(), kind), &codes, text.as_bytes(), token.as_deref().as_slice());
                failed.extend(issues.into_iter().map(|i| FailedRecord { index, insert_id: String::new(), field: i.path, message: i.message }));
                token
            }
        };
        if let Some(token) = token.filter(|t| !tokens.contains(t)) {
            tokens.push(token);
        }
    }
    Ok(Parsed { updates, failed, records, tokens, rejected })
}
