//! Tests of profile updates checked against the dictionary's `profile` schemas: every operation,
//! unknown properties, type mismatches, hidden properties, no schema, and group updates against
//! the schema named by their group key.

use super::*;
use crate::schema::SchemaEntry;
use crate::DEFAULT_NAMESPACE;
use serde_json::json;
use IssueCode::*;

fn dictionary() -> Dictionary {
    let entries: Vec<SchemaEntry> = serde_json::from_value(json!([
        {"entityType": "event", "name": "Buy", "schemaJson": {"properties": {"plan": {"type": "integer"}}}},
        {"entityType": "profile", "name": "$user", "schemaJson": {"properties": {
            "plan": {"type": "string"},
            "seats": {"type": "integer"},
            "score": {"type": "number"},
            "tags": {"type": "array"},
            "vip": {"type": "boolean", "metadata": {"com.vendor": {"hidden": true}}}
        }}},
        {"entityType": "profile", "name": "Other", "schemaJson": {"properties": {"nickname": {"type": "string"}}}}
    ]))
    .unwrap();
    Dictionary::new(&entries, DEFAULT_NAMESPACE)
}

/// Checks the user update `{<op>: operand}` against `dictionary` and compares `(path, code)` pairs.
fn check_with(dictionary: &Dictionary, op: &str, operand: Value, expected: &[(&str, IssueCode)]) -> Vec<Issue> {
    let operation = ProfileOperation::from_wire(op, operand).expect("a well-formed operation");
    let issues = check_profile_against_dictionary(&user(), &operation, dictionary);
    let got: Vec<(&str, IssueCode)> = issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
    assert_eq!(got, expected, "{op}: {issues:#?}");
    issues
}

fn user() -> ProfileTarget {
    ProfileTarget::User { distinct_id: "u".into() }
}

fn group(key: &str) -> ProfileTarget {
    ProfileTarget::Group { key: key.into(), id: "g1".into() }
}

fn check(op: &str, operand: Value, expected: &[(&str, IssueCode)]) -> Vec<Issue> {
    check_with(&dictionary(), op, operand, expected)
}

#[test]
fn updates_against_the_user_schema() {
    check("$set", json!({"plan": "pro", "seats": 3, "score": 2, "tags": ["a"], "vip": true}), &[]);
    check("$set", json!({"plan": 1, "seats": 2.5, "score": "9"}), &[("$set.plan", TypeMismatch), ("$set.seats", TypeMismatch), ("$set.score", TypeMismatch)]);
    check("$set", json!({"plan": null}), &[("$set.plan", TypeMismatch)]);
    check("$set", json!({"color": "red", "my prop": 1}), &[("$set.color", UnknownProperty), ("$set[\"my prop\"]", UnknownProperty)]);
    check("$set", json!({"nickname": "x"}), &[("$set.nickname", UnknownProperty)]);
    check("$set_once", json!({"plan": true, "seats": 1}), &[("$set_once.plan", TypeMismatch)]);
    check("$add", json!({"seats": 1, "score": 1.5}), &[]);
    check("$add", json!({"seats": 0.5, "plan": 1, "visits": 1}), &[("$add.seats", TypeMismatch), ("$add.plan", TypeMismatch), ("$add.visits", UnknownProperty)]);
    check("$union", json!({"tags": ["a", 1], "plan": ["x"]}), &[("$union.plan", TypeMismatch)]);
    check("$append", json!({"tags": {"any": "item"}, "seats": 4, "pets": "cat"}), &[("$append.seats", TypeMismatch), ("$append.pets", UnknownProperty)]);
    check("$remove", json!({"tags": "a", "plan": "pro"}), &[("$remove.plan", TypeMismatch)]);
    check("$unset", json!(["plan", "gone", "vip"]), &[("$unset.gone", UnknownProperty)]);
    check("$delete", json!(""), &[]);
}

#[test]
fn messages_say_what_was_found_and_what_to_do() {
    let m = |op: &str, operand: Value| check(op, operand.clone(), &[(&format!("{op}.plan"), TypeMismatch)])[0].message.clone();
    assert_eq!(m("$set", json!({"plan": 1})), "property `plan` is a JSON integer; its schema says string: send a string or change the definition");
    assert_eq!(m("$add", json!({"plan": 1})), "`$add` treats property `plan` as a number; its schema says string: use `$set` for a string, or change the definition");
    let seats = check("$set", json!({"seats": "3"}), &[("$set.seats", TypeMismatch)]);
    assert_eq!(seats[0].message, "property `seats` is a JSON string; its schema says integer: send an integer or change the definition");
    assert!(m("$append", json!({"plan": "x"})).starts_with("`$append` treats property `plan` as a list (a JSON array); its schema says string"));
    let unknown = check("$set", json!({"x": 1}), &[("$set.x", UnknownProperty)]);
    assert_eq!(unknown[0].message, "property `x` is not in the schema of `$user`; add it to the schema, or fix its name");
    assert!(unknown.iter().chain(&check("$add", json!({"seats": 0.5}), &[("$add.seats", TypeMismatch)])).all(|i| i.code.is_note()));
}

#[test]
fn without_a_user_schema_each_update_gets_one_note() {
    let events_only: Vec<SchemaEntry> =
        serde_json::from_value(json!([{"entityType": "event", "name": "Buy", "schemaJson": {}}, {"entityType": "profile", "name": "Other", "schemaJson": {}}]))
            .unwrap();
    let none = Dictionary::new(&events_only, DEFAULT_NAMESPACE);
    assert!(!none.has_user_profile() && dictionary().has_user_profile());
    check_with(&none, "$set", json!({"a": 1, "b": 2}), &[("", NoSchema)]);
    check_with(&none, "$unset", json!(["a"]), &[("", NoSchema)]);
    check_with(&none, "$delete", json!(null), &[]);
    check_with(&Dictionary::default(), "$add", json!({"n": 1}), &[("", NoSchema)]);
}

#[test]
fn group_updates_are_checked_against_the_schema_of_their_key() {
    let d = dictionary();
    let codes = |target: &ProfileTarget, op: &str, operand: Value, d: &Dictionary| -> Vec<(String, IssueCode)> {
        let operation = ProfileOperation::from_wire(op, operand).unwrap();
        check_profile_against_dictionary(target, &operation, d).into_iter().map(|i| (i.path, i.code)).collect()
    };
    // `Other` is a profile schema: groups of key `Other` are checked against it, not against `$user`.
    assert_eq!(codes(&group("Other"), "$set", json!({"nickname": "x"}), &d), []);
    assert_eq!(codes(&group("Other"), "$set", json!({"nickname": 1, "plan": "pro"}), &d), [("$set.nickname".into(), TypeMismatch), ("$set.plan".into(), UnknownProperty)]);
    assert_eq!(codes(&group("Other"), "$union", json!({"nickname": ["x"]}), &d), [("$union.nickname".into(), TypeMismatch)]);
    assert_eq!(codes(&group("Other"), "$unset", json!(["gone"]), &d), [("$unset.gone".into(), UnknownProperty)]);
    assert_eq!(codes(&group("Other"), "$delete", json!(""), &d), []);
    // A group key without a schema: one note per update, naming the key and the schema to add.
    let operation = ProfileOperation::from_wire("$set", json!({"a": 1, "b": 2})).unwrap();
    let issues = check_profile_against_dictionary(&group("company_id"), &operation, &d);
    assert_eq!(issues.iter().map(|i| (i.path.as_str(), i.code)).collect::<Vec<_>>(), [("", NoSchema)]);
    assert!(issues[0].message.contains("`company_id`") && issues[0].message.contains("add a `profile` schema named `company_id`"), "{}", issues[0].message);
    let unknown = check_profile_against_dictionary(&group("Other"), &ProfileOperation::from_wire("$set", json!({"x": 1})).unwrap(), &d);
    assert_eq!(unknown[0].message, "property `x` is not in the schema of `Other`; add it to the schema, or fix its name");
    assert!(d.has_profile("Other") && !d.has_profile("company_id"));
    assert_eq!((profile_schema_name(&user()), profile_schema_name(&group("company_id"))), (USER_PROFILE, "company_id"));
}

#[test]
fn operand_types_are_what_the_operation_stores() {
    let t = |op: &str, v: Value| operand_type(&ProfileOperation::from_wire(op, json!({})).unwrap(), &v);
    assert_eq!(t("$set", json!(1)), PropertyType::Integer);
    assert_eq!(t("$add", json!(1.5)), PropertyType::Number);
    assert_eq!(t("$append", json!("x")), PropertyType::Array);
    assert_eq!(t("$remove", json!(1)), PropertyType::Array);
}
