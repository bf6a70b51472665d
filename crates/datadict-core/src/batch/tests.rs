use super::*;
use crate::gzip::gunzip;
use crate::schema::SchemaEntry;
use serde_json::{json, Value};

const NOW: i64 = 1_767_225_600_000;

fn event(i: usize) -> String {
    format!(r#"{{"event":"e{}","properties":{{"time":1767225600,"distinct_id":"u{i}","$insert_id":"id-{i}","n":{i}}}}}"#, i % 3)
}

fn options(max_events: usize, max_bytes: usize) -> BatchOptions {
    BatchOptions {
        limits: Limits { max_events_per_request: max_events, max_request_bytes: max_bytes, ..Limits::default() },
        now_ms: NOW,
        ..BatchOptions::default()
    }
}

/// Runs the batcher over `input` in chunks of `chunk` bytes and returns each batch decoded, as
/// `(insert ids, input indexes)`, plus the rejected positions.
/// Each batch as (insert ids, input indexes).
type Decoded = Vec<(Vec<String>, Vec<u64>)>;

fn run(input: &[u8], options: BatchOptions, chunk: usize) -> (Decoded, Vec<u64>, Batcher) {
    let mut batcher = Batcher::new(options);
    let mut batches = Vec::new();
    let pull = |b: &mut Batcher, out: &mut Vec<Batch>| {
        while let Some(batch) = b.next_batch() {
            out.push(batch);
        }
    };
    for part in input.chunks(chunk) {
        batcher.push(part).unwrap();
        pull(&mut batcher, &mut batches);
    }
    batcher.finish().unwrap();
    pull(&mut batcher, &mut batches);
    let limits = batcher.options().limits.clone();
    let decoded = batches
        .iter()
        .map(|b| {
            let body = if b.gzipped { gunzip(&b.body, usize::MAX).unwrap() } else { b.body.clone() };
            assert_eq!(body.len(), b.uncompressed_bytes);
            assert!(body.len() <= limits.max_request_bytes, "{} bytes", body.len());
            assert!(b.events() <= limits.max_events_per_request && b.events() > 0);
            let events: Vec<Value> = serde_json::from_slice(&body).unwrap();
            assert_eq!(events.len(), b.events());
            let ids = events.iter().map(|e| e["properties"]["$insert_id"].as_str().unwrap().to_owned()).collect();
            (ids, b.positions.iter().map(|p| p.index).collect())
        })
        .collect();
    let rejected = batcher.take_rejected().iter().map(|r| r.pos.index).collect();
    (decoded, rejected, batcher)
}

fn ids(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("id-{i}")).collect()
}

#[test]
fn events_are_cut_by_count_and_keep_positions() {
    let input: String = (0..7).map(|i| event(i) + "\n").collect();
    for chunk in [1, 7, 64, input.len()] {
        let (batches, rejected, batcher) = run(input.as_bytes(), options(3, 1 << 20), chunk);
        assert_eq!(batches, vec![(ids(0..3), vec![0, 1, 2]), (ids(3..6), vec![3, 4, 5]), (ids(6..7), vec![6])], "chunk {chunk}");
        assert!(rejected.is_empty());
        let stats = batcher.stats();
        assert_eq!((stats.records, stats.batched, stats.batches, stats.input_bytes), (7, 7, 3, input.len() as u64));
    }
}

#[test]
fn events_are_cut_by_bytes() {
    let one = event(0).len();
    // Room for exactly two events: brackets, two events and a comma.
    let (batches, _, _) = run((0..5).map(event).collect::<Vec<_>>().join("\n").as_bytes(), options(100, 2 * one + 3), 5);
    let sizes: Vec<usize> = batches.iter().map(|b| b.0.len()).collect();
    assert_eq!(sizes, [2, 2, 1]);
    // One byte less and every batch holds one event.
    let (batches, _, _) = run((0..3).map(event).collect::<Vec<_>>().join("\n").as_bytes(), options(100, 2 * one + 2), 5);
    assert_eq!(batches.iter().map(|b| b.0.len()).collect::<Vec<_>>(), [1, 1, 1]);
}

#[test]
fn invalid_records_are_rejected_with_their_positions() {
    let bad_time = r#"{"event":"e","properties":{"time":0,"distinct_id":"u","$insert_id":"x"}}"#;
    let input = format!("[{},{bad_time},\n{},{{\"broken\"]", event(0), event(2));
    let mut o = options(10, 1 << 20);
    o.format = InputFormat::JsonArray;
    let mut batcher = Batcher::new(o.clone());
    batcher.push(input.as_bytes()).unwrap();
    // The last element is not closed properly: the framing error is reported.
    assert!(batcher.finish().is_err());
    let input = format!("[{},{bad_time},\n{},{{\"broken\":}}]", event(0), event(2));
    let (batches, rejected, mut batcher) = run(input.as_bytes(), o, 3);
    assert_eq!(batches, vec![(vec!["id-0".to_owned(), "id-2".to_owned()], vec![0, 2])]);
    assert_eq!(rejected, [1, 3]);
    let summary = batcher.summary();
    assert_eq!(summary.by_code[&IssueCode::TimeTooEarly].examples, [RecordPos { index: 1, line: 1 }]);
    assert_eq!(summary.by_code[&IssueCode::InvalidJson].examples, [RecordPos { index: 3, line: 2 }]);
    assert!(batcher.take_rejected().is_empty(), "rejections are handed out once");
}

#[test]
fn oversized_records_are_rejected_without_buffering() {
    let mut o = options(10, 1 << 20);
    o.limits.event_bytes_below = 200;
    let big = format!(r#"{{"event":"e","properties":{{"time":1767225600,"distinct_id":"u","$insert_id":"big","s":"{}"}}}}"#, "x".repeat(300));
    let input = format!("{}\n{big}\n{}\n", event(0), event(1));
    let (batches, rejected, batcher) = run(input.as_bytes(), o, 16);
    assert_eq!(batches, vec![(ids(0..2), vec![0, 2])]);
    assert_eq!(rejected, [1]);
    assert_eq!(batcher.summary().by_code[&IssueCode::TooLarge].count, 1);
}

#[test]
fn the_dictionary_drops_events_and_properties() {
    let entries: Vec<SchemaEntry> = serde_json::from_value(json!([
        {"entityType": "event", "name": "e0", "schemaJson": {"properties": {"n": {"type": "integer", "metadata": {"com.vendor": {"dropped": true}}}}}},
        {"entityType": "event", "name": "e1", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}},
        {"entityType": "event", "name": "e2", "schemaJson": {"properties": {"n": {"type": "string"}}}}
    ]))
    .unwrap();
    let mut o = options(10, 1 << 20);
    o.gzip_level = None;
    o.dictionary = Some(Dictionary::new(&entries, crate::DEFAULT_NAMESPACE));
    let input: String = (0..3).map(|i| event(i) + "\n").collect();
    let mut batcher = Batcher::new(o);
    batcher.push(input.as_bytes()).unwrap();
    batcher.finish().unwrap();
    let batch = batcher.next_batch().unwrap();
    assert!(!batch.gzipped);
    let events: Vec<Value> = serde_json::from_slice(&batch.body).unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["properties"].get("n"), None, "dropped property removed");
    assert_eq!(events[1]["properties"]["n"], 2, "other events untouched");
    assert_eq!(batch.positions.iter().map(|p| p.index).collect::<Vec<_>>(), [0, 2]);
    let stats = batcher.stats();
    assert_eq!((stats.dropped, stats.rewritten, stats.batched), (1, 1, 2));
    let s = batcher.summary();
    assert_eq!(s.by_code[&IssueCode::DroppedEvent].count, 1);
    assert_eq!(s.by_code[&IssueCode::DroppedProperty].count, 1);
    assert_eq!(s.by_code[&IssueCode::TypeMismatch].count, 1);
    let gz = batch.gzip(1);
    assert_eq!(gunzip(&gz.body, usize::MAX).unwrap().len(), gz.uncompressed_bytes);
}

#[test]
fn empty_input_gives_no_batch() {
    let (batches, rejected, _) = run(b"  \n", options(10, 1000), 1);
    assert!(batches.is_empty() && rejected.is_empty());
    let (batches, _, _) = run(b"[]", options(10, 1000), 1);
    assert!(batches.is_empty());
}
