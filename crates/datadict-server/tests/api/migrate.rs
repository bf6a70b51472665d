//! The migration service end to end: a stand-in for the source tool's export API runs inside the
//! test on 127.0.0.1 (it checks the key and secret and serves a generated zip of gzipped NDJSON for
//! the requested range, FACTS.md), and the real server migrates from it: 400 with every problem,
//! a dry run, a real run, the same range again without duplicates, the default range and the EU
//! host, wrong credentials, and the event limit.

use crate::common::{on_both_stores, Account, Backend, Server};
use datadict_core::Date;
use datadict_server::jobs::JobsConfig;
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Test scaffolding for the source tool: its export endpoint, under `/us` and `/eu`.
mod source_tool {
    use axum::extract::{Path, Query, State};
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use datadict_core::Date;
    use std::collections::HashMap;
    use std::io::{Cursor, Write};
    use std::sync::{Arc, Mutex};

    pub const KEY: &str = "src-key";
    pub const SECRET: &str = "src-secret-value";

    #[derive(Clone)]
    struct Shared {
        days: Vec<Date>,
        per_day: usize,
        seen: Arc<Mutex<Vec<String>>>,
    }

    /// The running stand-in; `seen` lists `"<region> <start> <end>"` of every export request.
    pub struct SourceTool {
        pub base: String,
        pub seen: Arc<Mutex<Vec<String>>>,
        _thread: std::thread::JoinHandle<()>,
    }

    /// Serves `per_day` events (plus one invalid line) on each of `days`.
    pub fn start(days: Vec<Date>, per_day: usize) -> SourceTool {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared { days, per_day, seen: seen.clone() };
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let app = axum::Router::new().route("/{region}/api/2/export", axum::routing::get(export)).with_state(shared);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        SourceTool { base: format!("http://{addr}"), seen, _thread: thread }
    }

    fn day_of(param: Option<&String>) -> Option<Date> {
        let p = param?;
        let (d, h) = p.split_once('T')?;
        if d.len() != 8 || h.len() != 2 {
            return None;
        }
        Date::parse(&format!("{}-{}-{}", &d[..4], &d[4..6], &d[6..]))
    }

    async fn export(State(s): State<Shared>, Path(region): Path<String>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
        let want = crate::common::basic(KEY, SECRET);
        if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(want.as_str()) {
            return (StatusCode::UNAUTHORIZED, "bad credentials").into_response();
        }
        let (Some(start), Some(end)) = (day_of(q.get("start")), day_of(q.get("end"))) else {
            return (StatusCode::BAD_REQUEST, "start and end must be YYYYMMDDTHH").into_response();
        };
        s.seen.lock().unwrap().push(format!("{region} {} {}", q["start"], q["end"]));
        let days: Vec<Date> = s.days.iter().copied().filter(|d| *d >= start && *d <= end).collect();
        if days.is_empty() {
            return (StatusCode::NOT_FOUND, "no data").into_response();
        }
        archive(&days, s.per_day).into_response()
    }

    /// One source event (FACTS.md's fields): `i` decides the user, the device and the insert id.
    pub fn event(day: Date, i: usize) -> String {
        let (h, m, sec) = ((i / 60) % 24, i % 60, (i * 7) % 60);
        let mut e = serde_json::json!({
            "event_type": (["Page Viewed", "Purchase", "Signed Up"][i % 3]),
            "event_time": format!("{day} {h:02}:{m:02}:{sec:02}.{:06}", i % 1000),
            "device_id": format!("dev-{}", i % 11),
            "event_properties": {"n": i, "path": format!("/p/{}", i % 5)},
            "os_name": "iOS", "city": "Paris", "country": "FR", "ip_address": "10.0.0.1",
            "library": "test/1.0", "session_id": i / 10,
        });
        if !i.is_multiple_of(5) {
            e["user_id"] = serde_json::json!(format!("user-{}", i % 7));
            e["user_properties"] = serde_json::json!({"plan": (["free", "pro"][i % 2]), "seen": format!("{day}")});
        }
        match i % 3 {
            // Source insert ids may hold `:`, which the import refuses: the core hashes them.
            0 => e["$insert_id"] = serde_json::json!(format!("ins:{day}:{i}")),
            1 => e["insert_id"] = serde_json::json!(format!("ins-{day}-{i}")),
            _ => {}
        }
        e.to_string()
    }

    /// The export of `days`: one member per hour with events, split in two (`#0`, `#1`), and one
    /// line per day that the transform must reject.
    pub fn archive(days: &[Date], per_day: usize) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for day in days {
            let mut hours: Vec<Vec<String>> = vec![Vec::new(); 24];
            for i in 0..per_day {
                hours[(i / 60) % 24].push(event(*day, i));
            }
            hours[0].push(r#"{"event_type":"","event_time":"2020-01-01 00:00:00"}"#.to_owned());
            for (h, lines) in hours.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
                let half = lines.len().div_ceil(2);
                for (n, part) in [&lines[..half], &lines[half..]].into_iter().enumerate() {
                    let name = format!("187/187_{day}_{h}#{n}.json.gz");
                    zip.start_file(name, options).unwrap();
                    let ndjson = part.join("\n") + "\n";
                    zip.write_all(&datadict_core::gzip(ndjson.as_bytes(), 1)).unwrap();
                }
            }
        }
        zip.finish().unwrap().into_inner()
    }
}

fn today() -> Date {
    Date::from_ms(crate::common::now_ms())
}

pub(crate) fn start(server: &Server, body: &Value) -> crate::common::Reply {
    server.send("POST", "/migrate/amplitude", None, &[("Content-Type", "application/json")], Some(body.to_string().into_bytes()))
}

/// Polls a job until it ends, with a deadline.
pub(crate) fn wait_job(server: &Server, status_url: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = server.send("GET", status_url, None, &[], None);
        assert_eq!(r.status, 200, "{}", r.text);
        let job = r.json()["results"].clone();
        if job["phase"] == "succeeded" || job["phase"] == "failed" {
            return job;
        }
        assert!(Instant::now() < deadline, "job did not end: {job}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn run(server: &Server, body: &Value) -> Value {
    let r = start(server, body);
    assert_eq!(r.status, 202, "{}", r.text);
    let results = r.json()["results"].clone();
    let url = results["status_url"].as_str().unwrap().to_owned();
    assert_eq!(url, format!("/migrate/jobs/{}", results["job_id"].as_str().unwrap()));
    wait_job(server, &url)
}

pub(crate) fn count_events(server: &Server, p: i64, who: &Account) -> usize {
    let mut n = 0;
    let mut cursor = String::new();
    loop {
        let r = server.get(&format!("/api/app/projects/{p}/events?limit=1000{cursor}"), who);
        assert_eq!(r.status, 200, "{}", r.text);
        let body = r.json();
        n += body["results"].as_array().unwrap().len();
        match body["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return n,
        }
    }
}

fn server_for(backend: Backend, source: &source_tool::SourceTool, max_events: u64) -> Server {
    let jobs = JobsConfig {
        amplitude_url: format!("{}/us", source.base),
        amplitude_eu_url: format!("{}/eu", source.base),
        max_migration_events: max_events,
        ..JobsConfig::default()
    };
    Server::start_with_on(backend, Config { jobs, ..Config::default() })
}

fn every_problem_of_the_body_is_answered_400(backend: Backend) {
    let source = source_tool::start(vec![], 0);
    let server = server_for(backend, &source, 1000);
    let r = start(&server, &json!({"SOURCE_API_KEY": 5, "START_DATE": "2026-13-01", "REGION": "US", "EXTRA": 1}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json()["status"], "error");
    let msg = r.json()["error"].as_str().unwrap().to_owned();
    for field in ["SOURCE_API_KEY", "SOURCE_API_SECRET", "TARGET_TOKEN", "START_DATE", "REGION", "EXTRA"] {
        assert!(msg.contains(field), "{field} not in {msg}");
    }
    let body = json!({"SOURCE_API_KEY": "k", "SOURCE_API_SECRET": "s", "TARGET_TOKEN": "no-such-token"});
    let r = server.send("POST", "/migrate/other-tool", None, &[("Content-Type", "application/json")], Some(body.to_string().into_bytes()));
    assert_eq!(r.status, 400);
    let msg = r.json()["error"].as_str().unwrap().to_owned();
    assert!(msg.contains("other-tool") && msg.contains("TARGET_TOKEN"), "{msg}");
    let r = server.send("POST", "/migrate/amplitude", None, &[], Some(b"{not json".to_vec()));
    assert_eq!(r.status, 400);
    assert_eq!(server.send("GET", "/migrate/jobs/nope", None, &[], None).status, 404);
    assert!(source.seen.lock().unwrap().is_empty(), "nothing is exported for a refused request");
}

fn dry_run_then_run_then_rerun_without_duplicates(backend: Backend) {
    let t = today();
    let (d1, d2) = (t.add_days(-2), t.add_days(-1));
    let per_day = 300;
    let source = source_tool::start(vec![d1, d2], per_day);
    let server = server_for(backend, &source, 1_000_000);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let body = json!({
        "SOURCE_API_KEY": source_tool::KEY, "SOURCE_API_SECRET": source_tool::SECRET, "TARGET_TOKEN": project.token,
        "START_DATE": t.add_days(-5).to_string(), "END_DATE": d2.to_string(),
    });
    let total = (2 * per_day) as u64;
    let users = 7;

    let mut dry = body.clone();
    dry["DRY_RUN"] = json!(true);
    let job = run(&server, &dry);
    assert_eq!(job["phase"], "succeeded", "{job}");
    assert_eq!(job["dry_run"], true);
    // The counts of a dry run are those of the real run: every record, what would be loaded, and
    // what the checks refuse; nothing is stored.
    assert_eq!(job["events"], json!({"counted": total + 2, "loaded": total, "rejected": 2}), "{job}");
    assert_eq!(job["profiles"]["counted"], users);
    assert_eq!(job["profiles"]["loaded"], users);
    assert_eq!(count_events(&server, project.id, &owner), 0, "a dry run writes nothing");

    for round in 0..2 {
        let job = run(&server, &body);
        assert_eq!(job["phase"], "succeeded", "round {round}: {job}");
        assert_eq!(job["events"], json!({"counted": total + 2, "loaded": total, "rejected": 2}), "{job}");
        assert_eq!(job["profiles"]["loaded"], users);
        assert_eq!(job["start_date"], t.add_days(-5).to_string());
        assert!(job["errors"][0].as_str().unwrap().contains("event_type"), "{job}");
        assert_eq!(count_events(&server, project.id, &owner) as u64, total, "round {round}: no duplicates");
    }
    let r = server.get(&format!("/api/app/projects/{}/profiles/user-1", project.id), &owner);
    assert_eq!(r.status, 200, "{}", r.text);
    // The latest value wins: user-1's last event is on the second day.
    assert!(r.text.contains(&d2.to_string()), "{}", r.text);
    let r = server.get(&format!("/api/app/projects/{}/events?limit=1&event=Purchase", project.id), &owner);
    let props = &r.json()["results"][0]["properties"];
    assert_eq!(props["$os"], "iOS");
    assert!(props["$insert_id"].as_str().unwrap().chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));

    // No dates: the 30 days up to today; REGION EU: the EU host. Still no duplicates.
    let mut eu = body.clone();
    eu.as_object_mut().unwrap().remove("START_DATE");
    eu.as_object_mut().unwrap().remove("END_DATE");
    eu["REGION"] = json!("EU");
    let job = run(&server, &eu);
    assert_eq!(job["phase"], "succeeded", "{job}");
    assert_eq!(job["events"]["loaded"], total);
    let day = |d: Date| d.to_string().replace('-', "");
    let last = source.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last, format!("eu {}T00 {}T23", day(t.add_days(-29)), day(t)));
    assert_eq!(count_events(&server, project.id, &owner) as u64, total);
    assert!(source.seen.lock().unwrap()[..3].iter().all(|s| s.starts_with("us ")));
}

fn wrong_credentials_and_too_many_events_fail_before_loading(backend: Backend) {
    let t = today();
    let source = source_tool::start(vec![t.add_days(-1)], 50);
    let server = server_for(backend, &source, 20);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let body = json!({"SOURCE_API_KEY": source_tool::KEY, "SOURCE_API_SECRET": "wrong-secret-xyz", "TARGET_TOKEN": project.token});
    let job = run(&server, &body);
    assert_eq!(job["phase"], "failed", "{job}");
    let text = job.to_string();
    assert!(text.contains("SOURCE_API_SECRET") && !text.contains("wrong-secret-xyz"), "{text}");

    let mut body = body;
    body["SOURCE_API_SECRET"] = json!(source_tool::SECRET);
    let job = run(&server, &body);
    assert_eq!(job["phase"], "failed", "{job}");
    assert_eq!(job["events"]["counted"], 51, "50 events and the line the transform rejects");
    assert_eq!(job["events"]["loaded"], 0);
    assert!(job["errors"].to_string().contains("under 20 events"), "{job}");
    assert_eq!(count_events(&server, project.id, &owner), 0);

    // A range without data: the source answers 404, the job succeeds with nothing.
    body["START_DATE"] = json!(t.add_days(-10).to_string());
    body["END_DATE"] = json!(t.add_days(-9).to_string());
    let job = run(&server, &body);
    assert_eq!(job["phase"], "succeeded", "{job}");
    assert_eq!(job["events"]["counted"], 0);
}

/// `POST /migrate/{source_tool}` reads bodies up to the JSON body limit of the other JSON routes:
/// a body 1 KiB over it is answered 413 with the error body naming the limit in bytes, and one
/// 1 KiB under it is read (and refused for what it holds: 400 naming the unknown field).
fn a_body_over_the_json_limit_is_answered_413(backend: Backend) {
    let source = source_tool::start(vec![], 0);
    let server = server_for(backend, &source, 1000);
    let headers = [("Content-Type", "application/json")];
    let limit = crate::common::JSON_BODY_LIMIT;
    let r = server.send("POST", "/migrate/amplitude", None, &headers, Some(crate::common::padded_object(limit + 1024)));
    assert_eq!(r.status, 413, "{}", r.text);
    assert_eq!(r.json()["status"], "error");
    let msg = r.json()["error"].as_str().unwrap().to_owned();
    assert!(msg.contains(&limit.to_string()), "the limit {limit} is not in: {msg}");
    // Far over the limit too: the body is read to its end, so the client gets the answer rather
    // than a connection closed while it was still sending.
    let r = server.send("POST", "/migrate/amplitude", None, &headers, Some(crate::common::padded_object(3 * limit)));
    assert_eq!(r.status, 413, "{}", r.text);
    let r = server.send("POST", "/migrate/amplitude", None, &headers, Some(crate::common::padded_object(limit - 1024)));
    assert_eq!(r.status, 400, "a body under the limit of {limit} bytes must be read: {}", &r.text[..r.text.len().min(500)]);
    assert!(r.json()["error"].as_str().unwrap().contains("`pad` is not a field of a migration request"), "{}", r.text);
    assert!(source.seen.lock().unwrap().is_empty(), "nothing is exported for a refused request");
}

on_both_stores!(every_problem_of_the_body_is_answered_400, dry_run_then_run_then_rerun_without_duplicates, wrong_credentials_and_too_many_events_fail_before_loading, a_body_over_the_json_limit_is_answered_413);
