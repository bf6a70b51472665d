//! `/openapi.json` is built from the router's own registrations; this test checks the document
//! against the routes from both sides: the documented operations are exactly the expected ones,
//! and every documented operation is really served (it answers neither the JSON 404 of unknown
//! paths nor a 405, but the status its handler gives a request without credentials).

use crate::common::{on_both_stores, Backend, Server};
use std::collections::BTreeSet;

const EXPECTED: &[(&str, &str)] = &[
    ("delete", "/api/app/projects/{project_id}/lookup-tables/{table_id}"),
    ("delete", "/api/app/projects/{project_id}/quality"),
    ("delete", "/api/app/projects/{project_id}/schemas"),
    ("delete", "/api/app/projects/{project_id}/schemas/{entity_type}"),
    ("delete", "/api/app/projects/{project_id}/schemas/{entity_type}/{name}"),
    ("delete", "/api/app/projects/{project_id}/warehouse-sources/imports/{import_id}"),
    ("get", "/api/app/limits"),
    ("get", "/api/app/projects/{project_id}/event-counts"),
    ("get", "/api/app/projects/{project_id}/events"),
    ("get", "/api/app/projects/{project_id}/groups"),
    ("get", "/api/app/projects/{project_id}/groups/{group_key}/{group_id}"),
    ("get", "/api/app/projects/{project_id}/lookup-tables"),
    ("get", "/api/app/projects/{project_id}/lookup-tables/{table_id}"),
    ("get", "/api/app/projects/{project_id}/migrations"),
    ("get", "/api/app/projects/{project_id}/profiles/{distinct_id}"),
    ("get", "/api/app/projects/{project_id}/quality/draft"),
    ("get", "/api/app/projects/{project_id}/quality/summary"),
    ("get", "/api/app/projects/{project_id}/rejected"),
    ("get", "/api/app/projects/{project_id}/schemas"),
    ("get", "/api/app/projects/{project_id}/schemas/{entity_type}"),
    ("get", "/api/app/projects/{project_id}/schemas/{entity_type}/{name}"),
    ("get", "/api/app/projects/{project_id}/violations"),
    ("get", "/api/app/projects/{project_id}/warehouse-sources/imports"),
    ("get", "/api/app/projects/{project_id}/warehouse-sources/imports/{import_id}"),
    ("get", "/api/app/projects/{project_id}/warehouse-sources/imports/{import_id}/runs"),
    ("get", "/api/app/projects/{project_id}/warehouse-sources/imports/{import_id}/runs/{run_id}"),
    ("get", "/engage"),
    ("get", "/groups"),
    ("get", "/import"),
    ("get", "/lookup-tables"),
    ("get", "/migrate/jobs/{job_id}"),
    ("get", "/track"),
    ("post", "/api/app/projects/{project_id}/lookup-tables"),
    ("post", "/api/app/projects/{project_id}/schemas"),
    ("post", "/api/app/projects/{project_id}/schemas/{entity_type}/{name}"),
    ("post", "/api/app/projects/{project_id}/warehouse-sources/imports"),
    ("post", "/engage"),
    ("post", "/groups"),
    ("post", "/import"),
    ("post", "/migrate/{source_tool}"),
    ("post", "/track"),
    ("put", "/api/app/projects/{project_id}/warehouse-sources/imports/{import_id}/manual-sync"),
    ("put", "/lookup-tables/{id}"),
];

/// The status a request without credentials gets from the handler of `(method, path)` and, for an
/// error, a piece of the `error` of its body (where it matters, one only that handler writes, so
/// that a 404 of the handler cannot be mistaken for the 404 of a path no route serves).
fn served_answer(method: &str, path: &str) -> (u16, Option<&'static str>) {
    match (method, path) {
        ("get", "/api/app/limits") => (200, None),
        // `/engage` and `/groups` take their project from the updates' `$token`, and an empty
        // batch has none; a JSON body is answered with the import's body.
        ("post", "/engage") => (400, Some("")),
        ("post", "/groups") => (400, Some("holds no group profile updates")),
        // `/track` takes its project from the events' token, and answers `0` (no JSON) to an
        // empty batch, or to a `GET` without `data`; so do the others to such a `GET`.
        ("post", "/track") | ("get", "/track" | "/engage" | "/groups") => (400, None),
        // The migration routes need no credentials: the project is the one of `TARGET_TOKEN`, and
        // `[]` is not the request object of spec §4.3.
        ("post", "/migrate/{source_tool}") => (400, Some("the request has")),
        ("get", "/migrate/jobs/{job_id}") => (404, Some("there is no migration job")),
        _ => (401, Some("")),
    }
}

fn the_document_lists_exactly_the_served_routes(backend: Backend) {
    let server = Server::start_on(backend);
    let r = server.send("GET", "/openapi.json", None, &[], None);
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let mut documented = BTreeSet::new();
    let mut operation_ids = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            // OpenAPI requires unique operation ids: client generators name their functions by them.
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no operationId")).to_owned();
            if let Some(first) = operation_ids.insert(id.clone(), format!("{method} {path}")) {
                panic!("operationId `{id}` names both {first} and {method} {path}");
            }
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.keys().any(|status| status.starts_with('2')), "{method} {path} documents no success");
            assert!(op["tags"].as_array().is_some_and(|t| !t.is_empty()), "{method} {path} has no tag");
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
            .replace("{distinct_id}", "u1")
            .replace("{import_id}", "1")
            .replace("{run_id}", "r1")
            .replace("{source_tool}", "amplitude")
            .replace("{job_id}", "0123456789abcdef0123456789abcdef")
            .replace("{group_key}", "Company")
            .replace("{group_id}", "acme")
            .replace("{table_id}", "f077cb07-008a-4955-8a4a-b4c163db3a87")
            .replace("{id}", "f077cb07-008a-4955-8a4a-b4c163db3a87");
        assert!(!concrete.contains('{'), "{method} {path}: give its path parameters a value");
        let body = (method == "post" || method == "put").then(|| b"[]".to_vec());
        let r = server.send(&method.to_uppercase(), &concrete, None, &[], body);
        assert_ne!(r.status, 405, "{method} {path} is documented but not served: {}", r.text);
        let unknown = r.status == 404 && r.text.contains("no route serves");
        assert!(!unknown, "{method} {path} is documented but not served");
        let (want, says) = served_answer(method, path);
        assert_eq!(r.status, want, "{method} {path}: {}", r.text);
        if let Some(says) = says {
            let error = r.json()["error"].as_str().map(str::to_owned);
            let error = error.unwrap_or_else(|| panic!("{method} {path}: not the API's error body: {}", r.text));
            assert!(error.contains(says), "{method} {path}: its handler did not answer: {}", r.text);
        }
    }
}

/// The refusals that operations share are written once (`routes::responses`), and the document
/// still lists them under each operation: 401 and 403 wherever credentials are needed, 429 on the
/// rate-limited schemas routes, and the ingestion routes' 413, 415 and 429.
fn every_operation_behind_credentials_lists_its_refusals(backend: Backend) {
    let server = Server::start_on(backend);
    let doc = server.send("GET", "/openapi.json", None, &[], None).json();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let secured = op["security"].as_array().is_some_and(|s| s.iter().any(|r| r.get("ServiceAccount").is_some()));
            if !secured {
                continue;
            }
            let mut want = vec!["401", "403"];
            if path.contains("/schemas") {
                want.push("429");
            }
            if ["/import", "/track", "/engage", "/groups"].contains(&path.as_str()) {
                want.extend(["413", "415", "429"]);
            }
            for status in want {
                let response = &op["responses"][status];
                let description = response["description"].as_str().unwrap_or_default();
                assert!(!description.is_empty(), "{method} {path} does not document {status}: {op}");
                assert_eq!(response["content"]["application/json"]["schema"]["type"], "object", "{method} {path} {status}");
            }
            checked += 1;
        }
    }
    // Every operation but the limits and the two migration routes.
    assert_eq!(checked, EXPECTED.len() - 3);
}

/// The other side: a path no route serves answers the JSON 404 that the loop above tells apart
/// from a handler's own 404, so that the check cannot pass by accident.
fn an_unserved_path_is_told_apart_from_a_handlers_404(backend: Backend) {
    let server = Server::start_on(backend);
    for path in ["/migrate/jobs/x/y", "/api/app/projects/1/warehouse-sources/nope"] {
        let r = server.send("GET", path, None, &[], None);
        assert_eq!(r.status, 404, "{path}: {}", r.text);
        assert!(r.text.contains("no route serves"), "{path}: {}", r.text);
        assert!(!r.text.contains("there is no migration job"), "{path}: {}", r.text);
    }
}

on_both_stores!(
    the_document_lists_exactly_the_served_routes,
    every_operation_behind_credentials_lists_its_refusals,
    an_unserved_path_is_told_apart_from_a_handlers_404,
);
