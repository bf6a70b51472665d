//! The OpenAPI error answers that many operations share, each written once and listed in an
//! operation's `responses(...)` by type: the refusals of the auth extractors (401 and 403, by the
//! role an operation needs), the schemas rate limit (429), the ingestion API's shared answers
//! (401, 403, 413, 415, 429 in its own body), and those of the tracking routes (the same, and 400,
//! as `0` or in the body the request asked for); every one that writes lists the store's 503.
//! The tracking routes' 200s, which their `POST` and `GET` share, are here too.
//! The served `/openapi.json` still lists every one of them under each operation.

use std::collections::BTreeMap;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::Content;
use utoipa::openapi::{ContentBuilder, RefOr, Response, ResponseBuilder};
use utoipa::IntoResponses;

type Responses = BTreeMap<String, RefOr<Response>>;

/// An answer with a JSON object body (the error body of the API it belongs to).
fn json_object(description: &str) -> RefOr<Response> {
    let content = ContentBuilder::new().schema(Some(ObjectBuilder::new().schema_type(Type::Object))).build();
    ResponseBuilder::new().description(description).content("application/json", content).build().into()
}

fn responses(list: &[(&str, &str)]) -> Responses {
    list.iter().map(|(status, description)| ((*status).to_owned(), json_object(description))).collect()
}

const UNAUTHORIZED: (&str, &str) = ("401", "missing or invalid credentials");
const FORBIDDEN_READ: (&str, &str) = ("403", "valid credentials without a role in the project (or the project does not exist)");
const FORBIDDEN_WRITE: (&str, &str) =
    ("403", "valid credentials without an owner or admin role in the project (or the project does not exist)");
const WRITES_REFUSED: (&str, &str) =
    ("503", "the server takes no writes: an fsync of its database log failed, and it must be restarted; the error says why");
const SCHEMAS_READ_LIMITED: (&str, &str) = ("429", "the project's schemas rate limit is reached; see `Retry-After`");
const SCHEMAS_WRITE_LIMITED: (&str, &str) = (
    "429",
    "the project's schemas rate limit is reached, or (for a create or replace) its events+properties update budget; nothing is written; see `Retry-After`",
);

/// The refusals of [`ProjectRead`](crate::auth::ProjectRead): 401 and 403.
pub struct ReadRefusals;

impl IntoResponses for ReadRefusals {
    fn responses() -> Responses {
        responses(&[UNAUTHORIZED, FORBIDDEN_READ])
    }
}

/// The refusals of [`ProjectWrite`](crate::auth::ProjectWrite): 401 and 403, and the store's
/// refusal of writes (503).
pub struct WriteRefusals;

impl IntoResponses for WriteRefusals {
    fn responses() -> Responses {
        responses(&[UNAUTHORIZED, FORBIDDEN_WRITE, WRITES_REFUSED])
    }
}

/// The refusals of a schemas read: those of [`ReadRefusals`] and the schemas rate limit.
pub struct SchemasReadRefusals;

impl IntoResponses for SchemasReadRefusals {
    fn responses() -> Responses {
        responses(&[UNAUTHORIZED, FORBIDDEN_READ, SCHEMAS_READ_LIMITED])
    }
}

/// The refusals of a schemas write: those of [`WriteRefusals`] and the schemas rate limits.
pub struct SchemasWriteRefusals;

impl IntoResponses for SchemasWriteRefusals {
    fn responses() -> Responses {
        responses(&[UNAUTHORIZED, FORBIDDEN_WRITE, SCHEMAS_WRITE_LIMITED, WRITES_REFUSED])
    }
}

/// What `/import` and `/engage` answer besides their own 200 and 400, in the ingestion API's body
/// (`{"code","error","status"}`): the refusals of [`IngestCaller`](crate::auth::IngestCaller), the
/// request limits and the ingestion rate limit.
pub struct IngestRefusals;

impl IntoResponses for IngestRefusals {
    fn responses() -> Responses {
        responses(&[
            ("401", "`{\"code\":401,\"error\":\"Invalid credentials\",\"status\":\"Unauthorized\"}`"),
            ("403", "valid credentials without a write role in the project, or another project's token"),
            ("413", "over the request limits (records per request, uncompressed bytes)"),
            ("415", "a `Content-Encoding` other than gzip"),
            ("429", "the project's ingestion rate limit is reached; see `Retry-After`"),
            WRITES_REFUSED,
        ])
    }
}

/// A tracking route's answer: `status` (`1` or `0`) as text, or a JSON body (the verbose
/// `{"status":...,"error":...}`, or the import's body on `/engage` and `/groups` with a JSON body
/// or `strict=1`), or the pixel or script the request asked for.
fn tracking(description: &str, status: u8) -> RefOr<Response> {
    let text = ContentBuilder::new().schema(Some(ObjectBuilder::new().schema_type(Type::Integer).enum_values(Some([status])))).build();
    let json = ContentBuilder::new().schema(Some(ObjectBuilder::new().schema_type(Type::Object))).build();
    let other = || Content::new(Some(ObjectBuilder::new().schema_type(Type::String)));
    ResponseBuilder::new()
        .description(description)
        .content("text/plain", text)
        .content("application/json", json)
        .content("image/gif", other())
        .content("text/javascript", other())
        .build()
        .into()
}

/// What `/track`, `/engage` and `/groups` answer besides their 200, in the style the request
/// asked for (`routes::wire`): `0` (or the verbose JSON, the pixel, or a `callback` call, which
/// is always a 200 so that the page's script runs), with the reason in the JSON's `error`.
pub struct TrackingRefusals;

impl IntoResponses for TrackingRefusals {
    fn responses() -> Responses {
        [
            ("400", "a body that cannot be read as records (the error says what was found and what to send), a bad parameter, or some records refused: the valid ones are stored and the error says how many (`stored 2 of 3 events; event 1: ...`); also when no record names a project but some cannot be read (not JSON, not UTF-8) or break other rules, with every problem"),
            ("401", "every record was read and none names a project's token (`properties.token`, `$token`), or wrong `Authorization` credentials"),
            ("403", "valid credentials without a write role in the project, or another project's token"),
            ("413", "over the request limits (records per request, uncompressed bytes)"),
            ("415", "a `Content-Type` or `Content-Encoding` that is not read"),
            ("429", "the project's ingestion rate limit is reached; see `Retry-After`"),
            WRITES_REFUSED,
        ]
        .into_iter()
        .map(|(status, description)| (status.to_owned(), tracking(description, 0)))
        .collect()
    }
}

/// The 200 of `/track`.
pub struct EventsTracked;

impl IntoResponses for EventsTracked {
    fn responses() -> Responses {
        let description = "every event was stored: `1`, or what `verbose`, `img` or `callback` ask for";
        [("200".to_owned(), tracking(description, 1))].into()
    }
}

/// The 200 of `/engage` and `/groups`.
pub struct ProfilesUpdated;

impl IntoResponses for ProfilesUpdated {
    fn responses() -> Responses {
        let description = "every update was applied: `1` (a form or `GET`), `{\"code\":200,\"num_records_imported\":N,\"status\":\"OK\"}` (a JSON body or `strict=1`), or what `verbose`, `img` or `callback` ask for";
        [("200".to_owned(), tracking(description, 1))].into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared answers are the same JSON as an annotation's own `body = Object`.
    #[test]
    fn a_shared_answer_reads_as_an_annotated_one() {
        let json = serde_json::to_value(&ReadRefusals::responses()["401"]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"description": "missing or invalid credentials", "content": {"application/json": {"schema": {"type": "object"}}}})
        );
    }
}
