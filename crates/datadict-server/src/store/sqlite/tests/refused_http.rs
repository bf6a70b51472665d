//! A failed fsync over real HTTP: the ingestion routes answer 503 for the request whose fsync
//! failed and for every write after it, each in the style its request asked for, saying why and
//! what to do; never a 200 for what may not be on disk.

use crate::store::{Store, Synchronous};
use crate::{AppState, Config};
use serde_json::{json, Value};
use std::sync::Arc;

/// Percent-encodes `s` for a form body.
fn urlencode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[test]
fn after_a_failed_fsync_the_ingestion_routes_answer_503() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("datadict.sqlite3");
    let project = crate::admin::create_project(&Store::open(&path).unwrap(), "p").unwrap();
    // The WAL's fsync goes to `/dev/null`, which cannot be fsynced: a disk that failed.
    let mut db = super::super::Sqlite::open_with(&path, Synchronous::Full).unwrap();
    db.wal = Some(Arc::new(super::super::WalFile::new("/dev/null".into())));
    let state = AppState::new(Store::from_sqlite(db).unwrap(), Arc::new(Config::default()));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = rt.block_on(async { crate::app(state) });
    rt.spawn(crate::tls::serve(listener, router, None, std::future::pending()));
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let post_with = |path: &str, headers: &[(&str, &str)], body: &str| -> (u16, String) {
        let mut request = agent.post(&format!("{base}{path}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut r = request.send(body.as_bytes()).unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    };
    let post = |path: &str, content_type: &str, body: &str| post_with(path, &[("Content-Type", content_type)], body);
    let event = |id: &str| json!({"event": "E", "properties": {"token": project.token, "distinct_id": "u", "$insert_id": id}});
    let form = |value: &Value| format!("data={}", urlencode(&value.to_string()));
    let says_why = |error: &str| error.contains("fsync of /dev/null") && error.contains("until it is restarted");

    // The request whose group's fsync fails, then one refused before it is written.
    for id in ["first", "second"] {
        let (status, text) = post("/track?verbose=1", "application/x-www-form-urlencoded", &form(&event(id)));
        assert_eq!(status, 503, "{id}: {text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["status"], 0, "{id}: {text}");
        assert!(says_why(answer["error"].as_str().unwrap()), "{id}: {text}");
        let written = answer["error"].as_str().unwrap().starts_with("the events were written but may not be on disk");
        assert_eq!(written, id == "first", "{id}: {text}");
    }
    assert_eq!(post("/track", "application/x-www-form-urlencoded", &form(&event("plain"))), (503, "0".to_owned()));
    // `/import` as a server-side sender sends it: the project token as the Basic user name.
    let auth = format!("Basic {}", base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("{}:", project.token)));
    let imported = json!([{"event": "E", "properties": {"time": 1_700_000_000_000_i64, "distinct_id": "u", "$insert_id": "imported"}}]);
    let (status, text) = post_with("/import", &[("Content-Type", "application/json"), ("Authorization", &auth)], &imported.to_string());
    assert_eq!(status, 503, "{text}");
    assert!(says_why(&text), "{text}");
    let update = json!({"$token": project.token, "$distinct_id": "u", "$set": {"plan": "pro"}});
    let (status, text) = post("/engage?verbose=1", "application/x-www-form-urlencoded", &form(&update));
    assert_eq!(status, 503, "{text}");
    assert!(says_why(&text), "{text}");
}
