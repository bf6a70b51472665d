//! The service's own browser tracking library (npm `mixpanel-browser`, pinned in
//! `tests/clients/package.json`, installed by `cargo xtask setup`), pointed at datadict from a
//! page on another origin, in headless Chromium and Firefox: the way an application under test
//! sends. One instance of the library sends each call at once (its callbacks get the server's
//! answers), another keeps its default, batches sent from a queue; both identify a user, track
//! events (one by `sendBeacon`), set profile properties, and one sets a group's. The test reads
//! everything back through the read API. Written after the library's requests were found lost:
//! it posts to `/track/` (with the slash), and adds identity fields to profile updates.

use crate::tracking_page_e2e::{events_named, read_when, PageServer, WAIT};
use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use serde_json::{json, Value};
use std::path::Path;

/// The library's browser build, as `cargo xtask setup` installs it.
fn library() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/node_modules/mixpanel-browser/dist/mixpanel.umd.js");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {} ({e}): run `cargo xtask setup`, which installs it with npm ci", path.display()))
}

/// The page: the library from `/lib.js`, then a script that uses it as an application does and
/// records in `window.results` what each call's callback got.
fn page(api: &str, token: &str) -> String {
    let script = r#"
const results = {};
window.results = results;
window.addEventListener('error', (e) => { results.error = String(e.message); });
const direct = mixpanel.init(TOKEN, {api_host: API, batch_requests: false, persistence_name: 'direct'}, 'direct');
direct.identify('lib-visitor');
direct.track('Library Event', {plan: 'pro'}, (r) => { results.track = r; });
direct.people.set({plan: 'pro', seats: 2}, (r) => { results.people = r; });
direct.get_group('Company', 'lib-co').set({name: 'Lib Co'}, (r) => { results.group = r; });
direct.track('Library Beacon', {via: 'beacon'}, {transport: 'sendBeacon'});
const batched = mixpanel.init(TOKEN, {api_host: API, batch_flush_interval_ms: 100, persistence_name: 'batched'}, 'batched');
batched.identify('lib-batched');
batched.track('Batched Event', {n: 1});
batched.people.set({tier: 'gold'});
results.sent = true;
"#;
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>An app with the library</title><script src=\"/lib.js\"></script></head>\
         <body><h1>An app with the library</h1><script>const API = {api}; const TOKEN = {token};{script}</script></body></html>",
        api = Value::from(api),
        token = Value::from(token),
    )
}

/// The `$properties` of the profile at `path` (`/profiles/ID` or `/groups/KEY/ID`), waiting until
/// they hold `key`: a batch is sent whenever the library's queue is flushed, and the profile may
/// exist before the update under test arrives. On `identify` the library sends a `$set_once` of
/// `$initial_referrer` in an earlier flush than the `$set` (read back in between once in Firefox,
/// under CI's load). An update that never arrives still fails, with the profile as it was.
fn profile(server: &TestServer, path: &str, key: &str) -> serde_json::Map<String, Value> {
    let body = read_when(server, path, &format!("profile at {path} with `{key}`"), |status, body| {
        status == 200 && body["results"]["$properties"].get(key).is_some()
    });
    body["results"]["$properties"].as_object().cloned().unwrap_or_default()
}

fn the_library_tracks_from_another_origin(browser: Browser) {
    let server = TestServer::start(None);
    let api = server.url("");
    let files = vec![
        ("/", "text/html; charset=utf-8", page(api.trim_end_matches('/'), &server.demo.project_token)),
        ("/lib.js", "text/javascript", library()),
    ];
    let pages = PageServer::serve(files);
    let page_url = format!("http://{}/", pages.addr);
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    session.goto(&page_url).unwrap();
    session
        .wait_for("window.results && (window.results.error || ['track', 'people', 'group'].every((k) => k in window.results))", "the library's callbacks", WAIT)
        .unwrap();
    let results = session.script("return window.results;").unwrap();
    assert!(results.get("error").is_none(), "the page failed: {results}");
    for call in ["track", "people", "group"] {
        // The library passes `1`, or with `verbose` the server's `{"status": 1, ...}`.
        let answer = &results[call];
        assert!(answer == &json!(1) || answer["status"] == 1, "{call}: the server's answer as the library saw it: {results}");
    }

    for (name, distinct_id) in [("Library Event", "lib-visitor"), ("Library Beacon", "lib-visitor"), ("Batched Event", "lib-batched")] {
        let events = events_named(&server, name);
        assert_eq!(events.len(), 1, "{name}: {events:?}");
        let props = &events[0]["properties"];
        assert_eq!(props["distinct_id"], distinct_id, "{name}: {props}");
        assert_eq!(props["mp_lib"], "web", "{name}: sent by the library: {props}");
        assert_eq!(props["$current_url"], page_url.as_str(), "{name}: {props}");
        assert!(props["$insert_id"].is_string() && props["time"].is_number(), "{name}: {props}");
        assert!(props.get("token").is_none(), "{name}: the token is not stored: {props}");
    }
    assert_eq!(events_named(&server, "Library Event")[0]["properties"]["plan"], "pro");

    let visitor = profile(&server, "/profiles/lib-visitor", "plan");
    assert_eq!((&visitor["plan"], &visitor["seats"]), (&json!("pro"), &json!(2)), "{visitor:?}");
    assert!(!visitor.contains_key("$device_id"), "the library's identity fields are not properties: {visitor:?}");
    assert_eq!(profile(&server, "/profiles/lib-batched", "tier")["tier"], "gold");
    assert_eq!(profile(&server, "/groups/Company/lib-co", "name")["name"], "Lib Co");
}

#[test]
fn chromium_the_library_tracks_from_another_origin() {
    the_library_tracks_from_another_origin(Browser::Chromium);
}

#[test]
fn firefox_the_library_tracks_from_another_origin() {
    the_library_tracks_from_another_origin(Browser::Firefox);
}
