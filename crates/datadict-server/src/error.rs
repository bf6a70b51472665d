//! The one error type of the API. It knows its status code and writes the spec's error body
//! (`{"error": ..., "status": "error"}`); server faults are logged and kept opaque.

use axum::http::StatusCode;
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
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

fn format_issues(issues: &[Issue]) -> String {
    let list = issues.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
    format!("the request has {} problem(s): {list}", issues.len())
}

impl ApiError {
    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::BadRequest(_) | Self::Invalid(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Internal(err.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Self::Internal(err) = &self {
            tracing::error!("internal error: {err:#}");
        }
        // No `WWW-Authenticate` challenge on 401: it would make browsers open their own login
        // dialog over the web app, which explains the failure on the page instead.
        (self.status_code(), Json(ErrorBody::new(self.to_string()))).into_response()
    }
}
