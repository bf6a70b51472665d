//! The core's rules, run as wasm in headless browsers (Chromium and Firefox) through the binding.

#![cfg(target_arch = "wasm32")]

use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn codes(result: JsValue) -> Vec<String> {
    let issues: Vec<serde_json::Value> = serde_wasm_bindgen::from_value(result).unwrap();
    issues.iter().map(|i| format!("{}:{}", i["path"].as_str().unwrap(), i["code"].as_str().unwrap())).collect()
}

#[wasm_bindgen_test]
fn valid_entry_has_no_issues() {
    let text = r#"{"entityType":"event","name":"Purchase","schemaJson":{"properties":{"price":{"type":"number"}}}}"#;
    let result = datadict_wasm::validate_schema_entry_json(text, None).unwrap();
    assert_eq!(codes(result), Vec::<String>::new());
}

#[wasm_bindgen_test]
fn every_issue_is_reported_in_the_browser() {
    let text = r#"{"entityType":"thing","schemaJson":{"properties":{"p":{"type":"float"}}}}"#;
    let result = datadict_wasm::validate_schema_entry_json(text, None).unwrap();
    assert_eq!(
        codes(result),
        vec!["entityType:invalid_enum", "name:missing_field", "schemaJson.properties.p.type:invalid_enum"]
    );
}

#[wasm_bindgen_test]
fn js_objects_are_accepted() {
    let obj = js_sys::JSON::parse(r#"{"entityType":"profile","name":"$user","schemaJson":{"metadata":{"com.vendor":{"dropped":true}}}}"#).unwrap();
    let result = datadict_wasm::validate_schema_entry(obj, None).unwrap();
    assert_eq!(codes(result), vec!["schemaJson.metadata[\"com.vendor\"].dropped:events_only"]);
}
