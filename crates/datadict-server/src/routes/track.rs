//! `POST`/`GET /track` (reference, issue 19): events as tracking libraries send them, one event
//! object or an array, in every wire format of `routes::wire` (JSON, gzipped or not; a form or
//! `GET` with `data=` holding JSON or base64 JSON), answered `1`/`0` or as `verbose`, `img` and
//! `callback` ask.
//!
//! Authentication: the project token in each event's `properties.token`, without an
//! `Authorization` header (reference); a server-side sender may instead authenticate as on
//! `/import` (the project token as Basic user name, or a service account with `project_id`), and
//! its events may then leave the token out. Events naming another project's token, or a token of
//! no project, are refused one by one; a request none of whose events names a project is a 401.
//!
//! Rules: the core's [`EventRules::TRACK`]: `time` optional (absent, the server's clock; later
//! than it, set to it), `distinct_id` and `$insert_id` optional (an event without `$insert_id`
//! cannot be de-duplicated: every copy is stored). Every other import rule applies unchanged,
//! through the same check-and-insert path as `/import` (`ingest::store_events`): limits, forbidden
//! ids, truncation, the dictionary's drops, de-duplication. With `ip=1` the connection's address
//! becomes the event's `ip` unless it has one. The token is not stored with the event.
//!
//! A batch with invalid events stores the valid ones and answers `0` (400), or with `verbose=1`
//! `{"status":0,"error":"stored 2 of 3 events; event 1: ..."}`: the answer never claims a
//! success that did not wholly happen.

use crate::auth::{records_project, token_projects_versioned, IngestCaller};
use crate::error::ApiError;
use crate::ingest::{body_tokens, check_body, event_tokens, now_ms, store_checked, store_events, Intake, Tokens, INLINE_BYTES};
use crate::routes::ingest::{charge, IngestError};
use crate::routes::responses::{EventsTracked, TrackingRefusals};
use crate::routes::wire::{answer_batch, receive, Refused, Tally, WireQuery};
use crate::AppState;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::post;
use datadict_core::event::{Presence, TokenField};
use datadict_core::wire::Route;
use datadict_core::EventRules;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    // With the trailing slash too (see `routes`).
    OpenApiRouter::new().routes(routes!(track, track_get)).route("/track/", post(track).get(track_get))
}

/// Track events
///
/// Also served at `/track/`, with the trailing slash the service's browser library sends to.
#[utoipa::path(post, path = "/track", tag = "Events",
    params(WireQuery),
    request_body(description = "one event `{\"event\", \"properties\": {\"token\", \"time\"?, \"distinct_id\"?, \"$insert_id\"?, ...}}` or a JSON array of them, or `application/x-www-form-urlencoded` with `data=<JSON or base64 JSON>` (the parameters may be form fields too); `text/plain` and unlabelled bodies are read as JSON when they start with `{` or `[`, else as a form; optionally `Content-Encoding: gzip`",
        content(
            (Vec<Object> = "application/json"),
            (String = "application/x-www-form-urlencoded"),
            (String = "text/plain"))),
    responses(
        EventsTracked,
        TrackingRefusals
    ),
    security((), ("ProjectToken" = []), ("ServiceAccount" = []))
)]
async fn track(caller: Result<Option<IngestCaller>, IngestError>, State(state): State<AppState>, request: Request) -> Result<Response, Refused> {
    receive_events(caller, state, request).await
}

/// `GET /track?data=...`: a beacon or a pixel; the same as a `POST`.
#[utoipa::path(get, path = "/track", tag = "Events",
    params(WireQuery),
    responses(
        EventsTracked,
        TrackingRefusals
    ),
    security((), ("ProjectToken" = []), ("ServiceAccount" = []))
)]
async fn track_get(caller: Result<Option<IngestCaller>, IngestError>, State(state): State<AppState>, request: Request) -> Result<Response, Refused> {
    receive_events(caller, state, request).await
}

async fn receive_events(caller: Result<Option<IngestCaller>, IngestError>, state: AppState, request: Request) -> Result<Response, Refused> {
    let received = receive(Route::Track, request, state.config.limits.max_request_bytes).await;
    let refuse = Refused::with(&received.style);
    let caller = caller.map_err(|e| refuse(e.0))?;
    let records = received.records.map_err(&refuse)?;
    // A request authenticated by its header may leave the token out of its events.
    let rules = match caller {
        Some(_) => EventRules { token: TokenField::Credential(Presence::Optional), ..EventRules::TRACK },
        None => EventRules::TRACK,
    };
    // The project must be known before the events are checked against its dictionary, so a
    // first pass reads the tokens the events carry. A body of a few events (nearly every
    // tracking request) is checked once, on this task, and those checks are stored: handing it to
    // the blocking pool and back cost more than reading it. A larger one has its tokens read on
    // the blocking pool, and is checked again as an import is.
    let (body, format, now) = (records.bytes.clone(), records.format, now_ms());
    let config = state.config.clone();
    let (tokens, checked) = match body.len() <= INLINE_BYTES {
        true => {
            let checked = check_body(&body, format, &rules, &config.limits, now).map_err(&refuse)?;
            (body_tokens(&checked).map_err(&refuse)?, Some(checked))
        }
        false => {
            let body = body.clone();
            let tokens = tokio::task::spawn_blocking(move || event_tokens(&body, format, &rules, &config.limits, now))
                .await
                .map_err(|e| refuse(ApiError::Internal(e.into())))?;
            (tokens.map_err(&refuse)?, None)
        }
    };
    let (known, versions) = token_projects_versioned(&state, tokens.clone()).await.map_err(&refuse)?;
    let Some(project_id) = records_project(caller, &tokens, &known) else {
        let found = match tokens.len() {
            0 => "no event carries `properties.token`".to_owned(),
            n => format!("the {n} `properties.token` value(s) of the events name no project"),
        };
        let message = format!(
            "{found}; give each event the project token as `properties.token` (or send /track with the project token as the Basic user name)"
        );
        return Err(refuse(ApiError::Unauthorized(message)));
    };
    charge(&state, project_id, records.bytes.len()).await.map_err(&refuse)?;
    let dictionary_version = versions.get(&project_id).copied();
    let intake = Intake { rules, ip: received.ip, tokens: Some(Tokens { project_id, known }), route: "track", dictionary_version, ..Intake::default() };
    let checked = match checked {
        Some(checked) => store_checked(&state, project_id, &body, checked, now, intake).await,
        None => store_events(&state, project_id, records.bytes, records.format, intake).await,
    }
    .map_err(&refuse)?;
    let tally = Tally { records: checked.records, stored: checked.stored + checked.dropped, failed: checked.failed, noun: "event", verb: "stored" };
    Ok(answer_batch(&received.style, tally))
}
