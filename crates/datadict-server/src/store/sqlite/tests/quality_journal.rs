//! The data-quality journal (`sqlite::quality_journal`): folds, recovery, samples and shapes.

use super::super::{Sqlite, Synchronous};
use crate::store::quality::{list_violations, record_quality, QualityRows, ShapeCount, ShapeRows, StoredViolation, Table, ViolationFilter, ViolationRow};
use crate::store::Conn;
use rusqlite::TransactionBehavior;
use serde_json::Value;
use std::sync::Arc;

fn row(entity: &str, property: &str, count: i64, at: i64, types: &[&str], samples: &[&str]) -> ViolationRow {
    ViolationRow {
        kind: "event".into(),
        entity: entity.into(),
        property: property.into(),
        code: "unknown_property".into(),
        message: format!("{entity}.{property} at {at}"),
        count,
        first_seen_ms: at,
        last_seen_ms: at,
        types: types.iter().map(|t| t.to_string()).collect(),
        samples: samples.iter().map(|s| Value::from(*s)).collect(),
    }
}

fn request(day: &str, violations: Vec<ViolationRow>, counts: Vec<ViolationRow>) -> (i64, QualityRows) {
    (1, QualityRows { day: day.into(), max_keys: 100, max_samples: 3, violations, counts, ..QualityRows::default() })
}

/// Groups of requests: one key in every group (more findings than samples kept, new types
/// late, each group's samples and times), keys of one group only, two days, and counts.
fn groups() -> Vec<Vec<(i64, QualityRows)>> {
    (0..4i64)
        .map(|g| {
            let at = 1_000 * (g + 1);
            let mut group = vec![
                request("2026-01-01", vec![row("Buy", "coupon", 2, at, &["string"], &[&format!("g{g}a"), &format!("g{g}b")])], Vec::new()),
                request(
                    "2026-01-01",
                    vec![row("Buy", "coupon", 1, at + 1, if g == 3 { &["number"] } else { &["string"] }, &[&format!("g{g}c")])],
                    vec![ViolationRow { kind: "good".into(), code: String::new(), property: String::new(), ..row("Buy", "", 3, at, &[], &[]) }],
                ),
            ];
            group.push(request("2026-01-02", vec![row(&format!("Only {g}"), "p", 1, at, &[], &[&format!("only {g}")])], Vec::new()));
            group
        })
        .collect()
}

fn stored(db: &Sqlite) -> Vec<Vec<StoredViolation>> {
    let all = ViolationFilter::default();
    (Table::ALL.iter())
        .map(|&t| db.call_sync(|conn| list_violations(&Conn::Sqlite(conn), t, 1, &all, 1_000)).unwrap())
        .collect()
}

fn with_project(db: &Sqlite) {
    db.call_sync(|conn| Ok(conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", [])?)).unwrap();
}

/// A store in a file of a new folder, with project 1; the folder (kept while it lives) and the
/// file, to open it again.
fn on_disk() -> (tempfile::TempDir, std::path::PathBuf, Sqlite) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("q.sqlite3");
    let db = Sqlite::open_with(&file, Synchronous::Full).unwrap();
    with_project(&db);
    (dir, file, db)
}

/// Appends `group` as the event writer does, in a transaction of its own.
fn append(db: &Sqlite, group: Vec<(i64, QualityRows)>) {
    let journal = db.journal.clone();
    db.call_sync(move |conn| {
        let mut journal = journal.lock().unwrap();
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Deferred)?;
        journal.append(&tx, group)?;
        tx.commit()?;
        journal.committed();
        Ok(())
    })
    .unwrap();
}

fn fold_now(db: &Sqlite) {
    let journal = db.journal.clone();
    db.call_sync(move |conn| journal.lock().unwrap().fold(conn)).unwrap();
}

/// Journaled groups, folded twice along the way, leave the quality tables as writing each
/// group into them directly does: counts, times, types, the first message, and the first
/// samples in order, up to the cap.
#[test]
fn folded_groups_store_what_direct_writes_store() {
    let direct = Sqlite::open_in_memory().unwrap();
    with_project(&direct);
    for group in groups() {
        direct
            .call_sync(|conn| {
                let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Deferred)?;
                record_quality(&Conn::Sqlite(&tx), group)?;
                Ok(tx.commit()?)
            })
            .unwrap();
    }
    let journaled = Sqlite::open_in_memory().unwrap();
    with_project(&journaled);
    for (i, group) in groups().into_iter().enumerate() {
        append(&journaled, group);
        if i == 1 {
            fold_now(&journaled);
        }
    }
    let pending: i64 = journaled.call_sync(|c| Ok(c.query_row("SELECT count(*) FROM quality_journal", [], |r| r.get(0))?)).unwrap();
    assert_eq!(pending, 2, "the groups since the first fold wait in the journal");
    fold_now(&journaled);
    let expected = stored(&direct);
    assert_eq!(expected[0].len(), 5, "{expected:?}");
    assert_eq!(expected[0][0].row.samples, ["g0a", "g0b", "g0c"].map(Value::from), "{expected:?}");
    assert_eq!(expected[0][0].row.types, ["number", "string"], "{expected:?}");
    assert_eq!(stored(&journaled), expected);
    let left: i64 = journaled.call_sync(|c| Ok(c.query_row("SELECT count(*) FROM quality_journal", [], |r| r.get(0))?)).unwrap();
    assert_eq!(left, 0);
}

/// Rows journaled by a process that stopped before folding them are in the tables once the
/// database is opened again.
#[test]
fn a_reopened_store_folds_what_was_journaled() {
    let (_dir, file, db) = on_disk();
    for group in groups() {
        append(&db, group);
    }
    drop(db);
    let reopened = Sqlite::open_with(&file, Synchronous::Full).unwrap();
    let rows = stored(&reopened);
    assert_eq!(rows[0].iter().map(|v| v.row.count).sum::<i64>(), 16, "{rows:?}");
    assert_eq!(rows[2].iter().map(|v| v.row.count).sum::<i64>(), 12, "{rows:?}");
}

/// Deletes project 1's quality rows as the reset route does (`Store::reset_quality`).
fn reset(db: &Sqlite) {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let delete = |c: &rusqlite::Connection| crate::store::quality::delete_violations(&Conn::Sqlite(c), Table::Violations, 1);
    rt.block_on(db.reset_quality(delete)).unwrap();
}

/// A reset deletes the findings still in the journal with those already folded (both in one
/// hold of the writer), and samples left out of the journal once a key had its share come back.
#[test]
fn a_reset_deletes_the_journal_and_samples_come_back() {
    let db = Sqlite::open_in_memory().unwrap();
    with_project(&db);
    let one = |sample: &str| vec![request("2026-01-01", vec![row("Buy", "coupon", 1, 1, &[], &[sample])], Vec::new())];
    for s in ["a", "b", "c"] {
        append(&db, one(s));
    }
    fold_now(&db);
    append(&db, one("d"));
    let staged: String = db.call_sync(|c| Ok(c.query_row("SELECT requests FROM quality_journal ORDER BY id DESC", [], |r| r.get(0))?)).unwrap();
    assert!(!staged.contains("\"d\""), "a key with its samples counted is journaled without more: {staged}");
    assert_eq!(stored(&db)[0][0].row.count, 3, "d is still in the journal");
    reset(&db);
    assert!(stored(&db)[0].is_empty(), "nothing left after the reset");
    let journaled: i64 = db.call_sync(|c| Ok(c.query_row("SELECT count(*) FROM quality_journal", [], |r| r.get(0))?)).unwrap();
    assert_eq!(journaled, 0, "the journal was folded before the deletes");
    append(&db, one("e"));
    fold_now(&db);
    let rows = stored(&db);
    assert_eq!((rows[0][0].row.count, rows[0][0].row.samples.clone()), (1, vec![Value::from("e")]));
}

/// A shape of `Buy` events with two keys (one found twice per event), without samples.
fn shape() -> Arc<ShapeRows> {
    Arc::new(ShapeRows::new(Some("Buy".into()), shape_rows()))
}

fn shape_rows() -> Vec<ViolationRow> {
    let coupon = row("Buy", "coupon", 1, 0, &["string"], &["dropped"]);
    let price = ViolationRow { code: "type_mismatch".into(), ..row("Buy", "price", 2, 0, &["string"], &[]) };
    vec![coupon, price]
}

/// The count of valid `Buy` events stored.
fn good_buys(rows: &[Vec<StoredViolation>]) -> i64 {
    rows[Table::EventCounts as usize].iter().filter(|v| (v.row.kind.as_str(), v.row.entity.as_str()) == ("good", "Buy")).map(|v| v.row.count).sum()
}

/// Counted shapes, beside plain rows of the same keys, are journaled, recovered by a reopened
/// store and folded as the rows they stand for (`QualityRows::expand_shapes`).
#[test]
fn counted_shapes_store_the_rows_they_stand_for() {
    let shape = shape();
    let counted = |count, at| ShapeCount { shape: shape.clone(), count, first_seen_ms: at, last_seen_ms: at };
    let groups = || {
        (0..3i64).map(|g| {
            let at = 1_000 * (g + 1);
            let plain = request("2026-01-01", vec![row("Buy", "coupon", 1, at + 1, &["number"], &[&format!("g{g}")])], Vec::new());
            let mut shaped = request("2026-01-01", Vec::new(), Vec::new());
            shaped.1.shapes = vec![counted(g + 2, at), counted(1, at + 2)];
            // Plain rows first: a shape is only counted once its keys have rows (its samples).
            vec![plain, shaped]
        })
    };
    let direct = Sqlite::open_in_memory().unwrap();
    with_project(&direct);
    for group in groups() {
        direct.call_sync(|conn| record_quality(&Conn::Sqlite(conn), group)).unwrap();
    }
    let expected = stored(&direct);
    let coupon = &expected[0].iter().find(|v| v.row.property == "coupon").unwrap().row;
    assert_eq!((coupon.count, coupon.types.clone()), (2 + 1 + 3 + 1 + 4 + 1 + 3, vec!["number".to_owned(), "string".to_owned()]));
    let price = &expected[0].iter().find(|v| v.row.property == "price").unwrap().row;
    assert_eq!((price.count, price.first_seen_ms, price.last_seen_ms), (2 * (2 + 1 + 3 + 1 + 4 + 1), 1_000, 3_002));
    assert_eq!(good_buys(&expected), 2 + 1 + 3 + 1 + 4 + 1, "each event of the shape counts as a valid Buy");
    let (_dir, file, db) = on_disk();
    for (i, group) in groups().enumerate() {
        append(&db, group);
        if i == 0 {
            fold_now(&db);
        }
    }
    let texts: Vec<String> = db.call_sync(|c| Ok(c.prepare("SELECT requests FROM quality_journal ORDER BY id")?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?)).unwrap();
    assert!(texts[0].contains("Buy.price at 0"), "the first row since the fold gives the shape's rows: {}", texts[0]);
    assert!(!texts[1].contains("Buy.price"), "later rows count it by id: {}", texts[1]);
    drop(db);
    assert_eq!(stored(&Sqlite::open_with(&file, Synchronous::Full).unwrap()), expected);
}

/// A shape collecting samples is marked sampled, under the tag it was checked with, once every
/// key of it has its samples counted, and no longer after a reset.
#[test]
fn a_shape_is_sampled_once_its_keys_have_their_samples() {
    let db = Sqlite::open_in_memory().unwrap();
    with_project(&db);
    let shape = shape();
    let now = 1_767_225_600_000;
    let tag = db.sample_tag(now);
    let one = |prices: i64| {
        let coupon = row("Buy", "coupon", 1, 1, &["string"], &["s"]);
        let price = ViolationRow { code: "type_mismatch".into(), ..row("Buy", "price", prices, 1, &["string"], &["s"]) };
        let mut r = request("2026-01-01", vec![coupon, price], Vec::new());
        r.1.sampling = vec![(shape.clone(), tag)];
        vec![r]
    };
    append(&db, one(2));
    append(&db, one(2));
    assert!(!shape.is_sampled(tag), "the coupon has 2 of 3 samples");
    append(&db, one(2));
    assert!(shape.is_sampled(tag));
    assert!(!shape.is_sampled(db.sample_tag(now + 86_400_000)), "another day has no samples yet");
    reset(&db);
    assert!(!shape.is_sampled(db.sample_tag(now)), "a reset forgets the samples");
}

/// A group rolled back gives no shape an id: the next group that counts the shape gives its rows
/// again, so that a reopened store can read them.
#[test]
fn a_group_rolled_back_defines_no_shape() {
    let (_dir, file, db) = on_disk();
    let shape = shape();
    let group = || {
        let mut r = request("2026-01-01", Vec::new(), Vec::new());
        r.1.shapes = vec![ShapeCount { shape: shape.clone(), count: 1, first_seen_ms: 5, last_seen_ms: 5 }];
        vec![r]
    };
    let journal = db.journal.clone();
    let rolled_back = group();
    db.call_sync(move |conn| {
        let mut journal = journal.lock().unwrap();
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Deferred)?;
        journal.append(&tx, rolled_back)?;
        drop(tx);
        journal.forget();
        Ok(())
    })
    .unwrap();
    append(&db, group());
    drop(db);
    let rows = stored(&Sqlite::open_with(&file, Synchronous::Full).unwrap());
    let price = rows[0].iter().find(|v| v.row.property == "price").unwrap();
    assert_eq!(price.row.count, 2);
}

/// A journal row written before shapes carried their event name (`shape_defs`, by a server
/// before this one) is recovered with its requests' own counts of valid events, which its
/// shapes' counts do not add to again.
#[test]
fn a_journal_row_of_unnamed_shapes_is_recovered_as_it_was_written() {
    let (_dir, file, db) = on_disk();
    let good = ViolationRow::event_count("good", "Buy".into(), 5, 7, 7);
    let rows = QualityRows { day: "2026-01-01".into(), max_keys: 100, max_samples: 3, counts: vec![good], ..QualityRows::default() };
    let mut entry = serde_json::to_value(&rows).unwrap();
    entry["shape_defs"] = serde_json::json!([[4, shape_rows()]]);
    entry["shape_counts"] = serde_json::json!([[4, 5, 7, 7]]);
    let text = serde_json::json!([[1, entry]]).to_string();
    db.call_sync(move |c| Ok(c.execute("INSERT INTO quality_journal (requests) VALUES (?1)", [text])?)).unwrap();
    drop(db);
    let stored = stored(&Sqlite::open_with(&file, Synchronous::Full).unwrap());
    assert_eq!(good_buys(&stored), 5);
    let price = stored[0].iter().find(|v| v.row.property == "price").unwrap();
    assert_eq!(price.row.count, 10);
}
