//! Storage outages over real HTTP: a full disk answers 507 and an unreachable PostgreSQL 503,
//! both with `Retry-After` and a message that says what is wrong (no database internals), and
//! nothing acknowledged is lost; the server recovers once the storage does.

use crate::common::{now_ms, Server};
use serde_json::{json, Value};

fn import(server: &Server, token: &str, round: usize, size: usize) -> crate::common::Reply {
    let events: Vec<Value> = (0..size)
        .map(|j| json!({"event": "Fill", "properties": {"time": now_ms(), "distinct_id": "u", "$insert_id": format!("r{round}-{j}"), "pad": "x".repeat(200)}}))
        .collect();
    server.client().send("POST", "/import?strict=1", Some((token, "")), &[("Content-Type", "application/json")], Some(serde_json::to_vec(&events).unwrap())).unwrap()
}

fn stored(server: &Server, project_id: i64) -> usize {
    let n: i64 = server
        .store
        .call_sync(move |conn| Ok(conn.sqlite("a test")?.query_row("SELECT count(*) FROM events WHERE project_id = ?1", [project_id], |r| r.get(0))?))
        .unwrap();
    n as usize
}

/// SQLite's `SQLITE_FULL` (a database that reached its page limit stands for a full disk): 507
/// with `Retry-After`, what was answered 200 is stored, and imports work again once there is room.
#[test]
fn a_full_disk_answers_507_and_keeps_what_it_acknowledged() {
    let server = Server::start();
    let project = server.project("p");
    let pages: i64 = server.store.call_sync(|conn| Ok(conn.sqlite("a test")?.query_row("PRAGMA page_count", [], |r| r.get(0))?)).unwrap();
    server.store.call_sync(move |conn| Ok(conn.sqlite("a test")?.pragma_update(None, "max_page_count", pages + 40)?)).unwrap();
    let (mut acked, mut full) = (0, None);
    for round in 0..200 {
        let r = import(&server, &project.token, round, 200);
        match r.status {
            200 => acked += 200,
            _ => {
                full = Some(r);
                break;
            }
        }
    }
    let full = full.expect("the database never filled up");
    assert_eq!(full.status, 507, "{}", full.text);
    assert_eq!(full.header("retry-after"), Some("30"));
    assert!(full.text.contains("the server's storage is full") && full.text.contains("nothing of this request was stored"), "{}", full.text);
    assert!(!full.text.contains("internal error") && !full.text.to_lowercase().contains("sqlite"), "{}", full.text);
    server.store.call_sync(|conn| Ok(conn.sqlite("a test")?.pragma_update(None, "max_page_count", 1_000_000_000)?)).unwrap();
    let r = import(&server, &project.token, 1000, 200);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(stored(&server, project.id), acked + 200);
}

/// A PostgreSQL that ended the server's connections (as a restart does) answers 503 with
/// `Retry-After` and says the database cannot be reached, never an opaque 500; the next requests
/// connect again and work.
#[test]
fn an_unreachable_postgresql_answers_503_then_recovers() {
    let url = crate::common::postgres::fresh_database();
    let store = datadict_server::Store::open_postgres(&url).unwrap();
    let server = Server::serve(store, tempfile::tempdir().unwrap(), datadict_server::Config::default());
    let project = server.project("p");
    let r = import(&server, &project.token, 0, 10);
    assert_eq!(r.status, 200, "{}", r.text);
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin.batch_execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").unwrap();
    let mut refused = 0;
    for round in 1..=20 {
        let r = import(&server, &project.token, round, 10);
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 503, "{}", r.text);
        assert_eq!(r.header("retry-after"), Some("30"));
        assert!(r.text.contains("the server cannot reach its database"), "{}", r.text);
        refused += 1;
    }
    assert!(refused > 0, "no request met the ended connections");
    assert_eq!(import(&server, &project.token, 100, 10).status, 200);
}
