//! `/openapi.json` is built from the router's own registrations; this test checks the document
//! against the routes from both sides: the documented operations are exactly the expected ones,
//! and every documented operation is really served (it answers neither the JSON 404 of unknown
//! paths nor a 405).

mod common;

use common::Server;
use std::collections::BTreeSet;

const EXPECTED: &[(&str, &str)] = &[
    ("delete", "/api/app/projects/{project_id}/schemas"),
    ("delete", "/api/app/projects/{project_id}/schemas/{entity_type}"),
    ("delete", "/api/app/projects/{project_id}/schemas/{entity_type}/{name}"),
    ("get", "/api/app/limits"),
    ("get", "/api/app/projects/{project_id}/event-counts"),
    ("get", "/api/app/projects/{project_id}/events"),
    ("get", "/api/app/projects/{project_id}/profiles/{distinct_id}"),
    ("get", "/api/app/projects/{project_id}/schemas"),
    ("get", "/api/app/projects/{project_id}/schemas/{entity_type}"),
    ("get", "/api/app/projects/{project_id}/schemas/{entity_type}/{name}"),
    ("post", "/api/app/projects/{project_id}/schemas"),
    ("post", "/api/app/projects/{project_id}/schemas/{entity_type}/{name}"),
    ("post", "/engage"),
    ("post", "/import"),
];

#[test]
fn the_document_lists_exactly_the_served_routes() {
    let server = Server::start();
    let r = server.send("GET", "/openapi.json", None, &[], None);
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            assert!(op["responses"]["200"].is_object(), "{method} {path} documents no 200");
            documented.insert((method.clone(), path.clone()));
        }
    }
    let expected: BTreeSet<_> = EXPECTED.iter().map(|(m, p)| ((*m).to_owned(), (*p).to_owned())).collect();
    assert_eq!(documented, expected);
    assert!(doc["components"]["securitySchemes"]["ServiceAccount"].is_object());

    for (method, path) in &documented {
        let concrete = path
            .replace("{project_id}", "1")
            .replace("{entity_type}", "event")
            .replace("{name}", "Purchase")
            .replace("{distinct_id}", "u1");
        let body = (method == "post").then(|| b"[]".to_vec());
        let r = server.send(&method.to_uppercase(), &concrete, None, &[], body);
        assert_ne!(r.status, 405, "{method} {path} is documented but not served: {}", r.text);
        let unknown = r.status == 404 && r.text.contains("no route serves");
        assert!(!unknown, "{method} {path} is documented but not served");
        // Without credentials, everything but the limits answers 401; `/engage` takes its project
        // from the updates' `$token`, and an empty batch has none: it answers 400 first.
        let want = if path.ends_with("/limits") {
            200
        } else if path == "/engage" {
            400
        } else {
            401
        };
        assert_eq!(r.status, want, "{method} {path}: {}", r.text);
    }
}
