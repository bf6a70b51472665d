//! A read API for checking what arrived (not part of the service: the spec's service has no way to
//! read raw events back; this is what a local stand-in is for). Under `/api/app/projects/{id}`:
//!
//! - `GET events?event=&distinct_id=&where=<prop>=<value>&from=&to=&limit=&cursor=`: stored
//!   events, newest first, paginated with an opaque cursor;
//! - `GET profiles/{distinct_id}`: a user profile;
//! - `GET groups?group_key=&limit=&after=`: group profiles, a page at a time, and
//!   `GET groups/{group_key}/{group_id}`: one group profile;
//! - `GET event-counts?days=30`: per event name, how many events happened in the last `days`
//!   days (at most 30: spec §8 leaves older events out of the dictionary view).

use crate::auth::ProjectRead;
use crate::error::{ApiError, ApiPath};
use crate::routes::read_query;
use crate::routes::responses::ReadRefusals;
use crate::store::{self, EventQuery, PropertyFilter};
use crate::AppState;
use axum::extract::{Query, State};
use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_events))
        .routes(routes!(get_profile))
        .routes(routes!(list_groups))
        .routes(routes!(get_group))
        .routes(routes!(event_counts))
}

/// The largest page of events.
pub const MAX_PAGE: usize = 1000;
/// The page size when `limit` is not given.
pub const DEFAULT_PAGE: usize = 100;

/// The `limit` of a paged read: [`DEFAULT_PAGE`] when absent, else a whole number from 1 to
/// [`MAX_PAGE`].
pub fn page_limit(raw: Option<&str>) -> Result<usize, ApiError> {
    let Some(raw) = raw else { return Ok(DEFAULT_PAGE) };
    raw.parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_PAGE).contains(n))
        .ok_or_else(|| ApiError::BadRequest(format!("`limit={raw}` is not allowed; use a whole number from 1 to {MAX_PAGE}")))
}
/// The most bytes of stored records one page of events holds (about; it ends with the event that
/// reaches it): 1,000 events of up to 1 MiB each would be a gigabyte.
pub const MAX_PAGE_BYTES: usize = 8 << 20;
/// Spec §8: events older than 30 days do not appear in the dictionary view.
pub const MAX_COUNT_DAYS: i64 = 30;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    pub event: Option<String>,
    pub distinct_id: Option<String>,
    /// `<property>=<value>`, e.g. `$source=warehouse-import`.
    #[serde(rename = "where")]
    pub where_: Option<String>,
    /// Milliseconds since the epoch, a `YYYY-MM-DD` date (UTC midnight), or a time before now
    /// (`2h`); inclusive.
    pub from: Option<String>,
    /// As `from`; exclusive.
    pub to: Option<String>,
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

/// A page of events: `{"results":[{"event":...,"properties":{...}}],"next_cursor":...,"status":"ok"}`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EventsPage {
    /// Each event as stored, its numbers exactly as sent (an integer past 64 bits too).
    #[schema(value_type = Vec<Object>)]
    pub results: Vec<Box<serde_json::value::RawValue>>,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    pub next_cursor: Option<String>,
    pub status: String,
}

#[utoipa::path(get, path = "/projects/{project_id}/events", tag = "Read back",
    params(("project_id" = i64, Path, description = "the project id"),
        ("event" = Option<String>, Query, description = "only events of this name"),
        ("distinct_id" = Option<String>, Query, description = "only events of this user"),
        ("where" = Option<String>, Query, description = "`<property>=<value>`, e.g. `$source=warehouse-import`; a name holding `=` is written in double quotes: `\"a=b\"=1`"),
        ("from" = Option<String>, Query, description = "inclusive start: milliseconds since epoch, `YYYY-MM-DD`, or a time before now (`10m`, `2h`, `7d`)"),
        ("to" = Option<String>, Query, description = "exclusive end, written like `from`"),
        ("limit" = Option<u32>, Query, description = "page size, 1 to 1000 (default 100); a page also ends at the event that reaches 8 MiB of records"),
        ("cursor" = Option<String>, Query, description = "the `next_cursor` of the previous page")),
    responses(
        (status = 200, description = "a page of stored events, newest first", body = EventsPage),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list_events(
    project: ProjectRead,
    State(state): State<AppState>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<EventsPage>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let limit = page_limit(q.limit.as_deref())?;
    let filter = q.where_.as_deref().map(parse_where).transpose()?;
    let cursor = q.cursor.as_deref().map(parse_cursor).transpose()?;
    let from = q.from.as_deref().map(|t| parse_time("from", t)).transpose()?;
    let to = q.to.as_deref().map(|t| parse_time("to", t)).transpose()?;
    if let (Some(from), Some(to)) = (from, to) {
        if from >= to {
            return Err(ApiError::BadRequest(format!(
                "`from` ({}) is not before `to` ({}), so no event can match: `from` is inclusive and `to` exclusive",
                q.from.as_deref().unwrap_or_default(),
                q.to.as_deref().unwrap_or_default()
            )));
        }
    }
    let query = EventQuery {
        event: q.event,
        distinct_id: q.distinct_id,
        filter,
        from_ms: from,
        to_ms: to,
        limit: limit + 1,
        max_bytes: MAX_PAGE_BYTES,
        cursor,
    };
    let mut rows = state.store.read(move |conn| store::query_events(conn, project_id, &query)).await?;
    // A page ends at `limit` events or at the event that reaches `MAX_PAGE_BYTES`; the next
    // starts after it (past the byte bound the next page may turn out empty).
    let full = rows.iter().map(|r| r.record.len()).sum::<usize>() >= MAX_PAGE_BYTES;
    let next_cursor = if rows.len() > limit || full {
        rows.truncate(limit);
        rows.last().map(|r| format!("{}.{}", r.time_ms, r.rowid))
    } else {
        None
    };
    let results = rows
        .into_iter()
        .map(|r| serde_json::value::RawValue::from_string(r.record).map_err(|e| ApiError::Internal(e.into())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json(EventsPage { results, next_cursor, status: "ok".into() }))
}

fn parse_where(raw: &str) -> Result<PropertyFilter, ApiError> {
    // `name=value`, or `"name"=value` for a name that holds `=` (names never hold `"`).
    let split = match raw.trim_start().strip_prefix('"') {
        Some(rest) => rest.split_once('"').and_then(|(name, after)| Some((name, after.trim_start().strip_prefix('=')?))),
        None => raw.split_once('='),
    };
    let Some((name, value)) = split else {
        return Err(ApiError::BadRequest(format!(
            "`where={raw}` is not `<property>=<value>`; write e.g. `where=$source=warehouse-import`, and put a name that holds `=` in double quotes: `where=\"a=b\"=1`"
        )));
    };
    let name = name.trim();
    if name.is_empty() || name.contains('"') || name.chars().any(char::is_control) {
        return Err(ApiError::BadRequest(format!(
            "`{name}` is not a property name that can be filtered on; use the tracked name (a name cannot hold `\"`)"
        )));
    }
    Ok(PropertyFilter { property: name.to_owned(), value: value.trim().to_owned() })
}

fn parse_cursor(raw: &str) -> Result<(i64, i64), ApiError> {
    raw.split_once('.')
        .and_then(|(t, r)| Some((t.parse().ok()?, r.parse().ok()?)))
        .ok_or_else(|| ApiError::BadRequest(format!("`cursor={raw}` is not a cursor; pass the `next_cursor` of the previous page as is")))
}

/// A `from`/`to` value: milliseconds since the epoch, a `YYYY-MM-DD` date (UTC midnight), or a
/// time before now (`30s`, `10m`, `2h`, `7d`), as the quality routes' `since` reads it.
fn parse_time(name: &str, raw: &str) -> Result<i64, ApiError> {
    datadict_core::quality_gate::parse_since(raw, crate::ingest::now_ms()).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "`{name}={raw}` is not a time; use milliseconds since epoch, a `YYYY-MM-DD` date, or a time before now such as `10m`, `2h` or `7d`"
        ))
    })
}

/// `{"results":{"$distinct_id":...,"$properties":{...}},"status":"ok"}`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProfileResponse {
    pub results: ProfileBody,
    pub status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProfileBody {
    #[serde(rename = "$distinct_id")]
    pub distinct_id: String,
    #[serde(rename = "$properties")]
    #[schema(value_type = Object)]
    pub properties: Value,
}

#[utoipa::path(get, path = "/projects/{project_id}/profiles/{distinct_id}", tag = "Read back",
    params(("project_id" = i64, Path, description = "the project id"), ("distinct_id" = String, Path, description = "the user's identifier")),
    responses(
        (status = 200, description = "the profile", body = ProfileResponse),
        (status = 404, description = "no such profile", body = Object),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn get_profile(
    project: ProjectRead,
    State(state): State<AppState>,
    ApiPath((_, distinct_id)): ApiPath<(String, String)>,
) -> Result<Json<ProfileResponse>, ApiError> {
    let project_id = project.id();
    let id = distinct_id.clone();
    let found = state.store.read(move |conn| store::get_profile(conn, project_id, &id)).await?;
    let Some(properties) = found else {
        return Err(ApiError::NotFound(format!(
            "project {project_id} has no profile `{distinct_id}`; send a `$set` for it to `/engage` first"
        )));
    };
    Ok(Json(ProfileResponse {
        results: ProfileBody { distinct_id, properties: Value::Object(properties) },
        status: "ok".into(),
    }))
}

/// A group profile as the read API serves it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GroupBody {
    #[serde(rename = "$group_key")]
    pub group_key: String,
    #[serde(rename = "$group_id")]
    pub group_id: String,
    #[serde(rename = "$properties")]
    #[schema(value_type = Object)]
    pub properties: Value,
}

impl From<store::StoredGroup> for GroupBody {
    fn from(g: store::StoredGroup) -> Self {
        Self { group_key: g.key, group_id: g.id, properties: Value::Object(g.properties) }
    }
}

/// `{"results":{"$group_key":...,"$group_id":...,"$properties":{...}},"status":"ok"}`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GroupResponse {
    pub results: GroupBody,
    pub status: String,
}

/// A page of group profiles, in `$group_key` then `$group_id` order.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GroupsPage {
    pub results: Vec<GroupBody>,
    /// Pass as `after` to get the next page; `null` on the last page.
    pub next_after: Option<String>,
    pub status: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupsQuery {
    pub group_key: Option<String>,
    pub limit: Option<String>,
    pub after: Option<String>,
}

#[utoipa::path(get, path = "/projects/{project_id}/groups", tag = "Read back",
    params(("project_id" = i64, Path, description = "the project id"),
        ("group_key" = Option<String>, Query, description = "only groups of this `$group_key` (such as `Company`)"),
        ("limit" = Option<u32>, Query, description = "page size, 1 to 1000 (default 100)"),
        ("after" = Option<String>, Query, description = "the `next_after` of the previous page")),
    responses(
        (status = 200, description = "a page of group profiles", body = GroupsPage),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list_groups(
    project: ProjectRead,
    State(state): State<AppState>,
    query: Result<Query<GroupsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<GroupsPage>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let limit = page_limit(q.limit.as_deref())?;
    let after = q.after.as_deref().map(parse_after).transpose()?;
    let key = q.group_key;
    let mut groups = state
        .store
        .read(move |conn| {
            let after = after.as_ref().map(|(k, i)| (k.as_str(), i.as_str()));
            store::list_groups(conn, project_id, key.as_deref(), after, limit + 1)
        })
        .await?;
    let next_after = if groups.len() > limit {
        groups.truncate(limit);
        groups.last().map(|g| group_cursor(&g.key, &g.id))
    } else {
        None
    };
    Ok(Json(GroupsPage { results: groups.into_iter().map(GroupBody::from).collect(), next_after, status: "ok".into() }))
}

/// A page's cursor: the last group's key and id (see [`crate::routes::encode_cursor`]).
fn group_cursor(key: &str, id: &str) -> String {
    crate::routes::encode_cursor(&(key, id))
}

fn parse_after(raw: &str) -> Result<(String, String), ApiError> {
    crate::routes::decode_cursor(raw)
        .ok_or_else(|| ApiError::BadRequest(format!("`after={raw}` is not a cursor; pass the `next_after` of the previous page as is")))
}

#[utoipa::path(get, path = "/projects/{project_id}/groups/{group_key}/{group_id}", tag = "Read back",
    params(("project_id" = i64, Path, description = "the project id"),
        ("group_key" = String, Path, description = "the group's `$group_key`, such as `Company`"),
        ("group_id" = String, Path, description = "the group's `$group_id`")),
    responses(
        (status = 200, description = "the group profile", body = GroupResponse),
        (status = 404, description = "no such group profile", body = Object),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn get_group(
    project: ProjectRead,
    State(state): State<AppState>,
    ApiPath((_, group_key, group_id)): ApiPath<(String, String, String)>,
) -> Result<Json<GroupResponse>, ApiError> {
    let project_id = project.id();
    let (key, id) = (group_key.clone(), group_id.clone());
    let found = state.store.read(move |conn| store::get_group(conn, project_id, &key, &id)).await?;
    let Some(properties) = found else {
        return Err(ApiError::NotFound(format!(
            "project {project_id} has no group profile `{group_key}`/`{group_id}`; send a `$set` for it to `/groups` first"
        )));
    };
    let results = GroupBody { group_key, group_id, properties: Value::Object(properties) };
    Ok(Json(GroupResponse { results, status: "ok".into() }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountsQuery {
    pub days: Option<String>,
}

/// `{"results":[{"event":"Purchase","count":12,"last_seen_ms":...}],"days":30,"status":"ok"}`,
/// by count then name.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EventCounts {
    #[schema(value_type = Vec<Object>)]
    pub results: Vec<store::EventCount>,
    pub days: i64,
    pub status: String,
}

#[utoipa::path(get, path = "/projects/{project_id}/event-counts", tag = "Read back",
    params(("project_id" = i64, Path, description = "the project id"), ("days" = Option<u32>, Query, description = "1 to 30 (default 30)")),
    responses(
        (status = 200, description = "events per name over the last `days` days", body = EventCounts),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn event_counts(
    project: ProjectRead,
    State(state): State<AppState>,
    query: Result<Query<CountsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<EventCounts>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let days = match q.days.as_deref() {
        None => MAX_COUNT_DAYS,
        Some(raw) => raw.parse::<i64>().ok().filter(|d| (1..=MAX_COUNT_DAYS).contains(d)).ok_or_else(|| {
            ApiError::BadRequest(format!("`days={raw}` is not allowed; use a whole number from 1 to {MAX_COUNT_DAYS}"))
        })?,
    };
    let since = crate::ingest::now_ms() - days * 86_400_000;
    let results = state.store.read(move |conn| store::event_counts(conn, project_id, since)).await?;
    Ok(Json(EventCounts { results, days, status: "ok".into() }))
}
