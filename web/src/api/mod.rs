//! Talking to the datadict API: one generic request function, one small function per endpoint,
//! and one error type built from status codes. Every call is written to the on-page log.

use base64::Engine;
use datadict_core::{EntityType, ErrorBody, ListSchemasResponse, SchemaEntry};
use gloo_net::http::{Method, RequestBuilder};
use serde::de::DeserializeOwned;
use std::fmt;

/// Where and as whom the app talks to the API. Held in memory only.
#[derive(Clone, PartialEq)]
pub struct Connection {
    /// The application host without a trailing slash, e.g. `http://127.0.0.1:8080`.
    pub base_url: String,
    pub project_id: i64,
    pub username: String,
    pub secret: String,
}

// The secret must never reach a log line, not even through `{:?}`.
impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("base_url", &self.base_url)
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
            write!(f, ": {err}")?;
        }
        Ok(())
    }
}

fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// Sends one request and decodes a JSON answer; `log` receives a record of the exchange.
pub async fn request<T: DeserializeOwned>(
    conn: &Connection,
    method: Method,
    path: &str,
    body: Option<&serde_json::Value>,
    log: &dyn Fn(RequestRecord),
) -> Result<T, ApiError> {
    let start = now_ms();
    let mut record = RequestRecord { method: method.to_string(), path: path.to_owned(), status: None, duration_ms: 0.0, error: None };
    let result = send(conn, method, path, body, &mut record).await;
    record.duration_ms = now_ms() - start;
    if let Err(err) = &result {
        record.error = Some(err.to_string());
    }
    log(record);
    result
}

async fn send<T: DeserializeOwned>(
    conn: &Connection,
    method: Method,
    path: &str,
    body: Option<&serde_json::Value>,
    record: &mut RequestRecord,
) -> Result<T, ApiError> {
    let builder = RequestBuilder::new(&conn.url(path))
        .method(method)
        .header("Authorization", &conn.authorization())
        .header("Accept", "application/json");
    let request = match body {
        Some(json) => builder.json(json).map_err(|e| ApiError::Decode(e.to_string()))?,
        None => builder.build().map_err(|e| ApiError::Network(e.to_string()))?,
    };
    let response = request.send().await.map_err(|e| ApiError::Network(e.to_string()))?;
    let status = response.status();
    record.status = Some(status);
    let text = response.text().await.map_err(|e| ApiError::Network(e.to_string()))?;
    if !(200..300).contains(&status) {
        return Err(ApiError::from_status(status, &text));
    }
    serde_json::from_str(&text).map_err(|e| ApiError::Decode(format!("{e} in {}", text.chars().take(200).collect::<String>())))
}

/// `GET /api/app/projects/{id}/schemas/{entityType}` (spec §4.1).
pub async fn list_schemas(
    conn: &Connection,
    entity_type: EntityType,
    log: &dyn Fn(RequestRecord),
) -> Result<Vec<SchemaEntry>, ApiError> {
    let path = format!("/api/app/projects/{}/schemas/{}", conn.project_id, entity_type);
    let body: ListSchemasResponse = request(conn, Method::GET, &path, None, log).await?;
    Ok(body.results)
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
    fn the_secret_never_shows_in_debug_output() {
        let conn = Connection { base_url: "http://h".into(), project_id: 1, username: "u".into(), secret: "s3cr3t".into() };
        assert!(!format!("{conn:?}").contains("s3cr3t"));
        assert_eq!(conn.authorization(), "Basic dTpzM2NyM3Q=");
    }
}
