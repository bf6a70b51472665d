//! Tests of the event writer's pipelined commits: the syncer answers a group only after its
//! fsync, the open group takes the jobs that arrive meanwhile and loses none, and the writer's
//! threads end with the store.

use super::batch;
use crate::store::event_writer::{spawn_syncer, Gather, InsertJob, JobParts, ReadyParts, ToWriter, WritesRefused};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

/// A ready job of one row, and the receiver of its answer.
fn job(id: &str) -> (InsertJob, tokio::sync::oneshot::Receiver<anyhow::Result<usize>>) {
    let (done, answer) = tokio::sync::oneshot::channel();
    let parts = ReadyParts { batches: vec![batch(&[(1_000, id, "r")])], quality: None };
    (InsertJob { project_id: 1, parts: JobParts::Ready(Some(parts)), now_s: 0, done }, answer)
}

#[test]
fn the_syncer_answers_a_group_only_after_its_sync_then_wakes_the_writer() {
    let (release, released): (Sender<anyhow::Result<()>>, Receiver<_>) = channel();
    let (wake, woken) = channel();
    let in_flight = Arc::new(AtomicUsize::new(2));
    let syncer = spawn_syncer(move || released.recv().unwrap(), in_flight.clone(), wake).unwrap();
    let ((first, mut first_answer), (second, mut second_answer)) = (job("a"), job("b"));
    syncer.send(vec![(first.done, Ok(1)), (second.done, Ok(3))]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(first_answer.try_recv().is_err(), "answered before the sync");
    assert!(woken.try_recv().is_err(), "the writer woken before the sync");
    release.send(Ok(())).unwrap();
    assert!(matches!(woken.recv_timeout(Duration::from_secs(5)), Ok(ToWriter::Synced)));
    assert_eq!(first_answer.try_recv().unwrap().unwrap(), 1);
    assert_eq!(second_answer.try_recv().unwrap().unwrap(), 3);
    assert_eq!(in_flight.load(Ordering::Relaxed), 0);
    // A failed sync answers each job with it: its rows may be stored, but not durably.
    let (third, mut third_answer) = job("c");
    in_flight.fetch_add(1, Ordering::Relaxed);
    syncer.send(vec![(third.done, Ok(1))]).unwrap();
    release.send(Err(anyhow::anyhow!("disk gone"))).unwrap();
    assert!(matches!(woken.recv_timeout(Duration::from_secs(5)), Ok(ToWriter::Synced)));
    let e = third_answer.try_recv().unwrap().unwrap_err().to_string();
    assert!(e.contains("may not be on disk") && e.contains("disk gone"), "{e}");
}

#[test]
fn while_syncing_the_open_group_takes_what_arrives_and_keeps_what_does_not_fit() {
    let (tx, rx) = channel();
    let mut gather = Gather::default();
    gather.syncing = true;
    let mut group = vec![job("open").0];
    for id in ["a", "b"] {
        tx.send(ToWriter::Job(job(id).0)).unwrap();
    }
    // Both arrive while the syncer works: the group takes them and waits for more.
    while let Some(job) = gather.more(&rx, &group) {
        group.push(job);
    }
    assert_eq!(group.len(), 3);
    let sender = tx.clone();
    let late = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        sender.send(ToWriter::Job(job("late").0)).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        sender.send(ToWriter::Synced).unwrap();
    });
    // Waits: the late job joins the open group; the sync's end closes it.
    let next = gather.while_syncing(&rx, &group);
    assert!(next.is_some(), "the job that arrived while syncing was not taken");
    group.push(next.unwrap());
    assert!(gather.while_syncing(&rx, &group).is_none());
    assert!(!gather.syncing);
    late.join().unwrap();
    // A full group leaves what arrives for the next one, in order.
    let full: Vec<InsertJob> = (0..64).map(|i| job(&format!("f{i}")).0).collect();
    gather.syncing = true;
    for id in ["n1", "n2"] {
        tx.send(ToWriter::Job(job(id).0)).unwrap();
    }
    tx.send(ToWriter::Synced).unwrap();
    assert!(gather.while_syncing(&rx, &full).is_none());
    assert!(!gather.syncing);
    let ids: Vec<_> = [gather.first(&rx).unwrap(), gather.first(&rx).unwrap()].iter().map(first_insert_id).collect();
    assert_eq!(ids, ["n1", "n2"]);
}

/// The `$insert_id` of a test job's row.
fn first_insert_id(job: &InsertJob) -> String {
    match &job.parts {
        JobParts::Ready(Some(parts)) => parts.batches[0].row(&parts.batches[0].rows[0]).insert_id.to_owned(),
        _ => panic!("not a ready job"),
    }
}

/// Concurrent requests on a durable store are all answered with what was stored; the writer, its
/// syncer and the checkpointer end with the store, whose last connection then closes (SQLite
/// removes the WAL file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_store_answers_every_request_and_its_writer_ends_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("datadict.sqlite3");
    let store = crate::store::Store::open(&path).unwrap();
    let pending: Vec<_> = (0..40)
        .map(|i| {
            let mut sink = store.ready_event_sink(1, 0);
            sink.send(batch(&[(1_000 + i, &format!("id{i}"), "r")])).unwrap();
            sink.close()
        })
        .collect();
    for pending in pending {
        assert_eq!(pending.wait().await.unwrap(), 1);
    }
    let stored: i64 = rusqlite::Connection::open(&path).unwrap().query_row("SELECT count(*) FROM events", [], |r| r.get(0)).unwrap();
    assert_eq!(stored, 40);
    drop(store);
    let wal = dir.path().join("datadict.sqlite3-wal");
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        !wal.exists()
    });
    assert!(gone, "the WAL file is still there: a connection of the store is still open");
}

/// The event writer leaves the writer connection's commits without their fsync between its
/// groups; every other write on it, async or not, makes them fsync again first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_writes_after_the_event_writer_fsync_their_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::Store::open(&dir.path().join("datadict.sqlite3")).unwrap();
    let level = |conn: &mut crate::store::Conn<'_>| -> anyhow::Result<i64> {
        match conn {
            crate::store::Conn::Sqlite(conn) => Ok(conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?),
            crate::store::Conn::Postgres(_) => unreachable!("a SQLite store"),
        }
    };
    for round in 0..2 {
        let mut sink = store.ready_event_sink(1, 0);
        sink.send(batch(&[(1_000 + round, &format!("id{round}"), "r")])).unwrap();
        assert_eq!(sink.close().wait().await.unwrap(), 1);
        // 2 is FULL.
        match round {
            0 => assert_eq!(store.call(level).await.unwrap(), 2, "after the event writer, async"),
            _ => assert_eq!(store.call_sync(level).unwrap(), 2, "after the event writer, on this thread"),
        }
    }
}

/// Whether `e` is, or wraps, a [`WritesRefused`].
fn refused(e: &anyhow::Error) -> bool {
    WritesRefused::in_chain(e).is_some()
}

/// A failed fsync of the WAL (here of `/dev/null`, which cannot be fsynced: the stand-in for a
/// disk that failed) refuses its group's requests, and then every write of the store, each
/// with a [`WritesRefused`] that says why; reads go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failed_fsync_the_store_refuses_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = super::super::Sqlite::open_with(&dir.path().join("datadict.sqlite3"), super::super::Synchronous::Full).unwrap();
    db.wal = Some(Arc::new(super::super::WalFile::new("/dev/null".into())));
    let store = crate::store::Store::from_sqlite(db).unwrap();
    for round in 0..2 {
        let mut sink = store.ready_event_sink(1, 0);
        sink.send(batch(&[(1_000 + round, &format!("id{round}"), "r")])).unwrap();
        let e = sink.close().wait().await.unwrap_err();
        assert!(refused(&e), "round {round}: {e:#}");
        assert!(format!("{e:#}").contains("fsync of /dev/null"), "round {round}: {e:#}");
    }
    let count = |conn: &crate::store::Conn<'_>| -> anyhow::Result<i64> {
        match conn {
            crate::store::Conn::Sqlite(conn) => Ok(conn.query_row("SELECT count(*) FROM events", [], |r| r.get(0))?),
            crate::store::Conn::Postgres(_) => unreachable!("a SQLite store"),
        }
    };
    // The first group was committed before its fsync failed; the second was not written.
    assert_eq!(store.read(count).await.unwrap(), 1);
    let e = store.call(|_| Ok(())).await.unwrap_err();
    assert!(refused(&e), "{e:#}");
    let e = store.call_sync(|_| Ok(())).unwrap_err();
    assert!(refused(&e), "{e:#}");
    let api = crate::ApiError::from(e);
    assert_eq!(api.status_code(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
    assert!(api.to_string().contains("restarted"), "{api}");
}
