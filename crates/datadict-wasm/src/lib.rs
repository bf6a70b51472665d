//! The JavaScript face of datadict-core, built into the npm package `datadict`: conversion and
//! naming only. Every rule lives in the core; a function here that grows logic belongs there.
//! Names are camelCase, values cross as plain objects through serde (DTOs below where a core type
//! holds borrowed data or Rust-only shapes), failures are thrown as `Error`s, and the TypeScript
//! types at the end of this file describe every shape.

use datadict_core as core;
use datadict_core::{Limits, SchemaEntry, SchemaRules, DEFAULT_NAMESPACE};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

/// Serializes to plain JavaScript objects (maps as objects, not `Map`s).
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("cannot convert the result to JavaScript: {e}")))
}

/// Reads a JavaScript value into a Rust type; `what` names the argument in the error.
fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsError> {
    serde_wasm_bindgen::from_value(value).map_err(|e| JsError::new(&format!("{what} has the wrong shape: {e}")))
}

/// Reads an optional argument: `undefined` and `null` give the default.
fn opt_from_js<T: DeserializeOwned + Default>(value: JsValue, what: &str) -> Result<T, JsError> {
    if value.is_undefined() || value.is_null() {
        Ok(T::default())
    } else {
        from_js(value, what)
    }
}

fn namespace_or_default(namespace: Option<String>) -> String {
    namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
}

fn rules(namespace: Option<String>) -> SchemaRules {
    SchemaRules { namespace: namespace_or_default(namespace) }
}

// ---------------------------------------------------------------------------------------------
// Schemas

/// Validates one schema entry given as a JavaScript object (or any JSON-compatible value) and
/// returns every issue as `{path, code, message}`; an empty array means valid.
#[wasm_bindgen(js_name = validateSchemaEntry, unchecked_return_type = "Issue[]")]
pub fn validate_schema_entry(entry: JsValue, namespace: Option<String>) -> Result<JsValue, JsError> {
    let value: serde_json::Value = serde_wasm_bindgen::from_value(entry)
        .map_err(|e| JsError::new(&format!("the entry is not a JSON-compatible value: {e}")))?;
    to_js(&core::validate_schema_entry(&value, &rules(namespace)))
}

/// Validates one schema entry given as JSON text; undecodable text is reported as an issue.
#[wasm_bindgen(js_name = validateSchemaEntryJson, unchecked_return_type = "Issue[]")]
pub fn validate_schema_entry_json(text: &str, namespace: Option<String>) -> Result<JsValue, JsError> {
    to_js(&core::validate_schema_entry_json(text, &rules(namespace)))
}

/// The default metadata namespace (`com.vendor`).
#[wasm_bindgen(js_name = defaultNamespace)]
pub fn default_namespace() -> String {
    DEFAULT_NAMESPACE.to_owned()
}

/// The limits of the import and profile interfaces with their documented defaults.
#[wasm_bindgen(js_name = defaultLimits, unchecked_return_type = "Limits")]
pub fn default_limits() -> Result<JsValue, JsError> {
    to_js(&Limits::default())
}

// ---------------------------------------------------------------------------------------------
// Events and profiles

/// Options shared by the event functions.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct EventOptions {
    /// Partial limits; missing fields take the defaults.
    limits: Option<Limits>,
    /// The receiver's clock; `Date.now()` when absent.
    now_ms: Option<f64>,
}

impl EventOptions {
    fn limits(&self) -> Limits {
        self.limits.clone().unwrap_or_default()
    }
    fn now_ms(&self) -> i64 {
        self.now_ms.unwrap_or_else(js_sys::Date::now) as i64
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PropertySeenDto<'a> {
    name: &'a str,
    kind: core::PropertyType,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventCheckDto<'a> {
    valid: bool,
    event: Option<&'a str>,
    time_ms: Option<i64>,
    distinct_id: Option<&'a str>,
    insert_id: Option<&'a str>,
    properties: Vec<PropertySeenDto<'a>>,
    bytes: usize,
    issues: &'a [core::Issue],
    warnings: &'a [core::Issue],
}

fn event_check_dto<'a>(c: &'a core::EventCheck<'a>) -> EventCheckDto<'a> {
    EventCheckDto {
        valid: c.is_valid(),
        event: c.event.as_deref(),
        time_ms: c.time_ms,
        distinct_id: c.distinct_id.as_deref(),
        insert_id: c.insert_id.as_deref(),
        properties: c.properties.iter().map(|p| PropertySeenDto { name: &p.name, kind: p.kind }).collect(),
        bytes: c.bytes,
        issues: &c.issues,
        warnings: &c.warnings,
    }
}

/// Checks one event record (JSON text) against the import rules and returns every issue, the
/// warnings, and what it extracted (`event`, `timeMs`, `distinctId`, `insertId`, properties).
#[wasm_bindgen(js_name = checkEvent, unchecked_return_type = "EventCheck")]
pub fn check_event(record: &str, #[wasm_bindgen(unchecked_param_type = "EventOptions | undefined")] options: JsValue) -> Result<JsValue, JsError> {
    let options: EventOptions = opt_from_js(options, "options")?;
    let limits = options.limits();
    let checked = core::check_event(record.as_bytes(), &limits, options.now_ms());
    to_js(&event_check_dto(&checked))
}

/// Profile-update options.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ProfileOptions {
    limits: Option<Limits>,
    /// Whether `$token` may be left out (a service account authenticates the request).
    token_optional: bool,
}

/// Validates one profile update (`{$token, $distinct_id, <one operation>}`) given as JSON text.
#[wasm_bindgen(js_name = validateProfileUpdateJson, unchecked_return_type = "Issue[]")]
pub fn validate_profile_update_json(text: &str, #[wasm_bindgen(unchecked_param_type = "ProfileOptions | undefined")] options: JsValue) -> Result<JsValue, JsError> {
    let o: ProfileOptions = opt_from_js(options, "options")?;
    let token = if o.token_optional { core::TokenRule::Optional } else { core::TokenRule::Required };
    to_js(&core::validate_profile_update_json(text, &o.limits.unwrap_or_default(), token))
}

/// Validates one profile update given as an object.
#[wasm_bindgen(js_name = validateProfileUpdate, unchecked_return_type = "Issue[]")]
pub fn validate_profile_update(update: JsValue, #[wasm_bindgen(unchecked_param_type = "ProfileOptions | undefined")] options: JsValue) -> Result<JsValue, JsError> {
    let value: serde_json::Value = from_js(update, "the update")?;
    let o: ProfileOptions = opt_from_js(options, "options")?;
    let token = if o.token_optional { core::TokenRule::Optional } else { core::TokenRule::Required };
    to_js(&core::validate_profile_update(&value, &o.limits.unwrap_or_default(), token))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct BodyOptions {
    limits: Option<Limits>,
    now_ms: Option<f64>,
    format: core::InputFormat,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ImportBodyDto {
    /// The HTTP status a strict-mode import would answer.
    status: u16,
    response: core::ImportResponse,
    valid: usize,
    records: usize,
}

/// Checks a whole uncompressed import body (JSON array or NDJSON) as the import would in strict
/// mode: request limits, framing, then every record; returns the answer it would give.
#[wasm_bindgen(js_name = checkImportBody, unchecked_return_type = "ImportBodyCheck")]
pub fn check_import_body(body: &[u8], #[wasm_bindgen(unchecked_param_type = "BodyOptions | undefined")] options: JsValue) -> Result<JsValue, JsError> {
    let o: BodyOptions = opt_from_js(options, "options")?;
    let limits = o.limits.clone().unwrap_or_default();
    let now = o.now_ms.unwrap_or_else(js_sys::Date::now) as i64;
    let dto = match core::check_import_body(body, o.format, &limits, now) {
        Ok(checked) => {
            let response = checked.response();
            ImportBodyDto { status: response.code, response, valid: checked.valid, records: checked.records.len() }
        }
        Err(err) => ImportBodyDto { status: err.status_code(), response: err.response(), valid: 0, records: 0 },
    };
    to_js(&dto)
}

/// Gzips bytes at `level` (0–9, default 6).
#[wasm_bindgen]
pub fn gzip(data: &[u8], level: Option<u32>) -> Vec<u8> {
    core::gzip(data, level.unwrap_or(6))
}

/// Gunzips bytes, failing past `maxBytes` (default: the 10 MB request limit).
#[wasm_bindgen]
pub fn gunzip(data: &[u8], max_bytes: Option<usize>) -> Result<Vec<u8>, JsError> {
    core::gunzip(data, max_bytes.unwrap_or(Limits::default().max_request_bytes)).map_err(|e| JsError::new(&e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// The dictionary

/// Checks one event (JSON text) against a dictionary (an array of schema entries): no schema,
/// unknown property, type mismatch, dropped, hidden.
#[wasm_bindgen(js_name = checkAgainstDictionary, unchecked_return_type = "DictionaryFindings")]
pub fn check_against_dictionary(
    record: &str,
    #[wasm_bindgen(unchecked_param_type = "SchemaEntry[]")] entries: JsValue,
    namespace: Option<String>,
) -> Result<JsValue, JsError> {
    let entries: Vec<SchemaEntry> = from_js(entries, "the dictionary")?;
    let dictionary = core::Dictionary::new(&entries, &namespace_or_default(namespace));
    // The time rule does not matter here: only the extracted fields are used.
    let checked = core::check_event(record.as_bytes(), &Limits::default(), i64::MAX / 2);
    to_js(&core::check_against_dictionary(&checked, &dictionary))
}

/// The dictionary as CSV (one row per entity, then one per property; round-trips exactly).
#[wasm_bindgen(js_name = dictionaryToCsv)]
pub fn dictionary_to_csv(#[wasm_bindgen(unchecked_param_type = "SchemaEntry[]")] entries: JsValue, namespace: Option<String>) -> Result<String, JsError> {
    let entries: Vec<SchemaEntry> = from_js(entries, "the dictionary")?;
    Ok(core::dictionary_to_csv(&entries, &namespace_or_default(namespace)))
}

#[derive(Serialize)]
struct CsvImportDto {
    entries: Vec<SchemaEntry>,
    issues: Vec<core::Issue>,
}

/// Reads a dictionary from CSV; returns `{entries, issues}` (entries empty when there are issues).
#[wasm_bindgen(js_name = dictionaryFromCsv, unchecked_return_type = "{ entries: SchemaEntry[]; issues: Issue[] }")]
pub fn dictionary_from_csv(text: &str, namespace: Option<String>) -> Result<JsValue, JsError> {
    let dto = match core::dictionary_from_csv(text, &namespace_or_default(namespace)) {
        Ok(entries) => CsvImportDto { entries, issues: Vec::new() },
        Err(issues) => CsvImportDto { entries: Vec::new(), issues },
    };
    to_js(&dto)
}

/// Validates a batch-upload body `{entries, truncate}`.
#[wasm_bindgen(js_name = validateBatchBody, unchecked_return_type = "Issue[]")]
pub fn validate_batch_body(body: JsValue, namespace: Option<String>) -> Result<JsValue, JsError> {
    let value: serde_json::Value = from_js(body, "the body")?;
    to_js(&core::validate_batch_body(&value, &rules(namespace)))
}

/// The draft-07 JSON Schema of one entry.
#[wasm_bindgen(js_name = entityJsonSchema, unchecked_return_type = "Record<string, unknown>")]
pub fn entity_json_schema(#[wasm_bindgen(unchecked_param_type = "SchemaEntry")] entry: JsValue, namespace: Option<String>) -> Result<JsValue, JsError> {
    let entry: SchemaEntry = from_js(entry, "the entry")?;
    to_js(&core::entity_json_schema(&entry, &namespace_or_default(namespace)))
}

/// What turns dictionary `old` into `new`: added entries, removed keys, changed fields.
#[wasm_bindgen(js_name = diffDictionaries, unchecked_return_type = "DictionaryDiff")]
pub fn diff_dictionaries(
    #[wasm_bindgen(unchecked_param_type = "SchemaEntry[]")] old: JsValue,
    #[wasm_bindgen(unchecked_param_type = "SchemaEntry[]")] new: JsValue,
) -> Result<JsValue, JsError> {
    let old: Vec<SchemaEntry> = from_js(old, "the old dictionary")?;
    let new: Vec<SchemaEntry> = from_js(new, "the new dictionary")?;
    to_js(&core::diff_dictionaries(&old, &new))
}

// ---------------------------------------------------------------------------------------------
// The streaming batcher

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct BatcherOptions {
    limits: Option<Limits>,
    /// 0–9; `null` leaves bodies uncompressed; absent means 6.
    #[serde(deserialize_with = "present")]
    gzip_level: Option<Option<u32>>,
    format: core::InputFormat,
    now_ms: Option<f64>,
    dictionary: Option<Vec<SchemaEntry>>,
    namespace: Option<String>,
    summary_examples: Option<usize>,
    kind: KindDto,
    /// For profile updates: whether each must carry `$token` (default `required`).
    profile_token: core::TokenRule,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
enum KindDto {
    #[default]
    Events,
    ProfileUpdates,
}

/// Tells a field given as `null` (`Some(None)`) from a missing one (`None`, via `default`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchMetaDto<'a> {
    gzipped: bool,
    positions: &'a [core::RecordPos],
    uncompressed_bytes: usize,
    sequence: u64,
    events: usize,
}

/// The streaming batcher: `push(chunk)` any bytes of NDJSON or a JSON array (split anywhere),
/// `nextBatch()` after each push to pull ready request bodies, `finish()` at the end.
#[wasm_bindgen]
pub struct Batcher {
    inner: core::Batcher,
}

#[wasm_bindgen]
impl Batcher {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "BatcherOptions | undefined")] options: JsValue) -> Result<Batcher, JsError> {
        let o: BatcherOptions = opt_from_js(options, "options")?;
        let namespace = namespace_or_default(o.namespace);
        let defaults = core::BatchOptions::default();
        let options = core::BatchOptions {
            limits: o.limits.unwrap_or_default(),
            gzip_level: o.gzip_level.unwrap_or(defaults.gzip_level),
            format: o.format,
            now_ms: o.now_ms.unwrap_or_else(js_sys::Date::now) as i64,
            dictionary: o.dictionary.map(|d| core::Dictionary::new(&d, &namespace)),
            summary_examples: o.summary_examples.unwrap_or(defaults.summary_examples),
            kind: match o.kind {
                KindDto::Events => core::RecordKind::Events,
                KindDto::ProfileUpdates => core::RecordKind::ProfileUpdates(o.profile_token),
            },
        };
        Ok(Batcher { inner: core::Batcher::new(options) })
    }

    /// Feeds one chunk; throws on a framing error (the input is not NDJSON or a JSON array).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsError> {
        self.inner.push(chunk).map_err(|e| JsError::new(&e.to_string()))
    }

    /// Ends the input and closes the last batch.
    pub fn finish(&mut self) -> Result<(), JsError> {
        self.inner.finish().map_err(|e| JsError::new(&e.to_string()))
    }

    /// The next ready body as `{body: Uint8Array, gzipped, positions, uncompressedBytes,
    /// sequence, events}`, or `undefined`.
    #[wasm_bindgen(js_name = nextBatch, unchecked_return_type = "Batch | undefined")]
    pub fn next_batch(&mut self) -> Result<JsValue, JsError> {
        let Some(batch) = self.inner.next_batch() else {
            return Ok(JsValue::UNDEFINED);
        };
        let meta = to_js(&BatchMetaDto {
            gzipped: batch.gzipped,
            positions: &batch.positions,
            uncompressed_bytes: batch.uncompressed_bytes,
            sequence: batch.sequence,
            events: batch.events(),
        })?;
        // The body goes across as one copy into a Uint8Array, not as an array of numbers.
        js_sys::Reflect::set(&meta, &JsValue::from_str("body"), &js_sys::Uint8Array::from(batch.body.as_slice()))
            .map_err(|_| JsError::new("cannot attach the body to the batch"))?;
        Ok(meta)
    }

    /// The next ready body like [`Batcher::next_batch`], with `positions` packed into one
    /// `Float64Array` of `(index, line)` pairs instead of an array of objects: a batch of 2,000
    /// events crosses as two typed arrays and a few numbers rather than 2,000 objects, which is
    /// what a bulk importer wants (`mapFailedRecords` takes either form).
    ///
    /// With `into`, a buffer the caller is done with, the body is copied into it when it fits
    /// (`body` is then a view of its first bytes), so that a caller who recycles its buffers
    /// allocates none per batch; when it does not fit, `body` is a view of a new buffer with an
    /// eighth more room, worth keeping for the next call.
    #[wasm_bindgen(js_name = nextBatchPacked, unchecked_return_type = "PackedBatch | undefined")]
    pub fn next_batch_packed(&mut self, into: Option<js_sys::Uint8Array>) -> Result<JsValue, JsError> {
        let Some(batch) = self.inner.next_batch() else {
            return Ok(JsValue::UNDEFINED);
        };
        let positions: Vec<f64> = batch.positions.iter().flat_map(|p| [p.index as f64, p.line as f64]).collect();
        let meta = js_sys::Object::new();
        let set = |key: &str, value: JsValue| {
            js_sys::Reflect::set(&meta, &JsValue::from_str(key), &value).map_err(|_| JsError::new("cannot build the batch object"))
        };
        let len = batch.body.len() as u32;
        let body = match into {
            Some(buffer) if buffer.length() >= len => buffer.subarray(0, len),
            Some(_) => js_sys::Uint8Array::new_with_length(len.saturating_add(len / 8)).subarray(0, len),
            None => js_sys::Uint8Array::new_with_length(len),
        };
        body.copy_from(&batch.body);
        set("body", body.into())?;
        set("gzipped", batch.gzipped.into())?;
        set("positions", js_sys::Float64Array::from(positions.as_slice()).into())?;
        set("uncompressedBytes", (batch.uncompressed_bytes as f64).into())?;
        set("sequence", (batch.sequence as f64).into())?;
        set("events", (batch.events() as f64).into())?;
        Ok(meta.into())
    }

    /// The number of ready bodies not pulled yet.
    pub fn ready(&self) -> usize {
        self.inner.ready()
    }

    /// Records rejected since the last call: `[{pos: {index, line}, issues}]`.
    #[wasm_bindgen(js_name = takeRejected, unchecked_return_type = "Rejected[]")]
    pub fn take_rejected(&mut self) -> Result<JsValue, JsError> {
        to_js(&self.inner.take_rejected())
    }

    /// Every issue, warning and dictionary finding so far, by code, event and property.
    #[wasm_bindgen(unchecked_return_type = "IssueSummary")]
    pub fn summary(&self) -> Result<JsValue, JsError> {
        to_js(self.inner.summary())
    }

    /// Totals: records, batched, rejected, dropped, rewritten, inputBytes, batches.
    #[wasm_bindgen(unchecked_return_type = "BatchStats")]
    pub fn stats(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.stats())
    }
}

// ---------------------------------------------------------------------------------------------
// Requests and responses

/// Every interface on one host (`/api/app`, `/import`, `/engage`, `/migrate`).
#[wasm_bindgen(js_name = singleHostEndpoints, unchecked_return_type = "Endpoints")]
pub fn single_host_endpoints(host: &str) -> Result<JsValue, JsError> {
    to_js(&core::Endpoints::single_host(host))
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
}

fn yes() -> bool {
    true
}

/// The URL of one operation: `{endpoints, region?, operation, projectId, ...}` with operation one
/// of `schemas`, `schemasOfType` (`entityType`, optional `name`), `schema` (`entityType`,
/// `name`), `manualSync` (`importId`), `import` (`strict`, default true), `engage`, `migrate`
/// (`sourceTool`).
#[wasm_bindgen(js_name = operationUrl)]
pub fn operation_url(#[wasm_bindgen(unchecked_param_type = "UrlRequest")] request: JsValue) -> Result<String, JsError> {
    let r: UrlRequest = from_js(request, "the URL request")?;
    let need = |v: Option<String>, field: &str| v.ok_or_else(|| JsError::new(&format!("operation `{}` needs `{field}`", r.operation)));
    let entity = || r.entity_type.ok_or_else(|| JsError::new(&format!("operation `{}` needs `entityType`", r.operation)));
    let e = &r.endpoints;
    Ok(match r.operation.as_str() {
        "schemas" => e.schemas(r.region, r.project_id),
        "schemasOfType" => e.schemas_of_type(r.region, r.project_id, entity()?, r.name.as_deref()),
        "schema" => e.schema(r.region, r.project_id, entity()?, &need(r.name.clone(), "name")?),
        "manualSync" => e.manual_sync(r.region, r.project_id, &need(r.import_id.clone(), "importId")?),
        "import" => e.import(r.region, r.project_id, r.strict),
        "engage" => e.engage(r.region),
        "migrate" => e.migrate(&need(r.source_tool.clone(), "sourceTool")?),
        other => return Err(JsError::new(&format!("unknown operation `{other}`: use schemas, schemasOfType, schema, manualSync, import, engage or migrate"))),
    })
}

/// The `authorization` header value (`Basic ...`) of service-account or project-token credentials.
#[wasm_bindgen(js_name = authorizationHeader)]
pub fn authorization_header(#[wasm_bindgen(unchecked_param_type = "Credentials")] credentials: JsValue) -> Result<String, JsError> {
    let c: core::Credentials = from_js(credentials, "the credentials")?;
    Ok(c.header_value())
}

/// The headers of an import request as an object of lowercase names.
#[wasm_bindgen(js_name = importHeaders, unchecked_return_type = "Record<string, string>")]
pub fn import_headers(#[wasm_bindgen(unchecked_param_type = "Credentials")] credentials: JsValue, gzipped: bool) -> Result<JsValue, JsError> {
    let c: core::Credentials = from_js(credentials, "the credentials")?;
    let map: serde_json::Map<String, serde_json::Value> = core::import_headers(&c, gzipped).into_iter().map(|(k, v)| (k, v.into())).collect();
    to_js(&map)
}

/// Reads an import answer (any status; a non-JSON body becomes `error`).
#[wasm_bindgen(js_name = parseImportResponse, unchecked_return_type = "ImportResponse")]
pub fn parse_import_response(status: u16, body: &str) -> Result<JsValue, JsError> {
    to_js(&core::parse_import_response(status, body.as_bytes()))
}

/// Maps a 400's failed records back to input positions, given the batch's `positions`.
#[wasm_bindgen(js_name = mapFailedRecords, unchecked_return_type = "FailedInput[]")]
pub fn map_failed_records(
    #[wasm_bindgen(unchecked_param_type = "RecordPos[] | Float64Array")] positions: JsValue,
    #[wasm_bindgen(unchecked_param_type = "ImportResponse")] response: JsValue,
) -> Result<JsValue, JsError> {
    let positions: Vec<core::RecordPos> = match positions.dyn_ref::<js_sys::Float64Array>() {
        // The packed form of `nextBatchPacked`: (index, line) pairs.
        Some(packed) => packed.to_vec().chunks_exact(2).map(|p| core::RecordPos { index: p[0] as u64, line: p[1] as u64 }).collect(),
        None => from_js(positions, "positions")?,
    };
    let response: core::ImportResponse = from_js(response, "the response")?;
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
    #[wasm_bindgen(unchecked_param_type = "Partial<RetryPolicy> | undefined")] policy: JsValue,
) -> Result<JsValue, JsError> {
    let policy: core::RetryPolicy = opt_from_js(policy, "the policy")?;
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
pub fn parse_retry_after(value: &str, now_ms: f64) -> Option<f64> {
    core::parse_retry_after(value, now_ms as i64).map(|ms| ms as f64)
}

// ---------------------------------------------------------------------------------------------
// Migration

/// Validates a migration request body against `today` (`YYYY-MM-DD`) and resolves its range.
#[wasm_bindgen(js_name = validateMigrationRequest, unchecked_return_type = "MigrationCheck")]
pub fn validate_migration_request(body: JsValue, today: &str) -> Result<JsValue, JsError> {
    let value: serde_json::Value = from_js(body, "the request")?;
    let today = core::Date::parse(today).ok_or_else(|| JsError::new(&format!("today is {today:?}; pass a date written YYYY-MM-DD")))?;
    to_js(&core::validate_migration_request(&value, today))
}

/// The source tool's export archive (a zip of gzipped NDJSON), read member by member.
#[wasm_bindgen]
pub struct ExportArchive {
    bytes: Vec<u8>,
}

#[wasm_bindgen]
impl ExportArchive {
    /// Opens the archive; throws when the bytes are not a zip.
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: Vec<u8>) -> Result<ExportArchive, JsError> {
        core::ExportArchive::new(&bytes).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(ExportArchive { bytes })
    }

    /// The data members' names, sorted (time order).
    #[wasm_bindgen(js_name = memberNames)]
    pub fn member_names(&self) -> Result<Vec<String>, JsError> {
        let archive = core::ExportArchive::new(&self.bytes).map_err(|e| JsError::new(&e.to_string()))?;
        archive.member_names().map_err(|e| JsError::new(&e.to_string()))
    }

    /// One member's NDJSON, gunzipped; throws past `maxBytes` (default 1 GiB).
    #[wasm_bindgen(js_name = readMember)]
    pub fn read_member(&self, name: &str, max_bytes: Option<usize>) -> Result<Vec<u8>, JsError> {
        let mut archive = core::ExportArchive::new(&self.bytes).map_err(|e| JsError::new(&e.to_string()))?;
        archive.read_member(name, max_bytes.unwrap_or(1 << 30)).map_err(|e| JsError::new(&e.to_string()))
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TransformErrorDto {
    line: u64,
    message: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MemberDto {
    events: u64,
    errors: Vec<TransformErrorDto>,
}

/// Transforms the source tool's events into events of this service, member by member, and keeps
/// the latest profile properties per user for `profileUpdates()`.
#[wasm_bindgen]
pub struct MigrationTransformer {
    profiles: core::ProfileAccumulator,
    limits: Limits,
    last: Vec<u8>,
}

#[wasm_bindgen]
impl MigrationTransformer {
    #[wasm_bindgen(constructor)]
    pub fn new() -> MigrationTransformer {
        MigrationTransformer { profiles: core::ProfileAccumulator::default(), limits: Limits::default(), last: Vec::new() }
    }

    /// Transforms one member's NDJSON; returns `{events, errors: [{line, message}]}` and keeps the
    /// output NDJSON for `takeNdjson()`.
    #[wasm_bindgen(js_name = transformMember, unchecked_return_type = "{ events: number; errors: { line: number; message: string }[] }")]
    pub fn transform_member(&mut self, ndjson: &[u8]) -> Result<JsValue, JsError> {
        let out = core::transform_ndjson(ndjson, &self.limits, &mut self.profiles);
        self.last = out.ndjson;
        to_js(&MemberDto { events: out.events, errors: out.errors.into_iter().map(|(line, e)| TransformErrorDto { line, message: e.to_string() }).collect() })
    }

    /// The NDJSON of the last transformed member (ready for a `Batcher`); empties the buffer.
    #[wasm_bindgen(js_name = takeNdjson)]
    pub fn take_ndjson(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.last)
    }

    /// One `$set` profile update per user seen, with the latest value of each property.
    #[wasm_bindgen(js_name = profileUpdates, unchecked_return_type = "Record<string, unknown>[]")]
    pub fn profile_updates(&self) -> Result<JsValue, JsError> {
        to_js(&self.profiles.updates())
    }
}

impl Default for MigrationTransformer {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** One problem found in an input. */
export interface Issue {
  /** Where, in the dotted form the API uses, e.g. `schemaJson.properties.price.type` or `properties.time`. */
  path: string;
  /** A stable identifier such as `missing_field`, `time_too_early`, `type_mismatch`. */
  code: string;
  /** What was found and how to fix it. */
  message: string;
}

export type EntityType = "event" | "profile";
export type PropertyType = "array" | "boolean" | "integer" | "null" | "number" | "object" | "string";

export interface PropertyDef {
  type: PropertyType;
  description?: string;
  metadata?: Record<string, unknown>;
}

export interface Schema {
  description?: string;
  properties?: Record<string, PropertyDef>;
  metadata?: Record<string, unknown>;
}

export interface SchemaEntry {
  entityType: EntityType;
  name: string;
  schemaJson: Schema;
}

/** The import and profile limits; `max*` are inclusive, `*Below` exclusive. */
export interface Limits {
  maxEventsPerRequest: number;
  maxRequestBytes: number;
  eventBytesBelow: number;
  propertiesBelow: number;
  maxDepth: number;
  objectKeysBelow: number;
  arrayItemsBelow: number;
  stringTruncateBytes: number;
  maxInsertIdBytes: number;
  forbiddenIds: string[];
  maxFutureMs: number;
  minTimeMs: number;
  maxProfileUpdatesPerRequest: number;
  maxProfileUpdateBytes: number;
  maxProfileProperties: number;
}

export interface EventOptions {
  /** Any subset of the limits; the rest take the defaults. */
  limits?: Partial<Limits>;
  /** The receiver's clock in ms since the epoch; `Date.now()` when absent. */
  nowMs?: number;
}

export interface EventCheck {
  valid: boolean;
  event: string | null;
  timeMs: number | null;
  distinctId: string | null;
  insertId: string | null;
  properties: { name: string; kind: PropertyType }[];
  bytes: number;
  issues: Issue[];
  warnings: Issue[];
}

export interface ProfileOptions {
  limits?: Partial<Limits>;
  /** Allow updates without `$token` (a service account authenticates the request). */
  tokenOptional?: boolean;
}

export type InputFormat = "auto" | "ndjson" | "jsonarray";

export interface BodyOptions extends EventOptions {
  format?: InputFormat;
}

export interface FailedRecord {
  index: number;
  $insert_id: string;
  field: string;
  message: string;
}

export interface ImportResponse {
  code: number;
  error?: string;
  failed_records?: FailedRecord[];
  num_records_imported?: number;
  status: string;
}

export interface ImportBodyCheck {
  /** The HTTP status a strict-mode import would answer (200, 400 or 413). */
  status: number;
  response: ImportResponse;
  valid: number;
  records: number;
}

export interface DictionaryFindings {
  issues: Issue[];
  dropEvent: boolean;
  droppedProperties: string[];
}

export interface FieldChange {
  path: string;
  old?: unknown;
  new?: unknown;
}

export interface DictionaryDiff {
  added: SchemaEntry[];
  removed: { entityType: EntityType; name: string }[];
  changed: { entityType: EntityType; name: string; changes: FieldChange[] }[];
}

export interface BatcherOptions extends EventOptions {
  /** 0-9; `null` leaves bodies uncompressed; default 6. */
  gzipLevel?: number | null;
  format?: InputFormat;
  /** Check events against these schemas: dropped events are left out, dropped properties removed. */
  dictionary?: SchemaEntry[];
  namespace?: string;
  summaryExamples?: number;
  /** `profileUpdates` batches `/engage` updates (at most 2,000 per body, 1 MB each); default `events`. */
  kind?: "events" | "profileUpdates";
  /** For profile updates: whether each must carry `$token`; default `required`. */
  profileToken?: "required" | "optional";
}

/** Where a record was in the input: its ordinal and the 1-based line it starts on. */
export interface RecordPos {
  index: number;
  line: number;
}

export interface Batch {
  /** A JSON array of events, gzipped unless `gzipped` is false. */
  body: Uint8Array;
  gzipped: boolean;
  /** `positions[i]` is where the batch's i-th event was in the input. */
  positions: RecordPos[];
  uncompressedBytes: number;
  sequence: number;
  events: number;
}

/** A batch of `nextBatchPacked()`: `positions` holds `(index, line)` pairs, so the batch's i-th
 * event was record `positions[2 * i]` of the input, starting on line `positions[2 * i + 1]`. */
export interface PackedBatch {
  body: Uint8Array;
  gzipped: boolean;
  positions: Float64Array;
  uncompressedBytes: number;
  sequence: number;
  events: number;
}

export interface Rejected {
  pos: RecordPos;
  issues: Issue[];
}

export interface Tally {
  count: number;
  examples: RecordPos[];
}

export interface IssueSummary {
  records: number;
  recordsWithIssues: number;
  byCode: Record<string, Tally>;
  byEvent: Record<string, Tally>;
  byProperty: Record<string, Tally>;
  maxExamples: number;
}

export interface BatchStats {
  records: number;
  batched: number;
  rejected: number;
  dropped: number;
  rewritten: number;
  inputBytes: number;
  batches: number;
}

export type Region = "default" | "eu" | "in";

export interface Endpoints {
  app: { default: string; eu: string; in: string };
  ingest: { default: string; eu: string; in: string };
  migrate: string;
}

export interface UrlRequest {
  endpoints: Endpoints;
  region?: Region;
  operation: "schemas" | "schemasOfType" | "schema" | "manualSync" | "import" | "engage" | "migrate";
  projectId?: number;
  entityType?: EntityType;
  name?: string;
  importId?: string;
  sourceTool?: string;
  strict?: boolean;
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

export interface MigrationCheck {
  issues: Issue[];
  /** The resolved range (both ends included), or null when the dates are unusable. */
  range: { start: string; end: string } | null;
}
"#;
