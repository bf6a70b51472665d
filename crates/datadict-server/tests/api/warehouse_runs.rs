//! The life of warehouse imports and their runs over HTTP: a delete refused while a run has not
//! ended and honouring `delete_data`, import ids never given twice, and a run left `running` by a
//! stopped process that no longer blocks the next sync.

use crate::common::{now_ms, on_both_stores, Account, Backend, Server};
use crate::warehouse::{events, imports, put, wait_run};
use datadict_server::store::jobs::{self, Lease, Queued};
use datadict_server::store::Role;
use serde_json::{json, Value};

/// An NDJSON people import of `p` (nothing to read: its runs here are made by hand).
fn people_import(server: &Server, p: i64, owner: &Account) -> i64 {
    let file = server.dir.path().join("people.ndjson");
    std::fs::write(&file, "{\"u\":\"a\"}\n").unwrap();
    let body = json!({"name": "n", "kind": "people", "source": {"type": "ndjson", "path": file.to_str().unwrap()}, "mapping": {"user_column_name": "u"}});
    let r = server.post_json(&imports(p), owner, &body);
    assert_eq!(r.status, 201, "{}", r.text);
    r.json()["results"]["id"].as_i64().unwrap()
}

/// Queues run `run_id` of `import` as another process would, held by `lease`.
fn queue(server: &Server, import: i64, run_id: &str, lease: Lease<'_>) {
    let queued = server.store.call_sync(|conn| jobs::queue_manual_run(conn, import, run_id, 5, now_ms(), &lease)).unwrap();
    assert_eq!(queued, Queued::Queued);
}

fn send_delete(server: &Server, path: &str, who: &Account, body: Option<&str>) -> crate::common::Reply {
    let headers: &[(&str, &str)] = if body.is_some() { &[("Content-Type", "application/json")] } else { &[] };
    server.send("DELETE", path, Some((&who.username, &who.secret)), headers, body.map(|b| b.as_bytes().to_vec()))
}

/// A delete while a run of the import has not ended is refused with 409 naming the run (the run
/// would go on loading events for an import that no longer exists); the import stays. Once the
/// run's lease has expired (its process stopped), the delete goes through.
fn a_delete_waits_for_the_running_sync(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let id = people_import(&server, p, &owner);
    let running = Lease { owner: "another process", until_ms: now_ms() + 60_000 };
    queue(&server, id, "still-running", running);
    assert!(server.store.call_sync(|conn| jobs::claim_run(conn, "still-running", now_ms(), &running)).unwrap());
    let path = format!("{}/{id}", imports(p));
    let r = server.delete(&path, &owner);
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.json()["status"], "error");
    let msg = r.json()["error"].as_str().unwrap().to_owned();
    assert!(msg.contains("still-running") && msg.contains("wait for it"), "{msg}");
    assert_eq!(server.get(&path, &owner).status, 200);
    assert_eq!(server.get(&format!("{path}/runs/still-running"), &owner).json()["results"]["status"], "running");

    let other = people_import(&server, p, &owner);
    queue(&server, other, "interrupted", Lease { owner: "a stopped process", until_ms: now_ms() - 1 });
    let r = server.delete(&format!("{}/{other}", imports(p)), &owner);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"], json!({"delete_count": 1, "events_deleted": 0}));
}

/// A run left queued or running by a process that stopped (its lease expired), with no start-up
/// since, is failed as interrupted when the next sync is asked, which then runs: before, every
/// manual sync got 409 until a restart long enough after.
fn a_run_whose_lease_expired_does_not_block_the_next_sync(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let id = people_import(&server, p, &owner);
    let stopped = Lease { owner: "a stopped process", until_ms: now_ms() - 1 };
    queue(&server, id, "left-running", stopped);
    assert!(server.store.call_sync(|conn| jobs::claim_run(conn, "left-running", now_ms() - 60_000, &stopped)).unwrap());
    let r = put(&server, &format!("{}/{id}/manual-sync", imports(p)), Some(&owner), "{}");
    assert_eq!(r.status, 200, "{}", r.text);
    let run = wait_run(&server, p, id, r.json()["results"]["run_id"].as_str().unwrap(), &owner);
    assert_eq!(run["status"], "succeeded", "{run}");
    let old = server.get(&format!("{}/{id}/runs/left-running", imports(p)), &owner).json()["results"].clone();
    assert_eq!(old["status"], "failed", "{old}");
    assert!(old["error"].as_str().unwrap().contains("the server stopped during the run"), "{old}");
    assert!(old["finished_at"].is_i64(), "{old}");
}

/// Import ids are never given twice: deleting the newest import and creating another gives a new
/// id, so `$warehouse_import_id` names one import for good.
fn import_ids_are_never_reused(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let first = people_import(&server, p, &owner);
    let second = people_import(&server, p, &owner);
    assert_eq!(server.delete(&format!("{}/{second}", imports(p)), &owner).status, 200);
    let third = people_import(&server, p, &owner);
    assert!(third > second && second > first, "{first}, {second}, {third}");
}

/// The reference's `delete_data`: true also deletes the events the import loaded (and only
/// those), answering how many; the hourly counts drop with them. A key other than `delete_data`,
/// or a value that is not a boolean, is refused and deletes nothing.
fn delete_data_deletes_the_import_events(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let now = now_ms();
    let mut ids = Vec::new();
    for (name, rows) in [("a", 3), ("b", 2)] {
        let file = server.dir.path().join(format!("{name}.ndjson"));
        let lines: String = (0..rows).map(|i| format!("{{\"id\":{i},\"t\":{},\"u\":\"u{i}\"}}\n", now - 1000 * i)).collect();
        std::fs::write(&file, lines).unwrap();
        let body = json!({"name": name, "kind": "event_sync", "source": {"type": "ndjson", "path": file.to_str().unwrap()},
                          "mapping": {"event_name": "Loaded", "time_column_name": "t", "user_column_name": "u", "key_column_names": ["id"]}});
        let r = server.post_json(&imports(p), &owner, &body);
        assert_eq!(r.status, 201, "{}", r.text);
        let id = r.json()["results"]["id"].as_i64().unwrap();
        let r = put(&server, &format!("{}/{id}/manual-sync", imports(p)), Some(&owner), "{}");
        let run = wait_run(&server, p, id, r.json()["results"]["run_id"].as_str().unwrap(), &owner);
        assert_eq!(run["events_loaded"], rows, "{run}");
        ids.push(id);
    }
    let count = |server: &Server| -> Value {
        let r = server.get(&format!("/api/app/projects/{p}/event-counts"), &owner);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"].as_array().unwrap().iter().find(|c| c["event"] == "Loaded").map(|c| c["count"].clone()).unwrap_or(json!(0))
    };
    assert_eq!(count(&server), 5);
    let path = format!("{}/{}", imports(p), ids[0]);
    for bad in [r#"{"bogus":1}"#, r#"{"delete_data":"yes"}"#, "[]"] {
        let r = send_delete(&server, &path, &owner, Some(bad));
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
        assert_eq!(r.json()["status"], "error");
    }
    assert!(send_delete(&server, &path, &owner, Some(r#"{"bogus":1}"#)).text.contains("`bogus` is not a field"));
    assert_eq!(server.get(&path, &owner).status, 200);
    let r = send_delete(&server, &path, &owner, Some(r#"{"delete_data":true}"#));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"], json!({"delete_count": 1, "events_deleted": 3}));
    assert_eq!(events(&server, p, &owner, &format!("$warehouse_import_id={}", ids[0])).len(), 0);
    assert_eq!(events(&server, p, &owner, &format!("$warehouse_import_id={}", ids[1])).len(), 2);
    assert_eq!(count(&server), 2);
    // `{}` keeps the events.
    let r = send_delete(&server, &format!("{}/{}", imports(p), ids[1]), &owner, Some("{}"));
    assert_eq!(r.json()["results"], json!({"delete_count": 1, "events_deleted": 0}), "{}", r.text);
    assert_eq!(events(&server, p, &owner, &format!("$warehouse_import_id={}", ids[1])).len(), 2);
}

on_both_stores!(a_delete_waits_for_the_running_sync, a_run_whose_lease_expired_does_not_block_the_next_sync, import_ids_are_never_reused, delete_data_deletes_the_import_events);
