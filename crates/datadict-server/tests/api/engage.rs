//! `POST /engage` over real HTTP: every operation, and the profile read back.

use crate::common::{gzip, Server};
use datadict_server::store::Role;
use serde_json::{json, Value};

#[test]
fn every_operation_and_the_latest_value_wins() {
    let server = Server::start();
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let tok = project.token.as_str();
    let updates = json!([
        {"$token": tok, "$distinct_id": "u1", "$set": {"plan": "free", "$email": "a@example.com", "n": 1, "tags": ["a"]}},
        {"$token": tok, "$distinct_id": "u1", "$set": {"plan": "pro"}},
        {"$token": tok, "$distinct_id": "u1", "$set_once": {"plan": "ignored", "first_seen": "2026-01-01"}},
        {"$token": tok, "$distinct_id": "u1", "$add": {"n": 4}},
        {"$token": tok, "$distinct_id": "u1", "$union": {"tags": ["a", "b"]}},
        {"$token": tok, "$distinct_id": "u1", "$append": {"tags": "c"}},
        {"$token": tok, "$distinct_id": "u1", "$remove": {"tags": "a"}},
        {"$token": tok, "$distinct_id": "u1", "$unset": ["$email"]},
        {"$token": tok, "$distinct_id": "u2", "$set": {"plan": "free"}},
        {"$token": tok, "$distinct_id": "u2", "$delete": ""}
    ]);
    // No Authorization header: the project comes from `$token`, as on the service.
    let r = server.send("POST", "/engage?strict=1", None, &[("Content-Encoding", "gzip")], Some(gzip(&serde_json::to_vec(&updates).unwrap())));
    assert_eq!((r.status, r.json()), (200, json!({"code": 200, "num_records_imported": 10, "status": "OK"})));
    let profile = server.get(&format!("/api/app/projects/{}/profiles/u1", project.id), &owner);
    assert_eq!(
        profile.json(),
        json!({"results": {"$distinct_id": "u1", "$properties": {"plan": "pro", "n": 5, "tags": ["b", "c"], "first_seen": "2026-01-01"}}, "status": "ok"})
    );
    assert_eq!(server.get(&format!("/api/app/projects/{}/profiles/u2", project.id), &owner).status, 404);

    // Service-account auth: `$token` becomes optional; invalid updates are listed in strict mode.
    let updates = json!([
        {"$distinct_id": "u3", "$set": {"x": 1}},
        {"$distinct_id": "u3", "$add": {"x": "one"}},
        {"$distinct_id": "null", "$set": {"x": 1}},
        {"$distinct_id": "u3", "$set": {"a": 1}, "$unset": ["x"]},
        {"$token": "someone-elses", "$distinct_id": "u3", "$set": {"y": 1}}
    ]);
    let path = format!("/engage?strict=1&project_id={}", project.id);
    let r = server.send("POST", &path, Some((&owner.username, &owner.secret)), &[], Some(serde_json::to_vec(&updates).unwrap()));
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!(body["num_records_imported"], 1);
    let indexes: Vec<u64> = body["failed_records"].as_array().unwrap().iter().map(|f| f["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, vec![1, 2, 3, 4], "{body}");
    let fields: Vec<&str> = body["failed_records"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert_eq!(fields[0], "$add.x");
    assert_eq!(fields[3], "$token");
    let u3 = server.get(&format!("/api/app/projects/{}/profiles/u3", project.id), &owner).json();
    assert_eq!(u3["results"]["$properties"], json!({"x": 1}));

    // Without any credentials or token: 401 in the import's body.
    let r = server.send("POST", "/engage", None, &[], Some(br#"[{"$distinct_id": "u", "$set": {}}]"#.to_vec()));
    assert_eq!(r.status, 401);
    let r = server.send("POST", "/engage", None, &[], Some(br#"[{"$token": "wrong", "$distinct_id": "u", "$set": {}}]"#.to_vec()));
    assert_eq!((r.status, r.json()["error"].clone()), (401, Value::from("Invalid credentials")));
    let too_many: Vec<_> = (0..2001).map(|i| json!({"$token": tok, "$distinct_id": format!("u{i}"), "$set": {}})).collect();
    let r = server.send("POST", "/engage", None, &[], Some(serde_json::to_vec(&too_many).unwrap()));
    assert_eq!(r.status, 413);
}

#[test]
fn engage_answers_403_to_readers_and_429_over_the_rate_limit() {
    let server = Server::start_with(datadict_server::Config { ingest_rate_limit: Some(200), ..Default::default() });
    let project = server.project("p");
    let reader = server.account("reader", project.id, Some(Role::Consumer));
    let body = serde_json::to_vec(&json!([{"$distinct_id": "u1", "$set": {"plan": "pro"}}])).unwrap();
    let path = format!("/engage?strict=1&project_id={}", project.id);
    let r = server.send("POST", &path, Some((&reader.username, &reader.secret)), &[], Some(body.clone()));
    assert_eq!((r.status, r.json()["code"].clone()), (403, json!(403)));
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(server.send("POST", "/engage", Some((&project.token, "")), &[], Some(body.clone())));
    }
    assert_eq!(statuses[0].status, 200);
    let limited = statuses.iter().find(|r| r.status == 429).expect("no 429 within 6 requests of ~50 bytes against 200 bytes a minute");
    assert_eq!(limited.json()["error"], "Project exceeded rate limits. Please retry the request with exponential backoff.");
    assert!(limited.header("retry-after").is_some());
}
