//! Tests of the `Batcher`: events and profile updates cut by count and bytes with their input
//! positions kept, invalid and oversized records rejected, and the dictionary's drops applied.

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

/// Runs profile updates (NDJSON lines) through a `ProfileUpdates` batcher with at most `per`
/// updates per body, and compares each body's `$distinct_id`s and input indexes, and the rejected
/// records as (index, line, issue codes).
fn check_profiles(lines: &[&str], per: usize, token: TokenRule, batches: &[(&[&str], &[u64])], rejected: &[(u64, u64, &[IssueCode])]) {
    let input = lines.join("\n");
    let options = BatchOptions {
        limits: Limits { max_profile_updates_per_request: per, max_profile_update_bytes: 200, ..Limits::default() },
        kind: RecordKind::ProfileUpdates(token),
        ..BatchOptions::default()
    };
    // Chunks of 7 bytes so that updates are split across pushes.
    let mut batcher = Batcher::new(options);
    let mut out = Vec::new();
    for part in input.as_bytes().chunks(7) {
        batcher.push(part).unwrap();
        out.extend(std::iter::from_fn(|| batcher.next_batch()));
    }
    batcher.finish().unwrap();
    out.extend(std::iter::from_fn(|| batcher.next_batch()));
    let got: Vec<(Vec<String>, Vec<u64>)> = out
        .iter()
        .map(|b| {
            assert!(b.gzipped);
            let body: Vec<Value> = serde_json::from_slice(&gunzip(&b.body, usize::MAX).unwrap()).unwrap();
            let ids = body.iter().map(|u| u["$distinct_id"].as_str().unwrap().to_owned()).collect();
            (ids, b.positions.iter().map(|p| p.index).collect())
        })
        .collect();
    let want: Vec<(Vec<String>, Vec<u64>)> =
        batches.iter().map(|(ids, idx)| (ids.iter().map(|s| (*s).to_owned()).collect(), idx.to_vec())).collect();
    assert_eq!(got, want);
    let got: Vec<(u64, u64, Vec<IssueCode>)> =
        batcher.take_rejected().iter().map(|r| (r.pos.index, r.pos.line, r.issues.iter().map(|i| i.code).collect())).collect();
    let want: Vec<(u64, u64, Vec<IssueCode>)> = rejected.iter().map(|(i, l, c)| (*i, *l, c.to_vec())).collect();
    assert_eq!(got, want);
    let stats = batcher.stats();
    assert_eq!(stats.rejected as usize, rejected.len());
    assert_eq!(stats.batched as usize, batches.iter().map(|b| b.0.len()).sum::<usize>());
}

#[test]
fn profile_updates_are_batched_for_engage() {
    use IssueCode::*;
    let set = |id: &str| format!(r#"{{"$token":"t","$distinct_id":"{id}","$set":{{"plan":"pro"}}}}"#);
    let (a, b, c, d) = (set("a"), set("b"), set("c"), set("d"));
    let ops = [
        r#"{"$distinct_id":"o1","$set_once":{"x":1}}"#,
        r#"{"$distinct_id":"o2","$add":{"n":2}}"#,
        r#"{"$distinct_id":"o3","$union":{"l":[1]}}"#,
        r#"{"$distinct_id":"o4","$append":{"l":1}}"#,
        r#"{"$distinct_id":"o5","$remove":{"l":1}}"#,
        r#"{"$distinct_id":"o6","$unset":["x"]}"#,
        r#"{"$distinct_id":"o7","$delete":""}"#,
    ];
    let big = format!(r#"{{"$distinct_id":"big","$set":{{"s":"{}"}}}}"#, "x".repeat(300));
    let req = TokenRule::Required;
    let opt = TokenRule::Optional;
    // Cut by count, positions kept.
    check_profiles(&[&a, &b, &c, &d], 3, req, &[(&["a", "b", "c"], &[0, 1, 2]), (&["d"], &[3])], &[]);
    // Every operation of FACTS.md passes when the token is optional.
    check_profiles(&ops, 10, opt, &[(&["o1", "o2", "o3", "o4", "o5", "o6", "o7"], &[0, 1, 2, 3, 4, 5, 6])], &[]);
    // ...and each lacks `$token` when it is required.
    check_profiles(&ops[..1], 10, req, &[], &[(0, 1, &[MissingField])]);
    // Invalid updates are rejected with every issue and their line; the rest keep their indexes.
    check_profiles(
        &[&a, "{", r#"{"$token":"t","$distinct_id":"null","$add":{"n":"x"}}"#, &b],
        10,
        req,
        &[(&["a", "b"], &[0, 3])],
        &[(1, 2, &[InvalidJson]), (2, 3, &[ForbiddenId, WrongType])],
    );
    // Over the per-update limit (200 bytes here): rejected without being buffered.
    check_profiles(&[&a, &big, &b], 10, req, &[(&["a", "b"], &[0, 2])], &[(1, 2, &[TooLarge])]);
    // Events are not profile updates.
    check_profiles(&[&event(0)], 10, opt, &[], &[(0, 1, &[UnknownField, UnknownField, MissingField, MissingOperation])]);
    check_profiles(&[], 10, req, &[], &[]);
}

#[test]
fn profile_updates_are_grouped_by_operation_in_the_summary() {
    let input = "{\"$distinct_id\":\"u\",\"$add\":{\"n\":\"x\"}}\n{\"$distinct_id\":\"v\",\"$set\":{}}\n";
    let mut batcher = Batcher::new(BatchOptions { kind: RecordKind::ProfileUpdates(TokenRule::Optional), ..BatchOptions::default() });
    batcher.push(input.as_bytes()).unwrap();
    batcher.finish().unwrap();
    let summary = batcher.summary();
    assert_eq!((summary.records, summary.records_with_issues), (2, 1));
    let add = &summary.by_event["$add"];
    assert_eq!((add.count, add.examples[0].line), (1, 1));
    assert_eq!(summary.by_code[&IssueCode::WrongType].count, 1);
}
