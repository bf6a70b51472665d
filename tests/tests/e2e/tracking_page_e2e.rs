//! A page that tracks like an application does (issue 19), in headless Chromium and Firefox: the
//! page is served from another origin than the datadict server (a second listener on another
//! port), and its script sends events as a tracking library would: `XMLHttpRequest` with a
//! form-encoded base64 `data=`, `navigator.sendBeacon`, an image pixel (`img=1`) and `fetch` with
//! a JSON body (which the browser sends only after a CORS preflight), then a profile update to
//! `/engage` and a group update to `/groups`, both carrying the project token in `$token`. The test
//! reads everything back through the read API: events by name, the profile and the group.

use datadict_tests::readback::{GroupProfile, UserProfile};
use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// A small HTTP server on its own port of 127.0.0.1, so that the page's origin is not the
/// datadict server's. It answers `GET` of each of its files and anything else with 404, one
/// request per connection.
pub(crate) struct PageServer {
    pub(crate) addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A file of a [`PageServer`]: its path, `Content-Type` and body.
pub(crate) type PageFile = (&'static str, &'static str, String);

impl PageServer {
    /// Serves `page` at `/`.
    fn start(page: String) -> Self {
        Self::serve(vec![("/", "text/html; charset=utf-8", page)])
    }

    pub(crate) fn serve(files: Vec<PageFile>) -> Self {
        let files = Arc::new(files);
        let listener = TcpListener::bind("127.0.0.1:0").expect("can bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    answer(stream, &files);
                }
            }
        });
        Self {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

/// Reads one request's head and answers it.
fn answer(mut stream: TcpStream, files: &[PageFile]) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let file = files.iter().find(|(path, ..)| head.starts_with(&format!("GET {path} ")));
    let (status, content_type, body) = match file {
        Some((_, content_type, body)) => ("200 OK", *content_type, body.as_str()),
        None => ("404 Not Found", "text/plain", "not found"),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes());
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A connection wakes the blocked `accept`, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The page: its script tracks against `api` with `token` and records each answer it can read in
/// `window.results`, by the name of the way it sent.
fn tracking_page(api: &str, token: &str) -> String {
    let script = r#"
const results = {};
window.results = results;
const b64 = (value) => btoa(unescape(encodeURIComponent(JSON.stringify(value))));
const form = (value) => 'data=' + encodeURIComponent(b64(value)) + '&verbose=1';
function xhr(name, path, value) {
  const x = new XMLHttpRequest();
  x.open('POST', API + path);
  x.setRequestHeader('Content-Type', 'application/x-www-form-urlencoded');
  x.onload = () => { results[name] = {status: x.status, body: x.responseText}; };
  x.onerror = () => { results[name] = {error: 'no answer (CORS refused or server down)'}; };
  x.send(form(value));
}
const event = (name, insertId) => ({event: name, properties: {token: TOKEN, distinct_id: 'visitor-1', $insert_id: insertId, page: location.href}});
xhr('xhr', '/track', event('Page Viewed', 'xhr-1'));
results.beacon = navigator.sendBeacon(API + '/track', new URLSearchParams({data: b64([event('Signed Up', 'beacon-1')])}));
const pixel = new Image();
pixel.onload = () => { results.img = {loaded: true, width: pixel.naturalWidth, height: pixel.naturalHeight}; };
pixel.onerror = () => { results.img = {error: 'the pixel did not load as an image'}; };
pixel.src = API + '/track?img=1&data=' + encodeURIComponent(b64(event('Pixel Seen', 'img-1')));
fetch(API + '/track?verbose=1', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify([event('Added To Cart', 'fetch-1')])})
  .then(async (r) => { results.fetch = {status: r.status, body: await r.text()}; })
  .catch((e) => { results.fetch = {error: String(e)}; });
xhr('engage', '/engage', [{$token: TOKEN, $distinct_id: 'visitor-1', $set: {plan: 'pro', seats: 3}}]);
xhr('groups', '/groups', [{$token: TOKEN, $group_key: 'Company', $group_id: 'acme', $set: {name: 'Acme', employees: 40}}]);
"#;
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>A tracked app</title></head><body><h1>A tracked app</h1>\
         <script>const API = {api}; const TOKEN = {token};{script}</script></body></html>",
        api = Value::from(api),
        token = Value::from(token),
    )
}

/// `GET` of the read API as the demo owner; the body as JSON.
fn read(server: &TestServer, path: &str) -> (u16, Value) {
    server.call(
        "GET",
        &format!("/api/app/projects/{}{path}", server.demo.project_id),
        Some(&server.demo_auth()),
        None,
    )
}

/// The stored events named `name`, waiting for them: a beacon is sent after the page's script
/// has run, whenever the browser chooses.
pub(crate) fn events_named(server: &TestServer, name: &str) -> Vec<Value> {
    let path = format!(
        "/events?event={}",
        datadict_core::request::percent_encode(name)
    );
    let body = read_when(server, &path, &format!("event `{name}`"), |status, body| {
        assert_eq!(status, 200, "{body}");
        body["results"].as_array().is_some_and(|events| !events.is_empty())
    });
    body["results"].as_array().cloned().unwrap_or_default()
}

/// The body of the read API's `path` once `ready` says so of its status and body, reading it
/// again until then (at most [`WAIT`]): what a page sends arrives when its browser chooses.
pub(crate) fn read_when(server: &TestServer, path: &str, what: &str, ready: impl Fn(u16, &Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = read(server, path);
        if ready(status, &body) {
            return body;
        }
        assert!(Instant::now() < deadline, "no {what} within {WAIT:?}: {status} {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tracks_from_another_origin(browser: Browser) {
    let server = TestServer::start(None);
    let api = server.url("");
    let page = PageServer::start(tracking_page(&api, &server.demo.project_token));
    let page_url = format!("http://{}/", page.addr);
    assert_ne!(
        page.addr.port(),
        server.addr.port(),
        "the page has its own origin"
    );
    let session = Session::start(browser)
        .unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    session.goto(&page_url).unwrap();
    session
        .wait_for("['xhr', 'img', 'fetch', 'engage', 'groups'].every((k) => window.results && window.results[k])", "every answer the page can read", WAIT)
        .unwrap();
    let results = session.script("return window.results;").unwrap();
    for way in ["xhr", "fetch", "engage", "groups"] {
        assert_eq!(results[way]["status"], 200, "{way}: {results}");
        let body: Value = serde_json::from_str(results[way]["body"].as_str().unwrap_or_default())
            .unwrap_or_default();
        assert_eq!(
            body,
            json!({"status": 1, "error": null}),
            "{way}: verbose's answer: {results}"
        );
    }
    assert_eq!(
        results["beacon"], true,
        "the browser queued the beacon: {results}"
    );
    assert_eq!(
        results["img"],
        json!({"loaded": true, "width": 1, "height": 1}),
        "the pixel is a 1x1 image: {results}"
    );

    // Every event, read back by name, as the page sent it (the token is not stored).
    for (name, insert_id) in [
        ("Page Viewed", "xhr-1"),
        ("Signed Up", "beacon-1"),
        ("Pixel Seen", "img-1"),
        ("Added To Cart", "fetch-1"),
    ] {
        let events = events_named(&server, name);
        assert_eq!(events.len(), 1, "{name}: {events:?}");
        let props = &events[0]["properties"];
        assert_eq!(props["distinct_id"], "visitor-1", "{name}: {props}");
        assert_eq!(props["$insert_id"], insert_id, "{name}: {props}");
        assert_eq!(props["page"], page_url.as_str(), "{name}: {props}");
        assert!(
            props.get("token").is_none(),
            "{name}: the token is not stored: {props}"
        );
        assert!(
            props["time"].is_i64() || props["time"].is_u64(),
            "{name}: the server gave the event a time: {props}"
        );
    }

    // The profile and the group, read through the read API into the tests' types.
    let (status, body) = read(&server, "/profiles/visitor-1");
    assert_eq!(status, 200, "{body}");
    let profile: UserProfile = serde_json::from_value(body["results"].clone()).unwrap();
    assert_eq!(
        profile.properties,
        *json!({"plan": "pro", "seats": 3}).as_object().unwrap()
    );
    let (status, body) = read(&server, "/groups/Company/acme");
    assert_eq!(status, 200, "{body}");
    let group: GroupProfile = serde_json::from_value(body["results"].clone()).unwrap();
    assert_eq!(
        (group.group_key.as_str(), group.group_id.as_str()),
        ("Company", "acme")
    );
    assert_eq!(
        group.properties,
        *json!({"name": "Acme", "employees": 40})
            .as_object()
            .unwrap()
    );
    let (status, body) = read(&server, "/groups?group_key=Company");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"].as_array().map(Vec::len), Some(1), "{body}");
}

#[test]
fn chromium_page_on_another_origin_tracks() {
    tracks_from_another_origin(Browser::Chromium);
}

#[test]
fn firefox_page_on_another_origin_tracks() {
    tracks_from_another_origin(Browser::Firefox);
}
