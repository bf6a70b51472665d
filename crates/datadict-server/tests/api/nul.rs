//! The character U+0000 (NUL) on both stores: PostgreSQL's `text` cannot hold it, so a name or id
//! holding it (an event name, a `distinct_id`, a profile's `$distinct_id`, a group key or id) is
//! refused with a 400 naming the field on every store, while property values and names, profile
//! and group properties and lookup-table cells, which are stored inside JSON text (or as bytes),
//! are kept and read back as sent. Never a 500.

use crate::common::{base64, form, now_ms, on_both_stores, urlencode, Account, Backend, Server};
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
    fn post(&self, path: &str, content_type: &str, body: Vec<u8>) -> crate::common::Reply {
        self.server.send("POST", path, Some((&self.owner.username, &self.owner.secret)), &[("Content-Type", content_type)], Some(body))
    }

    fn read(&self, path: &str) -> crate::common::Reply {
        self.server.get(&format!("/api/app/projects/{}/{path}", self.p), &self.owner)
    }

    fn events(&self) -> Vec<Value> {
        let r = self.read("events?limit=1000");
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"].as_array().unwrap().clone()
    }
}

/// `failed_records` of an answer as `(index, field, code)`, each message naming U+0000.
fn failures(body: &Value) -> Vec<(u64, String, String)> {
    let failed = body["failed_records"].as_array().unwrap_or_else(|| panic!("no failed_records: {body}"));
    failed
        .iter()
        .map(|f| {
            let message = f["message"].as_str().unwrap();
            assert!(message.contains("U+0000") && !message.ends_with('.'), "{message}");
            (f["index"].as_u64().unwrap(), f["field"].as_str().unwrap().to_owned(), f["code"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

fn import_refuses_nul_in_names_and_ids_and_keeps_it_in_properties(backend: Backend) {
    let f = fixture(backend);
    // A dictionary entry, so that the property whose name holds NUL is an unknown property, and
    // the check records it as a violation.
    let schema = json!({"properties": {"price": {"type": "number"}}});
    let r = f.server.post_json(&format!("/api/app/projects/{}/schemas/event/Purchase", f.p), &f.owner, &schema);
    assert_eq!(r.status, 200, "{}", r.text);
    let t = now_ms() - 60_000;
    let kept = json!({"event": "Purchase", "properties": {"time": t, "distinct_id": "u1", "$insert_id": "k-1", "note": "a\u{0}b", "n\u{0}ame": ["x\u{0}"]}});
    let events = [
        kept.clone(),
        json!({"event": "Pur\u{0}chase", "properties": {"time": t, "distinct_id": "u1", "$insert_id": "b-1"}}),
        json!({"event": "Purchase", "properties": {"time": t, "distinct_id": "u\u{0}1", "$insert_id": "b-2"}}),
    ];
    let r = f.post(&format!("/import?project_id={}&strict=1", f.p), "application/json", serde_json::to_vec(&events).unwrap());
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!(body["num_records_imported"], 1, "{body}");
    let failed: Vec<(u64, String)> = failures(&body).into_iter().map(|(i, field, _)| (i, field)).collect();
    assert_eq!(failed, [(1, "event".to_owned()), (2, "properties.distinct_id".to_owned())]);
    assert_eq!(f.events(), [kept], "the record is served back as sent, NUL and all");
    // The unknown property is counted under its name with U+FFFD for the NUL, on both stores
    // (the quality tables' rule; the record above keeps the name as sent).
    let r = f.read("violations?limit=1000");
    assert_eq!(r.status, 200, "{}", r.text);
    let violations = r.json()["results"].as_array().unwrap().clone();
    assert!(violations.iter().any(|v| v["property"] == "n\u{FFFD}ame"), "{}", r.text);
}

fn track_refuses_nul_in_the_user_id_and_keeps_it_in_a_property(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() / 1000 - 60;
    let send = |event: Value| {
        let data = base64(event.to_string().as_bytes());
        f.server.send("POST", "/track?verbose=1", None, &[("Content-Type", "application/x-www-form-urlencoded")], Some(form(&[("data", &data)])))
    };
    let r = send(json!({"event": "Seen", "properties": {"token": f.token, "time": t, "distinct_id": "u\u{0}1", "$insert_id": "t-1"}}));
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("`properties.distinct_id`") && error.contains("U+0000"), "{error}");
    let r = send(json!({"event": "Seen", "properties": {"token": f.token, "time": t, "distinct_id": "u1", "$insert_id": "t-2", "note": "a\u{0}b"}}));
    assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})), "{}", r.text);
    let events = f.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["properties"]["note"], "a\u{0}b");
}

fn engage_refuses_nul_in_the_user_id_and_keeps_it_in_a_property(backend: Backend) {
    let f = fixture(backend);
    let updates = json!([
        {"$token": f.token, "$distinct_id": "u\u{0}1", "$set": {"plan": "pro"}},
        {"$token": f.token, "$distinct_id": "u1", "$set": {"plan": "p\u{0}ro", "n\u{0}": 1}},
    ]);
    let r = f.server.send("POST", "/engage?strict=1", None, &[("Content-Type", "application/json")], Some(updates.to_string().into_bytes()));
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!(body["num_records_imported"], 1, "{body}");
    let failed: Vec<(u64, String)> = failures(&body).into_iter().map(|(i, field, _)| (i, field)).collect();
    assert_eq!(failed, [(0, "$distinct_id".to_owned())]);
    let r = f.read("profiles/u1");
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"]["$properties"], json!({"plan": "p\u{0}ro", "n\u{0}": 1}));
}

fn groups_refuse_nul_in_the_key_and_id_and_keep_it_in_a_property(backend: Backend) {
    let f = fixture(backend);
    let updates = json!([
        {"$token": f.token, "$group_key": "Com\u{0}pany", "$group_id": "acme", "$set": {"plan": "pro"}},
        {"$token": f.token, "$group_key": "Company", "$group_id": "ac\u{0}me", "$set": {"plan": "pro"}},
        {"$token": f.token, "$group_key": "Company", "$group_id": "acme", "$set": {"plan": "p\u{0}ro"}},
    ]);
    let r = f.server.send("POST", "/groups?strict=1", None, &[("Content-Type", "application/json")], Some(updates.to_string().into_bytes()));
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!(body["num_records_imported"], 1, "{body}");
    let failed: Vec<(u64, String)> = failures(&body).into_iter().map(|(i, field, _)| (i, field)).collect();
    assert_eq!(failed, [(0, "$group_key".to_owned()), (1, "$group_id".to_owned())]);
    let r = f.read(&format!("groups/Company/{}", urlencode("acme")));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"]["$properties"], json!({"plan": "p\u{0}ro"}));
}

fn lookup_cells_keep_nul(backend: Backend) {
    let f = fixture(backend);
    let r = f.server.post_json(&format!("/api/app/projects/{}/lookup-tables", f.p), &f.owner, &json!({"name": "Accounts"}));
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.json()["results"]["id"].as_str().unwrap().to_owned();
    let csv = "id,na\u{0}me\nk\u{0}1,v\u{0}1\nk2,v2\n";
    let r = f.server.send(
        "PUT",
        &format!("/lookup-tables/{id}?project_id={}", f.p),
        Some((&f.owner.username, &f.owner.secret)),
        &[("Content-Type", "text/csv")],
        Some(csv.as_bytes().to_vec()),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let r = f.read(&format!("lookup-tables/{id}?limit=100"));
    assert_eq!(r.status, 200, "{}", r.text);
    let page = r.json();
    // Keys compare bytewise on both stores, so the key holding NUL comes first.
    assert_eq!(page["results"]["rows"], json!([["k\u{0}1", "v\u{0}1"], ["k2", "v2"]]), "{page}");
    assert_eq!(page["results"]["columns"], json!(["id", "na\u{0}me"]), "{page}");
}

/// A name or id holding NUL in an address (a read filter, a profile, a group, a schema, a lookup
/// table) is answered 400 on both stores; so is a dictionary entry whose name holds it.
fn addresses_and_schema_names_with_nul_are_refused(backend: Backend) {
    let f = fixture(backend);
    let p = f.p;
    for path in [
        format!("/api/app/projects/{p}/events?distinct_id=u%001"),
        format!("/api/app/projects/{p}/events?event=a%00b"),
        format!("/api/app/projects/{p}/events?where=a=b%00"),
        format!("/api/app/projects/{p}/profiles/u%001"),
        format!("/api/app/projects/{p}/groups/Company/ac%00me"),
        format!("/api/app/projects/{p}/schemas/event/A%00b"),
        format!("/api/app/projects/{p}/violations?event=a%00b"),
        format!("/api/app/projects/{p}/lookup-tables/a%00b"),
        format!("/lookup-tables/a%00b?project_id={p}"),
    ] {
        let r = f.server.get(&path, &f.owner);
        assert_eq!(r.status, 400, "GET {path}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains("%00"), "GET {path}: {}", r.text);
    }
    let r = f.server.post_json(&format!("/api/app/projects/{p}/schemas/event/A%00b"), &f.owner, &json!({"properties": {}}));
    assert_eq!(r.status, 400, "{}", r.text);
    let entry = json!({"entries": [{"entityType": "event", "name": "A\u{0}b", "schemaJson": {}}]});
    let r = f.server.post_json(&format!("/api/app/projects/{p}/schemas"), &f.owner, &entry);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("U+0000"), "{}", r.text);
    // A property name or description holding NUL is kept: a schema is stored as JSON text.
    let schema = json!({"properties": {"x\u{0}y": {"type": "string", "description": "d\u{0}"}}});
    let r = f.server.post_json(&format!("/api/app/projects/{p}/schemas/event/Ab"), &f.owner, &schema);
    assert_eq!(r.status, 200, "{}", r.text);
    let r = f.read("schemas/event/Ab");
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains(r#""x\u0000y""#), "{}", r.text);
}

on_both_stores!(
    addresses_and_schema_names_with_nul_are_refused,
    import_refuses_nul_in_names_and_ids_and_keeps_it_in_properties,
    track_refuses_nul_in_the_user_id_and_keeps_it_in_a_property,
    engage_refuses_nul_in_the_user_id_and_keeps_it_in_a_property,
    groups_refuse_nul_in_the_key_and_id_and_keep_it_in_a_property,
    lookup_cells_keep_nul,
);
