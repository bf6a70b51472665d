//! The extractor of the application API's authenticated routes: [`Project`], a service account
//! with a role in the project that the path's `{project_id}` names. Handlers take it as their
//! first argument, so that axum runs it before every other extractor and the credentials are
//! judged before anything else in the request.

use super::{authorize, basic_credentials, Access, Principal};
use crate::error::{unreadable_path, ApiError};
use crate::routes::parse_project_id;
use crate::AppState;
use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;
use std::marker::PhantomData;

/// The role an operation needs, as a type: [`ReadAccess`] or [`WriteAccess`].
pub trait AccessLevel: Send + Sync + 'static {
    const ACCESS: Access;
}

/// Any role in the project (consumer, admin or owner).
#[derive(Debug)]
pub struct ReadAccess;

/// A role that may write: admin or owner.
#[derive(Debug)]
pub struct WriteAccess;

impl AccessLevel for ReadAccess {
    const ACCESS: Access = Access::Read;
}

impl AccessLevel for WriteAccess {
    const ACCESS: Access = Access::Write;
}

/// A request by a service account with the role `A` needs in the project of the path's
/// `{project_id}` (or `{projectId}`). Its refusals, in order: 401 for missing or wrong
/// credentials, then 400 for a project id that is not one (including a path that does not decode
/// as UTF-8), then 403 for an account without that role; a project that does not exist is a 403
/// too, so that credentials cannot probe which ids exist.
#[derive(Debug)]
pub struct Project<A: AccessLevel> {
    pub principal: Principal,
    access: PhantomData<A>,
}

/// A service account with any role in the path's project.
pub type ProjectRead = Project<ReadAccess>;
/// A service account with the admin or owner role in the path's project.
pub type ProjectWrite = Project<WriteAccess>;

impl<A: AccessLevel> Project<A> {
    /// The id of the project the request is allowed into.
    pub fn id(&self) -> i64 {
        self.principal.project_id
    }
}

impl<A: AccessLevel> FromRequestParts<AppState> for Project<A> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let credentials = basic_credentials(&parts.headers)?;
        let project = path_project_id(parts).await?;
        let principal = authorize(state, credentials, project, A::ACCESS).await?;
        Ok(Self { principal, access: PhantomData })
    }
}

/// The project id of the path, as written: the outer `Err` is a route without a `{project_id}`
/// (a bug of this server, answered 500 to everyone), the inner one a request's malformed id,
/// which [`authorize`] reports only once the credentials are found valid.
async fn path_project_id(parts: &mut Parts) -> Result<Result<i64, ApiError>, ApiError> {
    let params = match RawPathParams::from_request_parts(parts, &()).await {
        Ok(params) => params,
        // The router found no parameter that decodes as UTF-8 text; which one is in the message.
        // A non-UTF-8 segment other than the project's lands here too: it is as unreadable, and
        // its 400 is no more than what the handler's own path extractor would answer.
        Err(e) if e.status().is_client_error() => return Ok(Err(unreadable_path(&e.body_text()))),
        Err(e) => return Err(ApiError::Internal(anyhow::anyhow!("path parameters: {}", e.body_text()))),
    };
    let raw = params.iter().find(|(key, _)| matches!(*key, "project_id" | "projectId")).map(|(_, value)| value);
    match raw {
        Some(raw) => Ok(parse_project_id(raw)),
        None => Err(ApiError::Internal(anyhow::anyhow!("a route authorized by project has no `{{project_id}}` in its path"))),
    }
}
