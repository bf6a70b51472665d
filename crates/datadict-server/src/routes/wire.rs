//! The wire formats of the ingestion routes over HTTP (issue 19): a request read and decoded by
//! the core's `wire::decode_request` into its parameters and records ([`receive`]), the style of
//! its answer ([`Style`]), and its answers and refusals in that style ([`answer_batch`],
//! [`Refused`]).
//!
//! The style (ARCHITECTURE.md says the same):
//! - `img=1`, `callback=NAME` or `verbose=1` get the tracking answer they ask for (the pixel, the
//!   script call, `{"status":1,"error":null}` or `{"status":0,"error":"..."}`) on every route:
//!   server-side libraries that send forms send `verbose=1` to `/import` too, and read `status`.
//! - Otherwise `/track` answers `1` or `0` (reference).
//! - `/import` answers the import's JSON bodies (`{"code","num_records_imported","status"}`, and
//!   `failed_records`) whatever its framing, form or JSON: libraries that send it forms without
//!   `verbose` read `num_records_imported` and `failed_records`.
//! - `/engage` and `/groups` answer the import's bodies to a JSON or NDJSON body or to `strict=1`
//!   (the bulk dialect this server has always answered so, and the reference's strict mode, "a
//!   JSON object with per-record error messages"), and `1` or `0` to a form or a `GET`.
//! - A bad value of a parameter that picks the answer is refused in an answer that says why:
//!   `verbose=2` and `img=yes` in the verbose JSON (the core's `Params`), `strict=2` on `/engage`
//!   and `/groups` in the import's body.
//!
//! Whatever the style, an answer never claims what was not stored: a tracking answer is `1` only
//! when every record was stored, and a batch of which nothing was stored is never a 200.

use crate::auth::IngestCaller;
use crate::error::ApiError;
use crate::routes::ingest::{batch_response, read_raw, IngestError};
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Request};
use axum::http::{header, HeaderMap, HeaderValue, Method as HttpMethod, StatusCode};
use axum::response::{IntoResponse, Response};
use datadict_core::request::Method;
use datadict_core::wire::{self, AnswerKind, Carrier, Outcome, Params, Route, WireError, WireRequest};
use datadict_core::{FailedRecord, InputFormat};
use std::borrow::Cow;
use std::net::SocketAddr;

/// The query parameters of the ingestion routes (reference), for their OpenAPI operations. The
/// handlers read them with the core's wire rules (`receive`), from a form body as well, where
/// the form body wins; each is refused when given twice in one place.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
// Never built: it only describes the parameters.
#[allow(dead_code)]
pub struct WireQuery {
    /// The records, as JSON or base64 JSON, URL-encoded: how a `GET` (a beacon, a pixel) sends
    /// them. A request's path and query are at most 65,534 bytes (a longer one gets an empty
    /// 414 from the HTTP library): send more in a `POST` body.
    data: Option<String>,
    /// `1`: answer `{"status":1,"error":null}` or `{"status":0,"error":"..."}`. A value other
    /// than `0` or `1` is a 400 answered so, saying what is allowed.
    verbose: Option<u8>,
    /// `1`: answer a 1x1 transparent GIF (it wins over `callback` and `verbose`). A value other
    /// than `0` or `1` is a 400 in the verbose JSON (a pixel could not say why).
    img: Option<u8>,
    /// Answer `text/javascript` calling this function with the answer, always with 200 (a plain
    /// name such as `app.onTracked`; anything else is refused as JSON and never echoed).
    callback: Option<String>,
    /// `1`: on `/track` and `/import`, the connection's address becomes `properties.ip` of events
    /// without one, and events without `distinct_id` get one hashed from it; accepted without
    /// effect on `/engage` and `/groups` (no geolocation here).
    ip: Option<u8>,
    /// `1`: a 400 listing every invalid record (the valid ones are still stored) in the import's
    /// body; on `/engage` and `/groups` it asks for that body, in which a value other than `0`
    /// or `1` is refused (400).
    strict: Option<u8>,
    /// The project, with service-account credentials (every route requires it then); may be a
    /// form field, like the others.
    project_id: Option<i64>,
}

/// How a request is answered (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Style {
    /// The import's JSON bodies; `strict` lists every failed record in a 400.
    Import { strict: bool },
    /// `1`/`0`, `{"status","error"}`, the pixel or a `callback` call.
    Tracking(AnswerKind),
}

impl Style {
    fn of(route: Route, params: &Params, json_body: bool) -> Self {
        let strict = params.strict == Some(true);
        match (&params.answer, route) {
            (AnswerKind::Text, Route::Import) => Self::Import { strict },
            (AnswerKind::Text, Route::Engage | Route::Groups) if strict || json_body => Self::Import { strict },
            (kind, _) => Self::Tracking(kind.clone()),
        }
    }

    /// Whether this is a tracking answer (whose refusals say what to do in words of their own,
    /// rather than the ingestion API's fixed ones).
    pub fn is_tracking(&self) -> bool {
        matches!(self, Self::Tracking(_))
    }
}

/// The records of a request: the JSON text and how it is framed.
#[derive(Debug, Clone)]
pub struct Records {
    pub bytes: Bytes,
    pub format: InputFormat,
}

/// An ingestion request as read.
#[derive(Debug)]
pub struct Received {
    pub params: Params,
    pub style: Style,
    /// The connection's address, when the request asked for it (`ip=1`) and the server knows it.
    pub ip: Option<String>,
    /// The records, or why there are none to read (the body over the limit, bad gzip, or a wire
    /// format refused by the core).
    pub records: Result<Records, ApiError>,
}

/// Reads a request of `route` to its end (within `max_bytes` uncompressed), and decodes it with
/// the core's wire rules. The parameters are read even when the records cannot be, so that a
/// refusal is written the way the client asked.
pub async fn receive(route: Route, request: Request, max_bytes: usize) -> Received {
    let (parts, body) = request.into_parts();
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    // axum answers `HEAD` with the `GET` route; neither has a body.
    let get = matches!(parts.method, HttpMethod::GET | HttpMethod::HEAD);
    let body = if get { Ok(Bytes::new()) } else { read_raw(&parts.headers, body, max_bytes).await.decode().await };
    let (bytes, unreadable) = match body {
        Ok(bytes) => (bytes, None),
        Err(e) => (Bytes::new(), Some(e)),
    };
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let request = WireRequest {
        route,
        method: if get { Method::Get } else { Method::Post },
        content_type,
        query: parts.uri.query().unwrap_or_default(),
        body: &bytes,
    };
    let decoded = wire::decode_request(&request);
    let json_body = match &decoded.payload {
        Ok(payload) => payload.carrier == Carrier::JsonBody,
        Err(_) => content_type.is_some_and(|t| t.to_ascii_lowercase().contains("json")),
    };
    let mut style = Style::of(route, &decoded.params, json_body);
    // A bad `strict` where `strict=1` asks for the import's body (`/engage`, `/groups`) is refused
    // in that body, which says why, as the core refuses a bad `verbose` in the verbose JSON.
    let bad_strict = matches!(&decoded.payload, Err(WireError::BadFlag { name: wire::param::STRICT, .. }));
    if bad_strict && matches!(route, Route::Engage | Route::Groups) && style == Style::Tracking(AnswerKind::Text) {
        style = Style::Import { strict: true };
    }
    let ip = peer.filter(|_| decoded.params.ip == Some(true)).map(|ip| ip.to_string());
    let records = match (unreadable, decoded.payload) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(refusal_of(e)),
        (None, Ok(payload)) => Ok(Records { bytes: share(&bytes, payload.bytes), format: payload.format }),
    };
    Received { params: decoded.params, style, ip, records }
}

/// `caller`'s project for a request's parameters ([`IngestCaller::project`]), and the records, in
/// the order their problems are told: the project's (a `project_id` given twice or not UTF-8, a
/// missing or malformed one, no role: the credentials' answers, as when they were judged before
/// the body), then the records'. Except that a request without `project_id` whose records cannot
/// be read is told about them first, since its `project_id` may be in what could not be read.
pub async fn project_and_records(
    state: &AppState,
    caller: &IngestCaller,
    params: &Params,
    records: Result<Records, ApiError>,
) -> Result<(i64, Records), ApiError> {
    let asked = match &params.project_id {
        Some(Ok(raw)) => Some(raw.as_str()),
        Some(Err(e)) => return Err(refusal_of(e.clone())),
        None => match records {
            Err(e) => return Err(e),
            Ok(_) => None,
        },
    };
    let project_id = caller.project(state, asked).await?;
    Ok((project_id, records?))
}

/// [`project_and_records`] on a route whose `Authorization` header is optional (the tracking
/// routes): without one, no project yet (the records' tokens name it) and the records as read.
pub async fn caller_project_and_records(
    state: &AppState,
    caller: Option<&IngestCaller>,
    params: &Params,
    records: Result<Records, ApiError>,
) -> Result<(Option<i64>, Records), ApiError> {
    match caller {
        Some(caller) => project_and_records(state, caller, params, records).await.map(|(project_id, records)| (Some(project_id), records)),
        None => Ok((None, records?)),
    }
}

/// The API error of a wire-format refusal: 415 for a body type that is not read, else 400.
fn refusal_of(e: WireError) -> ApiError {
    match e.status_code() {
        415 => ApiError::UnsupportedMediaType(e.to_string()),
        _ => ApiError::BadRequest(e.to_string()),
    }
}

/// The records as a `Bytes`: a slice of the body when they are part of it (a JSON body, or a
/// `data` value that needed no decoding), without a copy.
fn share(body: &Bytes, records: Cow<'_, [u8]>) -> Bytes {
    match records {
        Cow::Owned(v) => Bytes::from(v),
        Cow::Borrowed(s) => {
            let within = body.as_ptr_range();
            let range = s.as_ptr_range();
            if !s.is_empty() && within.start <= range.start && range.end <= within.end {
                body.slice_ref(s)
            } else {
                // From the query string.
                Bytes::copy_from_slice(s)
            }
        }
    }
}

/// A refusal, written in the style the request asked for.
#[derive(Debug)]
pub struct Refused {
    pub style: Style,
    pub error: ApiError,
}

impl Refused {
    /// A closure that turns an error into this style's refusal, for `map_err`.
    pub fn with(style: &Style) -> impl Fn(ApiError) -> Self + '_ {
        move |error| Self { style: style.clone(), error }
    }
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self.style {
            Style::Import { .. } => IngestError(self.error).into_response(),
            Style::Tracking(kind) => {
                if let ApiError::Internal(err) = &self.error {
                    tracing::error!("internal error: {err:#}");
                }
                let message = self.error.to_string();
                let outcome = Outcome::Failure { status: self.error.status_code().as_u16(), message: &message };
                let mut response = tracking(&kind, outcome);
                self.error.add_headers(&mut response);
                response
            }
        }
    }
}

/// Room for every header of a tracking answer: its own two, the tracking CORS headers and the
/// security headers (`hosting`), 10 or 11 in all. A map grown from empty allocated three times
/// on the way (DHAT).
const TRACKING_HEADERS: usize = 16;

/// A tracking answer as an HTTP response. Never cached: a pixel or a beacon fetched from a cache
/// would not be tracked.
fn tracking(kind: &AnswerKind, outcome: Outcome<'_>) -> Response {
    let answer = wire::answer(kind, outcome);
    let mut response = Response::new(axum::body::Body::from(answer.body));
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_REQUEST);
    let headers = response.headers_mut();
    *headers = HeaderMap::with_capacity(TRACKING_HEADERS);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(answer.content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// What a batch did: its records, how many were stored (or applied), and every problem of those
/// that were not.
#[derive(Debug)]
pub struct Tally {
    pub records: usize,
    pub stored: usize,
    pub failed: Vec<FailedRecord>,
    /// What a record is (`event`, `update`) and what storing one is (`stored`, `applied`).
    pub noun: &'static str,
    pub verb: &'static str,
}

/// The answer of a batch. The import's bodies count what was stored ([`batch_response`]). A
/// tracking answer is `1` only when every record was stored; otherwise (some or none were, the
/// others were refused) it is `0` with a 400, and its message says how many were stored and why
/// the others were not: `stored 2 of 3 events; event 1: ...` (indexes from 0, as in
/// `failed_records`).
pub fn answer_batch(style: &Style, tally: Tally) -> Response {
    match style {
        Style::Import { strict } => batch_response(tally.stored, tally.failed, *strict),
        Style::Tracking(kind) if tally.stored == tally.records && tally.failed.is_empty() => tracking(kind, Outcome::Success),
        Style::Tracking(kind) => tracking(kind, Outcome::Failure { status: 400, message: &summary(&tally) }),
    }
}

/// At most this many problems are spelled out in a tracking answer's message.
const PROBLEMS_TOLD: usize = 5;

fn summary(tally: &Tally) -> String {
    let Tally { records, stored, noun, verb, .. } = *tally;
    let mut out = format!("{verb} {stored} of {records} {noun}s");
    for f in tally.failed.iter().take(PROBLEMS_TOLD) {
        out.push_str(&format!("; {noun} {}: {}", f.index, f.message));
    }
    if tally.failed.len() > PROBLEMS_TOLD {
        out.push_str(&format!("; and {} more problems (send `strict=1` for the whole list)", tally.failed.len() - PROBLEMS_TOLD));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(answer: AnswerKind, strict: Option<bool>) -> Params {
        Params { answer, strict, ..Params::default() }
    }

    /// The style table of the module documentation, row by row.
    #[test]
    fn the_style_follows_the_route_the_framing_and_the_parameters() {
        use Route::*;
        let text = || params(AnswerKind::Text, None);
        let import = |strict| Style::Import { strict };
        let tracking = |kind| Style::Tracking(kind);
        assert_eq!(Style::of(Import, &text(), false), import(false));
        assert_eq!(Style::of(Import, &params(AnswerKind::Text, Some(true)), true), import(true));
        assert_eq!(Style::of(Import, &params(AnswerKind::Verbose, None), false), tracking(AnswerKind::Verbose));
        assert_eq!(Style::of(Track, &text(), true), tracking(AnswerKind::Text));
        assert_eq!(Style::of(Track, &params(AnswerKind::Text, Some(true)), true), tracking(AnswerKind::Text));
        assert_eq!(Style::of(Track, &params(AnswerKind::Pixel, None), false), tracking(AnswerKind::Pixel));
        for route in [Engage, Groups] {
            assert_eq!(Style::of(route, &text(), true), import(false));
            assert_eq!(Style::of(route, &text(), false), tracking(AnswerKind::Text));
            assert_eq!(Style::of(route, &params(AnswerKind::Text, Some(true)), false), import(true));
            assert_eq!(Style::of(route, &params(AnswerKind::Verbose, Some(true)), true), tracking(AnswerKind::Verbose));
        }
    }

    #[test]
    fn a_partial_batch_says_what_was_stored_and_why_not_the_rest() {
        let failed = (0..7).map(|i| FailedRecord { index: i + 1, insert_id: String::new(), field: "f".into(), message: format!("problem {i}") }).collect();
        let tally = Tally { records: 9, stored: 2, failed, noun: "event", verb: "stored" };
        assert_eq!(
            summary(&tally),
            "stored 2 of 9 events; event 1: problem 0; event 2: problem 1; event 3: problem 2; event 4: problem 3; event 5: problem 4; and 2 more problems (send `strict=1` for the whole list)"
        );
    }
}
