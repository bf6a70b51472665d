//! The fast path of `check_event` (a hand-written scanner) must give exactly what the serde walk
//! gives, issues, warnings, messages and extracted fields included, for any input: the event
//! fixtures, hand-picked edge cases of the JSON grammar and the limits, generated events, and
//! generated events with bytes deleted, inserted or replaced. Likewise, reading a JSON array body
//! in one pass (each record found by checking it) must give what splitting it first and then
//! checking each record gives, framing errors and record counts included.

use datadict_core::{check_event, check_event_reference, check_import_body, failed_records, split_body, CheckedRecord, EventCheck, ImportBodyError, InputFormat, Limits};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const NOW: i64 = 1_767_225_600_000;

fn same(text: &[u8], limits: &Limits) -> Result<(), String> {
    // The layout of `properties` is the scanner's alone (for a rewrite); everything else agrees.
    let fast = EventCheck { layout: None, ..check_event(text, limits, NOW) };
    let reference = check_event_reference(text, limits, NOW);
    if fast == reference {
        Ok(())
    } else {
        Err(format!("input {:?}\nfast:      {fast:?}\nreference: {reference:?}", String::from_utf8_lossy(text)))
    }
}

fn small_limits() -> Limits {
    Limits { max_depth: 2, object_keys_below: 3, array_items_below: 3, string_truncate_bytes: 5, properties_below: 4, ..Limits::default() }
}

#[test]
fn every_event_fixture_checks_the_same_both_ways() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data");
    let mut checked = 0;
    for dir in ["valid", "invalid"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let fixture: Value = serde_json::from_str(&text).unwrap();
            if fixture["kind"] != "event" {
                continue;
            }
            let inputs: Vec<String> = match (&fixture["inputText"], &fixture["input"]) {
                (Value::String(raw), _) => vec![raw.clone()],
                (_, input) => vec![input.to_string(), serde_json::to_string_pretty(input).unwrap()],
            };
            for input in inputs {
                same(input.as_bytes(), &Limits::default()).unwrap();
                same(input.as_bytes(), &small_limits()).unwrap();
                checked += 1;
            }
        }
    }
    assert!(checked >= 30, "only {checked} event fixtures found");
}

#[test]
fn edge_cases_of_the_grammar_and_the_limits_check_the_same_both_ways() {
    let head = r#"{"event":"E","properties":{"time":1767225600,"distinct_id":"u","$insert_id":"a-1","#;
    let values = [
        "0", "-0", "-0.0", "01", "-01", "1.", "1.5", "-1.5", ".5", "1e5", "1E5", "1e-5", "1.5e3", "-", "+1", "123456789012345678",
        "1234567890123456789", "-123456789012345678", "-1234567890123456789", "18446744073709551616", "0.000000000000000000001",
        "true", "false", "null", "tru", "nul", "truex", r#""""#, r#""a\"b""#, r#""a\\b""#, r#""a\/b""#, r#""a\nb""#, r#""a\u0041""#,
        r#""\ud800""#, r#""\ud83d\ude00""#, r#""a\xb""#, "\"a\tb\"", "\"a\u{1}b\"", r#""é😀""#, "[]", "{}", "[[]]", "[[[]]]", "[[[[]]]]",
        r#"{"a":{"b":{}}}"#, r#"{"a":{"b":{"c":{}}}}"#, "[1,2]", "[1,2,]", "[,1]", r#"{"a":1,}"#, r#"{"a" 1}"#, r#"{1:2}"#,
        r#"{"a\u0041":1}"#, r#"{"a\"":1}"#, "[1 2]", "[ 1 , 2 ]", " 1 ", "\u{a0}1", "\"x\"x",
    ];
    let strings = ["", "abcde", "abcdef", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"];
    let mut inputs: Vec<String> = Vec::new();
    for v in values {
        inputs.push(format!(r#"{head}"p":{v}}}}}"#));
        inputs.push(format!(r#"{{"event":{v},"properties":{{"time":1767225600,"distinct_id":"u","$insert_id":"a-1"}}}}"#));
        inputs.push(format!(r#"{{"event":"E","properties":{{"time":{v},"distinct_id":{v},"$insert_id":{v}}}}}"#));
        inputs.push(format!(r#"{head}"p":[{v},{{"k":{v}}}]}}}}"#));
    }
    for s in strings {
        inputs.push(format!(r#"{head}"p":"{s}"}}}}"#));
        inputs.push(format!(r#"{head}"p":["{s}"]}}}}"#));
        inputs.push(format!(r#"{{"event":"{s}","properties":{{"time":1767225600,"distinct_id":"{s}","$insert_id":"{s}"}}}}"#));
    }
    // Whole-record shapes: not objects, other top-level keys, duplicates, white space, trailers.
    inputs.extend(
        [
            "", " ", "{", "}", "{}", "[]", "1", "\"e\"", "null", r#"{"event":"E"}"#, r#"{"properties":{}}"#, r#"{"properties":[]}"#,
            r#"{"properties":1}"#, r#"{"extra":1,"event":"E","properties":{}}"#, r#"{"event":"E","properties":{},"event":"F"}"#,
            r#"{"event":"E","properties":{"time":1,"time":1767225600,"distinct_id":"u","$insert_id":"a"},"properties":{"x":1}}"#,
            " \t\r\n{ \"event\" : \"E\" , \"properties\" : { \"time\" : 1767225600 , \"distinct_id\" : \"u\" , \"$insert_id\" : \"a\" } } \n",
            r#"{"event":"E","properties":{}} x"#, r#"{"event":"E","properties":{}}{}"#, r#"{"ev\u0065nt":"E","properties":{}}"#,
            r#"{"event":"E","properties":{"ti\u006de":1767225600}}"#, r#"{"event":"E","properties":{"time":1767225600.5,"distinct_id":"u","$insert_id":"a"}}"#,
            r#"{"event":"E","properties":{"time":-5,"distinct_id":"null","$insert_id":"0"}}"#,
            r#"{"event":"E","properties":{"time":99999999999999,"distinct_id":"u","$insert_id":"a"}}"#,
        ]
        .map(String::from),
    );
    let many: Vec<String> = (0..300).map(|i| format!(r#""p{i}":{i}"#)).collect();
    inputs.push(format!(r#"{head}{}}}}}"#, many.join(",")));
    inputs.push(format!(r#"{head}"o":{{{}}}}}}}"#, many.join(",")));
    let items: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    inputs.push(format!(r#"{head}"a":[{}]}}}}"#, items.join(",")));
    let mut checked = 0;
    for input in &inputs {
        for limits in [Limits::default(), small_limits()] {
            same(input.as_bytes(), &limits).unwrap();
            checked += 1;
        }
    }
    // Bytes that are not UTF-8 go to the walk's error path either way.
    same(b"{\"event\":\"\xff\",\"properties\":{}}", &Limits::default()).unwrap();
    assert_eq!(checked, inputs.len() * 2);
}

fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z0-9é\"\\\\/\n\t\u{1} ✓😀-]{0,8}").unwrap()
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(text(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Events that are mostly well formed, with any value in any place now and then.
fn event() -> impl Strategy<Value = Value> {
    let time = prop_oneof![(0i64..2_000_000_000_000).prop_map(Value::from), value()];
    let id = prop_oneof![4 => "[A-Za-z0-9-]{0,40}".prop_map(Value::from), 1 => value()];
    (text(), time, id.clone(), id, proptest::collection::btree_map("[a-z_$]{1,6}", value(), 0..6), any::<bool>()).prop_map(
        |(name, time, distinct_id, insert_id, props, extra)| {
            let mut p = Map::new();
            p.insert("time".into(), time);
            p.insert("distinct_id".into(), distinct_id);
            p.insert("$insert_id".into(), insert_id);
            p.extend(props);
            let mut e = json!({"event": name, "properties": p});
            if extra {
                e["token"] = json!("x");
            }
            e
        },
    )
}

/// A few edits of one byte each: where, what (0 deletes, 1 replaces, 2 inserts) and which byte,
/// among those that matter to JSON and to UTF-8.
type Edits = Vec<(prop::sample::Index, u8, u8)>;

fn edits(count: std::ops::Range<usize>) -> impl Strategy<Value = Edits> {
    proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(b"{}[],:\"\\ 0-.eE1tnu\xc3\xa9\xff\n".to_vec())), count)
}

fn apply(bytes: &mut Vec<u8>, edits: Edits) {
    for (at, op, byte) in edits {
        let i = at.index(bytes.len() + 1);
        match op {
            0 if i < bytes.len() => {
                bytes.remove(i);
            }
            1 if i < bytes.len() => bytes[i] = byte,
            _ => bytes.insert(i, byte),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn generated_events_check_the_same_both_ways(e in event(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&e).unwrap() } else { e.to_string() };
        same(text.as_bytes(), &Limits::default()).map_err(TestCaseError::fail)?;
        same(text.as_bytes(), &small_limits()).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mutated_events_check_the_same_both_ways(
        e in event(),
        edits in edits(1..4),
    ) {
        let mut bytes = e.to_string().into_bytes();
        apply(&mut bytes, edits);
        same(&bytes, &Limits::default()).map_err(TestCaseError::fail)?;
        same(&bytes, &small_limits()).map_err(TestCaseError::fail)?;
    }
}

/// What splitting first and then checking each record gives, as [`check_import_body`] gave it
/// before it read arrays in one pass: request limits, framing and count, then every record.
fn split_then_check<'a>(body: &'a [u8], format: InputFormat, limits: &Limits) -> Result<Vec<CheckedRecord<'a>>, ImportBodyError> {
    if body.len() > limits.max_request_bytes {
        return Err(ImportBodyError::TooLarge { bytes: body.len(), max: limits.max_request_bytes });
    }
    let split = split_body(body, format)?;
    if split.len() > limits.max_events_per_request {
        return Err(ImportBodyError::TooManyRecords { count: split.len(), max: limits.max_events_per_request });
    }
    Ok(split
        .into_iter()
        .map(|record| {
            let bytes = &body[record.range.clone()];
            CheckedRecord { check: check_event(bytes, limits, NOW), text: std::str::from_utf8(bytes).ok(), record }
        })
        .collect())
}

fn same_body(body: &[u8], format: InputFormat, limits: &Limits) -> Result<(), String> {
    let expected = split_then_check(body, format, limits);
    let got = check_import_body(body, format, limits, NOW);
    let agree = match (&got, &expected) {
        (Ok(got), Ok(expected)) => {
            let failed: Vec<_> = expected.iter().flat_map(|r| failed_records(r.record.pos.index as usize, &r.check)).collect();
            got.records.len() == expected.len()
                && got.records.iter().zip(expected).all(|(g, e)| g.record == e.record && g.check == e.check && g.text == e.text)
                && got.failed_records == failed
                && got.valid == expected.iter().filter(|r| r.check.is_valid()).count()
        }
        (Err(got), Err(expected)) => got == expected,
        _ => false,
    };
    if agree {
        Ok(())
    } else {
        Err(format!("body {:?} ({format:?})\none pass: {got:?}\nsplit first: {expected:?}", String::from_utf8_lossy(body)))
    }
}

#[test]
fn array_bodies_read_in_one_pass_as_when_split_first() {
    let valid = r#"{"event":"e","properties":{"time":1767225600,"distinct_id":"u","$insert_id":"a-1"}}"#;
    let escaped = r#"{"event":"caf\u00e9 ] }","properties":{"time":1767225600,"distinct_id":"u\"1","$insert_id":"a-2"}}"#;
    let pretty = "{\n  \"event\": \"e\",\n  \"properties\": {\"time\": 1767225600, \"distinct_id\": \"u\", \"$insert_id\": \"a-3\"}\n}";
    let bodies = [
        "[]".to_owned(),
        " \n[ \n ]\n ".to_owned(),
        "\u{feff}[{}]".to_owned(),
        format!("[{valid}]"),
        format!("\n[\n{valid},\n{escaped} ,{pretty}\n,\"text\", 12 ,[1,{{}}],null\n]\n"),
        format!("[{valid},]"),
        format!("[,{valid}]"),
        format!("[{valid},,{valid}]"),
        format!("[{valid}{valid}]"),
        format!("[{valid}]x"),
        format!("[{valid}] [{valid}]"),
        format!("[{valid},{valid}"),
        format!("[{valid},"),
        "[1 2]".to_owned(),
        "[{\"event\":\"e\"\n\"x\"}, 1]".to_owned(),
        "[\"unterminated".to_owned(),
        format!("{valid}\n{valid}"),
        "{}".to_owned(),
        "".to_owned(),
    ];
    let limits = [Limits::default(), Limits { max_events_per_request: 2, ..Limits::default() }, Limits { max_events_per_request: 0, ..Limits::default() }];
    for body in &bodies {
        for format in [InputFormat::Auto, InputFormat::JsonArray, InputFormat::Ndjson] {
            for limits in &limits {
                same_body(body.as_bytes(), format, limits).unwrap();
            }
        }
    }
    // An array that is not UTF-8 is split first, as before.
    same_body(format!("[{valid},{{\"event\":\"\u{ff}\"}}]").replace('\u{ff}', "\u{fffd}").as_bytes(), InputFormat::Auto, &Limits::default()).unwrap();
    let mut raw = format!("[{valid},").into_bytes();
    raw.extend_from_slice(b"{\"event\":\"\xff\"}]");
    same_body(&raw, InputFormat::Auto, &Limits::default()).unwrap();
    // Cut at every byte: every way an array can end too early.
    let whole = format!("[{valid},\n {escaped},{pretty}, 7]");
    for cut in 0..=whole.len() {
        let part = &whole.as_bytes()[..cut];
        for limits in &limits {
            same_body(part, InputFormat::Auto, limits).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Arrays of generated events with any blanks between them, some pretty-printed, with bytes
    /// of the framing or the records deleted, inserted or replaced, under limits that refuse some.
    #[test]
    fn generated_array_bodies_read_in_one_pass_as_when_split_first(
        events in proptest::collection::vec((event(), any::<bool>()), 0..6),
        gaps in proptest::collection::vec(prop::sample::select(vec!["", " ", "\n", " \r\n\t"]), 14),
        bom in any::<bool>(),
        edits in edits(0..3),
        max_events in 0usize..7,
    ) {
        let mut body = if bom { "\u{feff}".to_owned() } else { String::new() };
        body.push_str(gaps[0]);
        body.push('[');
        for (i, (e, pretty)) in events.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            body.push_str(gaps[2 * i + 1]);
            body.push_str(&if *pretty { serde_json::to_string_pretty(e).unwrap() } else { e.to_string() });
            body.push_str(gaps[2 * i + 2]);
        }
        body.push(']');
        body.push_str(gaps[13]);
        let mut bytes = body.into_bytes();
        apply(&mut bytes, edits);
        let limits = Limits { max_events_per_request: max_events, ..small_limits() };
        same_body(&bytes, InputFormat::Auto, &Limits::default()).map_err(TestCaseError::fail)?;
        same_body(&bytes, InputFormat::JsonArray, &limits).map_err(TestCaseError::fail)?;
    }
}
