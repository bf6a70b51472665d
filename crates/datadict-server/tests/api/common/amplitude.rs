//! A scripted stand-in for the source tool's export API on 127.0.0.1: each request gets the next
//! canned answer (the last one is repeated), which may be an export archive built from source
//! rows, an error status with headers, or no answer at all. It records when each request came.

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use datadict_server::jobs::JobsConfig;
use datadict_server::migrate::source::SourceSettings;
use datadict_server::Config;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One answer of the stand-in.
#[derive(Debug, Clone)]
pub enum Canned {
    Answer { status: u16, headers: Vec<(&'static str, String)>, body: Vec<u8> },
    /// Accepts the request and never answers.
    Hang,
}

impl Canned {
    /// A 200 with a zip archive.
    pub fn zip(body: Vec<u8>) -> Self {
        Self::Answer { status: 200, headers: vec![("content-type", "application/zip".into())], body }
    }

    pub fn status(status: u16, headers: &[(&'static str, &str)], body: &str) -> Self {
        Self::Answer { status, headers: headers.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(), body: body.as_bytes().to_vec() }
    }
}

/// The running stand-in: `base` is its URL; `requests` the time of each request received.
pub struct Scripted {
    pub base: String,
    pub requests: Arc<Mutex<Vec<Instant>>>,
    _thread: std::thread::JoinHandle<()>,
}

#[derive(Clone)]
struct Shared {
    answers: Arc<Mutex<VecDeque<Canned>>>,
    requests: Arc<Mutex<Vec<Instant>>>,
}

async fn answer(axum::extract::State(s): axum::extract::State<Shared>) -> Response {
    s.requests.lock().unwrap().push(Instant::now());
    let answer = {
        let mut answers = s.answers.lock().unwrap();
        if answers.len() > 1 { answers.pop_front().unwrap() } else { answers[0].clone() }
    };
    match answer {
        Canned::Hang => std::future::pending().await,
        Canned::Answer { status, headers, body } => {
            let mut r = (StatusCode::from_u16(status).unwrap(), body).into_response();
            for (k, v) in headers {
                r.headers_mut().insert(HeaderName::from_static(k), HeaderValue::from_str(&v).unwrap());
            }
            r
        }
    }
}

/// Starts a stand-in giving `answers` in turn.
pub fn scripted(answers: Vec<Canned>) -> Scripted {
    assert!(!answers.is_empty());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let shared = Shared { answers: Arc::new(Mutex::new(answers.into())), requests: requests.clone() };
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route("/api/2/export", axum::routing::get(answer)).with_state(shared);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    Scripted { base: format!("http://{addr}"), requests, _thread: thread }
}

/// A server migrating from `source`, with an event limit of `max_events`, a read timeout of one
/// second and quick retries (three attempts, 10 ms apart unless the source asks for longer).
pub fn config(source: &Scripted, max_events: u64) -> Config {
    let jobs = JobsConfig { amplitude_url: source.base.clone(), amplitude_eu_url: source.base.clone(), max_migration_events: max_events, ..JobsConfig::default() };
    let mut migration_source = SourceSettings { read_timeout: Duration::from_secs(1), ..SourceSettings::default() };
    migration_source.retry.initial_backoff_ms = 10;
    migration_source.retry.max_backoff_ms = 10;
    migration_source.retry.jitter_min_ms = 0;
    migration_source.retry.jitter_max_ms = 0;
    migration_source.retry.max_attempts = 3;
    Config { jobs, migration_source, ..Config::default() }
}

/// A source row shaped like the export's (FACTS.md's fields and the others the export carries),
/// on 2024-01-01, with `fields` over the defaults.
pub fn row(fields: Value) -> Value {
    let mut base = json!({
        "$insert_id": null, "amplitude_id": 1234567890, "app": 187520, "city": "San Francisco",
        "country": "United States", "data_type": "event", "device_id": "dev-1", "event_properties": {},
        "event_time": "2024-01-01 12:00:00.123000", "event_type": "Page Viewed", "groups": {},
        "group_properties": {}, "ip_address": "203.0.113.5", "language": "English",
        "library": "amplitude-ts/2.0.0", "os_name": "Chrome", "os_version": "120", "platform": "Web",
        "region": "California", "session_id": 1704110400000_i64, "user_id": null, "user_properties": {},
        "uuid": "00000000-0000-4000-8000-000000000001", "version_name": null,
    });
    for (k, v) in fields.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

/// NDJSON of `rows` (a row given as a string is written as it is), gzipped.
pub fn gz(rows: &[Value]) -> Vec<u8> {
    let text: String = rows.iter().map(|r| match r {
        Value::String(s) => format!("{s}\n"),
        other => format!("{other}\n"),
    }).collect();
    datadict_core::gzip(text.as_bytes(), 6)
}

/// A zip archive of `members` (name, bytes as stored).
pub fn zip(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in members {
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// An export of one member holding `rows`.
pub fn export(rows: &[Value]) -> Vec<u8> {
    zip(&[("187520/187520_2024-01-01_12#0.json.gz", gz(rows))])
}

/// The §4.3 body migrating 2024-01-01 into the project of `token`.
pub fn body(token: &str, dry_run: bool) -> Value {
    json!({"SOURCE_API_KEY": "k", "SOURCE_API_SECRET": "s", "TARGET_TOKEN": token, "START_DATE": "2024-01-01", "END_DATE": "2024-01-01", "DRY_RUN": dry_run})
}
