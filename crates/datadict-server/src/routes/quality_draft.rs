//! Schemas drafted from what arrived (issue 20): `GET /api/app/projects/{id}/quality/draft`
//! proposes schema entries for undocumented events and unknown properties from the JSON types the
//! check on arrival observed, as a body for the batch upload (`POST .../schemas`) that a person
//! reviews first; nothing is written here.
//!
//! An unknown property of a documented event comes from its `unknown_property` rows; the
//! properties of an undocumented event come from the samples of its `no_schema` rows (the records
//! as they arrived, so only samples that were not cut are read) and from its latest stored events
//! (up to `STORED_PER_EVENT`), since five samples miss what only later events carry. A property seen with one JSON type
//! gets it; one seen with several is listed in `unresolved`, never guessed. An entry for a
//! documented event holds its current schema plus the new properties, since the batch upload
//! replaces each entity's schema.

use crate::auth::ProjectRead;
use crate::error::ApiError;
use crate::ingest::quality::OTHERS;
use crate::routes::quality::parse_day;
use crate::routes::read_query;
use crate::routes::responses::ReadRefusals;
use crate::store::quality::Table;
use crate::store::{self, EventQuery, StoredViolation, ViolationFilter};
use crate::AppState;
use axum::extract::{Query, State};
use axum::Json;
use datadict_core::json_schema::json_type_of;
use datadict_core::{EntityType, SchemaEntry};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(draft))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftQuery {
    pub event: Option<String>,
    pub since: Option<String>,
}

/// The types seen per event and property, from violation rows.
type Seen = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// What the rows say about undocumented events and unknown properties.
fn observed(rows: &[StoredViolation]) -> Seen {
    let mut seen = Seen::new();
    for v in rows.iter().filter(|v| v.row.kind == "event" && v.row.entity != OTHERS) {
        match v.row.code.as_str() {
            "unknown_property" => {
                let types = seen.entry(v.row.entity.clone()).or_default().entry(v.row.property.clone()).or_default();
                types.extend(v.row.types.iter().cloned());
            }
            "no_schema" => {
                let props = seen.entry(v.row.entity.clone()).or_default();
                for sample in v.row.samples.iter().filter_map(Value::as_str) {
                    add_record(props, sample);
                }
            }
            _ => {}
        }
    }
    seen
}

/// Adds the JSON type of each property of `record` (an event's text) to `props`, leaving out the
/// system properties; text that does not parse (a sample cut short) adds nothing.
fn add_record(props: &mut BTreeMap<String, BTreeSet<String>>, record: &str) {
    let Ok(record) = serde_json::from_str::<Value>(record) else { return };
    for (name, value) in record["properties"].as_object().into_iter().flatten() {
        if !datadict_core::dictionary::SYSTEM_PROPERTIES.contains(&name.as_str()) {
            props.entry(name.clone()).or_default().insert(json_type_of(value).as_str().to_owned());
        }
    }
}

/// The most stored events read per undocumented event name (the latest): its `no_schema` row
/// keeps five samples, so a property that only later events carry would be missed.
const STORED_PER_EVENT: usize = 10_000;

/// The draft: an entry per event (its current schema, if any, plus each property seen with one
/// type), and the properties seen with several types.
pub fn draft_entries(seen: Seen, current: &[SchemaEntry]) -> Result<(Vec<SchemaEntry>, Vec<Value>), serde_json::Error> {
    let mut entries = Vec::new();
    let mut unresolved = Vec::new();
    for (event, props) in seen {
        let mut entry = match current.iter().find(|e| e.entity_type == EntityType::Event && e.name == event) {
            Some(e) => e.clone(),
            None => serde_json::from_value(json!({"entityType": "event", "name": event, "schemaJson": {}}))?,
        };
        for (property, types) in props {
            if types.len() == 1 {
                let def = serde_json::from_value(json!({"type": types.first()}))?;
                entry.schema_json.properties.get_or_insert_with(BTreeMap::new).entry(property).or_insert(def);
            } else {
                unresolved.push(json!({"event": event, "property": property, "types": types}));
            }
        }
        entries.push(entry);
    }
    Ok((entries, unresolved))
}

#[utoipa::path(get, path = "/projects/{project_id}/quality/draft", tag = "Data Quality",
    params(("project_id" = i64, Path, description = "the project id"),
        ("event" = Option<String>, Query, description = "only this event"),
        ("since" = Option<String>, Query, description = "first day: `YYYY-MM-DD`, milliseconds since epoch, or before now (`10m`, `2h`, `7d`)")),
    responses(
        (status = 200, description = "`{\"status\":\"ok\",\"results\":{\"entries\":[...],\"truncate\":false},\"unresolved\":[{\"event\",\"property\",\"types\"}]}`: `results` is a body for `POST .../schemas`, to review before sending", body = Object),
        (status = 400, description = "a parameter is malformed; `error` says which", body = Object),
        ReadRefusals
    ),
    security(("ServiceAccount" = []))
)]
async fn draft(
    project: ProjectRead,
    State(state): State<AppState>,
    query: Result<Query<DraftQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let project_id = project.id();
    let q = read_query(query)?;
    let since_day = q.since.as_deref().map(|s| parse_day("since", s, crate::ingest::now_ms())).transpose()?;
    let f = ViolationFilter { since_day, event: q.event, kind: Some("event".into()), ..ViolationFilter::default() };
    state.store.settle_quality().await?;
    let (seen, current) = state
        .store
        .read(move |conn| {
            let rows = store::quality::list_violations(conn, Table::Violations, project_id, &f, 100_000)?;
            let mut seen = observed(&rows);
            // An undocumented event's properties: its samples, and its latest stored events.
            let undocumented: BTreeSet<&str> =
                rows.iter().filter(|v| v.row.kind == "event" && v.row.code == "no_schema" && v.row.entity != OTHERS).map(|v| v.row.entity.as_str()).collect();
            for name in undocumented {
                let q = EventQuery { event: Some(name.to_owned()), limit: STORED_PER_EVENT, max_bytes: 64 << 20, ..EventQuery::default() };
                let props = seen.entry(name.to_owned()).or_default();
                for event in store::query_events(conn, project_id, &q)? {
                    add_record(props, &event.record);
                }
            }
            Ok((seen, store::list_schemas(conn, project_id, Some(EntityType::Event), None)?))
        })
        .await?;
    let (entries, unresolved) = draft_entries(seen, &current).map_err(|e| ApiError::Internal(e.into()))?;
    Ok(Json(json!({"status": "ok", "results": {"entries": entries, "truncate": false}, "unresolved": unresolved})))
}
