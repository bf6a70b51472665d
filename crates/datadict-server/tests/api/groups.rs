//! `/groups` and the group read API over real HTTP (issue 19): every group operation in every
//! wire format with its answers, the token rules shared with `/engage`, and group profiles read
//! back one at a time and a page at a time.

use crate::common::{base64, form, on_both_stores, urlencode, Account, Backend, Reply, Server};
use datadict_server::store::Role;
use serde_json::{json, Value};

struct Fixture {
    server: Server,
    p: i64,
    token: String,
    owner: Account,
}

fn fixture(backend: Backend) -> Fixture {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    Fixture { p: project.id, token: project.token, owner, server }
}

impl Fixture {
    fn update(&self, id: &str, op: &str, operand: Value) -> Value {
        json!({"$token": self.token, "$group_key": "Company", "$group_id": id, op: operand})
    }

    fn group(&self, key: &str, id: &str) -> Reply {
        self.server.get(&format!("/api/app/projects/{}/groups/{}/{}", self.p, urlencode(key), urlencode(id)), &self.owner)
    }

    fn properties(&self, id: &str) -> Value {
        let r = self.group("Company", id);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"]["$properties"].clone()
    }
}

/// Every operation of the reference, applied in order; a JSON body is answered with the import's
/// body, a form or a `GET` with `1`, as on `/engage`.
fn every_group_operation_in_every_format(backend: Backend) {
    let f = fixture(backend);
    let updates = json!([
        f.update("acme", "$set", json!({"plan": "free", "seats": 1, "tags": ["a"], "region": "eu"})),
        f.update("acme", "$set_once", json!({"plan": "ignored", "founded": 1999})),
        f.update("acme", "$add", json!({"seats": 4})),
        f.update("acme", "$union", json!({"tags": ["a", "b"]})),
        f.update("acme", "$remove", json!({"tags": "a"})),
        f.update("acme", "$unset", json!(["region"])),
        f.update("gone", "$set", json!({"x": 1})),
        f.update("gone", "$delete", json!(null)),
    ]);
    let r = f.server.send("POST", "/groups", None, &[("Content-Type", "application/json")], Some(updates.to_string().into_bytes()));
    assert_eq!((r.status, r.json()), (200, json!({"code": 200, "num_records_imported": 8, "status": "OK"})), "{}", r.text);
    assert_eq!(f.properties("acme"), json!({"plan": "free", "seats": 5, "tags": ["b"], "founded": 1999}));
    assert_eq!(f.group("Company", "gone").status, 404);

    // A form with base64, a form with JSON and `verbose`, a `GET` with base64 and a pixel.
    let one = |v: i64| f.update("acme", "$set", json!({"v": v})).to_string();
    let r = f.server.send("POST", "/groups", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(form(&[("data", &base64(one(1).as_bytes()))])));
    assert_eq!((r.status, r.text.as_str()), (200, "1"));
    let r = f.server.send("POST", "/groups", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(form(&[("data", &one(2)), ("verbose", "1")])));
    assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})));
    assert_eq!(f.properties("acme")["v"], 2);
    let r = f.server.send("GET", &format!("/groups?data={}", urlencode(&base64(one(3).as_bytes()))), None, &[], None);
    assert_eq!((r.status, r.text.as_str()), (200, "1"));
    let r = f.server.send("GET", &format!("/groups?img=1&data={}", urlencode(&one(4))), None, &[], None);
    assert_eq!((r.status, r.header("content-type")), (200, Some("image/gif")));
    assert_eq!(f.properties("acme")["v"], 4);
    // NDJSON, and a numeric `$group_id`, which names the group of that text.
    let lines = format!("{}\n{}\n", f.update("7", "$set", json!({"n": 1})), json!({"$token": f.token, "$group_key": "Company", "$group_id": 7, "$add": {"n": 1}}));
    let r = f.server.send("POST", "/groups?strict=1", None, &[("Content-Type", "application/x-ndjson")], Some(lines.into_bytes()));
    assert_eq!(r.json()["num_records_imported"], 2, "{}", r.text);
    assert_eq!(f.properties("7"), json!({"n": 2}));
}

/// Invalid updates are reported and the valid ones applied; `$append` is no group operation;
/// the token rules are `/engage`'s.
fn refusals_and_tokens(backend: Backend) {
    let f = fixture(backend);
    let updates = json!([
        f.update("acme", "$set", json!({"plan": "pro"})),
        f.update("acme", "$append", json!({"tags": "x"})),
        {"$token": f.token, "$group_id": "acme", "$set": {}},
        f.update("acme", "$add", json!({"plan": "one"})),
    ]);
    let r = f.server.send("POST", "/groups?strict=1", None, &[], Some(updates.to_string().into_bytes()));
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!(body["num_records_imported"], 1);
    let failed: Vec<(u64, &str)> = body["failed_records"].as_array().unwrap().iter().map(|f| (f["index"].as_u64().unwrap(), f["field"].as_str().unwrap())).collect();
    assert_eq!(failed, [(1, "$append"), (1, ""), (2, "$group_key"), (3, "$add.plan")]);
    assert!(body["failed_records"][0]["message"].as_str().unwrap().contains("not an operation of a group profile update"));
    // The same as a form with `verbose`: applied 1 of 4, said in the error.
    let r = f.server.send("POST", "/groups?verbose=1", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(form(&[("data", &updates.to_string())])));
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().starts_with("applied 1 of 4 updates; update 1: `$append` is not an operation"), "{}", r.text);

    // No token, a token of no project: 401, in the asked style; another project's: refused.
    let no_token = json!([{"$group_key": "Company", "$group_id": "acme", "$set": {"x": 1}}]).to_string();
    let r = f.server.send("POST", "/groups", None, &[], Some(no_token.clone().into_bytes()));
    assert_eq!((r.status, r.json()["error"].clone()), (401, json!("Invalid credentials")));
    let r = f.server.send("GET", &format!("/groups?verbose=1&data={}", urlencode(&no_token)), None, &[], None);
    assert_eq!(r.status, 401);
    assert!(r.json()["error"].as_str().unwrap().contains("no update carries `$token`"), "{}", r.text);
    let other = f.server.project("other");
    let theirs = json!([f.update("acme", "$set", json!({"mine": true})), {"$token": other.token, "$group_key": "Company", "$group_id": "acme", "$set": {"theirs": true}}]);
    let r = f.server.send("POST", "/groups", None, &[], Some(theirs.to_string().into_bytes()));
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (200, json!(1)), "{}", r.text);
    assert_eq!(f.properties("acme")["mine"], true);
    assert_eq!(f.properties("acme").get("theirs"), None);
    // A service account writes without `$token`.
    let path = format!("/groups?strict=1&project_id={}", f.p);
    let r = f.server.send("POST", &path, Some((&f.owner.username, &f.owner.secret)), &[], Some(no_token.into_bytes()));
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (200, json!(1)), "{}", r.text);
}

/// Group updates that cannot be read, sent without an `Authorization` header and naming no
/// project, are a 400 listing their problems in the asked style, as on `/engage`, not a 401.
fn unreadable_updates_naming_no_project_are_a_400_not_a_401(backend: Backend) {
    let f = fixture(backend);
    let cut = f.update("acme", "$set", json!({"x": 1})).to_string();
    let cut = &cut[..cut.len() - 1];
    let mut not_utf8 = format!(r#"{{"$token":"{}","$group_key":"Company","$group_id":"acme","$set":{{"x":""#, f.token).into_bytes();
    not_utf8.extend_from_slice(b"\xff\"}}");
    // A form's `data` cut short is refused by the wire format already, whatever its token.
    let cases: [(&str, &[u8], &str, &str); 2] = [
        ("cut short", cut.as_bytes(), "the update is not valid JSON (EOF while parsing", "the JSON object is not closed"),
        ("not UTF-8", &not_utf8, "the update is not UTF-8 text", "applied 0 of 1 updates; update 0: the update is not UTF-8 text"),
    ];
    for (what, body, says, form_says) in cases {
        let r = f.server.send("POST", "/groups", None, &[("Content-Type", "application/json")], Some(body.to_vec()));
        assert_eq!(r.status, 400, "{what}: {}", r.text);
        let answer = r.json();
        assert_eq!((answer["num_records_imported"].clone(), answer["failed_records"][0]["index"].clone()), (json!(0), json!(0)), "{what}: {answer}");
        assert!(answer["failed_records"][0]["message"].as_str().unwrap().starts_with(says), "{what}: {answer}");
        let r = f.server.send("POST", "/groups?verbose=1", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(form(&[("data", &base64(body))])));
        assert_eq!(r.status, 400, "{what}: {}", r.text);
        let error = r.json()["error"].as_str().unwrap().to_owned();
        assert!(error.starts_with(form_says), "{what}: {error}");
        let r = f.server.send("POST", "/groups", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(form(&[("data", &base64(body))])));
        assert_eq!((r.status, r.text.as_str()), (400, "0"), "{what}");
    }
    assert_eq!(f.group("Company", "acme").status, 404);
}

/// The read API: one group by key and id, and every group a page at a time, of one key or all.
fn groups_are_read_one_at_a_time_and_by_page(backend: Backend) {
    let f = fixture(backend);
    let mut updates = Vec::new();
    for key in ["Company", "Team", "Odd/Key ?&"] {
        for i in 0..5 {
            updates.push(json!({"$token": f.token, "$group_key": key, "$group_id": format!("g{i}"), "$set": {"i": i}}));
        }
    }
    let r = f.server.send("POST", "/groups", None, &[], Some(Value::Array(updates).to_string().into_bytes()));
    assert_eq!(r.status, 200, "{}", r.text);
    let r = f.group("Odd/Key ?&", "g3");
    assert_eq!((r.status, r.json()), (200, json!({"results": {"$group_key": "Odd/Key ?&", "$group_id": "g3", "$properties": {"i": 3}}, "status": "ok"})));
    let r = f.group("Company", "nope");
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("`Company`/`nope`"), "{}", r.text);

    let page = |query: &str| {
        let r = f.server.get(&format!("/api/app/projects/{}/groups?{query}", f.p), &f.owner);
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        r.json()
    };
    let mut seen = Vec::new();
    let mut query = "limit=4".to_owned();
    loop {
        let body = page(&query);
        seen.extend(body["results"].as_array().unwrap().iter().map(|g| format!("{}/{}", g["$group_key"].as_str().unwrap(), g["$group_id"].as_str().unwrap())));
        match body["next_after"].as_str() {
            Some(after) => query = format!("limit=4&after={after}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 15);
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted, "in key and id order, each once");
    let teams = page("group_key=Team&limit=100");
    assert_eq!(teams["results"].as_array().unwrap().len(), 5);
    assert_eq!(teams["next_after"], Value::Null);
    for (query, says) in [("limit=0", "limit"), ("after=garbage!", "not a cursor")] {
        let r = f.server.get(&format!("/api/app/projects/{}/groups?{query}", f.p), &f.owner);
        assert_eq!(r.status, 400, "{query}");
        assert!(r.json()["error"].as_str().unwrap().contains(says), "{query}: {}", r.text);
    }
    // Readers need a role in the project.
    let stranger = f.server.account("stranger", f.p, None);
    assert_eq!(f.server.get(&format!("/api/app/projects/{}/groups", f.p), &stranger).status, 403);
    assert_eq!(f.server.send("GET", &format!("/api/app/projects/{}/groups/Company/g1", f.p), None, &[], None).status, 401);
}

on_both_stores!(
    every_group_operation_in_every_format,
    refusals_and_tokens,
    unreadable_updates_naming_no_project_are_a_400_not_a_401,
    groups_are_read_one_at_a_time_and_by_page,
);
