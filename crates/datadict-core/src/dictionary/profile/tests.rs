//! Tests of user profile updates checked against the dictionary's `$user` schema: every
//! operation, unknown properties, type mismatches, hidden properties, no schema, group updates.

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
    let issues = check_profile_against_dictionary(ProfileKind::User, &operation, dictionary);
    let got: Vec<(&str, IssueCode)> = issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
    assert_eq!(got, expected, "{op}: {issues:#?}");
    issues
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
fn group_updates_are_not_checked() {
    let operation = ProfileOperation::from_wire("$set", json!({"unknown": 1})).unwrap();
    assert!(check_profile_against_dictionary(ProfileKind::Group, &operation, &dictionary()).is_empty());
    assert!(check_profile_against_dictionary(ProfileKind::Group, &operation, &Dictionary::default()).is_empty());
}

#[test]
fn operand_types_are_what_the_operation_stores() {
    let t = |op: &str, v: Value| operand_type(&ProfileOperation::from_wire(op, json!({})).unwrap(), &v);
    assert_eq!(t("$set", json!(1)), PropertyType::Integer);
    assert_eq!(t("$add", json!(1.5)), PropertyType::Number);
    assert_eq!(t("$append", json!("x")), PropertyType::Array);
    assert_eq!(t("$remove", json!(1)), PropertyType::Array);
}
