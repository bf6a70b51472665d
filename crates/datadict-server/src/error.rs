//! The one error type of the API. It knows its status code and writes the spec's error body
//! (`{"error": ..., "status": "error"}`); server faults are logged and kept opaque.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use datadict_core::{ErrorBody, Issue};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    BadRequest(String),
    /// A body that failed validation; every issue is listed in the message.
    #[error("{}", format_issues(.0))]
    Invalid(Vec<Issue>),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The request does not fit the resource's current state (409).
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A rate limit was reached; the client may retry after `retry_after_secs`.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after_secs: u64 },
    /// The store takes no writes (a failed fsync, see `store::WritesRefused`): 503 with why.
    #[error("{0}")]
    Unavailable(String),
    /// The storage is out for a while (`store::outage`): a full disk (507) or an unreachable
    /// PostgreSQL (503), with `Retry-After`. The database's own message goes to the log only.
    #[error("{}", outage_message(*.0))]
    Outage(crate::store::outage::Outage),
    #[error("internal error")]
    Internal(anyhow::Error),
}

impl From<anyhow::Error> for ApiError {
    /// A [`crate::store::WritesRefused`] anywhere in the chain is a 503 that says why; any other
    /// error is an opaque 500, logged.
    fn from(err: anyhow::Error) -> Self {
        if let Some(refused) = crate::store::WritesRefused::in_chain(&err) {
            return Self::Unavailable(refused.0.clone());
        }
        match crate::store::outage::outage_of(&err) {
            Some(outage) => {
                tracing::error!("the storage is out ({outage:?}): {err:#}");
                Self::Outage(outage)
            }
            None => Self::Internal(err),
        }
    }
}

/// How many problems one error message lists. Every problem is counted, but a body with thousands
/// of bad entries made a message of megabytes, which no one reads and some clients cut or choke
/// on; the first ones show what is wrong, and fixing them reveals the rest.
pub const MAX_LISTED_ISSUES: usize = 100;

fn format_issues(issues: &[Issue]) -> String {
    let listed = &issues[..issues.len().min(MAX_LISTED_ISSUES)];
    let list = listed.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
    let more = match issues.len() - listed.len() {
        0 => String::new(),
        n => format!("; and {n} more not listed here (the first {MAX_LISTED_ISSUES} are): fix these and send again to see the rest"),
    };
    format!("the request has {} problem(s): {list}{more}", issues.len())
}

impl ApiError {
    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::BadRequest(_) | Self::Invalid(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Outage(crate::store::outage::Outage::DiskFull) => StatusCode::INSUFFICIENT_STORAGE,
            Self::Outage(crate::store::outage::Outage::Unreachable) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(err: rusqlite::Error) -> Self {
        anyhow::Error::from(err).into()
    }
}

/// How long a client is asked to wait after a storage outage before it tries again.
pub const OUTAGE_RETRY_AFTER_SECS: u64 = 30;

/// What a client is told of a storage outage: what is wrong, that nothing of the request was
/// stored, and when to try again; nothing of the database's internals.
fn outage_message(outage: crate::store::outage::Outage) -> String {
    let what = match outage {
        crate::store::outage::Outage::DiskFull => "the server's storage is full",
        crate::store::outage::Outage::Unreachable => "the server cannot reach its database",
    };
    format!("{what}, so nothing of this request was stored; send it again in {OUTAGE_RETRY_AFTER_SECS} seconds (the server's operator has the details in its log)")
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Self::Internal(err) = &self {
            tracing::error!("internal error: {err:#}");
        }
        // No `WWW-Authenticate` challenge on 401: it would make browsers open their own login
        // dialog over the web app, which explains the failure on the page instead.
        let mut response = (self.status_code(), Json(ErrorBody::new(self.to_string()))).into_response();
        self.add_headers(&mut response);
        response
    }
}

impl ApiError {
    /// Adds the headers an error implies (`Retry-After` on 429 and on a storage outage).
    pub fn add_headers(&self, response: &mut Response) {
        match self {
            Self::TooManyRequests { retry_after_secs, .. } => {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            Self::Outage(_) => {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(OUTAGE_RETRY_AFTER_SECS));
            }
            _ => {}
        }
    }

    /// A 429 that tells the client to wait `wait` (rounded up to whole seconds, at least 1).
    pub fn rate_limited(message: impl Into<String>, wait: std::time::Duration) -> Self {
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        Self::TooManyRequests { message: message.into(), retry_after_secs: secs.max(1) }
    }
}

/// The body of a request parsed as JSON, whose rejection is the API's own error body. The body is
/// read as bytes and parsed here (rather than with `axum::Json`) so that a missing or odd
/// `Content-Type` is accepted, as `curl -d` sends it, and every parse error says where it is.
#[derive(Debug)]
pub struct JsonBody(pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let limit = crate::JSON_BODY_LIMIT;
        let bytes = read_limited(req.into_body(), limit).await?.ok_or_else(|| {
            ApiError::PayloadTooLarge(format!("the request body is larger than {limit} bytes; send a smaller body"))
        })?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Reads a body of at most `limit` bytes (`None` when it is larger). A larger body is still read
/// to its end, up to `DRAIN_LIMIT`, and discarded: answering 413 while the client is still
/// sending would make it see a broken connection instead of the answer.
pub async fn read_limited(body: Body, limit: usize) -> Result<Option<Bytes>, ApiError> {
    use http_body_util::BodyExt;
    use axum::body::HttpBody as _;
    let mut body = body;
    // Sized once from `Content-Length` when it is within the limit, instead of grown and copied
    // as frames arrive (a client's length is only a hint: the loop below still counts).
    let announced = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    let mut buf = Vec::with_capacity(if announced <= limit { announced } else { 0 });
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::BadRequest(format!("cannot read the request body ({e}); send it again")))?;
        let Ok(data) = frame.into_data() else { continue };
        seen += data.len();
        if seen <= limit {
            buf.extend_from_slice(&data);
        } else if seen > DRAIN_LIMIT {
            break;
        }
    }
    Ok((seen <= limit).then(|| Bytes::from(buf)))
}

/// How much of an over-limit body is read and discarded before the connection is given up.
const DRAIN_LIMIT: usize = 256 * 1024 * 1024;

/// The path parameters of a request (as `axum::extract::Path`), whose rejection is the API's own
/// error body: a segment that does not decode to UTF-8 (`%FF`) gets a 400 that says which.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T: serde::de::DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Self(value)),
            Err(e) if e.status().is_server_error() => Err(ApiError::Internal(anyhow::anyhow!("path parameters: {}", e.body_text()))),
            Err(e) => Err(unreadable_path(&e.body_text())),
        }
    }
}

/// The 400 of a path whose parameters cannot be read; `why` is axum's explanation.
pub fn unreadable_path(why: &str) -> ApiError {
    ApiError::BadRequest(format!("the URL path cannot be read ({why}); percent-encode each path segment as UTF-8 text"))
}

/// Parses a JSON document, with an error that says where and what to do. A leading UTF-8 byte
/// order mark is skipped: RFC 8259 lets a parser ignore it, and editors on Windows write one into
/// the dictionary files people then send with `curl -d @file`; serde_json alone would answer
/// "expected value at line 1 column 1", which names nothing the sender can see.
pub fn parse_json(bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequest("the request body is empty; send a JSON object".into()));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Eof => "is cut short",
            serde_json::error::Category::Io | serde_json::error::Category::Syntax => "is not valid JSON",
            serde_json::error::Category::Data => "has a value that cannot be read",
        };
        ApiError::BadRequest(format!(
            "the request body {what} ({e}); send one JSON object in UTF-8"
        ))
    })
}
