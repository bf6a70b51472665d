//! Lookup tables (the ingestion reference's "Lookup Tables"): CSV tables keyed by their first
//! column, stored per project, that enrich events and profiles by the value of a property.
//!
//! The reference's two routes, with its bodies (`{"code","status",...}` like `/import`):
//! - `GET /lookup-tables?project_id=N`: `{"code":200,"status":"OK","results":[{"id","name"}]}`;
//! - `PUT /lookup-tables/{id}?project_id=N`, a `text/csv` body (gzipped with `Content-Encoding:
//!   gzip` if wanted), replaces every row of the table: 200 `{"code":200,"status":"OK"}`.
//!
//! Its answers: 400 `{"code":400,"error","status":"Bad Request","failed_records":[{"index",
//! "message"}]}` for a CSV that breaks a rule of [`check`] (a blank or repeated primary key, a row
//! of the wrong width, an unclosed quote, a header without names...), where `index` is the record's
//! 0-based position in the CSV (the header is 0) and `message` names its line; 401 without valid
//! service-account credentials, 403 for a role that may not (a consumer replacing), 404 for a table
//! the project does not have, 413 over `Config::lookup_table_max_bytes` (uncompressed), 415 for a
//! `Content-Type` other than `text/csv`, 429 past the project's ingestion rate limit (the body's
//! bytes are charged to the same budget as `/import`'s).
//!
//! Choices where the reference is silent:
//! - A CSV with any failed record stores nothing: the old rows stay until a whole valid table
//!   replaces them. The reference's example lists failures per record, and a table half replaced
//!   would be worse than the old one, so every record is checked and the request refused whole.
//! - Only a service account is accepted, never the project token: the token ships inside
//!   applications, and a replace discards the whole table.
//! - The reference creates tables in the vendor's web interface; here the application API does
//!   (`routes::lookup::app`, under `/api/app/projects/{project_id}/lookup-tables`), which also reads
//!   a table's rows back page by page and deletes tables.
//! - The size limit is 10 MiB by default (`--lookup-table-max-bytes`), the limit of one `/import`
//!   body: the whole table is read and checked in memory before it replaces the stored one, so the
//!   limit is also what one upload may make the server hold.

pub mod app;
pub mod check;

use crate::auth::{authorize, basic_credentials, Access};
use crate::error::{ApiError, ApiPath};
use crate::ingest::now_ms;
use crate::routes::ingest::{charge, read_raw, IngestError, RawBody};
use crate::routes::parse_project_id;
use crate::store::lookup as store_lookup;
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use check::{check_csv, FailedRow, Problems};
use datadict_core::api::import_status::{self, INVALID_CREDENTIALS, VALIDATION_FAILED};
use serde::Serialize;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The routes of the ingestion reference, at the root (where `routes::meta::api` merges them).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(replace))
}

/// The default of `Config::lookup_table_max_bytes`: 10 MiB, as one `/import` body (see the module
/// documentation).
pub const DEFAULT_MAX_BYTES: usize = 10 * datadict_core::limits::MB;

/// A table as the reference lists it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LookupTableEntry {
    /// A UUID.
    pub id: String,
    pub name: String,
}

/// `{"code":200,"status":"OK","results":[{"id","name"}]}`
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LookupTableList {
    pub code: u16,
    pub status: String,
    pub results: Vec<LookupTableEntry>,
}

/// `{"code":200,"status":"OK"}`
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LookupTableReceived {
    pub code: u16,
    pub status: String,
}

/// `{"code":400,"error":"...","status":"Bad Request","failed_records":[{"index":N,"message":"..."}]}`
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LookupTableInvalid {
    pub code: u16,
    pub error: String,
    pub status: String,
    pub failed_records: Vec<FailedRow>,
}

/// The query string's pairs in order: a map would keep the last of a repeated `project_id`.
type RawQuery = Result<Query<Vec<(String, String)>>, QueryRejection>;

#[utoipa::path(get, operation_id = "list_lookup_tables", path = "/lookup-tables", tag = "Lookup Tables",
    params(("project_id" = i64, Query, description = "the project whose tables are listed")),
    responses(
        (status = 200, description = "the project's lookup tables, by name", body = LookupTableList),
        (status = 400, description = "`project_id` is missing or not a project id: `{\"code\":400,\"error\":\"...\",\"status\":\"Bad Request\"}`", body = Object),
        (status = 401, description = "`{\"code\":401,\"error\":\"Invalid credentials\",\"status\":\"Unauthorized\"}`", body = Object),
        (status = 403, description = "valid credentials without a role in the project", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn list(State(state): State<AppState>, headers: HeaderMap, query: RawQuery) -> Result<Json<LookupTableList>, IngestError> {
    let project_id = authorize_lookup(&state, &headers, &query, Access::Read).await?;
    let tables = state.store.read(move |conn| store_lookup::list_tables(conn, project_id)).await?;
    let results = tables.into_iter().map(|t| LookupTableEntry { id: t.id, name: t.name }).collect();
    Ok(Json(LookupTableList { code: 200, status: import_status::OK.into(), results }))
}

#[utoipa::path(put, path = "/lookup-tables/{id}", tag = "Lookup Tables",
    params(("id" = String, Path, description = "the table's id (a UUID), as listed by `GET /lookup-tables`"),
        ("project_id" = i64, Query, description = "the project of the table")),
    request_body(content = String, content_type = "text/csv", description = "the whole table as CSV (RFC 4180, UTF-8): a header row, whose first column is the primary key, then one row per entry; optionally `Content-Encoding: gzip`"),
    responses(
        (status = 200, description = "the table now holds exactly these rows", body = LookupTableReceived),
        (status = 400, description = "some records break the rules, and nothing was stored: `failed_records` lists each (`index`: the record's 0-based position in the CSV, the header being 0; `message`: what is wrong, on which line); or `project_id` is missing or malformed, or the gzip body is broken", body = LookupTableInvalid),
        (status = 401, description = "`{\"code\":401,\"error\":\"Invalid credentials\",\"status\":\"Unauthorized\"}`", body = Object),
        (status = 403, description = "valid credentials without an owner or admin role in the project", body = Object),
        (status = 404, description = "the project has no lookup table with this id", body = Object),
        (status = 413, description = "the uncompressed body is over the server's limit (`--lookup-table-max-bytes`, 10 MiB by default)", body = Object),
        (status = 415, description = "a `Content-Type` other than `text/csv` (or a charset other than UTF-8), or a `Content-Encoding` other than gzip", body = Object),
        (status = 429, description = "the project's ingestion rate limit is reached; see `Retry-After`", body = Object)
    ),
    security(("ServiceAccount" = []))
)]
async fn replace(
    State(state): State<AppState>,
    headers: HeaderMap,
    path: Result<ApiPath<String>, ApiError>,
    query: RawQuery,
    CsvBody(body): CsvBody,
) -> Result<Response, IngestError> {
    let project_id = authorize_lookup(&state, &headers, &query, Access::Write).await?;
    let ApiPath(raw_id) = path?;
    let table_id = find_table(&state, project_id, &raw_id).await?;
    check_content_type(&headers)?;
    let max = state.config.lookup_table_max_bytes;
    let body = body.decode().await.map_err(|e| match e {
        // A table is replaced whole: `/import`'s advice to split the data would not help.
        ApiError::PayloadTooLarge(_) => ApiError::PayloadTooLarge(format!(
            "request exceeds max limit of {max} bytes; a lookup table is replaced whole, so send a smaller table or start the server with a larger `--lookup-table-max-bytes`"
        )),
        other => other,
    })?;
    charge(&state, project_id, body.len()).await?;
    let checked = tokio::task::spawn_blocking(move || check_csv(&body, max)).await.map_err(|e| ApiError::Internal(e.into()))?;
    let table = match checked {
        Ok(table) => table,
        Err(problems) => return Ok(invalid(problems)),
    };
    let id = table_id.clone();
    let stored = state
        .store
        .call(move |conn| store_lookup::replace_rows(conn, project_id, &id, &table.columns, &table.rows, now_ms()))
        .await?;
    // The table may have been deleted while its CSV was checked.
    if stored.is_none() {
        return Err(not_found(project_id, &table_id).into());
    }
    Ok(Json(LookupTableReceived { code: 200, status: import_status::OK.into() }).into_response())
}

/// The 400 of a CSV with problems.
fn invalid(problems: Problems) -> Response {
    let Problems { listed, total } = problems;
    let which = if total > listed.len() { format!("the first {} are listed", listed.len()) } else { "each is listed".to_owned() };
    let error = format!(
        "{VALIDATION_FAILED}: {total} problem(s) in the CSV, {which} in `failed_records` by index (the header is record 0) with its line; nothing was stored, so fix them and send the whole table again"
    );
    let body = LookupTableInvalid { code: 400, error, status: import_status::BAD_REQUEST.into(), failed_records: listed };
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

/// The body of a replace, read to its end (within the limit, then drained: see
/// [`read_raw`]) before the handler runs, so that every answer, 401 included, reaches a client
/// that is still sending. Nothing in it is looked at before the credentials are judged.
#[derive(Debug)]
pub struct CsvBody(RawBody);

impl FromRequest<AppState> for CsvBody {
    type Rejection = std::convert::Infallible;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        Ok(Self(read_raw(&parts.headers, body, state.config.lookup_table_max_bytes).await))
    }
}

/// Finds the project of a lookup-table request: HTTP Basic with a service account that has a role
/// in `project_id` (an owner or admin role for `Access::Write`). A missing or unreadable
/// `Authorization` header gets a 401 that says what is wrong with it; wrong credentials get the
/// reference's words (`Invalid credentials`), as on `/import`.
async fn authorize_lookup(state: &AppState, headers: &HeaderMap, query: &RawQuery, access: Access) -> Result<i64, ApiError> {
    let credentials = basic_credentials(headers)?;
    // `authorize` judges the credentials before the project id, whose only fault is a 400.
    let project = match query {
        Err(rejection) => {
            Err(ApiError::BadRequest(format!("the query string cannot be read ({}); send `?project_id=<id>`", rejection.body_text())))
        }
        Ok(Query(pairs)) => {
            let mut given = pairs.iter().filter(|(name, _)| name == "project_id").map(|(_, value)| value);
            match (given.next(), given.next()) {
                (None, _) => Err(ApiError::BadRequest("`project_id` is required; add `?project_id=<id>` to the URL".into())),
                (Some(raw), None) => parse_project_id(raw),
                // Refused as the ingestion routes refuse it (the core's `RepeatedParameter`).
                (Some(_), Some(_)) => {
                    Err(ApiError::BadRequest("`project_id` appears more than once in the query string; send it once".into()))
                }
            }
        }
    };
    match authorize(state, credentials, project, access).await {
        Err(ApiError::Unauthorized(_)) => Err(ApiError::Unauthorized(INVALID_CREDENTIALS.into())),
        other => other.map(|principal| principal.project_id),
    }
}

/// A table id as stored (a UUID in lower case), or `None` when `raw` is not a UUID.
pub fn parse_table_id(raw: &str) -> Option<String> {
    let groups: Vec<&str> = raw.split('-').collect();
    let shape = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]);
    let hex = groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    (shape && hex).then(|| raw.to_ascii_lowercase())
}

/// A new table id: a random (version 4) UUID.
pub fn new_table_id() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// The 404 of a table the project does not have.
pub fn not_found(project_id: i64, id: &str) -> ApiError {
    ApiError::NotFound(format!(
        "lookup table with id '{id}' was not found in project {project_id}; list the project's tables with `GET /lookup-tables?project_id={project_id}`, or create one with `POST /api/app/projects/{project_id}/lookup-tables`"
    ))
}

/// The stored id of the project's table `raw`, or the 404.
pub async fn find_table(state: &AppState, project_id: i64, raw: &str) -> Result<String, ApiError> {
    let Some(id) = parse_table_id(raw) else { return Err(not_found(project_id, raw)) };
    let lookup = id.clone();
    let found = state.store.read(move |conn| store_lookup::get_table(conn, project_id, &lookup)).await?;
    found.map(|t| t.id).ok_or_else(|| not_found(project_id, &id))
}

/// Accepts `text/csv`, with a UTF-8 (or ASCII) charset if one is named; anything else is a 415.
fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err(ApiError::UnsupportedMediaType(
            "the request has no `Content-Type`; send the table as CSV with `Content-Type: text/csv`".into(),
        ));
    };
    let value = value.to_str().unwrap_or("?");
    let mut parts = value.split(';').map(str::trim);
    let mime = parts.next().unwrap_or_default();
    if !mime.eq_ignore_ascii_case("text/csv") {
        return Err(ApiError::UnsupportedMediaType(format!(
            "`Content-Type: {value}` is not accepted here; send the table as CSV with `Content-Type: text/csv`"
        )));
    }
    for param in parts {
        let Some((name, charset)) = param.split_once('=') else { continue };
        let charset = charset.trim().trim_matches('"');
        let utf8 = ["utf-8", "utf8", "us-ascii"].iter().any(|c| charset.eq_ignore_ascii_case(c));
        if name.trim().eq_ignore_ascii_case("charset") && !utf8 {
            return Err(ApiError::UnsupportedMediaType(format!(
                "`charset={charset}` is not read here; save the CSV as UTF-8 and send `Content-Type: text/csv; charset=utf-8`"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ids_are_uuids() {
        let id = new_table_id();
        assert_eq!(parse_table_id(&id).as_deref(), Some(id.as_str()));
        assert_eq!((&id[14..15], id.len()), ("4", 36));
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
        assert_ne!(new_table_id(), id);
        let upper = "F077CB07-008A-4955-8A4A-B4C163DB3A87";
        assert_eq!(parse_table_id(upper).as_deref(), Some("f077cb07-008a-4955-8a4a-b4c163db3a87"));
        for bad in ["", "x", "f077cb07008a49558a4ab4c163db3a87", "f077cb07-008a-4955-8a4a-b4c163db3a8g", "f077cb07-008a-4955-8a4a-b4c163db3a87-"] {
            assert_eq!(parse_table_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_csv_in_utf8_is_accepted() {
        let check = |value: Option<&str>| {
            let mut headers = HeaderMap::new();
            if let Some(v) = value {
                headers.insert(header::CONTENT_TYPE, v.parse().unwrap());
            }
            check_content_type(&headers).map_err(|e| e.to_string())
        };
        for ok in ["text/csv", "Text/CSV", "text/csv; charset=utf-8", "text/csv;charset=\"UTF-8\"", "text/csv; header=present"] {
            assert_eq!(check(Some(ok)), Ok(()), "{ok}");
        }
        for (bad, says) in [(None, "no `Content-Type`"), (Some("application/json"), "application/json"), (Some("text/csv; charset=latin1"), "UTF-8"), (Some("text/csvx"), "text/csvx")] {
            let err = check(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }
}
