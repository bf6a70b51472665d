//! `POST /import` (spec §4.4, FACTS.md): events as a JSON array or NDJSON, gzipped or not. Each
//! record is checked by the core's rules; valid ones are stored in one transaction (deduplicated,
//! with `dropped` events and properties removed), invalid ones are reported in strict mode.

use crate::auth::IngestCaller;
use crate::error::ApiError;
use crate::routes::ingest::{batch_response, charge, input_format, parse_strict, read_raw, IngestError};
use crate::routes::responses::IngestRefusals;
use crate::ingest::{check_batch, now_ms, Checked, Drops};
use crate::store;
use crate::AppState;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use utoipa_axum::{router::OpenApiRouter, routes};
use serde::Deserialize;
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

#[utoipa::path(post, path = "/import", tag = "Events",
    params(("strict" = Option<String>, Query, description = "`1`: answer 400 listing every invalid record (valid ones are still stored); `0` (default): skip them"),
        ("project_id" = Option<i64>, Query, description = "required with service-account credentials")),
    request_body(content = Object, description = "a JSON array of events, or NDJSON (`application/x-ndjson`); optionally `Content-Encoding: gzip`"),
    responses(
        (status = 200, description = "`{\"code\":200,\"num_records_imported\":N,\"status\":\"OK\"}`", body = Object),
        (status = 400, description = "strict mode: some records failed (`failed_records`), the valid ones were stored; or the body cannot be read", body = Object),
        IngestRefusals
    ),
    security(("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn import(
    IngestCaller { project_id }: IngestCaller,
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
    let strict = parse_strict(query.get("strict").map(String::as_str))?;
    let body = raw.decode().await?;
    charge(&state, project_id, body.len()).await?;
    let entries = state.store.read(move |conn| store::dropping_schemas(conn, project_id)).await?;
    let drops = Drops::new(&entries, &state.config.namespace);
    let format = input_format(&headers);
    let now_ms = now_ms();
    let mut sink = state.store.event_sink(project_id, now_ms / 1000);
    let (checked, pending) = tokio::task::spawn_blocking(move || {
        let checked = check_batch(&body, format, &limits, &drops, now_ms, &mut sink)?;
        Ok::<_, ApiError>((checked, sink.close()))
    })
    .await
    .map_err(|e| ApiError::Internal(e.into()))??;
    // The answer waits for the commit: a 200 is only sent for events on disk.
    pending.wait().await?;
    let Checked { stored, dropped, failed } = checked;
    let imported = stored + dropped;
    Ok(batch_response(imported, failed, strict))
}
