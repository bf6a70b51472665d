//! Warehouse sources over HTTP: what a source may name (`password_env`, paths), how a source that
//! changed or cannot be read is reported, and how its values and times are read.

use crate::common::{now_ms, on_both_stores, Account, Backend, Server};
use crate::warehouse::{events, imports, put, wait_run};
use datadict_server::jobs::JobsConfig;
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::{json, Value};

/// Creates an import of `source` with `mapping` (an `event_sync` with event name `E` when the
/// mapping is null), asserting 201; its id.
fn create(server: &Server, p: i64, owner: &Account, source: Value, mapping: Value) -> i64 {
    let mapping = if mapping.is_null() {
        json!({"event_name": "E", "time_column_name": "ts", "user_column_name": "uid", "key_column_names": ["id"]})
    } else {
        mapping
    };
    let r = server.post_json(&imports(p), owner, &json!({"name": "n", "kind": "event_sync", "source": source, "mapping": mapping}));
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()["results"]["id"].as_i64().unwrap()
}

/// Syncs import `id` and waits for the run's end; the run.
fn sync(server: &Server, p: i64, owner: &Account, id: i64) -> Value {
    let r = put(server, &format!("{}/{id}/manual-sync", imports(p)), Some(owner), "{}");
    assert_eq!(r.status, 200, "{}", r.text);
    wait_run(server, p, id, r.json()["results"]["run_id"].as_str().unwrap(), owner)
}

fn ndjson(server: &Server, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = server.dir.path().join(name);
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    path
}

/// A PostgreSQL source's `password_env` may only name a variable starting with
/// `DATADICT_WAREHOUSE_`: any other name (`PATH`, which exists, and one that does not) gets the
/// same 400 saying so, before the variable is looked up or any host is contacted.
fn password_env_names_only_warehouse_variables(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    // A listener standing for the host a password would be sent to: it must hear nothing. A
    // connection made is counted and dropped at once, so that a server without the rule fails fast.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = heard.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    let heard = || heard.load(std::sync::atomic::Ordering::SeqCst);
    let mapping = json!({"event_name": "E", "time_column_name": "ts", "user_column_name": "uid", "key_column_names": ["id"]});
    let mut answers = Vec::new();
    for var in ["PATH", "NO_SUCH_VARIABLE_ANYWHERE", "DATADICT_WAREHOUSE_FILE_ROOT", "DATADICT_WAREHOUSE_"] {
        let source = json!({"type": "postgres", "host": "127.0.0.1", "port": port, "user": "x", "dbname": "y", "table": "t", "password_env": var});
        let r = server.post_json(&imports(p), &owner, &json!({"name": "n", "kind": "event_sync", "source": source, "mapping": mapping}));
        assert_eq!(r.status, 400, "{var}: {}", r.text);
        let msg = r.json()["error"].as_str().unwrap().to_owned();
        assert!(msg.contains("starts with `DATADICT_WAREHOUSE_`"), "{var}: {msg}");
        assert!(!msg.contains("no environment variable"), "{var}: {msg}");
        answers.push(msg);
        assert_eq!(heard(), 0, "{var}: the server connected to the source host");
    }
    assert_eq!(answers[0], answers[1], "the answer must not tell whether a variable exists");
    // An allowed name that is not set is named as missing.
    let source = json!({"type": "postgres", "host": "127.0.0.1", "port": port, "user": "x", "dbname": "y", "table": "t", "password_env": "DATADICT_WAREHOUSE_NOT_SET_PW"});
    let r = server.post_json(&imports(p), &owner, &json!({"name": "n", "kind": "event_sync", "source": source, "mapping": mapping}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("no environment variable `DATADICT_WAREHOUSE_NOT_SET_PW`"), "{}", r.text);
    assert_eq!(heard(), 0);
}

/// Rows refused before loading (a time that is not one, an empty key, a line that is not JSON) are
/// kept in the rejected store as route `job` with the loader's own refusals, and counted as bad
/// events in the quality summary; the run lists every rejection in row order.
fn rows_refused_before_loading_are_in_the_rejected_store(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let now = now_ms();
    let file = ndjson(&server, "e.ndjson", &[
        json!({"id": 1, "ts": now, "uid": "u"}).to_string(),
        json!({"id": 2, "ts": "bad", "uid": "u"}).to_string(),
        json!({"id": 3, "ts": now + 86_400_000 * 400, "uid": "u"}).to_string(),
        json!({"ts": now, "uid": "u"}).to_string(),
        "not json".to_owned(),
    ]);
    let id = create(&server, p, &owner, json!({"type": "ndjson", "path": file.to_str().unwrap()}), Value::Null);
    let run = sync(&server, p, &owner, id);
    assert_eq!((run["events_loaded"].as_u64(), run["rows_rejected"].as_u64()), (Some(1), Some(4)), "{run}");
    let rows: Vec<u64> = run["rejections"].as_array().unwrap().iter().map(|r| r["row"].as_u64().unwrap()).collect();
    assert_eq!(rows, [2, 3, 4, 5], "{run}");
    let r = server.get(&format!("/api/app/projects/{p}/rejected?limit=1000"), &owner);
    assert_eq!(r.status, 200, "{}", r.text);
    let stored = r.json()["results"].as_array().unwrap().clone();
    assert!(stored.iter().all(|r| r["route"] == "job" && r["event"] == "E"), "{stored:#?}");
    let total: i64 = stored.iter().map(|r| r["count"].as_i64().unwrap()).sum();
    assert_eq!(total, 4, "{stored:#?}");
    let codes: Vec<&str> = stored.iter().map(|r| r["code"].as_str().unwrap()).collect();
    for code in ["invalid_time", "missing_field", "unreadable_row"] {
        assert!(codes.contains(&code), "{code} not in {codes:?}");
    }
    let bad_time = stored.iter().find(|r| r["code"] == "invalid_time").unwrap();
    assert!(bad_time["samples"][0]["record"].as_str().unwrap().contains("\"bad\""), "{bad_time}");
    let summary = server.get(&format!("/api/app/projects/{p}/quality/summary"), &owner).json();
    assert_eq!(summary["results"]["rejected"]["total"], 4, "{summary}");
    assert_eq!(summary["results"]["events"]["bad"]["E"], 4, "{summary}");
}

/// A missing file is said to be missing (where it was looked for), not "outside the folder"; a
/// path that is not a regular file (a folder, a named pipe) is refused instead of blocking the
/// run; a relative path is read in the warehouse file folder, not the working directory.
fn source_paths_are_checked_and_read_in_the_file_folder(backend: Backend) {
    let root = tempfile::tempdir().unwrap();
    let config = Config { jobs: JobsConfig { warehouse_file_root: Some(root.path().to_owned()), ..JobsConfig::default() }, ..Config::default() };
    let server = Server::start_with_on(backend, config);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let body = |path: &str| json!({"name": "n", "kind": "people", "source": {"type": "ndjson", "path": path}, "mapping": {"user_column_name": "u"}});
    std::fs::create_dir(root.path().join("sub")).unwrap();
    std::fs::write(root.path().join("sub/people.ndjson"), "{\"u\":\"a\"}\n").unwrap();
    // Relative to the folder.
    let r = server.post_json(&imports(p), &owner, &body("sub/people.ndjson"));
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["results"]["id"].as_i64().unwrap();
    assert_eq!(sync(&server, p, &owner, id)["events_loaded"], 1);
    let r = server.post_json(&imports(p), &owner, &body("sub/gone.ndjson"));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("does not exist: nothing at `sub/gone.ndjson` in the warehouse file folder"), "{}", r.text);
    let r = server.post_json(&imports(p), &owner, &body("../outside.ndjson"));
    assert!(r.status == 400 && r.text.contains("outside the folder"), "{}", r.text);
    let r = server.post_json(&imports(p), &owner, &body("sub"));
    assert!(r.status == 400 && r.text.contains("is a folder, not a regular file"), "{}", r.text);
    // The file goes after creation: the run says so.
    std::fs::remove_file(root.path().join("sub/people.ndjson")).unwrap();
    let run = sync(&server, p, &owner, id);
    assert_eq!(run["status"], "failed", "{run}");
    assert!(run["error"].as_str().unwrap().contains("does not exist: nothing at `sub/people.ndjson`"), "{run}");
    // A named pipe in its place is refused at once rather than read (which would block the run).
    let fifo = root.path().join("sub/people.ndjson");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let run = sync(&server, p, &owner, id);
    assert_eq!(run["status"], "failed", "{run}");
    assert!(run["error"].as_str().unwrap().contains("a named pipe (FIFO), not a regular file"), "{run}");
}

/// PostgreSQL's own message and code are in the error, not only "(db error)".
fn postgres_errors_say_what_the_database_said(backend: Backend) {
    let pg = crate::common::postgres::Postgres::start();
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let source = json!({"type": "postgres", "host": "127.0.0.1", "port": pg.port, "user": "postgres", "dbname": "postgres", "table": "no_such_table"});
    let r = server.post_json(&imports(p), &owner, &json!({"name": "n", "kind": "event_sync", "source": source,
        "mapping": {"event_name": "E", "time_column_name": "ts", "user_column_name": "uid", "key_column_names": ["id"]}}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("relation \\\"no_such_table\\\" does not exist") && r.text.contains("SQLSTATE 42P01"), "{}", r.text);
}

/// A source that no longer fits its mapping fails the run naming the column; a run that read rows
/// and loaded none is failed, not a success with zero events; a CSV header naming a column twice
/// or not at all is refused at creation and at the sync.
fn a_run_that_loads_nothing_is_not_a_success(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let now = now_ms();
    let csv = server.dir.path().join("e.csv");
    std::fs::write(&csv, format!("id,ts,uid\n1,{now},u\n")).unwrap();
    let id = create(&server, p, &owner, json!({"type": "csv", "path": csv.to_str().unwrap()}), Value::Null);
    std::fs::write(&csv, format!("id,time,uid\n1,{now},u\n")).unwrap();
    let run = sync(&server, p, &owner, id);
    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(error.contains("no column `ts`") && error.contains("its columns are id, time, uid"), "{run}");
    assert_eq!(run["rows_read"], 0, "{run}");
    // Every row rejected.
    std::fs::write(&csv, "id,ts,uid\n1,soon,u\n2,later,u\n").unwrap();
    let run = sync(&server, p, &owner, id);
    assert_eq!(run["status"], "failed", "{run}");
    assert!(run["error"].as_str().unwrap().starts_with("none of the 2 rows read was loaded"), "{run}");
    assert_eq!(run["rows_rejected"], 2, "{run}");
    // Duplicate and empty header names: refused at the sync and at creation.
    std::fs::write(&csv, format!("id,ts,uid,a,a,\n1,{now},u,first,second,x\n")).unwrap();
    let run = sync(&server, p, &owner, id);
    assert_eq!(run["status"], "failed", "{run}");
    assert!(run["error"].as_str().unwrap().contains("column 6 has no name; `a` appears more than once"), "{run}");
    let r = server.post_json(&imports(p), &owner, &json!({"name": "n", "kind": "event_sync", "source": {"type": "csv", "path": csv.to_str().unwrap()},
        "mapping": {"event_name": "E", "time_column_name": "ts", "user_column_name": "uid", "key_column_names": ["id"]}}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("`a` appears more than once"), "{}", r.text);
}

/// Values are never changed or dropped quietly: a SQLite real that is not finite and text that is
/// not UTF-8 reject their row with a reason; an NDJSON first line after a byte order mark is read;
/// CSV rejections are numbered by line, as their messages are; times with offsets are read.
fn values_are_rejected_not_changed(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let now_s = now_ms() / 1000;
    let db = server.dir.path().join("w.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE t (id INTEGER, ts INTEGER, uid TEXT, amount REAL, note TEXT);
         INSERT INTO t VALUES (1, {now_s}, 'u', 1.5, 'ok'), (2, {now_s}, 'u', 1e999, 'ok'), (3, {now_s}, 'u', -1e999, 'ok'),
                              (4, {now_s}, 'u', 2.5, CAST(x'C328' AS TEXT));"
    ))
    .unwrap();
    drop(conn);
    let id = create(&server, p, &owner, json!({"type": "sqlite", "path": db.to_str().unwrap(), "table": "t"}), Value::Null);
    let run = sync(&server, p, &owner, id);
    assert_eq!((run["events_loaded"].as_u64(), run["rows_rejected"].as_u64()), (Some(1), Some(3)), "{run}");
    let reasons: Vec<&str> = run["rejections"].as_array().unwrap().iter().map(|r| r["reason"].as_str().unwrap()).collect();
    assert!(reasons[0].contains("`amount` holds inf") && reasons[1].contains("`amount` holds -inf"), "{reasons:?}");
    assert!(reasons[2].contains("`note` holds text that is not UTF-8"), "{reasons:?}");

    let file = server.dir.path().join("bom.ndjson");
    std::fs::write(&file, format!("\u{feff}{}\r\n{}\r\n", json!({"id": 1, "ts": "2024-05-01T15:45:00+02:00", "uid": "a"}), json!({"id": 2, "ts": now_s, "uid": "b"}))).unwrap();
    let id = create(&server, p, &owner, json!({"type": "ndjson", "path": file.to_str().unwrap()}), json!({"event_name": "Bom", "time_column_name": "ts", "user_column_name": "uid", "key_column_names": ["id"]}));
    let run = sync(&server, p, &owner, id);
    assert_eq!((run["events_loaded"].as_u64(), run["rows_rejected"].as_u64()), (Some(2), Some(0)), "{run}");
    let first = events(&server, p, &owner, "distinct_id=a");
    assert_eq!(first[0]["properties"]["time"], 1_714_571_100_000i64, "{first:?}");

    let csv = server.dir.path().join("lines.csv");
    std::fs::write(&csv, format!("id,ts,uid\n1,{now_s},u\n\"2\nstill 2\",{now_s},u\n3,bad,u\n4\n")).unwrap();
    let id = create(&server, p, &owner, json!({"type": "csv", "path": csv.to_str().unwrap()}), Value::Null);
    let run = sync(&server, p, &owner, id);
    let rejections = run["rejections"].as_array().unwrap();
    assert_eq!(rejections.len(), 2, "{run}");
    assert_eq!(rejections[0]["row"], 5, "{run}");
    assert_eq!(rejections[1]["row"], 6, "{run}");
    assert!(rejections[1]["reason"].as_str().unwrap().contains("on line 6"), "{run}");
}

on_both_stores!(
    password_env_names_only_warehouse_variables,
    postgres_errors_say_what_the_database_said,
    a_run_that_loads_nothing_is_not_a_success,
    values_are_rejected_not_changed,
    rows_refused_before_loading_are_in_the_rejected_store,
    source_paths_are_checked_and_read_in_the_file_folder
);
