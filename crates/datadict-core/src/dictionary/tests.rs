//! Tests of events checked against a project's dictionary: unknown schemas and properties, type
//! mismatches, and dropped data listed and removed.

use super::*;
use crate::{check_event, Limits, DEFAULT_NAMESPACE};
use serde_json::json;
use IssueCode::*;

const NOW: i64 = 1_767_225_600_000;

fn dictionary() -> Dictionary {
    let entries: Vec<SchemaEntry> = serde_json::from_value(json!([
        {"entityType": "event", "name": "Buy", "schemaJson": {"properties": {
            "price": {"type": "number"},
            "qty": {"type": "integer"},
            "sku": {"type": "string", "metadata": {"com.vendor": {"hidden": true}}},
            "card": {"type": "string", "metadata": {"com.vendor": {"dropped": true}}},
            "tags": {"type": "array"}
        }}},
        {"entityType": "event", "name": "Debug", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}},
        {"entityType": "event", "name": "Internal", "schemaJson": {"metadata": {"com.vendor": {"hidden": true}}}},
        {"entityType": "profile", "name": "$user", "schemaJson": {}}
    ]))
    .unwrap();
    Dictionary::new(&entries, DEFAULT_NAMESPACE)
}

/// Checks `event` with `props` against the test dictionary and compares `(path, code)` pairs.
fn check(event: &str, props: &str, expected: &[(&str, IssueCode)]) -> DictionaryFindings {
    let record = format!(r#"{{"event":{event:?},"properties":{{"time":1767225600,"distinct_id":"u","$insert_id":"i"{props}}}}}"#);
    let checked = check_event(record.as_bytes(), &Limits::default(), NOW);
    assert!(checked.is_valid(), "{:?}", checked.issues);
    let findings = check_against_dictionary(&checked, &dictionary());
    let got: Vec<(&str, IssueCode)> = findings.issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
    assert_eq!(got, expected, "{:#?}", findings.issues);
    findings
}

#[test]
fn events_against_the_dictionary() {
    check("Buy", r#","price":9.5,"qty":2,"tags":[]"#, &[]);
    check("Buy", r#","price":9,"$device_id":"d","ip":"1.2.3.4""#, &[]);
    check("Buy", r#","price":"9.5","qty":2.5"#, &[("properties.price", TypeMismatch), ("properties.qty", TypeMismatch)]);
    check("Buy", r#","color":"red","my prop":1"#, &[("properties.color", UnknownProperty), ("properties[\"my prop\"]", UnknownProperty)]);
    check("Buy", r#","sku":"a""#, &[("properties.sku", HiddenProperty)]);
    check("Buy", r#","sku":1"#, &[("properties.sku", TypeMismatch), ("properties.sku", HiddenProperty)]);
    check("Nope", r#","x":1"#, &[("event", NoSchema)]);
    check("Internal", "", &[("event", HiddenEvent)]);
    check("Internal", r#","x":1"#, &[("event", HiddenEvent), ("properties.x", UnknownProperty)]);
}

#[test]
fn dropped_data_is_listed_and_removed() {
    let f = check("Debug", r#","x":1"#, &[("event", DroppedEvent)]);
    assert!(f.drop_event && !f.must_rewrite());
    let f = check("Buy", r#","card":"4111","price":1"#, &[("properties.card", DroppedProperty)]);
    assert_eq!(f.dropped_properties, ["card"]);
    assert!(f.must_rewrite());
    let record = br#"{"event":"Buy","properties":{"time":1,"card":"4111","price":1,"z":{"card":2}}}"#;
    let out = remove_properties(record, &f.dropped_properties).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), r#"{"event":"Buy","properties":{"time":1,"price":1,"z":{"card":2}}}"#);
    assert!(remove_properties(b"{", &[]).is_err());
}

/// A dictionary stored before the schema rules refused it may mark a property `/import` requires
/// as dropped: the check never drops those, so events are never stored without them.
#[test]
fn the_properties_import_requires_are_never_dropped() {
    let dropped = json!({"type": "string", "metadata": {"com.vendor": {"dropped": true}}});
    let entries: Vec<SchemaEntry> = serde_json::from_value(json!([
        {"entityType": "event", "name": "E", "schemaJson": {"properties": {
            "time": {"type": "number", "metadata": {"com.vendor": {"dropped": true}}},
            "distinct_id": dropped, "$insert_id": dropped, "card": dropped
        }}}
    ]))
    .unwrap();
    let record = br#"{"event":"E","properties":{"time":1767225600,"distinct_id":"u","$insert_id":"i","card":"4111"}}"#;
    let checked = check_event(record, &Limits::default(), NOW);
    let findings = check_against_dictionary(&checked, &Dictionary::new(&entries, DEFAULT_NAMESPACE));
    assert_eq!(findings.dropped_properties, ["card"]);
    assert_eq!(findings.issues.len(), 1, "{:#?}", findings.issues);
}

#[test]
fn other_namespaces_and_empty_dictionaries() {
    let entries: Vec<SchemaEntry> = serde_json::from_value(json!([
        {"entityType": "event", "name": "E", "schemaJson": {"metadata": {"com.mixpanel": {"dropped": true}}}}
    ]))
    .unwrap();
    assert_eq!(Dictionary::new(&entries, "com.mixpanel").len(), 1);
    let record = br#"{"event":"E","properties":{"time":1767225600,"distinct_id":"u","$insert_id":"i"}}"#;
    let checked = check_event(record, &Limits::default(), NOW);
    assert!(check_against_dictionary(&checked, &Dictionary::new(&entries, "com.mixpanel")).drop_event);
    assert!(!check_against_dictionary(&checked, &Dictionary::new(&entries, DEFAULT_NAMESPACE)).drop_event);
    assert!(Dictionary::default().is_empty());
}
