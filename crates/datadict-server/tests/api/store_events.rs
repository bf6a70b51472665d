//! The store's event path below HTTP, on both stores: the latest copy of an event wins within a
//! batch and across batches, the 30-day counts follow new events and not copies, and a request
//! that fails half-way is rolled back while those committed with it are kept. (The SQLite-only
//! details of the group commit, its foreign-key and statement steps, are unit tests of
//! `store::sqlite`.)

use crate::common::{now_ms, on_both_stores, Backend, Server};
use datadict_server::store::{self, EventBatch, EventCount, EventQuery};
use std::collections::{BTreeMap, BTreeSet};

const HOUR_MS: i64 = 3_600_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Every stored record of project `p`.
fn records(server: &Server, p: i64) -> BTreeSet<String> {
    let q = EventQuery { limit: 100_000, max_bytes: usize::MAX, ..Default::default() };
    let stored = server.store.call_sync(|conn| store::query_events(conn, p, &q)).unwrap();
    stored.into_iter().map(|e| e.record).collect()
}

fn counts(server: &Server, p: i64, since_ms: i64) -> Vec<EventCount> {
    let mut counts = server.store.call_sync(|conn| store::event_counts(conn, p, since_ms)).unwrap();
    counts.sort_by(|a, b| a.event.cmp(&b.event));
    counts
}

fn the_latest_copy_wins_and_counts_follow_new_events(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let rt = runtime();
    let base = now_ms() / HOUR_MS * HOUR_MS - 5 * HOUR_MS;
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // (name, time, insert id) -> the latest record sent.
    let mut latest: BTreeMap<(&str, i64, String), String> = BTreeMap::new();
    for round in 0..30 {
        let mut batch = EventBatch::default();
        for i in 0..(1 + next() % 180) {
            // Few ids and times: copies are frequent, within and across batches.
            let name = ["A", "B", "C"][(next() % 3) as usize];
            let time_ms = base + (next() % 5) as i64 * 1_800_000 + (next() % 2) as i64;
            let insert_id = format!("id-{}", next() % 40);
            let record = format!(r#"{{"event":"{name}","time":{time_ms},"id":"{insert_id}","sent":"{round}-{i}"}}"#);
            latest.insert((name, time_ms, insert_id.clone()), record.clone());
            batch.push(name, time_ms, "u1", &insert_id, &record);
        }
        let mut sink = server.store.event_sink(p, now_ms() / 1000);
        sink.send(batch).unwrap();
        rt.block_on(sink.close().wait()).unwrap();
    }
    assert_eq!(records(&server, p), latest.values().cloned().collect::<BTreeSet<_>>());
    let mut expected: BTreeMap<&str, EventCount> = BTreeMap::new();
    for (name, time_ms, _) in latest.keys() {
        let c = expected.entry(name).or_insert(EventCount { event: (*name).to_owned(), count: 0, last_seen_ms: 0 });
        c.count += 1;
        c.last_seen_ms = c.last_seen_ms.max(*time_ms);
    }
    assert_eq!(counts(&server, p, base), expected.into_values().collect::<Vec<_>>());
}

fn a_request_that_fails_half_way_is_rolled_back_alone(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let rt = runtime();
    let t = now_ms();
    let batch = |tag: &str| {
        let mut b = EventBatch::default();
        for i in 0..50 {
            b.push(tag, t + i, "u1", &format!("{tag}-{i}"), &format!(r#"{{"tag":"{tag}","i":{i}}}"#));
        }
        b
    };
    // Three requests under way at once; the second fails after sending its first part.
    let mut sinks: Vec<_> = ["kept-1", "failed", "kept-2"]
        .iter()
        .map(|tag| {
            let mut sink = server.store.event_sink(p, t / 1000);
            sink.send(batch(tag)).unwrap();
            sink
        })
        .collect();
    let kept_2 = sinks.pop().unwrap();
    drop(sinks.pop().unwrap());
    let kept_1 = sinks.pop().unwrap();
    let (a, b) = (kept_1.close(), kept_2.close());
    assert_eq!(rt.block_on(a.wait()).unwrap(), 50);
    assert_eq!(rt.block_on(b.wait()).unwrap(), 50);
    let stored = records(&server, p);
    assert_eq!(stored.len(), 100);
    assert!(stored.iter().all(|r| !r.contains("failed")), "{stored:?}");
    let names: Vec<(String, i64)> = counts(&server, p, t - HOUR_MS).into_iter().map(|c| (c.event, c.count)).collect();
    assert_eq!(names, [("kept-1".to_owned(), 50), ("kept-2".to_owned(), 50)]);
}

on_both_stores!(the_latest_copy_wins_and_counts_follow_new_events, a_request_that_fails_half_way_is_rolled_back_alone);
