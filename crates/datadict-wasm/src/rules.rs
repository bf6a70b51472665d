//! Schema entries, events, profile updates, whole import bodies, gzip and the dictionary: the
//! core's rules under their JavaScript names.

use crate::args::{self, type_error};
use crate::{fail, namespace_or_default, rules, to_js, JsResult};
use datadict_core as core;
use datadict_core::{Limits, SchemaEntry, DEFAULT_NAMESPACE};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

/// Validates one schema entry given as a JavaScript object (or any JSON-compatible value) and
/// returns every issue as `{path, code, message}`; an empty array means valid.
#[wasm_bindgen(js_name = validateSchemaEntry, unchecked_return_type = "Issue[]")]
pub fn validate_schema_entry(
    #[wasm_bindgen(unchecked_param_type = "unknown")] entry: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string | null")] namespace: JsValue,
) -> JsResult<JsValue> {
    const AT: &str = "validateSchemaEntry";
    let rules = rules(&namespace, AT)?;
    let value = args::json(&entry, "validateSchemaEntry: entry")?;
    to_js(&core::validate_schema_entry(&value, &rules))
}

/// Validates one schema entry given as JSON text; undecodable text is reported as an issue.
#[wasm_bindgen(js_name = validateSchemaEntryJson, unchecked_return_type = "Issue[]")]
pub fn validate_schema_entry_json(
    #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string | null")] namespace: JsValue,
) -> JsResult<JsValue> {
    let text = args::text(&text, "validateSchemaEntryJson: text")?;
    to_js(&core::validate_schema_entry_json(&text, &rules(&namespace, "validateSchemaEntryJson")?))
}

/// The default metadata namespace (`com.vendor`).
#[wasm_bindgen(js_name = defaultNamespace)]
pub fn default_namespace() -> String {
    DEFAULT_NAMESPACE.to_owned()
}

/// The limits of the import and profile interfaces with their documented defaults.
#[wasm_bindgen(js_name = defaultLimits, unchecked_return_type = "Limits")]
pub fn default_limits() -> JsResult<JsValue> {
    to_js(&Limits::default())
}


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
pub fn check_event(
    #[wasm_bindgen(unchecked_param_type = "string")] record: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "EventOptions")] options: JsValue,
) -> JsResult<JsValue> {
    let record = args::text(&record, "checkEvent: record (the event's JSON text; JSON.stringify an object)")?;
    let options: EventOptions = args::opt_typed(&options, "checkEvent: options")?;
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
pub fn validate_profile_update_json(
    #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "ProfileOptions")] options: JsValue,
) -> JsResult<JsValue> {
    let text = args::text(&text, "validateProfileUpdateJson: text")?;
    let o: ProfileOptions = args::opt_typed(&options, "validateProfileUpdateJson: options")?;
    let token = if o.token_optional { core::TokenRule::Optional } else { core::TokenRule::Required };
    to_js(&core::validate_profile_update_json(&text, &o.limits.unwrap_or_default(), token))
}

/// Validates one profile update given as an object.
#[wasm_bindgen(js_name = validateProfileUpdate, unchecked_return_type = "Issue[]")]
pub fn validate_profile_update(
    #[wasm_bindgen(unchecked_param_type = "unknown")] update: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "ProfileOptions")] options: JsValue,
) -> JsResult<JsValue> {
    let value = args::json(&update, "validateProfileUpdate: update")?;
    let o: ProfileOptions = args::opt_typed(&options, "validateProfileUpdate: options")?;
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
pub fn check_import_body(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer | string")] body: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "BodyOptions")] options: JsValue,
) -> JsResult<JsValue> {
    let body = args::bytes(&body, "checkImportBody: body")?;
    let o: BodyOptions = args::opt_typed(&options, "checkImportBody: options")?;
    let limits = o.limits.clone().unwrap_or_default();
    let now = o.now_ms.unwrap_or_else(js_sys::Date::now) as i64;
    let dto = match core::check_import_body(&body, o.format, &limits, now) {
        Ok(checked) => {
            let response = checked.response();
            ImportBodyDto { status: response.code, response, valid: checked.valid, records: checked.records.len() }
        }
        Err(err) => ImportBodyDto { status: err.status_code(), response: err.response(), valid: 0, records: 0 },
    };
    to_js(&dto)
}

/// Gzips bytes (a string is taken as its UTF-8) at `level` (0–9, default 6).
#[wasm_bindgen]
pub fn gzip(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer | string")] data: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "number | null")] level: JsValue,
) -> JsResult<Vec<u8>> {
    let data = args::bytes(&data, "gzip: data")?;
    let level = match args::opt_number(&level, "gzip: level")? {
        None => 6,
        Some(l) if l.fract() == 0.0 && (0.0..=9.0).contains(&l) => l as u32,
        Some(l) => return Err(args::range_error(&format!("gzip: level must be a whole number from 0 to 9, got {l}"))),
    };
    Ok(core::gzip(&data, level))
}

/// Gunzips bytes, failing past `maxBytes` (default: the 10 MB request limit).
#[wasm_bindgen]
pub fn gunzip(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] data: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "number | null")] max_bytes: JsValue,
) -> JsResult<Vec<u8>> {
    if data.is_string() {
        return Err(type_error("gunzip: data must be gzip bytes (a Uint8Array, Buffer or ArrayBuffer), got a string"));
    }
    let data = args::bytes(&data, "gunzip: data")?;
    let max = match args::opt_number(&max_bytes, "gunzip: maxBytes")? {
        None => Limits::default().max_request_bytes,
        Some(m) if m >= 0.0 => (m as usize).min(args::MAX_INPUT_BYTES as usize),
        Some(m) => return Err(args::range_error(&format!("gunzip: maxBytes must not be negative, got {m}"))),
    };
    core::gunzip(&data, max).map_err(fail)
}


/// Checks one event (JSON text) against a dictionary (an array of schema entries): no schema,
/// unknown property, type mismatch, dropped, hidden.
#[wasm_bindgen(js_name = checkAgainstDictionary, unchecked_return_type = "DictionaryFindings")]
pub fn check_against_dictionary(
    #[wasm_bindgen(unchecked_param_type = "string")] record: JsValue,
    #[wasm_bindgen(unchecked_param_type = "SchemaEntry[]")] entries: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string | null")] namespace: JsValue,
) -> JsResult<JsValue> {
    const AT: &str = "checkAgainstDictionary";
    let record = args::text(&record, "checkAgainstDictionary: record (the event's JSON text; JSON.stringify an object)")?;
    let entries: Vec<SchemaEntry> = args::typed(&entries, "checkAgainstDictionary: entries (the dictionary)")?;
    let dictionary = core::Dictionary::new(&entries, &namespace_or_default(&namespace, AT)?);
    // The time rule does not matter here: only the extracted fields are used.
    let checked = core::check_event(record.as_bytes(), &Limits::default(), i64::MAX / 2);
    to_js(&core::check_against_dictionary(&checked, &dictionary))
}

/// The dictionary as CSV (one row per entity, then one per property; round-trips exactly).
#[wasm_bindgen(js_name = dictionaryToCsv)]
pub fn dictionary_to_csv(
    #[wasm_bindgen(unchecked_param_type = "SchemaEntry[]")] entries: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string | null")] namespace: JsValue,
) -> JsResult<String> {
    let entries: Vec<SchemaEntry> = args::typed(&entries, "dictionaryToCsv: entries (the dictionary)")?;
    Ok(core::dictionary_to_csv(&entries, &namespace_or_default(&namespace, "dictionaryToCsv")?))
}

#[derive(Serialize)]
struct CsvImportDto {
    entries: Vec<SchemaEntry>,
    issues: Vec<core::Issue>,
}

/// Reads a dictionary from CSV; returns `{entries, issues}` (entries empty when there are issues).
#[wasm_bindgen(js_name = dictionaryFromCsv, unchecked_return_type = "{ entries: SchemaEntry[]; issues: Issue[] }")]
pub fn dictionary_from_csv(
    #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string | null")] namespace: JsValue,
) -> JsResult<JsValue> {
    let text = args::text(&text, "dictionaryFromCsv: text")?;
    let dto = match core::dictionary_from_csv(&text, &namespace_or_default(&namespace, "dictionaryFromCsv")?) {
        Ok(entries) => CsvImportDto { entries, issues: Vec::new() },
        Err(issues) => CsvImportDto { entries: Vec::new(), issues },
    };
    to_js(&dto)
}

/// Validates a batch-upload body `{entries, truncate}`.
#[wasm_bindgen(js_name = validateBatchBody, unchecked_return_type = "Issue[]")]
pub fn validate_batch_body(
    #[wasm_bindgen(unchecked_param_type = "unknown")] body: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string | null")] namespace: JsValue,
) -> JsResult<JsValue> {
    let rules = rules(&namespace, "validateBatchBody")?;
    let value = args::json(&body, "validateBatchBody: body")?;
    to_js(&core::validate_batch_body(&value, &rules))
}

/// The draft-07 JSON Schema of one entry.
#[wasm_bindgen(js_name = entityJsonSchema, unchecked_return_type = "Record<string, unknown>")]
pub fn entity_json_schema(
    #[wasm_bindgen(unchecked_param_type = "SchemaEntry")] entry: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "string | null")] namespace: JsValue,
) -> JsResult<JsValue> {
    let entry: SchemaEntry = args::typed(&entry, "entityJsonSchema: entry")?;
    to_js(&core::entity_json_schema(&entry, &namespace_or_default(&namespace, "entityJsonSchema")?))
}

/// What turns dictionary `old` into `new`: added entries, removed keys, changed fields.
#[wasm_bindgen(js_name = diffDictionaries, unchecked_return_type = "DictionaryDiff")]
pub fn diff_dictionaries(
    #[wasm_bindgen(unchecked_param_type = "SchemaEntry[]")] old: JsValue,
    #[wasm_bindgen(unchecked_param_type = "SchemaEntry[]")] new: JsValue,
) -> JsResult<JsValue> {
    let old: Vec<SchemaEntry> = args::typed(&old, "diffDictionaries: old (the old dictionary)")?;
    let new: Vec<SchemaEntry> = args::typed(&new, "diffDictionaries: new (the new dictionary)")?;
    to_js(&core::diff_dictionaries(&old, &new))
}

#[wasm_bindgen(typescript_custom_section)]
const TS_RULES: &'static str = r#"
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
"#;
