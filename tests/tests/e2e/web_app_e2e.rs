//! End-to-end of the web app's screens against the real server, in headless Chromium and Firefox:
//! the dictionary (search, filters, detail), creating and editing an entity with validation shown
//! at the field, a dictionary name that looks like HTML rendered as text, bulk upload with its
//! preview, an import with invalid lines reported by line number while the valid events arrive
//! (read API), and 401/403 explained in words. Screenshots go to `tests/artifacts/`.

use datadict_server::admin;
use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir, sign_in_as_demo};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn walk_through_the_app(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let pid = server.demo.project_id;
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let shot = |name: &str| session.screenshot(&artifacts_dir().join(format!("web-{}-{name}.png", browser.name()))).unwrap();
    session.goto(&server.url("/")).unwrap();

    // 403 in words: valid credentials of an account without access to the demo project.
    let outsider = admin::create_service_account(&server.store, "outsider").unwrap();
    session.type_into("#project-id", &pid.to_string()).unwrap();
    session.type_into("#username", &outsider.username).unwrap();
    session.type_into("#secret", &outsider.secret).unwrap();
    session.click("#test-connection").unwrap();
    session.wait_for("document.querySelector('#test-result')", "the 403 message", WAIT).unwrap();
    let text = session.text_of("#test-result");
    // The core's words (`datadict_core::status`), with the project named.
    assert!(text.starts_with(&format!("the credentials are valid but lack permission on project {pid} (403)")), "{text}");
    // 401 in words.
    session.type_into("#username", &server.demo.username).unwrap();
    session.type_into("#secret", "wrong").unwrap();
    session.click("#test-connection").unwrap();
    session.wait_for("(document.querySelector('#test-result')||{}).innerText?.startsWith('the server rejected the credentials (401)')", "the 401 message", WAIT).unwrap();
    shot("settings-401");

    // Sign in; the demo dictionary's four events.
    session.type_into("#secret", &server.demo.secret).unwrap();
    session.click("#connect").unwrap();
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the demo's four events", WAIT).unwrap();
    shot("dictionary");

    // Search and filters.
    session.type_into("#search", "purchase").unwrap();
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 1", "one row for `purchase`", WAIT).unwrap();
    session.set_value("#search", "");
    session.set_value("#status-filter", "dropped");
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 1", "one dropped event", WAIT).unwrap();
    assert!(session.text_of("#schema-list").contains("Debug Ping"));
    session.set_value("#status-filter", "");
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "all four again", WAIT).unwrap();

    // The user-profile tab lists the `$user` schema, and back.
    session.click_js("#tab-profile");
    session.wait_for("document.querySelector(\"tr[data-name='$user']\") && document.querySelectorAll('#schema-list .schema-row').length === 1", "the profile schema", WAIT).unwrap();
    session.click_js("#tab-event");
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the events again", WAIT).unwrap();

    // Create an entity whose name looks like HTML; a bad contact is shown at its field first.
    let evil = "<img src=x onerror=\"window.__xss=1\">Checkout";
    session.click_js("#new-entity");
    session.type_into("#entity-name", evil).unwrap();
    session.type_into("#entity-display", "<b>bold?</b>").unwrap();
    session.type_into("#entity-contacts", "not-an-address").unwrap();
    session.wait_for("document.querySelector('#entity-contacts-errors')", "the contact error at its field", WAIT).unwrap();
    assert!(session.text_of("#entity-contacts-errors").contains("not-an-address"));
    assert_eq!(session.script("return document.querySelector('#save-entity').disabled;").unwrap(), json!(true));
    session.click_js("#add-property");
    session.type_into("#prop-1-name", "amount").unwrap();
    shot("entity-form-error");
    session.set_value("#entity-contacts", "owner@example.com");
    session.wait_for("!document.querySelector('#entity-contacts-errors') && !document.querySelector('#save-entity').disabled", "the form to be valid", WAIT).unwrap();
    session.click_js("#save-entity");
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 5", "the new event in the table", WAIT).unwrap();
    // Rendered as text: no element was made from the name, and the literal text is on the page.
    assert_eq!(session.script("return document.querySelectorAll('img, #schema-list b, #detail b').length;").unwrap(), json!(0));
    assert_eq!(session.script("return window.__xss === undefined;").unwrap(), json!(true));
    assert!(session.text_of("#schema-list").contains("<b>bold?</b>"));
    assert!(session.text_of("#detail").contains(evil), "the detail panel shows the name as text");
    let (status, body) = server.call("GET", &format!("/api/app/projects/{pid}/schemas/event"), Some(&server.demo_auth()), None);
    assert_eq!(status, 200);
    let created = body["results"].as_array().unwrap().iter().find(|e| e["name"] == evil).expect("the event is stored").clone();
    assert_eq!(created["schemaJson"]["properties"]["amount"]["type"], "string");
    assert_eq!(created["schemaJson"]["metadata"]["com.vendor"]["contacts"], json!(["owner@example.com"]));
    shot("xss-as-text");

    // Edit Purchase: new description, hidden.
    session.click_js("tr[data-name='Purchase'] .open-detail");
    session.wait_for("document.querySelector('#edit-entity')", "the detail panel", WAIT).unwrap();
    assert!(session.text_of("#property-list").contains("price"), "the properties table");
    assert!(session.text_of("#schema-json").contains("\"properties\""), "the schema JSON");
    shot("detail");
    session.click_js("#edit-entity");
    session.set_value("#entity-description", "An order was paid");
    session.click_js("#entity-hidden");
    session.click_js("#save-entity");
    session.wait_for("(document.querySelector(\"tr[data-name='Purchase'] .status\")||{}).innerText === 'hidden'", "Purchase hidden", WAIT).unwrap();
    let (_, body) = server.call("GET", &format!("/api/app/projects/{pid}/schemas/event/Purchase"), Some(&server.demo_auth()), None);
    assert_eq!(body["description"], "An order was paid");
    assert_eq!(body["metadata"]["com.vendor"]["hidden"], true);

    // Bulk upload: one added, one changed; nothing is sent before the button.
    session.click_js("#bulk-upload");
    let file = json!({"entries": [
        {"entityType": "event", "name": "Bulk Added", "schemaJson": {"description": "from a file"}},
        {"entityType": "event", "name": "Page View", "schemaJson": {"description": "changed by the file"}}
    ]});
    session.pick_file("#bulk-file", "dictionary.json", &file.to_string());
    session.wait_for("document.querySelector('#bulk-preview')", "the preview", WAIT).unwrap();
    assert_eq!(session.text_of("#bulk-added"), "Added: 1");
    assert_eq!(session.text_of("#bulk-changed"), "Changed: 1");
    let (_, before) = server.call("GET", &format!("/api/app/projects/{pid}/schemas/event"), Some(&server.demo_auth()), None);
    assert!(!before.to_string().contains("Bulk Added"), "nothing is sent before confirming");
    shot("bulk-preview");
    session.click_js("#bulk-send");
    session.wait_for("document.querySelector('#bulk-done')", "the upload result", WAIT).unwrap();
    session.wait_for("document.querySelector(\"tr[data-name='Bulk Added']\")", "the uploaded event in the table", WAIT).unwrap();
    let (_, body) = server.call("GET", &format!("/api/app/projects/{pid}/schemas/event/Page%20View"), Some(&server.demo_auth()), None);
    assert_eq!(body["description"], "changed by the file");

    // Import: 10 lines, lines 3 and 7 invalid.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let mut ndjson = String::new();
    for line in 1..=10 {
        let record = match line {
            3 => json!({"event": "Purchase", "properties": {"time": now, "$insert_id": "no-distinct-id-3"}}),
            7 => json!({"event": "Purchase", "properties": {"time": now, "distinct_id": "u7", "$insert_id": "bad:id"}}),
            _ => json!({"event": "Web Import", "properties": {"time": now - line, "distinct_id": format!("u{line}"), "$insert_id": format!("web-import-{line}")}}),
        };
        ndjson.push_str(&record.to_string());
        ndjson.push('\n');
    }
    session.click_js("#nav-import");
    session.pick_file("#import-file", "events.ndjson", &ndjson);
    session.wait_for("!document.querySelector('#import-check').disabled", "the check button", WAIT).unwrap();
    session.click_js("#import-check");
    session.wait_for("document.querySelector('#by-problem')", "the check summary", WAIT).unwrap();
    assert!(session.text_of("#import-phase").starts_with("Checked"), "{}", session.text_of("#import-phase"));
    let summary = session.text_of("#check-summary");
    assert!(summary.contains("10 records"), "{summary}");
    assert!(summary.contains("Web Import"), "the undocumented event is in the summary by event: {summary}");
    shot("import-checked");
    session.click_js("#import-upload");
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Finished')", "the upload to finish", WAIT).unwrap();
    let lines = session.script("return [...document.querySelectorAll('#import-report .report-row')].map(r => r.dataset.line);").unwrap();
    let mut lines: Vec<String> = lines.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    lines.dedup();
    assert_eq!(lines, ["3", "7"], "the report names the input lines of the rejected records");
    assert!(session.text_of("#stat-events").starts_with("8 / 8"), "{}", session.text_of("#stat-events"));
    shot("import-finished");
    let (status, body) = server.call("GET", &format!("/api/app/projects/{pid}/events?event=Web%20Import&limit=100"), Some(&server.demo_auth()), None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"].as_array().unwrap().len(), 8, "the eight valid events arrived: {body}");
    let log = session.text_of("#log-lines");
    assert!(log.contains(&format!("POST /import?strict=1&project_id={pid} → 200")), "{log}");

    // Back in the dictionary, the imported event shows as undocumented with its 30-day volume.
    session.click_js("#nav-dictionary");
    session.click_js("#reload");
    session.wait_for("(document.querySelector(\"tr[data-name='Web Import'] .volume\")||{}).innerText === '8'", "the undocumented event with volume 8", WAIT).unwrap();
    assert_eq!(session.text_of("tr[data-name='Web Import'] .status"), "undocumented");
    shot("dictionary-undocumented");

    // Copying the log either works or falls back to selectable text; nothing panicked on the way.
    session.click_js("#copy-log");
    session.wait_for("document.querySelector('#copy-log').innerText === 'Copied' || document.querySelector('#log-text')", "the log copied", WAIT).unwrap();
    assert_eq!(session.script("return document.querySelector('#fatal').hidden;").unwrap(), json!(true), "{}", session.text_of("#fatal"));
}

#[test]
fn chromium_walks_through_the_web_app() {
    walk_through_the_app(Browser::Chromium);
}

#[test]
fn firefox_walks_through_the_web_app() {
    walk_through_the_app(Browser::Firefox);
}

/// Cancel after the first acknowledged batch, then resume: the batches already acknowledged are
/// not sent again, and every event arrives once.
fn cancel_and_resume(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let pid = server.demo.project_id;
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    sign_in_as_demo(&session, &server);
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the dictionary", WAIT).unwrap();

    // 6,000 events: three batches of 2,000 (FACTS.md's per-request limit).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let ndjson: String = (0..6000)
        .map(|i| json!({"event": "Resume Test", "properties": {"time": now - i, "distinct_id": format!("u{i}"), "$insert_id": format!("resume-{i}")}}).to_string() + "\n")
        .collect();
    session.click_js("#nav-import");
    session.pick_file("#import-file", "resume.ndjson", &ndjson);
    session.set_value("#concurrency", "1");
    session.click_js("#import-check");
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Checked')", "the check", WAIT).unwrap();
    // Cancel as soon as the first batch is acknowledged (an observer reacts at once; polling over
    // WebDriver could miss the moment).
    session
        .script(
            "const stat = document.querySelector('#stat-events');
             const obs = new MutationObserver(() => { if (!stat.innerText.startsWith('0 /')) { obs.disconnect(); document.querySelector('#import-cancel').click(); } });
             obs.observe(stat, {childList: true, subtree: true, characterData: true}); document.querySelector('#import-upload').click(); return 1;",
        )
        .unwrap();
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Cancelled')", "the cancel", WAIT).unwrap();
    assert!(session.text_of("#check-counts").contains("3 batches"), "step 1's summary stays: {}", session.text_of("#check-counts"));
    let after_cancel = session.text_of("#stat-events");
    assert!(!after_cancel.starts_with("6000 /"), "the run stopped before the end: {after_cancel}");
    let posts = |s: &Session| s.text_of("#log-lines").matches("POST /import?").count();
    let sent_before = posts(&session);
    assert!((1..3).contains(&sent_before), "{sent_before} batches were sent before the cancel");
    assert_eq!(session.text_of("#import-upload"), "Resume upload");
    session.screenshot(&artifacts_dir().join(format!("web-{}-import-cancelled.png", browser.name()))).unwrap();
    session.click_js("#import-upload");
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Finished')", "the resumed upload", WAIT).unwrap();
    assert_eq!(posts(&session), 3, "each of the three batches was sent exactly once");
    assert!(session.text_of("#stat-events").starts_with("6000 / "), "{}", session.text_of("#stat-events"));
    let (status, body) = server.call("GET", &format!("/api/app/projects/{pid}/event-counts?days=30"), Some(&server.demo_auth()), None);
    assert_eq!(status, 200);
    let count = body["results"].as_array().unwrap().iter().find(|r| r["event"] == "Resume Test").map(|r| r["count"].clone());
    assert_eq!(count, Some(json!(6000)), "every event arrived once: {body}");
}

#[test]
fn chromium_cancels_and_resumes_an_import() {
    cancel_and_resume(Browser::Chromium);
}

#[test]
fn firefox_cancels_and_resumes_an_import() {
    cancel_and_resume(Browser::Firefox);
}
