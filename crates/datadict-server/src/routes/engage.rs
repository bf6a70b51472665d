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

use crate::auth::hash_secret;
use crate::error::ApiError;
use crate::routes::ingest::{authorize_ingest, batch_response, charge, input_format, parse_strict, read_raw, IngestError};
use crate::store;
use crate::AppState;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use utoipa_axum::{router::OpenApiRouter, routes};
use datadict_core::api::import_status::INVALID_CREDENTIALS;
use datadict_core::{split_body, validate_profile_update_json, FailedRecord, InputFormat, Limits, TokenRule};
use serde_json::{Map, Value};
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
        (status = 401, description = "`{\"code\":401,\"error\":\"Invalid credentials\",\"status\":\"Unauthorized\"}`", body = Object),
        (status = 403, description = "valid credentials without a write role in the project, or another project's token", body = Object),
        (status = 413, description = "over the request limits (records per request, uncompressed bytes)", body = Object),
        (status = 415, description = "a `Content-Encoding` other than gzip", body = Object),
        (status = 429, description = "the project's ingestion rate limit is reached; see `Retry-After`", body = Object)
    ),
    security((), ("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn engage(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
    body: Body,
) -> Result<Response, IngestError> {
    let limits = state.config.limits.clone();
    let raw = read_raw(&headers, body, limits.max_request_bytes).await;
    let Query(query) = query.map_err(|e| ApiError::BadRequest(format!("the query string cannot be read ({e}); use `?strict=1`")))?;
    let strict = parse_strict(query.get("strict").map(String::as_str))?;
    let with_header = headers.contains_key(header::AUTHORIZATION);
    let header_project = if with_header {
        Some(authorize_ingest(&state, &headers, query.get("project_id").map(String::as_str)).await?)
    } else {
        None
    };
    let body = raw.decode().await?;
    let rules = if with_header { TokenRule::Optional } else { TokenRule::Required };
    let format = input_format(&headers);
    let parsed = tokio::task::spawn_blocking(move || parse_updates(&body, format, &limits, rules))
        .await
        .map_err(|e| ApiError::Internal(e.into()))??;
    let (mut updates, mut failed) = parsed;

    // The project, and which updates belong to it: every `$token` must be that project's token.
    let project_id = match header_project {
        Some(p) => p,
        None => {
            let Some(first) = updates.iter().find_map(|u| u.token.clone()) else {
                return Err(ApiError::Unauthorized(INVALID_CREDENTIALS.into()).into());
            };
            let hash = hash_secret(&first);
            state
                .store
                .read(move |conn| store::project_by_token_hash(conn, &hash))
                .await?
                .ok_or(ApiError::Unauthorized(INVALID_CREDENTIALS.into()))?
        }
    };
    charge(&state, project_id, updates.iter().map(|u| u.bytes).sum())?;
    let token_hashes: Vec<Option<String>> = updates.iter().map(|u| u.token.as_deref().map(hash_secret)).collect();
    let (applied, rejected) = state
        .store
        .call(move |conn| {
            let tx = conn.transaction()?;
            let project_token = store::project_token_hash(&tx, project_id)?;
            let mut rejected = Vec::new();
            let mut profiles: HashMap<String, Option<Map<String, Value>>> = HashMap::new();
            let mut applied = 0;
            for (update, token_hash) in updates.drain(..).zip(token_hashes) {
                if token_hash.is_some_and(|h| h != project_token) {
                    rejected.push(FailedRecord {
                        index: update.index,
                        insert_id: String::new(),
                        field: "$token".into(),
                        message: format!("`$token` is not the token of project {project_id}; send each project's updates in their own request"),
                    });
                    continue;
                }
                if !profiles.contains_key(&update.distinct_id) {
                    let current = store::get_profile(&tx, project_id, &update.distinct_id)?;
                    profiles.insert(update.distinct_id.clone(), current);
                }
                let slot = profiles.get_mut(&update.distinct_id).expect("inserted above");
                match apply(slot.as_ref(), &update.op, update.operand, update.limit) {
                    Ok(next) => {
                        *slot = next;
                        applied += 1;
                    }
                    Err(message) => rejected.push(FailedRecord {
                        index: update.index,
                        insert_id: String::new(),
                        field: update.op.clone(),
                        message,
                    }),
                }
            }
            for (distinct_id, profile) in &profiles {
                match profile {
                    Some(props) => store::put_profile(&tx, project_id, distinct_id, props)?,
                    None => {
                        store::delete_profile(&tx, project_id, distinct_id)?;
                    }
                }
            }
            tx.commit()?;
            Ok((applied, rejected))
        })
        .await?;
    failed.extend(rejected);
    failed.sort_by_key(|f| f.index);
    Ok(batch_response(applied, failed, strict))
}

/// A valid update, taken apart.
#[derive(Debug)]
struct Update {
    index: usize,
    token: Option<String>,
    distinct_id: String,
    op: String,
    operand: Value,
    bytes: usize,
    limit: usize,
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
        let issues = validate_profile_update_json(text, limits, rules);
        if !issues.is_empty() {
            failed.extend(issues.into_iter().map(|i| FailedRecord { index, insert_id: String::new(), field: i.path, message: i.message }));
            continue;
        }
        let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(text) else {
            return Err(ApiError::Internal(anyhow::anyhow!("a validated profile update does not parse")));
        };
        let token = match obj.remove("$token") {
            Some(Value::String(t)) => Some(t),
            _ => None,
        };
        let distinct_id = match obj.remove("$distinct_id") {
            Some(Value::String(d)) => d,
            _ => return Err(ApiError::Internal(anyhow::anyhow!("a validated profile update has no $distinct_id"))),
        };
        let Some((op, operand)) = obj.into_iter().find(|(k, _)| datadict_core::profile::PROFILE_OPERATIONS.contains(&k.as_str())) else {
            return Err(ApiError::Internal(anyhow::anyhow!("a validated profile update has no operation")));
        };
        updates.push(Update { index, token, distinct_id, op, operand, bytes, limit: limits.max_profile_properties });
    }
    Ok((updates, failed))
}

/// Applies one operation to a profile (`None`: no profile) and returns the new state, or why the
/// update cannot be applied.
fn apply(current: Option<&Map<String, Value>>, op: &str, operand: Value, max_properties: usize) -> Result<Option<Map<String, Value>>, String> {
    if op == "$delete" {
        return Ok(None);
    }
    let mut props = current.cloned().unwrap_or_default();
    match (op, operand) {
        ("$unset", Value::Array(names)) => {
            for name in names.iter().filter_map(Value::as_str) {
                props.remove(name);
            }
        }
        (_, Value::Object(values)) => {
            for (name, value) in values {
                match op {
                    "$set" => {
                        props.insert(name, value);
                    }
                    "$set_once" => {
                        props.entry(name).or_insert(value);
                    }
                    "$add" => {
                        let sum = add(props.get(&name), &value);
                        props.insert(name, sum);
                    }
                    "$union" => {
                        let mut list = as_list(props.remove(&name));
                        for item in value.as_array().into_iter().flatten() {
                            if !list.contains(item) {
                                list.push(item.clone());
                            }
                        }
                        props.insert(name, Value::Array(list));
                    }
                    "$append" => {
                        let mut list = as_list(props.remove(&name));
                        list.push(value);
                        props.insert(name, Value::Array(list));
                    }
                    "$remove" => {
                        if let Some(Value::Array(list)) = props.get_mut(&name) {
                            list.retain(|item| item != &value);
                        }
                    }
                    _ => return Err(format!("`{op}` is not an operation this server applies; use one of `$set`, `$set_once`, `$add`, `$union`, `$append`, `$remove`, `$unset`, `$delete`")),
                }
            }
        }
        _ => return Err(format!("`{op}` has the wrong shape; see the profile update operations in FACTS.md")),
    }
    if props.len() > max_properties {
        return Err(format!(
            "the profile would hold {} properties; a profile holds at most {max_properties}: unset some first",
            props.len()
        ));
    }
    Ok(Some(props))
}

/// `$add`: integers stay integers while they fit; a missing or non-numeric value counts as 0.
fn add(current: Option<&Value>, by: &Value) -> Value {
    let zero = Value::from(0);
    let current = current.filter(|v| v.is_number()).unwrap_or(&zero);
    if let (Some(a), Some(b)) = (current.as_i64(), by.as_i64()) {
        if let Some(sum) = a.checked_add(b) {
            return Value::from(sum);
        }
    }
    let sum = current.as_f64().unwrap_or(0.0) + by.as_f64().unwrap_or(0.0);
    serde_json::Number::from_f64(sum).map_or(Value::Null, Value::Number)
}

/// A list property's items; a missing or scalar value starts a new list.
fn as_list(value: Option<Value>) -> Vec<Value> {
    match value {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(start: Value, op: &str, operand: Value) -> Value {
        let start = start.as_object().cloned();
        match apply(start.as_ref(), op, operand, 2000) {
            Ok(Some(p)) => Value::Object(p),
            Ok(None) => Value::Null,
            Err(e) => Value::String(e),
        }
    }

    #[test]
    fn every_operation() {
        let p = json!({"plan": "free", "n": 1, "tags": ["a"]});
        assert_eq!(run(p.clone(), "$set", json!({"plan": "pro"})), json!({"plan": "pro", "n": 1, "tags": ["a"]}));
        assert_eq!(run(p.clone(), "$set_once", json!({"plan": "pro", "new": 1}))["plan"], "free");
        assert_eq!(run(p.clone(), "$set_once", json!({"new": 1}))["new"], 1);
        assert_eq!(run(p.clone(), "$add", json!({"n": 2, "m": 1.5}))["n"], 3);
        assert_eq!(run(p.clone(), "$add", json!({"m": 1.5}))["m"], 1.5);
        assert_eq!(run(p.clone(), "$union", json!({"tags": ["a", "b", "b"]}))["tags"], json!(["a", "b"]));
        assert_eq!(run(p.clone(), "$append", json!({"tags": "a"}))["tags"], json!(["a", "a"]));
        assert_eq!(run(p.clone(), "$append", json!({"fresh": 1}))["fresh"], json!([1]));
        assert_eq!(run(p.clone(), "$remove", json!({"tags": "a"}))["tags"], json!([]));
        assert_eq!(run(p.clone(), "$unset", json!(["plan", "nope"])), json!({"n": 1, "tags": ["a"]}));
        assert_eq!(run(p.clone(), "$delete", json!("")), Value::Null);
        assert_eq!(run(Value::Null, "$set", json!({"a": 1})), json!({"a": 1}));
        let over = apply(None, "$set", json!({"a": 1, "b": 2}), 1).unwrap_err();
        assert!(over.contains("at most 1"), "{over}");
    }
}
