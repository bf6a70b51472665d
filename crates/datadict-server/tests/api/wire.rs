//! The wire formats of the ingestion routes over real HTTP (issue 19): form bodies with `data=`
//! holding JSON or base64 JSON, `GET ?data=`, the answer parameters, and the rule that no route
//! acknowledges what it did not store.

use crate::common::{base64, form, gzip, now_ms, on_both_stores, urlencode, Account, Backend, Server};
use datadict_server::admin::NewProject;
use datadict_server::store::Role;
use serde_json::{json, Value};

fn event(name: &str, t: i64, id: &str) -> Value {
    json!({"event": name, "properties": {"time": t, "distinct_id": "u1", "$insert_id": id}})
}

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

/// Issue 19's data-loss bug: `POST /import` with a form body `data=[...]&verbose=1`, as
/// server-side libraries send it, was answered `200 {"num_records_imported":0}` and its events
/// dropped. Every event of such a body is now stored, and the answer says so.
fn a_form_encoded_import_is_stored_not_acknowledged_and_dropped(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let t = now_ms() - 60_000;
    let events = json!([event("Signed Up", t, "form-1"), event("Purchase", t + 1, "form-2")]);
    let path = format!("/import?project_id={}", project.id);
    let body = format!("data={}&verbose=1", urlencode(&events.to_string()));
    let r = server.send("POST", &path, Some((&owner.username, &owner.secret)), &[FORM], Some(body.into_bytes()));
    assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})), "{}", r.text);
    let stored = server.get(&format!("/api/app/projects/{}/events?limit=10", project.id), &owner).json();
    let ids: Vec<&str> = stored["results"].as_array().unwrap().iter().map(|e| e["properties"]["$insert_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["form-2", "form-1"]);
}

/// `/import` in every framing: a form without `verbose` keeps the import's body with its counts
/// (and `strict` may be a form field), base64 `data`, a gzipped form, `GET ?data=`; a form with
/// `verbose`, `img` or `callback` gets that answer.
fn import_answers_forms_with_its_own_body(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let auth = Some((owner.username.as_str(), owner.secret.as_str()));
    let t = now_ms() - 60_000;
    let path = format!("/import?project_id={}", project.id);
    let events = |prefix: &str, n: usize| Value::Array((0..n).map(|i| event(prefix, t + i as i64, &format!("{prefix}-{i}"))).collect()).to_string();
    let ok = |n: u64| json!({"code": 200, "num_records_imported": n, "status": "OK"});

    let r = server.send("POST", &path, auth, &[FORM], Some(form(&[("data", &events("json", 2))])));
    assert_eq!((r.status, r.json()), (200, ok(2)));
    let r = server.send("POST", &path, auth, &[FORM], Some(form(&[("data", &base64(events("b64", 3).as_bytes()))])));
    assert_eq!((r.status, r.json()), (200, ok(3)));
    let r = server.send("POST", &path, auth, &[FORM, ("Content-Encoding", "gzip")], Some(gzip(&form(&[("data", &events("gz", 1))]))));
    assert_eq!((r.status, r.json()), (200, ok(1)));
    let r = server.send("GET", &format!("{path}&data={}", urlencode(&base64(events("get", 1).as_bytes()))), auth, &[], None);
    assert_eq!((r.status, r.json()), (200, ok(1)));
    let r = server.send("POST", &path, Some((&project.token, "")), &[FORM], Some(form(&[("data", &events("img", 1)), ("img", "1")])));
    assert_eq!((r.status, r.header("content-type")), (200, Some("image/gif")));
    let r = server.send("POST", &format!("{path}&callback=done"), auth, &[FORM], Some(form(&[("data", &events("cb", 1))])));
    assert_eq!((r.status, r.text.as_str()), (200, "done(1)"));

    // Strict mode from the form body: the valid event is stored, the other listed.
    let mixed = json!([event("Mixed", t, "m-1"), {"event": "Mixed", "properties": {"time": t, "distinct_id": "u1"}}]).to_string();
    let r = server.send("POST", &path, auth, &[FORM], Some(form(&[("data", &mixed), ("strict", "1")])));
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!((body["num_records_imported"].clone(), body["failed_records"][0]["field"].clone()), (json!(1), json!("properties.$insert_id")));
    // Without strict the valid one is counted and the other skipped; with nothing valid, 400.
    let r = server.send("POST", &path, auth, &[FORM], Some(form(&[("data", &mixed)])));
    assert_eq!((r.status, r.json()), (200, ok(1)));
    assert_eq!(r.header("x-datadict-records-skipped"), Some("1"));
    let none = json!([{"event": "Nothing", "properties": {}}]).to_string();
    let r = server.send("POST", &path, auth, &[FORM], Some(form(&[("data", &none)])));
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (400, json!(0)), "{}", r.text);
    let r = server.send("POST", &path, auth, &[("Content-Type", "application/json")], Some(none.into_bytes()));
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (400, json!(0)), "a JSON body of which nothing is stored: {}", r.text);

    let stored = server.get(&format!("/api/app/projects/{}/events?limit=100", project.id), &owner).json();
    assert_eq!(stored["results"].as_array().unwrap().len(), 2 + 3 + 1 + 1 + 1 + 1 + 1);
}

/// `/engage` as tracking libraries send it: a form or `GET` with base64 `data` and `$token`, no
/// `Authorization` header, answered `1`; the import's body to JSON, as always.
fn engage_takes_forms_and_gets(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let update = |op: &str, operand: Value| json!({"$token": project.token, "$distinct_id": "u1", op: operand}).to_string();
    let r = server.send("POST", "/engage", None, &[FORM], Some(form(&[("data", &base64(update("$set", json!({"plan": "pro"})).as_bytes()))])));
    assert_eq!((r.status, r.text.as_str()), (200, "1"));
    let r = server.send("GET", &format!("/engage?verbose=1&data={}", urlencode(&base64(update("$add", json!({"n": 2})).as_bytes()))), None, &[], None);
    assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})));
    let r = server.send("POST", "/engage?callback=cb", None, &[FORM], Some(form(&[("data", &update("$append", json!({"l": 1})))])));
    assert_eq!((r.status, r.text.as_str()), (200, "cb(1)"));
    let profile = server.get(&format!("/api/app/projects/{}/profiles/u1", project.id), &owner).json();
    assert_eq!(profile["results"]["$properties"], json!({"plan": "pro", "n": 2, "l": [1]}));
    // A refused update: `0`, and with `verbose` why.
    let bad = update("$add", json!({"n": "two"}));
    let r = server.send("POST", "/engage", None, &[FORM], Some(form(&[("data", &bad)])));
    assert_eq!((r.status, r.text.as_str()), (400, "0"));
    let r = server.send("POST", "/engage", None, &[FORM], Some(form(&[("data", &bad), ("verbose", "1")])));
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().starts_with("applied 0 of 1 updates; update 0: `$add.n` is the string"), "{}", r.text);
    // The issue's 401: a form with `$token` and no `Authorization` header is now applied.
    let r = server.send("POST", "/engage?verbose=1", None, &[FORM], Some(form(&[("data", &update("$set", json!({"ok": true})))])));
    assert_eq!((r.status, r.json()["status"].clone()), (200, json!(1)));
}

/// A body that cannot be read as records is a 400 (415 for an unread type) that says what was
/// found and what to send, on every route and in the style asked for; nothing is stored.
fn unreadable_bodies_say_what_was_found_and_what_to_send(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let import = format!("/import?project_id={}", project.id);
    let auth = Some((owner.username.as_str(), owner.secret.as_str()));
    // Path, credentials, `Content-Type`, body, status, a part of the error.
    type Case<'a> = (&'a str, Option<(&'a str, &'a str)>, (&'a str, &'a str), &'a [u8], u16, &'a str);
    let cases: Vec<Case> = vec![
        (import.as_str(), auth, FORM, b"verbose=1&strict=1", 400, "the body is form-encoded but has no `data` field (found `verbose`, `strict`)"),
        (import.as_str(), auth, ("Content-Type", "application/json"), b"data=%5B%5D", 400, "looks form-encoded"),
        (import.as_str(), auth, FORM, b"[{\"event\":1}]", 400, "is JSON (it starts with `[{\"event\":1}]`); send `Content-Type: application/json`"),
        (import.as_str(), auth, ("Content-Type", "text/csv"), b"a,b", 415, "`Content-Type: text/csv` is not read here"),
        (import.as_str(), auth, FORM, b"", 400, "the body holds no events"),
        ("/track?verbose=1", None, FORM, b"data=%zz", 400, "bad percent-encoding at byte 5"),
        ("/track?verbose=1", None, FORM, b"data=e30*", 400, "nor base64 (`*` at offset 3 is not a base64 character)"),
        ("/track?verbose=1", None, FORM, b"data=YWJj", 400, "what it encodes is not a JSON object or array (it starts with `abc`)"),
        ("/track?verbose=1", None, ("Content-Type", "application/x-ndjson"), b"{}\n{}", 400, "/track does not take NDJSON"),
        ("/track?verbose=1&data=%5B%5D", None, ("Content-Type", "application/json"), b"[]", 400, "`data` is in both the query string and the body"),
        ("/track?verbose=1&ip=2", None, FORM, b"data=%5B%5D", 400, "`ip=2` is not allowed; use `ip=1` or `ip=0`"),
        ("/engage?verbose=1", None, FORM, b"data=", 400, "`data` in the body is empty"),
        ("/groups?verbose=1", None, ("Content-Type", "multipart/form-data; boundary=x"), b"--x", 415, "not read here"),
    ];
    for (path, auth, content_type, body, status, says) in cases {
        let r = server.send("POST", path, auth, &[content_type], Some(body.to_vec()));
        assert_eq!(r.status, status, "{path} {body:?}: {}", r.text);
        let error = r.json()["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains(says), "{path} {body:?}: `{error}` lacks `{says}`");
    }
    // A `GET` without `data`.
    let r = server.send("GET", "/track?verbose=1&_=1", None, &[], None);
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("the query string has no `data` parameter (found `verbose`, `_`)"), "{}", r.text);
    let stored = server.get(&format!("/api/app/projects/{}/events", project.id), &owner).json();
    assert_eq!(stored["results"], json!([]));
}

/// The records each ingestion route takes, for the `project_id` tests: an event (stored under
/// `id`), a profile update or a group update, none with a token (the credentials say the project).
fn records_of(route: &str, t: i64, id: &str) -> String {
    match route {
        "/import" | "/track" => json!([event("Parameters", t, id)]),
        "/engage" => json!([{"$distinct_id": id, "$set": {"plan": "pro"}}]),
        _ => json!([{"$group_key": "Company", "$group_id": id, "$set": {"size": 3}}]),
    }
    .to_string()
}

/// A server with two projects and an owner of the first.
fn two_projects(backend: Backend) -> (Server, NewProject, NewProject, Account) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let other = server.project("other");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    (server, project, other, owner)
}

/// `project_id` is a parameter like the others: a form field counts, and wins over the query
/// string, on every route a service account may send to. It was read from the query string
/// alone, so that a form's `project_id` got "`project_id` is required". The credentials keep
/// their answers: 401 for a wrong secret whatever the form says, 403 for the project the form
/// names when the account has no role there, and the project token's project stands.
fn a_project_id_form_field_names_the_project(backend: Backend) {
    let (server, project, other, owner) = two_projects(backend);
    let auth = Some((owner.username.as_str(), owner.secret.as_str()));
    let (p, o) = (project.id.to_string(), other.id.to_string());
    let t = now_ms() - 60_000;
    for route in ["/import", "/track", "/engage", "/groups"] {
        let send = |query: &str, auth: Option<(&str, &str)>, id: &str, project_id: &str| {
            let id = format!("{id}-{}", &route[1..]);
            let body = form(&[("data", &records_of(route, t, &id)), ("project_id", project_id), ("verbose", "1")]);
            server.send("POST", &format!("{route}{query}"), auth, &[FORM], Some(body))
        };
        let r = send("", auth, "form-only", &p);
        assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})), "{route}: {}", r.text);
        // The form body wins over the query string, either way.
        let r = send(&format!("?project_id={o}"), auth, "form-wins", &p);
        assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})), "{route}: {}", r.text);
        let r = send(&format!("?project_id={p}"), auth, "refused", &o);
        assert_eq!(r.status, 403, "{route}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains(&format!("has no access to project {o}")), "{route}: {}", r.text);
        let r = send("", Some((&owner.username, "not-the-secret")), "refused", &p);
        assert_eq!(r.status, 401, "{route}: {}", r.text);
        let r = send("", Some((&project.token, "")), "refused", &o);
        assert_eq!(r.status, 403, "{route}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains(&format!("not the token of project {o}")), "{route}: {}", r.text);
        let r = send("", Some((&project.token, "")), "token", &p);
        assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})), "{route}: {}", r.text);
    }
    // A body that cannot be read may hold the `project_id`: what is wrong with it is the answer.
    let r = server.send("POST", "/import", auth, &[FORM, ("Content-Encoding", "gzip")], Some(b"project_id=1&data=%5B%5D".to_vec()));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("the body is not valid gzip"), "{}", r.text);
    let stored = server.get(&format!("/api/app/projects/{}/events?limit=10", project.id), &owner).json();
    let mut ids: Vec<&str> = stored["results"].as_array().unwrap().iter().map(|e| e["properties"]["$insert_id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["form-only-import", "form-only-track", "form-wins-import", "form-wins-track", "token-import", "token-track"]);
    assert_eq!(server.get(&format!("/api/app/projects/{}/profiles/form-wins-engage", project.id), &owner).status, 200);
    let groups = server.get(&format!("/api/app/projects/{}/groups/Company/token-groups", project.id), &owner);
    assert_eq!(groups.status, 200, "{}", groups.text);
}

/// A `project_id` given twice in one place is refused with a 400 that names it, as any other
/// parameter is. It was resolved to the last value: a 403 here, for the project the account has
/// no role in. Credentials are still judged first; nothing is stored.
fn a_repeated_project_id_is_refused(backend: Backend) {
    let (server, project, other, owner) = two_projects(backend);
    let auth = Some((owner.username.as_str(), owner.secret.as_str()));
    let (p, o) = (project.id.to_string(), other.id.to_string());
    let t = now_ms() - 60_000;
    for route in ["/import", "/track", "/engage", "/groups"] {
        let twice_in_query = format!("{route}?verbose=1&project_id={p}&project_id={o}");
        let data = records_of(route, t, "twice");
        let r = server.send("POST", &twice_in_query, auth, &[("Content-Type", "application/json")], Some(data.clone().into_bytes()));
        assert_eq!(r.status, 400, "{route}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains("`project_id` appears more than once in the query string"), "{route}: {}", r.text);
        let r = server.send("GET", &format!("{twice_in_query}&data={}", urlencode(&data)), auth, &[], None);
        assert_eq!(r.status, 400, "{route}: {}", r.text);
        let body = form(&[("data", &data), ("project_id", &p), ("project_id", &p)]);
        let r = server.send("POST", &format!("{route}?verbose=1"), auth, &[FORM], Some(body.clone()));
        assert_eq!(r.status, 400, "{route}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains("`project_id` appears more than once in the body"), "{route}: {}", r.text);
        let r = server.send("POST", &format!("{route}?verbose=1"), Some((&owner.username, "not-the-secret")), &[FORM], Some(body));
        assert_eq!(r.status, 401, "{route}: {}", r.text);
    }
    let stored = server.get(&format!("/api/app/projects/{p}/events"), &owner).json();
    assert_eq!(stored["results"], json!([]));
    assert_eq!(server.get(&format!("/api/app/projects/{p}/profiles/twice"), &owner).status, 404);
}

/// A bad value of a parameter that picks the answer (`verbose`, `img`, and `strict` on `/engage`
/// and `/groups`) is a 400 whose answer names the parameter, the value and what is allowed: the
/// verbose JSON for `verbose` (which asked for it) and `img` (a pixel could not say), inside the
/// script's call with a `callback`, the import's body for `strict`. Nothing is stored.
fn a_bad_answer_parameter_is_refused_saying_why(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let event = json!({"event": "Refused", "properties": {"token": project.token}}).to_string();
    let json_type = ("Content-Type", "application/json");
    for (query, name, value) in [("verbose=2", "verbose", "2"), ("verbose=abc", "verbose", "abc"), ("img=yes", "img", "yes"), ("verbose=1&img=2", "img", "2")] {
        let r = server.send("POST", &format!("/track?{query}"), None, &[json_type], Some(event.clone().into_bytes()));
        let says = format!("`{name}={value}` is not allowed; use `{name}=1` or `{name}=0`");
        assert_eq!((r.status, r.header("content-type")), (400, Some("application/json")), "{query}: {}", r.text);
        assert_eq!(r.json(), json!({"status": 0, "error": says}), "{query}");
    }
    // In a form body too, and on every tracking route.
    for path in ["/track", "/engage", "/groups"] {
        let r = server.send("POST", path, None, &[FORM], Some(form(&[("data", &event), ("verbose", "on")])));
        assert_eq!((r.status, r.json()["error"].clone()), (400, json!("`verbose=on` is not allowed; use `verbose=1` or `verbose=0`")), "{path}");
    }
    let r = server.send("POST", "/track?img=2&callback=app.done", None, &[json_type], Some(event.clone().into_bytes()));
    assert_eq!((r.status, r.text.as_str()), (200, r#"app.done({"status":0,"error":"`img=2` is not allowed; use `img=1` or `img=0`"})"#));
    let update = json!({"$token": project.token, "$distinct_id": "u1", "$set": {"a": 1}}).to_string();
    let r = server.send("POST", "/engage?strict=2", None, &[FORM], Some(form(&[("data", &update)])));
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json(), json!({"code": 400, "error": "`strict=2` is not allowed; use `strict=1` or `strict=0`", "status": "Bad Request"}));
    let stored = server.get(&format!("/api/app/projects/{}/events", project.id), &owner).json();
    assert_eq!(stored["results"], json!([]));
    assert_eq!(server.get(&format!("/api/app/projects/{}/profiles/u1", project.id), &owner).status, 404);
}

on_both_stores!(
    a_bad_answer_parameter_is_refused_saying_why,
    a_form_encoded_import_is_stored_not_acknowledged_and_dropped,
    import_answers_forms_with_its_own_body,
    engage_takes_forms_and_gets,
    unreadable_bodies_say_what_was_found_and_what_to_send,
    a_project_id_form_field_names_the_project,
    a_repeated_project_id_is_refused,
);
