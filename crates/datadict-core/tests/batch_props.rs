//! Property tests of the streaming batcher: any event stream, split into chunks anywhere (inside
//! records, strings, escapes and UTF-8 characters), batches to the same events in the same order,
//! and every batch gunzips to a JSON array within the limits.

use datadict_core::{gunzip, BatchOptions, Batcher, InputFormat, Limits};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const NOW: i64 = 1_767_225_600_000;

fn text() -> impl Strategy<Value = String> {
    // Quotes, backslashes, control characters and multi-byte characters exercise the scanner.
    proptest::string::string_regex("[a-zé\"\\\\\\[\\]{},:\n\t ✓😀]{0,12}").unwrap()
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(text(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn event() -> impl Strategy<Value = Value> {
    // Insert ids start with a letter pair so that none is a forbidden placeholder such as `0`.
    (text(), text(), "id[A-Za-z0-9-]{0,34}", 31_536_000i64..1_767_225_600, proptest::collection::btree_map("[a-z_ ]{1,6}", value(), 0..6)).prop_map(
        |(name, distinct_id, insert_id, time, props)| {
            let mut p = Map::new();
            p.insert("time".into(), json!(time));
            // A `u` prefix keeps generated ids clear of the forbidden placeholders (`{}`, `[]`).
            p.insert("distinct_id".into(), json!(format!("u{distinct_id}")));
            p.insert("$insert_id".into(), json!(insert_id));
            for (k, v) in props {
                p.entry(k).or_insert(v);
            }
            // An empty or blank event name is invalid; keep every generated event valid.
            json!({"event": format!("e{name}"), "properties": p})
        },
    )
}

/// The input text of `events` in one format; pretty-printed arrays put line breaks inside records.
fn render(events: &[Value], format: u8) -> (String, InputFormat) {
    match format {
        0 => (events.iter().map(|e| e.to_string() + "\n").collect(), InputFormat::Ndjson),
        1 => (serde_json::to_string(events).unwrap(), InputFormat::Auto),
        _ => (serde_json::to_string_pretty(events).unwrap(), InputFormat::JsonArray),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn chunked_streams_batch_to_the_same_events(
        events in proptest::collection::vec(event(), 0..25),
        format in 0u8..3,
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
        max_events in 1usize..6,
        slack in 0usize..2000,
        level in prop_oneof![Just(None), (0u32..10).prop_map(Some)],
    ) {
        let (input, input_format) = render(&events, format);
        let bytes = input.as_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.push(0);
        points.push(bytes.len());
        points.sort_unstable();
        points.dedup();
        let largest = events.iter().map(|e| e.to_string().len()).max().unwrap_or(0);
        // Pretty-printed records are longer than their compact form; leave room for them.
        let max_bytes = 4 * largest + 64 + slack;
        let limits = Limits { max_events_per_request: max_events, max_request_bytes: max_bytes, ..Limits::default() };
        let mut batcher = Batcher::new(BatchOptions { limits, gzip_level: level, format: input_format, now_ms: NOW, ..BatchOptions::default() });
        let mut batches = Vec::new();
        for w in points.windows(2) {
            batcher.push(&bytes[w[0]..w[1]]).unwrap();
            while let Some(b) = batcher.next_batch() {
                batches.push(b);
            }
        }
        batcher.finish().unwrap();
        while let Some(b) = batcher.next_batch() {
            batches.push(b);
        }
        let rejected = batcher.take_rejected();
        prop_assert!(rejected.is_empty(), "{:?}", rejected);
        let mut out = Vec::new();
        let mut positions = Vec::new();
        for (seq, b) in batches.iter().enumerate() {
            prop_assert_eq!(b.sequence, seq as u64);
            prop_assert_eq!(b.gzipped, level.is_some());
            let body = if b.gzipped { gunzip(&b.body, usize::MAX).unwrap() } else { b.body.clone() };
            prop_assert_eq!(body.len(), b.uncompressed_bytes);
            prop_assert!(body.len() <= max_bytes, "{} > {}", body.len(), max_bytes);
            let parsed: Vec<Value> = serde_json::from_slice(&body).unwrap();
            prop_assert!(!parsed.is_empty() && parsed.len() <= max_events);
            prop_assert_eq!(parsed.len(), b.positions.len());
            out.extend(parsed);
            positions.extend(b.positions.iter().map(|p| p.index));
        }
        // Compared with the events read back from their own text: serde_json's float parsing is
        // not exact to the last digit, but the batcher copies the text, so both sides read the same.
        let expected: Vec<Value> = events.iter().map(|e| serde_json::from_str(&e.to_string()).unwrap()).collect();
        prop_assert_eq!(&out, &expected);
        prop_assert_eq!(positions, (0..events.len() as u64).collect::<Vec<_>>());
        let stats = batcher.stats();
        prop_assert_eq!(stats.input_bytes, bytes.len() as u64);
        prop_assert_eq!(stats.batched, events.len() as u64);
    }

    #[test]
    fn ndjson_positions_are_input_lines(
        lines in proptest::collection::vec(prop_oneof![event().prop_map(|e| e.to_string()), Just(String::new()), Just("  ".to_owned())], 0..20),
        cut in any::<prop::sample::Index>(),
    ) {
        let input = lines.join("\n");
        let at = cut.index(input.len() + 1);
        let mut batcher = Batcher::new(BatchOptions { now_ms: NOW, gzip_level: None, format: InputFormat::Ndjson, ..BatchOptions::default() });
        batcher.push(&input.as_bytes()[..at]).unwrap();
        batcher.push(&input.as_bytes()[at..]).unwrap();
        batcher.finish().unwrap();
        let mut got = Vec::new();
        while let Some(b) = batcher.next_batch() {
            let parsed: Vec<Value> = serde_json::from_slice(&b.body).unwrap();
            for (e, p) in parsed.iter().zip(&b.positions) {
                // The event sits on the line its position names.
                let line: Value = serde_json::from_str(&lines[p.line as usize - 1]).unwrap();
                prop_assert_eq!(&line, e);
                got.push(p.index);
            }
        }
        let expected = lines.iter().filter(|l| !l.trim().is_empty()).count() as u64;
        prop_assert_eq!(got, (0..expected).collect::<Vec<_>>());
    }
}
