//! Requests and answers: URLs of every operation, credentials and headers, the import's answers,
//! the retry policy and the one wording of failed requests.

use crate::{args, to_js, JsResult};
use datadict_core as core;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

/// Every interface on one host (`/api/app`, `/import`, `/engage`, `/migrate`).
#[wasm_bindgen(js_name = singleHostEndpoints, unchecked_return_type = "Endpoints")]
pub fn single_host_endpoints(#[wasm_bindgen(unchecked_param_type = "string")] host: JsValue) -> JsResult<JsValue> {
    let host = args::text(&host, "singleHostEndpoints: host")?;
    to_js(&core::Endpoints::single_host(&host))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UrlRequest {
    endpoints: core::Endpoints,
    #[serde(default)]
    region: core::Region,
    operation: String,
    #[serde(default)]
    project_id: u64,
    entity_type: Option<core::EntityType>,
    name: Option<String>,
    import_id: Option<String>,
    source_tool: Option<String>,
    #[serde(default = "yes")]
    strict: bool,
    since: Option<String>,
    until: Option<String>,
    #[serde(default)]
    events: bool,
}

fn yes() -> bool {
    true
}

/// The URL of one operation: `{endpoints, region?, operation, projectId, ...}` with operation one
/// of `schemas`, `schemasOfType` (`entityType`, optional `name`), `schema` (`entityType`,
/// `name`), `manualSync` (`importId`), `import` (`strict`, default true), `engage`, `migrate`
/// (`sourceTool`), `qualitySummary` (optional `since`, `until`), `qualityReset` (`events`, default
/// false).
#[wasm_bindgen(js_name = operationUrl)]
pub fn operation_url(#[wasm_bindgen(unchecked_param_type = "UrlRequest")] request: JsValue) -> JsResult<String> {
    let r: UrlRequest = args::typed(&request, "operationUrl: request")?;
    let need = |v: Option<String>, field: &str| v.ok_or_else(|| args::error(&format!("operation `{}` needs `{field}`", r.operation)));
    let entity = || r.entity_type.ok_or_else(|| args::error(&format!("operation `{}` needs `entityType`", r.operation)));
    let e = &r.endpoints;
    Ok(match r.operation.as_str() {
        "schemas" => e.schemas(r.region, r.project_id),
        "schemasOfType" => e.schemas_of_type(r.region, r.project_id, entity()?, r.name.as_deref()),
        "schema" => e.schema(r.region, r.project_id, entity()?, &need(r.name.clone(), "name")?),
        "manualSync" => e.manual_sync(r.region, r.project_id, &need(r.import_id.clone(), "importId")?),
        "import" => e.import(r.region, r.project_id, r.strict),
        "engage" => e.engage(r.region),
        "migrate" => e.migrate(&need(r.source_tool.clone(), "sourceTool")?),
        "qualitySummary" => e.quality_summary(r.region, r.project_id, r.since.as_deref(), r.until.as_deref()),
        "qualityReset" => e.quality_reset(r.region, r.project_id, r.events),
        other => {
            return Err(args::error(&format!(
                "unknown operation `{other}`: use schemas, schemasOfType, schema, manualSync, import, engage, migrate, qualitySummary or qualityReset"
            )))
        }
    })
}

/// The `authorization` header value (`Basic ...`) of service-account or project-token credentials.
#[wasm_bindgen(js_name = authorizationHeader)]
pub fn authorization_header(#[wasm_bindgen(unchecked_param_type = "Credentials")] credentials: JsValue) -> JsResult<String> {
    let c: core::Credentials = args::typed(&credentials, "authorizationHeader: credentials")?;
    Ok(c.header_value())
}

/// The headers of an import request as an object of lowercase names.
#[wasm_bindgen(js_name = importHeaders, unchecked_return_type = "Record<string, string>")]
pub fn import_headers(#[wasm_bindgen(unchecked_param_type = "Credentials")] credentials: JsValue, gzipped: bool) -> JsResult<JsValue> {
    let c: core::Credentials = args::typed(&credentials, "importHeaders: credentials")?;
    let map: serde_json::Map<String, serde_json::Value> = core::import_headers(&c, gzipped).into_iter().map(|(k, v)| (k, v.into())).collect();
    to_js(&map)
}

/// Reads an import answer (any status; a non-JSON body becomes `error`).
#[wasm_bindgen(js_name = parseImportResponse, unchecked_return_type = "ImportResponse")]
pub fn parse_import_response(status: u16, #[wasm_bindgen(unchecked_param_type = "string")] body: JsValue) -> JsResult<JsValue> {
    let body = args::text(&body, "parseImportResponse: body")?;
    to_js(&core::parse_import_response(status, body.as_bytes()))
}

/// Maps a 400's failed records back to input positions, given the batch's `positions`.
#[wasm_bindgen(js_name = mapFailedRecords, unchecked_return_type = "FailedInput[]")]
pub fn map_failed_records(
    #[wasm_bindgen(unchecked_param_type = "RecordPos[] | Float64Array")] positions: JsValue,
    #[wasm_bindgen(unchecked_param_type = "ImportResponse")] response: JsValue,
) -> JsResult<JsValue> {
    let positions = crate::positions_arg(&positions, "mapFailedRecords: positions")?;
    let response: core::ImportResponse = args::typed(&response, "mapFailedRecords: response")?;
    to_js(&core::map_failed_positions(&positions, &response))
}

#[derive(Serialize)]
#[serde(tag = "action", rename_all = "camelCase")]
enum DecisionDto {
    Done,
    Retry {
        #[serde(rename = "delayMs")]
        delay_ms: u64,
    },
    GiveUp {
        reason: core::GiveUp,
    },
}

/// The retry policy: after attempt `attempt` (1-based) ended with HTTP `status` (or `null` for a
/// network error), with the server's `Retry-After` in ms (or `null`) and a random number in
/// [0, 1), answers `{action: "done"}`, `{action: "retry", delayMs}` or `{action: "giveUp", reason}`.
#[wasm_bindgen(js_name = retryDecision, unchecked_return_type = "RetryDecision")]
pub fn retry_decision(
    attempt: u32,
    status: Option<u16>,
    retry_after_ms: Option<f64>,
    random: f64,
    #[wasm_bindgen(unchecked_optional_param_type = "Partial<RetryPolicy>")] policy: JsValue,
) -> JsResult<JsValue> {
    let policy: core::RetryPolicy = args::opt_typed(&policy, "retryDecision: policy")?;
    let outcome = status.map_or(core::Attempt::NetworkError, core::Attempt::Status);
    let decision = policy.decide(attempt, outcome, retry_after_ms.map(|ms| ms.max(0.0) as u64), random);
    to_js(&match decision {
        core::Decision::Done => DecisionDto::Done,
        core::Decision::RetryAfterMs(delay_ms) => DecisionDto::Retry { delay_ms },
        core::Decision::GiveUp(reason) => DecisionDto::GiveUp { reason },
    })
}

/// Reads a `Retry-After` header (seconds or an HTTP date) into milliseconds, or `undefined`.
#[wasm_bindgen(js_name = parseRetryAfter)]
pub fn parse_retry_after(#[wasm_bindgen(unchecked_param_type = "string")] value: JsValue, now_ms: f64) -> JsResult<Option<f64>> {
    let value = args::text(&value, "parseRetryAfter: value")?;
    Ok(core::parse_retry_after(&value, now_ms as i64).map(|ms| ms as f64))
}

/// A project id as JavaScript callers hold it: a number, or its text (a command-line flag).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ProjectIdDto {
    Number(f64),
    Text(String),
}

impl ProjectIdDto {
    /// The id, or `None` when it is not a whole number: the words then name no project rather
    /// than fail while saying what went wrong.
    fn id(&self) -> Option<u64> {
        match self {
            Self::Number(n) if n.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(n) => Some(*n as u64),
            Self::Number(_) => None,
            Self::Text(t) => t.trim().parse().ok(),
        }
    }
}

/// What the words of a failed request may name, as JavaScript passes it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct StatusContextDto {
    pub(crate) url: Option<String>,
    pub(crate) project_id: Option<ProjectIdDto>,
    pub(crate) writes: bool,
    pub(crate) retry_after_ms: Option<f64>,
    pub(crate) attempts: Option<u32>,
}

impl StatusContextDto {
    pub(crate) fn into_core(self) -> core::StatusContext {
        core::StatusContext {
            url: self.url,
            project_id: self.project_id.and_then(|p| p.id()),
            writes: self.writes,
            retry_after_ms: self.retry_after_ms.filter(|ms| ms.is_finite()).map(|ms| ms.max(0.0) as u64),
            attempts: self.attempts.unwrap_or(0),
        }
    }
}

/// The one wording of a failed request, with what to do: `status` is the HTTP status, or 0 (or
/// `null`) when no answer came; `detail` is the server's message or the network's reason.
#[wasm_bindgen(js_name = explainStatus)]
pub fn explain_status(
    status: Option<u16>,
    #[wasm_bindgen(unchecked_optional_param_type = "string | null")] detail: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "StatusContext")] context: JsValue,
) -> JsResult<String> {
    let detail = args::opt_text(&detail, "explainStatus: detail")?;
    let context = args::opt_typed::<StatusContextDto>(&context, "explainStatus: context")?.into_core();
    let outcome = match status {
        None | Some(0) => core::Attempt::NetworkError,
        Some(status) => core::Attempt::Status(status),
    };
    Ok(core::explain_status(outcome, detail.as_deref().unwrap_or_default(), &context))
}

/// [`explain_status`] of an answer's raw body: the server's message is read from it as the core
/// reads error bodies.
#[wasm_bindgen(js_name = explainAnswer)]
pub fn explain_answer(
    status: u16,
    #[wasm_bindgen(unchecked_param_type = "string")] body: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "StatusContext")] context: JsValue,
) -> JsResult<String> {
    let body = args::text(&body, "explainAnswer: body")?;
    let context = args::opt_typed::<StatusContextDto>(&context, "explainAnswer: context")?.into_core();
    Ok(core::explain_answer(status, body.as_bytes(), &context))
}

#[wasm_bindgen(typescript_custom_section)]
const TS_REQUESTS: &'static str = r#"
export type Region = "default" | "eu" | "in";

export interface Endpoints {
  app: { default: string; eu: string; in: string };
  ingest: { default: string; eu: string; in: string };
  migrate: string;
}

export interface UrlRequest {
  endpoints: Endpoints;
  region?: Region;
  operation: "schemas" | "schemasOfType" | "schema" | "manualSync" | "import" | "engage" | "migrate" | "qualitySummary" | "qualityReset";
  projectId?: number;
  entityType?: EntityType;
  name?: string;
  importId?: string;
  sourceTool?: string;
  strict?: boolean;
  /** `qualitySummary`: the first day, a `YYYY-MM-DD` date, epoch milliseconds or a time before now (`10m`, `2h`, `7d`). */
  since?: string;
  /** `qualitySummary`: the last day, inclusive, written like `since`. */
  until?: string;
  /** `qualityReset`: also delete the project's stored events. */
  events?: boolean;
}

export type Credentials =
  | { kind: "serviceAccount"; username: string; secret: string }
  | { kind: "projectToken"; token: string };

export interface FailedInput {
  /** Where the failed event was in the input, or null when the index is unknown to the batch. */
  pos: RecordPos | null;
  failure: FailedRecord;
}

export interface RetryPolicy {
  initialBackoffMs: number;
  maxBackoffMs: number;
  jitterMinMs: number;
  jitterMaxMs: number;
  maxAttempts: number;
  retryStatuses: number[];
}

export type RetryDecision =
  | { action: "done" }
  | { action: "retry"; delayMs: number }
  | { action: "giveUp"; reason: "invalid_request" | "unauthorized" | "too_large" | "not_retryable" | "too_many_attempts" };

/** What the words of a failed request may name besides its status. */
export interface StatusContext {
  /** The URL asked; named when the server cannot be reached. */
  url?: string;
  /** The project (a number or its text); named by a 403. */
  projectId?: number | string;
  /** Whether the request writes; a 403 then names the role writes need. */
  writes?: boolean;
  /** A 429's `Retry-After` in milliseconds. */
  retryAfterMs?: number;
  /** Attempts made; more than one is said. */
  attempts?: number;
}
"#;
