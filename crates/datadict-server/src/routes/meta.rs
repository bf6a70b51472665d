//! What the server says about itself: the limits it enforces (`GET /api/app/limits`), the OpenAPI
//! document of every route (`GET /openapi.json`), and the JSON answers of unknown routes.

use crate::error::ApiError;
use crate::AppState;
use axum::extract::{OriginalUri, State};
use axum::http::Method;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(limits))
}

/// `{"results":{<Limits>},"rate_limits":{...},"lookup_table_max_bytes":10485760,"quality":{...},"migration":{...},"namespace":"com.vendor","status":"ok"}`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LimitsResponse {
    /// The core's `Limits` (camelCase keys), as enforced by this server.
    #[schema(value_type = Object)]
    pub results: datadict_core::Limits,
    pub rate_limits: RateLimits,
    /// The largest uncompressed CSV of `PUT /lookup-tables/{id}` (`--lookup-table-max-bytes`).
    pub lookup_table_max_bytes: u64,
    pub quality: QualityLimits,
    pub migration: MigrationLimits,
    /// The vendor metadata key of the dictionary.
    pub namespace: String,
    pub status: String,
}

/// The per-project rate limits in force; `null` means unlimited.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RateLimits {
    pub schema_requests_per_minute: Option<u64>,
    /// Events plus properties that schemas create/replace requests may write per minute.
    pub schema_updates_per_minute: Option<u64>,
    /// Schemas one delete or `truncate` upload may remove (a per-request cap, not a rate).
    pub schema_deletions_per_request: Option<u64>,
    pub ingest_bytes_per_minute: Option<u64>,
}

/// The settings of data quality (the check of stored records against the dictionary).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct QualityLimits {
    /// Whether records are checked on arrival (`false` with `--no-dictionary-check`).
    pub dictionary_check: bool,
    /// The most distinct violation keys kept per project and UTC day; beyond, counts go to
    /// `$others` rows (`--quality-max-keys`).
    pub max_keys_per_day: u64,
}

/// The settings of the migration service (`POST /migrate/amplitude`).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MigrationLimits {
    /// A range must hold under this many events (spec §8; `DATADICT_MAX_MIGRATION_EVENTS`).
    pub events_below: u64,
    /// The source's export API (`DATADICT_AMPLITUDE_URL`).
    pub source_url: String,
    /// The source's export API for `REGION: "EU"` (`DATADICT_AMPLITUDE_EU_URL`).
    pub eu_source_url: String,
    /// The longest wait for any read from the source, in seconds (`DATADICT_AMPLITUDE_TIMEOUT_SECS`).
    pub read_timeout_secs: u64,
    /// Attempts of the download in all when the source answers 429 or 5xx.
    pub download_attempts: u32,
}

#[utoipa::path(get, path = "/limits", tag = "Server",
    responses((status = 200, description = "the limits this server enforces, so that a client can adopt them", body = LimitsResponse))
)]
async fn limits(State(state): State<AppState>) -> Json<LimitsResponse> {
    let c = &state.config;
    Json(LimitsResponse {
        results: c.limits.clone(),
        rate_limits: RateLimits {
            schema_requests_per_minute: c.schema_rate_limit,
            schema_updates_per_minute: c.schema_update_rate_limit,
            schema_deletions_per_request: c.schema_deletion_limit,
            ingest_bytes_per_minute: c.ingest_rate_limit,
        },
        lookup_table_max_bytes: c.lookup_table_max_bytes as u64,
        quality: QualityLimits { dictionary_check: c.dictionary_check, max_keys_per_day: c.quality_max_keys as u64 },
        migration: MigrationLimits {
            events_below: c.jobs.max_migration_events,
            source_url: c.jobs.amplitude_url.clone(),
            eu_source_url: c.jobs.amplitude_eu_url.clone(),
            read_timeout_secs: c.migration_source.read_timeout.as_secs(),
            download_attempts: c.migration_source.retry.max_attempts,
        },
        namespace: c.namespace.clone(),
        status: "ok".into(),
    })
}

/// The JSON 404 of a path no route serves. The path is the one the client sent: inside the nested
/// `/api/app` router, `Uri` has lost that prefix.
pub async fn not_found(OriginalUri(uri): OriginalUri) -> ApiError {
    ApiError::NotFound(format!("no route serves `{}`; see /openapi.json for the routes", uri.path()))
}

/// The first segments of the paths of `doc` (`api`, `import`, `lookup-tables`, ...) and of
/// `/openapi.json`: under them, a path no route serves is the API's JSON 404, never the web app.
pub fn api_roots(doc: &utoipa::openapi::OpenApi) -> Arc<[String]> {
    let mut roots: Vec<String> = doc.paths.paths.keys().map(|path| first_segment(path).to_owned()).collect();
    roots.push("openapi.json".into());
    roots.sort();
    roots.dedup();
    roots.into()
}

/// Whether `path` is one of `roots` or under one.
pub fn is_under(roots: &[String], path: &str) -> bool {
    let first = first_segment(path);
    roots.iter().any(|root| root == first)
}

fn first_segment(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or_default()
}

/// The JSON 405 of a known path with another method, naming the path as sent.
pub async fn method_not_allowed(method: Method, OriginalUri(uri): OriginalUri) -> ApiError {
    ApiError::MethodNotAllowed(format!(
        "`{method}` is not allowed on `{}`; see /openapi.json for the methods of each route",
        uri.path()
    ))
}

#[derive(OpenApi)]
#[openapi(
    info(title = "datadict", description = "The data-dictionary (schemas), event import, tracking, profile and lookup-table API of datadict, with a read API for checking what arrived, warehouse imports and the migration service."),
    modifiers(&SecuritySchemes),
    tags(
        (name = "Retrieve Schemas"), (name = "Create Schemas"), (name = "Delete Schemas"),
        (name = "Events"), (name = "User Profiles"), (name = "Group Profiles"), (name = "Read back"),
        (name = "Warehouse Imports", description = "imports of events and profiles from a file on the server or a PostgreSQL table, synced on request"),
        (name = "Migration", description = "the migration service: a project's history from the source tool's export, in a background job"),
        (name = "Lookup Tables", description = "CSV tables keyed by their first column: listed and replaced as the ingestion reference does, created, read and deleted through the application API"),
        (name = "Data Quality", description = "what the dictionary check on arrival found: violations per day and key, a summary, and a reset for CI jobs"),
        (name = "Server")
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let basic = || SecurityScheme::Http(Http::new(HttpAuthScheme::Basic));
        components.add_security_scheme("ServiceAccount", basic());
        // The project token as the Basic user name with an empty password (FACTS.md).
        components.add_security_scheme("ProjectToken", basic());
    }
}

/// The routed API and its OpenAPI document, built from the same registrations.
pub fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let app_api = OpenApiRouter::new()
        .merge(crate::routes::schemas::router())
        .merge(crate::routes::data::router())
        .merge(crate::routes::warehouse::router())
        .merge(crate::routes::lookup::app::router())
        .merge(crate::routes::migrate::app_router())
        .merge(crate::routes::quality::router())
        .merge(crate::routes::quality_draft::router())
        .merge(router())
        .fallback(not_found);
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .nest("/api/app", app_api)
        .merge(crate::routes::import::router())
        .merge(crate::routes::track::router())
        .merge(crate::routes::engage::router())
        .merge(crate::routes::groups::router())
        .merge(crate::routes::lookup::router())
        .merge(crate::routes::migrate::router())
        .split_for_parts()
}

/// The OpenAPI document of every route this server serves.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api().1
}

/// `GET /openapi.json`, serving `doc`.
pub fn openapi_route(doc: utoipa::openapi::OpenApi) -> Router<AppState> {
    let json = Arc::new(doc.to_json().unwrap_or_else(|_| "{}".into()));
    Router::new().route(
        "/openapi.json",
        get(move || {
            let json = json.clone();
            async move { ([(axum::http::header::CONTENT_TYPE, "application/json")], (*json).clone()) }
        }),
    )
}
