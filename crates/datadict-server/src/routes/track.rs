//! `POST`/`GET /track` (reference, issue 19): events as tracking libraries send them, one event
//! object or an array, in every wire format of `routes::wire` (JSON, gzipped or not; a form or
//! `GET` with `data=` holding JSON or base64 JSON), answered `1`/`0` or as `verbose`, `img` and
//! `callback` ask.
//!
//! Authentication: the project token in each event's `properties.token`, without an
//! `Authorization` header (reference); a server-side sender may instead authenticate as on
//! `/import` (the project token as Basic user name, or a service account with `project_id`), and
//! its events may then leave the token out. Events naming another project's token, or a token of
//! no project, are refused one by one; a request none of whose events names a project is a 401,
//! unless some of its events cannot be read or break other rules: it is then answered as a batch
//! of which nothing was stored (400), with every problem.
//!
//! Rules: the core's [`EventRules::TRACK`]: `time` optional (absent, the server's clock; later
//! than it, set to it), `distinct_id` and `$insert_id` optional (an event without `$insert_id`
//! cannot be de-duplicated: every copy is stored). Every other import rule applies unchanged,
//! through the checks and the event writer of `/import` (`ingest::check_body`, then
//! `ingest::send_checked` with the project's dictionary): limits, forbidden ids, truncation, the
//! dictionary's drops, de-duplication. Each body is checked once. With `ip=1` the connection's
//! address becomes the event's `ip` unless it has one. The token is not stored with the event.
//!
//! A batch with invalid events stores the valid ones and answers `0` (400), or with `verbose=1`
//! `{"status":0,"error":"stored 2 of 3 events; event 1: ..."}`: the answer never claims a
//! success that did not wholly happen.

use crate::auth::{records_project, token_projects_versioned, IngestCaller};
use crate::error::ApiError;
use crate::ingest::batch::unknown_token;
use crate::ingest::{body_tokens, check_body, now_ms, send_checked, Checked, Intake, Tokens, INLINE_BYTES};
use crate::routes::ingest::{charge, IngestError};
use crate::routes::responses::{EventsTracked, TrackingRefusals};
use crate::routes::wire::{answer_batch, caller_project_and_records, receive, Refused, Tally, WireQuery};
use crate::store::PendingInsert;
use crate::AppState;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::post;
use datadict_core::event::{Presence, TokenField};
use datadict_core::wire::Route;
use datadict_core::{ClientIp, EventRules, FailedRecord, ImportBodyCheck, InputFormat};
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
    let (caller, records) = caller_project_and_records(&state, caller.as_ref(), &received.params, received.records).await.map_err(&refuse)?;
    // A request authenticated by its header may leave the token out of its events.
    let rules = match caller {
        Some(_) => EventRules { token: TokenField::Credential(Presence::Optional), ..EventRules::TRACK },
        None => EventRules::TRACK,
    };
    let (body, format, ip) = (records.bytes, records.format, received.ip);
    // A body of a few events (nearly every tracking request) is read on this task: handing it to
    // the blocking pool and back cost more than reading it. A larger one (a batching library's
    // flush) is read on the blocking pool, up to handing its events to the event writer.
    let sent = match body.len() <= INLINE_BYTES {
        true => send_events(&state, caller, rules, ip, &body, format).await,
        false => {
            let runtime = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || runtime.block_on(send_events(&state, caller, rules, ip, &body, format)))
                .await
                .unwrap_or_else(|e| Err(ApiError::Internal(e.into())))
        }
    };
    let (checked, pending) = sent.map_err(&refuse)?;
    // The answer waits for the commit: what it counts as stored is on disk.
    if let Some(pending) = pending {
        pending.wait().await.map_err(|e| refuse(e.into()))?;
    }
    let tally = Tally { records: checked.records, stored: checked.stored + checked.dropped, failed: checked.failed, noun: "event", verb: "stored" };
    Ok(answer_batch(&received.style, tally))
}

/// Checks the events of `body` once under `rules`, finds their project (`caller`, the project of
/// the request's `Authorization` header, or the one whose token they carry: it must be known
/// before they are checked against its dictionary), charges it, and hands them to the event
/// writer; returns what was checked and the commit to wait for (none when no project was found
/// and nothing was sent, see [`without_project`]).
async fn send_events(
    state: &AppState,
    caller: Option<i64>,
    rules: EventRules,
    ip: Option<String>,
    body: &[u8],
    format: InputFormat,
) -> Result<(Checked, Option<PendingInsert>), ApiError> {
    let now = now_ms();
    let checked = check_body(body, format, &rules, &state.config.limits, now)?;
    let tokens = body_tokens(&checked)?;
    let (known, versions) = token_projects_versioned(state, tokens.clone()).await?;
    let Some(project_id) = records_project(caller, &tokens, &known) else {
        return without_project(checked, tokens.len()).map(|checked| (checked, None));
    };
    charge(state, project_id, body.len()).await?;
    let dictionary_version = versions.get(&project_id).copied();
    let intake = Intake { rules, ip: ip.map(ClientIp::new), tokens: Some(Tokens { project_id, known }), route: "track", dictionary_version, ..Intake::default() };
    let (checked, pending) = send_checked(state, project_id, body, checked, now, intake).await?;
    Ok((checked, Some(pending)))
}

/// The answer to events none of which names a project, in a request without an `Authorization`
/// header (which would name one); `tokens` is how many distinct tokens they carry.
///
/// When every event was read and only tokens are missing or wrong, the request lacks
/// credentials: 401. When some events cannot be read (not JSON, not UTF-8, nested too deep) or
/// break other rules, a 401 would blame the credentials for what the sender must fix first, and a
/// token inside an event that cannot be read is not seen at all: the events are then a batch of
/// which nothing was stored (a 400), with every problem, the tokens that name no project included.
fn without_project(checked: ImportBodyCheck<'_>, tokens: usize) -> Result<Checked, ApiError> {
    const TOKEN: &str = "properties.token";
    if checked.failed_records.iter().all(|f| f.field == TOKEN) {
        let found = match tokens {
            0 => "no event carries `properties.token`".to_owned(),
            n => format!("the {n} `properties.token` value(s) of the events name no project"),
        };
        let message = format!(
            "{found}; give each event the project token as `properties.token` (or send /track with the project token as the Basic user name)"
        );
        return Err(ApiError::Unauthorized(message));
    }
    let mut failed = checked.failed_records;
    // Without a header every valid event carries a token (the rules require one), of no project.
    let strangers = checked.records.iter().filter(|r| r.check.is_valid() && r.check.token.is_some());
    failed.extend(strangers.map(|r| FailedRecord {
        index: r.record.pos.index as usize,
        insert_id: r.check.insert_id.as_deref().unwrap_or_default().to_owned(),
        field: TOKEN.into(),
        message: unknown_token(TOKEN),
    }));
    // Stable: a record's problems keep their order.
    failed.sort_by_key(|f| f.index);
    Ok(Checked { records: checked.records.len(), failed, ..Checked::default() })
}
