//! End-to-end of the Warehouse and Migrate screens against the real server, in headless Chromium
//! and Firefox: field checks before creating an import, creating one from an NDJSON file, "Sync
//! now" followed to the run's end with a bad row explained, the history, the events in the read
//! API; the migration form's default range, billing warning, the core's checks shown before
//! sending, the server's 400 shown in words, and an export file migrated in the browser (transformed
//! by the core in wasm, imported through `/import` and `/engage`). Screenshots go to
//! `tests/artifacts/`.

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir, sign_in_as_demo};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn warehouse_and_migrate(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let pid = server.demo.project_id;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let file = server.data_dir.path().join("orders.ndjson");
    let lines: Vec<String> = (1..=4)
        .map(|i| json!({"id": i, "kind": "Order Placed", "ts": if i == 2 { json!("not a time") } else { json!(now - 60_000 * i) }, "user": format!("web-{i}"), "total": i * 10}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();

    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let shot = |name: &str| session.screenshot(&artifacts_dir().join(format!("jobs-{}-{name}.png", browser.name()))).unwrap();
    sign_in_as_demo(&session, &server);
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the demo dictionary", WAIT).unwrap();

    // Warehouse: empty list, field checks, create.
    session.click_js("#nav-warehouse");
    session.wait_for("document.querySelector('#wh-empty')", "the empty list", WAIT).unwrap();
    session.click_js("#wh-create-button");
    session.wait_for("document.querySelector('#wh-name-error') && document.querySelector('#wh-path-error')", "the field checks", WAIT).unwrap();
    session.set_value("#wh-source-type", "ndjson");
    session.set_value("#wh-name", "orders");
    // A file the server cannot read: the server's refusal names `source.path`, shown at the field.
    let missing = server.data_dir.path().join("missing.ndjson");
    session.set_value("#wh-path", missing.to_str().unwrap());
    session.set_value("#wh-event", "kind");
    session.set_value("#wh-time", "ts");
    session.set_value("#wh-user", "user");
    session.set_value("#wh-keys", "id");
    session.wait_for("!document.querySelector('.field-error')", "the form to be complete", WAIT).unwrap();
    shot("warehouse-form");
    session.click_js("#wh-create-button");
    session.wait_for("document.querySelector('#wh-path-error')", "the server's problem at its field", WAIT).unwrap();
    assert!(session.text_of("#wh-path-error").contains("does not exist"), "{}", session.text_of("#wh-path-error"));
    assert_eq!(session.script("return document.querySelector('#wh-path').getAttribute('aria-describedby');").unwrap(), json!("wh-path-error"));
    assert!(session.text_of("#wh-create-error").contains("fix the fields marked above"), "{}", session.text_of("#wh-create-error"));
    shot("warehouse-server-fields");
    session.set_value("#wh-path", file.to_str().unwrap());
    session.click_js("#wh-create-button");
    session.wait_for("document.querySelectorAll('#wh-imports tbody tr').length === 1", "the new import in the list", WAIT).unwrap();
    let row = session.text_of("#wh-imports tbody tr");
    assert!(row.contains("never synced") && row.contains("orders.ndjson"), "{row}");
    assert!(!row.contains(server.data_dir.path().to_str().unwrap()), "the path is shown by file name only: {row}");

    // Sync now, followed to the end.
    session.click_js("#wh-imports .sync-now");
    session.wait_for("(document.querySelector('#wh-run-status')||{}).innerText?.startsWith('succeeded')", "the run to succeed", WAIT).unwrap();
    assert_eq!(session.text_of("#wh-run-id").len(), 32);
    let status = session.text_of("#wh-run-status");
    assert!(status.contains("4 rows read, 3 loaded, 1 rejected"), "{status}");
    assert!(session.text_of("#wh-run").contains("row 2:"), "the bad row is explained");
    session.wait_for("(document.querySelector('#wh-imports .last-run')||{}).innerText?.startsWith('succeeded')", "the last run in the list", WAIT).unwrap();
    session.click_js("#wh-imports tbody tr button:nth-of-type(2)");
    session.wait_for("document.querySelectorAll('#wh-history tbody tr').length === 1", "the history", WAIT).unwrap();
    shot("warehouse-synced");
    let (code, body) = server.call("GET", &format!("/api/app/projects/{pid}/events?where=%24source%3Dwarehouse-import"), Some(&server.demo_auth()), None);
    assert_eq!(code, 200);
    assert_eq!(body["results"].as_array().unwrap().len(), 3, "{body}");

    // Migrate: the default range and the billing warning are shown; the core's checks run first.
    session.click_js("#nav-migrate");
    session.wait_for("document.querySelector('#mig-form')", "the migration form", WAIT).unwrap();
    assert!(session.text_of("#mig-default-range").contains("30 days up to today"));
    assert!(session.text_of("#mig-billing").contains("count toward the plan"));
    // A date input only holds real dates: an end in the future is the date problem to show.
    session.set_value("#mig-end", "2099-01-01");
    session.click_js("#mig-start-button");
    session.wait_for("document.querySelector('#mig-issues')", "the form's issues", WAIT).unwrap();
    let issues = session.text_of("#mig-issues");
    for field in ["Source API key is empty", "Source API secret is empty", "Project token is empty", "End date 2099-01-01 is after today"] {
        assert!(issues.contains(field), "{field} not in {issues}");
    }
    // A token of no project: the server's 400, in words.
    session.set_value("#mig-end", "");
    session.set_value("#mig-key", "k");
    session.set_value("#mig-secret", "s");
    session.set_value("#mig-token", "not-a-project-token");
    session.click_js("#mig-start-button");
    session.wait_for("document.querySelector('#mig-error') && document.querySelector('#mig-token-error')", "the server's answer at the token's field", WAIT).unwrap();
    let error = session.text_of("#mig-token-error");
    assert!(error.contains("Project token is not the token of any project"), "{error}");
    assert!(session.text_of("#mig-error").contains("fix the fields marked above"), "{}", session.text_of("#mig-error"));
    // The refusal is in the log as an error, counted by the badge.
    let log = session.script("return document.querySelector('#log-lines').textContent;").unwrap();
    assert!(log.as_str().unwrap_or_default().contains("migration refused"), "{log}");
    shot("migrate-refused");

    // Migrate a file in the browser: an export archive of 6 events (one of them not
    // transformable) for two users, transformed by the core in wasm and imported as usual.
    let day = datadict_core::Date::from_ms(now).add_days(-1);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut ndjson = String::new();
    for i in 0..6 {
        let e = json!({"event_type": "File Event", "event_time": format!("{day} 10:0{i}:00.000000"), "user_id": format!("file-user-{}", i % 2),
                       "device_id": "d", "$insert_id": format!("f:{i}"), "user_properties": {"plan": "pro"}});
        ndjson.push_str(&e.to_string());
        ndjson.push('\n');
    }
    ndjson.push_str("{\"event_type\":\"\"}\n");
    zip.start_file(format!("187/187_{day}_10#0.json.gz"), options).unwrap();
    std::io::Write::write_all(&mut zip, &datadict_core::gzip(ndjson.as_bytes(), 6)).unwrap();
    let archive = zip.finish().unwrap().into_inner();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&archive);
    let script = format!(
        "const b = atob({b64}); const a = new Uint8Array(b.length); for (let i = 0; i < b.length; i++) a[i] = b.charCodeAt(i);
         const dt = new DataTransfer(); dt.items.add(new File([a], 'export.zip', {{type: 'application/zip'}}));
         const input = document.querySelector('#mig-file-input'); input.files = dt.files;
         input.dispatchEvent(new Event('change', {{bubbles: true}})); return true;",
        b64 = Value::from(b64)
    );
    assert_eq!(session.script(&script).unwrap(), json!(true));
    session.wait_for("document.querySelector('#mig-file-done') || document.querySelector('#mig-file-error')", "the file migration to end", WAIT).unwrap();
    let text = session.text_of("#mig-file-progress");
    assert!(text.contains("6 events transformed, 1 line not transformable"), "{text}");
    assert!(text.contains("6 events imported, 0 left out by the check, 0 rejected by the server"), "{text}");
    assert!(text.contains("2 profiles set"), "{text}");
    shot("migrate-file");
    let (code, body) = server.call("GET", &format!("/api/app/projects/{pid}/events?event=File%20Event"), Some(&server.demo_auth()), None);
    assert_eq!(code, 200);
    assert_eq!(body["results"].as_array().unwrap().len(), 6, "{body}");
    let (code, body) = server.call("GET", &format!("/api/app/projects/{pid}/profiles/file-user-1"), Some(&server.demo_auth()), None);
    assert_eq!(code, 200, "{body}");
}

#[test]
fn chromium_drives_the_warehouse_and_migrate_screens() {
    warehouse_and_migrate(Browser::Chromium);
}

#[test]
fn firefox_drives_the_warehouse_and_migrate_screens() {
    warehouse_and_migrate(Browser::Firefox);
}
