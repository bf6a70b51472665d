//! `POST /import` (spec §4.4, FACTS.md): events as a JSON array or NDJSON, gzipped or not. Each
//! record is checked by the core's rules; valid ones are stored in one transaction (deduplicated,
//! with `dropped` events and properties removed), invalid ones are reported in strict mode.

use crate::error::ApiError;
use crate::routes::ingest::{authorize_ingest, batch_response, charge, parse_strict, read_body, split_records, IngestError};
use crate::store::{self, Dropping, EventRow};
use crate::AppState;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use datadict_core::{check_event, failed_records, FailedRecord, IssueCode, Limits};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

pub fn router() -> Router<AppState> {
    Router::new().route("/import", post(import))
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

async fn import(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
    body: Body,
) -> Result<Response, IngestError> {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(format!("the query string cannot be read ({e}); use `?strict=1&project_id=<id>`")))?;
    let project_id = authorize_ingest(&state, &headers, query.get("project_id").map(String::as_str)).await?;
    let strict = parse_strict(query.get("strict").map(String::as_str))?;
    let limits = state.config.limits.clone();
    let body = read_body(&headers, body, limits.max_request_bytes).await?;
    charge(&state, project_id, body.len())?;
    let namespace = state.config.namespace.clone();
    let dropping = state.store.read(move |conn| store::dropping(conn, project_id, &namespace)).await?;
    let now_ms = now_ms();
    let checked = tokio::task::spawn_blocking(move || check_batch(&body, &limits, &dropping, now_ms))
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

/// Splits and checks a whole body. A body that cannot be split, holds no record or too many is
/// refused as a whole; otherwise every record is judged on its own.
pub fn check_batch(body: &[u8], limits: &Limits, dropping: &Dropping, now_ms: i64) -> Result<Checked, ApiError> {
    let ranges = split_records(body).map_err(ApiError::BadRequest)?;
    if ranges.is_empty() {
        return Err(ApiError::BadRequest("the body holds no events; send at least one event".into()));
    }
    if ranges.len() > limits.max_events_per_request {
        return Err(ApiError::PayloadTooLarge(format!(
            "the request holds {} events; send at most {} events per request",
            ranges.len(),
            limits.max_events_per_request
        )));
    }
    let mut out = Checked { rows: Vec::with_capacity(ranges.len()), ..Checked::default() };
    for (index, range) in ranges.into_iter().enumerate() {
        let bytes = &body[range];
        let check = check_event(bytes, limits, now_ms);
        if !check.is_valid() {
            out.failed.extend(failed_records(index, &check));
            continue;
        }
        let (Some(event), Some(time_ms), Some(distinct_id), Some(insert_id)) =
            (check.event, check.time_ms, check.distinct_id, check.insert_id)
        else {
            // The core's rules make these fields required; a record without them is not valid.
            return Err(ApiError::Internal(anyhow::anyhow!("a valid event lacks a key field")));
        };
        if dropping.events.contains(event.as_ref()) {
            out.dropped += 1;
            continue;
        }
        let dropped_props = dropping.properties.get(event.as_ref());
        let strip = dropped_props.is_some_and(|d| check.properties.iter().any(|p| d.contains(p.name.as_ref())));
        let truncate = check.warnings.iter().any(|w| w.code == IssueCode::StringTruncated);
        let record = if strip || truncate {
            rewrite(bytes, dropped_props.filter(|_| strip), truncate.then_some(limits.string_truncate_bytes))?
        } else {
            // The record is valid JSON, hence UTF-8.
            String::from_utf8(bytes.to_vec()).map_err(|e| ApiError::Internal(e.into()))?
        };
        out.rows.push(EventRow {
            event: event.into_owned(),
            time_ms,
            distinct_id: distinct_id.into_owned(),
            insert_id: insert_id.into_owned(),
            record,
        });
    }
    Ok(out)
}

/// Re-serializes a record that must change: properties the dictionary drops are removed, and
/// strings are truncated to `max_string` bytes (FACTS.md), on a character boundary.
fn rewrite(
    bytes: &[u8],
    drop: Option<&std::collections::HashSet<String>>,
    max_string: Option<usize>,
) -> Result<String, ApiError> {
    let mut value: Value = serde_json::from_slice(bytes).map_err(|e| ApiError::Internal(e.into()))?;
    if let (Some(drop), Some(Value::Object(props))) = (drop, value.get_mut("properties")) {
        props.retain(|k, _| !drop.contains(k));
    }
    if let Some(max) = max_string {
        truncate_strings(&mut value, max);
    }
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
