//! Building requests without sending them: the URL of every operation in the default, EU and
//! India regions (spec §4, FACTS.md), the import query and headers (spec §4.4), Basic credentials
//! (spec §5), and parsing of every response body into the models, including the import's partial
//! success. The caller owns the HTTP client; the core knows nothing of one.

use crate::api::{FailedRecord, ImportResponse};
use crate::batch::Batch;
use crate::schema::EntityType;
use crate::retry::Attempt;
use crate::split::RecordPos;
use crate::status::{error_detail, explain_status, StatusContext};
use base64::Engine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Spec §4.1: the data-residency region of a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Region {
    /// `{base_url}`.
    #[default]
    Default,
    /// `{base_url_eu}`.
    Eu,
    /// `{base_url_in}`.
    #[serde(rename = "in")]
    India,
}

impl std::str::FromStr for Region {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "" | "default" | "us" => Ok(Self::Default),
            "eu" => Ok(Self::Eu),
            "in" | "india" => Ok(Self::India),
            other => Err(format!("unknown region `{other}`: use `default`, `eu` or `in`")),
        }
    }
}

/// One base URL per region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionUrls {
    pub default: String,
    pub eu: String,
    #[serde(rename = "in")]
    pub india: String,
}

impl RegionUrls {
    /// The same base in every region (a self-hosted server).
    pub fn same(base: &str) -> Self {
        let base = base.trim_end_matches('/').to_owned();
        Self { default: base.clone(), eu: base.clone(), india: base }
    }

    pub fn get(&self, region: Region) -> &str {
        match region {
            Region::Default => &self.default,
            Region::Eu => &self.eu,
            Region::India => &self.india,
        }
    }
}

/// The bases of every interface; all configurable, since the spec names them only as
/// placeholders (`{base_url}`, `{base_url_eu}`, `{base_url_in}`, `{import_url}`, `{migrate_url}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoints {
    /// FACTS.md: `{base_url}` = `<host>/api/app`, per region.
    pub app: RegionUrls,
    /// `{import_url}`: the host of `/import` and `/engage`, per region.
    pub ingest: RegionUrls,
    /// `{migrate_url}` (spec §4.3).
    pub migrate: String,
}

impl Endpoints {
    /// Every interface on one host, as a datadict server serves them: the application API under
    /// `/api/app`, `/import` and `/engage` at the root, migration under `/migrate`.
    pub fn single_host(host: &str) -> Self {
        let host = host.trim_end_matches('/');
        Self { app: RegionUrls::same(&format!("{host}/api/app")), ingest: RegionUrls::same(host), migrate: format!("{host}/migrate") }
    }

    /// `/projects/{projectId}`: where every resource of a project lives in the application API.
    pub fn project(&self, region: Region, project_id: u64) -> String {
        format!("{}/projects/{project_id}", self.app.get(region))
    }

    /// FACTS.md: `/projects/{projectId}/schemas` (list all, batch upload, delete all).
    pub fn schemas(&self, region: Region, project_id: u64) -> String {
        format!("{}/schemas", self.project(region, project_id))
    }

    /// Spec §4.1: `/projects/{projectId}/schemas/{entityType}[?entity_name=]`.
    pub fn schemas_of_type(&self, region: Region, project_id: u64, entity_type: EntityType, entity_name: Option<&str>) -> String {
        let mut url = format!("{}/{entity_type}", self.schemas(region, project_id));
        if let Some(name) = entity_name {
            url.push_str("?entity_name=");
            url.push_str(&percent_encode(name));
        }
        url
    }

    /// FACTS.md: `/projects/{projectId}/schemas/{entityType}/{name}` (get, create-or-replace, delete).
    pub fn schema(&self, region: Region, project_id: u64, entity_type: EntityType, name: &str) -> String {
        format!("{}/{entity_type}/{}", self.schemas(region, project_id), percent_encode(name))
    }

    /// Spec §4.2: `PUT /projects/{project_id}/warehouse-sources/imports/{import_id}/manual-sync`.
    pub fn manual_sync(&self, region: Region, project_id: u64, import_id: &str) -> String {
        format!("{}/projects/{project_id}/warehouse-sources/imports/{}/manual-sync", self.app.get(region), percent_encode(import_id))
    }

    /// Spec §4.4: `POST {import_url}/import?strict=1&project_id=N`.
    pub fn import(&self, region: Region, project_id: u64, strict: bool) -> String {
        format!("{}/import?strict={}&project_id={project_id}", self.ingest.get(region), u8::from(strict))
    }

    /// FACTS.md: `POST /engage` for profile updates.
    pub fn engage(&self, region: Region) -> String {
        format!("{}/engage", self.ingest.get(region))
    }

    /// `POST /engage?strict=1&project_id=N`: profile updates signed by a service account, which
    /// names its project in the query as the import does.
    pub fn engage_project(&self, region: Region, project_id: u64, strict: bool) -> String {
        format!("{}?strict={}&project_id={project_id}", self.engage(region), u8::from(strict))
    }

    /// The read API of a datadict server (no part of the spec's service):
    /// `/projects/{projectId}/profiles/{distinct_id}`, one user profile.
    pub fn profile(&self, region: Region, project_id: u64, distinct_id: &str) -> String {
        format!("{}/profiles/{}", self.project(region, project_id), percent_encode(distinct_id))
    }

    /// The read API: `/projects/{projectId}/groups?limit=N[&group_key=K][&after=C]`, a page of group
    /// profiles; `after` is the `next_after` of the page before.
    pub fn groups(&self, region: Region, project_id: u64, group_key: Option<&str>, limit: u32, after: Option<&str>) -> String {
        let mut url = format!("{}/groups?limit={limit}", self.project(region, project_id));
        for (name, value) in [("group_key", group_key), ("after", after)] {
            if let Some(value) = value {
                url.push_str(&format!("&{name}={}", percent_encode(value)));
            }
        }
        url
    }

    /// The read API: `/projects/{projectId}/groups/{group_key}/{group_id}`, one group profile.
    pub fn group(&self, region: Region, project_id: u64, group_key: &str, group_id: &str) -> String {
        format!("{}/groups/{}/{}", self.project(region, project_id), percent_encode(group_key), percent_encode(group_id))
    }

    /// `/projects/{projectId}/lookup-tables`: the project's lookup tables with their row counts.
    pub fn lookup_tables(&self, region: Region, project_id: u64) -> String {
        format!("{}/lookup-tables", self.project(region, project_id))
    }

    /// `/projects/{projectId}/lookup-tables/{id}?limit=N[&cursor=C]`: a table and a page of its
    /// rows; `cursor` is the `next_cursor` of the page before.
    pub fn lookup_table(&self, region: Region, project_id: u64, table_id: &str, limit: u32, cursor: Option<&str>) -> String {
        let mut url = format!("{}/{}?limit={limit}", self.lookup_tables(region, project_id), percent_encode(table_id));
        if let Some(cursor) = cursor {
            url.push_str(&format!("&cursor={}", percent_encode(cursor)));
        }
        url
    }

    /// The data-quality summary of a datadict server:
    /// `/projects/{projectId}/quality/summary[?since=S][&until=U]`, where `since` and `until` are a
    /// `YYYY-MM-DD` date, milliseconds since the epoch, or a time before now such as `10m`.
    pub fn quality_summary(&self, region: Region, project_id: u64, since: Option<&str>, until: Option<&str>) -> String {
        with_query(format!("{}/quality/summary", self.project(region, project_id)), &[("since", since), ("until", until)])
    }

    /// A page of the data-quality rows of a datadict server: `list` is `violations` or
    /// `rejected`, `/projects/{projectId}/{list}?limit=N[&since=S]`.
    pub fn quality_rows(&self, region: Region, project_id: u64, list: &str, since: Option<&str>, limit: u32) -> String {
        let limit = limit.to_string();
        with_query(format!("{}/{list}", self.project(region, project_id)), &[("limit", Some(&limit)), ("since", since)])
    }

    /// Schemas drafted from what arrived: `/projects/{projectId}/quality/draft[?event=E][&since=S]`,
    /// a batch-upload body to review before it is sent.
    pub fn quality_draft(&self, region: Region, project_id: u64, event: Option<&str>, since: Option<&str>) -> String {
        with_query(format!("{}/quality/draft", self.project(region, project_id)), &[("event", event), ("since", since)])
    }

    /// `DELETE /projects/{projectId}/quality[?events=true]`: resets a project's violations and
    /// rejected records, and with `events` its stored events too.
    pub fn quality_reset(&self, region: Region, project_id: u64, events: bool) -> String {
        let url = format!("{}/quality", self.project(region, project_id));
        if events {
            url + "?events=true"
        } else {
            url
        }
    }

    /// Spec §4.3: `POST {migrate_url}/<source_tool>`.
    pub fn migrate(&self, source_tool: &str) -> String {
        format!("{}/{}", self.migrate.trim_end_matches('/'), percent_encode(source_tool))
    }
}

/// `url` with the query parameters that have a value, percent-encoded, in the order given.
fn with_query(mut url: String, params: &[(&str, Option<&str>)]) -> String {
    let mut sep = '?';
    for (name, value) in params {
        if let Some(value) = value {
            url.push_str(&format!("{sep}{name}={}", percent_encode(value)));
            sep = '&';
        }
    }
    url
}

/// Percent-encodes everything but RFC 3986's unreserved characters, so an entity name such as
/// `Add To Cart` or `$user` is one path segment or query value.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Spec §5 and FACTS.md: how a caller authenticates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Credentials {
    /// A service account (every operation).
    ServiceAccount { username: String, secret: String },
    /// FACTS.md: the project token as username with an empty password (import only).
    ProjectToken { token: String },
}

impl Credentials {
    /// The value of the `authorization` header: `Basic base64(user:password)`.
    pub fn header_value(&self) -> String {
        let pair = match self {
            Self::ServiceAccount { username, secret } => format!("{username}:{secret}"),
            Self::ProjectToken { token } => format!("{token}:"),
        };
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
    }
}

/// An HTTP method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
    Put,
    Delete,
}

/// A request ready for any HTTP client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: Method,
    pub url: String,
    /// Header names in lowercase.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Spec §4.4: the headers of an import request: `Content-Encoding: gzip` when the body is
/// compressed, `Content-Type: application/json`, `accept: application/json`, Basic auth.
pub fn import_headers(credentials: &Credentials, gzipped: bool) -> Vec<(String, String)> {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "application/json".to_owned()),
        ("authorization".to_owned(), credentials.header_value()),
    ];
    if gzipped {
        headers.insert(0, ("content-encoding".to_owned(), "gzip".to_owned()));
    }
    headers
}

/// Spec §4.4: the import request of one batch (strict mode, FACTS.md).
pub fn import_request(endpoints: &Endpoints, region: Region, project_id: u64, credentials: &Credentials, batch: &Batch) -> HttpRequest {
    HttpRequest {
        method: Method::Post,
        url: endpoints.import(region, project_id, true),
        headers: import_headers(credentials, batch.gzipped),
        body: batch.body.clone(),
    }
}

/// A JSON request of the application API with Basic auth (spec §5).
pub fn api_request(method: Method, url: String, credentials: &Credentials, body: Option<Vec<u8>>) -> HttpRequest {
    let mut headers = vec![("accept".to_owned(), "application/json".to_owned()), ("authorization".to_owned(), credentials.header_value())];
    if body.is_some() {
        headers.insert(0, ("content-type".to_owned(), "application/json".to_owned()));
    }
    HttpRequest { method, url, headers, body: body.unwrap_or_default() }
}

/// Spec §4.2 / FACTS.md: the manual-sync request (`PUT`, body `{}`).
pub fn manual_sync_request(endpoints: &Endpoints, region: Region, project_id: u64, import_id: &str, credentials: &Credentials) -> HttpRequest {
    api_request(Method::Put, endpoints.manual_sync(region, project_id, import_id), credentials, Some(b"{}".to_vec()))
}

/// Reads any answer of the import into its model. A body that is not the import's JSON (a proxy's
/// 502 page, an empty 503) becomes a response with that status and an excerpt of the text.
pub fn parse_import_response(status: u16, body: &[u8]) -> ImportResponse {
    if let Ok(mut parsed) = serde_json::from_slice::<ImportResponse>(body) {
        // The HTTP status is the truth when the body's `code` disagrees with it.
        parsed.code = status;
        return parsed;
    }
    let text = String::from_utf8_lossy(body);
    let excerpt: String = text.trim().chars().take(200).collect();
    ImportResponse {
        code: status,
        error: Some(if excerpt.is_empty() { format!("HTTP {status} without a body") } else { excerpt }),
        failed_records: None,
        num_records_imported: None,
        status: String::new(),
    }
}

/// A failed record of a 400 together with where the event was in the caller's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedInput {
    /// `None` when the response names an index the batch does not have.
    pub pos: Option<RecordPos>,
    pub failure: FailedRecord,
}

/// Maps a 400's `failed_records[i].index` (a position in the request) back to the input.
pub fn map_failed_records(batch: &Batch, response: &ImportResponse) -> Vec<FailedInput> {
    map_failed_positions(&batch.positions, response)
}

/// [`map_failed_records`] for a caller that kept only the batch's positions.
pub fn map_failed_positions(positions: &[RecordPos], response: &ImportResponse) -> Vec<FailedInput> {
    response
        .failed_records
        .iter()
        .flatten()
        .map(|f| FailedInput { pos: positions.get(f.index).copied(), failure: f.clone() })
        .collect()
}

/// An answer of the application API that is not a success (or a success whose body does not
/// read). It displays in the words of [`crate::status`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.explain(&StatusContext::default()))]
pub struct ApiError {
    pub status: u16,
    /// The error body's `error` (spec §2.7), or an excerpt of a body that is not one.
    pub message: String,
}

impl ApiError {
    /// The words of [`crate::status::explain_status`], naming what `context` knows.
    pub fn explain(&self, context: &StatusContext) -> String {
        explain_status(Attempt::Status(self.status), &self.message, context)
    }
}

/// Reads an answer of the application API: the success model for 2xx, else an [`ApiError`] from
/// the error body (spec §2.7).
pub fn parse_api_response<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, ApiError> {
    if (200..300).contains(&status) {
        return serde_json::from_slice(body).map_err(|e| ApiError { status, message: format!("the success body does not match the expected shape ({e})") });
    }
    Err(ApiError { status, message: error_detail(body) })
}

#[cfg(test)]
mod tests;
