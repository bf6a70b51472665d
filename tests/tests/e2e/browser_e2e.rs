//! End-to-end: the real server (real SQLite, real HTTP on 127.0.0.1) serving the built web app
//! (`dist/`, from `cargo xtask dist`), driven in headless Chromium and Firefox through WebDriver.
//! A person's path: open the app, enter the demo credentials, see the demo dictionary; and wrong
//! credentials explained in words on the page.

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir};
use std::time::Duration;

fn sign_in_and_see_the_demo_dictionary(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let shot = |name: &str| {
        let path = artifacts_dir().join(format!("{}-{name}.png", browser.name()));
        session.screenshot(&path).unwrap();
    };
    session.goto(&server.url("/")).unwrap();
    session.find("#base-url").unwrap();
    // The API base defaults to the page's own origin.
    let base = session.script("return document.querySelector('#base-url').value;").unwrap();
    assert_eq!(base.as_str().unwrap(), server.url(""));

    // A wrong secret is explained in words, on the page.
    session.type_into("#project-id", &server.demo.project_id.to_string()).unwrap();
    session.type_into("#username", &server.demo.username).unwrap();
    session.type_into("#secret", "not-the-secret").unwrap();
    session.click("#connect").unwrap();
    session.wait_for("document.querySelector('#connect-error')", "the 401 message", Duration::from_secs(30)).unwrap();
    let error = session.text(&session.find("#connect-error").unwrap()).unwrap();
    assert!(error.starts_with("the server rejected the credentials (401)"), "{error}");
    // The log is a drawer: open it from the header, read it, close it again.
    session.click("#log-toggle").unwrap();
    let log = session.text(&session.find("#log-lines").unwrap()).unwrap();
    assert!(log.contains("GET /api/app/projects/1/schemas/event → 401"), "the request is in the on-page log: {log}");
    assert!(!log.contains("not-the-secret"), "the secret never reaches the log");
    shot("settings-401");
    session.click("#close-log").unwrap();

    // The right secret shows the demo dictionary.
    session.type_into("#secret", &server.demo.secret).unwrap();
    session.click("#connect").unwrap();
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the demo's four events", Duration::from_secs(30)).unwrap();
    let rows = session.find_all("#schema-list .schema-row").unwrap();
    let names: Vec<String> = rows.iter().map(|r| session.text(r).unwrap()).collect();
    let joined = names.join("\n");
    for expected in ["Sign up", "Sign Up", "Purchase", "Page View", "Debug Ping", "revenue", "dropped", "hidden"] {
        assert!(joined.contains(expected), "`{expected}` is on the page:\n{joined}");
    }
    shot("dictionary");
}

#[test]
fn chromium_signs_in_and_shows_the_demo_dictionary() {
    sign_in_and_see_the_demo_dictionary(Browser::Chromium);
}

#[test]
fn firefox_signs_in_and_shows_the_demo_dictionary() {
    sign_in_and_see_the_demo_dictionary(Browser::Firefox);
}
