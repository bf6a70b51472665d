//! The migration service (spec §4.3): `POST /migrate/{source_tool}` with the JSON body of §4.3 and
//! no authorization header (the project is the one whose token is `TARGET_TOKEN`), answered 202
//! at once with the job id and its status URL; `GET /migrate/jobs/{job_id}` reports the job.
//! Every problem of the body is answered 400, all listed in one error.
//! Both are registered with their OpenAPI operations (tag "Migration") at the root of the API;
//! `GET /api/app/projects/{project_id}/migrations` (`app_router`, for the project's members)
//! lists a project's jobs, newest first, a page at a time.

use crate::auth::{project_by_token, ProjectRead};
use crate::error::{ApiError, ApiPath, JsonBody};
use crate::jobs::new_id;
use crate::migrate::{self, Secrets};
use crate::ingest::now_ms;
use crate::routes::data::page_limit;
use crate::routes::read_query;
use crate::routes::responses::ReadRefusals;
use crate::store::jobs::{self as store_jobs, Counts, MigrationJob, MigrationPhase};
use crate::store::migration_jobs as store_migration_jobs;
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use datadict_core::{validate_migration_request, validate_source_tool, Date, Issue, IssueCode, MigrationRequest};
use serde_json::{json, Value};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(start)).routes(routes!(status))
}

/// The routes under `/api/app`.
pub fn app_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// The status URL of a job.
pub fn status_url(job_id: &str) -> String {
    format!("/migrate/jobs/{job_id}")
}

#[utoipa::path(post, path = "/migrate/{source_tool}", tag = "Migration",
    params(("source_tool" = String, Path, description = "the tool migrated from: `amplitude`")),
    request_body(content = Object, description = "spec §4.3: `{\"SOURCE_API_KEY\",\"SOURCE_API_SECRET\",\"TARGET_TOKEN\" (the receiving project's token),\"START_DATE\",\"END_DATE\" (`YYYY-MM-DD`),\"REGION\" (optional, `EU` for the EU host),\"DRY_RUN\" (optional: run every check of a real run and report its counts, storing nothing)}`; no Authorization header, the project is the one of `TARGET_TOKEN`"),
    responses(
        (status = 202, description = "the job was queued and runs in the background: `{\"status\":\"ok\",\"results\":{\"job_id\",\"status_url\":\"/migrate/jobs/{job_id}\",\"job\":MigrationJob}}`; the job never holds the credentials", body = Object),
        (status = 400, description = "an unknown source tool, an unreadable body, or an invalid request (missing fields, a bad date range, a `TARGET_TOKEN` of no project); `error` counts every problem and lists the first 100", body = Object),
        (status = 413, description = "the body is larger than the server reads", body = Object)
    )
)]
async fn start(State(state): State<AppState>, ApiPath(tool): ApiPath<String>, body: Result<JsonBody, ApiError>) -> Result<(StatusCode, Json<Value>), ApiError> {
    let JsonBody(body) = body?;
    let today = Date::from_ms(now_ms());
    let check = validate_migration_request(&body, today);
    let mut issues: Vec<Issue> = validate_source_tool(&tool).into_iter().collect();
    issues.extend(check.issues);
    let token = body.get("TARGET_TOKEN").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
    let mut project = None;
    if let Some(token) = token {
        project = project_by_token(&state, &token).await?;
        if project.is_none() {
            issues.push(Issue::new(
                "TARGET_TOKEN",
                IssueCode::InvalidName,
                "`TARGET_TOKEN` is not the token of any project here; copy the receiving project's token from its settings",
            ));
        }
    }
    // The core reports a missing token or an unresolvable range as issues, and an unknown token
    // is one above: without a project and a range there is always an issue to answer with.
    let (Some(project_id), Some(range), true) = (project, check.range, issues.is_empty()) else {
        return Err(ApiError::Invalid(issues));
    };
    let request: MigrationRequest = serde_json::from_value(body).map_err(|e| ApiError::BadRequest(format!("the body cannot be read ({e}); send the fields of spec §4.3")))?;
    let job = MigrationJob {
        job_id: new_id(),
        source_tool: tool,
        project_id,
        phase: MigrationPhase::Queued,
        dry_run: request.dry_run.unwrap_or(false),
        region: request.region.clone(),
        start_date: range.start.to_string(),
        end_date: range.end.to_string(),
        events: Counts::default(),
        profiles: Counts::default(),
        errors: Vec::new(),
        created_at: now_ms(),
        finished_at: None,
    };
    let (s, j) = (state.clone(), job.clone());
    state.store.call(move |conn| store_jobs::save_migration(conn, &j, &crate::jobs::lease(&s))).await?;
    let url = status_url(&job.job_id);
    let answer = json!({"status": "ok", "results": {"job_id": job.job_id, "status_url": url, "job": job}});
    migrate::spawn(state, job, range, Secrets { key: request.source_api_key, secret: request.source_api_secret });
    Ok((StatusCode::ACCEPTED, Json(answer)))
}

#[utoipa::path(get, path = "/migrate/jobs/{job_id}", tag = "Migration",
    params(("job_id" = String, Path, description = "the `job_id` the migration request answered")),
    responses(
        (status = 200, description = "`{\"status\":\"ok\",\"results\":MigrationJob}`; a MigrationJob is `{job_id, source_tool, project_id, phase: queued|exporting|counting|loading|succeeded|failed, dry_run, region, start_date, end_date, events: {counted, loaded, rejected}, profiles: {counted, loaded, rejected}, errors: [string] (the first 100), created_at, finished_at}`. `events.counted` is every event record of the export, `loaded` those stored (in a dry run, those a real run would store; events the dictionary drops count as loaded, as `/import` counts them, and a note in `errors` says how many), `rejected` the others, once each: `counted = loaded + rejected`. Lines that cannot be transformed are also kept in `GET /api/app/projects/{id}/rejected` (route `job`). `$identify` and `$groupidentify` rows are profile updates, not events. `profiles` counts users and groups: a migrated value fills a property the profile lacks and never replaces one it has (`$set_once`)", body = Object),
        (status = 404, description = "there is no job with this id; the API's error body says so", body = Object)
    )
)]
async fn status(State(state): State<AppState>, ApiPath(job_id): ApiPath<String>) -> Result<Json<Value>, ApiError> {
    crate::jobs::settle(&state).await?;
    let id = job_id.clone();
    let job = state
        .store
        .read(move |conn| store_jobs::get_migration(conn, &id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("there is no migration job `{job_id}`; use the `job_id` the migration request answered")))?;
    Ok(Json(json!({"status": "ok", "results": job})))
}

#[derive(Debug, serde::Deserialize)]
pub struct ListQuery {
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

#[utoipa::path(get, path = "/projects/{project_id}/migrations", tag = "Migration",
    params(("project_id" = i64, Path, description = "the project id"),
        ("limit" = Option<u32>, Query, description = "jobs per page, 1 to 1000 (default 100)"),
        ("cursor" = Option<String>, Query, description = "the `next_cursor` of the previous page")),
    responses(
        (status = 200, description = "the project's migration jobs, newest first: `{\"status\":\"ok\",\"results\":[MigrationJob],\"next_cursor\":string|null}` (a MigrationJob as `GET /migrate/jobs/{job_id}` gives it); pass `next_cursor` as `cursor` for the next page, `null` on the last", body = Object),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list(project: ProjectRead, State(state): State<AppState>, query: Result<Query<ListQuery>, QueryRejection>) -> Result<Json<Value>, ApiError> {
    crate::jobs::settle(&state).await?;
    let project_id = project.id();
    let q = read_query(query)?;
    let limit = page_limit(q.limit.as_deref())?;
    let after = match q.cursor.as_deref() {
        None => None,
        Some(c) => Some(
            c.split_once('.')
                .and_then(|(at, id)| Some((at.parse::<i64>().ok()?, id.to_owned())))
                .ok_or_else(|| ApiError::BadRequest(format!("`cursor={c}` is not a cursor of this list; pass the `next_cursor` of the previous page")))?,
        ),
    };
    let mut jobs = state.store.read(move |conn| store_migration_jobs::list(conn, project_id, after, limit + 1)).await?;
    let next_cursor = if jobs.len() > limit {
        jobs.truncate(limit);
        jobs.last().map(|j| format!("{}.{}", j.created_at, j.job_id))
    } else {
        None
    };
    Ok(Json(json!({"status": "ok", "results": jobs, "next_cursor": next_cursor})))
}
