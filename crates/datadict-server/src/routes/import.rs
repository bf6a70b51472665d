//! `POST /import` (spec §4.4, FACTS.md): events as a JSON array or NDJSON, gzipped or not. Each
//! record is checked by the core's rules; valid ones are stored in one transaction (deduplicated,
//! with `dropped` events and properties removed), invalid ones are reported in strict mode.

use crate::error::ApiError;
use crate::routes::ingest::{authorize_ingest, batch_response, charge, input_format, parse_strict, read_raw, IngestError};
use crate::store::{self, EventRow};
use crate::AppState;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use utoipa_axum::{router::OpenApiRouter, routes};
use datadict_core::{check_against_dictionary, check_import_body, remove_properties, Dictionary, FailedRecord, ImportBodyError, InputFormat, IssueCode, Limits};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(import))
}

/// The query of `/import`: `strict` (`1` or `0`) and `project_id`.
#[derive(Debug, Deserialize)]
pub struct ImportQuery {
    pub strict: Option<String>,
    pub project_id: Option<String>,
}

/// What checking a batch produced.
#[derive(Debug, Default)]
pub struct Checked {
    pub rows: Vec<EventRow>,
    /// Valid records that the dictionary drops (counted as imported, as the service does).
    pub dropped: usize,
    pub failed: Vec<FailedRecord>,
}

#[utoipa::path(post, path = "/import", tag = "Events",
    params(("strict" = Option<String>, Query, description = "`1`: answer 400 listing every invalid record (valid ones are still stored); `0` (default): skip them"),
        ("project_id" = Option<i64>, Query, description = "required with service-account credentials")),
    request_body(content = Object, description = "a JSON array of events, or NDJSON (`application/x-ndjson`); optionally `Content-Encoding: gzip`"),
    responses(
        (status = 200, description = "`{\"code\":200,\"num_records_imported\":N,\"status\":\"OK\"}`", body = Object),
        (status = 400, description = "strict mode: some records failed (`failed_records`), the valid ones were stored; or the body cannot be read", body = Object),
        (status = 401, description = "`{\"code\":401,\"error\":\"Invalid credentials\",\"status\":\"Unauthorized\"}`", body = Object),
        (status = 403, description = "valid credentials without a write role in the project, or another project's token", body = Object),
        (status = 413, description = "over the request limits (records per request, uncompressed bytes)", body = Object),
        (status = 415, description = "a `Content-Encoding` other than gzip", body = Object),
        (status = 429, description = "the project's ingestion rate limit is reached; see `Retry-After`", body = Object)
    ),
    security(("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn import(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
    body: Body,
) -> Result<Response, IngestError> {
    // A debug event, so that an operator (and the graceful-shutdown test) can see that a request
    // has reached its handler.
    tracing::debug!("import request received");
    let limits = state.config.limits.clone();
    let raw = read_raw(&headers, body, limits.max_request_bytes).await;
    let Query(query) = query.map_err(|e| ApiError::BadRequest(format!("the query string cannot be read ({e}); use `?strict=1&project_id=<id>`")))?;
    let project_id = authorize_ingest(&state, &headers, query.get("project_id").map(String::as_str)).await?;
    let strict = parse_strict(query.get("strict").map(String::as_str))?;
    let body = raw.decode().await?;
    charge(&state, project_id, body.len())?;
    let entries = state.store.read(move |conn| store::dropping_schemas(conn, project_id)).await?;
    let dictionary = Dictionary::new(&entries, &state.config.namespace);
    let format = input_format(&headers);
    let now_ms = now_ms();
    let checked = tokio::task::spawn_blocking(move || check_batch(&body, format, &limits, &dictionary, now_ms))
        .await
        .map_err(|e| ApiError::Internal(e.into()))??;
    let Checked { rows, dropped, failed } = checked;
    let imported = rows.len() + dropped;
    if !rows.is_empty() {
        state.store.call(move |conn| store::insert_events(conn, project_id, &rows, now_ms / 1000)).await?;
    }
    Ok(batch_response(imported, failed, strict))
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// Checks a whole body with the core's import rules. A body that cannot be split, holds no
/// record or too many is refused as a whole; otherwise every record is judged on its own, and the
/// valid ones are prepared for storage: events the dictionary drops are left out, properties it
/// drops are removed, and long strings are truncated.
pub fn check_batch(
    body: &[u8],
    format: InputFormat,
    limits: &Limits,
    dictionary: &Dictionary,
    now_ms: i64,
) -> Result<Checked, ApiError> {
    let checked = check_import_body(body, format, limits, now_ms).map_err(|e| match e {
        ImportBodyError::TooLarge { .. } | ImportBodyError::TooManyRecords { .. } => ApiError::PayloadTooLarge(e.to_string()),
        ImportBodyError::Framing(_) => ApiError::BadRequest(e.to_string()),
    })?;
    if checked.records.is_empty() {
        return Err(ApiError::BadRequest("the body holds no events; send at least one event".into()));
    }
    let mut out = Checked { rows: Vec::with_capacity(checked.valid), failed: checked.failed_records, dropped: 0 };
    for record in checked.records {
        let check = record.check;
        if !check.is_valid() {
            continue;
        }
        let mut bytes = std::borrow::Cow::Borrowed(&body[record.record.range]);
        if !dictionary.is_empty() {
            let findings = check_against_dictionary(&check, dictionary);
            if findings.drop_event {
                out.dropped += 1;
                continue;
            }
            if findings.must_rewrite() {
                let rewritten = remove_properties(&bytes, &findings.dropped_properties).map_err(|e| ApiError::Internal(e.into()))?;
                bytes = std::borrow::Cow::Owned(rewritten);
            }
        }
        let (Some(event), Some(time_ms), Some(distinct_id), Some(insert_id)) =
            (check.event, check.time_ms, check.distinct_id, check.insert_id)
        else {
            // The core's rules make these fields required; a record without them is not valid.
            return Err(ApiError::Internal(anyhow::anyhow!("a valid event lacks a key field")));
        };
        let record = if check.warnings.iter().any(|w| w.code == IssueCode::StringTruncated) {
            truncate_record(&bytes, limits.string_truncate_bytes)?
        } else {
            // The record is valid JSON, hence UTF-8.
            String::from_utf8(bytes.into_owned()).map_err(|e| ApiError::Internal(e.into()))?
        };
        out.rows.push(EventRow::new(event.into_owned(), time_ms, distinct_id.into_owned(), insert_id.into_owned(), record));
    }
    Ok(out)
}

/// Re-serializes a record whose strings are longer than the service keeps (FACTS.md: truncated at
/// `max` bytes), cutting each on a character boundary.
fn truncate_record(bytes: &[u8], max: usize) -> Result<String, ApiError> {
    let mut value: Value = serde_json::from_slice(bytes).map_err(|e| ApiError::Internal(e.into()))?;
    truncate_strings(&mut value, max);
    serde_json::to_string(&value).map_err(|e| ApiError::Internal(e.into()))
}

fn truncate_strings(value: &mut Value, max: usize) {
    match value {
        Value::String(s) if s.len() > max => {
            let mut cut = max;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
        }
        Value::Array(items) => items.iter_mut().for_each(|v| truncate_strings(v, max)),
        Value::Object(map) => map.values_mut().for_each(|v| truncate_strings(v, max)),
        _ => {}
    }
}
