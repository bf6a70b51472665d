//! What `/import` and `/engage` share: their error body (`{"code","error","status"}` as the
//! ingestion API writes it, FACTS.md), authentication by service account or project token,
//! reading a possibly gzipped body within the size limit, and splitting it into records.

use crate::auth::{authorize, basic_credentials, hash_secret, Access};
use crate::error::ApiError;
use crate::ratelimit::{Kind, Limit};
use crate::store;
use crate::AppState;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::io::Read;
use std::ops::Range;

// FACTS.md's 401 and 429 messages are kept word for word (capitalised, with a period), against
// this project's message style, because clients of the service match on them.
use datadict_core::api::import_status::{self, INVALID_CREDENTIALS, RATE_LIMITED};
use datadict_core::{FailedRecord, ImportResponse};

/// An error of the ingestion API, written as `{"code":N,"error":"...","status":"<reason>"}`.
#[derive(Debug)]
pub struct IngestError(pub ApiError);

impl From<ApiError> for IngestError {
    fn from(err: ApiError) -> Self {
        Self(err)
    }
}

impl From<anyhow::Error> for IngestError {
    fn from(err: anyhow::Error) -> Self {
        Self(ApiError::Internal(err))
    }
}

impl IntoResponse for IngestError {
    fn into_response(self) -> Response {
        let status = self.0.status_code();
        if let ApiError::Internal(err) = &self.0 {
            tracing::error!("internal error: {err:#}");
        }
        let word = match status {
            StatusCode::BAD_REQUEST => import_status::BAD_REQUEST,
            StatusCode::UNAUTHORIZED => import_status::UNAUTHORIZED,
            StatusCode::PAYLOAD_TOO_LARGE => import_status::PAYLOAD_TOO_LARGE,
            StatusCode::TOO_MANY_REQUESTS => import_status::TOO_MANY_REQUESTS,
            other => other.canonical_reason().unwrap_or("Error"),
        };
        let body = ImportResponse {
            code: status.as_u16(),
            error: Some(self.0.to_string()),
            failed_records: None,
            num_records_imported: None,
            status: word.to_owned(),
        };
        let mut response = (status, Json(body)).into_response();
        self.0.add_headers(&mut response);
        response
    }
}

/// Finds the project of an ingestion request: Basic auth with a service account that may write to
/// `project_id`, or with the project token as user name and an empty password (FACTS.md).
pub async fn authorize_ingest(
    state: &AppState,
    headers: &HeaderMap,
    project_id: Option<&str>,
) -> Result<i64, ApiError> {
    let project_id = project_id.map(crate::routes::parse_project_id).transpose()?;
    let (user, secret) = basic_credentials(headers)?;
    if secret.is_empty() {
        let hash = hash_secret(&user);
        let found = state.store.read(move |conn| store::project_by_token_hash(conn, &hash)).await?;
        let Some(token_project) = found else {
            return Err(ApiError::Unauthorized(INVALID_CREDENTIALS.into()));
        };
        if let Some(asked) = project_id.filter(|p| *p != token_project) {
            return Err(ApiError::Forbidden(format!(
                "the project token is not the token of project {asked}; send that project's token or leave out `project_id`"
            )));
        }
        return Ok(token_project);
    }
    let Some(project_id) = project_id else {
        return Err(ApiError::BadRequest(
            "`project_id` is required with service account credentials; add `?project_id=<id>` to the URL".into(),
        ));
    };
    match authorize(state, headers, project_id, Access::Write).await {
        Err(ApiError::Unauthorized(_)) => Err(ApiError::Unauthorized(INVALID_CREDENTIALS.into())),
        other => other.map(|_| project_id),
    }
}

/// Charges `bytes` to the project's ingestion budget (FACTS.md: about 2 GB a minute).
pub fn charge(state: &AppState, project_id: i64, bytes: usize) -> Result<(), ApiError> {
    let Some(per_minute) = state.config.ingest_rate_limit else { return Ok(()) };
    state
        .config
        .rate_limiter
        .check(Kind::IngestBytes, project_id, Limit { per_minute }, bytes as u64)
        .map_err(|wait| ApiError::rate_limited(RATE_LIMITED, wait))
}

/// Reads the request body, gunzipping it when `Content-Encoding: gzip`, and refuses bodies whose
/// uncompressed size is over `max_bytes` (413) without ever holding more than that in memory.
pub async fn read_body(headers: &HeaderMap, body: Body, max_bytes: usize) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::PayloadTooLarge(format!(
            "request exceeds max limit of {max_bytes} bytes; split the data into smaller requests"
        ))
    };
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
        .unwrap_or_default();
    let gzipped = match encoding.as_str() {
        "" | "identity" => false,
        "gzip" | "x-gzip" => true,
        other => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "`Content-Encoding: {other}` is not supported; send the body as is or gzipped with `Content-Encoding: gzip`"
            )))
        }
    };
    // A gzip body is at most a little larger than its content, so the same limit (with a margin
    // for headers of incompressible data) bounds the compressed body too.
    let raw_limit = if gzipped { max_bytes + max_bytes / 64 + 1024 } else { max_bytes };
    let raw = read_limited(body, raw_limit).await?.ok_or_else(too_large)?;
    if !gzipped {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity((raw.len() * 4).min(max_bytes + 1));
    let mut decoder = flate2::read::MultiGzDecoder::new(&raw[..]).take(max_bytes as u64 + 1);
    decoder.read_to_end(&mut out).map_err(|e| {
        ApiError::BadRequest(format!(
            "the body is not valid gzip ({e}); compress the whole body with gzip, or drop `Content-Encoding: gzip`"
        ))
    })?;
    if out.len() > max_bytes {
        return Err(too_large());
    }
    Ok(Bytes::from(out))
}

/// Reads a body of at most `limit` bytes (`None` when it is larger). A larger body is still read
/// to its end, up to [`DRAIN_LIMIT`], and discarded: answering 413 while the client is still
/// sending would make it see a broken connection instead of the answer.
async fn read_limited(body: Body, limit: usize) -> Result<Option<Bytes>, ApiError> {
    use http_body_util::BodyExt;
    let mut body = body;
    let mut buf = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::BadRequest(format!("cannot read the request body ({e}); send it again")))?;
        let Ok(data) = frame.into_data() else { continue };
        seen += data.len();
        if seen <= limit {
            buf.extend_from_slice(&data);
        } else if seen > DRAIN_LIMIT {
            break;
        }
    }
    Ok((seen <= limit).then(|| Bytes::from(buf)))
}

/// How much of an over-limit body is read and discarded before the connection is given up.
pub const DRAIN_LIMIT: usize = 256 * 1024 * 1024;

/// Splits a body into the byte ranges of its records: a JSON array of values, or NDJSON (one
/// value per line; blank lines are skipped). The records themselves are not parsed here: each is
/// checked on its own, so one bad record does not hide the others. Only a body whose framing is
/// broken (an unclosed array, a cut string) is refused as a whole.
pub fn split_records(body: &[u8]) -> Result<Vec<Range<usize>>, String> {
    let start = skip_ws(body, 0);
    if start == body.len() {
        return Err("the body is empty; send a JSON array of records or one JSON record per line".into());
    }
    if body[start] != b'[' {
        if std::str::from_utf8(body).is_err() {
            return Err("the body is not UTF-8 text; send JSON encoded in UTF-8".into());
        }
        let mut out = Vec::new();
        let mut line_start = 0;
        for (i, b) in body.iter().enumerate().chain(std::iter::once((body.len(), &b'\n'))) {
            if *b == b'\n' {
                let (s, e) = trim(body, line_start, i);
                if s < e {
                    out.push(s..e);
                }
                line_start = i + 1;
            }
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    let mut i = skip_ws(body, start + 1);
    if body.get(i) == Some(&b']') {
        return finish(body, i + 1, out);
    }
    loop {
        let end = scan_value(body, i)?;
        out.push(i..end);
        i = skip_ws(body, end);
        match body.get(i) {
            Some(b',') => i = skip_ws(body, i + 1),
            Some(b']') => return finish(body, i + 1, out),
            Some(&c) => {
                return Err(format!(
                    "unexpected `{}` after record {} at byte {i}; separate the records of the array with commas",
                    char::from(c).escape_default(),
                    out.len() - 1
                ))
            }
            None => return Err(format!("the array ends after record {} without `]`; the body is cut short", out.len() - 1)),
        }
    }
}

fn finish(body: &[u8], i: usize, out: Vec<Range<usize>>) -> Result<Vec<Range<usize>>, String> {
    if skip_ws(body, i) != body.len() {
        return Err(format!("unexpected data after the closing `]` at byte {i}; send one JSON array"));
    }
    Ok(out)
}

fn skip_ws(body: &[u8], mut i: usize) -> usize {
    while i < body.len() && matches!(body[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

fn trim(body: &[u8], mut s: usize, mut e: usize) -> (usize, usize) {
    while s < e && body[s].is_ascii_whitespace() {
        s += 1;
    }
    while e > s && body[e - 1].is_ascii_whitespace() {
        e -= 1;
    }
    (s, e)
}

/// The end of the JSON value starting at `i`, found by tracking nesting, strings and escapes only.
fn scan_value(body: &[u8], start: usize) -> Result<usize, String> {
    let mut depth = 0usize;
    let mut i = start;
    let cut = || format!("the record at byte {start} is cut short; the body ends inside it");
    loop {
        let Some(&c) = body.get(i) else {
            return Err(cut());
        };
        match c {
            b'"' => {
                i += 1;
                loop {
                    match body.get(i) {
                        None => return Err(cut()),
                        Some(b'\\') => i += 2,
                        Some(b'"') => break,
                        Some(_) => i += 1,
                    }
                }
                i += 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                if depth == 0 {
                    // A closing bracket where a value should be: an empty slot such as `[1,]`.
                    return if i == start {
                        Err(format!("a record is missing before byte {i}; remove the extra comma"))
                    } else {
                        Ok(i)
                    };
                }
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            b',' if depth == 0 => {
                return if i == start {
                    Err(format!("a record is missing before byte {i}; remove the extra comma"))
                } else {
                    Ok(i)
                };
            }
            b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return Ok(i),
            _ => i += 1,
        }
    }
}

/// The answer of a batch: 200 with the count, or (strict mode with failures) 400 listing them.
pub fn batch_response(imported: usize, failed: Vec<FailedRecord>, strict: bool) -> Response {
    if strict && !failed.is_empty() {
        let body = ImportResponse::validation_failed(failed, imported as u64);
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    }
    let mut response = Json(ImportResponse::ok(imported as u64)).into_response();
    if !failed.is_empty() {
        // Without strict mode invalid records are skipped silently, as the service does; the count
        // is still told, so that a client can notice.
        response.headers_mut().insert("x-datadict-records-skipped", HeaderValue::from(failed.len()));
    }
    response
}

/// Reads `strict` as the import API does: `1` means strict, `0` or absent means not.
pub fn parse_strict(raw: Option<&str>) -> Result<bool, ApiError> {
    match raw {
        None | Some("0") | Some("") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(ApiError::BadRequest(format!("`strict={other}` is not allowed; use `strict=1` or `strict=0`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(body: &str, expected: Result<Vec<&str>, &str>) {
        let got = split_records(body.as_bytes())
            .map(|ranges| ranges.into_iter().map(|r| &body[r]).collect::<Vec<_>>());
        match (got, expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{body}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{body}: {got}"),
            (got, want) => panic!("{body}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn records_are_split_without_parsing() {
        check(r#"[{"a":1}, {"b":"x,]}"} ,3]"#, Ok(vec![r#"{"a":1}"#, r#"{"b":"x,]}"}"#, "3"]));
        check(r#" [ ] "#, Ok(vec![]));
        check("{\"a\":1}\n\n {\"b\":[1,2]}\r\n", Ok(vec![r#"{"a":1}"#, r#"{"b":[1,2]}"#]));
        check(r#"[{"a":"\"]"}]"#, Ok(vec![r#"{"a":"\"]"}"#]));
        check(r#"[{"a":1}"#, Err("without `]`"));
        check(r#"[{"a":1"#, Err("cut short"));
        check(r#"[{"a":1},]"#, Err("extra comma"));
        check(r#"[{"a":1} {"b":2}]"#, Err("commas"));
        check(r#"[{"a":1}] x"#, Err("after the closing"));
        check("  ", Err("empty"));
    }
}
