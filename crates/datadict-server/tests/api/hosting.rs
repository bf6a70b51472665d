//! Hosting: the web app with its CSP, CORS, security headers, JSON 404/405, and the limits route.

use crate::common::{on_both_stores, Backend, Server};
use datadict_server::Config;
use serde_json::json;

fn the_app_is_served_with_a_csp_that_lets_its_wasm_run(backend: Backend) {
    let web = tempfile::tempdir().unwrap();
    let inline = "import init from '/app.js'; await init('/app_bg.wasm');";
    std::fs::write(
        web.path().join("index.html"),
        format!("<!doctype html><html><head><script type=\"module\">{inline}</script><script src=\"/x.js\"></script></head></html>"),
    )
    .unwrap();
    std::fs::write(web.path().join("app.js"), "export default function init() {}").unwrap();
    let server = Server::start_with_on(backend, Config { web_dir: Some(web.path().to_owned()), ..Default::default() });

    let index = server.send("GET", "/", None, &[], None);
    assert_eq!(index.status, 200);
    assert!(index.text.contains(inline));
    let csp = index.header("content-security-policy").unwrap().to_owned();
    assert!(csp.contains("script-src 'self' 'wasm-unsafe-eval'"), "{csp}");
    use base64::Engine;
    use sha2::Digest;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(inline.as_bytes()));
    assert!(csp.contains(&format!("'sha256-{hash}'")), "{csp}");
    assert!(!csp.contains("script-src 'self' 'unsafe-inline'"));
    assert!(csp.contains("frame-ancestors 'none'"));
    assert_eq!(index.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(index.header("x-frame-options"), Some("DENY"));
    // An app route falls back to index.html; a static file is served as is.
    assert!(server.send("GET", "/projects/1/dictionary", None, &[], None).text.contains(inline));
    assert!(server.send("GET", "/app.js", None, &[], None).text.contains("export default"));
    // An unknown API path is a JSON 404, not the app.
    let r = server.send("GET", "/api/app/nope", None, &[], None);
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["status"], "error");
    // So is any path under the API's own first segments, which the app's HTML answered with a
    // 200: a client of the API would have read the page as its answer.
    for path in ["/lookup-tables/?project_id=1", "/lookup-tables/a/b", "/import/x", "/track/x/", "/migrate/", "/openapi.json/"] {
        let r = server.send("GET", path, None, &[], None);
        assert_eq!((r.status, r.header("content-type")), (404, Some("application/json")), "{path}: {}", r.text);
        let route = path.split('?').next().unwrap();
        assert!(r.json()["error"].as_str().unwrap().contains(&format!("no route serves `{route}`")), "{path}: {}", r.text);
    }
    // A missing file is a JSON 404 rather than the page in its place.
    for path in ["/favicon.ico", "/app-0123.js", "/assets/x.css"] {
        let r = server.send("GET", path, None, &[], None);
        assert_eq!((r.status, r.header("content-type")), (404, Some("application/json")), "{path}: {}", r.text);
    }
    // The app's files and routes stay where they are.
    assert_eq!(server.send("HEAD", "/projects/1/dictionary", None, &[], None).status, 200);
    // So is a post to a path no route serves (the files would answer an empty 405).
    let r = server.send("POST", "/flags/", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(b"data=e30%3D".to_vec()));
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("no route serves `/flags/`"), "{}", r.text);
    assert_eq!(server.send("HEAD", "/app.js", None, &[], None).status, 200);
}

fn without_an_app_unknown_paths_and_methods_answer_json(backend: Backend) {
    let server = Server::start_on(backend);
    let r = server.send("GET", "/nothing-here", None, &[], None);
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("/openapi.json"));
    let r = server.send("DELETE", "/import", None, &[], None);
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["status"], "error");
    let r = server.send("GET", "/api/app/projects/1/schemas", None, &[], None);
    assert!(r.header("content-security-policy").unwrap().contains("'wasm-unsafe-eval'"));
    // Both name the path as the client sent it, `/api/app` included (the nested router's `Uri`
    // has lost it).
    let r = server.send("GET", "/api/app/projects/1/schemas/event/a/b", None, &[], None);
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().starts_with("no route serves `/api/app/projects/1/schemas/event/a/b`;"), "{}", r.text);
    let r = server.send("PUT", "/api/app/projects/1/schemas", None, &[], None);
    assert_eq!(r.status, 405);
    assert!(r.json()["error"].as_str().unwrap().starts_with("`PUT` is not allowed on `/api/app/projects/1/schemas`;"), "{}", r.text);
}

fn cors_allows_only_the_configured_origins(backend: Backend) {
    let server = Server::start_with_on(backend, Config { cors_origins: vec!["http://app.example".into()], ..Default::default() });
    let preflight = |origin: &str| {
        server.send(
            "OPTIONS",
            "/api/app/projects/1/schemas",
            None,
            &[("Origin", origin), ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "authorization,content-type")],
            None,
        )
    };
    let ok = preflight("http://app.example");
    assert_eq!(ok.header("access-control-allow-origin"), Some("http://app.example"));
    assert!(ok.header("access-control-allow-headers").unwrap().contains("authorization"));
    let other = preflight("http://evil.example");
    assert_eq!(other.header("access-control-allow-origin"), None);
    let r = server.send("GET", "/api/app/projects/1/schemas", None, &[("Origin", "http://app.example")], None);
    assert_eq!(r.status, 401);
    assert_eq!(r.header("access-control-allow-origin"), Some("http://app.example"));
    // Without configuration there is no CORS at all.
    let closed = Server::start_on(backend);
    let r = closed.send("GET", "/api/app/limits", None, &[("Origin", "http://app.example")], None);
    assert_eq!(r.header("access-control-allow-origin"), None);
}

fn the_limits_route_reports_what_is_enforced(backend: Backend) {
    let mut config = Config { schema_rate_limit: Some(5), ..Default::default() };
    config.limits.max_request_bytes = 2_097_152;
    let server = Server::start_with_on(backend, config);
    let r = server.send("GET", "/api/app/limits", None, &[], None);
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body["results"]["maxEventsPerRequest"], 2000);
    assert_eq!(body["results"]["maxRequestBytes"], 2_097_152);
    assert_eq!(
        body["rate_limits"],
        json!({"schema_requests_per_minute": 5, "schema_updates_per_minute": null, "schema_deletions_per_request": 3000, "ingest_bytes_per_minute": null})
    );
    assert_eq!(body["namespace"], "com.vendor");
    let limits: datadict_core::Limits = serde_json::from_value(body["results"].clone()).unwrap();
    assert_eq!(limits.max_request_bytes, 2_097_152);
}

/// The tracking routes answer CORS for any origin (echoed, with credentials), preflights
/// included, whatever the allow-list (or none); the service-account routes, `/import` among
/// them, keep the allow-list.
fn tracking_routes_answer_cors_for_any_origin_and_the_rest_keep_the_allow_list(backend: Backend) {
    let listed = Server::start_with_on(backend, Config { cors_origins: vec!["http://app.example".into()], ..Default::default() });
    let unconfigured = Server::start_on(backend);
    let origin = "http://shop.test:8080";
    for server in [&listed, &unconfigured] {
        let project = server.project("p");
        let preflight = |path: &str| {
            server.send(
                "OPTIONS",
                path,
                None,
                &[("Origin", origin), ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type,content-encoding")],
                None,
            )
        };
        for path in ["/track", "/engage", "/groups"] {
            let r = preflight(path);
            assert!(r.status < 300, "{path}: {}", r.status);
            // The page's origin, with credentials: the browser library sends `withCredentials`.
            assert_eq!(r.header("access-control-allow-origin"), Some(origin), "{path}");
            assert_eq!(r.header("access-control-allow-credentials"), Some("true"), "{path}");
            let methods = r.header("access-control-allow-methods").unwrap_or_default().to_owned();
            assert!(methods.contains("POST") && methods.contains("GET"), "{path}: {methods}");
            let headers = r.header("access-control-allow-headers").unwrap_or_default().to_ascii_lowercase();
            assert!(headers.contains("content-type") && headers.contains("content-encoding"), "{path}: {headers}");
        }
        // The answer itself, a refusal included, is readable by the page.
        let event = serde_json::json!({"event": "Cross", "properties": {"token": project.token}}).to_string();
        let r = server.send("POST", "/track?verbose=1", None, &[("Origin", origin), ("Content-Type", "application/json")], Some(event.into_bytes()));
        assert_eq!((r.status, r.header("access-control-allow-origin")), (200, Some(origin)), "{}", r.text);
        assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
        let r = server.send("POST", "/engage?verbose=1", None, &[("Origin", origin)], Some(b"data=".to_vec()));
        assert_eq!((r.status, r.header("access-control-allow-origin")), (400, Some(origin)));
        // Something that is no origin is not echoed.
        let r = server.send("POST", "/track?verbose=1", None, &[("Origin", "http://a/<script>")], Some(b"data=".to_vec()));
        assert_eq!(r.header("access-control-allow-origin"), None);
        // Not the others: an unlisted origin gets no CORS answer from them.
        for path in ["/import", "/api/app/projects/1/schemas", "/api/app/projects/1/groups"] {
            let r = preflight(path);
            assert_eq!(r.header("access-control-allow-origin"), None, "{path}");
        }
    }
    // A listed origin still gets its answer from the service-account routes, `/import` included.
    for path in ["/import", "/api/app/projects/1/schemas"] {
        let r = listed.send("OPTIONS", path, None, &[("Origin", "http://app.example"), ("Access-Control-Request-Method", "POST")], None);
        assert_eq!(r.header("access-control-allow-origin"), Some("http://app.example"), "{path}");
    }
}

on_both_stores!(
    the_app_is_served_with_a_csp_that_lets_its_wasm_run,
    without_an_app_unknown_paths_and_methods_answer_json,
    cors_allows_only_the_configured_origins,
    the_limits_route_reports_what_is_enforced,
    tracking_routes_answer_cors_for_any_origin_and_the_rest_keep_the_allow_list,
);
