//! Tests of schema-entry validation: every problem reported with its path, entity metadata,
//! namespaces and undecodable text.

use super::*;
use serde_json::json;

/// Validates `input` and compares the `(path, code)` pairs with `expected`.
fn check(input: Value, expected: &[(&str, IssueCode)]) {
    let issues = validate_schema_entry(&input, &SchemaRules::default());
    let got: Vec<(&str, IssueCode)> = issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
    assert_eq!(got, expected, "issues: {issues:#?}");
    for issue in &issues {
        assert!(!issue.message.is_empty() && !issue.message.ends_with('.'), "{issue}");
    }
}

use IssueCode::*;

#[test]
fn valid_entries_have_no_issues() {
    check(json!({"entityType": "event", "name": "Signup", "schemaJson": {}}), &[]);
    check(
        json!({"entityType": "profile", "name": "$user", "schemaJson": {
            "description": "a user",
            "properties": {"plan": {"type": "string", "metadata": {"com.vendor": {"hidden": true}}}},
            "metadata": {"com.vendor": {"tags": ["core"], "contacts": ["a@b.co"], "teamContacts": ["Growth"], "displayName": null}, "other.ns": {"x": 1}}
        }}),
        &[],
    );
}

#[test]
fn top_level_problems_are_all_reported() {
    check(json!([]), &[("", WrongType)]);
    check(
        json!({"extra": 1}),
        &[("extra", UnknownField), ("entityType", MissingField), ("name", MissingField), ("schemaJson", MissingField)],
    );
    check(
        json!({"entityType": "events", "name": " ", "schemaJson": 3}),
        &[("entityType", InvalidEnum), ("name", InvalidName), ("schemaJson", WrongType)],
    );
    check(json!({"entityType": 1, "name": 2, "schemaJson": {}}), &[("entityType", WrongType), ("name", WrongType)]);
}

#[test]
fn empty_and_blank_names_are_told_apart() {
    for (name, says) in [("", "`name` is empty;"), (" ", "`name` is blank (whitespace only);"), ("\t\n", "`name` is blank (whitespace only);")] {
        let issues = validate_schema_entry(&json!({"entityType": "event", "name": name, "schemaJson": {}}), &SchemaRules::default());
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert!(issues[0].message.starts_with(says), "{name:?}: {}", issues[0].message);
    }
    let issues = validate_schema_entry(&json!({"entityType": "event", "name": "e", "schemaJson": {"properties": {" ": {"type": "string"}, "": {"type": "string"}}}}), &SchemaRules::default());
    let messages: Vec<&str> = issues.iter().map(|i| i.message.as_str()).collect();
    assert_eq!(messages, ["a property name is blank (whitespace only); name every property", "a property name is empty; name every property"]);
}

#[test]
fn property_problems_carry_their_path() {
    check(
        json!({"entityType": "event", "name": "e", "schemaJson": {"properties": {
            "a": {"type": "float"},
            "b": {"description": 5},
            "c": {"type": "string", "format": "email"},
            "d": "string",
            "e": {"type": "string", "metadata": {"com.vendor": {"hidden": "yes", "label": "x"}}}
        }}}),
        &[
            ("schemaJson.properties.a.type", InvalidEnum),
            ("schemaJson.properties.b.type", MissingField),
            ("schemaJson.properties.b.description", WrongType),
            ("schemaJson.properties.c.format", UnknownField),
            ("schemaJson.properties.d", WrongType),
            ("schemaJson.properties.e.metadata[\"com.vendor\"].label", UnknownField),
            ("schemaJson.properties.e.metadata[\"com.vendor\"].hidden", WrongType),
        ],
    );
}

#[test]
fn dropped_is_for_events_only() {
    let profile = |entity: Value, property: Value| {
        json!({"entityType": "profile", "name": "$user", "schemaJson": {
            "properties": {"p": {"type": "string", "metadata": {"com.vendor": {"dropped": property}}}},
            "metadata": {"com.vendor": {"dropped": entity}}
        }})
    };
    let (property, entity) = ("schemaJson.properties.p.metadata[\"com.vendor\"].dropped", "schemaJson.metadata[\"com.vendor\"].dropped");
    check(profile(json!(true), json!(true)), &[(property, EventsOnly), (entity, EventsOnly)]);
    check(profile(json!(true), json!(false)), &[(entity, EventsOnly)]);
    check(profile(json!(false), json!(true)), &[(property, EventsOnly)]);
    // `false` is the default (spec §2.4, §2.5): saying it drops nothing, so a profile may.
    check(profile(json!(false), json!(false)), &[]);
    check(profile(Value::Null, Value::Null), &[]);
    check(profile(json!("no"), json!(0)), &[(property, WrongType), (entity, WrongType)]);
    check(
        json!({"entityType": "event", "name": "e", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}}),
        &[],
    );
}

#[test]
fn the_properties_import_requires_cannot_be_dropped() {
    let dropping = |kind: &str, name: &str, dropped: Value| {
        json!({"entityType": kind, "name": "e", "schemaJson": {"properties": {
            name: {"type": "string", "metadata": {"com.vendor": {"dropped": dropped}}}
        }}})
    };
    let at = |name: &str| format!("schemaJson.properties.{name}.metadata[\"com.vendor\"].dropped");
    for name in ["time", "distinct_id", "$insert_id"] {
        check(dropping("event", name, json!(true)), &[(&at(name), RequiredProperty)]);
        check(dropping("event", name, json!(false)), &[]);
        check(dropping("event", name, Value::Null), &[]);
    }
    // Other properties may be dropped, and so may the whole event.
    for name in ["$device_id", "Time", "distinct_id_2", "token"] {
        check(dropping("event", name, json!(true)), &[]);
    }
    let message = &validate_schema_entry(&dropping("event", "time", json!(true)), &SchemaRules::default())[0].message;
    assert!(message.starts_with("`time` cannot be dropped: `/import` requires"), "{message}");
    // A profile is refused as before, once.
    check(dropping("profile", "time", json!(true)), &[(&at("time"), EventsOnly)]);
}

#[test]
fn entity_metadata_types_and_contacts() {
    check(
        json!({"entityType": "event", "name": "e", "schemaJson": {"metadata": {"com.vendor": {
            "tags": "core", "contacts": ["ann@example.com", "Ann", 3], "teamContacts": [true], "owner": "x"
        }}}}),
        &[
            ("schemaJson.metadata[\"com.vendor\"].owner", UnknownField),
            ("schemaJson.metadata[\"com.vendor\"].tags", WrongType),
            ("schemaJson.metadata[\"com.vendor\"].contacts[1]", InvalidEmail),
            ("schemaJson.metadata[\"com.vendor\"].contacts[2]", WrongType),
            ("schemaJson.metadata[\"com.vendor\"].teamContacts[0]", WrongType),
        ],
    );
}

#[test]
fn another_namespace_can_be_chosen() {
    let rules = SchemaRules { namespace: "com.mixpanel".to_owned() };
    let entry = json!({"entityType": "event", "name": "e", "schemaJson": {"metadata": {"com.mixpanel": {"hiden": true}}}});
    let issues = validate_schema_entry(&entry, &rules);
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].path, "schemaJson.metadata[\"com.mixpanel\"].hiden");
    // Under the default namespace that key is someone else's metadata and is left alone.
    assert!(validate_schema_entry(&entry, &SchemaRules::default()).is_empty());
}

#[test]
fn undecodable_text_is_one_issue() {
    let issues = validate_schema_entry_json("{\"entityType\": ", &SchemaRules::default());
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].code, InvalidJson);
}

#[test]
fn emails() {
    for ok in ["a@b.co", "first.last+tag@sub.example.org"] {
        assert!(looks_like_email(ok), "{ok}");
    }
    for bad in ["", "ann", "@b.co", "a@", "a@b", "a@@b.co", "a b@c.de", "a@b..c"] {
        assert!(!looks_like_email(bad), "{bad}");
    }
}
