//! Talking to the datadict API: one generic request function, one small function per endpoint,
//! and one error type built from status codes. Every call is written to the on-page log.

use base64::Engine;
use datadict_core::{
    BatchUploadRequest, BatchUploadResponse, DeleteResponse, EntityType, ErrorBody, ImportResponse, ListSchemasResponse,
    SchemaEntry, StatusResponse,
};
use gloo_net::http::{Method, RequestBuilder};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::fmt;

/// Where and as whom the app talks to the API. Held in memory only (unless the user opts in to
/// "remember on this device", see `pages::settings`).
#[derive(Clone, PartialEq)]
pub struct Connection {
    /// The application host without a trailing slash, e.g. `http://127.0.0.1:8080`; the API lives
    /// under `/api/app` (FACTS.md).
    pub base_url: String,
    /// The event import host without a trailing slash (spec §4.4 `{import_url}`).
    pub import_url: String,
    pub project_id: i64,
    pub username: String,
    pub secret: String,
}

// The secret must never reach a log line, not even through `{:?}`.
impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("base_url", &self.base_url)
            .field("import_url", &self.import_url)
            .field("project_id", &self.project_id)
            .field("username", &self.username)
            .field("secret", &"<hidden>")
            .finish()
    }
}

impl Connection {
    fn authorization(&self) -> String {
        let raw = format!("{}:{}", self.username, self.secret);
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(raw))
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }

    fn project_path(&self, rest: &str) -> String {
        format!("/api/app/projects/{}{rest}", self.project_id)
    }
}

/// Why a request failed, in words a user can act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// The server could not be reached (wrong URL, server down, CORS refused).
    Network(String),
    /// 401: the credentials are wrong or missing.
    Unauthorized(String),
    /// 403: the credentials are valid but lack access.
    Forbidden(String),
    /// Any other non-success status, with the server's own message.
    Status { status: u16, message: String },
    /// 429: the project's rate limit; `retry_after_ms` is the server's `Retry-After`, when sent.
    RateLimited { message: String, retry_after_ms: Option<u64> },
    /// The answer was not what the API promises.
    Decode(String),
}

impl ApiError {
    /// Builds the error for a non-success answer from its status and body text.
    pub fn from_status(status: u16, body: &str) -> Self {
        let message = serde_json::from_str::<ErrorBody>(body)
            .map(|b| b.error)
            .unwrap_or_else(|_| body.chars().take(300).collect());
        match status {
            401 => Self::Unauthorized(message),
            403 => Self::Forbidden(message),
            429 => Self::RateLimited { message, retry_after_ms: None },
            _ => Self::Status { status, message },
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Network(m) => write!(f, "cannot reach the server ({m}); check the API base URL and that the server is running"),
            Self::Unauthorized(m) => write!(f, "wrong credentials (401): the service account user name or secret is not accepted. Server said: {m}"),
            Self::Forbidden(m) => write!(f, "no access (403): the credentials are valid, but this account may not do this in this project. Server said: {m}"),
            Self::Status { status, message } => write!(f, "the server answered {status}: {message}"),
            Self::RateLimited { message, retry_after_ms: Some(ms) } => write!(f, "the project's rate limit is reached (429); the server asks to wait {:.0} s. Server said: {message}", *ms as f64 / 1000.0),
            Self::RateLimited { message, retry_after_ms: None } => write!(f, "the project's rate limit is reached (429). Server said: {message}"),
            Self::Decode(m) => write!(f, "the server's answer could not be read: {m}"),
        }
    }
}

/// One finished request, for the on-page log.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub status: Option<u16>,
    pub duration_ms: f64,
    pub error: Option<String>,
}

impl fmt::Display for RequestRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self.status.map_or_else(|| "no answer".to_owned(), |s| s.to_string());
        write!(f, "{} {} → {status} in {:.0} ms", self.method, self.path, self.duration_ms)?;
        if let Some(err) = &self.error {
            let short: String = err.chars().take(300).collect();
            write!(f, ": {short}")?;
        }
        Ok(())
    }
}

pub fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// What a request carries.
enum Body<'a> {
    None,
    Json(&'a serde_json::Value),
    /// A JSON array of events for `/import` or of profile updates for `/engage`, gzipped or not
    /// (the core's `Batch`).
    Events { body: &'a [u8], gzipped: bool },
}

/// Sends one request and decodes a JSON answer; `log` receives a record of the exchange.
pub async fn request<T: DeserializeOwned>(
    conn: &Connection,
    method: Method,
    path: &str,
    body: Option<&serde_json::Value>,
    log: &dyn Fn(RequestRecord),
) -> Result<T, ApiError> {
    let body = body.map_or(Body::None, Body::Json);
    let url = conn.url(path);
    let (status, text, _) = exchange(conn, method, &url, path, body, log).await?;
    if !(200..300).contains(&status) {
        return Err(ApiError::from_status(status, &text));
    }
    decode(&text)
}

fn decode<T: DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    serde_json::from_str(text).map_err(|e| ApiError::Decode(format!("{e} in {}", text.chars().take(200).collect::<String>())))
}

/// Sends one request and returns its status and body text; a non-2xx status is logged as an error
/// line with the start of the body, and is returned (not turned into an error) so that callers
/// that read error bodies (the import's 400) can.
async fn exchange(
    conn: &Connection,
    method: Method,
    url: &str,
    log_path: &str,
    body: Body<'_>,
    log: &dyn Fn(RequestRecord),
) -> Result<(u16, String, Option<String>), ApiError> {
    let start = now_ms();
    let mut record = RequestRecord { method: method.to_string(), path: log_path.to_owned(), status: None, duration_ms: 0.0, error: None };
    let result = send(conn, method, url, body).await;
    record.duration_ms = now_ms() - start;
    match &result {
        Ok((status, text, _)) => {
            record.status = Some(*status);
            if !(200..300).contains(status) {
                record.error = Some(ApiError::from_status(*status, text).to_string());
            }
        }
        Err(err) => record.error = Some(err.to_string()),
    }
    log(record);
    result
}

/// Sends one request; returns the status, the body text and the `Retry-After` header, if any.
async fn send(conn: &Connection, method: Method, url: &str, body: Body<'_>) -> Result<(u16, String, Option<String>), ApiError> {
    let builder = RequestBuilder::new(url)
        .method(method)
        .header("Authorization", &conn.authorization())
        .header("Accept", "application/json");
    let request = match body {
        Body::None => builder.build().map_err(|e| ApiError::Network(e.to_string()))?,
        Body::Json(json) => builder.json(json).map_err(|e| ApiError::Decode(e.to_string()))?,
        Body::Events { body, gzipped } => {
            let builder = builder.header("Content-Type", "application/json");
            let builder = if gzipped { builder.header("Content-Encoding", "gzip") } else { builder };
            builder.body(js_sys::Uint8Array::from(body)).map_err(|e| ApiError::Network(e.to_string()))?
        }
    };
    let response = request.send().await.map_err(|e| ApiError::Network(e.to_string()))?;
    let status = response.status();
    let retry_after = response.headers().get("retry-after");
    let text = response.text().await.map_err(|e| ApiError::Network(e.to_string()))?;
    Ok((status, text, retry_after))
}

fn encode(segment: &str) -> String {
    String::from(js_sys::encode_uri_component(segment))
}

/// `GET /api/app/projects/{id}/schemas/{entityType}` (spec §4.1).
pub async fn list_schemas(
    conn: &Connection,
    entity_type: EntityType,
    log: &dyn Fn(RequestRecord),
) -> Result<Vec<SchemaEntry>, ApiError> {
    let path = conn.project_path(&format!("/schemas/{entity_type}"));
    let body: ListSchemasResponse = request(conn, Method::GET, &path, None, log).await?;
    Ok(body.results)
}

/// `GET /api/app/projects/{id}/schemas`: the whole dictionary, events and profiles (FACTS.md).
pub async fn list_all_schemas(conn: &Connection, log: &dyn Fn(RequestRecord)) -> Result<Vec<SchemaEntry>, ApiError> {
    let path = conn.project_path("/schemas");
    let body: ListSchemasResponse = request(conn, Method::GET, &path, None, log).await?;
    Ok(body.results)
}

/// `POST /api/app/projects/{id}/schemas/{entityType}/{name}`: create or replace one entity.
pub async fn put_schema(conn: &Connection, entry: &SchemaEntry, log: &dyn Fn(RequestRecord)) -> Result<(), ApiError> {
    let path = conn.project_path(&format!("/schemas/{}/{}", entry.entity_type, encode(&entry.name)));
    let body = serde_json::to_value(&entry.schema_json).map_err(|e| ApiError::Decode(e.to_string()))?;
    let _: StatusResponse = request(conn, Method::POST, &path, Some(&body), log).await?;
    Ok(())
}

/// The body of an entity replacement that removes metadata keys: FACTS.md says a replace keeps
/// entity-level keys absent from the new schema, and removes a key sent as `null`.
pub async fn put_schema_json(
    conn: &Connection,
    entity_type: EntityType,
    name: &str,
    schema: &serde_json::Value,
    log: &dyn Fn(RequestRecord),
) -> Result<(), ApiError> {
    let path = conn.project_path(&format!("/schemas/{entity_type}/{}", encode(name)));
    let _: StatusResponse = request(conn, Method::POST, &path, Some(schema), log).await?;
    Ok(())
}

/// `DELETE /api/app/projects/{id}/schemas/{entityType}/{name}`.
pub async fn delete_schema(conn: &Connection, entity_type: EntityType, name: &str, log: &dyn Fn(RequestRecord)) -> Result<u64, ApiError> {
    let path = conn.project_path(&format!("/schemas/{entity_type}/{}", encode(name)));
    let body: DeleteResponse = request(conn, Method::DELETE, &path, None, log).await?;
    Ok(body.results.delete_count)
}

/// `POST /api/app/projects/{id}/schemas` with `{"entries":[...],"truncate":bool}` (FACTS.md).
pub async fn upload_schemas(conn: &Connection, upload: &BatchUploadRequest, log: &dyn Fn(RequestRecord)) -> Result<BatchUploadResponse, ApiError> {
    let path = conn.project_path("/schemas");
    let body = serde_json::to_value(upload).map_err(|e| ApiError::Decode(e.to_string()))?;
    request(conn, Method::POST, &path, Some(&body), log).await
}

/// One row of the server's `GET .../event-counts?days=30` answer (the read API of
/// `crates/datadict-server/src/routes/data.rs`). The server defines this shape and the core does
/// not have it yet, so only the two fields the dictionary shows are read here.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EventCount {
    pub event: String,
    pub count: i64,
}

#[derive(Deserialize)]
struct EventCounts {
    results: Vec<EventCount>,
}

/// `GET /api/app/projects/{id}/event-counts?days=30`: per event name, the 30-day volume.
pub async fn event_counts(conn: &Connection, log: &dyn Fn(RequestRecord)) -> Result<Vec<EventCount>, ApiError> {
    let path = conn.project_path("/event-counts?days=30");
    let body: EventCounts = request(conn, Method::GET, &path, None, log).await?;
    Ok(body.results)
}

/// `POST {import_url}/import?strict=1&project_id=N` with one batch of the core's `Batcher` (spec
/// §4.4, FACTS.md).
/// A strict-mode 400 that lists `failed_records` is an answer, not an error: the valid records of
/// the batch were imported.
pub async fn import_batch(conn: &Connection, batch: &datadict_core::Batch, log: &dyn Fn(RequestRecord)) -> Result<ImportResponse, ApiError> {
    ingest_batch(conn, "/import", batch, log).await
}

/// `POST {import_url}/engage?strict=1&project_id=N` with one batch of profile updates (the core's
/// `Batcher` with `RecordKind::ProfileUpdates`; FACTS.md "Profiles"). The server answers with the
/// import's bodies, so a strict-mode 400 with `failed_records` is an answer here too: the valid
/// updates of the batch were applied.
pub async fn engage_batch(conn: &Connection, batch: &datadict_core::Batch, log: &dyn Fn(RequestRecord)) -> Result<ImportResponse, ApiError> {
    ingest_batch(conn, "/engage", batch, log).await
}

/// What `/import` and `/engage` share: the request and the reading of its answer.
async fn ingest_batch(conn: &Connection, endpoint: &str, batch: &datadict_core::Batch, log: &dyn Fn(RequestRecord)) -> Result<ImportResponse, ApiError> {
    let path = format!("{endpoint}?strict=1&project_id={}", conn.project_id);
    let url = format!("{}{path}", conn.import_url.trim_end_matches('/'));
    let (status, text, retry_after) = exchange(conn, Method::POST, &url, &path, Body::Events { body: &batch.body, gzipped: batch.gzipped }, log).await?;
    if status == 200 {
        return decode(&text);
    }
    if status == 400 {
        if let Ok(answer) = serde_json::from_str::<ImportResponse>(&text) {
            if answer.failed_records.is_some() {
                return Ok(answer);
            }
        }
    }
    Err(with_retry_after(ApiError::from_status(status, &text), retry_after.as_deref(), js_sys::Date::now() as i64))
}

/// Attaches a 429's `Retry-After` (seconds or an HTTP date, parsed by the core) to the error, so
/// the retry policy can honour it.
fn with_retry_after(err: ApiError, retry_after: Option<&str>, now_ms: i64) -> ApiError {
    match err {
        ApiError::RateLimited { message, .. } => ApiError::RateLimited {
            message,
            retry_after_ms: retry_after.and_then(|v| datadict_core::parse_retry_after(v, now_ms)),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn status_codes_become_words() {
        let body = r#"{"error":"invalid credentials: check the service account user name and secret","status":"error"}"#;
        let err = ApiError::from_status(401, body);
        assert!(matches!(err, ApiError::Unauthorized(_)));
        assert!(err.to_string().starts_with("wrong credentials (401)"), "{err}");
        assert!(matches!(ApiError::from_status(403, "{}"), ApiError::Forbidden(_)));
        assert_eq!(
            ApiError::from_status(500, "boom"),
            ApiError::Status { status: 500, message: "boom".into() }
        );
    }

    #[wasm_bindgen_test]
    fn a_429_carries_its_retry_after() {
        let err = with_retry_after(ApiError::from_status(429, r#"{"error":"slow down","status":"error"}"#), Some("7"), 0);
        assert_eq!(err, ApiError::RateLimited { message: "slow down".into(), retry_after_ms: Some(7000) });
        assert!(err.to_string().contains("wait 7 s"), "{err}");
        let other = with_retry_after(ApiError::from_status(503, "down"), Some("7"), 0);
        assert_eq!(other, ApiError::Status { status: 503, message: "down".into() });
        let unreadable = with_retry_after(ApiError::from_status(429, "x"), Some("soon"), 0);
        assert_eq!(unreadable, ApiError::RateLimited { message: "x".into(), retry_after_ms: None });
    }

    #[wasm_bindgen_test]
    fn the_secret_never_shows_in_debug_output() {
        let conn = Connection {
            base_url: "http://h".into(),
            import_url: "http://h".into(),
            project_id: 1,
            username: "u".into(),
            secret: "s3cr3t".into(),
        };
        assert!(!format!("{conn:?}").contains("s3cr3t"));
        assert_eq!(conn.authorization(), "Basic dTpzM2NyM3Q=");
    }
}
