//! End-to-end of importing profile updates from the web app's Import screen against the real
//! server, in headless Chromium and Firefox: pasted NDJSON with one update the check rejects and
//! one the server rejects, both reported by input line, while the valid updates reach the stored
//! profiles (read API). A screenshot goes to `tests/artifacts/`.

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir, sign_in_as_demo};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn import_profiles(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let pid = server.demo.project_id;
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    sign_in_as_demo(&session, &server);
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length > 0", "the dictionary after signing in", WAIT).unwrap();

    // Line 3 has two operations (the check leaves it out); line 6 carries another project's token
    // (only the server can tell). The `$set` of line 1 and the `$add` of line 4 both reach `pw1`.
    let ndjson = [
        json!({"$distinct_id": "pw1", "$set": {"plan": "pro", "seats": 3}}),
        json!({"$distinct_id": "pw2", "$set_once": {"first_seen": "2026-01-02"}}),
        json!({"$distinct_id": "pw3", "$set": {"plan": "free"}, "$add": {"seats": 1}}),
        json!({"$distinct_id": "pw1", "$add": {"seats": 2}}),
        json!({"$distinct_id": "pw2", "$union": {"tags": ["a", "b"]}}),
        json!({"$token": "not-this-projects-token", "$distinct_id": "pw6", "$set": {"plan": "pro"}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect::<Vec<_>>()
    .join("\n");

    session.click_js("#nav-import");
    session.wait_for("document.querySelector('#kind-profiles')", "the record kind choice", WAIT).unwrap();
    session.click_js("#kind-profiles");
    session.wait_for("document.querySelector('#kind-profiles').checked", "profile updates chosen", WAIT).unwrap();
    session.set_value("#import-text", &ndjson);
    session.wait_for("!document.querySelector('#use-text').disabled", "the use-text button", WAIT).unwrap();
    session.click_js("#use-text");
    session.wait_for("!document.querySelector('#import-check').disabled", "the check button", WAIT).unwrap();
    session.click_js("#import-check");
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Checked')", "the check", WAIT).unwrap();
    let counts = session.text_of("#check-counts");
    assert!(counts.starts_with("6 records; 1 with errors, left out; 1 batch."), "{counts}");
    let by_problem = session.text_of("#by-problem");
    assert!(by_problem.contains("multiple_operations") && by_problem.contains('3'), "the problem and its example line: {by_problem}");
    assert!(session.text_of("#by-operation").contains("(no single operation)"), "{}", session.text_of("#by-operation"));
    let log = session.text_of("#log-lines");
    assert!(!log.contains("POST /engage"), "nothing is sent by the check: {log}");

    session.click_js("#import-upload");
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Finished')", "the upload to finish", WAIT).unwrap();
    let rows = session
        .script("return [...document.querySelectorAll('#import-report .report-row')].map(r => [r.dataset.line, r.cells[1].innerText, r.cells[2].innerText]);")
        .unwrap();
    assert_eq!(rows, json!([["3", "check", ""], ["6", "server", "$token"]]), "the report names the input lines");
    assert!(session.text_of("#stat-events").starts_with("4 / 5"), "{}", session.text_of("#stat-events"));
    let log = session.text_of("#log-lines");
    assert!(log.contains(&format!("POST /engage?strict=1&project_id={pid} → 400")), "the strict answer listing line 6: {log}");
    assert!(!log.contains("POST /import"), "{log}");
    session.script("document.querySelector('#import-report').scrollIntoView({block: 'center'}); return true;").unwrap();
    session.screenshot(&artifacts_dir().join(format!("web-{}-profiles-imported.png", browser.name()))).unwrap();

    let profile = |id: &str| server.call("GET", &format!("/api/app/projects/{pid}/profiles/{id}"), Some(&server.demo_auth()), None);
    let (status, body) = profile("pw1");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["$properties"], json!({"plan": "pro", "seats": 5}), "{body}");
    let (status, body) = profile("pw2");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["$properties"], json!({"first_seen": "2026-01-02", "tags": ["a", "b"]}), "{body}");
    for rejected in ["pw3", "pw6"] {
        let (status, body) = profile(rejected);
        assert_eq!(status, 404, "the rejected update of `{rejected}` was not applied: {body}");
    }
}

#[test]
fn chromium_imports_profile_updates() {
    import_profiles(Browser::Chromium);
}

#[test]
fn firefox_imports_profile_updates() {
    import_profiles(Browser::Firefox);
}
