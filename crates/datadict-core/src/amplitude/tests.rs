//! Tests of the source tool's transform: the FACTS.md mapping of events and profiles, deterministic
//! `$insert_id`s, bad lines as errors, and export archives read member by member.

use super::*;
use crate::gzip::gzip;
use crate::{check_event, validate_profile_update, TokenRule};
use serde_json::json;
use std::io::{Cursor, Write};

const NOW: i64 = 1_767_225_600_000;

fn source(extra: Value) -> Vec<u8> {
    let mut base = json!({
        "event_type": "Purchase",
        "event_time": "2025-06-01 12:00:00.250000",
        "user_id": "alice",
        "device_id": "dev-1",
        "$insert_id": "abc-1",
        "event_properties": {"price": 9.5, "time": "ignored"},
        "user_properties": {"plan": "pro"},
        "os_name": "iOS",
        "city": "Paris",
        "country": "FR",
        "ip_address": "1.2.3.4",
        "library": "amplitude-ios/1.0",
        "session_id": 5
    });
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    serde_json::to_vec(&base).unwrap()
}

fn transform(extra: Value) -> (Value, Transformed) {
    let t = transform_event(&source(extra), &Limits::default()).unwrap();
    let check = check_event(&t.event, &Limits::default(), NOW);
    assert!(check.is_valid(), "transformed events pass the import rules: {:?}", check.issues);
    (serde_json::from_slice(&t.event).unwrap(), t)
}

#[test]
fn the_mapping_of_facts_md() {
    let (event, t) = transform(json!({}));
    assert_eq!(
        event,
        json!({"event": "Purchase", "properties": {
            "time": 1_748_779_200_250_i64, "distinct_id": "alice", "$insert_id": "abc-1", "$device_id": "dev-1", "$user_id": "alice",
            "ip": "1.2.3.4", "$city": "Paris", "mp_country_code": "FR", "$os": "iOS", "plan": "pro", "price": 9.5
        }})
    );
    assert_eq!(t.profile, Some(("alice".to_owned(), json!({"plan": "pro"}).as_object().unwrap().clone())));
    // Property order is kept: the mapped fields first, then the spread ones.
    let keys: Vec<&String> = event["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys[..3], ["time", "distinct_id", "$insert_id"]);
}

#[test]
fn distinct_id_falls_back_to_the_device() {
    let (event, t) = transform(json!({"user_id": null}));
    assert_eq!(event["properties"]["distinct_id"], "dev-1");
    assert_eq!(event["properties"].get("$user_id"), None);
    assert_eq!(t.profile, None);
    let (event, _) = transform(json!({"user_id": null, "device_id": null}));
    assert_eq!(event["properties"]["distinct_id"], "");
}

#[test]
fn insert_ids_are_valid_and_deterministic() {
    let (event, _) = transform(json!({"$insert_id": "a:b:c"}));
    let id = event["properties"]["$insert_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(transform(json!({"$insert_id": "a:b:c"})).0["properties"]["$insert_id"], id.as_str());
    assert_ne!(transform(json!({"$insert_id": "a:b:d"})).0["properties"]["$insert_id"], id.as_str());
    // `insert_id` is the older spelling; without either, a hash of device, time and type.
    assert_eq!(transform(json!({"$insert_id": null, "insert_id": "old-1"})).0["properties"]["$insert_id"], "old-1");
    let (a, _) = transform(json!({"$insert_id": null}));
    let (b, _) = transform(json!({"$insert_id": null, "event_type": "Refund"}));
    assert_ne!(a["properties"]["$insert_id"], b["properties"]["$insert_id"]);
    assert_eq!(a["properties"]["$insert_id"], hashed_insert_id(&["dev-1", "2025-06-01 12:00:00.250000", "Purchase"]).as_str());
    assert_eq!(transform(json!({"$insert_id": "null"})).0["properties"]["$insert_id"].as_str().unwrap().len(), 32);
    assert_ne!(hashed_insert_id(&["ab", "c"]), hashed_insert_id(&["a", "bc"]));
}

#[test]
fn bad_lines_are_errors() {
    let l = Limits::default();
    assert!(matches!(transform_event(b"nope", &l), Err(TransformError::Json(_))));
    assert_eq!(transform_event(&source(json!({"event_type": ""})), &l), Err(TransformError::NoEventType));
    assert_eq!(transform_event(&source(json!({"event_time": "yesterday"})), &l), Err(TransformError::BadTime("yesterday".into())));
}

#[test]
fn profiles_keep_the_latest_value_per_property() {
    let mut profiles = ProfileAccumulator::default();
    let lines = [
        source(json!({"event_time": "2025-06-02 00:00:00", "user_properties": {"plan": "team", "seats": 3}})),
        source(json!({"event_time": "2025-06-01 00:00:00", "user_properties": {"plan": "free", "country": "FR"}})),
        b"garbage".to_vec(),
        source(json!({"user_id": "bob", "user_properties": {"plan": "pro"}})),
    ];
    let data = lines.join(&b'\n');
    let out = transform_ndjson(&data, &Limits::default(), &mut profiles);
    assert_eq!(out.events, 3);
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].0, 3);
    assert_eq!(out.ndjson.iter().filter(|b| **b == b'\n').count(), 3);
    let updates = profiles.updates();
    assert_eq!(updates.len(), 2);
    let wire: Vec<Value> = updates.iter().map(|u| serde_json::to_value(u).unwrap()).collect();
    assert_eq!(wire[0], json!({"$distinct_id": "alice", "$set": {"country": "FR", "plan": "team", "seats": 3}}));
    assert_eq!(wire[1], json!({"$distinct_id": "bob", "$set": {"plan": "pro"}}));
    for w in &wire {
        assert!(validate_profile_update(w, &Limits::default(), TokenRule::Optional).is_empty());
    }
}

/// Builds an export archive: a zip whose members are gzipped NDJSON.
fn archive(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in members {
        if name.ends_with('/') {
            zip.add_directory(*name, options).unwrap();
            continue;
        }
        zip.start_file(*name, options).unwrap();
        zip.write_all(&gzip(data, 6)).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

#[test]
fn export_archives_are_read_member_by_member() {
    let a = source(json!({}));
    let b = source(json!({"user_id": "bob"}));
    let bytes = archive(&[("123/", b""), ("123/123_2025-06-01_13#0.json.gz", &b), ("123/123_2025-06-01_12#0.json.gz", &a)]);
    let mut export = ExportArchive::new(&bytes).unwrap();
    assert_eq!(export.len(), 3);
    let names = export.member_names().unwrap();
    assert_eq!(names, ["123/123_2025-06-01_12#0.json.gz", "123/123_2025-06-01_13#0.json.gz"]);
    assert_eq!(export.read_member(&names[0], 1 << 20).unwrap(), a);
    assert_eq!(export.read_member(&names[1], 1 << 20).unwrap(), b);
    assert!(matches!(export.read_member(&names[1], 10), Err(ExportError::Gzip { .. })));
    assert!(matches!(export.read_member("missing", 10), Err(ExportError::Zip(_))));
    assert!(matches!(ExportArchive::new(b"not a zip"), Err(ExportError::Zip(_))));
}
