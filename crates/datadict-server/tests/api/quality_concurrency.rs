//! Data quality under concurrent requests (issue 20): requests that record new violation keys
//! past the day's cap at the same time, some before and some after a key that already exists in
//! key order, all succeed and every finding is counted once. On PostgreSQL each request writes its
//! rows in one transaction that locks them, so two requests that lock shared rows in different
//! orders would deadlock and one of them would fail.

use crate::common::{now_ms, on_both_stores, Backend, Server};
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::{json, Value};

fn event(name: &str, id: &str) -> Value {
    json!({"event": name, "properties": {"time": now_ms() - 60_000, "distinct_id": "u", "$insert_id": id}})
}

fn concurrent_new_keys_past_the_cap_all_count(backend: Backend) {
    let server = Server::start_with_on(backend, Config { quality_max_keys: 2, ..Config::default() });
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let import = |records: &[Value]| {
        let body: String = records.iter().map(|r| format!("{r}\n")).collect();
        let path = format!("/import?project_id={}", project.id);
        server.send("POST", &path, Some((&owner.username, &owner.secret)), &[("Content-Type", "application/x-ndjson")], Some(body.into_bytes()))
    };
    // Two undocumented events fill the day's cap of two keys; every new name goes to `$others`.
    assert_eq!(import(&[event("M1", "seed-1"), event("M2", "seed-2")]).status, 200);
    let (threads, rounds) = (8, 12);
    std::thread::scope(|s| {
        for t in 0..threads {
            let import = &import;
            s.spawn(move || {
                for i in 0..rounds {
                    // A new name before the existing keys (`A…`) or after them (`Z…`): the first
                    // locks `$others` before `M1`, the second `M1` before `$others`.
                    let new = if t % 2 == 0 { format!("A{t}-{i}") } else { format!("Z{t}-{i}") };
                    let r = import(&[event(&new, &format!("n-{t}-{i}")), event("M1", &format!("m-{t}-{i}"))]);
                    assert_eq!(r.status, 200, "thread {t} round {i}: {}", r.text);
                }
            });
        }
    });
    let r = server.get(&format!("/api/app/projects/{}/violations?limit=1000", project.id), &owner);
    assert_eq!(r.status, 200, "{}", r.text);
    let rows = r.json()["results"].as_array().unwrap().clone();
    let count = |name: &str| rows.iter().filter(|r| r["event"] == name).map(|r| r["count"].as_i64().unwrap()).sum::<i64>();
    let sent = (threads * rounds) as i64;
    assert_eq!((count("M1"), count("M2"), count("$others")), (1 + sent, 1, sent), "{rows:#?}");
    assert_eq!(rows.len(), 3, "{rows:#?}");
}

on_both_stores!(concurrent_new_keys_past_the_cap_all_count);
