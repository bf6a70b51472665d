//! Tests of profile updates: the checks of user and group updates, parsing, every operation of
//! `apply` and the property cap.

use super::*;
use serde_json::json;
use IssueCode::*;

fn check(input: Value, expected: &[(&str, IssueCode)]) {
    let issues = validate_profile_update(&input, &Limits::default(), TokenRule::Required);
    let got: Vec<(&str, IssueCode)> = issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
    assert_eq!(got, expected, "{issues:#?}");
    for issue in &issues {
        assert!(!issue.message.ends_with('.'), "{issue}");
    }
}

#[test]
fn profile_updates() {
    check(json!({"$token": "t", "$distinct_id": "u1", "$set": {"plan": "pro"}}), &[]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$unset": ["a"], "$ip": "1.2.3.4"}), &[]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$delete": ""}), &[]);
    // What the service's browser library adds to each update once it knows it.
    let browser = json!({"$token": "t", "$distinct_id": "u1", "$device_id": "d-9", "$user_id": "u1", "$had_persisted_distinct_id": true, "$set": {"a": 1}});
    check(browser.clone(), &[]);
    assert_eq!(parse_profile_update(&browser.to_string(), ProfileKind::User, &Limits::default(), TokenRule::Required).unwrap().operation, ProfileOperation::Set(serde_json::from_value(json!({"a": 1})).unwrap()));
    check(
        json!({"$token": "t", "$distinct_id": "u1", "$device_id": 9, "$had_persisted_distinct_id": "yes", "$set": {}}),
        &[("$device_id", WrongType), ("$had_persisted_distinct_id", WrongType)],
    );
    check(json!({"$token": "t", "$distinct_id": "u1", "$add": {"n": 1, "m": "2"}}), &[("$add.m", WrongType)]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$union": {"l": 1}}), &[("$union.l", WrongType)]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$unset": "a"}), &[("$unset", WrongType)]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$unset": ["a", 2]}), &[("$unset[1]", WrongType)]);
    // The reference's `minItems: 1` and `minProperties: 1`.
    check(json!({"$token": "t", "$distinct_id": "u1", "$unset": []}), &[("$unset", WrongType)]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$union": {}}), &[("$union", WrongType)]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$union": {"l": []}}), &[("$union.l", WrongType)]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$set": [1]}), &[("$set", WrongType)]);
    check(json!({"$distinct_id": "u1"}), &[("$token", MissingField), ("", MissingOperation)]);
    check(
        json!({"$token": 1, "$distinct_id": "null", "$set": {}, "$set_once": {}, "plan": "x"}),
        &[("plan", UnknownField), ("$token", WrongType), ("$distinct_id", ForbiddenId), ("", MultipleOperations)],
    );
    check(json!({"$token": "t", "$distinct_id": 5, "$set": {}}), &[("$distinct_id", WrongType)]);
    check(json!({"$token": "t", "$distinct_id": "", "$set": {}}), &[("$distinct_id", ForbiddenId)]);
    check(json!(3), &[("", WrongType)]);
}

#[test]
fn token_can_be_optional_and_limits_apply() {
    let update = json!({"$distinct_id": "u", "$set": {"a": 1, "b": 2, "c": 3}});
    assert!(validate_profile_update(&update, &Limits::default(), TokenRule::Optional).is_empty());
    let small = Limits { max_profile_properties: 2, max_profile_update_bytes: 10, ..Limits::default() };
    let issues = validate_profile_update_json(&update.to_string(), &small, TokenRule::Optional);
    let codes: Vec<IssueCode> = issues.iter().map(|i| i.code).collect();
    assert_eq!(codes, [TooLarge, TooManyProperties]);
    assert_eq!(validate_profile_update_json("{", &small, TokenRule::Optional)[0].code, InvalidJson);
}

fn run(start: Value, op: &str, operand: Value) -> Value {
    let start = start.as_object().cloned();
    let operation = ProfileOperation::from_wire(op, operand).expect("a valid operation");
    match apply(start.as_ref(), &operation, &Limits::default()) {
        Ok(Some(p)) => Value::Object(p),
        Ok(None) => Value::Null,
        Err(issues) => Value::String(issues[0].message.clone()),
    }
}

#[test]
fn every_operation_applies() {
    let p = json!({"plan": "free", "n": 1, "tags": ["a"]});
    assert_eq!(run(p.clone(), "$set", json!({"plan": "pro"})), json!({"plan": "pro", "n": 1, "tags": ["a"]}));
    assert_eq!(run(p.clone(), "$set_once", json!({"plan": "pro", "new": 1}))["plan"], "free");
    assert_eq!(run(p.clone(), "$set_once", json!({"new": 1}))["new"], 1);
    assert_eq!(run(p.clone(), "$add", json!({"n": 2, "m": 1.5}))["n"], 3);
    assert_eq!(run(p.clone(), "$add", json!({"m": 1.5}))["m"], 1.5);
    assert_eq!(run(p.clone(), "$union", json!({"tags": ["a", "b", "b"]}))["tags"], json!(["a", "b"]));
    assert_eq!(run(p.clone(), "$append", json!({"tags": "a"}))["tags"], json!(["a", "a"]));
    assert_eq!(run(p.clone(), "$append", json!({"fresh": 1}))["fresh"], json!([1]));
    assert_eq!(run(p.clone(), "$remove", json!({"tags": "a"}))["tags"], json!([]));
    assert_eq!(run(p.clone(), "$unset", json!(["plan", "nope"])), json!({"n": 1, "tags": ["a"]}));
    assert_eq!(run(p.clone(), "$delete", json!("")), Value::Null);
    assert_eq!(run(Value::Null, "$set", json!({"a": 1})), json!({"a": 1}));
}

/// What a refused `apply` says about its first issue: the path and the message.
fn refused(start: Value, op: &str, operand: Value) -> (String, String) {
    let operation = ProfileOperation::from_wire(op, operand).expect("a valid operation");
    let issues = apply(start.as_object(), &operation, &Limits::default()).expect_err("a refusal");
    assert!(issues.iter().all(|i| i.code == WrongType), "{issues:#?}");
    (issues[0].path.clone(), issues[0].message.clone())
}

#[test]
fn an_operation_never_overwrites_a_value_it_cannot_work_on() {
    let p = json!({"s": "str", "n": 1, "l": [1, 2], "big": 1e308});
    let (path, message) = refused(p.clone(), "$add", json!({"l": 1}));
    assert_eq!(path, "$add.l");
    assert!(message.contains("adds only to a number") && message.contains("not applied"), "{message}");
    assert_eq!(refused(p.clone(), "$add", json!({"s": 1})).0, "$add.s");
    assert_eq!(refused(p.clone(), "$append", json!({"n": "x"})).0, "$append.n");
    let (path, message) = refused(p.clone(), "$union", json!({"s": ["a"]}));
    assert_eq!(path, "$union.s");
    assert!(message.contains("not a list"), "{message}");
    assert_eq!(refused(p.clone(), "$remove", json!({"s": "str"})).0, "$remove.s");
    let (path, message) = refused(p.clone(), "$add", json!({"big": 1e308}));
    assert_eq!(path, "$add.big");
    assert!(message.contains("not a finite number"), "{message}");
    // One refused property refuses the whole update: its other properties are not applied.
    let operation = ProfileOperation::from_wire("$add", json!({"n": 1, "s": 1})).unwrap();
    assert_eq!(apply(p.as_object(), &operation, &Limits::default()).unwrap_err().len(), 1);
    // `null` holds nothing to lose: it counts as 0, or as an empty list.
    assert_eq!(run(json!({"z": null}), "$add", json!({"z": 2})), json!({"z": 2}));
    assert_eq!(run(json!({"z": null}), "$append", json!({"z": 2})), json!({"z": [2]}));
    assert_eq!(run(json!({"z": null}), "$remove", json!({"z": 2})), json!({"z": null}));
    // Integers past i64 become floats rather than failing.
    assert_eq!(run(json!({"n": i64::MAX}), "$add", json!({"n": 1}))["n"], json!(9.223372036854776e18));
}

#[test]
fn unset_and_remove_make_no_profile() {
    for (op, operand) in [("$unset", json!(["a"])), ("$remove", json!({"a": 1}))] {
        let operation = ProfileOperation::from_wire(op, operand).unwrap();
        assert_eq!(apply(None, &operation, &Limits::default()).unwrap(), None, "{op}");
    }
    // The other operations create the profile (reference: "The profile is created if it does
    // not exist").
    assert_eq!(run(Value::Null, "$union", json!({"l": ["a", "a"]})), json!({"l": ["a"]}));
    assert_eq!(run(Value::Null, "$add", json!({"n": 2})), json!({"n": 2}));
}

#[test]
fn apply_keeps_the_property_cap() {
    let small = Limits { max_profile_properties: 2, ..Limits::default() };
    let start = json!({"a": 1, "b": 2});
    let set = ProfileOperation::from_wire("$set", json!({"c": 3})).unwrap();
    let issues = apply(start.as_object(), &set, &small).unwrap_err();
    assert_eq!((issues[0].path.as_str(), issues[0].code), ("$set", TooManyProperties));
    assert!(issues[0].message.contains("a profile holds at most 2"), "{}", issues[0]);
    // Replacing a property does not grow the profile.
    let replace = ProfileOperation::from_wire("$set", json!({"a": 3})).unwrap();
    assert!(apply(start.as_object(), &replace, &small).is_ok());
}

#[test]
fn parsing_gives_the_typed_update_or_every_issue() {
    let update = parse_profile_update(r#"{"$token": "t", "$distinct_id": "u", "$unset": ["a"]}"#, ProfileKind::User, &Limits::default(), TokenRule::Required).unwrap();
    assert_eq!(update.operation, ProfileOperation::Unset(vec!["a".into()]));
    assert_eq!(update.token.as_deref(), Some("t"));
    let issues = parse_profile_update(r#"{"$distinct_id": "u"}"#, ProfileKind::User, &Limits::default(), TokenRule::Required).unwrap_err();
    assert_eq!(issues.len(), 2);
}

#[test]
fn updates_serialize_to_the_wire_shape() {
    let mut props = Map::new();
    props.insert("plan".into(), json!("pro"));
    let mut update = ProfileUpdate::set("u1", props);
    assert_eq!(serde_json::to_value(&update).unwrap(), json!({"$distinct_id": "u1", "$set": {"plan": "pro"}}));
    update.token = Some("t".into());
    update.operation = ProfileOperation::Unset(vec!["a".into()]);
    let value = serde_json::to_value(&update).unwrap();
    assert_eq!(value, json!({"$token": "t", "$distinct_id": "u1", "$unset": ["a"]}));
    assert!(validate_profile_update(&value, &Limits::default(), TokenRule::Required).is_empty());
}

/// Group updates (reference, `/groups`): named by `$group_key` and `$group_id`, with the group
/// operations only; the same parser and checks as user updates.
#[test]
fn group_updates() {
    let group = |input: Value, expected: &[(&str, IssueCode)]| {
        let issues = validate_update(&input, ProfileKind::Group, &Limits::default(), TokenRule::Required);
        let got: Vec<(&str, IssueCode)> = issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
        assert_eq!(got, expected, "{issues:#?}");
        issues
    };
    group(json!({"$token": "t", "$group_key": "Company", "$group_id": "Acme", "$set": {"plan": "pro"}}), &[]);
    group(json!({"$token": "t", "$group_key": "Company", "$group_id": 42, "$delete": null}), &[]);
    group(json!({"$token": "t", "$group_key": "Company", "$group_id": "Acme", "$remove": {"tags": "a"}, "$time": 1}), &[]);
    let issues = group(json!({"$token": "t", "$group_key": "Company", "$group_id": "Acme", "$append": {"l": 1}}), &[("$append", UnknownField), ("", MissingOperation)]);
    assert!(issues[0].message.contains("not an operation of a group profile update"), "{}", issues[0]);
    group(json!({"$token": "t", "$distinct_id": "u", "$set": {}}), &[("$distinct_id", UnknownField), ("$group_key", MissingField), ("$group_id", MissingField)]);
    group(json!({"$token": "t", "$group_key": "Company", "$group_id": "Acme", "$device_id": "d", "$set": {}}), &[("$device_id", UnknownField)]);
    group(json!({"$token": "t", "$group_key": "", "$group_id": "null", "$set": {}}), &[("$group_key", InvalidName), ("$group_id", ForbiddenId)]);
    group(json!({"$token": "t", "$group_key": 1, "$group_id": 1.5, "$set": {}}), &[("$group_key", WrongType), ("$group_id", WrongType)]);
    // A user update's `$group_key` is an unknown field, as any other.
    let issues = validate_profile_update(&json!({"$token": "t", "$distinct_id": "u", "$group_key": "x", "$set": {}}), &Limits::default(), TokenRule::Required);
    assert_eq!(issues.len(), 1);

    let update = parse_profile_update(r#"{"$token": "t", "$group_key": "Company", "$group_id": 7, "$union": {"l": [1]}}"#, ProfileKind::Group, &Limits::default(), TokenRule::Required).unwrap();
    assert_eq!(update.target, ProfileTarget::Group { key: "Company".into(), id: "7".into() });
    assert_eq!(update.target.kind(), ProfileKind::Group);
    assert_eq!(serde_json::to_value(&update).unwrap(), json!({"$token": "t", "$group_key": "Company", "$group_id": "7", "$union": {"l": [1]}}));
    // The same text is no user update.
    assert!(parse_profile_update(r#"{"$token": "t", "$group_key": "Company", "$group_id": 7, "$set": {}}"#, ProfileKind::User, &Limits::default(), TokenRule::Required).is_err());
    let check = check_update(br#"{"$group_key": "C", "$group_id": "g", "$unset": ["a"]}"#, ProfileKind::Group, &Limits::default(), TokenRule::Optional);
    assert_eq!((check.is_valid(), check.operation), (true, Some("$unset")));
}

#[test]
fn a_nul_character_in_an_id_or_a_group_key_is_refused_and_kept_in_a_value() {
    check(json!({"$token": "t", "$distinct_id": "u\u{0}1", "$set": {"plan": "p\u{0}ro"}}), &[("$distinct_id", NulCharacter)]);
    check(json!({"$token": "t", "$distinct_id": "u1", "$set": {"p\u{0}lan": "p\u{0}ro"}}), &[]);
    let group = |key: &str, id: &str| {
        let update = json!({"$token": "t", "$group_key": key, "$group_id": id, "$set": {"a": "b\u{0}"}});
        let issues = validate_update(&update, ProfileKind::Group, &Limits::default(), TokenRule::Required);
        issues.iter().map(|i| (i.path.clone(), i.code)).collect::<Vec<_>>()
    };
    assert_eq!(group("Com\u{0}pany", "acme"), [("$group_key".to_owned(), NulCharacter)]);
    assert_eq!(group("Company", "ac\u{0}me"), [("$group_id".to_owned(), NulCharacter)]);
    assert_eq!(group("Company", "acme"), []);
}
