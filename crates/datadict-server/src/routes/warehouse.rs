//! Warehouse imports of a project (spec §4.2, FACTS.md "Warehouse imports"), under
//! `/api/app/projects/{project_id}/warehouse-sources/imports`:
//!
//! - `POST` (create), `GET` (list, each with its last run), `GET /{import_id}`, `DELETE /{import_id}`
//!   (with `{"delete_data": true}` the import's events too; 409 while a run of it has not ended);
//! - `PUT /{import_id}/manual-sync`, body `{}` → `{"status":"ok","results":{"run_id":"..."}}` at
//!   once, the sync running in the background; 429 with `Retry-After` past the hourly limit, 409
//!   while a run of the import has not ended;
//! - `GET /{import_id}/runs` (history, newest first) and `GET /{import_id}/runs/{run_id}`.
//!
//! Reads need a role in the project, writes and syncs an owner or admin role (401/403 as
//! elsewhere); an import of another project is a 404. The routes are registered with their OpenAPI
//! operations (tag "Warehouse Imports"), nested under `/api/app` by `routes::meta::api`.

use crate::auth::{ProjectRead, ProjectWrite};
use crate::error::{ApiError, ApiPath, JsonBody};
use crate::jobs::new_id;
use crate::ingest::now_ms;
use crate::routes::responses::{ReadRefusals, WriteRefusals};
use crate::store::jobs::{self as store_jobs, Deleted, ImportRow, Queued, Run};
use crate::warehouse::sync::{self, SyncJob};
use crate::warehouse::{self, Mapping, NewImport, Source};
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use datadict_core::{ErrorBody, ManualSyncResponse};
use serde_json::{json, Value};
use utoipa_axum::{router::OpenApiRouter, routes};

/// The routes, relative to `/api/app` (where `routes::meta::api` nests them).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, delete))
        .routes(routes!(manual_sync))
        .routes(routes!(runs))
        .routes(routes!(run_one))
}

/// How many runs the history shows.
pub const HISTORY: usize = 50;

fn parse_import_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        ApiError::NotFound(format!("`{raw}` is not an import id; list the project's imports to find its id"))
    })
}

fn not_found(project_id: i64, import_id: i64) -> ApiError {
    ApiError::NotFound(format!("project {project_id} has no warehouse import {import_id}; list the project's imports to find its id"))
}

/// An import as the API shows it: its source redacted (see [`Source::redacted`]).
fn view(row: &ImportRow, last_run: Option<&Run>) -> Result<Value, ApiError> {
    let source: Source = serde_json::from_str(&row.source).map_err(|e| ApiError::Internal(e.into()))?;
    let mapping: Mapping = serde_json::from_str(&row.mapping).map_err(|e| ApiError::Internal(e.into()))?;
    Ok(json!({
        "id": row.id,
        "project_id": row.project_id,
        "name": row.name,
        "kind": row.kind,
        "source": source.redacted(),
        "mapping": mapping,
        "sync_frequency": "api",
        "created_at": row.created_at,
        "last_run": last_run,
    }))
}

async fn load_import(state: &AppState, project_id: i64, import_id: i64) -> Result<ImportRow, ApiError> {
    state
        .store
        .read(move |conn| store_jobs::get_import(conn, project_id, import_id))
        .await?
        .ok_or_else(|| not_found(project_id, import_id))
}

#[utoipa::path(post, operation_id = "create_warehouse_import", path = "/projects/{project_id}/warehouse-sources/imports", tag = "Warehouse Imports",
    params(("project_id" = i64, Path, description = "the project id")),
    request_body(content = NewImport, description = "the import: `name`, `kind` (`event_sync` or `people`), `source` (a file on the server or a PostgreSQL table; a password only by the name of a server environment variable starting with `DATADICT_WAREHOUSE_`) and the column `mapping`; no other keys"),
    responses(
        (status = 201, description = "the import was created: `{\"status\":\"ok\",\"results\":Import}`, an Import as GET shows it (source redacted, `last_run` null)", body = Object),
        (status = 400, description = "bad project id, unreadable body, or an invalid import; `error` counts every problem and lists the first 100 (unknown fields, a missing file, a column the source lacks)", body = Object),
        WriteRefusals,
        (status = 413, description = "the body is larger than the server reads", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn create(project: ProjectWrite, State(state): State<AppState>, body: Result<JsonBody, ApiError>) -> Result<(StatusCode, Json<Value>), ApiError> {
    let project_id = project.id();
    let JsonBody(body) = body?;
    // Validation opens the source file to learn its columns: off the reactor.
    let root = state.config.jobs.warehouse_file_root.clone();
    let (new, issues) = tokio::task::spawn_blocking(move || warehouse::validate(&body, root.as_deref())).await.map_err(|e| ApiError::Internal(e.into()))?;
    let Some(new) = new else { return Err(ApiError::Invalid(issues)) };
    let mut row = ImportRow {
        id: 0,
        project_id,
        name: new.name,
        kind: new.kind,
        source: serde_json::to_string(&new.source).map_err(|e| ApiError::Internal(e.into()))?,
        mapping: serde_json::to_string(&new.mapping).map_err(|e| ApiError::Internal(e.into()))?,
        created_at: now_ms(),
    };
    let r = row.clone();
    row.id = state.store.call(move |conn| store_jobs::insert_import(conn, &r)).await?;
    Ok((StatusCode::CREATED, Json(json!({"status": "ok", "results": view(&row, None)?}))))
}

#[utoipa::path(get, operation_id = "list_warehouse_imports", path = "/projects/{project_id}/warehouse-sources/imports", tag = "Warehouse Imports",
    params(("project_id" = i64, Path, description = "the project id")),
    responses(
        (status = 200, description = "the project's imports, each with its last run: `{\"status\":\"ok\",\"results\":[Import]}`; an Import is `{id, project_id, name, kind, source (redacted: the file name without its folders; for PostgreSQL, `password` is `referenced` or `none`), mapping, sync_frequency: \"api\", created_at, last_run: Run|null}`", body = Object),
        (status = 400, description = "the project id is not a positive integer", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list(project: ProjectRead, State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    crate::jobs::settle(&state).await?;
    let project_id = project.id();
    let rows = state
        .store
        .read(move |conn| {
            let imports = store_jobs::list_imports(conn, project_id)?;
            let mut out = Vec::with_capacity(imports.len());
            for i in imports {
                let last = store_jobs::list_runs(conn, i.id, 1)?.into_iter().next();
                out.push((i, last));
            }
            Ok(out)
        })
        .await?;
    let results = rows.iter().map(|(i, r)| view(i, r.as_ref())).collect::<Result<Vec<_>, _>>()?;
    Ok(Json(json!({"status": "ok", "results": results})))
}

#[utoipa::path(get, operation_id = "get_warehouse_import", path = "/projects/{project_id}/warehouse-sources/imports/{import_id}", tag = "Warehouse Imports",
    params(("project_id" = i64, Path, description = "the project id"), ("import_id" = i64, Path, description = "the import id")),
    responses(
        (status = 200, description = "`{\"status\":\"ok\",\"results\":Import}`, with its last run", body = Object),
        (status = 400, description = "the project id is not a positive integer", body = Object),
        ReadRefusals,
        (status = 404, description = "the project has no such import (or the id is not an import id)", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn get_one(project: ProjectRead, State(state): State<AppState>, ApiPath((_, import_id)): ApiPath<(String, String)>) -> Result<Json<Value>, ApiError> {
    crate::jobs::settle(&state).await?;
    let project_id = project.id();
    let import_id = parse_import_id(&import_id)?;
    let row = load_import(&state, project_id, import_id).await?;
    let last = state.store.read(move |conn| store_jobs::list_runs(conn, import_id, 1)).await?;
    Ok(Json(json!({"status": "ok", "results": view(&row, last.first())?})))
}

#[utoipa::path(delete, operation_id = "delete_warehouse_import", path = "/projects/{project_id}/warehouse-sources/imports/{import_id}", tag = "Warehouse Imports",
    params(("project_id" = i64, Path, description = "the project id"), ("import_id" = i64, Path, description = "the import id")),
    request_body(content = Object, description = "optional: `{\"delete_data\": true}` also deletes the events the import loaded (those whose `$warehouse_import_id` is its id); `{}`, `{\"delete_data\": false}` or no body keep them; any other key is refused"),
    responses(
        (status = 200, description = "the import and its run history were deleted: `{\"status\":\"ok\",\"results\":{\"delete_count\":1,\"events_deleted\":N}}`, N the events deleted with `delete_data` (0 without)", body = Object),
        (status = 400, description = "the project id is not a positive integer, or the body is not `{}` or `{\"delete_data\": true|false}`", body = Object),
        WriteRefusals,
        (status = 404, description = "the project has no such import (or the id is not an import id)", body = Object),
        (status = 409, description = "a run of this import has not ended yet; the error body names it: wait for it to end, then delete", body = Object),
        (status = 413, description = "the body is larger than the server reads", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn delete(
    project: ProjectWrite,
    State(state): State<AppState>,
    ApiPath((_, import_id)): ApiPath<(String, String)>,
    body: Result<JsonBody, ApiError>,
) -> Result<Response, ApiError> {
    let project_id = project.id();
    let import_id = parse_import_id(&import_id)?;
    let delete_data = delete_data(body)?;
    let deleted = state.store.call(move |conn| store_jobs::delete_import(conn, project_id, import_id, now_ms(), delete_data)).await?;
    match deleted {
        Deleted::Deleted { events } => Ok(Json(json!({"status": "ok", "results": {"delete_count": 1, "events_deleted": events}})).into_response()),
        Deleted::NotFound => Err(not_found(project_id, import_id)),
        Deleted::Busy(run) => Ok(conflict(format!(
            "run {run} of import {import_id} is still running; wait for it to end (follow it in the run history), then delete the import"
        ))),
    }
}

/// The `delete_data` of a delete's body (the reference's): `{}`, `{"delete_data": bool}` or no body.
fn delete_data(body: Result<JsonBody, ApiError>) -> Result<bool, ApiError> {
    let m = match body {
        Ok(JsonBody(Value::Object(m))) => m,
        Err(ApiError::BadRequest(m)) if m.contains("is empty") => return Ok(false),
        Ok(_) => return Err(ApiError::BadRequest("the body of a delete must be a JSON object: `{}` or `{\"delete_data\": true}`".into())),
        Err(e) => return Err(e),
    };
    if let Some(key) = m.keys().find(|k| *k != "delete_data") {
        return Err(ApiError::BadRequest(format!("`{key}` is not a field of a delete; the only field is `delete_data` (true also deletes the events the import loaded)")));
    }
    match m.get("delete_data") {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(ApiError::BadRequest(format!("`delete_data` must be true or false, not {other}"))),
    }
}

/// A 409 with the API's error body (409 is not a variant of the shared `ApiError`).
fn conflict(message: String) -> Response {
    (StatusCode::CONFLICT, Json(ErrorBody::new(message))).into_response()
}

#[utoipa::path(put, path = "/projects/{project_id}/warehouse-sources/imports/{import_id}/manual-sync", tag = "Warehouse Imports",
    params(("project_id" = i64, Path, description = "the project id"), ("import_id" = i64, Path, description = "the import id")),
    request_body(content = Object, description = "`{}` (an absent body is accepted too)"),
    responses(
        (status = 200, description = "the run was queued and runs in the background: `{\"status\":\"ok\",\"results\":{\"run_id\":\"...\"}}`; follow it in the run history", body = Object),
        (status = 400, description = "the project id is not a positive integer, or the body is not `{}`", body = Object),
        WriteRefusals,
        (status = 404, description = "the project has no such import (or the id is not an import id)", body = Object),
        (status = 409, description = "a run of this import has not ended yet; the API's error body names it", body = Object),
        (status = 413, description = "the body is larger than the server reads", body = Object),
        (status = 429, description = "the import was synced manually as often as allowed in the last hour; see `Retry-After`", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn manual_sync(
    project: ProjectWrite,
    State(state): State<AppState>,
    ApiPath((_, import_id)): ApiPath<(String, String)>,
    body: Result<JsonBody, ApiError>,
) -> Result<Response, ApiError> {
    let project_id = project.id();
    let import_id = parse_import_id(&import_id)?;
    let row = load_import(&state, project_id, import_id).await?;
    // FACTS.md: the body is `{}`; an absent body is accepted too, anything else is refused.
    match body {
        Ok(JsonBody(Value::Object(m))) if m.is_empty() => {}
        Err(ApiError::BadRequest(m)) if m.contains("is empty") => {}
        Ok(_) => return Err(ApiError::BadRequest("the body of a manual sync must be `{}`".into())),
        Err(e) => return Err(e),
    }
    let run_id = new_id();
    let per_hour = state.config.jobs.manual_syncs_per_hour;
    let id = run_id.clone();
    let s = state.clone();
    let queued = state
        .store
        .call(move |conn| store_jobs::queue_manual_run(conn, import_id, &id, per_hour, now_ms(), &crate::jobs::lease(&s)))
        .await?;
    match queued {
        Queued::Queued => {}
        Queued::Limited(wait_ms) => {
            return Err(ApiError::rate_limited(
                format!("import {import_id} was synced manually {per_hour} times in the last hour; wait for the time in `Retry-After`, then sync again"),
                std::time::Duration::from_millis(wait_ms as u64),
            ))
        }
        Queued::Busy(running) => {
            return Ok(conflict(format!("run {running} of import {import_id} has not ended yet; follow it in the run history and sync again when it has")));
        }
    }
    let job = SyncJob {
        project_id,
        import_id,
        kind: row.kind,
        source: serde_json::from_str(&row.source).map_err(|e| ApiError::Internal(e.into()))?,
        mapping: serde_json::from_str(&row.mapping).map_err(|e| ApiError::Internal(e.into()))?,
        run_id: run_id.clone(),
    };
    sync::spawn(state, job);
    Ok(Json(ManualSyncResponse::ok(run_id)).into_response())
}

#[utoipa::path(get, path = "/projects/{project_id}/warehouse-sources/imports/{import_id}/runs", tag = "Warehouse Imports",
    params(("project_id" = i64, Path, description = "the project id"), ("import_id" = i64, Path, description = "the import id")),
    responses(
        (status = 200, description = "the run history, newest first (at most 50): `{\"status\":\"ok\",\"results\":[Run]}`; a Run is `{run_id, import_id, trigger: \"manual\", status: queued|running|succeeded|failed, rows_read, events_loaded, rows_rejected, rejections: [{row, reason}] (the first 100, in row order; `row` is the line a row starts on in a file), error, created_at, started_at, finished_at}`; a run fails when the source cannot be read, no longer has a mapped column, or none of the rows read was loaded", body = Object),
        (status = 400, description = "the project id is not a positive integer", body = Object),
        ReadRefusals,
        (status = 404, description = "the project has no such import (or the id is not an import id)", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn runs(project: ProjectRead, State(state): State<AppState>, ApiPath((_, import_id)): ApiPath<(String, String)>) -> Result<Json<Value>, ApiError> {
    crate::jobs::settle(&state).await?;
    let project_id = project.id();
    let import_id = parse_import_id(&import_id)?;
    load_import(&state, project_id, import_id).await?;
    let runs = state.store.read(move |conn| store_jobs::list_runs(conn, import_id, HISTORY)).await?;
    Ok(Json(json!({"status": "ok", "results": runs})))
}

#[utoipa::path(get, path = "/projects/{project_id}/warehouse-sources/imports/{import_id}/runs/{run_id}", tag = "Warehouse Imports",
    params(("project_id" = i64, Path, description = "the project id"), ("import_id" = i64, Path, description = "the import id"), ("run_id" = String, Path, description = "the `run_id` a manual sync answered")),
    responses(
        (status = 200, description = "`{\"status\":\"ok\",\"results\":Run}`", body = Object),
        (status = 400, description = "the project id is not a positive integer", body = Object),
        ReadRefusals,
        (status = 404, description = "the project has no such import, or the import no such run", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn run_one(project: ProjectRead, State(state): State<AppState>, ApiPath((_, import_id, run_id)): ApiPath<(String, String, String)>) -> Result<Json<Value>, ApiError> {
    crate::jobs::settle(&state).await?;
    let project_id = project.id();
    let import_id = parse_import_id(&import_id)?;
    load_import(&state, project_id, import_id).await?;
    let run = state
        .store
        .read(move |conn| store_jobs::get_run(conn, import_id, &run_id))
        .await?
        .ok_or_else(|| ApiError::NotFound("no such run of this import; list the runs to find its id".into()))?;
    Ok(Json(json!({"status": "ok", "results": run})))
}
