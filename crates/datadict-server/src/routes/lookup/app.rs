//! Lookup tables in the application API, under `/api/app/projects/{project_id}/lookup-tables`
//! (not part of the reference, whose tables are made in the vendor's web interface; without these
//! routes `PUT /lookup-tables/{id}` would have no table to replace):
//!
//! - `POST` `{"name": "..."}` creates an empty table: 201 `{"status":"ok","results":Table}`, 409 if
//!   the project has a table of that name;
//! - `GET` lists the project's tables by name: `{"status":"ok","results":[Table]}`;
//! - `GET /{table_id}?limit=&cursor=` reads a table's rows in the order of their primary keys
//!   (byte order), a page at a time, as the read API pages events (`routes::data`):
//!   `{"results":{...Table, "rows":[[...]]},"next_cursor":"...","status":"ok"}`, where each row is
//!   its CSV record as an array of strings (the key first, in the order of `columns`), and
//!   `next_cursor` (the page's last key with the table's `updated_at`, `null` on the last page) is
//!   passed as `cursor`; a cursor of a table replaced since is a 409, so a reader never mixes the
//!   rows of two uploads;
//! - `DELETE /{table_id}` deletes a table with its rows: `{"status":"ok","results":{"delete_count":1}}`.
//!
//! A Table is `{id, name, columns, row_count, created_at, updated_at}` (times in milliseconds
//! since the epoch; `columns` the header of the last CSV stored). Reads need a role in the project,
//! writes an owner or admin role; errors are the application API's `{"error","status":"error"}`.

use super::{new_table_id, not_found, parse_table_id};
use crate::auth::{ProjectRead, ProjectWrite};
use crate::error::{ApiError, ApiPath, JsonBody};
use crate::ingest::now_ms;
use crate::routes::data::page_limit;
use crate::routes::responses::{ReadRefusals, WriteRefusals};
use crate::routes::read_query;
use crate::store::lookup::{self as store_lookup, Created, LookupTable};
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use datadict_core::ErrorBody;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa_axum::{router::OpenApiRouter, routes};

/// The routes, relative to `/api/app` (where `routes::meta::api` nests them).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(get_one, delete))
}

/// The longest table name, in characters.
pub const MAX_NAME_CHARS: usize = 255;

/// A table as the application API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TableView {
    pub id: String,
    pub name: String,
    /// The header of the last CSV stored; empty until the first.
    pub columns: Vec<String>,
    pub row_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<LookupTable> for TableView {
    fn from(t: LookupTable) -> Self {
        Self { id: t.id, name: t.name, columns: t.columns, row_count: t.row_count, created_at: t.created_at, updated_at: t.updated_at }
    }
}

/// A table with one page of its rows.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TableRows {
    #[serde(flatten)]
    pub table: TableView,
    /// Each row's CSV record, the primary key first.
    pub rows: Vec<Vec<String>>,
}

/// `{"results":{...Table,"rows":[[...]]},"next_cursor":...,"status":"ok"}`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TablePage {
    pub results: TableRows,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    pub next_cursor: Option<String>,
    pub status: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowsQuery {
    pub limit: Option<String>,
    pub cursor: Option<String>,
}

#[utoipa::path(post, operation_id = "create_lookup_table", path = "/projects/{project_id}/lookup-tables", tag = "Lookup Tables",
    params(("project_id" = i64, Path, description = "the project id")),
    request_body(content = Object, description = "`{\"name\": \"...\"}` (no other keys): a name the project's other tables do not have, 1 to 255 characters"),
    responses(
        (status = 201, description = "the empty table was created: `{\"status\":\"ok\",\"results\":Table}`; replace its rows with `PUT /lookup-tables/{id}`", body = Object),
        (status = 400, description = "bad project id, unreadable body, or a bad name", body = Object),
        WriteRefusals,
        (status = 409, description = "the project has a table of that name; the error names its id", body = Object),
        (status = 413, description = "the body is larger than the server reads", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn create(project: ProjectWrite, State(state): State<AppState>, body: Result<JsonBody, ApiError>) -> Result<Response, ApiError> {
    let project_id = project.id();
    let JsonBody(body) = body?;
    let name = parse_name(&body)?;
    let id = new_table_id();
    let created = state.store.call(move |conn| store_lookup::create_table(conn, project_id, &id, &name, now_ms())).await?;
    match created {
        Created::Created(table) => Ok((StatusCode::CREATED, Json(json!({"status": "ok", "results": TableView::from(table)}))).into_response()),
        // 409 is not a variant of the shared `ApiError`; the body is the same error body.
        Created::NameTaken(id) => {
            let body = ErrorBody::new(format!(
                "project {project_id} already has a lookup table of that name (id {id}); replace its rows with `PUT /lookup-tables/{id}`, or choose another name"
            ));
            Ok((StatusCode::CONFLICT, Json(body)).into_response())
        }
    }
}

/// The name of a create body, `{"name": "..."}`, trimmed.
fn parse_name(body: &Value) -> Result<String, ApiError> {
    let Some(object) = body.as_object() else {
        return Err(ApiError::BadRequest("the body must be a JSON object: `{\"name\": \"...\"}`".into()));
    };
    if let Some(other) = object.keys().find(|k| *k != "name") {
        return Err(ApiError::BadRequest(format!("`{other}` is not a field of a new lookup table; send only `{{\"name\": \"...\"}}`")));
    }
    let name = match object.get("name") {
        None => return Err(ApiError::BadRequest("`name` is required: send `{\"name\": \"...\"}`".into())),
        Some(Value::String(s)) => s.trim(),
        Some(_) => return Err(ApiError::BadRequest("`name` must be a string".into())),
    };
    if name.is_empty() {
        return Err(ApiError::BadRequest("`name` is blank; give the table a name".into()));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::BadRequest(format!("`name` is longer than {MAX_NAME_CHARS} characters; shorten it")));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::BadRequest("`name` holds a control character (a line break or tab, say); remove it".into()));
    }
    Ok(name.to_owned())
}

#[utoipa::path(get, operation_id = "list_project_lookup_tables", path = "/projects/{project_id}/lookup-tables", tag = "Lookup Tables",
    params(("project_id" = i64, Path, description = "the project id")),
    responses(
        (status = 200, description = "the project's tables by name, with their row counts: `{\"status\":\"ok\",\"results\":[Table]}`", body = Object),
        (status = 400, description = "the project id is not a positive integer", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list(project: ProjectRead, State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let project_id = project.id();
    let tables = state.store.read(move |conn| store_lookup::list_tables(conn, project_id)).await?;
    let results: Vec<TableView> = tables.into_iter().map(TableView::from).collect();
    Ok(Json(json!({"status": "ok", "results": results})))
}

#[utoipa::path(get, operation_id = "get_lookup_table", path = "/projects/{project_id}/lookup-tables/{table_id}", tag = "Lookup Tables",
    params(("project_id" = i64, Path, description = "the project id"), ("table_id" = String, Path, description = "the table's id (a UUID)"),
        ("limit" = Option<u32>, Query, description = "rows per page, 1 to 1000 (default 100)"),
        ("cursor" = Option<String>, Query, description = "the `next_cursor` of the previous page")),
    responses(
        (status = 200, description = "the table and a page of its rows in the order of their primary keys", body = TablePage),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        (status = 409, description = "the table was replaced since the page `cursor` follows: read it again from the first page", body = Object),
        ReadRefusals,
        (status = 404, description = "the project has no lookup table with this id", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn get_one(
    project: ProjectRead,
    State(state): State<AppState>,
    ApiPath((_, table_id)): ApiPath<(String, String)>,
    query: Result<Query<RowsQuery>, QueryRejection>,
) -> Result<Json<TablePage>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let limit = page_limit(q.limit.as_deref())?;
    let Some(id) = parse_table_id(&table_id) else { return Err(not_found(project_id, &table_id)) };
    let cursor = q.cursor.as_deref().map(parse_cursor).transpose()?;
    let (version, cursor) = cursor.unzip();
    let read_id = id.clone();
    // The table and its page from one snapshot, so that the page belongs to the table described
    // even while a replace commits.
    let (table, rows) = state
        .store
        .read(move |conn| store_lookup::read_page(conn, project_id, &read_id, cursor.as_deref(), limit + 1))
        .await?;
    let table = table.ok_or_else(|| not_found(project_id, &id))?;
    if let Some(version) = version.filter(|v| *v != table.updated_at) {
        return Err(ApiError::Conflict(format!(
            "lookup table `{id}` was replaced after the first page was read (that page is of {}, the table now of {}); read it again from the first page, without `cursor`",
            datadict_core::time::format_datetime(version),
            datadict_core::time::format_datetime(table.updated_at)
        )));
    }
    let mut rows = rows;
    let next_cursor = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|r| cursor_of(table.updated_at, &r.key))
    } else {
        None
    };
    let rows = rows
        .into_iter()
        .map(|r| serde_json::from_str(&r.record).map_err(|e| ApiError::Internal(e.into())))
        .collect::<Result<Vec<Vec<String>>, _>>()?;
    Ok(Json(TablePage { results: TableRows { table: table.into(), rows }, next_cursor, status: "ok".into() }))
}

/// A page's cursor: the table's `updated_at` and the page's last key (see
/// [`crate::routes::encode_cursor`]). The time tells a page of a table replaced since the first
/// page from one of the same table (a replace takes more than a millisecond).
fn cursor_of(updated_at: i64, key: &str) -> String {
    crate::routes::encode_cursor(&(updated_at, key))
}

fn parse_cursor(raw: &str) -> Result<(i64, String), ApiError> {
    crate::routes::decode_cursor(raw)
        .ok_or_else(|| ApiError::BadRequest(format!("`cursor={raw}` is not a cursor of this table; pass the `next_cursor` of the previous page as is")))
}

#[utoipa::path(delete, operation_id = "delete_lookup_table", path = "/projects/{project_id}/lookup-tables/{table_id}", tag = "Lookup Tables",
    params(("project_id" = i64, Path, description = "the project id"), ("table_id" = String, Path, description = "the table's id (a UUID)")),
    responses(
        (status = 200, description = "the table and its rows were deleted: `{\"status\":\"ok\",\"results\":{\"delete_count\":1}}`", body = Object),
        (status = 400, description = "the project id is not a positive integer", body = Object),
        WriteRefusals,
        (status = 404, description = "the project has no lookup table with this id", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn delete(project: ProjectWrite, State(state): State<AppState>, ApiPath((_, table_id)): ApiPath<(String, String)>) -> Result<Json<Value>, ApiError> {
    let project_id = project.id();
    let Some(id) = parse_table_id(&table_id) else { return Err(not_found(project_id, &table_id)) };
    let delete_id = id.clone();
    let deleted = state.store.call(move |conn| store_lookup::delete_table(conn, project_id, &delete_id)).await?;
    if !deleted {
        return Err(not_found(project_id, &id));
    }
    Ok(Json(json!({"status": "ok", "results": {"delete_count": 1}})))
}
