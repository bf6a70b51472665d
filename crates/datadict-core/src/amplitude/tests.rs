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
            "ip": "1.2.3.4", "$city": "Paris", "$country": "FR", "mp_country_code": "FR", "$os": "iOS",
            "amplitude_session_id": 5, "amplitude_library": "amplitude-ios/1.0",
            "plan": "pro", "price": 9.5, "amplitude_event_time": "ignored"
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
    // `insert_id` is the older spelling; without either, the source's `uuid`, else a hash of the
    // whole line: two events alike in device, time and type but not otherwise stay two.
    assert_eq!(transform(json!({"$insert_id": null, "insert_id": "old-1"})).0["properties"]["$insert_id"], "old-1");
    let uuid = "aaaaaaaa-0000-0000-0000-000000000001";
    assert_eq!(transform(json!({"$insert_id": null, "uuid": uuid})).0["properties"]["$insert_id"], uuid);
    assert_eq!(transform(json!({"$insert_id": null, "uuid": "a:b"})).0["properties"]["$insert_id"], hashed_insert_id(&["insert_id", "a:b"]).as_str());
    let (a, _) = transform(json!({"$insert_id": null}));
    let (b, _) = transform(json!({"$insert_id": null, "event_type": "Refund"}));
    let (c, _) = transform(json!({"$insert_id": null, "event_properties": {"button": "B"}}));
    assert_ne!(a["properties"]["$insert_id"], b["properties"]["$insert_id"]);
    assert_ne!(a["properties"]["$insert_id"], c["properties"]["$insert_id"]);
    assert_eq!(a["properties"]["$insert_id"], transform(json!({"$insert_id": null})).0["properties"]["$insert_id"], "a re-run gives the same id");
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
    // Migrated values never replace what a profile has: `$set_once`.
    assert_eq!(wire[0], json!({"$distinct_id": "alice", "$set_once": {"country": "FR", "plan": "team", "seats": 3}}));
    assert_eq!(wire[1], json!({"$distinct_id": "bob", "$set_once": {"plan": "pro"}}));
    for w in &wire {
        assert!(validate_profile_update(w, &Limits::default(), TokenRule::Optional).is_empty());
    }
}

#[test]
fn placeholder_ids_fall_back_and_make_no_profile() {
    let (event, t) = transform(json!({"user_id": "undefined", "device_id": "real-device-1"}));
    assert_eq!(event["properties"]["distinct_id"], "real-device-1");
    assert_eq!(event["properties"]["$user_id"], "undefined", "the source value is kept");
    assert_eq!(t.profile, None);
    let (event, _) = transform(json!({"user_id": "null", "device_id": "00000000-0000-0000-0000-000000000000"}));
    assert_eq!(event["properties"]["distinct_id"], "");
}

#[test]
fn colliding_source_properties_are_kept_under_other_names() {
    let (event, _) = transform(json!({
        "event_properties": {"ip": "9.9.9.9", "mp_country_code": "DE", "distinct_id": "evil", "$insert_id": "zzz", "plan": "free"},
        "user_properties": {"plan": "pro", "time": 5},
    }));
    let p = &event["properties"];
    assert_eq!((&p["ip"], &p["amplitude_event_ip"]), (&json!("1.2.3.4"), &json!("9.9.9.9")));
    assert_eq!((&p["mp_country_code"], &p["amplitude_event_mp_country_code"]), (&json!("FR"), &json!("DE")));
    assert_eq!((&p["distinct_id"], &p["amplitude_event_distinct_id"]), (&json!("alice"), &json!("evil")));
    assert_eq!((&p["$insert_id"], &p["amplitude_event_$insert_id"]), (&json!("abc-1"), &json!("zzz")));
    assert_eq!((&p["plan"], &p["amplitude_user_plan"]), (&json!("free"), &json!("pro")));
    assert_eq!(p["amplitude_user_time"], 5);
}

#[test]
fn country_names_are_not_codes_and_source_fields_are_carried() {
    let (event, t) = transform(json!({
        "country": "United States", "uuid": "u-1", "amplitude_id": 77, "platform": "iOS", "version_name": "3.2.1",
        "groups": {"company": ["acme"]}, "group_properties": {"company": {"acme": {"plan": "big"}}},
    }));
    let p = &event["properties"];
    assert_eq!(p["$country"], "United States");
    assert_eq!(p.get("mp_country_code"), None);
    assert_eq!((&p["amplitude_uuid"], &p["amplitude_id"], &p["amplitude_platform"], &p["amplitude_version_name"]), (&json!("u-1"), &json!(77), &json!("iOS"), &json!("3.2.1")));
    assert_eq!(p["amplitude_groups"], json!({"company": ["acme"]}));
    assert_eq!(p["amplitude_group_properties"]["company"]["acme"]["plan"], "big");
    assert!(t.left_out.is_empty());
    // Too deep for the import: left out, and said so, rather than failing the event.
    let (event, t) = transform(json!({"group_properties": {"company": {"acme": {"address": {"city": "x"}}}}}));
    assert_eq!(event["properties"].get("amplitude_group_properties"), None);
    assert_eq!(t.left_out, ["amplitude_group_properties"]);
    // An event at the property limit keeps its own properties and gives up carried fields.
    let many: Map<String, Value> = (0..242).map(|i| (format!("p{i}"), json!(i))).collect();
    let (event, t) = transform(json!({"event_properties": many}));
    assert_eq!(event["properties"]["p241"], 241);
    assert!(!t.left_out.is_empty());
}

#[test]
fn identify_rows_are_profile_updates_not_events() {
    let l = Limits::default();
    let row = source(json!({"event_type": "$identify", "data_type": "identify", "user_properties": {"plan": "team"}}));
    let record = transform_record(&row, &l).unwrap();
    assert!(matches!(&record, SourceRecord::Identify { profile: Some((u, p)), .. } if u == "alice" && p["plan"] == "team"), "{record:?}");
    assert_eq!(transform_event(&row, &l), Err(TransformError::NotAnEvent));
    let row = source(json!({"event_type": "$groupidentify", "data_type": "group_identify", "groups": {"company": "acme"}, "group_properties": {"plan": "big"}}));
    let record = transform_record(&row, &l).unwrap();
    assert_eq!(record, SourceRecord::GroupIdentify { time_ms: 1_748_779_200_250, groups: vec![("company".into(), "acme".into(), json!({"plan": "big"}).as_object().unwrap().clone())] });
    let mut profiles = ProfileAccumulator::default();
    let out = transform_ndjson(&[source(json!({})), row].join(&b'\n'), &l, &mut profiles);
    assert_eq!(out.events, 1);
    assert_eq!(profiles.len(), 2);
    // User updates go to `/engage`, group updates to `/groups`.
    assert_eq!(serde_json::to_value(profiles.updates()).unwrap(), json!([{"$distinct_id": "alice", "$set_once": {"plan": "pro"}}]));
    assert_eq!(
        serde_json::to_value(profiles.group_updates()).unwrap(),
        json!([{"$group_key": "company", "$group_id": "acme", "$set_once": {"plan": "big"}}])
    );
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

#[test]
fn a_member_of_several_gzip_members_is_read_whole() {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    zip.start_file("1/1_2025-06-01_0#0.json.gz", zip::write::SimpleFileOptions::default()).unwrap();
    zip.write_all(&[gzip(b"line 1\n", 6), gzip(b"line 2\n", 1)].concat()).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    let mut export = ExportArchive::new(&bytes).unwrap();
    assert_eq!(export.read_member("1/1_2025-06-01_0#0.json.gz", 1 << 20).unwrap(), b"line 1\nline 2\n");
}
