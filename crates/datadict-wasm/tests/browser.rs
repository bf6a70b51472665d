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
    let result = datadict_wasm::validate_schema_entry_json(text.into(), JsValue::UNDEFINED).unwrap();
    assert_eq!(codes(result), Vec::<String>::new());
}

#[wasm_bindgen_test]
fn every_issue_is_reported_in_the_browser() {
    let text = r#"{"entityType":"thing","schemaJson":{"properties":{"p":{"type":"float"}}}}"#;
    let result = datadict_wasm::validate_schema_entry_json(text.into(), JsValue::UNDEFINED).unwrap();
    assert_eq!(
        codes(result),
        vec!["entityType:invalid_enum", "name:missing_field", "schemaJson.properties.p.type:invalid_enum"]
    );
}

#[wasm_bindgen_test]
fn js_objects_are_accepted() {
    let obj = js_sys::JSON::parse(r#"{"entityType":"profile","name":"$user","schemaJson":{"metadata":{"com.vendor":{"dropped":true}}}}"#).unwrap();
    let result = datadict_wasm::validate_schema_entry(obj, JsValue::UNDEFINED).unwrap();
    assert_eq!(codes(result), vec!["schemaJson.metadata[\"com.vendor\"].dropped:events_only"]);
}

fn obj(json: &str) -> JsValue {
    js_sys::JSON::parse(json).unwrap()
}

/// Positions packed as `nextBatchPacked` gives them.
fn packed(pairs: &[f64]) -> JsValue {
    js_sys::Float64Array::from(pairs).into()
}

fn get(value: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(value, &JsValue::from_str(key)).unwrap()
}

fn to_json(value: &JsValue) -> serde_json::Value {
    serde_wasm_bindgen::from_value(value.clone()).unwrap()
}

const NOW: &str = r#"{"nowMs": 1767225600000}"#;

#[wasm_bindgen_test]
fn events_are_checked_with_extracted_fields() {
    let record = r#"{"event":"Buy","properties":{"time":1767225600,"distinct_id":"u1","$insert_id":"a-1","price":9.5}}"#;
    let result = to_json(&datadict_wasm::check_event(record.into(), obj(NOW)).unwrap());
    assert_eq!(result["valid"], true);
    assert_eq!(result["timeMs"], 1_767_225_600_000_i64);
    assert_eq!(result["insertId"], "a-1");
    assert_eq!(result["properties"][3], serde_json::json!({"name": "price", "kind": "number"}));
    let bad = r#"{"event":"Buy","properties":{"time":0,"distinct_id":"null","$insert_id":"a:1"}}"#;
    let result = to_json(&datadict_wasm::check_event(bad.into(), obj(NOW)).unwrap());
    let codes: Vec<&str> = result["issues"].as_array().unwrap().iter().map(|i| i["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["time_too_early", "forbidden_id", "invalid_insert_id"]);
}

#[wasm_bindgen_test]
fn the_batcher_streams_gzipped_bodies_with_positions() {
    let mut input = String::new();
    for i in 0..5 {
        input.push_str(&format!(r#"{{"event":"e","properties":{{"time":1767225600,"distinct_id":"u","$insert_id":"id-{i}"}}}}"#));
        input.push('\n');
    }
    input.push_str("{\"event\":1}\n");
    let options = obj(r#"{"nowMs": 1767225600000, "limits": {"maxEventsPerRequest": 2}, "gzipLevel": 1}"#);
    let mut batcher = datadict_wasm::Batcher::new(options).unwrap();
    // Chunks split inside records.
    for chunk in input.as_bytes().chunks(7) {
        batcher.push(js_sys::Uint8Array::from(chunk).into()).unwrap();
    }
    batcher.finish().unwrap();
    let mut sizes = Vec::new();
    let mut indexes = Vec::new();
    loop {
        let batch = batcher.next_batch().unwrap();
        if batch.is_undefined() {
            break;
        }
        let body = js_sys::Uint8Array::new(&get(&batch, "body")).to_vec();
        let json = datadict_wasm::gunzip(js_sys::Uint8Array::from(body.as_slice()).into(), JsValue::UNDEFINED).unwrap();
        let events: Vec<serde_json::Value> = serde_json::from_slice(&json).unwrap();
        sizes.push(events.len());
        for p in to_json(&get(&batch, "positions")).as_array().unwrap() {
            indexes.push(p["index"].as_u64().unwrap());
        }
    }
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(indexes, [0, 1, 2, 3, 4]);
    let rejected = to_json(&batcher.take_rejected().unwrap());
    assert_eq!(rejected[0]["pos"], serde_json::json!({"index": 5, "line": 6}));
    let stats = to_json(&batcher.stats().unwrap());
    assert_eq!((stats["records"].as_u64(), stats["batches"].as_u64()), (Some(6), Some(3)));
    let summary = to_json(&batcher.summary().unwrap());
    assert_eq!(summary["byCode"]["wrong_type"]["count"], 1);
}

#[wasm_bindgen_test]
fn dictionary_io_round_trips() {
    let entries = obj(r#"[{"entityType":"event","name":"Buy","schemaJson":{"properties":{"p":{"type":"string","metadata":{"com.vendor":{"dropped":true}}}}}}]"#);
    let csv = datadict_wasm::dictionary_to_csv(entries.clone(), JsValue::UNDEFINED).unwrap();
    let back = to_json(&datadict_wasm::dictionary_from_csv(csv.into(), JsValue::UNDEFINED).unwrap());
    assert_eq!(back["entries"], to_json(&entries));
    let findings = to_json(
        &datadict_wasm::check_against_dictionary(r#"{"event":"Buy","properties":{"p":"x","q":1}}"#.into(), entries.clone(), JsValue::UNDEFINED).unwrap(),
    );
    assert_eq!(findings["droppedProperties"], serde_json::json!(["p"]));
    let diff = to_json(&datadict_wasm::diff_dictionaries(entries.clone(), obj("[]")).unwrap());
    assert_eq!(diff["removed"][0]["name"], "Buy");
    let schema = to_json(&datadict_wasm::entity_json_schema(get(&entries, "0"), JsValue::UNDEFINED).unwrap());
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
}

#[wasm_bindgen_test]
fn requests_and_retries() {
    let endpoints = datadict_wasm::single_host_endpoints("http://127.0.0.1:9".into()).unwrap();
    let request = js_sys::Object::new();
    js_sys::Reflect::set(&request, &"endpoints".into(), &endpoints).unwrap();
    js_sys::Reflect::set(&request, &"operation".into(), &"import".into()).unwrap();
    js_sys::Reflect::set(&request, &"projectId".into(), &JsValue::from(3)).unwrap();
    assert_eq!(datadict_wasm::operation_url(request.into()).unwrap(), "http://127.0.0.1:9/import?strict=1&project_id=3");
    let retry = to_json(&datadict_wasm::retry_decision(1, Some(429), None, 0.0, JsValue::UNDEFINED).unwrap());
    assert_eq!(retry, serde_json::json!({"action": "retry", "delayMs": 3000}));
    let stop = to_json(&datadict_wasm::retry_decision(1, Some(400), None, 0.0, JsValue::UNDEFINED).unwrap());
    assert_eq!(stop, serde_json::json!({"action": "giveUp", "reason": "invalid_request"}));
    let headers = to_json(&datadict_wasm::import_headers(obj(r#"{"kind":"projectToken","token":"tok"}"#), true).unwrap());
    assert_eq!(headers["authorization"], "Basic dG9rOg==");
    assert_eq!(headers["content-encoding"], "gzip");
    let response = datadict_wasm::parse_import_response(400, r#"{"code":400,"error":"x","failed_records":[{"index":1,"$insert_id":"b","field":"properties.time","message":"m"}],"num_records_imported":1,"status":"Bad Request"}"#.into()).unwrap();
    let mapped = to_json(&datadict_wasm::map_failed_records(obj(r#"[{"index":7,"line":8},{"index":9,"line":10}]"#), response).unwrap());
    assert_eq!(mapped[0]["pos"], serde_json::json!({"index": 9, "line": 10}));
}

#[wasm_bindgen_test]
fn the_upload_machine_through_the_binding() {
    let mut upload = datadict_wasm::Upload::new(obj(r#"{"concurrency":1,"stopOnFailure":true,"projectId":4,"acknowledged":[0]}"#)).unwrap();
    assert_eq!(upload.register(0.0, 10.0, packed(&[0.0, 1.0])).unwrap(), "alreadyAcknowledged");
    assert_eq!(upload.register(1.0, 10.0, packed(&[1.0, 2.0, 2.0, 4.0])).unwrap(), "queued");
    assert!(!upload.wants_more());
    assert_eq!(upload.next_send(0.0), Some(1.0));
    let partial = r#"{"code":400,"error":"x","failed_records":[{"index":1,"$insert_id":"b","field":"event","message":"m"}],"num_records_imported":1,"status":"Bad Request"}"#;
    let ack = to_json(&upload.answer(1.0, Some(400), partial.into(), JsValue::NULL, 1.0, 0.0).unwrap());
    assert_eq!((ack["kind"].as_str(), ack["imported"].as_u64()), (Some("acknowledged"), Some(1)));
    assert_eq!(ack["failed"][0]["pos"], serde_json::json!({"index": 2, "line": 4}));
    assert_eq!(upload.register(2.0, 10.0, packed(&[3.0, 5.0])).unwrap(), "queued");
    assert_eq!(upload.next_send(2.0), Some(2.0));
    let retry = to_json(&upload.answer(2.0, Some(429), "".into(), "7".into(), 2.0, 0.0).unwrap());
    assert_eq!((retry["kind"].as_str(), retry["delayMs"].as_u64()), (Some("retry"), Some(7000)));
    assert_eq!(upload.next_wake_ms(), Some(7002.0));
    assert_eq!(upload.next_send(7002.0), Some(2.0));
    let failed = to_json(&upload.answer(2.0, Some(403), r#"{"error":"no","status":"error"}"#.into(), JsValue::NULL, 7003.0, 0.0).unwrap());
    assert_eq!((failed["kind"].as_str(), failed["reason"].as_str(), failed["status"].as_u64()), (Some("failed"), Some("unauthorized"), Some(403)));
    assert!(failed["message"].as_str().unwrap().contains("lack permission on project 4 (403): no"), "{failed}");
    assert_eq!(upload.acknowledged(), [0.0, 1.0]);
    assert_eq!(to_json(&upload.summary().unwrap())["stopped"], true);
    let words = datadict_wasm::explain_status(None, "ECONNREFUSED".into(), obj(r#"{"url":"http://127.0.0.1:9/import"}"#)).unwrap();
    assert!(words.starts_with("cannot reach the server at http://127.0.0.1:9/import: ECONNREFUSED;"), "{words}");
    let words = datadict_wasm::explain_answer(401, r#"{"error":"bad secret","status":"error"}"#.into(), JsValue::UNDEFINED).unwrap();
    assert!(words.starts_with("the server rejected the credentials (401): bad secret;"), "{words}");
}

#[wasm_bindgen_test]
fn migration_pieces() {
    let check = to_json(&datadict_wasm::validate_migration_request(obj(r#"{"SOURCE_API_KEY":"k","SOURCE_API_SECRET":"s","TARGET_TOKEN":"t"}"#), "2026-03-15".into()).unwrap());
    assert_eq!(check["range"], serde_json::json!({"start": "2026-02-14", "end": "2026-03-15"}));
    let mut t = datadict_wasm::MigrationTransformer::new();
    let line = br#"{"event_type":"Buy","event_time":"2025-06-01 12:00:00.000000","user_id":"alice","$insert_id":"a:b","user_properties":{"plan":"pro"}}"#;
    let out = to_json(&t.transform_member(js_sys::Uint8Array::from(&line[..]).into()).unwrap());
    assert_eq!(out["events"], 1);
    let ndjson = t.take_ndjson();
    let event: serde_json::Value = serde_json::from_slice(ndjson.trim_ascii_end()).unwrap();
    assert_eq!(event["properties"]["time"], 1_748_779_200_000_i64);
    // Migrated values fill what a profile lacks and never replace what it has.
    assert_eq!(to_json(&t.profile_updates().unwrap())[0]["$set_once"]["plan"], "pro");
    assert!(datadict_wasm::ExportArchive::new(js_sys::Uint8Array::from(&b"not a zip"[..]).into()).is_err());
}

/// A value as a plain JavaScript object, as callers pass them (the default serializer makes `Map`s).
fn plain<T: serde::Serialize>(value: &T) -> Result<JsValue, String> {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| e.to_string())
}

/// Runs a fixture through the JavaScript-facing functions, so the fixtures test the binding too.
fn run_through_binding(f: &datadict_core::fixtures::Fixture) -> Result<Vec<String>, String> {
    let o = &f.options;
    let input = || plain(&f.input);
    let namespace = o.namespace.clone().map_or(JsValue::UNDEFINED, |n| JsValue::from_str(&n));
    let result = match f.kind.as_str() {
        "event" => {
            let options = serde_json::json!({"nowMs": o.now_ms, "limits": o.limits});
            let checked = datadict_wasm::check_event(f.text().into(), obj(&options.to_string())).map_err(|_| "checkEvent threw")?;
            get(&checked, "issues")
        }
        "event_dictionary" => {
            let entries = plain(&o.dictionary)?;
            let findings = datadict_wasm::check_against_dictionary(f.text().into(), entries, namespace).map_err(|_| "checkAgainstDictionary threw")?;
            get(&findings, "issues")
        }
        "schema_entry" => datadict_wasm::validate_schema_entry_json(f.text().into(), namespace).map_err(|_| "validateSchemaEntryJson threw")?,
        "profile_update" => {
            let options = serde_json::json!({"limits": o.limits, "tokenOptional": o.token_optional.unwrap_or(false)});
            datadict_wasm::validate_profile_update_json(f.text().into(), obj(&options.to_string())).map_err(|_| "validateProfileUpdateJson threw")?
        }
        "migration_request" => {
            let checked = datadict_wasm::validate_migration_request(input()?, o.today.as_deref().unwrap_or("").into()).map_err(|_| "validateMigrationRequest threw")?;
            get(&checked, "issues")
        }
        "batch_body" => datadict_wasm::validate_batch_body(input()?, namespace).map_err(|_| "validateBatchBody threw")?,
        other => return Err(format!("unknown fixture kind `{other}`")),
    };
    Ok(codes(result))
}

#[wasm_bindgen_test]
fn every_fixture_passes_as_wasm() {
    let n = datadict_core::fixtures::check_all(run_through_binding).unwrap_or_else(|failures| panic!("fixtures failed:\n{failures}"));
    assert_eq!(n, datadict_core::fixtures::FIXTURES.len());
    assert!(n >= 40);
}

/// The name of the error a call threw and its message.
fn thrown(e: JsValue) -> (String, String) {
    let e = js_sys::Error::from(e);
    (e.name().into(), e.message().into())
}

#[wasm_bindgen_test]
fn wrong_types_and_hostile_values_throw_and_leave_the_module_working() {
    let (name, message) = thrown(datadict_wasm::check_event(obj(r#"{"event":"x"}"#), JsValue::UNDEFINED).unwrap_err());
    assert_eq!((name.as_str(), message.starts_with("checkEvent: record")), ("TypeError", true), "{message}");
    assert!(message.ends_with("got an object"), "{message}");
    let (name, message) = thrown(datadict_wasm::validate_schema_entry(obj("{}"), JsValue::from(42)).unwrap_err());
    assert_eq!((name.as_str(), message.as_str()), ("TypeError", "validateSchemaEntry: namespace must be a string, got a number"));
    // A circular object and one nested 5,000 levels deep.
    let circular = obj(r#"{"entityType":"event","name":"A","schemaJson":{}}"#);
    js_sys::Reflect::set(&get(&circular, "schemaJson"), &"self".into(), &circular).unwrap();
    let (name, message) = thrown(datadict_wasm::validate_schema_entry(circular, JsValue::UNDEFINED).unwrap_err());
    assert_eq!(name, "TypeError", "{message}");
    let deep = obj(&format!("{}1{}", "[".repeat(5000), "]".repeat(5000)));
    let (_, message) = thrown(datadict_wasm::validate_batch_body(deep, JsValue::UNDEFINED).unwrap_err());
    assert!(message.contains("nested more than"), "{message}");
    // Bytes given as a string are its UTF-8, not zeros.
    let gz = datadict_wasm::gzip("héllo".into(), JsValue::UNDEFINED).unwrap();
    let back = datadict_wasm::gunzip(js_sys::Uint8Array::from(gz.as_slice()).into(), JsValue::UNDEFINED).unwrap();
    assert_eq!(back, "héllo".as_bytes());
    // And the module still answers.
    let result = datadict_wasm::validate_schema_entry_json(r#"{"entityType":"event","name":"A","schemaJson":{}}"#.into(), JsValue::UNDEFINED).unwrap();
    assert_eq!(codes(result), Vec::<String>::new());
}
