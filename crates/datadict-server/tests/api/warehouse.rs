//! Warehouse imports end to end over HTTP: create/list/get/delete with validation and the 401/403/
//! 404 matrix, a SQLite table synced twice (no duplicates, a bad row counted and explained, the
//! events found in the read API by `$source` and `$warehouse_import_id`), NDJSON, CSV and people
//! sources, and the hourly manual-sync limit answered 429 with `Retry-After`.

use crate::common::postgres::Postgres;
use crate::common::{on_both_stores, Account, Backend, Server};
use datadict_server::jobs::JobsConfig;
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub(crate) fn imports(p: i64) -> String {
    format!("/api/app/projects/{p}/warehouse-sources/imports")
}

pub(crate) fn put(server: &Server, path: &str, who: Option<&Account>, body: &str) -> crate::common::Reply {
    let auth = who.map(|a| (a.username.as_str(), a.secret.as_str()));
    server.send("PUT", path, auth, &[("Content-Type", "application/json")], Some(body.as_bytes().to_vec()))
}

/// Polls a run until it ends (succeeded or failed), with a deadline.
pub(crate) fn wait_run(server: &Server, p: i64, import: i64, run_id: &str, who: &Account) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = server.get(&format!("{}/{import}/runs/{run_id}", imports(p)), who);
        assert_eq!(r.status, 200, "{}", r.text);
        let run = r.json()["results"].clone();
        if run["status"] == "succeeded" || run["status"] == "failed" {
            return run;
        }
        assert!(Instant::now() < deadline, "run {run_id} did not end: {run}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every event of the project matching `where`, following the pages.
pub(crate) fn events(server: &Server, p: i64, who: &Account, filter: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let r = server.get(&format!("/api/app/projects/{p}/events?limit=1000&where={}{cursor}", crate::common::urlencode(filter)), who);
        assert_eq!(r.status, 200, "{}", r.text);
        let body = r.json();
        out.extend(body["results"].as_array().unwrap().iter().cloned());
        match body["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return out,
        }
    }
}

fn sqlite_source(dir: &std::path::Path, now_s: i64) -> std::path::PathBuf {
    let path = dir.join("warehouse.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE orders (id INTEGER, kind TEXT, ts INTEGER, user_id TEXT, amount REAL, note TEXT, secret_col TEXT)",
    )
    .unwrap();
    let mut stmt = conn.prepare("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'x')").unwrap();
    for i in 1..=5i64 {
        // Row 3 has a time that is not a time: it is rejected, the others still load.
        let ts: rusqlite::types::Value = if i == 3 { "yesterday-ish".to_owned().into() } else { (now_s - 3600 * i).into() };
        stmt.execute(rusqlite::params![i, if i % 2 == 0 { "Refund" } else { "Purchase" }, ts, format!("user-{i}"), 10.5 * i as f64, "n"]).unwrap();
    }
    path
}

fn sqlite_import_synced_twice_makes_no_duplicates(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let other = server.project("other").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let consumer = server.account("consumer", p, Some(Role::Consumer));
    let stranger = server.account("stranger", other, Some(Role::Owner));
    let now_s = crate::common::now_ms() / 1000;
    let db = sqlite_source(server.dir.path(), now_s);
    let body = json!({
        "name": "orders",
        "kind": "event_sync",
        "source": {"type": "sqlite", "path": db.to_str().unwrap(), "table": "orders"},
        "mapping": {"event_column_name": "kind", "time_column_name": "ts", "user_column_name": "user_id",
                    "key_column_names": ["id"], "property_column_names": ["amount", "note"]}
    });

    // Who may create.
    let r = server.send("POST", &imports(p), None, &[], Some(body.to_string().into_bytes()));
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(r.json()["status"], "error");
    assert_eq!(server.post_json(&imports(p), &consumer, &body).status, 403);
    assert_eq!(server.post_json(&imports(p), &stranger, &body).status, 403);

    // Every problem of a bad body is listed.
    let bad = json!({"kind": "event_sync", "source": {"type": "sqlite", "path": db.to_str().unwrap(), "table": "orders"},
                     "mapping": {"time_column_name": "nope", "user_column_name": "user_id"}});
    let r = server.post_json(&imports(p), &owner, &bad);
    assert_eq!(r.status, 400, "{}", r.text);
    let msg = r.json()["error"].as_str().unwrap().to_owned();
    for needle in ["`name`", "event_name", "no column `nope`", "key_column_names"] {
        assert!(msg.contains(needle), "{needle} not in {msg}");
    }

    let r = server.post_json(&imports(p), &owner, &body);
    assert_eq!(r.status, 201, "{}", r.text);
    let created = r.json()["results"].clone();
    let id = created["id"].as_i64().unwrap();
    // The source's path is never returned in full.
    let folder = server.dir.path().to_str().unwrap().to_owned();
    assert!(!r.text.contains(&folder), "{}", r.text);
    assert_eq!(created["source"]["path"], "…/warehouse.db");

    let r = server.get(&imports(p), &consumer);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"].as_array().unwrap().len(), 1);
    assert!(!r.text.contains(&folder));
    assert_eq!(server.get(&format!("{}/{id}", imports(p)), &consumer).status, 200);
    // An import is found only in its own project.
    let r = server.get(&format!("{}/{id}", imports(other)), &stranger);
    assert_eq!(r.status, 404, "{}", r.text);

    // Manual sync: 401, 403, 404, then 200 with a run id at once.
    let sync = format!("{}/{id}/manual-sync", imports(p));
    assert_eq!(put(&server, &sync, None, "{}").status, 401);
    let r = put(&server, &sync, Some(&consumer), "{}");
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["status"], "error");
    let r = put(&server, &format!("{}/999/manual-sync", imports(p)), Some(&owner), "{}");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["status"], "error");
    assert_eq!(put(&server, &sync, Some(&owner), "{\"x\":1}").status, 400);

    let mut run_ids = Vec::new();
    for round in 1..=2 {
        let r = put(&server, &sync, Some(&owner), "{}");
        assert_eq!(r.status, 200, "{}", r.text);
        let body = r.json();
        assert_eq!(body["status"], "ok");
        let run_id = body["results"]["run_id"].as_str().unwrap().to_owned();
        let run = wait_run(&server, p, id, &run_id, &owner);
        assert_eq!(run["status"], "succeeded", "round {round}: {run}");
        assert_eq!(run["rows_read"], 5, "{run}");
        assert_eq!(run["events_loaded"], 4, "{run}");
        assert_eq!(run["rows_rejected"], 1, "{run}");
        assert_eq!(run["rejections"][0]["row"], 3, "{run}");
        assert!(run["rejections"][0]["reason"].as_str().unwrap().contains("`ts`"), "{run}");
        assert!(run["started_at"].as_i64().unwrap() <= run["finished_at"].as_i64().unwrap());

        let by_source = events(&server, p, &owner, "$source=warehouse-import");
        assert_eq!(by_source.len(), 4, "round {round}: {by_source:#?}");
        let by_import = events(&server, p, &owner, &format!("$warehouse_import_id={id}"));
        assert_eq!(by_import.len(), 4, "round {round}");
        for e in &by_import {
            let props = &e["properties"];
            assert_eq!(props["$import"], true);
            assert_eq!(props["$source"], "warehouse-import");
            // The latest copy wins: every event carries the job that loaded it last.
            assert_eq!(props["$warehouse_import_job_id"], run_id.as_str());
            assert!(props.get("secret_col").is_none(), "only the mapped property columns: {e}");
            assert!(props["amount"].is_number());
        }
        assert_eq!(events(&server, p, &owner, "$source=warehouse-import").iter().filter(|e| e["event"] == "Refund").count(), 2);
        run_ids.push(run_id);
    }
    // The history, newest first, and the list shows the last run.
    let r = server.get(&format!("{}/{id}/runs", imports(p)), &consumer);
    let runs = r.json()["results"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["run_id"], run_ids[1].as_str());
    let r = server.get(&imports(p), &owner);
    assert_eq!(r.json()["results"][0]["last_run"]["run_id"], run_ids[1].as_str());

    // Delete: consumer may not; then it is gone.
    assert_eq!(server.delete(&format!("{}/{id}", imports(p)), &consumer).status, 403);
    assert_eq!(server.delete(&format!("{}/{id}", imports(p)), &owner).status, 200);
    assert_eq!(server.get(&format!("{}/{id}", imports(p)), &owner).status, 404);
    assert_eq!(put(&server, &sync, Some(&owner), "{}").status, 404);
}

fn manual_syncs_are_limited_per_hour(backend: Backend) {
    let config = Config { jobs: JobsConfig { manual_syncs_per_hour: 2, ..JobsConfig::default() }, ..Config::default() };
    let server = Server::start_with_on(backend, config);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let file = server.dir.path().join("e.ndjson");
    std::fs::write(&file, format!("{{\"e\":\"A\",\"t\":{},\"u\":\"u1\",\"id\":\"a-1\"}}\n", crate::common::now_ms())).unwrap();
    let body = json!({"name": "n", "kind": "event_sync", "source": {"type": "ndjson", "path": file.to_str().unwrap()},
                      "mapping": {"event_column_name": "e", "time_column_name": "t", "user_column_name": "u", "insert_id_column_name": "id"}});
    let r = server.post_json(&imports(p), &owner, &body);
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["results"]["id"].as_i64().unwrap();
    let sync = format!("{}/{id}/manual-sync", imports(p));
    for _ in 0..2 {
        let r = put(&server, &sync, Some(&owner), "{}");
        assert_eq!(r.status, 200, "{}", r.text);
        let run_id = r.json()["results"]["run_id"].as_str().unwrap().to_owned();
        assert_eq!(wait_run(&server, p, id, &run_id, &owner)["events_loaded"], 1);
    }
    let r = put(&server, &sync, Some(&owner), "{}");
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.json()["status"], "error");
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((3500..=3600).contains(&wait), "{wait}");
    assert_eq!(events(&server, p, &owner, &format!("$warehouse_import_id={id}")).len(), 1);
}

fn a_sync_waits_for_the_previous_run_to_end(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let file = server.dir.path().join("e.ndjson");
    std::fs::write(&file, "{\"u\":\"a\"}\n").unwrap();
    let body = json!({"name": "n", "kind": "people", "source": {"type": "ndjson", "path": file.to_str().unwrap()}, "mapping": {"user_column_name": "u"}});
    let id = server.post_json(&imports(p), &owner, &body).json()["results"]["id"].as_i64().unwrap();
    // A run that has not ended, as if another sync were still reading.
    let lease = datadict_server::store::jobs::Lease { owner: "another process", until_ms: crate::common::now_ms() + 60_000 };
    let queued = server.store.call_sync(|conn| datadict_server::store::jobs::queue_manual_run(conn, id, "still-running", 5, crate::common::now_ms(), &lease)).unwrap();
    assert_eq!(queued, datadict_server::store::jobs::Queued::Queued);
    let r = put(&server, &format!("{}/{id}/manual-sync", imports(p)), Some(&owner), "{}");
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.json()["status"], "error");
    assert!(r.json()["error"].as_str().unwrap().contains("still-running"), "{}", r.text);
}

fn csv_and_people_sources(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let now = crate::common::now_ms();
    let csv = server.dir.path().join("signups.csv");
    std::fs::write(&csv, format!("uid,at,plan,zip\nu1,{now},\"pro, yearly\",01234\nu2,2026-99-99,free,\n,{now},free,1\n")).unwrap();
    let body = json!({"name": "signups", "kind": "event_sync", "source": {"type": "csv", "path": csv.to_str().unwrap()},
                      "mapping": {"event_name": "Signed Up", "time_column_name": "at", "user_column_name": "uid", "key_column_names": ["at", "zip"]}});
    let r = server.post_json(&imports(p), &owner, &body);
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["results"]["id"].as_i64().unwrap();
    let r = put(&server, &format!("{}/{id}/manual-sync", imports(p)), Some(&owner), "{}");
    let run = wait_run(&server, p, id, r.json()["results"]["run_id"].as_str().unwrap(), &owner);
    // Row 2 has a bad date; row 3 has an empty user id, which events allow (FACTS.md).
    assert_eq!((run["rows_read"].as_u64(), run["events_loaded"].as_u64(), run["rows_rejected"].as_u64()), (Some(3), Some(2), Some(1)), "{run}");
    let got = events(&server, p, &owner, &format!("$warehouse_import_id={id}"));
    let u1 = got.iter().find(|e| e["properties"]["distinct_id"] == "u1").unwrap();
    assert_eq!(u1["event"], "Signed Up");
    assert_eq!(u1["properties"]["plan"], "pro, yearly");
    assert_eq!(u1["properties"]["zip"], "01234");

    let people = server.dir.path().join("people.ndjson");
    std::fs::write(&people, "{\"id\":\"u1\",\"name\":\"Ada\",\"plan\":\"pro\"}\n{\"id\":null,\"name\":\"nobody\"}\nnot json\n").unwrap();
    let body = json!({"name": "people", "kind": "people", "source": {"type": "ndjson", "path": people.to_str().unwrap()},
                      "mapping": {"user_column_name": "id"}});
    let r = server.post_json(&imports(p), &owner, &body);
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["results"]["id"].as_i64().unwrap();
    let r = put(&server, &format!("{}/{id}/manual-sync", imports(p)), Some(&owner), "{}");
    let run = wait_run(&server, p, id, r.json()["results"]["run_id"].as_str().unwrap(), &owner);
    assert_eq!((run["rows_read"].as_u64(), run["events_loaded"].as_u64(), run["rows_rejected"].as_u64()), (Some(3), Some(1), Some(2)), "{run}");
    let r = server.get(&format!("/api/app/projects/{p}/profiles/u1"), &owner);
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("Ada"), "{}", r.text);
}

/// Issue 18: a people sync goes through the profile rules of `/engage`, 2,000 properties per
/// profile included. A row that would grow a profile past the cap is refused and counted as
/// rejected, as `/engage` refuses that update; the other rows are still stored. Before the fix the
/// load stored all 2,001 properties.
fn people_sync_cannot_grow_a_profile_past_the_cap(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let mut big = serde_json::Map::new();
    big.insert("id".into(), json!("u1"));
    for i in 0..2001 {
        big.insert(format!("p{i}"), json!(i));
    }
    let people = server.dir.path().join("people.ndjson");
    std::fs::write(&people, format!("{}\n{}\n", Value::Object(big), json!({"id": "u2", "plan": "pro"}))).unwrap();
    let body = json!({"name": "people", "kind": "people", "source": {"type": "ndjson", "path": people.to_str().unwrap()},
                      "mapping": {"user_column_name": "id"}});
    let r = server.post_json(&imports(p), &owner, &body);
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["results"]["id"].as_i64().unwrap();
    let r = put(&server, &format!("{}/{id}/manual-sync", imports(p)), Some(&owner), "{}");
    let run = wait_run(&server, p, id, r.json()["results"]["run_id"].as_str().unwrap(), &owner);
    assert_eq!((run["events_loaded"].as_u64(), run["rows_rejected"].as_u64()), (Some(1), Some(1)), "{run}");
    assert!(run["rejections"][0]["reason"].as_str().unwrap().contains("a profile holds at most 2000"), "{run}");
    let r = server.get(&format!("/api/app/projects/{p}/profiles/u1"), &owner);
    assert_eq!(r.status, 404, "the refused update must not be stored: {}", &r.text[..r.text.len().min(200)]);
    assert_eq!(server.get(&format!("/api/app/projects/{p}/profiles/u2"), &owner).status, 200);
    // Issue 20: the dictionary check on arrival sees only the stored update; the project has no
    // `$user` schema, so that update gets one `no_schema` note.
    let v = server.get(&format!("/api/app/projects/{p}/violations?kind=user"), &owner).json();
    let rows = v["results"].as_array().unwrap();
    assert_eq!((rows.len(), rows[0]["code"].as_str(), rows[0]["count"].as_i64()), (1, Some("no_schema"), Some(1)), "{v}");
}

fn postgres_import_synced_twice_makes_no_duplicates(backend: Backend) {
    let pg = Postgres::start();
    let mut client = pg.client();
    client
        .batch_execute(
            "CREATE SCHEMA shop;
             CREATE TABLE shop.orders (id bigint, kind text, ts timestamptz, user_id text, amount numeric(10,2), paid boolean);",
        )
        .unwrap();
    let now_s = crate::common::now_ms() / 1000;
    for i in 1..=5i64 {
        let ts = if i == 4 { "NULL".to_owned() } else { format!("to_timestamp({})", now_s - 3600 * i) };
        client.batch_execute(&format!("INSERT INTO shop.orders VALUES ({i}, 'Order {}', {ts}, 'pg-user-{i}', {i}.25, {})", i % 2, i % 2 == 0)).unwrap();
    }
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let source = json!({"type": "postgres", "host": "127.0.0.1", "port": pg.port, "user": "postgres", "dbname": "postgres", "table": "shop.orders"});
    let mapping = json!({"event_column_name": "kind", "time_column_name": "ts", "user_column_name": "user_id", "key_column_names": ["id"]});

    // A password is only ever referenced by the name of a server environment variable.
    let mut bad_source = source.clone();
    bad_source["password_env"] = json!("DATADICT_WAREHOUSE_TEST_NO_SUCH_VARIABLE");
    let r = server.post_json(&imports(p), &owner, &json!({"name": "pg", "kind": "event_sync", "source": bad_source, "mapping": mapping}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("DATADICT_WAREHOUSE_TEST_NO_SUCH_VARIABLE"), "{}", r.text);
    let mut wrong_col = mapping.clone();
    wrong_col["time_column_name"] = json!("created");
    let r = server.post_json(&imports(p), &owner, &json!({"name": "pg", "kind": "event_sync", "source": source, "mapping": wrong_col}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("no column `created`"), "{}", r.text);

    let r = server.post_json(&imports(p), &owner, &json!({"name": "pg", "kind": "event_sync", "source": source, "mapping": mapping}));
    assert_eq!(r.status, 201, "{}", r.text);
    let created = r.json()["results"].clone();
    assert_eq!(created["source"]["password"], "none");
    let id = created["id"].as_i64().unwrap();
    for round in 1..=2 {
        let r = put(&server, &format!("{}/{id}/manual-sync", imports(p)), Some(&owner), "{}");
        assert_eq!(r.status, 200, "{}", r.text);
        let run = wait_run(&server, p, id, r.json()["results"]["run_id"].as_str().unwrap(), &owner);
        assert_eq!(run["status"], "succeeded", "{run}");
        assert_eq!((run["rows_read"].as_u64(), run["events_loaded"].as_u64(), run["rows_rejected"].as_u64()), (Some(5), Some(4), Some(1)), "{run}");
        assert!(run["rejections"][0]["reason"].as_str().unwrap().contains("`ts` is empty"), "{run}");
        let got = events(&server, p, &owner, &format!("$warehouse_import_id={id}"));
        assert_eq!(got.len(), 4, "round {round}");
        assert_eq!(events(&server, p, &owner, "$source=warehouse-import").len(), 4);
        let e1 = got.iter().find(|e| e["properties"]["distinct_id"] == "pg-user-1").unwrap();
        assert_eq!(e1["event"], "Order 1");
        assert_eq!(e1["properties"]["time"].as_i64().unwrap(), (now_s - 3600) * 1000);
        assert_eq!(e1["properties"]["amount"], 1.25);
        assert_eq!(e1["properties"]["paid"], false);
    }
}

fn file_sources_stay_inside_the_configured_folder(backend: Backend) {
    let root = tempfile::tempdir().unwrap();
    let config = Config { jobs: JobsConfig { warehouse_file_root: Some(root.path().to_owned()), ..JobsConfig::default() }, ..Config::default() };
    let server = Server::start_with_on(backend, config);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let outside = server.dir.path().join("outside.ndjson");
    let inside = root.path().join("inside.ndjson");
    for f in [&outside, &inside] {
        std::fs::write(f, "{\"u\":\"a\"}\n").unwrap();
    }
    let body = |path: &std::path::Path| json!({"name": "n", "kind": "people", "source": {"type": "ndjson", "path": path.to_str().unwrap()}, "mapping": {"user_column_name": "u"}});
    let r = server.post_json(&imports(p), &owner, &body(&outside));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("outside the folder"), "{}", r.text);
    // A link inside the folder that points outside is outside.
    let link = root.path().join("link.ndjson");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    assert_eq!(server.post_json(&imports(p), &owner, &body(&link)).status, 400);
    assert_eq!(server.post_json(&imports(p), &owner, &body(&inside)).status, 201);
}

/// `POST .../warehouse-sources/imports` reads bodies up to the JSON body limit of the other JSON
/// routes: a body 1 KiB over it is answered 413 with the error body naming the limit in bytes, and
/// one 1 KiB under it is read (and refused for what it holds: 400 naming the unknown field).
fn a_create_body_over_the_json_limit_is_answered_413(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let auth = Some((owner.username.as_str(), owner.secret.as_str()));
    let headers = [("Content-Type", "application/json")];
    let limit = crate::common::JSON_BODY_LIMIT;
    let r = server.send("POST", &imports(p), auth, &headers, Some(crate::common::padded_object(limit + 1024)));
    assert_eq!(r.status, 413, "{}", r.text);
    assert_eq!(r.json()["status"], "error");
    let msg = r.json()["error"].as_str().unwrap().to_owned();
    assert!(msg.contains(&limit.to_string()), "the limit {limit} is not in: {msg}");
    let r = server.send("POST", &imports(p), auth, &headers, Some(crate::common::padded_object(limit - 1024)));
    assert_eq!(r.status, 400, "a body under the limit of {limit} bytes must be read: {}", &r.text[..r.text.len().min(500)]);
    assert!(r.json()["error"].as_str().unwrap().contains("`pad` is not a field of an import"), "{}", r.text);
    assert_eq!(server.get(&imports(p), &owner).json()["results"], json!([]));
}

on_both_stores!(sqlite_import_synced_twice_makes_no_duplicates, manual_syncs_are_limited_per_hour, a_sync_waits_for_the_previous_run_to_end, csv_and_people_sources, people_sync_cannot_grow_a_profile_past_the_cap, postgres_import_synced_twice_makes_no_duplicates, file_sources_stay_inside_the_configured_folder, a_create_body_over_the_json_limit_is_answered_413);
