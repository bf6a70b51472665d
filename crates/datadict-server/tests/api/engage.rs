//! `POST /engage` over real HTTP: every operation, and the profile read back.

use crate::common::{gzip, on_both_stores, Backend, Server};
use datadict_server::store::{Conn, Role};
use serde_json::{json, Value};

fn every_operation_and_the_latest_value_wins(backend: Backend) {
    let server = Server::start_on(backend);
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

fn engage_answers_403_to_readers_and_429_over_the_rate_limit(backend: Backend) {
    let server = Server::start_with_on(backend, datadict_server::Config { ingest_rate_limit: Some(200), ..Default::default() });
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

/// A `Content-Encoding` other than gzip (here `br`) is answered 415 with a message naming the
/// encoding, with or without credentials, and nothing of the body is applied.
fn an_unsupported_content_encoding_is_answered_415(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let body = serde_json::to_vec(&json!([{"$token": project.token, "$distinct_id": "u1", "$set": {"plan": "pro"}}])).unwrap();
    let with_account = format!("/engage?strict=1&project_id={}", project.id);
    for (path, auth) in [("/engage?strict=1", None), (with_account.as_str(), Some((owner.username.as_str(), owner.secret.as_str())))] {
        let r = server.send("POST", path, auth, &[("Content-Encoding", "br")], Some(body.clone()));
        assert_eq!(r.status, 415, "{path}: {}", r.text);
        let json = r.json();
        assert_eq!(json["code"], 415, "{}", r.text);
        assert_eq!(json["status"], "Unsupported Media Type", "{}", r.text);
        let msg = json["error"].as_str().unwrap();
        assert!(msg.contains("`Content-Encoding: br`") && msg.contains("gzip"), "{msg}");
    }
    assert_eq!(server.get(&format!("/api/app/projects/{}/profiles/u1", project.id), &owner).status, 404);
}

/// An NDJSON body (`application/x-ndjson`, one update a line) is applied line by line, in order.
fn an_ndjson_body_is_applied_in_order(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let tok = project.token.as_str();
    let lines = format!(
        "{}\n{}\n",
        json!({"$token": tok, "$distinct_id": "u1", "$set": {"plan": "pro", "n": 1}}),
        json!({"$token": tok, "$distinct_id": "u1", "$add": {"n": 2}})
    );
    let r = server.send("POST", "/engage?strict=1", None, &[("Content-Type", "application/x-ndjson")], Some(lines.into_bytes()));
    assert_eq!((r.status, r.json()), (200, json!({"code": 200, "num_records_imported": 2, "status": "OK"})), "{}", r.text);
    let r = server.get(&format!("/api/app/projects/{}/profiles/u1", project.id), &owner);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"]["$properties"], json!({"plan": "pro", "n": 3}), "{}", r.text);
}

/// One update of exactly `bytes` bytes of compact JSON that sets `pad` on `user`.
fn update_of_size(token: &str, user: &str, bytes: usize) -> String {
    let empty = json!({"$token": token, "$distinct_id": user, "$set": {"pad": ""}}).to_string();
    let text = json!({"$token": token, "$distinct_id": user, "$set": {"pad": "x".repeat(bytes - empty.len())}}).to_string();
    assert_eq!(text.len(), bytes);
    text
}

/// FACTS.md's limit of 1 MB per update: an update of exactly the limit is applied, one byte more
/// is a failed record (strict mode: 400) whose message gives both sizes, and the rest of the batch
/// is still applied.
fn an_update_over_1_mb_is_refused_and_the_rest_applied(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let tok = project.token.as_str();
    let limit = datadict_core::Limits::default().max_profile_update_bytes;
    assert_eq!(limit, 1024 * 1024);
    let small = json!({"$token": tok, "$distinct_id": "small", "$set": {"plan": "pro"}}).to_string();
    let body = format!("[{},{},{}]", update_of_size(tok, "at-limit", limit), update_of_size(tok, "over", limit + 1), small);
    let r = server.send("POST", "/engage?strict=1", None, &[("Content-Type", "application/json")], Some(body.into_bytes()));
    assert_eq!(r.status, 400, "{}", r.text);
    let json = r.json();
    assert_eq!(json["num_records_imported"], 2, "{json}");
    let failed = json["failed_records"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{json}");
    assert_eq!(failed[0]["index"], 1, "{json}");
    let msg = failed[0]["message"].as_str().unwrap();
    assert!(msg.contains(&format!("the update is {} bytes; it must be at most {limit} bytes", limit + 1)), "{msg}");
    let profile = |user: &str| server.get(&format!("/api/app/projects/{}/profiles/{user}", project.id), &owner);
    assert_eq!(profile("at-limit").status, 200);
    assert_eq!(profile("over").status, 404, "{}", profile("over").text);
    assert_eq!(profile("small").json()["results"]["$properties"], json!({"plan": "pro"}));

    // Without strict mode the batch is answered 200 and the skipped update is counted in a header.
    let body = format!("[{},{}]", update_of_size(tok, "over", limit + 1), json!({"$token": tok, "$distinct_id": "small", "$set": {"n": 1}}));
    let r = server.send("POST", "/engage", None, &[], Some(body.into_bytes()));
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (200, json!(1)), "{}", r.text);
    assert_eq!(r.header("x-datadict-records-skipped"), Some("1"));
    assert_eq!(profile("over").status, 404);
}

/// FACTS.md's limit of 2,000 properties per profile: an update that names 2,001 is refused, and
/// so is one that would take a full profile over the limit; replacing a value of a full profile
/// is still allowed.
fn a_profile_holds_at_most_2000_properties(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let tok = project.token.as_str();
    let limit = datadict_core::Limits::default().max_profile_properties;
    assert_eq!(limit, 2000);
    let props = |n: usize| Value::Object((0..n).map(|i| (format!("p{i}"), json!(i))).collect());
    let updates = json!([
        {"$token": tok, "$distinct_id": "u1", "$set": props(limit + 1)},
        {"$token": tok, "$distinct_id": "u1", "$set": props(limit)},
        {"$token": tok, "$distinct_id": "u1", "$set": {"one_more": 1}},
        {"$token": tok, "$distinct_id": "u1", "$set": {"p0": "changed"}}
    ]);
    let r = server.send("POST", "/engage?strict=1", None, &[], Some(serde_json::to_vec(&updates).unwrap()));
    assert_eq!(r.status, 400, "{}", r.text);
    let json = r.json();
    assert_eq!(json["num_records_imported"], 2, "{json}");
    let failed = json["failed_records"].as_array().unwrap();
    let indexes: Vec<u64> = failed.iter().map(|f| f["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, vec![0, 2], "{json}");
    let first = failed[0]["message"].as_str().unwrap();
    assert!(first.contains("names 2001 properties; a profile holds at most 2000"), "{first}");
    let second = failed[1]["message"].as_str().unwrap();
    assert!(second.contains("the profile would hold 2001 properties; a profile holds at most 2000"), "{second}");
    let r = server.get(&format!("/api/app/projects/{}/profiles/u1", project.id), &owner);
    let stored = r.json()["results"]["$properties"].clone();
    assert_eq!(stored.as_object().unwrap().len(), limit);
    assert_eq!(stored["p0"], "changed");
    assert!(stored.get("one_more").is_none());
}

/// Updates that cannot be read (cut short, not UTF-8, nested past the parser's limit) or break
/// other rules, sent without an `Authorization` header and naming no project, are answered as a
/// batch of which nothing was applied (400, every problem listed), not as missing credentials:
/// their `$token` may be in them, unseen. Only updates all read and without a project's token
/// are a 401.
fn unreadable_updates_naming_no_project_are_a_400_not_a_401(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let tok = project.token.as_str();
    let json = ("Content-Type", "application/json");
    let send = |query: &str, body: &[u8]| server.send("POST", &format!("/engage{query}"), None, &[json], Some(body.to_vec()));
    let cut = format!(r#"{{"$token":"{tok}","$distinct_id":"u1","$set":{{"a":1}}"#);
    let mut not_utf8 = format!(r#"{{"$token":"{tok}","$distinct_id":"u1","$set":{{"a":""#).into_bytes();
    not_utf8.extend_from_slice(b"\xff\"}}");
    let deep = format!(r#"{{"$token":"{tok}","$distinct_id":"u1","$set":{{"a":{}1{}}}}}"#, r#"{"b":"#.repeat(127), "}".repeat(127));
    let cases: [(&str, &[u8], &str, &str); 4] = [
        ("cut short", cut.as_bytes(), "", "the update is not valid JSON (EOF while parsing"),
        ("not UTF-8", &not_utf8, "", "the update is not UTF-8 text"),
        ("127 levels deep", deep.as_bytes(), "", "the update is not valid JSON (recursion limit exceeded"),
        ("`$set` a string", br#"{"$distinct_id":"u1","$set":"abc"}"#, "$set", "`$set` is the string \"abc\""),
    ];
    for (what, body, field, says) in cases {
        // The import's body to JSON: every problem in `failed_records`.
        let r = send("", body);
        assert_eq!(r.status, 400, "{what}: {}", r.text);
        let answer = r.json();
        assert_eq!(answer["num_records_imported"], 0, "{what}: {answer}");
        let failed = answer["failed_records"].as_array().unwrap();
        let problem = failed.iter().find(|f| f["field"] == field).unwrap_or_else(|| panic!("{what}: {answer}"));
        assert!(problem["message"].as_str().unwrap().starts_with(says), "{what}: {answer}");
        // And with `verbose=1`, the tracking answer.
        let r = send("?verbose=1", body);
        assert_eq!(r.status, 400, "{what}: {}", r.text);
        let error = r.json()["error"].as_str().unwrap().to_owned();
        assert!(error.starts_with("applied 0 of 1 updates; update 0: ") && error.contains(says), "{what}: {error}");
    }
    // Every problem is listed, a `$token` of no project's among them.
    let mut batch = format!("{cut}\n").into_bytes();
    batch.extend_from_slice(json!({"$token": "not-a-token", "$distinct_id": "u1", "$set": {"a": 1}}).to_string().as_bytes());
    let r = server.send("POST", "/engage", None, &[("Content-Type", "application/x-ndjson")], Some(batch));
    assert_eq!(r.status, 400, "{}", r.text);
    let failed: Vec<(u64, String)> = r.json()["failed_records"].as_array().unwrap().iter().map(|f| (f["index"].as_u64().unwrap(), f["field"].as_str().unwrap().to_owned())).collect();
    assert_eq!(failed, [(0, String::new()), (1, "$token".to_owned())], "{}", r.text);
    assert!(r.text.contains("`$token` is not the token of any project"), "{}", r.text);
    // All read, without a project's token: 401, as before.
    let r = send("?verbose=1", br#"{"$distinct_id":"u1","$set":{"a":1}}"#);
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().starts_with("no update carries `$token`"), "{}", r.text);
    assert_eq!(server.get(&format!("/api/app/projects/{}/profiles/u1", project.id), &owner).status, 404);
}

/// The profile updates of a request and the data-quality rows they make are written in one
/// transaction: when writing the quality rows fails (here a trigger refuses them), the answer is
/// an error and no update is stored, rather than an error for updates that were stored.
fn updates_and_their_quality_rows_commit_together(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let refuse = match backend {
        Backend::Sqlite => "CREATE TRIGGER refuse_quality BEFORE INSERT ON quality_violations BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
        Backend::Postgres => {
            "CREATE FUNCTION refuse_quality() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
             CREATE TRIGGER refuse_quality BEFORE INSERT ON quality_violations FOR EACH ROW EXECUTE FUNCTION refuse_quality();"
        }
    };
    server
        .store
        .call_sync(|conn| {
            match conn {
                Conn::Sqlite(c) => c.execute_batch(refuse)?,
                Conn::Postgres(c) => c.borrow_mut().batch_execute(refuse)?,
            }
            Ok(())
        })
        .unwrap();
    // `plan` is not in the demo-less project's dictionary: the check on arrival records a
    // violation (no `$user` schema), which the trigger refuses.
    let updates = json!([{"$token": project.token, "$distinct_id": "u1", "$set": {"plan": "pro"}}]);
    let r = server.send("POST", "/engage", None, &[], Some(serde_json::to_vec(&updates).unwrap()));
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(server.get(&format!("/api/app/projects/{}/profiles/u1", project.id), &owner).status, 404);
}

/// An operation that cannot work on what a profile holds (`$add` to a list, `$append` to a
/// number, `$union` with a string, an `$add` past the largest number) is a failed record, and the
/// stored value stays as it was; `$unset` and `$remove` make no profile where there was none.
fn an_update_never_destroys_a_value_it_cannot_work_on(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let tok = project.token.as_str();
    let updates = json!([
        {"$token": tok, "$distinct_id": "u1", "$set": {"s": "str", "n": 1, "l": [1, 2], "big": 1e308}},
        {"$token": tok, "$distinct_id": "u1", "$add": {"l": 1}},
        {"$token": tok, "$distinct_id": "u1", "$append": {"n": "x"}},
        {"$token": tok, "$distinct_id": "u1", "$union": {"s": ["a"]}},
        {"$token": tok, "$distinct_id": "u1", "$add": {"big": 1e308}},
        {"$token": tok, "$distinct_id": "u1", "$add": {"n": 2}},
        {"$token": tok, "$distinct_id": "nobody", "$unset": ["a"]},
        {"$token": tok, "$distinct_id": "nobody-either", "$remove": {"a": 1}}
    ]);
    let r = server.send("POST", "/engage?strict=1", None, &[], Some(serde_json::to_vec(&updates).unwrap()));
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!(body["num_records_imported"], 4, "{body}");
    let failed: Vec<(u64, &str)> =
        body["failed_records"].as_array().unwrap().iter().map(|f| (f["index"].as_u64().unwrap(), f["field"].as_str().unwrap())).collect();
    assert_eq!(failed, vec![(1, "$add.l"), (2, "$append.n"), (3, "$union.s"), (4, "$add.big")], "{body}");
    let profile = |user: &str| server.get(&format!("/api/app/projects/{}/profiles/{user}", project.id), &owner);
    assert_eq!(profile("u1").json()["results"]["$properties"], json!({"s": "str", "n": 3, "l": [1, 2], "big": 1e308}));
    assert_eq!(profile("nobody").status, 404);
    assert_eq!(profile("nobody-either").status, 404);
}

on_both_stores!(an_update_never_destroys_a_value_it_cannot_work_on, every_operation_and_the_latest_value_wins, unreadable_updates_naming_no_project_are_a_400_not_a_401, updates_and_their_quality_rows_commit_together, engage_answers_403_to_readers_and_429_over_the_rate_limit, an_unsupported_content_encoding_is_answered_415, an_ndjson_body_is_applied_in_order, an_update_over_1_mb_is_refused_and_the_rest_applied, a_profile_holds_at_most_2000_properties);
