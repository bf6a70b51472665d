//! The JavaScript face of datadict-core, built into the npm package `datadict`: conversion and
//! naming only. Every rule lives in the core; a function here that grows logic belongs there.

use datadict_core::{SchemaRules, DEFAULT_NAMESPACE};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Serializes to plain JavaScript objects (maps as objects, not `Map`s).
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("cannot convert the result to JavaScript: {e}")))
}

fn rules(namespace: Option<String>) -> SchemaRules {
    SchemaRules { namespace: namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()) }
}

/// Validates one schema entry given as a JavaScript object (or any JSON-compatible value) and
/// returns every issue as `{path, code, message}`; an empty array means valid.
#[wasm_bindgen(js_name = validateSchemaEntry, unchecked_return_type = "Issue[]")]
pub fn validate_schema_entry(entry: JsValue, namespace: Option<String>) -> Result<JsValue, JsError> {
    let value: serde_json::Value = serde_wasm_bindgen::from_value(entry)
        .map_err(|e| JsError::new(&format!("the entry is not a JSON-compatible value: {e}")))?;
    to_js(&datadict_core::validate_schema_entry(&value, &rules(namespace)))
}

/// Validates one schema entry given as JSON text; undecodable text is reported as an issue.
#[wasm_bindgen(js_name = validateSchemaEntryJson, unchecked_return_type = "Issue[]")]
pub fn validate_schema_entry_json(text: &str, namespace: Option<String>) -> Result<JsValue, JsError> {
    to_js(&datadict_core::validate_schema_entry_json(text, &rules(namespace)))
}

/// The default metadata namespace (`com.vendor`).
#[wasm_bindgen(js_name = defaultNamespace)]
pub fn default_namespace() -> String {
    DEFAULT_NAMESPACE.to_owned()
}

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** One problem found in an input. */
export interface Issue {
  /** Where, in the dotted form the API uses, e.g. `schemaJson.properties.price.type`. */
  path: string;
  /** A stable identifier such as `missing_field`, `unknown_field`, `wrong_type`. */
  code: string;
  /** What was found and how to fix it. */
  message: string;
}
"#;
