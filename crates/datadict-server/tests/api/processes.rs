//! Two `datadict-server` processes (the real binary) on one PostgreSQL database: what one stores
//! the other reads at once, a manual sync asked of both runs once, and a rate limit counts the
//! requests to either. On SQLite, one server process owns the data folder.

use crate::common::process::{credentials, Data, Proc};
use crate::common::{now_ms, Backend, Client};
use datadict_server::demo::DemoCredentials;
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Two processes on one new database: the first creates the demo project, the second runs over
/// another data folder. Both take `options` and read warehouse files from `files`.
fn two_processes(options: &[&str], files: &std::path::Path) -> (Data, Proc, Data, Proc) {
    let env = [("DATADICT_WAREHOUSE_FILE_ROOT", files.to_str().unwrap())];
    let a = Data::new(Backend::Postgres);
    let first = a.spawn_with("datadict_server=info", &[], options, &env, Stdio::inherit());
    let b = a.another_folder();
    let options: Vec<&str> = options.iter().copied().chain(["--no-demo"]).collect();
    let second = b.spawn_with("datadict_server=info", &[], &options, &env, Stdio::inherit());
    (a, first, b, second)
}

fn auth(creds: &DemoCredentials) -> Option<(&str, &str)> {
    Some((&creds.username, &creds.secret))
}

fn import(client: &Client, creds: &DemoCredentials, distinct_id: &str, size: usize) {
    let t = now_ms();
    let events: Vec<Value> = (0..size)
        .map(|j| json!({"event": "Two Processes", "properties": {"time": t, "distinct_id": distinct_id, "$insert_id": format!("{distinct_id}-{j}")}}))
        .collect();
    let body = serde_json::to_vec(&events).unwrap();
    let r = client
        .send("POST", "/import?strict=1", Some((&creds.project_token, "")), &[("Content-Type", "application/json")], Some(body))
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
}

fn count(client: &Client, creds: &DemoCredentials, distinct_id: &str) -> usize {
    let path = format!("/api/app/projects/{}/events?distinct_id={distinct_id}&limit=1000", creds.project_id);
    let r = client.send("GET", &path, auth(creds), &[], None).unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    r.json()["results"].as_array().unwrap().len()
}

#[test]
fn two_processes_on_one_postgresql_serve_the_same_projects() {
    let files = tempfile::tempdir().unwrap();
    let (a, first, _b, second) = two_processes(&["--schema-rate-limit", "5"], files.path());
    let creds = credentials(a.dir.path());
    let clients = [Client::new(&first.base), Client::new(&second.base)];

    // Imports through both at once; each batch is read through the other process as soon as it
    // is acknowledged.
    const ROUNDS: usize = 10;
    const SIZE: usize = 200;
    let start = Arc::new(Barrier::new(2));
    let writers: Vec<_> = (0..2)
        .map(|i| {
            let (into, other) = (clients[i].clone(), clients[1 - i].clone());
            let (creds, start) = (creds.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for round in 0..ROUNDS {
                    let user = format!("p{i}-r{round}");
                    import(&into, &creds, &user, SIZE);
                    assert_eq!(count(&other, &creds, &user), SIZE, "process {} does not see what process {i} acknowledged", 1 - i);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }

    // A manual sync asked of both processes at once runs once: either one is refused with 409, or
    // (when the first had ended before the second was asked) the two runs do not overlap.
    let rows: String = (0..20_000).map(|i| format!("{{\"u\":\"u{i}\",\"t\":{}}}\n", now_ms())).collect();
    let file = files.path().join("rows.ndjson");
    std::fs::write(&file, rows).unwrap();
    let imports = format!("/api/app/projects/{}/warehouse-sources/imports", creds.project_id);
    let body = json!({"name": "n", "kind": "event_sync", "source": {"type": "ndjson", "path": file.to_str().unwrap()},
                      "mapping": {"event_name": "Synced", "time_column_name": "t", "user_column_name": "u", "insert_id_column_name": "u"}});
    let json_type = [("Content-Type", "application/json")];
    let r = clients[0].send("POST", &imports, auth(&creds), &json_type, Some(serde_json::to_vec(&body).unwrap())).unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["results"]["id"].as_i64().unwrap();
    let start = Arc::new(Barrier::new(2));
    let askers: Vec<_> = clients
        .iter()
        .map(|client| {
            let (client, creds, start, path) = (client.clone(), creds.clone(), start.clone(), format!("{imports}/{id}/manual-sync"));
            std::thread::spawn(move || {
                start.wait();
                let r = client.send("PUT", &path, auth(&creds), &[("Content-Type", "application/json")], Some(b"{}".to_vec())).unwrap();
                (r.status, r.text)
            })
        })
        .collect();
    let answers: Vec<(u16, String)> = askers.into_iter().map(|t| t.join().unwrap()).collect();
    let accepted = answers.iter().filter(|(status, _)| *status == 200).count();
    assert!(answers.iter().all(|(status, _)| *status == 200 || *status == 409), "{answers:?}");
    let runs = wait_for_runs(&clients[1], &creds, &format!("{imports}/{id}/runs"));
    assert_eq!(runs.len(), accepted, "{runs:?}");
    for run in &runs {
        assert_eq!(run["status"], "succeeded", "{run}");
        assert_eq!(run["events_loaded"], 20_000, "{run}");
    }
    if let [later, earlier] = &runs[..] {
        assert!(later["started_at"].as_i64() >= earlier["finished_at"].as_i64(), "two runs overlapped: {runs:?}");
    }

    // The schemas rate limit (5 a minute) counts the requests to either process: the first 5
    // pass, then both refuse.
    let schemas = format!("/api/app/projects/{}/schemas", creds.project_id);
    for i in 0..5 {
        let r = clients[i % 2].send("GET", &schemas, auth(&creds), &[], None).unwrap();
        assert_eq!(r.status, 200, "request {i}: {}", r.text);
    }
    for client in &clients {
        let r = client.send("GET", &schemas, auth(&creds), &[], None).unwrap();
        assert_eq!(r.status, 429, "{}", r.text);
        assert!(r.headers.get("retry-after").is_some());
    }
    first.kill();
    second.kill();
}

/// A schema written through one process changes what the other drops from its very next
/// `/track` request, although the other keeps the project's compiled dictionary in memory: the
/// dictionary version read with the token says it is stale.
#[test]
fn a_schema_written_through_one_process_reaches_the_others_next_request() {
    let files = tempfile::tempdir().unwrap();
    let (a, first, _b, second) = two_processes(&[], files.path());
    let creds = credentials(a.dir.path());
    let (writer, tracker) = (Client::new(&first.base), Client::new(&second.base));
    let track = |n: usize| {
        let event = json!({"event": "Across", "properties": {"token": creds.project_token, "distinct_id": "across", "n": n}});
        let body = format!("data={}", serde_json::to_string(&event).unwrap().replace('%', "%25").replace('&', "%26").replace('+', "%2B"));
        let r = tracker.send("POST", "/track", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(body.into_bytes())).unwrap();
        assert_eq!((r.status, r.text.as_str()), (200, "1"));
    };
    track(1);
    track(2);
    assert_eq!(count(&tracker, &creds, "across"), 2);
    let schemas = format!("/api/app/projects/{}/schemas", creds.project_id);
    let dropped = json!({"entries": [{"entityType": "event", "name": "Across", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}}]});
    let r = writer.send("POST", &schemas, auth(&creds), &[("Content-Type", "application/json")], Some(serde_json::to_vec(&dropped).unwrap())).unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    track(3);
    assert_eq!(count(&tracker, &creds, "across"), 2, "the second process stored an event the first process's schema drops");
    first.kill();
    second.kill();
}

/// The runs of an import once none is queued or running, newest first.
fn wait_for_runs(client: &Client, creds: &DemoCredentials, path: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = client.send("GET", path, auth(creds), &[], None).unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        let runs = r.json()["results"].as_array().unwrap().clone();
        if runs.iter().all(|r| r["status"] == "succeeded" || r["status"] == "failed") {
            return runs;
        }
        assert!(Instant::now() < deadline, "the runs did not end: {runs:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// On SQLite one server process owns the data folder (it keeps the projects' dictionary versions
/// in memory): a second server on the folder refuses to start and says why, while the admin
/// command still adds a project beside the running server, whose token that server then accepts.
/// Once the first server is gone, another starts on the folder.
#[test]
fn one_server_owns_a_sqlite_folder_and_the_admin_command_works_beside_it() {
    let data = Data::new(Backend::Sqlite);
    let first = data.spawn("datadict_server=warn", &[], Stdio::inherit());
    let binary = env!("CARGO_BIN_EXE_datadict-server");
    let second = std::process::Command::new(binary)
        .arg("--data-dir")
        .arg(data.dir.path())
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a second server started: {stderr}");
    assert!(stderr.contains("another datadict server is running on the data folder"), "{stderr}");
    assert!(stderr.contains("--database"), "the message names the way to run several: {stderr}");
    let created = std::process::Command::new(binary)
        .arg("--data-dir")
        .arg(data.dir.path())
        .args(["admin", "create-project", "--name", "Beside"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&created.stdout);
    assert!(created.status.success(), "{out} {}", String::from_utf8_lossy(&created.stderr));
    let token = out.lines().find_map(|l| l.strip_prefix("project token:")).unwrap().split_whitespace().next().unwrap().to_owned();
    let client = Client::new(&first.base);
    let event = json!({"event": "Beside", "properties": {"token": token, "distinct_id": "u"}});
    let r = client.send("POST", "/track", None, &[("Content-Type", "application/json")], Some(event.to_string().into_bytes())).unwrap();
    assert_eq!((r.status, r.text.as_str()), (200, "1"));
    first.kill();
    let again = data.spawn("datadict_server=warn", &["--no-demo"], Stdio::inherit());
    let r = Client::new(&again.base).send("POST", "/track", None, &[("Content-Type", "application/json")], Some(event.to_string().into_bytes())).unwrap();
    assert_eq!((r.status, r.text.as_str()), (200, "1"));
}
