//! The `datadict violations` CI gate's rule for JavaScript: the `--fail-on` codes, which of a
//! quality summary's counts fail the gate, and how a `--since`/`--until` value reads; all three
//! are the core's ([`datadict_core::quality_gate`]).

use crate::{args, fail, to_js, JsResult};
use datadict_core::quality_gate as core;
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// The codes `--fail-on` takes (`any`, `rejected`, and the dictionary check's codes).
#[wasm_bindgen(js_name = failOnChoices)]
pub fn fail_on_choices() -> Vec<String> {
    core::FAIL_ON.iter().map(|c| (*c).to_owned()).collect()
}

/// The codes of the `--fail-on` values given (each may hold several, separated by commas), each
/// once; `["any"]` for none. Throws for a value that names no code. One string is taken as a
/// list of one.
#[wasm_bindgen(js_name = failOnCodes)]
pub fn fail_on_codes(#[wasm_bindgen(unchecked_param_type = "string[] | string")] values: JsValue) -> JsResult<Vec<String>> {
    let values = args::strings(&values, "failOnCodes: values")?;
    core::fail_on_codes(&values).map_err(fail)
}

/// What of `codes` occurred in a quality summary (the `results` of `GET quality/summary`):
/// `[label, count]` pairs, empty when the gate passes.
#[wasm_bindgen(js_name = gateHits, unchecked_return_type = "[string, number][]")]
pub fn gate_hits(
    #[wasm_bindgen(unchecked_param_type = "QualitySummary")] summary: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string[] | string")] codes: JsValue,
) -> JsResult<JsValue> {
    let summary: Value = args::json(&summary, "gateHits: summary")?;
    // A value of another shape would find no count and pass the gate.
    if !(summary["violations"]["by_code"].is_object() && summary["rejected"]["total"].is_number()) {
        return Err(args::type_error(
            "gateHits: summary must be the `results` of GET quality/summary, with `violations.by_code` and `rejected.total`",
        ));
    }
    // The codes go through `failOnCodes` first, so a misspelt one is refused rather than
    // found nowhere (which would pass the gate).
    let codes = core::fail_on_codes(&args::strings(&codes, "gateHits: codes")?).map_err(fail)?;
    to_js(&core::gate_hits(&summary, &codes))
}

/// The instant a `since`/`until` value names (a `YYYY-MM-DD` date, milliseconds since the epoch,
/// or a time before `nowMs` such as `10m`, `2h`, `7d`), in milliseconds, or `undefined`.
#[wasm_bindgen(js_name = parseSince)]
pub fn parse_since(#[wasm_bindgen(unchecked_param_type = "string")] value: JsValue, now_ms: f64) -> JsResult<Option<f64>> {
    let value = args::text(&value, "parseSince: value")?;
    Ok(core::parse_since(&value, now_ms as i64).map(|ms| ms as f64))
}

#[wasm_bindgen(typescript_custom_section)]
const TS_QUALITY: &'static str = r#"
/** The part of `GET quality/summary`'s `results` the gate reads. */
export interface QualitySummary {
  violations: { by_code: Record<string, number> };
  rejected: { total: number };
}
"#;
