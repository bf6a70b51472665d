//! Tests of dictionary I/O: CSV that round-trips exactly, CSV written by hand, every problem
//! reported with its row, and batch-upload bodies.

use super::*;
use crate::DEFAULT_NAMESPACE;
use serde_json::json;

fn entries() -> Vec<SchemaEntry> {
    serde_json::from_value(json!([
        {"entityType": "event", "name": "Add To Cart", "schemaJson": {
            "description": "An item, \"quoted\", added,\nwith a line break",
            "properties": {
                "price": {"type": "number", "description": "in EUR", "metadata": {"com.vendor": {"displayName": "Price", "hidden": false}}},
                "sku": {"type": "string", "metadata": {"com.vendor": {"dropped": true}, "other.ns": {"x": [1, 2]}}},
                "note": {"type": "string", "description": ""},
                "bare": {"type": "null"}
            },
            "metadata": {"com.vendor": {"tags": ["shop", "a,b"], "contacts": ["ann@example.com"], "teamContacts": ["Growth"], "hidden": true, "dropped": false, "$source": "tracking-plan", "displayName": "Cart"}}
        }},
        {"entityType": "event", "name": "Empty", "schemaJson": {"x-plan": {"owner": "ann", "n": 2}}},
        {"entityType": "event", "name": "NoProps", "schemaJson": {"properties": {}, "metadata": {"com.vendor": {}}}},
        {"entityType": "event", "name": "Odd", "schemaJson": {"metadata": {"com.vendor": {"displayName": "", "tags": [], "hidden": null}}}},
        {"entityType": "profile", "name": "$user", "schemaJson": {"properties": {"plan": {"type": "string"}}}}
    ]))
    .unwrap()
}

#[test]
fn csv_round_trips_exactly() {
    let original = entries();
    let csv = dictionary_to_csv(&original, DEFAULT_NAMESPACE);
    let back = dictionary_from_csv(&csv, DEFAULT_NAMESPACE).unwrap();
    assert_eq!(back, original, "{csv}");
    // Writing again gives the same text.
    assert_eq!(dictionary_to_csv(&back, DEFAULT_NAMESPACE), csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], CSV_COLUMNS.join(","));
    assert!(csv.contains("event,Add To Cart,price,number,in EUR,Price,false,,,,,,\n"), "{csv}");
    assert!(csv.contains(r#"event,Add To Cart,,,"An item, ""quoted"", added,"#), "{csv}");
}

#[test]
fn csv_written_by_hand_is_read() {
    let csv = "entity_name,entity_type,property,type,hidden,tags\r\nSignup,event,,,TRUE,\"[\"\"a\"\"]\"\r\nSignup,event,plan,string,false,\r\n\r\n";
    let got = dictionary_from_csv(csv, DEFAULT_NAMESPACE).unwrap();
    let want: Vec<SchemaEntry> = serde_json::from_value(json!([{"entityType": "event", "name": "Signup", "schemaJson": {
        "properties": {"plan": {"type": "string", "metadata": {"com.vendor": {"hidden": false}}}},
        "metadata": {"com.vendor": {"hidden": true, "tags": ["a"]}}
    }}]))
    .unwrap();
    assert_eq!(got, want);
    assert_eq!(dictionary_from_csv("", DEFAULT_NAMESPACE).unwrap(), vec![]);
}

/// Reads `csv` and compares the `(path, code)` pairs of its issues.
fn check(csv: &str, expected: &[(&str, IssueCode)]) {
    let issues = dictionary_from_csv(csv, DEFAULT_NAMESPACE).unwrap_err();
    let got: Vec<(&str, IssueCode)> = issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
    assert_eq!(got, expected, "{issues:#?}");
}

#[test]
fn csv_problems_are_all_reported() {
    use IssueCode::*;
    check("name,type\n", &[("header", MissingField), ("header", MissingField), ("header", MissingField)]);
    check(
        "entity_type,entity_name,property,type,hidden,tags,rest\nthing,a,,,,,\nevent,b,,,yes,x,\nevent,b,p,float,,,\nevent,c,p,string,,,\nevent,b,,,,,[1]\nevent,d,,,,,\nevent,d,,,,,\n",
        &[
            ("rows[2].entity_type", InvalidEnum),
            ("rows[3].hidden", WrongType),
            ("rows[3].tags", WrongType),
            ("rows[4].type", InvalidEnum),
            ("rows[5].entity_name", MissingField),
            ("rows[6].rest", InvalidJson),
            ("rows[8].entity_name", InvalidName),
        ],
    );
    check("entity_type,entity_name,property\n\"open", &[("line 2", InvalidJson)]);
}

#[test]
fn batch_bodies() {
    let body = serde_json::to_value(batch_body(&entries(), false)).unwrap();
    assert!(validate_batch_body(&body, &SchemaRules::default()).is_empty());
    let bad = json!({"entries": [{"entityType": "event", "name": "a", "schemaJson": {}}, {"entityType": "x", "name": "b", "schemaJson": {"properties": {"p": {}}}}], "truncate": "no", "extra": 1});
    let got: Vec<(String, IssueCode)> = validate_batch_body(&bad, &SchemaRules::default()).into_iter().map(|i| (i.path, i.code)).collect();
    assert_eq!(got, vec![
        ("extra".to_owned(), IssueCode::UnknownField),
        ("truncate".to_owned(), IssueCode::WrongType),
        ("entries[1].entityType".to_owned(), IssueCode::InvalidEnum),
        ("entries[1].schemaJson.properties.p.type".to_owned(), IssueCode::MissingField),
    ]);
    assert_eq!(validate_batch_body(&json!({}), &SchemaRules::default())[0].code, IssueCode::MissingField);
}

#[test]
fn a_batch_names_each_entity_once() {
    let entry = |kind: &str, name: &str| json!({"entityType": kind, "name": name, "schemaJson": {}});
    let body = json!({"entries": [
        entry("event", "DD2"), entry("profile", "DD2"), entry("event", "DD2"), entry("event", "dd2"),
        entry("event", "X"), entry("events", "X"), entry("event", "X"), entry("event", "DD2")
    ], "truncate": true});
    let issues = validate_batch_body(&body, &SchemaRules::default());
    let got: Vec<(&str, IssueCode, &str)> = issues.iter().map(|i| (i.path.as_str(), i.code, i.message.as_str())).collect();
    assert_eq!(got, vec![
        ("entries[5].entityType", IssueCode::InvalidEnum, "unknown entity type `events`: use `event` or `profile`"),
        ("entries[2].name", IssueCode::InvalidName, "event `DD2` is given 3 times, at entries[0], entries[2] and entries[7]; one upload stores one schema per entity: merge them into one entry"),
        ("entries[6].name", IssueCode::InvalidName, "event `X` is given 2 times, at entries[4] and entries[6]; one upload stores one schema per entity: merge them into one entry"),
    ]);
    assert!(duplicate_entries(&[entry("event", "a"), entry("profile", "a")], "entries").is_empty());
}

#[test]
fn csv_rows_are_checked_by_the_schema_rules_at_their_row() {
    let csv = "entity_type,entity_name,property,type,dropped,rest\n\
        event,Buy,,,,\n\
        event,Buy,time,number,true,\n\
        event,Buy,price,number,,\"{\"\"metadata\"\":{\"\"com.vendor\"\":{\"\"label\"\":1}}}\"\n\
        profile,$user,,,true,\n\
        event, ,,,,\n";
    check(
        csv,
        &[
            ("rows[4].metadata[\"com.vendor\"].label", IssueCode::UnknownField),
            ("rows[3].metadata[\"com.vendor\"].dropped", IssueCode::RequiredProperty),
            ("rows[5].metadata[\"com.vendor\"].dropped", IssueCode::EventsOnly),
            ("rows[6].entity_name", IssueCode::InvalidName),
        ],
    );
}

#[test]
fn csv_that_cannot_be_read_names_its_line() {
    check("entity_type,entity_name,property\nevent,a,\n\"open\nmore", &[("line 3", IssueCode::InvalidJson)]);
    // Empty lines before the header are skipped, as between rows; row paths keep the file's lines.
    check("\n\nentity_type,entity_name,property\nthing,a,\n", &[("rows[4].entity_type", IssueCode::InvalidEnum)]);
}

/// A cell a spreadsheet would run as a formula is written with one leading `'`, and read back
/// without it; cells that already start with `'`s before such a character keep round-tripping.
#[test]
fn csv_cells_that_look_like_formulas_are_defused_and_round_trip() {
    let starts = ["=HYPERLINK(\"http://evil\",\"x\")", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "'=already", "''+two", "'plain", "a=b", ""];
    let original: Vec<SchemaEntry> = starts
        .iter()
        .enumerate()
        .map(|(i, s)| {
            serde_json::from_value(json!({"entityType": "event", "name": format!("{s}{i}"), "schemaJson": {
                "description": s, "properties": {format!("{s}p"): {"type": "string", "description": s}},
                "metadata": {"com.vendor": {"displayName": s, "$source": s}}}}))
            .unwrap()
        })
        .collect();
    let csv = dictionary_to_csv(&original, DEFAULT_NAMESPACE);
    assert_eq!(dictionary_from_csv(&csv, DEFAULT_NAMESPACE).unwrap(), original, "{csv}");
    let rows = crate::csv::parse(&csv).unwrap();
    for row in &rows[1..] {
        for cell in &row.fields {
            assert!(!cell.starts_with(FORMULA_STARTS), "a cell starts a formula: {cell:?} in {csv}");
        }
    }
    assert!(csv.contains(r#"event,"'=HYPERLINK(""http://evil"",""x"")0",,,"'=HYPERLINK("#), "{csv}");
    assert!(csv.contains("event,''=already6,,,''=already,"), "one more quote: {csv}");
    assert!(csv.contains("event,'plain8,,,'plain,"), "no formula, no quote: {csv}");
    // By hand: one quote before a formula's first character is taken off, other text is kept.
    let hand = "entity_type,entity_name,property,description\nevent,'=x,,'+1\nevent,'y,,=z\n";
    let read = dictionary_from_csv(hand, DEFAULT_NAMESPACE).unwrap();
    assert_eq!((read[0].name.as_str(), read[0].schema_json.description.as_deref()), ("=x", Some("+1")));
    assert_eq!((read[1].name.as_str(), read[1].schema_json.description.as_deref()), ("'y", Some("=z")));
}
