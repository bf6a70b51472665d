//! Durability of the real binary, on both stores: every import answered 200 survives a SIGKILL
//! of the server, and a graceful shutdown (SIGTERM) finishes the request in flight before the
//! process exits.

use crate::common::process::{credentials, Data, Proc};
use crate::common::{basic, now_ms, on_both_stores, Backend, Client};
use datadict_server::demo::DemoCredentials;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};

fn spawn(data: &Data) -> Proc {
    data.spawn("datadict_server=info", &[], Stdio::inherit())
}

fn spawn_with_log(data: &Data, log: &str) -> Proc {
    data.spawn(log, &[], Stdio::inherit())
}

fn batch(round: usize, size: usize) -> Vec<u8> {
    let t = now_ms();
    let events: Vec<Value> = (0..size)
        .map(|j| json!({"event": "Crash Test", "properties": {"time": t, "distinct_id": "u", "$insert_id": format!("k{round}-{j}"), "round": round}}))
        .collect();
    crate::common::gzip(&serde_json::to_vec(&events).unwrap())
}

/// How many events named `event` a fresh start of the server over `data` finds stored.
fn stored_after_restart(data: &Data, creds: &DemoCredentials, event: &str) -> usize {
    let mut restarted = spawn(data);
    let r = Client::new(&restarted.base)
        .send("GET", &format!("/api/app/projects/{}/events?event={event}", creds.project_id), Some((&creds.username, &creds.secret)), &[], None)
        .unwrap();
    restarted.child.kill().unwrap();
    restarted.child.wait().unwrap();
    r.json()["results"].as_array().unwrap().len()
}

/// Every `$insert_id` stored in the project, read through the API.
fn stored_ids(client: &Client, creds: &DemoCredentials) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let mut cursor = String::new();
    loop {
        let path = format!("/api/app/projects/{}/events?event=Crash%20Test&limit=1000{cursor}", creds.project_id);
        let r = client.send("GET", &path, Some((&creds.username, &creds.secret)), &[], None).unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        let page = r.json();
        for e in page["results"].as_array().unwrap() {
            out.insert(e["properties"]["$insert_id"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return out,
        }
    }
}

fn every_acknowledged_event_survives_sigkill(backend: Backend) {
    let data = Data::new(backend);
    let mut server = spawn(&data);
    let creds = credentials(data.dir.path());
    let client = Client::new(&server.base);
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let (tx, rx) = mpsc::channel();
    const SIZE: usize = 500;
    let sender = {
        let (client, acked, token) = (client.clone(), acked.clone(), creds.project_token.clone());
        std::thread::spawn(move || {
            for round in 0.. {
                let reply = client.send(
                    "POST",
                    "/import?strict=1",
                    Some((&token, "")),
                    &[("Content-Encoding", "gzip"), ("Content-Type", "application/json")],
                    Some(batch(round, SIZE)),
                );
                match reply {
                    Ok(r) if r.status == 200 => {
                        acked.lock().unwrap().extend((0..SIZE).map(|j| format!("k{round}-{j}")));
                        if tx.send(round).is_err() {
                            return;
                        }
                    }
                    Ok(r) => panic!("an import failed before the kill: {} {}", r.status, r.text),
                    // The server was killed: this request was not acknowledged.
                    Err(_) => return,
                }
            }
        })
    };
    // Kill while requests are still being sent: after the 20th acknowledgement, the sender is
    // already on its way with the next one.
    for _ in 0..20 {
        rx.recv().unwrap();
    }
    server.child.kill().unwrap(); // SIGKILL on Unix
    server.child.wait().unwrap();
    drop(rx);
    sender.join().unwrap();

    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 20 * SIZE);
    let mut restarted = spawn(&data);
    let stored = stored_ids(&Client::new(&restarted.base), &creds);
    let missing: Vec<_> = acked.iter().filter(|id| !stored.contains(*id)).take(5).collect();
    assert!(missing.is_empty(), "{} acknowledged events are gone, e.g. {missing:?}", acked.iter().filter(|id| !stored.contains(*id)).count());
    restarted.child.kill().unwrap();
    restarted.child.wait().unwrap();
}

fn graceful_shutdown_finishes_the_request_in_flight(backend: Backend) {
    let data = Data::new(backend);
    let mut server = spawn_with_log(&data, "datadict_server=debug");
    let creds = credentials(data.dir.path());
    let body = serde_json::to_vec(&[json!({"event": "Late", "properties": {"time": now_ms(), "distinct_id": "u", "$insert_id": "late-1"}})]).unwrap();
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    let head = format!(
        "POST /import?strict=1 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        basic(&creds.project_token, ""),
        body.len()
    );
    // Send the headers and half of the body, so the request is in flight, then ask the server to
    // stop.
    let (first, second) = body.split_at(body.len() / 2);
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(first).unwrap();
    stream.flush().unwrap();
    // The request is in flight once its handler runs (it then waits for the rest of the body).
    server.wait_for_line("import request received");
    let status = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    server.wait_for_line("shutting down");
    stream.write_all(second).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""num_records_imported":1"#), "{answer}");
    server.wait_for_line("datadict stopped");
    assert!(server.child.wait().unwrap().success());
    // The event is stored.
    assert_eq!(stored_after_restart(&data, &creds, "Late"), 1);
}

fn a_closed_standard_output_stops_neither_imports_nor_a_clean_shutdown(backend: Backend) {
    // `serve` spelled out, with its options after it, as `--help` shows it.
    let data = Data::new(backend);
    let mut server = data.spawn("datadict_server=debug", &["serve"], Stdio::piped());
    // Whoever read the output is gone (as with `datadict-server | head -1`).
    server.close_stdout();
    let (child, base) = (&mut server.child, server.base.clone());
    let creds = credentials(data.dir.path());
    let body = serde_json::to_vec(&[json!({"event": "Piped", "properties": {"time": now_ms(), "distinct_id": "u", "$insert_id": "piped-1"}})]).unwrap();
    let client = Client::new(&base);
    let r = client.send("POST", "/import?strict=1", Some((&creds.project_token, "")), &[("Content-Type", "application/json")], Some(body)).unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(child.wait().unwrap().success(), "the server did not stop cleanly:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stored_after_restart(&data, &creds, "Piped"), 1);
}

/// A migration whose source accepted the connection and never answers does not keep a stopping
/// server alive (with the data folder's lock): SIGTERM ends the process within the shutdown
/// grace, long before the download's own timeout, and a restart can take the folder.
fn a_stuck_job_does_not_hold_a_stopping_server(backend: Backend) {
    let source = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", source.local_addr().unwrap());
    let (accepted_tx, accepted) = mpsc::channel();
    // Accepts and holds the connection, saying nothing.
    std::thread::spawn(move || {
        if let Ok(conn) = source.accept() {
            accepted_tx.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_secs(120));
            drop(conn);
        }
    });
    let data = Data::new(backend);
    let env = [("DATADICT_AMPLITUDE_URL", url.as_str()), ("DATADICT_AMPLITUDE_TIMEOUT_SECS", "600")];
    let mut server = data.spawn_with("datadict_server=info", &[], &[], &env, Stdio::inherit());
    let creds = credentials(data.dir.path());
    let body = json!({"SOURCE_API_KEY": "k", "SOURCE_API_SECRET": "s", "TARGET_TOKEN": creds.project_token, "START_DATE": "2024-01-01", "END_DATE": "2024-01-01"});
    let r = Client::new(&server.base)
        .send("POST", "/migrate/amplitude", None, &[("Content-Type", "application/json")], Some(body.to_string().into_bytes()))
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    accepted.recv_timeout(std::time::Duration::from_secs(60)).expect("the job never asked the source");
    let status = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let exit = loop {
        if let Some(exit) = server.child.try_wait().unwrap() {
            break exit;
        }
        if std::time::Instant::now() > deadline {
            server.child.kill().unwrap();
            panic!("the server was still running a minute after SIGTERM, its job waiting on the source");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(exit.success(), "{exit:?}");
    // The folder is free again.
    let restarted = spawn(&data);
    restarted.kill();
}

on_both_stores!(
    a_stuck_job_does_not_hold_a_stopping_server,
    every_acknowledged_event_survives_sigkill,
    graceful_shutdown_finishes_the_request_in_flight,
    a_closed_standard_output_stops_neither_imports_nor_a_clean_shutdown
);

/// Opens connections that stall half-way through a request: one whose body is cut short (its
/// handler runs, waiting for the rest) and one whose head never ends. They are handed to a thread
/// that closes them after two minutes, long after the server should have stopped, so that a
/// server waiting on them fails the test instead of hanging it.
fn stall_two_requests(server: &mut Proc, creds: &DemoCredentials) {
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut body = std::net::TcpStream::connect(&addr).unwrap();
    let head = format!("POST /import HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {}\r\nContent-Length: 100\r\n\r\n[", basic(&creds.project_token, ""));
    body.write_all(head.as_bytes()).unwrap();
    server.wait_for_line("import request received");
    let mut head = std::net::TcpStream::connect(&addr).unwrap();
    head.write_all(b"GET /api/app/limits HTTP/1.1\r\nHost: x\r\n").unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(120));
        drop((body, head));
    });
}

fn import_one(server: &Proc, creds: &DemoCredentials, id: &str) {
    let body = serde_json::to_vec(&[json!({"event": "Kept", "properties": {"time": now_ms(), "distinct_id": "u", "$insert_id": id}})]).unwrap();
    let r = Client::new(&server.base).send("POST", "/import?strict=1", Some((&creds.project_token, "")), &[("Content-Type", "application/json")], Some(body)).unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
}

/// Clients that stall half-way through a request do not keep a stopping server alive: after
/// SIGTERM it waits for them at most `DATADICT_SHUTDOWN_GRACE_SECS` (30 s by default, 1 here),
/// then exits cleanly; what it answered before is kept.
#[test]
fn stalled_clients_do_not_hold_a_stopping_server() {
    let data = Data::new(Backend::Sqlite);
    let env = [("DATADICT_SHUTDOWN_GRACE_SECS", "1")];
    let mut server = data.spawn_with("datadict_server=debug", &[], &[], &env, Stdio::inherit());
    let creds = credentials(data.dir.path());
    import_one(&server, &creds, "before-the-stop");
    stall_two_requests(&mut server, &creds);
    assert!(Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap().success());
    server.wait_for_line("still had a request in flight after 1s: stopping without them");
    server.wait_for_line("datadict stopped");
    assert!(server.child.wait().unwrap().success());
    assert_eq!(stored_after_restart(&data, &creds, "Kept"), 1);
}

/// A second SIGINT or SIGTERM stops a server that is waiting for its requests in flight at once.
#[test]
fn a_second_signal_stops_a_waiting_server_at_once() {
    let data = Data::new(Backend::Sqlite);
    let mut server = data.spawn("datadict_server=debug", &[], Stdio::inherit());
    let creds = credentials(data.dir.path());
    import_one(&server, &creds, "before-the-signals");
    stall_two_requests(&mut server, &creds);
    assert!(Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap().success());
    server.wait_for_line("waiting for 2 open connection(s)");
    assert!(Command::new("kill").args(["-INT", &server.child.id().to_string()]).status().unwrap().success());
    server.wait_for_line("a second signal: stopping now");
    server.wait_for_line("datadict stopped");
    assert!(server.child.wait().unwrap().success());
    assert_eq!(stored_after_restart(&data, &creds, "Kept"), 1);
}

/// A client that sends part of a request's head and then nothing has its connection closed after
/// the head's time limit (30 s in the binary, 300 ms here), while other connections are served.
#[test]
fn a_request_head_not_finished_in_time_closes_its_connection() {
    let server = crate::common::Server::start_with_header_timeout(std::time::Duration::from_millis(300));
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut stalled = std::net::TcpStream::connect(&addr).unwrap();
    // Only a guard: a server without the limit fails the test after a minute instead of hanging it.
    stalled.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    stalled.write_all(b"GET /api/app/limits HTTP/1.1\r\nHost: x\r\n").unwrap();
    let r = Client::new(&server.base).send("GET", "/api/app/limits", None, &[], None).unwrap();
    assert_eq!(r.status, 200);
    let mut rest = Vec::new();
    let read = stalled.read_to_end(&mut rest);
    assert!(read.is_ok(), "the connection was still open after a minute: {read:?}");
}
