//! What the ingestion routes share over HTTP: the ingestion API's error body
//! (`{"code","error","status"}`, FACTS.md), the rate charge, reading a possibly gzipped body within
//! the size limit, and the import's answer of a batch. Their wire formats and the other answers
//! are in `routes::wire`; their caller is found by `auth::IngestCaller`.

use crate::error::{read_limited, ApiError};
use crate::ratelimit::{Kind, Limit};
use crate::AppState;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

// FACTS.md's 429 message is kept word for word (capitalised, with a period), against this
// project's message style, because clients of the service match on it (as on its 401, see
// `auth::IngestCaller`).
use datadict_core::api::import_status::{self, RATE_LIMITED};
use datadict_core::{FailedRecord, ImportResponse};

/// An error of the ingestion API, written as `{"code":N,"error":"...","status":"<reason>"}`.
#[derive(Debug)]
pub struct IngestError(pub ApiError);

impl From<ApiError> for IngestError {
    fn from(err: ApiError) -> Self {
        Self(err)
    }
}

impl From<anyhow::Error> for IngestError {
    fn from(err: anyhow::Error) -> Self {
        Self(err.into())
    }
}

impl IntoResponse for IngestError {
    fn into_response(self) -> Response {
        let status = self.0.status_code();
        if let ApiError::Internal(err) = &self.0 {
            tracing::error!("internal error: {err:#}");
        }
        let word = match status {
            StatusCode::BAD_REQUEST => import_status::BAD_REQUEST,
            StatusCode::UNAUTHORIZED => import_status::UNAUTHORIZED,
            StatusCode::PAYLOAD_TOO_LARGE => import_status::PAYLOAD_TOO_LARGE,
            StatusCode::TOO_MANY_REQUESTS => import_status::TOO_MANY_REQUESTS,
            other => other.canonical_reason().unwrap_or("Error"),
        };
        let body = ImportResponse {
            code: status.as_u16(),
            error: Some(self.0.to_string()),
            failed_records: None,
            num_records_imported: None,
            status: word.to_owned(),
        };
        let mut response = (status, Json(body)).into_response();
        self.0.add_headers(&mut response);
        response
    }
}

/// Charges `bytes` to the project's ingestion budget (FACTS.md: about 2 GB a minute).
pub async fn charge(state: &AppState, project_id: i64, bytes: usize) -> Result<(), ApiError> {
    let Some(per_minute) = state.config.ingest_rate_limit else { return Ok(()) };
    state
        .config
        .rate_limiter
        .charge(&state.store, Kind::IngestBytes, project_id, Limit { per_minute }, bytes as u64)
        .await?
        .map_err(|wait| ApiError::rate_limited(RATE_LIMITED, wait))
}

/// A request body as received: read to its end (so that the connection stays usable whatever
/// the answer), not yet decompressed.
#[derive(Debug)]
pub struct RawBody {
    bytes: Result<Bytes, ApiError>,
    gzipped: bool,
    max_bytes: usize,
}

/// Reads the whole request body, whatever is wrong with it, before anything else in it is decided:
/// an answer sent before the body is read makes hyper drop the connection, which a keep-alive
/// client sees as a failed request. (The caller's refusals, decided before the handler runs, wait
/// for the body in `drain`.) Bodies over the limit are drained and discarded (see
/// [`read_limited`]), never held.
pub async fn read_raw(headers: &HeaderMap, body: Body, max_bytes: usize) -> RawBody {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
        .unwrap_or_default();
    let gzipped = matches!(encoding.as_str(), "gzip" | "x-gzip");
    // A gzip body is at most a little larger than its content, so the same limit (with a margin
    // for headers of incompressible data) bounds the compressed body too.
    let raw_limit = if gzipped { max_bytes + max_bytes / 64 + 1024 } else { max_bytes };
    let read = read_limited(body, raw_limit).await;
    let bytes = match encoding.as_str() {
        "" | "identity" | "gzip" | "x-gzip" => read.and_then(|r| r.ok_or_else(|| too_large(max_bytes))),
        other => Err(ApiError::UnsupportedMediaType(format!(
            "`Content-Encoding: {other}` is not supported; send the body as is or gzipped with `Content-Encoding: gzip`"
        ))),
    };
    RawBody { bytes, gzipped, max_bytes }
}

fn too_large(max_bytes: usize) -> ApiError {
    ApiError::PayloadTooLarge(format!("request exceeds max limit of {max_bytes} bytes; split the data into smaller requests"))
}

impl RawBody {
    /// The uncompressed body, or why it cannot be used (413 over the limit, 400 for bad gzip).
    pub async fn decode(self) -> Result<Bytes, ApiError> {
        let raw = self.bytes?;
        if !self.gzipped {
            return Ok(raw);
        }
        let max_bytes = self.max_bytes;
        // Decompression happens off the reactor: a 10 MB body takes milliseconds to inflate.
        let out = tokio::task::spawn_blocking(move || datadict_core::gunzip(&raw, max_bytes))
            .await
            .map_err(|e| ApiError::Internal(e.into()))?;
        match out {
            Ok(bytes) => Ok(Bytes::from(bytes)),
            Err(datadict_core::GzipError::TooLarge { .. }) => Err(too_large(max_bytes)),
            Err(e) => Err(ApiError::BadRequest(e.to_string())),
        }
    }
}

/// The import's answer of a batch: 200 with the count of what was stored, or 400 listing the
/// failed records with that count (`strict=1` with any failure, FACTS.md). Without strict mode
/// invalid records are skipped, as the service does, and counted in a header, except when
/// nothing at all was stored: no ingestion route answers 200 to a body it stored nothing from
/// (issue 19).
pub fn batch_response(imported: usize, failed: Vec<FailedRecord>, strict: bool) -> Response {
    if !failed.is_empty() && (strict || imported == 0) {
        let body = ImportResponse::validation_failed(failed, imported as u64);
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    }
    let mut response = Json(ImportResponse::ok(imported as u64)).into_response();
    if !failed.is_empty() {
        let skipped = failed.iter().map(|f| f.index).collect::<std::collections::BTreeSet<_>>().len();
        response.headers_mut().insert("x-datadict-records-skipped", HeaderValue::from(skipped));
    }
    response
}
