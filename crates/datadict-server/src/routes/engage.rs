//! `POST`/`GET /engage` (spec §2.9, FACTS.md "Profiles", reference): user-profile updates, each
//! `{"$token", "$distinct_id", <one operation>}`, in every wire format of `routes::wire` (a JSON
//! array, an object or NDJSON, gzipped or not; a form or `GET` with `data=` holding JSON or base64
//! JSON). The core validates each update and `routes::profiles` applies the operations, so that a
//! profile always holds the latest value of each property.
//!
//! Authentication: Basic with a service account (`?project_id=`) or the project token (empty
//! password), as for `/import`; without an `Authorization` header the project is the one whose
//! token the updates carry in `$token`, as the service's own `/engage` works. A JSON or NDJSON
//! body, or `strict=1`, is answered with the import's bodies (the service answers `1`/`0`, which
//! tells a bulk client nothing about which update failed); a form or a `GET` (how tracking
//! libraries send updates) is answered `1` or `0`, and `verbose`, `img` and `callback` as they ask.
//! The `ip` parameter is accepted and has no effect: this server does no geolocation.

use crate::auth::IngestCaller;
use crate::routes::ingest::IngestError;
use crate::routes::profiles::update_profiles;
use crate::routes::responses::{ProfilesUpdated, TrackingRefusals};
use crate::routes::wire::{Refused, WireQuery};
use crate::AppState;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::post;
use datadict_core::ProfileKind;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(engage, engage_get)).route("/engage/", post(engage).get(engage_get))
}

/// Update user profiles
///
/// Also served at `/engage/`, with the trailing slash the service's browser library sends to.
#[utoipa::path(post, path = "/engage", tag = "User Profiles",
    params(WireQuery),
    request_body(description = "`{\"$token\", \"$distinct_id\", <one of $set, $set_once, $add, $union, $append, $remove, $unset, $delete>}`: one, a JSON array, NDJSON, or `application/x-www-form-urlencoded` with `data=<JSON or base64 JSON>` (the parameters may be form fields too); optionally `Content-Encoding: gzip`",
        content(
            (Vec<Object> = "application/json"),
            (String = "application/x-ndjson"),
            (String = "application/x-www-form-urlencoded"))),
    responses(
        ProfilesUpdated,
        TrackingRefusals
    ),
    security((), ("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn engage(caller: Result<Option<IngestCaller>, IngestError>, State(state): State<AppState>, request: Request) -> Result<Response, Refused> {
    update_profiles(ProfileKind::User, caller, state, request).await
}

/// `GET /engage?data=...`: the same as a `POST` with a form.
#[utoipa::path(get, path = "/engage", tag = "User Profiles",
    params(WireQuery),
    responses(
        ProfilesUpdated,
        TrackingRefusals
    ),
    security((), ("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn engage_get(caller: Result<Option<IngestCaller>, IngestError>, State(state): State<AppState>, request: Request) -> Result<Response, Refused> {
    update_profiles(ProfileKind::User, caller, state, request).await
}
