//! Migration from the source tool: the request's check, its export archive read member by member,
//! and the transform of its events and profiles.

use crate::{args, fail, to_js, JsResult};
use datadict_core as core;
use datadict_core::Limits;
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Validates a migration request body against `today` (`YYYY-MM-DD`) and resolves its range.
#[wasm_bindgen(js_name = validateMigrationRequest, unchecked_return_type = "MigrationCheck")]
pub fn validate_migration_request(
    #[wasm_bindgen(unchecked_param_type = "unknown")] body: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] today: JsValue,
) -> JsResult<JsValue> {
    let value = args::json(&body, "validateMigrationRequest: body")?;
    let today = args::text(&today, "validateMigrationRequest: today")?;
    let today = core::Date::parse(&today).ok_or_else(|| args::error(&format!("today is {today:?}; pass a date written YYYY-MM-DD")))?;
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
    pub fn new(#[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue) -> JsResult<ExportArchive> {
        let bytes = args::bytes(&bytes, "new ExportArchive: bytes")?;
        core::ExportArchive::new(&bytes).map_err(fail)?;
        Ok(ExportArchive { bytes })
    }

    /// The data members' names, sorted (time order).
    #[wasm_bindgen(js_name = memberNames)]
    pub fn member_names(&self) -> JsResult<Vec<String>> {
        let archive = core::ExportArchive::new(&self.bytes).map_err(fail)?;
        archive.member_names().map_err(fail)
    }

    /// One member's NDJSON, gunzipped; throws past `maxBytes` (default 1 GiB).
    #[wasm_bindgen(js_name = readMember)]
    pub fn read_member(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number | null")] max_bytes: JsValue,
    ) -> JsResult<Vec<u8>> {
        let name = args::text(&name, "ExportArchive.readMember: name")?;
        let max = args::opt_number(&max_bytes, "ExportArchive.readMember: maxBytes")?.map_or(1 << 30, |m| m.max(0.0) as usize);
        let mut archive = core::ExportArchive::new(&self.bytes).map_err(fail)?;
        archive.read_member(&name, max).map_err(fail)
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
    pub fn transform_member(&mut self, #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] ndjson: JsValue) -> JsResult<JsValue> {
        let ndjson = args::bytes(&ndjson, "MigrationTransformer.transformMember: ndjson")?;
        let out = core::transform_ndjson(&ndjson, &self.limits, &mut self.profiles);
        self.last = out.ndjson;
        to_js(&MemberDto { events: out.events, errors: out.errors.into_iter().map(|(line, e)| TransformErrorDto { line, message: e.to_string() }).collect() })
    }

    /// The NDJSON of the last transformed member (ready for a `Batcher`); empties the buffer.
    #[wasm_bindgen(js_name = takeNdjson)]
    pub fn take_ndjson(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.last)
    }

    /// One `$set_once` profile update per user seen, with the latest value of each property: a
    /// migrated value never replaces one the profile has.
    #[wasm_bindgen(js_name = profileUpdates, unchecked_return_type = "Record<string, unknown>[]")]
    pub fn profile_updates(&self) -> JsResult<JsValue> {
        to_js(&self.profiles.updates())
    }
}

impl Default for MigrationTransformer {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_MIGRATION: &'static str = r#"
export interface MigrationCheck {
  issues: Issue[];
  /** The resolved range (both ends included), or null when the dates are unusable. */
  range: { start: string; end: string } | null;
}
"#;
