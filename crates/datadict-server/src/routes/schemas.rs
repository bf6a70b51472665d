//! The schemas (data dictionary) API of spec §4.1 and FACTS.md, under `/api/app`: list, get,
//! create-or-replace (one or a batch, with `truncate`) and delete.
//!
//! Choices where the spec and FACTS.md are silent:
//! - A project that does not exist answers 403 like one the account has no role in, so that
//!   credentials cannot be used to probe which project ids exist.
//! - `GET .../{entityType}/{name}` of a missing schema answers 404 with the error body; deleting
//!   a missing schema answers 200 with `delete_count: 0`.
//! - The rate limit (FACTS.md: 5 requests a minute per project) is off unless configured
//!   (`--schema-rate-limit`), since a local stand-in serves tests that make many requests; it
//!   counts every schemas request, after authentication.
//! - The update budget (FACTS.md: 4,000 events+properties a minute per project) is off unless
//!   configured (`--schema-update-rate-limit`), for the same reason. A create/replace costs one
//!   per entity plus one per property it writes; it is charged inside the write's transaction,
//!   after validation, so a refused or invalid request costs nothing and writes nothing. A request
//!   that alone costs more than the whole budget can never fit: it is refused with a 400 that says
//!   to split it (a 429 would have clients retry it forever), rather than let through on a full
//!   bucket with the overage forgiven; every other request is charged its full cost.
//! - The deletion cap (FACTS.md: 3,000 truncations or deletions per request) is on by default,
//!   since it protects data. The delete runs in a transaction that is rolled back when it removed
//!   more than the cap: the count then comes from the very statements that would delete (one per
//!   entity type, so that the refusal can say which smaller deletes pass), so it cannot disagree
//!   with them, and a refused request removes nothing.

mod deletions;
mod query;

use crate::auth::{AccessLevel, Project, ReadAccess, WriteAccess};
use crate::error::{ApiError, ApiPath, JsonBody};
use crate::ratelimit::{Kind, Limit};
use crate::routes::responses::{SchemasReadRefusals, SchemasWriteRefusals};
use crate::routes::parse_entity_type;
use crate::store;
use crate::AppState;
use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::request::Parts;
use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};
use datadict_core::validate::validate_schema;
use datadict_core::{
    merge_schema, validate_batch_body, BatchUploadResponse, DeleteResponse, EntityType, Issue, IssueCode, ListSchemasResponse, Schema,
    SchemaEntry, SchemaRules, StatusResponse,
};
use serde_json::Value;
use deletions::{check_deletions, delete_counting, total};
use query::{read_params, Unknown};
use std::time::Duration;

/// The schemas routes, with their OpenAPI operations (the document is built from these very
/// registrations, so it cannot list a route that is not served or miss one that is).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_all, upload_batch, delete_all))
        .routes(routes!(list_by_type, delete_by_type))
        .routes(routes!(get_one, upload_one, delete_one))
}

/// The parameters of `/schemas/{entityType}` (FACTS.md); every other schemas route takes none.
const ENTITY_NAME: &[&str] = &["entity_name"];

/// A schemas request admitted: the caller has the role `A` needs in the path's project
/// ([`Project`]), and the request was then charged to the project's schemas rate limit (after
/// authentication, so that strangers cannot use up a project's budget). Its refusals come in the
/// order 401, 400 (project id), 403, 429.
struct Admitted<A: AccessLevel>(Project<A>);

impl<A: AccessLevel> Admitted<A> {
    fn id(&self) -> i64 {
        self.0.id()
    }
}

impl<A: AccessLevel> FromRequestParts<AppState> for Admitted<A> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let project = Project::<A>::from_request_parts(parts, state).await?;
        let project_id = project.id();
        if let Some(per_minute) = state.config.schema_rate_limit {
            state.config.rate_limiter.charge(&state.store, Kind::Schemas, project_id, Limit { per_minute }, 1).await?.map_err(|wait| {
                ApiError::rate_limited(
                    format!("project {project_id} exceeded {per_minute} schema requests per minute; retry after the `Retry-After` seconds"),
                    wait,
                )
            })?;
        }
        Ok(Self(project))
    }
}

/// What a schema write costs against the update budget: the entity plus its properties.
fn update_cost(schema: &Schema) -> u64 {
    1 + schema.properties.as_ref().map_or(0, |p| p.len() as u64)
}

/// Refuses a write that costs more than the whole update budget, when one is configured: no wait
/// makes it fit, so the answer is a 400 that says to split it, before anything is read or written.
fn check_update_size(config: &crate::Config, cost: u64) -> Result<(), ApiError> {
    match config.schema_update_rate_limit {
        Some(per_minute) if cost > per_minute => Err(ApiError::BadRequest(format!(
            "this request updates {cost} events+properties (an entity counts 1, each of its properties 1), more than the {per_minute} a project may update per minute, so it can never be accepted; nothing was written; split it into requests of at most {per_minute} events+properties each"
        ))),
        _ => Ok(()),
    }
}

/// Charges `cost` events+properties to the project's update budget, when one is configured, on
/// the connection of the request's write (in its transaction, when one is open). The cost is
/// within the budget ([`check_update_size`]), so it is charged in full.
fn charge_updates(config: &crate::Config, conn: &store::Conn<'_>, project_id: i64, cost: u64) -> anyhow::Result<Result<(), ApiError>> {
    let Some(per_minute) = config.schema_update_rate_limit else { return Ok(Ok(())) };
    Ok(config.rate_limiter.charge_on(conn, Kind::SchemaUpdates, project_id, Limit { per_minute }, cost)?.map_err(|wait: Duration| {
        ApiError::rate_limited(
            format!(
                "project {project_id} may write {per_minute} events+properties per minute and this request writes {cost}; nothing was written; retry after the `Retry-After` seconds, or send fewer entries or properties per request"
            ),
            wait,
        )
    }))
}

#[utoipa::path(get, path = "/projects/{project_id}/schemas", tag = "Retrieve Schemas",
    params(("project_id" = i64, Path, description = "the project id")),
    responses(
        (status = 200, description = "every schema of the project: `{\"results\":[SchemaEntry],\"status\":\"ok\"}`", body = Object),
        (status = 400, description = "bad path", body = Object),
        SchemasReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list_all(
    admitted: Admitted<ReadAccess>,
    State(state): State<AppState>,
) -> Result<Json<ListSchemasResponse>, ApiError> {
    let project_id = admitted.id();
    let results = state.store.read(move |conn| store::list_schemas(conn, project_id, None, None)).await?;
    Ok(Json(ListSchemasResponse::ok(results)))
}

#[utoipa::path(get, path = "/projects/{project_id}/schemas/{entity_type}", tag = "Retrieve Schemas",
    params(("project_id" = i64, Path, description = "the project id"), ("entity_type" = String, Path, description = "`event` or `profile`"), ("entity_name" = Option<String>, Query, description = "narrows to one entity name")),
    responses(
        (status = 200, description = "the schemas of one entity type: `{\"results\":[SchemaEntry],\"status\":\"ok\"}`", body = Object),
        (status = 400, description = "bad path, or an `entity_name` repeated or not UTF-8 once percent-decoded", body = Object),
        SchemasReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn list_by_type(
    admitted: Admitted<ReadAccess>,
    State(state): State<AppState>,
    ApiPath((_, entity_type)): ApiPath<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Json<ListSchemasResponse>, ApiError> {
    let project_id = admitted.id();
    let entity_type = parse_entity_type(&entity_type)?;
    let query = read_params(query.as_deref(), ENTITY_NAME, Unknown::Ignore)?;
    let results = state
        .store
        .read(move |conn| store::list_schemas(conn, project_id, Some(entity_type), query.entity_name.as_deref()))
        .await?;
    Ok(Json(ListSchemasResponse::ok(results)))
}

#[utoipa::path(get, operation_id = "get_schema", path = "/projects/{project_id}/schemas/{entity_type}/{name}", tag = "Retrieve Schemas",
    params(("project_id" = i64, Path, description = "the project id"), ("entity_type" = String, Path, description = "`event` or `profile`"), ("name" = String, Path, description = "the entity name (for an event, the event name; the user profile is `$user`)")),
    responses(
        (status = 200, description = "the bare Schema object", body = Object),
        (status = 404, description = "no schema of that type and name", body = Object),
        (status = 400, description = "bad path", body = Object),
        SchemasReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn get_one(
    admitted: Admitted<ReadAccess>,
    State(state): State<AppState>,
    ApiPath((_, entity_type, name)): ApiPath<(String, String, String)>,
) -> Result<Json<Schema>, ApiError> {
    let project_id = admitted.id();
    let entity_type = parse_entity_type(&entity_type)?;
    let lookup = name.clone();
    let schema = state.store.read(move |conn| store::get_schema(conn, project_id, entity_type, &lookup)).await?;
    schema.map(Json).ok_or_else(|| {
        ApiError::NotFound(format!(
            "project {project_id} has no {entity_type} schema named `{name}`; list the schemas to see the names, or create it with POST"
        ))
    })
}

#[utoipa::path(post, path = "/projects/{project_id}/schemas/{entity_type}/{name}", tag = "Create Schemas",
    params(("project_id" = i64, Path, description = "the project id"), ("entity_type" = String, Path, description = "`event` or `profile`"), ("name" = String, Path, description = "the entity name (for an event, the event name; the user profile is `$user`)")),
    request_body(content = Object, description = "a Schema; keys other than `description`, `properties` and `metadata` are kept and served back as sent"),
    responses(
        (status = 200, description = "`{\"status\":\"ok\"}`; entity metadata is merged with the stored schema (absent keys kept, `null` removes)", body = Object),
        (status = 400, description = "bad path, a query parameter (the route takes none), a bad body (`error` counts every problem and lists the first 100), or a schema that updates more events+properties than the per-minute update budget holds (it can never pass: split it)", body = Object),
        (status = 413, description = "the body is over the JSON body limit (16 MiB)", body = Object),
        SchemasWriteRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn upload_one(
    admitted: Admitted<WriteAccess>,
    State(state): State<AppState>,
    ApiPath((_, entity_type, name)): ApiPath<(String, String, String)>,
    RawQuery(query): RawQuery,
    body: Result<JsonBody, ApiError>,
) -> Result<Json<StatusResponse>, ApiError> {
    let project_id = admitted.id();
    let entity_type = parse_entity_type(&entity_type)?;
    read_params(query.as_deref(), &[], Unknown::Refuse)?;
    let JsonBody(body) = body?;
    let rules = SchemaRules { namespace: state.config.namespace.clone() };
    let mut issues = Vec::new();
    if name.trim().is_empty() {
        let found = datadict_core::validate::emptiness(&name);
        issues.push(Issue::new("name", IssueCode::InvalidName, format!("the entity name in the path is {found}; put the entity name in the path")));
    }
    validate_schema(&body, "", Some(entity_type), &rules, &mut issues);
    if !issues.is_empty() {
        return Err(ApiError::Invalid(issues));
    }
    let schema: Schema = serde_json::from_value(body)
        .map_err(|e| ApiError::BadRequest(format!("the schema cannot be read ({e}); send a schema object")))?;
    check_update_size(&state.config, update_cost(&schema))?;
    let namespace = rules.namespace;
    let config = state.config.clone();
    state
        .store
        .call(move |conn| {
            if let Err(refused) = charge_updates(&config, conn, project_id, update_cost(&schema))? {
                return Ok(Err(refused));
            }
            let tx = conn.transaction()?;
            let old = store::get_schema(&tx, project_id, entity_type, &name)?;
            let merged = merge_schema(old, schema, &namespace);
            store::put_schema(&tx, project_id, &SchemaEntry { entity_type, name, schema_json: merged })?;
            tx.commit()?;
            Ok(Ok(()))
        })
        .await??;
    Ok(Json(StatusResponse::ok()))
}

#[utoipa::path(post, path = "/projects/{project_id}/schemas", tag = "Create Schemas",
    params(("project_id" = i64, Path, description = "the project id")),
    request_body(content = Object, description = "`{\"entries\":[SchemaEntry],\"truncate\":false}`, no other keys; a `schemaJson` may hold keys other than `description`, `properties` and `metadata`, kept and served back as sent"),
    responses(
        (status = 200, description = "`{\"results\":{\"added\":N,\"deleted\":N},\"status\":\"ok\"}`", body = Object),
        (status = 400, description = "bad path, a query parameter (the route takes none), a bad body (`error` counts every problem and lists the first 100), entries that update more events+properties than the per-minute update budget holds (they can never pass: split them), or a `truncate` that would remove more schemas than one request may", body = Object),
        (status = 413, description = "the body is over the JSON body limit (16 MiB)", body = Object),
        SchemasWriteRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn upload_batch(
    admitted: Admitted<WriteAccess>,
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    body: Result<JsonBody, ApiError>,
) -> Result<Json<BatchUploadResponse>, ApiError> {
    let project_id = admitted.id();
    read_params(query.as_deref(), &[], Unknown::Refuse)?;
    let JsonBody(body) = body?;
    let rules = SchemaRules { namespace: state.config.namespace.clone() };
    let (entries, truncate) = parse_batch(&body, &rules)?;
    let cost = entries.iter().map(|e| update_cost(&e.schema_json)).sum();
    check_update_size(&state.config, cost)?;
    let namespace = rules.namespace;
    let config = state.config.clone();
    let (added, deleted) = state
        .store
        .call(move |conn| {
            // Dropping `tx` without a commit rolls back the truncation of a refused request.
            let tx = conn.transaction()?;
            let removed = if truncate { delete_counting(&tx, project_id, None, None)? } else { Vec::new() };
            let deleted = total(&removed);
            let mut checked = check_deletions(&config, &removed, "; then upload without `truncate`");
            if checked.is_ok() {
                checked = charge_updates(&config, &tx, project_id, cost)?;
            }
            if let Err(refused) = checked {
                return Ok(Err(refused));
            }
            let added = entries.len();
            for entry in entries {
                let old = store::get_schema(&tx, project_id, entry.entity_type, &entry.name)?;
                let merged = merge_schema(old, entry.schema_json, &namespace);
                store::put_schema(&tx, project_id, &SchemaEntry { schema_json: merged, ..entry })?;
            }
            tx.commit()?;
            Ok(Ok((added as u64, deleted as u64)))
        })
        .await??;
    Ok(Json(BatchUploadResponse::ok(added, deleted)))
}

/// Checks the batch body `{"entries":[SchemaEntry],"truncate":bool}` with the core's
/// `validate_batch_body` (no other keys, every entry, each entity named once) and reports every
/// problem at once.
fn parse_batch(body: &Value, rules: &SchemaRules) -> Result<(Vec<SchemaEntry>, bool), ApiError> {
    let issues = validate_batch_body(body, rules);
    if !issues.is_empty() {
        return Err(ApiError::Invalid(issues));
    }
    let truncate = body.get("truncate").and_then(Value::as_bool).unwrap_or(false);
    let items = body.get("entries").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let entries = items
        .iter()
        .map(|v| serde_json::from_value::<SchemaEntry>(v.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::BadRequest(format!("a schema entry cannot be read ({e}); check the entries against the schema")))?;
    Ok((entries, truncate))
}

#[utoipa::path(delete, path = "/projects/{project_id}/schemas", tag = "Delete Schemas",
    params(("project_id" = i64, Path, description = "the project id")),
    responses(
        (status = 200, description = "`{\"results\":{\"delete_count\":N},\"status\":\"ok\"}`", body = Object),
        (status = 400, description = "bad path, a query parameter the route does not take or that is not UTF-8, or more schemas to remove than one request may (3,000 by default); nothing is removed", body = Object),
        SchemasWriteRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn delete_all(
    admitted: Admitted<WriteAccess>,
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Json<DeleteResponse>, ApiError> {
    let project_id = admitted.id();
    read_params(query.as_deref(), &[], Unknown::Refuse)?;
    delete(&state, project_id, None, None).await
}

#[utoipa::path(delete, path = "/projects/{project_id}/schemas/{entity_type}", tag = "Delete Schemas",
    params(("project_id" = i64, Path, description = "the project id"), ("entity_type" = String, Path, description = "`event` or `profile`"), ("entity_name" = Option<String>, Query, description = "narrows to one entity name")),
    responses(
        (status = 200, description = "`{\"results\":{\"delete_count\":N},\"status\":\"ok\"}`", body = Object),
        (status = 400, description = "bad path, a query parameter the route does not take or that is not UTF-8, or more schemas to remove than one request may (3,000 by default); nothing is removed", body = Object),
        SchemasWriteRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn delete_by_type(
    admitted: Admitted<WriteAccess>,
    State(state): State<AppState>,
    ApiPath((_, entity_type)): ApiPath<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Json<DeleteResponse>, ApiError> {
    let project_id = admitted.id();
    let entity_type = parse_entity_type(&entity_type)?;
    let query = read_params(query.as_deref(), ENTITY_NAME, Unknown::Refuse)?;
    delete(&state, project_id, Some(entity_type), query.entity_name).await
}

#[utoipa::path(delete, path = "/projects/{project_id}/schemas/{entity_type}/{name}", tag = "Delete Schemas",
    params(("project_id" = i64, Path, description = "the project id"), ("entity_type" = String, Path, description = "`event` or `profile`"), ("name" = String, Path, description = "the entity name (for an event, the event name; the user profile is `$user`)")),
    responses(
        (status = 200, description = "`{\"results\":{\"delete_count\":N},\"status\":\"ok\"}`", body = Object),
        (status = 400, description = "bad path, a query parameter the route does not take or that is not UTF-8, or more schemas to remove than one request may (3,000 by default); nothing is removed", body = Object),
        SchemasWriteRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn delete_one(
    admitted: Admitted<WriteAccess>,
    State(state): State<AppState>,
    ApiPath((_, entity_type, name)): ApiPath<(String, String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Json<DeleteResponse>, ApiError> {
    let project_id = admitted.id();
    let entity_type = parse_entity_type(&entity_type)?;
    read_params(query.as_deref(), &[], Unknown::Refuse)?;
    delete(&state, project_id, Some(entity_type), Some(name)).await
}

async fn delete(
    state: &AppState,
    project_id: i64,
    entity_type: Option<EntityType>,
    name: Option<String>,
) -> Result<Json<DeleteResponse>, ApiError> {
    let config = state.config.clone();
    let count = state
        .store
        .call(move |conn| {
            // Dropping `tx` without a commit rolls back the deletion of a refused request.
            let tx = conn.transaction()?;
            let removed = delete_counting(&tx, project_id, entity_type, name.as_deref())?;
            if let Err(refused) = check_deletions(&config, &removed, "") {
                return Ok(Err(refused));
            }
            tx.commit()?;
            Ok(Ok(total(&removed)))
        })
        .await??;
    Ok(Json(DeleteResponse::ok(count as u64)))
}
