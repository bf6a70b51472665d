//! Tests of `check_event`: the fields it extracts, the time, id, size and shape rules with their
//! messages, string warnings, and keys only for valid records.

use super::*;
use IssueCode::*;

/// 2026-01-01T00:00:00Z, the receiver's clock in these tests.
const NOW: i64 = 1_767_225_600_000;

/// An expected list of `(path, code)` pairs.
type Expected<'a> = &'a [(&'a str, IssueCode)];

/// Checks `record` with the default limits and compares the `(path, code)` pairs of its issues.
fn check<'a>(record: &'a str, expected: &[(&str, IssueCode)]) -> EventCheck<'a> {
    check_with(record, &Limits::default(), expected)
}

fn check_with<'a>(record: &'a str, limits: &Limits, expected: &[(&str, IssueCode)]) -> EventCheck<'a> {
    let result = check_event(record.as_bytes(), limits, NOW);
    let got: Vec<(&str, IssueCode)> = result.issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
    assert_eq!(got, expected, "issues of {record}: {:#?}", result.issues);
    for issue in result.issues.iter().chain(&result.warnings) {
        assert!(!issue.message.is_empty() && !issue.message.ends_with('.'), "{issue}");
    }
    result
}

fn event(props: &str) -> String {
    format!(r#"{{"event":"Signup","properties":{{{props}}}}}"#)
}

const OK: &str = r#""time":1767225600,"distinct_id":"u1","$insert_id":"abc-123""#;

#[test]
fn a_valid_event_yields_its_fields() {
    let record = event(&format!(r#"{OK},"plan":"pro","n":3,"x":1.5,"ok":true,"z":null,"tags":["a"],"o":{{"k":1}}"#));
    let result = check(&record, &[]);
    assert_eq!(result.event.as_deref(), Some("Signup"));
    assert_eq!(result.time_ms, Some(NOW));
    assert_eq!(result.distinct_id.as_deref(), Some("u1"));
    assert_eq!(result.insert_id.as_deref(), Some("abc-123"));
    assert!(matches!(result.event, Some(Cow::Borrowed(_))), "strings without escapes are borrowed");
    let kinds: Vec<(&str, PropertyType)> = result.properties.iter().map(|p| (p.name.as_ref(), p.kind)).collect();
    use PropertyType as T;
    assert_eq!(
        kinds,
        [
            ("time", T::Integer),
            ("distinct_id", T::String),
            ("$insert_id", T::String),
            ("plan", T::String),
            ("n", T::Integer),
            ("x", T::Number),
            ("ok", T::Boolean),
            ("z", T::Null),
            ("tags", T::Array),
            ("o", T::Object)
        ]
    );
    assert!(result.is_valid());
    assert_eq!(result.bytes, record.len());
}

#[test]
fn time_in_seconds_or_milliseconds() {
    let cases: [(&str, Option<i64>, Expected); 10] = [
        ("1767225600", Some(NOW), &[]),
        ("1767225600000", Some(NOW), &[]),
        ("1767225599.5", Some(NOW - 500), &[]),
        ("31536000", Some(31_536_000_000), &[]),
        ("31535999", Some(31_535_999_000), &[("properties.time", TimeTooEarly)]),
        ("0", Some(0), &[("properties.time", TimeTooEarly)]),
        ("-5", Some(-5000), &[("properties.time", TimeTooEarly)]),
        // Up to one hour ahead is allowed and set to the receiver's clock (the reference's
        // `/import`: "overwritten with the current present time"); one second more is refused.
        ("1767225601", Some(NOW), &[]),
        ("1767229200", Some(NOW), &[]),
        ("1767229201", Some(NOW + 3_601_000), &[("properties.time", TimeInFuture)]),
    ];
    for (time, ms, expected) in cases {
        let record = event(&format!(r#""time":{time},"distinct_id":"u","$insert_id":"i1""#));
        let result = check(&record, expected);
        assert_eq!(result.time_ms, ms, "{time}");
        // A valid time ahead of the clock is marked as set to it.
        let sent: f64 = time.parse().unwrap();
        let ahead = expected.is_empty() && (if sent < 1e11 { sent * 1000.0 } else { sent }) > NOW as f64;
        assert_eq!(result.time_set, ahead.then_some(TimeSet::Future), "{time}");
    }
    let record = event(r#""time":"1767225600","distinct_id":"u","$insert_id":"i1""#);
    let result = check(&record, &[("properties.time", WrongType)]);
    assert!(result.issues[0].message.contains("the string \"1767225600\""), "{}", result.issues[0].message);
}

#[test]
fn a_huge_time_is_shown_in_scientific_notation() {
    let record = event(r#""time":1e300,"distinct_id":"u","$insert_id":"i1""#);
    let result = check(&record, &[("properties.time", TimeInFuture)]);
    assert!(result.issues[0].message.starts_with("`properties.time` is the number 1e+300 ("), "{}", result.issues[0].message);
}

#[test]
fn time_messages_say_what_was_found_and_what_is_allowed() {
    let record = event(r#""time":0,"distinct_id":"u","$insert_id":"i1""#);
    let result = check(&record, &[("properties.time", TimeTooEarly)]);
    assert_eq!(
        result.issues[0].message,
        "`properties.time` is the number 0 (1970-01-01); it must be on or after 1971-01-01, in seconds or milliseconds since the epoch"
    );
}

#[test]
fn required_fields_are_all_reported() {
    check("{}", &[("event", MissingField), ("properties", MissingField)]);
    check(r#"{"event":"e","properties":{}}"#, &[
        ("properties.time", MissingField),
        ("properties.distinct_id", MissingField),
        ("properties.$insert_id", MissingField),
    ]);
    check(r#"{"event":"","properties":[]}"#, &[("event", InvalidName), ("properties", WrongType)]);
    check(&format!(r#"{{"event":5,"properties":{{{OK}}},"token":"x"}}"#), &[("token", UnknownField), ("event", WrongType)]);
    check("[1]", &[("", WrongType)]);
    check("\"e\"", &[("", WrongType)]);
}

#[test]
fn invalid_json_is_one_issue() {
    check(r#"{"event":"e","properties":{"#, &[("", InvalidJson)]);
    check(r#"{"event":"e"} x"#, &[("", InvalidJson)]);
    check("", &[("", InvalidJson)]);
}

/// A record that is not UTF-8 says so, rather than naming a syntax error that is not there.
#[test]
fn a_record_that_is_not_utf8_says_so() {
    let record = b"{\"event\":\"e\",\"properties\":{\"x\":\"\xff\"}}";
    let result = check_event(record, &Limits::default(), NOW);
    let issues: Vec<(&str, IssueCode, &str)> = result.issues.iter().map(|i| (i.path.as_str(), i.code, i.message.as_str())).collect();
    assert_eq!(
        issues,
        [("", InvalidJson, "the record is not UTF-8 text (invalid utf-8 sequence of 1 bytes from index 32); send JSON encoded in UTF-8")]
    );
}

#[test]
fn ids_follow_the_import_rules() {
    let cases: [(&str, &str, Expected); 10] = [
        ("", "a", &[]),
        ("u", "A-z-0", &[]),
        ("null", "a", &[("properties.distinct_id", ForbiddenId)]),
        ("Anonymous", "a", &[("properties.distinct_id", ForbiddenId)]),
        ("u", "none", &[("properties.$insert_id", ForbiddenId)]),
        ("u", "", &[("properties.$insert_id", InvalidInsertId)]),
        ("u", "a:b", &[("properties.$insert_id", InvalidInsertId)]),
        ("u", "0123456789012345678901234567890123456", &[("properties.$insert_id", InsertIdTooLong)]),
        ("u", "012345678901234567890123456789012345", &[]),
        ("u", "a_b c0123456789012345678901234567890123", &[("properties.$insert_id", InvalidInsertId), ("properties.$insert_id", InsertIdTooLong)]),
    ];
    for (distinct_id, insert_id, expected) in cases {
        let record = event(&format!(r#""time":1767225600,"distinct_id":{distinct_id:?},"$insert_id":{insert_id:?}"#));
        check(&record, expected);
    }
    check(&event(r#""time":1767225600,"distinct_id":7,"$insert_id":["a"]"#), &[
        ("properties.distinct_id", WrongType),
        ("properties.$insert_id", WrongType),
    ]);
}

#[test]
fn escaped_strings_are_decoded() {
    let record = event(r#""time":1767225600,"distinct_id":"caf\u00e9 \"x\"","$insert_id":"a\u0062c""#);
    let result = check(&record, &[]);
    assert_eq!(result.distinct_id.as_deref(), Some("café \"x\""));
    assert_eq!(result.insert_id.as_deref(), Some("abc"));
}

#[test]
fn size_and_shape_limits() {
    let small = Limits { properties_below: 5, object_keys_below: 3, array_items_below: 3, max_depth: 2, ..Limits::default() };
    check_with(&event(&format!("{OK},\"a\":1")), &small, &[]);
    check_with(&event(&format!("{OK},\"a\":1,\"b\":2")), &small, &[("properties", TooManyProperties)]);
    check_with(&event(&format!(r#"{OK},"o":{{"a":1,"b":2,"c":3}}"#)), &small, &[("properties.o", TooManyKeys)]);
    check_with(&event(&format!(r#"{OK},"o":[1,2,3]"#)), &small, &[("properties.o", TooManyItems)]);
    check_with(&event(&format!(r#"{OK},"o":[[1]]"#)), &small, &[]);
    // Too deep is reported once, at the first level past the limit.
    check_with(&event(&format!(r#"{OK},"o":{{"a":[{{"b":{{}}}}]}}"#)), &small, &[("properties.o.a[0]", TooDeep)]);
    check_with(&event(&format!(r#"{OK},"o":{{"a":[[1,2,3]]}}"#)), &small, &[("properties.o.a[0]", TooDeep), ("properties.o.a[0]", TooManyItems)]);
    let tiny = Limits { event_bytes_below: 20, ..Limits::default() };
    check_with(&event(OK), &tiny, &[("", TooLarge)]);
}

#[test]
fn default_limits_at_the_boundary() {
    let props = |n: usize| (0..n).map(|i| format!(r#","p{i}":{i}"#)).collect::<String>();
    // OK holds 3 properties: 251 more makes 254, one more makes 255.
    check(&event(&format!("{OK}{}", props(251))), &[]);
    check(&event(&format!("{OK}{}", props(252))), &[("properties", TooManyProperties)]);
    let items = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    check(&event(&format!(r#"{OK},"a":[{}]"#, items(254))), &[]);
    check(&event(&format!(r#"{OK},"a":[{}]"#, items(255))), &[("properties.a", TooManyItems)]);
    check(&event(&format!(r#"{OK},"a":{{"b":{{"c":{{"d":1}}}}}}"#)), &[]);
    check(&event(&format!(r#"{OK},"a":{{"b":{{"c":{{"d":{{}}}}}}}}"#)), &[("properties.a.b.c.d", TooDeep)]);
    let big = "x".repeat(1024 * 1024);
    check(&event(&format!(r#"{OK},"big":"{big}""#)), &[("", TooLarge)]);
}

#[test]
fn long_strings_are_warnings() {
    let long = "é".repeat(128);
    let record = event(&format!(r#"{OK},"s":"{long}","t":["{}"],"ok":"{}""#, "x".repeat(256), "x".repeat(255)));
    let result = check(&record, &[]);
    let warnings: Vec<(&str, IssueCode)> = result.warnings.iter().map(|w| (w.path.as_str(), w.code)).collect();
    assert_eq!(warnings, [("properties.s", StringTruncated), ("properties.t[0]", StringTruncated)]);
    assert!(result.warnings[0].message.starts_with("the string is 256 bytes"), "{}", result.warnings[0].message);
}

#[test]
fn paths_quote_odd_keys() {
    let small = Limits { array_items_below: 2, ..Limits::default() };
    check_with(&event(&format!(r#"{OK},"my prop":{{"a.b":[1,2]}}"#)), &small, &[(r#"properties["my prop"]["a.b"]"#, TooManyItems)]);
}

#[test]
fn results_can_outlive_the_input() {
    let owned = {
        let record = event(OK);
        check_event(record.as_bytes(), &Limits::default(), NOW).into_owned()
    };
    assert_eq!(owned.distinct_id.as_deref(), Some("u1"));
    assert_eq!(owned.properties.len(), 3);
}

/// A cut never splits a character, leaves short strings alone, and cuts the key fields of a
/// check (borrowed or owned) and the string values of a record the same way; keys stay whole.
#[test]
fn truncation_cuts_on_character_boundaries() {
    assert_eq!(truncated("abé", 3), "ab");
    assert_eq!(truncated("abé", 4), "abé");
    assert_eq!(truncated("", 0), "");
    let long = format!("{}é", "x".repeat(254));
    let mut c = EventCheck { event: Some(Cow::Borrowed(&long)), distinct_id: Some(Cow::Owned(long.clone())), ..EventCheck::default() };
    c.truncate_key_fields(255);
    assert_eq!(c.event.as_deref(), Some("x".repeat(254).as_str()));
    assert_eq!(c.distinct_id.as_deref(), Some("x".repeat(254).as_str()));
    let mut value = serde_json::json!({"k": long, "a": [long, 1], long.clone(): "short"});
    truncate_strings(&mut value, 255);
    let cut = "x".repeat(254);
    assert_eq!(value, serde_json::json!({"k": cut, "a": [cut, 1], long: "short"}));
}

/// A time far outside the calendar is not described by the date its saturated value would have.
#[test]
fn huge_times_are_not_shown_as_made_up_dates() {
    for (record, shown) in [
        (r#"{"event":"e","properties":{"time":123456789012345678901234567890,"distinct_id":"u","$insert_id":"a"}}"#, "after the year 9999"),
        (r#"{"event":"e","properties":{"time":-123456789012345678901234567890,"distinct_id":"u","$insert_id":"a"}}"#, "before the year 1"),
        (r#"{"event":"e","properties":{"time":253402300800000,"distinct_id":"u","$insert_id":"a"}}"#, "after the year 9999"),
        (r#"{"event":"e","properties":{"time":253402300799999,"distinct_id":"u","$insert_id":"a"}}"#, "9999-12-31T23:59:59Z"),
    ] {
        let c = check_event(record.as_bytes(), &Limits::default(), NOW);
        let message = &c.issues.iter().find(|i| i.path == "properties.time").expect(record).message;
        assert!(message.contains(shown), "{message}");
        assert!(!message.contains("292"), "{message}");
    }
}

/// A record that passes every rule has its key; one with any issue has none, so the import needs
/// no second check of the required fields.
#[test]
fn valid_records_and_only_they_have_a_key() {
    let now = 1_767_225_600_000;
    let valid = format!(r#"{{"event":"e","properties":{{"time":{now},"distinct_id":"u","$insert_id":"i1"}}}}"#);
    let check = check_event(valid.as_bytes(), &Limits::default(), now);
    let key = check.valid_key().expect("a valid record has a key");
    assert_eq!((key.event, key.time_ms, key.distinct_id, key.insert_id), ("e", now, "u", "i1"));
    let invalid = format!(r#"{{"event":"e","properties":{{"time":{now},"distinct_id":"u"}}}}"#);
    assert_eq!(check_event(invalid.as_bytes(), &Limits::default(), now).valid_key(), None);
}

/// `/track`'s rules are the same checker with another [`EventRules`]: only `event` and the token
/// are required; an absent time or one later than the receiver's clock becomes that clock; every
/// other rule (forbidden ids, the `$insert_id` alphabet, sizes) is the import's.
#[test]
fn track_rules_require_less_and_set_the_time() {
    let track = |record: &str, expected: Expected| {
        let result = check_event_with_rules(record.as_bytes(), &EventRules::TRACK, &Limits::default(), NOW);
        let got: Vec<(&str, IssueCode)> = result.issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
        assert_eq!(got, expected, "issues of {record}: {:#?}", result.issues);
        let key = result.valid_key().map(|k| (k.distinct_id.to_owned(), k.insert_id.to_owned()));
        (result.time_ms, result.time_set, result.token.map(Cow::into_owned), key)
    };
    let bare = r#"{"event":"e","properties":{"token":"tok"}}"#;
    assert_eq!(track(bare, &[]), (Some(NOW), Some(TimeSet::Absent), Some("tok".to_owned()), Some((String::new(), String::new()))));
    // The import's rules still refuse the same record for every missing field.
    let import = check_event(bare.as_bytes(), &Limits::default(), NOW);
    assert_eq!(import.issues.len(), 3, "{:?}", import.issues);
    assert_eq!((import.time_set, import.token.as_deref()), (None, Some("tok")));
    // A later time is the receiver's, even within the import's hour of tolerance; an earlier one
    // is kept.
    let at = |t: &str| format!(r#"{{"event":"e","properties":{{"token":"tok","time":{t},"distinct_id":"u","$insert_id":"i-1"}}}}"#);
    assert_eq!(track(&at("1767225601"), &[]).0, Some(NOW));
    assert_eq!(track(&at("1767225601"), &[]).1, Some(TimeSet::Future));
    assert_eq!(track(&at("1767225599.5"), &[]).0, Some(NOW - 500));
    assert_eq!(track(&at("1767225599.5"), &[]).1, None);
    assert_eq!(track(&at("1767225599.5"), &[]).3, Some(("u".to_owned(), "i-1".to_owned())));
    // What the import refuses in a field that is present, `/track` refuses too.
    track(&at("0"), &[("properties.time", TimeTooEarly)]);
    track(&at("\"now\""), &[("properties.time", WrongType)]);
    track(r#"{"event":"e","properties":{"token":"tok","distinct_id":"null"}}"#, &[("properties.distinct_id", ForbiddenId)]);
    track(r#"{"event":"e","properties":{"token":"tok","$insert_id":"a:b"}}"#, &[("properties.$insert_id", InvalidInsertId)]);
    track(r#"{"properties":{"token":"tok"}}"#, &[("event", MissingField)]);
    // The token is required, and a string.
    track(r#"{"event":"e","properties":{}}"#, &[("properties.token", MissingField)]);
    track(r#"{"event":"e","properties":{"token":5}}"#, &[("properties.token", WrongType)]);
    let header = EventRules { token: TokenField::Credential(Presence::Optional), ..EventRules::TRACK };
    assert!(check_event_with_rules(br#"{"event":"e","properties":{}}"#, &header, &Limits::default(), NOW).is_valid());
    // The fast path and the walk agree under these rules too.
    for record in [bare.to_owned(), at("1767225601"), at("0"), r#"{"event":"e","properties":{"token":"t\u0041"}}"#.to_owned()] {
        let fast = EventCheck { layout: None, ..check_event_with_rules(record.as_bytes(), &EventRules::TRACK, &Limits::default(), NOW) };
        let walk = check_event_reference_with_rules(record.as_bytes(), &EventRules::TRACK, &Limits::default(), NOW);
        assert_eq!(fast, walk, "{record}");
    }
}

/// What `properties` must be is said by the route's rules: the fields they require.
#[test]
fn the_properties_message_names_what_the_rules_require() {
    let message = |record: &str, rules: &EventRules| {
        let result = check_event_with_rules(record.as_bytes(), rules, &Limits::default(), NOW);
        let issue = result.issues.iter().find(|i| i.path == "properties").unwrap_or_else(|| panic!("{record}: {:?}", result.issues));
        issue.message.clone()
    };
    let header = EventRules { token: TokenField::Credential(Presence::Optional), ..EventRules::TRACK };
    let cases = [
        (EventRules::IMPORT, "an object with `time`, `distinct_id` and `$insert_id`"),
        (EventRules::TRACK, "an object with `token` (the project token)"),
        (header, "an object of the event's properties"),
    ];
    for (rules, expected) in cases {
        assert_eq!(message(r#"{"event":"e","properties":"abc"}"#, &rules), format!("`properties` is the string \"abc\"; it must be {expected}"));
        assert_eq!(message(r#"{"event":"e"}"#, &rules), format!("`properties` is required; give {expected}"));
    }
}

#[test]
fn a_nul_character_in_the_name_or_the_user_id_is_refused_and_kept_in_a_property() {
    // The fast scanner and the reference walk decode the escape alike.
    let record = r#"{"event":"Sign\u0000Up","properties":{"time":1767225600,"distinct_id":"u\u00001","$insert_id":"abc-123","note":"a\u0000b","k\u0000":1}}"#;
    let result = check(record, &[("event", NulCharacter), ("properties.distinct_id", NulCharacter)]);
    assert!(result.issues[0].message.contains("U+0000"), "{}", result.issues[0]);
    let walked = check_event_reference(record.as_bytes(), &Limits::default(), NOW);
    assert_eq!(walked.issues, result.issues);
    check(&event(&format!(r#"{OK},"note":"a\u0000b","k\u0000":1"#)), &[]);
}
