//! The fast path of `check_event` (a hand-written scanner) must give exactly what the serde walk
//! gives, issues, warnings, messages and extracted fields included, for any input: the event
//! fixtures, hand-picked edge cases of the JSON grammar and the limits, generated events, and
//! generated events with bytes deleted, inserted or replaced.

use datadict_core::{check_event, check_event_reference, Limits};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const NOW: i64 = 1_767_225_600_000;

fn same(text: &[u8], limits: &Limits) -> Result<(), String> {
    let fast = check_event(text, limits, NOW);
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
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(b"{}[],:\"\\ 0-.eE1tnu\xc3\xa9\xff\n".to_vec())), 1..4),
    ) {
        let mut bytes = e.to_string().into_bytes();
        for (at, op, byte) in edits {
            let i = at.index(bytes.len() + 1);
            match op {
                0 if i < bytes.len() => { bytes.remove(i); }
                1 if i < bytes.len() => bytes[i] = byte,
                _ => bytes.insert(i, byte),
            }
        }
        same(&bytes, &Limits::default()).map_err(TestCaseError::fail)?;
        same(&bytes, &small_limits()).map_err(TestCaseError::fail)?;
    }
}
