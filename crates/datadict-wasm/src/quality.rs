//! The `datadict violations` CI gate's rule for JavaScript: the `--fail-on` codes, which of a
//! quality summary's counts fail the gate, and how a `--since`/`--until` value reads; all three
//! are the core's ([`datadict_core::quality_gate`]).

use crate::{from_js, to_js};
use datadict_core::quality_gate as core;
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// The codes `--fail-on` takes (`any`, `rejected`, and the dictionary check's codes).
#[wasm_bindgen(js_name = failOnChoices)]
pub fn fail_on_choices() -> Vec<String> {
    core::FAIL_ON.iter().map(|c| (*c).to_owned()).collect()
}

/// The codes of the `--fail-on` values given (each may hold several, separated by commas), each
/// once; `["any"]` for none. Throws for a value that names no code.
#[wasm_bindgen(js_name = failOnCodes)]
pub fn fail_on_codes(values: Vec<String>) -> Result<Vec<String>, JsError> {
    core::fail_on_codes(&values).map_err(|e| JsError::new(&e.to_string()))
}

/// What of `codes` occurred in a quality summary (the `results` of `GET quality/summary`):
/// `[label, count]` pairs, empty when the gate passes.
#[wasm_bindgen(js_name = gateHits, unchecked_return_type = "[string, number][]")]
pub fn gate_hits(#[wasm_bindgen(unchecked_param_type = "QualitySummary")] summary: JsValue, codes: Vec<String>) -> Result<JsValue, JsError> {
    let summary: Value = from_js(summary, "the quality summary")?;
    to_js(&core::gate_hits(&summary, &codes))
}

/// The instant a `since`/`until` value names (a `YYYY-MM-DD` date, milliseconds since the epoch,
/// or a time before `nowMs` such as `10m`, `2h`, `7d`), in milliseconds, or `undefined`.
#[wasm_bindgen(js_name = parseSince)]
pub fn parse_since(value: &str, now_ms: f64) -> Option<f64> {
    core::parse_since(value, now_ms as i64).map(|ms| ms as f64)
}

#[wasm_bindgen(typescript_custom_section)]
const TS_QUALITY: &'static str = r#"
/** The part of `GET quality/summary`'s `results` the gate reads. */
export interface QualitySummary {
  violations: { by_code: Record<string, number> };
  rejected: { total: number };
}
"#;
