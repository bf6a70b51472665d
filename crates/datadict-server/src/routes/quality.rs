//! The data-quality API (issue 20) under `/api/app/projects/{id}`: what the dictionary check on
//! arrival recorded, for people and for CI jobs.
//!
//! - `GET violations?since=&until=&event=&property=&code=&kind=&limit=&cursor=`: the violation
//!   rows, one per UTC day and key, in (day, kind, event, property, code) order, paginated;
//! - `GET rejected?since=&until=&event=&code=&route=&limit=&cursor=`: the records the rules
//!   refused (the bad store), one row per UTC day, route, event and code, with samples of the
//!   record and the reason;
//! - `GET quality/summary?since=&until=`: totals by code, event, profile schema, property and
//!   day, and good and bad records per event name;
//! - `DELETE quality[?events=true]`: resets a project's violations and rejected records (and, with
//!   the explicit flag, its stored events), so that a CI job starts clean.
//!
//! Violations have a kind: `event` rows name the event; `user` rows come from user profile updates
//! (`/engage`, warehouse `people` syncs, migrations) checked against the dictionary's `profile`
//! schema named `$user`, and name the entity `$user`; `group` rows come from group profile updates
//! (`/groups`) and name their group key. The dictionary has no entity type for group profiles, so
//! the rule chosen here (issue 20) is that the `profile` schema named after a `$group_key`
//! describes every group of that key, as `$user` describes every user.
//!
//! `since` and `until` are a `YYYY-MM-DD` date, milliseconds since the epoch, or a time before
//! now such as `10m`, `2h` or `7d`; rows are per UTC day, so each selects the days it falls in,
//! both ends included.

use crate::auth::{ProjectRead, ProjectWrite};
use crate::error::ApiError;
use crate::ingest::batch::TOKEN_REFUSED;
use crate::ingest::now_ms;
use datadict_core::IssueCode;
use crate::routes::data::page_limit;
use crate::routes::read_query;
use crate::routes::responses::{ReadRefusals, WriteRefusals};
use crate::store::quality::Table;
use crate::store::{self, StoredViolation, ViolationFilter};
use crate::AppState;
use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_violations)).routes(routes!(list_rejected)).routes(routes!(summary)).routes(routes!(reset))
}

/// The most rows a summary reads (a day holds at most `quality_max_keys` keys plus `$others`).
const SUMMARY_ROWS: usize = 100_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViolationsQuery {
    pub since: Option<String>,
    pub until: Option<String>,
    pub event: Option<String>,
    pub property: Option<String>,
    pub code: Option<String>,
    pub kind: Option<String>,
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

/// The UTC day (`YYYY-MM-DD`) of a `since`/`until` value: a date, milliseconds since the epoch,
/// or a duration before `now_ms` (`30s`, `10m`, `2h`, `7d`), read by the core's
/// [`datadict_core::quality_gate::parse_since`] as the npm command line reads it.
pub fn parse_day(name: &str, raw: &str, now_ms: i64) -> Result<String, ApiError> {
    let ms = datadict_core::quality_gate::parse_since(raw, now_ms).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "`{name}={raw}` is not a time; use a `YYYY-MM-DD` date, milliseconds since epoch, or a time before now such as `10m`, `2h` or `7d`"
        ))
    })?;
    let day = datadict_core::time::format_date(ms);
    // Beyond the years 1 to 9999, `format_date` says so in words, which no day matches.
    if !day.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(ApiError::BadRequest(format!("`{name}={raw}` is {day}; use a time from 0001-01-01 to 9999-12-31")));
    }
    Ok(day)
}

fn filter(since: Option<&str>, until: Option<&str>) -> Result<ViolationFilter, ApiError> {
    let now = now_ms();
    let since_day = since.map(|s| parse_day("since", s, now)).transpose()?;
    let until_day = until.map(|u| parse_day("until", u, now)).transpose()?;
    if let (Some(since_day), Some(until_day)) = (&since_day, &until_day) {
        // Days are `YYYY-MM-DD`, so they order as text.
        if since_day > until_day {
            return Err(ApiError::BadRequest(format!(
                "`since={}` ({since_day}) is after `until={}` ({until_day}), so nothing can match; swap them",
                since.unwrap_or_default(),
                until.unwrap_or_default()
            )));
        }
    }
    Ok(ViolationFilter { since_day, until_day, ..ViolationFilter::default() })
}

/// `value` when it is one of `allowed` (or absent), else the 400 naming them: an unknown value
/// would select nothing, and a CI gate reading an empty listing would pass on a typo.
fn one_of(name: &str, value: Option<String>, allowed: &[&str]) -> Result<Option<String>, ApiError> {
    match value {
        Some(v) if !allowed.contains(&v.as_str()) => Err(ApiError::BadRequest(format!(
            "`{name}={v}` is not a {name} of this listing; use one of `{}`",
            allowed.join("`, `")
        ))),
        v => Ok(v),
    }
}

/// The codes a violation or a rejected record may have: the core's, and the server's
/// `token_refused`.
fn codes() -> Vec<&'static str> {
    let mut codes: Vec<&str> = IssueCode::ALL.iter().map(|c| c.as_str()).collect();
    codes.push(TOKEN_REFUSED);
    codes
}

/// The kinds of records violations are kept for.
const KINDS: [&str; 3] = ["event", "user", "group"];

/// The routes rejected records are kept for (`job`: warehouse syncs and migrations).
const ROUTES: [&str; 5] = ["import", "track", "engage", "groups", "job"];

fn rejected_result(v: StoredViolation) -> Value {
    let r = v.row;
    json!({
        "day": v.day, "route": r.kind, "event": r.entity, "code": r.code, "message": r.message,
        "count": r.count, "first_seen": r.first_seen_ms, "last_seen": r.last_seen_ms, "samples": r.samples,
    })
}

/// The key a `cursor` names: the last row's `[day, kind, entity, property, code]` (see
/// [`cursor_of`]).
fn after(cursor: Option<&str>) -> Result<Option<[String; 5]>, ApiError> {
    let Some(c) = cursor else { return Ok(None) };
    crate::routes::decode_cursor(c)
        .map(Some)
        .ok_or_else(|| ApiError::BadRequest(format!("`cursor={c}` is not a cursor of this listing; pass the `next_cursor` of the previous page as is")))
}

/// The cursor after `v`.
fn cursor_of(v: &StoredViolation) -> String {
    crate::routes::encode_cursor(&[&v.day, &v.row.kind, &v.row.entity, &v.row.property, &v.row.code])
}

/// A page of `table`'s rows as the API's body.
async fn page(state: &AppState, table: Table, project_id: i64, f: ViolationFilter, limit: usize) -> Result<Json<Value>, ApiError> {
    state.store.settle_quality().await?;
    let mut rows = state.store.read(move |conn| store::quality::list_violations(conn, table, project_id, &f, limit + 1)).await?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next_cursor = rows.last().filter(|_| more).map(cursor_of);
    let render = if table == Table::Violations { result } else { rejected_result };
    Ok(Json(json!({"status": "ok", "results": rows.into_iter().map(render).collect::<Vec<_>>(), "next_cursor": next_cursor})))
}

fn result(v: StoredViolation) -> Value {
    let r = v.row;
    json!({
        "day": v.day, "kind": r.kind, "event": r.entity, "property": r.property, "code": r.code, "message": r.message,
        "count": r.count, "first_seen": r.first_seen_ms, "last_seen": r.last_seen_ms, "types": r.types, "samples": r.samples,
    })
}

#[utoipa::path(get, path = "/projects/{project_id}/violations", tag = "Data Quality",
    params(("project_id" = i64, Path, description = "the project id"),
        ("since" = Option<String>, Query, description = "first day: `YYYY-MM-DD`, milliseconds since epoch, or before now (`10m`, `2h`, `7d`)"),
        ("until" = Option<String>, Query, description = "last day, inclusive, written like `since`"),
        ("event" = Option<String>, Query, description = "only this event (or profile kind's entity)"),
        ("property" = Option<String>, Query, description = "only this property (empty: the whole record)"),
        ("code" = Option<String>, Query, description = "only this issue code (`no_schema`, `unknown_property`, `type_mismatch`, ...)"),
        ("kind" = Option<String>, Query, description = "only `event`, `user` (user profile update) or `group` (group profile update, checked against the `profile` schema named by its group key) records"),
        ("limit" = Option<u32>, Query, description = "page size, 1 to 1000 (default 100)"),
        ("cursor" = Option<String>, Query, description = "the `next_cursor` of the previous page")),
    responses(
        (status = 200, description = "`{\"status\":\"ok\",\"results\":[{\"day\",\"kind\",\"event\",\"property\",\"code\",\"message\",\"count\",\"first_seen\",\"last_seen\",\"types\",\"samples\"}],\"next_cursor\":null}`", body = Object),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list_violations(
    project: ProjectRead,
    State(state): State<AppState>,
    query: Result<Query<ViolationsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let limit = page_limit(q.limit.as_deref())?;
    let after = after(q.cursor.as_deref())?;
    let (code, kind) = (one_of("code", q.code, &codes())?, one_of("kind", q.kind, &KINDS)?);
    let f = ViolationFilter { event: q.event, property: q.property, code, kind, after, ..filter(q.since.as_deref(), q.until.as_deref())? };
    page(&state, Table::Violations, project_id, f, limit).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectedQuery {
    pub since: Option<String>,
    pub until: Option<String>,
    pub event: Option<String>,
    pub code: Option<String>,
    pub route: Option<String>,
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

#[utoipa::path(get, path = "/projects/{project_id}/rejected", tag = "Data Quality",
    params(("project_id" = i64, Path, description = "the project id"),
        ("since" = Option<String>, Query, description = "first day: `YYYY-MM-DD`, milliseconds since epoch, or before now (`10m`, `2h`, `7d`)"),
        ("until" = Option<String>, Query, description = "last day, inclusive, written like `since`"),
        ("event" = Option<String>, Query, description = "only records of this event name (empty: records without one)"),
        ("code" = Option<String>, Query, description = "only this issue code (the core's, or `token_refused`)"),
        ("route" = Option<String>, Query, description = "only records of `import`, `track`, `engage`, `groups` or `job` (warehouse syncs and migrations)"),
        ("limit" = Option<u32>, Query, description = "page size, 1 to 1000 (default 100)"),
        ("cursor" = Option<String>, Query, description = "the `next_cursor` of the previous page")),
    responses(
        (status = 200, description = "`{\"status\":\"ok\",\"results\":[{\"day\",\"route\",\"event\",\"code\",\"message\",\"count\",\"first_seen\",\"last_seen\",\"samples\":[{\"record\",\"message\"}]}],\"next_cursor\":null}`", body = Object),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list_rejected(
    project: ProjectRead,
    State(state): State<AppState>,
    query: Result<Query<RejectedQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let limit = page_limit(q.limit.as_deref())?;
    let after = after(q.cursor.as_deref())?;
    let (code, route) = (one_of("code", q.code, &codes())?, one_of("route", q.route, &ROUTES)?);
    let f = ViolationFilter { event: q.event, code, kind: route, after, ..filter(q.since.as_deref(), q.until.as_deref())? };
    page(&state, Table::Rejected, project_id, f, limit).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryQuery {
    pub since: Option<String>,
    pub until: Option<String>,
}

fn add(map: &mut BTreeMap<String, i64>, key: &str, n: i64) {
    *map.entry(key.to_owned()).or_default() += n;
}

#[utoipa::path(get, path = "/projects/{project_id}/quality/summary", tag = "Data Quality",
    params(("project_id" = i64, Path, description = "the project id"),
        ("since" = Option<String>, Query, description = "first day: `YYYY-MM-DD`, milliseconds since epoch, or before now (`10m`, `2h`, `7d`)"),
        ("until" = Option<String>, Query, description = "last day, inclusive, written like `since`")),
    responses(
        (status = 200, description = "`{\"status\":\"ok\",\"results\":{\"violations\":{\"total\",\"by_code\",\"by_event\",\"by_profile\",\"by_property\",\"per_day\":[{\"day\",\"count\"}]},\"rejected\":{\"total\",\"by_code\",\"by_event\",\"per_day\"},\"events\":{\"good\":{name:n},\"bad\":{name:n}}}}`", body = Object),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn summary(
    project: ProjectRead,
    State(state): State<AppState>,
    query: Result<Query<SummaryQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let f = filter(q.since.as_deref(), q.until.as_deref())?;
    state.store.settle_quality().await?;
    let (rows, rejected) = state
        .store
        .read(move |conn| {
            let rows = store::quality::list_violations(conn, Table::Violations, project_id, &f, SUMMARY_ROWS)?;
            let rejected = store::quality::list_violations(conn, Table::Rejected, project_id, &f, SUMMARY_ROWS)?;
            Ok((rows, (rejected, store::quality::list_violations(conn, Table::EventCounts, project_id, &f, SUMMARY_ROWS)?)))
        })
        .await?;
    let (rejected, counts) = rejected;
    let (mut good, mut bad) = (BTreeMap::new(), BTreeMap::new());
    for v in &counts {
        add(if v.row.kind == store::quality::GOOD { &mut good } else { &mut bad }, &v.row.entity, v.row.count);
    }
    let (mut by_code, mut by_event, mut by_profile, mut by_property, mut per_day) =
        (BTreeMap::new(), BTreeMap::new(), BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    let mut total = 0;
    for v in &rows {
        let n = v.row.count;
        total += n;
        add(&mut by_code, &v.row.code, n);
        // An event and a `profile` schema may share a name (an event `company_id` beside the group
        // key `company_id`), so profile updates are counted apart, under the schema they were
        // checked against: `$user`, or the group key.
        add(if v.row.kind == "event" { &mut by_event } else { &mut by_profile }, &v.row.entity, n);
        if !v.row.property.is_empty() {
            add(&mut by_property, &v.row.property, n);
        }
        add(&mut per_day, &v.day, n);
    }
    let days = |per_day: BTreeMap<String, i64>| per_day.into_iter().map(|(day, count)| json!({"day": day, "count": count})).collect::<Vec<_>>();
    let (mut r_code, mut r_event, mut r_day) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    let mut r_total = 0;
    for v in &rejected {
        let n = v.row.count;
        r_total += n;
        add(&mut r_code, &v.row.code, n);
        add(&mut r_event, &v.row.entity, n);
        add(&mut r_day, &v.day, n);
    }
    Ok(Json(json!({"status": "ok", "results": {
        "violations": {"total": total, "by_code": by_code, "by_event": by_event, "by_profile": by_profile, "by_property": by_property, "per_day": days(per_day)},
        "rejected": {"total": r_total, "by_code": r_code, "by_event": r_event, "per_day": days(r_day)},
        "events": {"good": good, "bad": bad},
    }})))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetQuery {
    pub events: Option<String>,
}

#[utoipa::path(delete, path = "/projects/{project_id}/quality", tag = "Data Quality",
    params(("project_id" = i64, Path, description = "the project id"),
        ("events" = Option<bool>, Query, description = "`true` also deletes the project's stored events")),
    responses(
        (status = 200, description = "`{\"status\":\"ok\",\"results\":{\"violations_deleted\":N,\"rejected_deleted\":N,\"events_deleted\":N}}`", body = Object),
        (status = 400, description = "`events` is not `true` or `false`", body = Object),
        WriteRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn reset(
    project: ProjectWrite,
    State(state): State<AppState>,
    query: Result<Query<ResetQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let events = match q.events.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(ApiError::BadRequest(format!("`events={other}` is not allowed; use `events=true` to delete the stored events too"))),
    };
    // The findings of requests answered before the reset are deleted with the rest.
    let reset = state.store.reset_quality(project_id, events).await?;
    let mut results = Map::new();
    results.insert("violations_deleted".into(), reset.violations.into());
    results.insert("rejected_deleted".into(), reset.rejected.into());
    results.insert("events_deleted".into(), reset.events.into());
    Ok(Json(json!({"status": "ok", "results": results})))
}
