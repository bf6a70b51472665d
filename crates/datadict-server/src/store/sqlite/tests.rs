//! Tests of the store: de-duplication, volumes, the group commit, and the upgrade of older
//! databases. Those of lookup tables are in `tests/lookup.rs`, those of group profiles in
//! `tests/groups.rs`, those of the event writer's pipelined commits in `tests/event_writer.rs`.

mod groups;
mod lookup;
mod event_writer;
mod quality_journal;
mod refused_http;

use super::event_writer::write_group;
use super::quality_journal::Journal;
use super::events::insert_events;
use super::reads::event_counts;
use super::tables::DATA_FORMAT;
use super::Sqlite as Store;
use super::*;
use crate::store::event_writer::{InsertJob, JobParts, Part, ReadyParts};
use crate::store::events::HOUR_MS;
use crate::store::{dedup_key, EventBatch, EventCount, QualityRows, ViolationRow};
use rusqlite::{params, Connection};
use std::sync::mpsc::channel;

fn batch(rows: &[(i64, &str, &str)]) -> EventBatch {
    let mut batch = EventBatch::default();
    for (time_ms, insert_id, record) in rows {
        batch.push("Signed Up", *time_ms, "u1", insert_id, record);
    }
    batch
}

fn stored(conn: &Connection) -> Vec<(i64, String)> {
    let mut stmt = conn.prepare("SELECT time_ms, record FROM events WHERE project_id = 1 ORDER BY time_ms, record").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().collect::<Result<_, _>>().unwrap()
}

/// Runs `test` on the writer connection of a new in-memory store holding project 1; returns
/// the store.
fn with_project_1(test: impl FnOnce(&mut Connection)) -> Store {
    let store = Store::open_in_memory().unwrap();
    store
        .call_sync(|conn| {
            conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", []).unwrap();
            test(conn);
            Ok(())
        })
        .unwrap();
    store
}

/// `event_volume` says what the events table holds, per project, name and hour.
fn assert_volume_matches_events(conn: &Connection) {
    let read = |sql: &str| -> Vec<(i64, String, i64, i64, i64)> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let counted = read("SELECT project_id, event, time_ms / 3600000, count(*), max(time_ms) FROM events GROUP BY 1, 2, 3 ORDER BY 1, 2, 3");
    let kept = read("SELECT project_id, event, hour, count, last_ms FROM event_volume ORDER BY 1, 2, 3");
    assert_eq!(kept, counted);
}

/// The latest copy wins, within one batch and across batches, and a different time or insert
/// id is a different event.
fn check_dedup(conn: &mut Connection) {
    conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", []).unwrap();
    insert_events(conn, 1, &batch(&[(1_000, "a", "first"), (1_000, "a", "second"), (2_000, "a", "other time")]), 0)
        .unwrap();
    insert_events(conn, 1, &batch(&[(1_000, "a", "third"), (1_000, "b", "other id")]), 0).unwrap();
    assert_eq!(
        stored(conn),
        [(1_000, "other id".into()), (1_000, "third".into()), (2_000, "other time".into())]
    );
    assert_volume_matches_events(conn);
    let counts = event_counts(conn, 1, 0).unwrap();
    assert_eq!(counts, [EventCount { event: "Signed Up".into(), count: 3, last_seen_ms: 2_000 }]);
}

/// Batches with copies of events in the same batch, in the same 50-row insert, in earlier
/// batches, and events over several hours: the volumes always match the stored rows and
/// the latest copy of each event is the one stored.
#[test]
fn volumes_follow_new_events_and_not_copies() {
    with_project_1(|conn| {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut latest = std::collections::BTreeMap::new();
        for round in 0..30 {
            let mut batch = EventBatch::default();
            for i in 0..(1 + next() % 180) {
                // Few ids and times: copies are frequent, within and across batches.
                let name = ["A", "B", "C"][(next() % 3) as usize];
                let time_ms = (next() % 5) as i64 * 1_800_000 + (next() % 2) as i64;
                let insert_id = format!("id-{}", next() % 40);
                let record = format!("{round}-{i}");
                latest.insert((name, time_ms, insert_id.clone()), record.clone());
                batch.push(name, time_ms, "u1", &insert_id, &record);
            }
            insert_events(conn, 1, &batch, 0).unwrap();
            assert_volume_matches_events(conn);
        }
        let mut stmt = conn.prepare("SELECT event, time_ms, insert_id, record FROM events").unwrap();
        let stored: std::collections::BTreeMap<(String, i64, String), String> = stmt
            .query_map([], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected: std::collections::BTreeMap<_, _> =
            latest.into_iter().map(|((n, t, id), rec)| ((n.to_owned(), t, id), rec)).collect();
        assert_eq!(stored, expected);
    });
}

/// The volume of the last days is exact at its start, which falls inside an hour: whole
/// hours come from `event_volume`, the part hour from the events themselves.
#[test]
fn event_counts_cut_exactly_at_the_start() {
    with_project_1(|conn| {
        let since = 10 * HOUR_MS + 1_234;
        let mut batch = EventBatch::default();
        for (name, time_ms) in [("A", since - 1), ("A", since), ("B", since + 1), ("A", 11 * HOUR_MS), ("B", 13 * HOUR_MS + 5), ("B", 9 * HOUR_MS)] {
            batch.push(name, time_ms, "u1", "x", "{}");
        }
        insert_events(conn, 1, &batch, 0).unwrap();
        let counts = event_counts(conn, 1, since).unwrap();
        assert_eq!(
            counts,
            [
                EventCount { event: "A".into(), count: 2, last_seen_ms: 11 * HOUR_MS },
                EventCount { event: "B".into(), count: 2, last_seen_ms: 13 * HOUR_MS + 5 },
            ]
        );
        // A start on a whole hour, and one before any event.
        assert_eq!(event_counts(conn, 1, 11 * HOUR_MS).unwrap().iter().map(|c| c.count).sum::<i64>(), 2);
        assert_eq!(event_counts(conn, 1, 0).unwrap().iter().map(|c| c.count).sum::<i64>(), 6);
        assert!(event_counts(conn, 1, 14 * HOUR_MS).unwrap().is_empty());
    });
}

/// `.cargo/config.toml` reached the bundled SQLite's build: no memory statistics and no
/// shared page cache (each takes a global mutex on the import path).
#[test]
fn the_bundled_sqlite_has_the_workspace_build_options() {
    let conn = Connection::open_in_memory().unwrap();
    let mut stmt = conn.prepare("PRAGMA compile_options").unwrap();
    let options: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
    assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
    assert!(!options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"), "{options:?}");
    assert!(options.iter().any(|o| o == "DEFAULT_LOOKASIDE=1200,1000"), "{options:?}");
}

/// The digest is the one databases of `DEDUP_KEY_VERSION` hold: BLAKE3 over the
/// length-prefixed fields and the time, truncated to 128 bits.
#[test]
fn dedup_key_is_unchanged() {
    let cases: [(&str, i64, &str, &str); 3] = [("Signed Up", 1_767_225_600_000, "u1", "a"), ("", 0, "", ""), ("é", -1, &"d".repeat(300)[..], "x-1")];
    for (event, time_ms, distinct_id, insert_id) in cases {
        assert_eq!(dedup_key(event, time_ms, distinct_id, insert_id)[..], blake3_reference(event, time_ms, distinct_id, insert_id)[..16]);
    }
    // Checked with Python's `blake3` package. A change of this value needs a new
    // DEDUP_KEY_VERSION and a re-key (see `rekey_events`).
    assert_eq!(
        dedup_key("Signed Up", 1_000, "u1", "a"),
        [0xaf, 0xe5, 0x82, 0x32, 0xc9, 0x6f, 0x48, 0x62, 0xb3, 0x01, 0xd5, 0xa1, 0x46, 0x47, 0x7d, 0x1b]
    );
}

/// The digest input as the key's definition says, built independently of `dedup_key`: each
/// field with its length in front, then the time.
fn key_input(event: &str, time_ms: i64, distinct_id: &str, insert_id: &str) -> Vec<u8> {
    let mut input = Vec::new();
    for field in [event, distinct_id, insert_id] {
        input.extend_from_slice(&(field.len() as u64).to_le_bytes());
        input.extend_from_slice(field.as_bytes());
    }
    input.extend_from_slice(&time_ms.to_le_bytes());
    input
}

fn blake3_reference(event: &str, time_ms: i64, distinct_id: &str, insert_id: &str) -> [u8; 32] {
    *blake3::hash(&key_input(event, time_ms, distinct_id, insert_id)).as_bytes()
}

/// The digest databases held before `DEDUP_KEY_VERSION` 2.
fn sha256_key(event: &str, time_ms: i64, distinct_id: &str, insert_id: &str) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(key_input(event, time_ms, distinct_id, insert_id))[..16].to_vec()
}

/// A database whose events hold SHA-256 digests (every one before the version was recorded)
/// is re-keyed once when opened: a copy sent afterwards still replaces the stored event.
#[test]
fn older_digests_are_rekeyed_once() {
    let mut conn = Store::init_writer(Connection::open_in_memory().unwrap(), Synchronous::Full).unwrap();
    conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", []).unwrap();
    // Three rounds of the re-key's 10,000 rows.
    let ids: Vec<String> = (0..25_000).map(|i| format!("i{i}")).collect();
    let rows: Vec<(i64, &str, &str)> = ids.iter().enumerate().map(|(i, id)| (1_000 + i as i64 % 3_000, id.as_str(), "v1")).collect();
    insert_events(&mut conn, 1, &batch(&rows), 0).unwrap();
    // Back to how an older server stored them.
    let keys_of = |conn: &Connection, key: fn(&str, i64, &str, &str) -> Vec<u8>| -> Vec<(i64, Vec<u8>, Vec<u8>)> {
        conn.prepare("SELECT rowid, dedup, event, time_ms, distinct_id, insert_id FROM events ORDER BY rowid")
            .unwrap()
            .query_map([], |r| {
                let text = |i| r.get::<_, String>(i);
                Ok((r.get(0)?, r.get(1)?, key(&text(2)?, r.get(3)?, &text(4)?, &text(5)?)))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    for (rowid, _, old) in keys_of(&conn, sha256_key) {
        conn.execute("UPDATE events SET dedup = ?2 WHERE rowid = ?1", params![rowid, old]).unwrap();
    }
    conn.pragma_update(None, "user_version", 0).unwrap();

    let mut conn = Store::init_writer(conn, Synchronous::Full).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, DATA_FORMAT);
    let rekeyed = keys_of(&conn, |e, t, d, i| dedup_key(e, t, d, i).to_vec());
    assert_eq!(rekeyed.len(), ids.len());
    assert!(rekeyed.iter().all(|(_, stored, current)| stored == current), "every stored digest is the current one");
    // A copy sent now replaces the stored event instead of being stored beside it.
    let again: Vec<(i64, &str, &str)> = rows.iter().step_by(97).map(|(t, id, _)| (*t, *id, "v2")).collect();
    insert_events(&mut conn, 1, &batch(&again), 0).unwrap();
    let (count, replaced): (usize, usize) = conn
        .query_row("SELECT count(*), count(*) FILTER (WHERE record = 'v2') FROM events", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!((count, replaced), (ids.len(), again.len()));
    assert_volume_matches_events(&conn);

    // A database of a newer format is refused with what to do, not misread.
    conn.pragma_update(None, "user_version", DATA_FORMAT + 1).unwrap();
    let err = Store::init_writer(conn, Synchronous::Full).unwrap_err().to_string();
    assert!(err.contains("written by a newer datadict") && err.contains("--data-dir"), "{err}");
}

#[test]
fn dedup_on_the_current_table_shape() {
    let store = Store::open_in_memory().unwrap();
    store
        .call_sync(|conn| {
            check_dedup(conn);
            Ok(())
        })
        .unwrap();
}

/// A group of ready jobs (all parts queued with the job, as tracking requests send them) is
/// stored without savepoints; when one of them fails, the group is stored again with a savepoint
/// per job: that job fails alone, the others are committed once, with their data-quality rows.
#[test]
fn a_ready_group_isolates_a_failing_job() {
    with_project_1(|conn| {
        // A ready job's parts come with it, whole.
        let job = |parts: Vec<Part>| {
            let mut ready = ReadyParts::default();
            for part in parts {
                match part {
                    Part::Rows(batch) => ready.batches.push(batch),
                    Part::Quality(rows) => ready.quality = Some(rows),
                    Part::End => {}
                }
            }
            InsertJob { project_id: 1, parts: JobParts::Ready(Some(ready)), now_s: 0, done: tokio::sync::oneshot::channel().0 }
        };
        let counted = |name: &str| {
            let row = ViolationRow {
                kind: "good".into(),
                entity: name.into(),
                property: String::new(),
                code: String::new(),
                message: String::new(),
                count: 1,
                first_seen_ms: 0,
                last_seen_ms: 0,
                types: Vec::new(),
                samples: Vec::new(),
            };
            Part::Quality(QualityRows { day: "2026-01-01".into(), max_keys: 100, max_samples: 5, counts: vec![row], ..QualityRows::default() })
        };
        conn.execute_batch(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON events WHEN NEW.record = 'refused'
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
        )
        .unwrap();
        let jobs = [
            job(vec![Part::Rows(batch(&[(1_000, "a", "first")])), counted("a"), Part::End]),
            job(vec![Part::Rows(batch(&[(5_000, "b", "stored, then rolled back")])), Part::Rows(batch(&[(6_000, "b", "refused")])), counted("b"), Part::End]),
            job(vec![Part::Rows(batch(&[(2_000, "c", "second")])), counted("c"), Part::End]),
        ];
        let mut journal = Journal::default();
        let results = write_group(conn, jobs, &mut journal);
        assert_eq!(results.iter().map(|r| r.as_ref().ok().copied()).collect::<Vec<_>>(), [Some(1), None, Some(1)]);
        assert!(format!("{:#}", results[1].as_ref().unwrap_err()).contains("refused by the test"), "{results:?}");
        assert_eq!(stored(conn), [(1_000, "first".into()), (2_000, "second".into())]);
        assert_volume_matches_events(conn);
        // The quality rows of the stored jobs only were journaled.
        journal.fold(conn).unwrap();
        let counts: Vec<(String, i64)> = conn
            .prepare("SELECT entity, count FROM quality_event_counts ORDER BY entity")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(counts, [("a".to_owned(), 1), ("c".to_owned(), 1)]);
        // Without a failure, a ready group is committed on the first attempt.
        conn.execute_batch("DROP TRIGGER refuse").unwrap();
        let jobs = [job(vec![Part::Rows(batch(&[(7_000, "e", "third")])), counted("a"), Part::End])];
        assert_eq!(write_group(conn, jobs, &mut journal).into_iter().map(Result::ok).collect::<Vec<_>>(), [Some(1)]);
        assert_eq!(stored(conn).len(), 3);
    });
}

/// Jobs committed together: each is stored or not on its own (a job whose insert fails after
/// a first part was stored, a request that stops half-way: both rolled back), and the others
/// are committed. The writer leaves the foreign-key checks off for its next group, and every
/// other write on the connection turns them on first.
#[test]
fn a_group_commit_isolates_each_batch() {
    let store = with_project_1(|conn| {
        let job = |parts: Vec<Part>| {
            let (tx, rx) = channel();
            parts.into_iter().for_each(|p| tx.send(p).unwrap());
            InsertJob { project_id: 1, parts: JobParts::Streaming(rx), now_s: 0, done: tokio::sync::oneshot::channel().0 }
        };
        // An insert that fails half-way through a job: a row this trigger refuses, after
        // the job's first part was stored.
        conn.execute_batch(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON events WHEN NEW.record = 'refused'
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
        )
        .unwrap();
        let jobs = [
            job(vec![Part::Rows(batch(&[(1_000, "a", "first")])), Part::End]),
            job(vec![Part::Rows(batch(&[(5_000, "b", "stored, then rolled back")])), Part::Rows(batch(&[(6_000, "b", "refused")])), Part::End]),
            // A request that failed after sending a part: its part is rolled back.
            job(vec![Part::Rows(batch(&[(3_000, "d", "unfinished")]))]),
            job(vec![Part::Rows(batch(&[(1_000, "a", "second")])), Part::Rows(batch(&[(2_000, "c", "third")])), Part::End]),
        ];
        // As the event writer runs a group.
        let mut journal = Journal::default();
        let results = write_group(conn, jobs, &mut journal);
        assert_eq!(results.iter().map(|r| r.as_ref().ok().copied()).collect::<Vec<_>>(), [Some(1), None, None, Some(2)]);
        assert!(format!("{:#}", results[1].as_ref().unwrap_err()).contains("refused by the test"), "{results:?}");
        assert_eq!(stored(conn), [(1_000, "second".into()), (2_000, "third".into())]);
        // The rolled-back parts are not counted either.
        assert_volume_matches_events(conn);
        // The writer leaves the checks off for its next group.
        let on: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
        assert_eq!(on, 0);
    });
    // The other writes on the connection check foreign keys again, whatever ran before: a
    // schema for a project that does not exist is refused.
    let orphan = |conn: &mut Connection| Ok(insert_orphan_schema(conn)?);
    let err = store.call_sync(orphan);
    assert!(format!("{err:?}").contains("FOREIGN KEY"), "{err:?}");
    store.call_sync(|conn| Ok(write_group(conn, [], &mut Journal::default()))).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let err = rt.block_on(store.call(orphan));
    assert!(format!("{err:?}").contains("FOREIGN KEY"), "{err:?}");
    // `insert_events` sets the checks back as they were.
    store.call_sync(|conn| {
        insert_events(conn, 1, &batch(&[(7_000, "e", "fourth")]), 0)?;
        assert_eq!(conn.query_row("PRAGMA foreign_keys", [], |r| r.get::<_, i64>(0))?, 1);
        Ok(())
    })
    .unwrap();
}

/// A schema for project 99, which does not exist: refused when foreign keys are checked.
fn insert_orphan_schema(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute("INSERT INTO schemas (project_id, entity_type, name, schema_json) VALUES (99, 'event', 'e', '{}')", [])
}

/// `Store::write_events` (the bench's bare insert) stores and de-duplicates as the writer
/// does, and the next write through the store checks foreign keys again.
#[test]
fn write_events_takes_the_writer_steps() {
    let store = with_project_1(|_| {});
    store.write_events(1, &batch(&[(1_000, "a", "first"), (2_000, "b", "other")]), 0).unwrap();
    store.write_events(1, &batch(&[(1_000, "a", "second")]), 0).unwrap();
    store
        .call_sync(|conn| {
            assert_eq!(stored(conn), [(1_000, "second".into()), (2_000, "other".into())]);
            assert_volume_matches_events(conn);
            let err = insert_orphan_schema(conn);
            assert!(format!("{err:?}").contains("FOREIGN KEY"), "{err:?}");
            Ok(())
        })
        .unwrap();
}

/// A database created before the dedup key gained `time_ms` keeps its old key, and the insert
/// still de-duplicates against it.
#[test]
fn dedup_on_the_older_table_shape() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,
             created_at INTEGER NOT NULL DEFAULT (unixepoch()));
         CREATE TABLE events (
             project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
             dedup BLOB NOT NULL, event TEXT NOT NULL, time_ms INTEGER NOT NULL, distinct_id TEXT NOT NULL,
             insert_id TEXT NOT NULL, record TEXT NOT NULL, ingested_at INTEGER NOT NULL,
             PRIMARY KEY (project_id, dedup));
         CREATE INDEX events_by_time ON events (project_id, time_ms);
         CREATE INDEX events_by_name ON events (project_id, event, time_ms);
         INSERT INTO projects (id, name, token_hash) VALUES (2, 'older', 'h2');
         INSERT INTO events VALUES (2, x'00', 'Old', 7200000, 'u', 'i', '{}', 0), (2, x'01', 'Old', 7200001, 'u', 'i', '{}', 0);",
    )
    .unwrap();
    let mut conn = Store::init_writer(conn, Synchronous::Full).unwrap();
    // The events stored before are counted, and the index the volumes replace is gone.
    assert_eq!(event_counts(&conn, 2, 0).unwrap(), [EventCount { event: "Old".into(), count: 2, last_seen_ms: 7_200_001 }]);
    let index: i64 = conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'events_by_name'", [], |r| r.get(0)).unwrap();
    assert_eq!(index, 0);
    check_dedup(&mut conn);
    // Opening it again counts nothing twice.
    let conn = Store::init_writer(conn, Synchronous::Full).unwrap();
    assert_volume_matches_events(&conn);
}

/// An event without `$insert_id` cannot be de-duplicated: every copy is stored, each with a
/// digest of its own, while copies with one still replace each other; a re-key keeps both apart.
#[test]
fn events_without_an_insert_id_are_each_stored() {
    let store = with_project_1(|conn| {
        let rows = [(1_000, "", "a"), (1_000, "", "a"), (1_000, "x-1", "b"), (1_000, "x-1", "c")];
        insert_events(conn, 1, &batch(&rows), 0).unwrap();
        insert_events(conn, 1, &batch(&rows[..1]), 0).unwrap();
        let want = vec![(1_000, "a".to_owned()), (1_000, "a".to_owned()), (1_000, "a".to_owned()), (1_000, "c".to_owned())];
        assert_eq!(stored(conn), want);
        assert_volume_matches_events(conn);
        // Re-keyed as an older database would be: the events without an id stay three.
        conn.pragma_update(None, "user_version", 1).unwrap();
    });
    let conn = store.call_sync(|conn| Ok(std::mem::replace(conn, Connection::open_in_memory()?))).unwrap();
    let conn = Store::init_writer(conn, Synchronous::Full).unwrap();
    assert_eq!(stored(&conn).len(), 4);
}

/// A database written when each quality row held its samples (format 2) has them moved to the
/// tables of samples when opened: every row reads back as it was, and the column goes.
#[test]
fn quality_samples_move_to_their_own_tables_once() {
    use crate::store::quality::{list_violations, Table, ViolationFilter};
    let conn = Store::init_writer(Connection::open_in_memory().unwrap(), Synchronous::Full).unwrap();
    conn.execute_batch(
        "INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h');
         DROP TABLE quality_violations_samples; DROP TABLE quality_rejected_samples; DROP TABLE quality_event_counts_samples;
         ALTER TABLE quality_violations ADD COLUMN samples TEXT NOT NULL DEFAULT '[]';
         ALTER TABLE quality_rejected ADD COLUMN samples TEXT NOT NULL DEFAULT '[]';
         ALTER TABLE quality_event_counts ADD COLUMN samples TEXT NOT NULL DEFAULT '[]';
         INSERT INTO quality_violations VALUES
             (1, '2026-01-01', 'event', 'E', 'x', 'unknown_property', 'm', 7, 1, 2, '[\"string\"]', '[\"s1\",\"s2\"]'),
             (1, '2026-01-01', 'event', 'F', '', 'no_schema', 'm', 1, 1, 1, '[]', '[]');
         INSERT INTO quality_rejected VALUES (1, '2026-01-01', 'track', 'E', '', 'bad', 'm', 1, 1, 1, '[]', '[{\"record\":\"r\"}]');
         PRAGMA user_version = 2;",
    )
    .unwrap();
    let conn = Store::init_writer(conn, Synchronous::Full).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, DATA_FORMAT);
    let all = ViolationFilter::default();
    let read = |table| list_violations(&crate::store::Conn::Sqlite(&conn), table, 1, &all, 10).unwrap();
    let violations: Vec<(String, Vec<serde_json::Value>, i64)> = read(Table::Violations).into_iter().map(|v| (v.row.entity, v.row.samples, v.row.count)).collect();
    assert_eq!(violations, [("E".to_owned(), vec!["s1".into(), "s2".into()], 7), ("F".to_owned(), vec![], 1)]);
    assert_eq!(read(Table::Rejected)[0].row.samples, [serde_json::json!({"record": "r"})]);
    let moved: i64 = conn.query_row("SELECT count(*) FROM quality_violations_samples", [], |r| r.get(0)).unwrap();
    assert_eq!(moved, 1, "an empty list of samples is not copied");
    let column: i64 = conn.query_row("SELECT count(*) FROM pragma_table_info('quality_violations') WHERE name = 'samples'", [], |r| r.get(0)).unwrap();
    assert_eq!(column, 0);
    // Opened again, there is nothing left to move.
    let conn = Store::init_writer(conn, Synchronous::Full).unwrap();
    assert!(!super::quality::move_samples_apart(&conn).unwrap());
}
