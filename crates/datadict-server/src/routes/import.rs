//! `POST /import` (spec §4.4, FACTS.md): events as a JSON array or NDJSON, gzipped or not, or (as
//! server-side libraries send them) a form with `data=` holding JSON or base64 JSON, or
//! `GET ?data=`; every way is decoded by the core's wire rules (`routes::wire`). Each record is
//! checked by the core's import rules; valid ones are stored in one transaction (deduplicated,
//! with `dropped` events and properties removed), invalid ones are reported in strict mode. A
//! `properties.token` (server-side libraries add the project token) is not stored: the request's
//! `Authorization` decides the project.
//!
//! The answer is the import's JSON body (`{"code":200,"num_records_imported":N,"status":"OK"}`,
//! or 400 with `failed_records`) for every framing, forms included, since the libraries that send
//! forms read `num_records_imported` and `failed_records`; a request with `verbose=1`, `img=1` or
//! `callback=` gets that tracking answer instead (see `routes::wire`). Either way a 200 counts
//! exactly what was stored, and a body of which nothing was stored is a 400.

use crate::auth::IngestCaller;
use crate::ingest::{store_events, Intake};
use crate::routes::ingest::charge;
use crate::routes::responses::IngestRefusals;
use crate::routes::wire::{answer_batch, project_and_records, receive, Refused, Tally, WireQuery};
use crate::AppState;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::post;
use datadict_core::wire::Route;
use datadict_core::ClientIp;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(import, import_get)).route("/import/", post(import).get(import_get))
}

/// Import events
///
/// Also served at `/import/`, with a trailing slash, as the tracking routes are.
#[utoipa::path(post, path = "/import", tag = "Events",
    params(WireQuery),
    request_body(description = "a JSON array of events, or NDJSON (`application/x-ndjson`), or `application/x-www-form-urlencoded` with `data=<JSON or base64 JSON>` (the parameters may be form fields too, `project_id` included; a form field wins over the query parameter); optionally `Content-Encoding: gzip`",
        content(
            (Vec<Object> = "application/json"),
            (String = "application/x-ndjson"),
            (String = "application/x-www-form-urlencoded"))),
    responses(
        (status = 200, description = "`{\"code\":200,\"num_records_imported\":N,\"status\":\"OK\"}` (or, with `verbose`, `img` or `callback`, that answer)", body = Object),
        (status = 400, description = "some records failed (`failed_records`, with `num_records_imported` counting those stored), or the body cannot be read as records: the error says what was found and what to send", body = Object),
        IngestRefusals
    ),
    security(("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn import(caller: IngestCaller, State(state): State<AppState>, request: Request) -> Result<Response, Refused> {
    receive_import(caller, state, request).await
}

/// `GET /import?data=...`: the same as a `POST`.
#[utoipa::path(get, path = "/import", tag = "Events",
    params(WireQuery),
    responses(
        (status = 200, description = "`{\"code\":200,\"num_records_imported\":N,\"status\":\"OK\"}` (or, with `verbose`, `img` or `callback`, that answer)", body = Object),
        (status = 400, description = "some records failed, or `data` cannot be read as records", body = Object),
        IngestRefusals
    ),
    security(("ServiceAccount" = []), ("ProjectToken" = []))
)]
async fn import_get(caller: IngestCaller, State(state): State<AppState>, request: Request) -> Result<Response, Refused> {
    receive_import(caller, state, request).await
}

async fn receive_import(caller: IngestCaller, state: AppState, request: Request) -> Result<Response, Refused> {
    // A debug event, so that an operator (and the graceful-shutdown test) can see that a request
    // has reached its handler.
    tracing::debug!("import request received");
    let received = receive(Route::Import, request, state.config.limits.max_request_bytes).await;
    let refuse = Refused::with(&received.style);
    let (project_id, records) = project_and_records(&state, &caller, &received.params, received.records).await.map_err(&refuse)?;
    charge(&state, project_id, records.bytes.len()).await.map_err(&refuse)?;
    let intake = Intake { ip: received.ip.map(ClientIp::new), route: "import", ..Intake::default() };
    let checked = store_events(&state, project_id, records.bytes, records.format, intake).await.map_err(&refuse)?;
    let tally = Tally { records: checked.records, stored: checked.stored + checked.dropped, failed: checked.failed, noun: "event", verb: "stored" };
    Ok(answer_batch(&received.style, tally))
}
