//! The npm package's browser builds (`datadict/web` and the importer's browser entry), loaded as
//! ES modules by a plain page in headless Chromium and Firefox, importing a Blob into the real
//! server. The package must have been built by `cargo xtask npm` (`cargo xtask test` does it).

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::workspace_root;
use std::path::Path;
use std::time::Duration;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn page_with_package() -> tempfile::TempDir {
    let root = workspace_root();
    let package = root.join("target/npm");
    assert!(
        package.join("web/datadict_wasm.js").is_file() && package.join("lib/importer.web.mjs").is_file(),
        "target/npm is missing the browser builds: run `cargo xtask npm` first (`cargo xtask test` does it)"
    );
    let site = tempfile::tempdir().unwrap();
    copy_dir(&root.join("tests/data/npm-browser"), site.path());
    copy_dir(&package.join("web"), &site.path().join("pkg/web"));
    copy_dir(&package.join("lib"), &site.path().join("pkg/lib"));
    site
}

fn the_browser_build_validates_and_imports(browser: Browser) {
    let site = page_with_package();
    let server = TestServer::start(Some(site.path().to_path_buf()));
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let d = &server.demo;
    session
        .goto(&server.url(&format!("/index.html#project={}&user={}&secret={}", d.project_id, d.username, d.secret)))
        .unwrap();
    session.wait_for("window.__outcome", "the page's outcome", Duration::from_secs(60)).unwrap();
    let outcome = session.script("return window.__outcome;").unwrap();
    assert!(outcome.get("error").is_none(), "{}: {}", browser.name(), outcome["error"]);
    let codes: Vec<&str> = outcome["issueCodes"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(codes, ["entityType:invalid_enum", "name:missing_field"]);
    assert_eq!(outcome["counts"]["read"], 3, "{outcome}");
    assert_eq!(outcome["counts"]["imported"], 2, "{outcome}");
    assert_eq!(outcome["failedLines"], serde_json::json!([2]), "{outcome}");

    // The two valid events arrived; the read API shows them.
    let (status, body) = server.call(
        "GET",
        &format!("/api/app/projects/{}/events?event=Browser%20Event", d.project_id),
        Some(&server.demo_auth()),
        None,
    );
    assert_eq!(status, 200, "{body}");
    let mut ids: Vec<&str> =
        body["results"].as_array().unwrap().iter().map(|e| e["properties"]["$insert_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["npm-browser-1", "npm-browser-3"], "{body}");
}

#[test]
fn chromium_runs_the_npm_browser_build() {
    the_browser_build_validates_and_imports(Browser::Chromium);
}

#[test]
fn firefox_runs_the_npm_browser_build() {
    the_browser_build_validates_and_imports(Browser::Firefox);
}
