//! The schemas (data dictionary) API of spec §4.1 and FACTS.md, under `/api/app`.

use crate::auth::{authorize, Access};
use crate::error::ApiError;
use crate::routes::{parse_entity_type, parse_project_id};
use crate::store;
use crate::AppState;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use datadict_core::ListSchemasResponse;
use serde::Deserialize;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/projects/{project_id}/schemas", get(list_all))
        .route("/projects/{project_id}/schemas/{entity_type}", get(list_by_type))
}

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    pub entity_name: Option<String>,
}

async fn list_all(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(project_id): Path<String>,
) -> Result<Json<ListSchemasResponse>, ApiError> {
    let project_id = parse_project_id(&project_id)?;
    authorize(&state, &headers, project_id, Access::Read).await?;
    let results = state.store.call(move |conn| store::list_schemas(conn, project_id, None, None)).await?;
    Ok(Json(ListSchemasResponse::ok(results)))
}

async fn list_by_type(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((project_id, entity_type)): Path<(String, String)>,
    Query(query): Query<ListQuery>,
) -> Result<Json<ListSchemasResponse>, ApiError> {
    let project_id = parse_project_id(&project_id)?;
    let entity_type = parse_entity_type(&entity_type)?;
    authorize(&state, &headers, project_id, Access::Read).await?;
    let results = state
        .store
        .call(move |conn| store::list_schemas(conn, project_id, Some(entity_type), query.entity_name.as_deref()))
        .await?;
    Ok(Json(ListSchemasResponse::ok(results)))
}
