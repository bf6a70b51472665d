//! `POST`/`GET /groups` (reference, "Group Profiles"): group-profile updates, each
//! `{"$token", "$group_key", "$group_id", <one operation>}` with the group operations `$set`,
//! `$set_once`, `$add`, `$union`, `$remove`, `$unset` and `$delete`, in every wire format of
//! `routes::wire`. Authenticated, checked, applied and answered exactly as `/engage`
//! (`routes::profiles`), with the core's one profile parser and `profile::apply`; the profiles
//! are stored beside user profiles (`store::groups`) and read back with
//! `GET /api/app/projects/{id}/groups` (`routes::data`).

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
    OpenApiRouter::new().routes(routes!(groups, groups_get)).route("/groups/", post(groups).get(groups_get))
}

/// Update group profiles
///
/// Also served at `/groups/`, with the trailing slash the service's browser library sends to.
#[utoipa::path(post, path = "/groups", tag = "Group Profiles",
    params(WireQuery),
    request_body(description = "`{\"$token\", \"$group_key\", \"$group_id\", <one of $set, $set_once, $add, $union, $remove, $unset, $delete>}`: one, a JSON array, NDJSON, or `application/x-www-form-urlencoded` with `data=<JSON or base64 JSON>` (the parameters may be form fields too); optionally `Content-Encoding: gzip`",
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
async fn groups(caller: Result<Option<IngestCaller>, IngestError>, State(state): State<AppState>, request: Request) -> Result<Response, Refused> {
    update_profiles(ProfileKind::Group, caller, state, request).await
}

/// `GET /groups?data=...`: the same as a `POST` with a form.
#[utoipa::path(get, path = "/groups", tag = "Group Profiles",
    params(WireQuery),
    responses(
        ProfilesUpdated,
        TrackingRefusals
    ),
    security((), ("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn groups_get(caller: Result<Option<IngestCaller>, IngestError>, State(state): State<AppState>, request: Request) -> Result<Response, Refused> {
    update_profiles(ProfileKind::Group, caller, state, request).await
}
