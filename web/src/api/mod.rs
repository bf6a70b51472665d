//! Talking to the datadict API: one generic request function, one small function per endpoint,
//! and one error type built from status codes. What a request is (its URL, the Basic header, how
//! an error body reads, the words of a failure) is the core's `request` and `status`; this module
//! only sends and logs. Every call is written to the on-page log.

use datadict_core::{
    self as core, import_headers, parse_api_response, parse_import_response, Attempt, Batch, BatchUploadRequest,
    BatchUploadResponse, Credentials, DeleteResponse, EntityType, Endpoints, ImportResponse, ListSchemasResponse, Region, RegionUrls,
    SchemaEntry, StatusContext, StatusResponse,
};
use datadict_core::request::api_request;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::fmt;

pub use datadict_core::Method;

/// Where and as whom the app talks to the API. Held in memory only (unless the user opts in to
/// "remember on this device", see `pages::settings`).
#[derive(Clone, PartialEq)]
pub struct Connection {
    /// The application host without a trailing slash, e.g. `http://127.0.0.1:8080`; the API lives
    /// under `/api/app` (FACTS.md).
    pub base_url: String,
    /// The event import host without a trailing slash (spec §4.4 `{import_url}`).
    pub import_url: String,
    pub project_id: u64,
    pub username: String,
    pub secret: String,
}

// The secret must never reach a log line, not even through `{:?}`.
impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("base_url", &self.base_url)
            .field("import_url", &self.import_url)
            .field("project_id", &self.project_id)
            .field("username", &self.username)
            .field("secret", &"<hidden>")
            .finish()
    }
}

impl Connection {
    /// Every interface of this connection, as the core builds their URLs: the application API
    /// and migration on `base_url`, `/import` and `/engage` on `import_url`. The app has no
    /// region setting; its hosts are the region's.
    pub fn endpoints(&self) -> Endpoints {
        Endpoints { ingest: RegionUrls::same(&self.import_url), ..Endpoints::single_host(&self.base_url) }
    }

    /// The service account, whose Basic header the core writes.
    pub fn credentials(&self) -> Credentials {
        Credentials::ServiceAccount { username: self.username.clone(), secret: self.secret.clone() }
    }

    /// `…/api/app/projects/{id}`: the root of the project's resources.
    pub fn project_url(&self) -> String {
        self.endpoints().project(Region::Default, self.project_id)
    }

    /// What the words of a failed request to `url` may name.
    fn context(&self, method: Method, url: &str) -> StatusContext {
        StatusContext { url: Some(url.to_owned()), project_id: Some(self.project_id), writes: method != Method::Get, ..StatusContext::default() }
    }
}

/// Why a request failed; it displays in the core's words, with what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// No answer: a wrong URL, the server down, CORS refused.
    Network { message: String, context: StatusContext },
    /// An answer that is not a success (or a success whose body does not read), as the core reads
    /// it; the context carries a 429's `Retry-After`.
    Answer { error: core::ApiError, context: StatusContext },
}

impl ApiError {
    /// The answer's status; `None` when no answer came.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Network { .. } => None,
            Self::Answer { error, .. } => Some(error.status),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Network { message, context } => f.write_str(&core::explain_status(Attempt::NetworkError, message, context)),
            Self::Answer { error, context } => f.write_str(&error.explain(context)),
        }
    }
}

/// One finished request, for the on-page log.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub status: Option<u16>,
    pub duration_ms: f64,
    pub error: Option<String>,
}

impl fmt::Display for RequestRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self.status.map_or_else(|| "no answer".to_owned(), |s| s.to_string());
        write!(f, "{} {} → {status} in {} ms", self.method, self.path, self.duration_ms.round() as u64)?;
        if let Some(err) = &self.error {
            let short: String = err.chars().take(300).collect();
            write!(f, ": {short}")?;
        }
        Ok(())
    }
}

pub fn now_ms() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// What came back: the status, the body text and the `Retry-After` header, if any.
pub struct Reply {
    pub status: u16,
    pub text: String,
    pub retry_after: Option<String>,
}

impl Reply {
    /// The words for a failed answer, with what the context names and its `Retry-After`.
    fn error(&self, mut context: StatusContext) -> ApiError {
        context.retry_after_ms = self.retry_after.as_deref().and_then(|v| core::parse_retry_after(v, js_sys::Date::now() as i64));
        let mut message = core::error_detail(self.text.as_bytes());
        // A 401's words already say the credentials were refused and what to check; the server's
        // generic refusal only said the same again, so the user read it twice.
        if self.status == 401 && message.to_ascii_lowercase().starts_with("invalid credentials") {
            message.clear();
        }
        ApiError::Answer { error: core::ApiError { status: self.status, message }, context }
    }
}

/// Sends one request of the application API and decodes a JSON answer; `log` receives a record of
/// the exchange.
pub async fn request<T: DeserializeOwned>(
    conn: &Connection,
    method: Method,
    url: &str,
    body: Option<&serde_json::Value>,
    log: &dyn Fn(RequestRecord),
) -> Result<T, ApiError> {
    let context = conn.context(method, url);
    let has_body = body.is_some();
    let request = api_request(method, url.to_owned(), &conn.credentials(), body.map(|b| serde_json::to_vec(b).unwrap_or_default()));
    let reply = exchange(method, url, &request.headers, has_body.then_some(request.body.as_slice()), &context, log)
        .await
        .map_err(|message| ApiError::Network { message, context: context.clone() })?;
    if (200..300).contains(&reply.status) {
        return parse_api_response(reply.status, reply.text.as_bytes()).map_err(|error| ApiError::Answer { error, context });
    }
    Err(reply.error(context))
}

/// The URL without its scheme and host, as the log shows it.
fn path_of(url: &str) -> &str {
    url.split_once("://").and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..])).unwrap_or(url)
}

/// Sends one request and returns what came back, or the network's reason when nothing did. A
/// non-2xx status is logged as an error line in the core's words, and is returned (not turned
/// into an error) so that callers that read error bodies (the import's 400) can.
async fn exchange(
    method: Method,
    url: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
    context: &StatusContext,
    log: &dyn Fn(RequestRecord),
) -> Result<Reply, String> {
    let start = now_ms();
    let mut record = RequestRecord { method: gloo_method(method).to_string(), path: path_of(url).to_owned(), status: None, duration_ms: 0.0, error: None };
    let result = send(method, url, headers, body).await;
    record.duration_ms = now_ms() - start;
    match &result {
        Ok(reply) => {
            record.status = Some(reply.status);
            if !(200..300).contains(&reply.status) {
                record.error = Some(reply.error(context.clone()).to_string());
            }
        }
        Err(message) => record.error = Some(core::explain_status(Attempt::NetworkError, message, context)),
    }
    log(record);
    result
}

fn gloo_method(method: Method) -> gloo_net::http::Method {
    match method {
        Method::Get => gloo_net::http::Method::GET,
        Method::Post => gloo_net::http::Method::POST,
        Method::Put => gloo_net::http::Method::PUT,
        Method::Delete => gloo_net::http::Method::DELETE,
    }
}

async fn send(method: Method, url: &str, headers: &[(String, String)], body: Option<&[u8]>) -> Result<Reply, String> {
    let builder = headers.iter().fold(gloo_net::http::RequestBuilder::new(url).method(gloo_method(method)), |b, (name, value)| b.header(name, value));
    let request = match body {
        None => builder.build(),
        Some(body) => builder.body(js_sys::Uint8Array::from(body)),
    }
    .map_err(|e| e.to_string())?;
    let response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let retry_after = response.headers().get("retry-after");
    let text = response.text().await.map_err(|e| e.to_string())?;
    Ok(Reply { status, text, retry_after })
}

/// `GET /api/app/projects/{id}/schemas/{entityType}` (spec §4.1).
pub async fn list_schemas(conn: &Connection, entity_type: EntityType, log: &dyn Fn(RequestRecord)) -> Result<Vec<SchemaEntry>, ApiError> {
    let url = conn.endpoints().schemas_of_type(Region::Default, conn.project_id, entity_type, None);
    let body: ListSchemasResponse = request(conn, Method::Get, &url, None, log).await?;
    Ok(body.results)
}

/// `GET /api/app/projects/{id}/schemas`: the whole dictionary, events and profiles (FACTS.md).
pub async fn list_all_schemas(conn: &Connection, log: &dyn Fn(RequestRecord)) -> Result<Vec<SchemaEntry>, ApiError> {
    let url = conn.endpoints().schemas(Region::Default, conn.project_id);
    let body: ListSchemasResponse = request(conn, Method::Get, &url, None, log).await?;
    Ok(body.results)
}

/// The stored entity of this type and name, if any: `GET .../schemas/{entityType}?entity_name=`,
/// which answers an empty list rather than a 404 (a 404 would be logged as an error).
pub async fn find_schema(conn: &Connection, entity_type: EntityType, name: &str, log: &dyn Fn(RequestRecord)) -> Result<Option<SchemaEntry>, ApiError> {
    let url = conn.endpoints().schemas_of_type(Region::Default, conn.project_id, entity_type, Some(name));
    let body: ListSchemasResponse = request(conn, Method::Get, &url, None, log).await?;
    Ok(body.results.into_iter().find(|e| e.name == name))
}

/// `POST /api/app/projects/{id}/schemas/{entityType}/{name}`: create or replace one entity.
pub async fn put_schema(conn: &Connection, entry: &SchemaEntry, log: &dyn Fn(RequestRecord)) -> Result<(), ApiError> {
    let body = serde_json::to_value(&entry.schema_json).unwrap_or_default();
    put_schema_json(conn, entry.entity_type, &entry.name, &body, log).await
}

/// The body of an entity replacement that removes metadata keys: FACTS.md says a replace keeps
/// entity-level keys absent from the new schema, and removes a key sent as `null`.
pub async fn put_schema_json(
    conn: &Connection,
    entity_type: EntityType,
    name: &str,
    schema: &serde_json::Value,
    log: &dyn Fn(RequestRecord),
) -> Result<(), ApiError> {
    let url = conn.endpoints().schema(Region::Default, conn.project_id, entity_type, name);
    let _: StatusResponse = request(conn, Method::Post, &url, Some(schema), log).await?;
    Ok(())
}

/// `DELETE /api/app/projects/{id}/schemas/{entityType}/{name}`.
pub async fn delete_schema(conn: &Connection, entity_type: EntityType, name: &str, log: &dyn Fn(RequestRecord)) -> Result<u64, ApiError> {
    let url = conn.endpoints().schema(Region::Default, conn.project_id, entity_type, name);
    let body: DeleteResponse = request(conn, Method::Delete, &url, None, log).await?;
    Ok(body.results.delete_count)
}

/// `POST /api/app/projects/{id}/schemas` with `{"entries":[...],"truncate":bool}` (FACTS.md).
pub async fn upload_schemas(conn: &Connection, upload: &BatchUploadRequest, log: &dyn Fn(RequestRecord)) -> Result<BatchUploadResponse, ApiError> {
    let url = conn.endpoints().schemas(Region::Default, conn.project_id);
    let body = serde_json::to_value(upload).unwrap_or_default();
    request(conn, Method::Post, &url, Some(&body), log).await
}

/// One row of the server's `GET .../event-counts?days=30` answer (the read API of
/// `crates/datadict-server/src/routes/data.rs`). The server defines this shape and the core does
/// not have it yet, so only the two fields the dictionary shows are read here.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EventCount {
    pub event: String,
    pub count: i64,
}

#[derive(Deserialize)]
struct EventCounts {
    results: Vec<EventCount>,
}

/// `GET /api/app/projects/{id}/event-counts?days=30`: per event name, the 30-day volume.
pub async fn event_counts(conn: &Connection, log: &dyn Fn(RequestRecord)) -> Result<Vec<EventCount>, ApiError> {
    let url = format!("{}/event-counts?days=30", conn.project_url());
    let body: EventCounts = request(conn, Method::Get, &url, None, log).await?;
    Ok(body.results)
}

/// How many group profiles, or lookup-table rows, one request of the Data screen reads.
pub const DATA_PAGE: u32 = 50;

/// `GET` of the server's read API: the whole answer as JSON. The Data screen only shows what it
/// reads, so it reads every answer this way rather than through types of their own.
pub async fn read_data(conn: &Connection, url: &str, log: &dyn Fn(RequestRecord)) -> Result<serde_json::Value, ApiError> {
    request(conn, Method::Get, url, None, log).await
}

/// `…/profiles/{distinct_id}`: one user profile, as `{"results": {"$distinct_id", "$properties"}}`.
pub fn profile_url(conn: &Connection, distinct_id: &str) -> String {
    conn.endpoints().profile(Region::Default, conn.project_id, distinct_id)
}

/// `…/groups?group_key=&limit=&after=`: a page of group profiles, as `{"results": [...],
/// "next_after"}`.
pub fn groups_url(conn: &Connection, group_key: Option<&str>, after: Option<&str>) -> String {
    conn.endpoints().groups(Region::Default, conn.project_id, group_key, DATA_PAGE, after)
}

/// `…/groups/{group_key}/{group_id}`: one group profile, as `{"results": {..., "$properties"}}`.
pub fn group_url(conn: &Connection, group_key: &str, group_id: &str) -> String {
    conn.endpoints().group(Region::Default, conn.project_id, group_key, group_id)
}

/// `…/lookup-tables`: the project's lookup tables with their row counts, as `{"results": [...]}`.
pub fn lookup_tables_url(conn: &Connection) -> String {
    conn.endpoints().lookup_tables(Region::Default, conn.project_id)
}

/// `…/lookup-tables/{id}?limit=&cursor=`: a table and a page of its rows, as `{"results": {...,
/// "rows": [...]}, "next_cursor"}`.
pub fn lookup_table_url(conn: &Connection, table_id: &str, cursor: Option<&str>) -> String {
    conn.endpoints().lookup_table(Region::Default, conn.project_id, table_id, DATA_PAGE, cursor)
}

/// The Data quality screen's window, as the server reads `since`: the UTC day 29 days ago and
/// every day after it, today included, so the last 30 days.
pub const QUALITY_SINCE: &str = "29d";

/// How many violation or rejected-record rows the Data quality screen reads: one row is a (day,
/// event, property, code), and the server caps the keys of a day, so a project rarely has more.
pub const QUALITY_ROWS: u32 = 1000;

/// `…/quality/summary?since=29d`: counts by code, event, property and day, and good and bad
/// records per event name, as `{"results": {"violations", "rejected", "events"}}`.
pub fn quality_summary_url(conn: &Connection) -> String {
    conn.endpoints().quality_summary(Region::Default, conn.project_id, Some(QUALITY_SINCE), None)
}

/// `…/violations` or `…/rejected` (`list`) of the last 30 days, as `{"results": [...]}`.
pub fn quality_rows_url(conn: &Connection, list: &str) -> String {
    conn.endpoints().quality_rows(Region::Default, conn.project_id, list, Some(QUALITY_SINCE), QUALITY_ROWS)
}

/// `…/quality/draft[?event=E]&since=29d`: schemas drafted from what arrived, as
/// `{"results": {"entries", "truncate"}, "unresolved": [...]}`; the server writes nothing.
pub fn quality_draft_url(conn: &Connection, event: Option<&str>) -> String {
    conn.endpoints().quality_draft(Region::Default, conn.project_id, event, Some(QUALITY_SINCE))
}

/// `DELETE …/quality[?events=true]`: empties the project's violations and rejected records, and
/// with `events` its stored events too; the answer counts what went.
pub async fn reset_quality(conn: &Connection, events: bool, log: &dyn Fn(RequestRecord)) -> Result<serde_json::Value, ApiError> {
    let url = conn.endpoints().quality_reset(Region::Default, conn.project_id, events);
    request(conn, Method::Delete, &url, None, log).await
}

/// Sends one batch of the core's `Batcher` to `url` (the import's or `/engage`'s, spec §4.4) with
/// the core's headers, and returns what came back without judging it: the core's upload machine
/// (or [`import_batch`]) reads it. `Err` holds the network's reason when no answer came.
pub async fn send_batch(conn: &Connection, url: &str, batch: &Batch, log: &dyn Fn(RequestRecord)) -> Result<Reply, String> {
    let headers = import_headers(&conn.credentials(), batch.gzipped);
    exchange(Method::Post, url, &headers, Some(&batch.body), &conn.context(Method::Post, url), log).await
}

/// `POST {import_url}/import?strict=1&project_id=N` with one batch (spec §4.4, FACTS.md), for a
/// caller that sends batches one by one. A strict-mode 400 that lists `failed_records` is an
/// answer, not an error: the valid records of the batch were imported.
pub async fn import_batch(conn: &Connection, batch: &Batch, log: &dyn Fn(RequestRecord)) -> Result<ImportResponse, ApiError> {
    let url = conn.endpoints().import(Region::Default, conn.project_id, true);
    let context = conn.context(Method::Post, &url);
    let reply = send_batch(conn, &url, batch, log).await.map_err(|message| ApiError::Network { message, context: context.clone() })?;
    if reply.status == 400 {
        let answer = parse_import_response(400, reply.text.as_bytes());
        if answer.failed_records.is_some() {
            return Ok(answer);
        }
    }
    if (200..300).contains(&reply.status) {
        return parse_api_response(reply.status, reply.text.as_bytes()).map_err(|error| ApiError::Answer { error, context });
    }
    Err(reply.error(context))
}

/// The problems a refusal of the API lists, as (path, message): the server writes each as
/// `path: [code] message` and joins them with "; ". A message may hold "; " itself, so a new
/// problem starts only where a path and a bracketed snake_case code follow a boundary. Forms use
/// the paths to show each problem at its field.
pub fn listed_issues(text: &str) -> Vec<(String, String)> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_.[]$".contains(c);
    // (path start, path end, message start)
    let mut found: Vec<(usize, usize, usize)> = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(": [") {
        let colon = from + at;
        from = colon + 3;
        let start = text[..colon].rfind(|c: char| !path_char(c)).map_or(0, |p| p + 1);
        let Some(code_end) = text[from..].find("] ").map(|e| from + e) else { continue };
        let code_ok = code_end > from && text[from..code_end].bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        let boundary = start == 0 || text[..start].ends_with(": ") || text[..start].ends_with("; ");
        if start < colon && code_ok && boundary {
            found.push((start, colon, code_end + 2));
        }
    }
    found
        .iter()
        .enumerate()
        .map(|(k, &(start, end, message))| {
            let stop = found.get(k + 1).map_or(text.len(), |next| next.0.saturating_sub(2)).max(message);
            (text[start..end].to_owned(), text[message..stop].to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn the_problems_of_a_refusal_are_read_with_their_paths() {
        let text = "the server refused the request (400): the request has 2 problem(s): mapping.event_column_name: [invalid_name] the source has no column `nocol`; its columns are id, ev; source.path: [invalid_name] outside the folder";
        assert_eq!(
            listed_issues(text),
            [
                ("mapping.event_column_name".to_owned(), "the source has no column `nocol`; its columns are id, ev".to_owned()),
                ("source.path".to_owned(), "outside the folder".to_owned()),
            ]
        );
        assert_eq!(listed_issues("cannot reach the server: [object] x").len(), 0);
        assert_eq!(listed_issues("the request has 1 problem(s): mapping.key_column_names[0]: [invalid_name] no column `k`")[0].0, "mapping.key_column_names[0]");
    }

    fn conn() -> Connection {
        Connection { base_url: "http://h/".into(), import_url: "http://i".into(), project_id: 1, username: "u".into(), secret: "s3cr3t".into() }
    }

    #[wasm_bindgen_test]
    fn failed_answers_are_the_cores_words() {
        let c = conn();
        let reply = |status: u16, text: &str, retry_after: Option<&str>| Reply { status, text: text.into(), retry_after: retry_after.map(Into::into) };
        let get = c.context(Method::Get, "http://h/api/app/projects/1/schemas");
        let err = reply(401, r#"{"error":"invalid credentials","status":"error"}"#, None).error(get.clone());
        assert_eq!(err.status(), Some(401));
        // The server's generic refusal repeats the core's advice, so it is said once.
        assert_eq!(err.to_string(), "the server rejected the credentials (401); check the service-account user name and secret, or the project token");
        // A refusal that says something of its own is kept.
        let err = reply(401, r#"{"error":"the `Basic` credentials are not valid base64","status":"error"}"#, None).error(get.clone());
        assert!(err.to_string().starts_with("the server rejected the credentials (401): the `Basic` credentials are not valid base64;"), "{err}");
        let post = c.context(Method::Post, "http://h/api/app/projects/1/schemas");
        let err = reply(403, r#"{"error":"no","status":"error"}"#, None).error(post);
        assert!(err.to_string().contains("lack permission on project 1 (403): no; this request writes"), "{err}");
        let err = reply(429, r#"{"error":"slow down","status":"error"}"#, Some("7")).error(get.clone());
        assert!(err.to_string().contains("slow down; the server asks to wait 7 s"), "{err}");
        let err = reply(429, "x", Some("soon")).error(get.clone());
        assert!(err.to_string().contains("wait a minute"), "{err}");
        let err = ApiError::Network { message: "Failed to fetch".into(), context: get };
        assert_eq!(err.status(), None);
        assert!(err.to_string().starts_with("cannot reach the server at http://h/api/app/projects/1/schemas: Failed to fetch;"), "{err}");
    }

    #[wasm_bindgen_test]
    fn urls_and_the_basic_header_come_from_the_core() {
        let c = conn();
        assert_eq!(c.project_url(), "http://h/api/app/projects/1");
        assert_eq!(c.endpoints().schema(Region::Default, 1, EntityType::Event, "Add To Cart"), "http://h/api/app/projects/1/schemas/event/Add%20To%20Cart");
        assert_eq!(c.endpoints().import(Region::Default, 1, true), "http://i/import?strict=1&project_id=1");
        assert_eq!(c.credentials().header_value(), "Basic dTpzM2NyM3Q=");
        assert_eq!(path_of("http://h/api/app/projects/1/schemas?x=1"), "/api/app/projects/1/schemas?x=1");
        assert_eq!(path_of("/relative"), "/relative");
    }

    #[wasm_bindgen_test]
    fn the_secret_never_shows_in_debug_output() {
        assert!(!format!("{:?}", conn()).contains("s3cr3t"));
    }
}
