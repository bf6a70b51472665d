//! The wire formats of the ingestion routes over real HTTP (issue 19): form bodies with `data=`
//! holding JSON or base64 JSON, `GET ?data=`, the answer parameters, and the rule that no route
//! acknowledges what it did not store.

use crate::common::{now_ms, urlencode, Server};
use datadict_server::store::Role;
use serde_json::{json, Value};

fn event(name: &str, t: i64, id: &str) -> Value {
    json!({"event": name, "properties": {"time": t, "distinct_id": "u1", "$insert_id": id}})
}

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

/// Issue 19's data-loss bug: `POST /import` with a form body `data=[...]&verbose=1`, as
/// server-side libraries send it, was answered `200 {"num_records_imported":0}` and its events
/// dropped. Every event of such a body is now stored, and the answer says so.
#[test]
fn a_form_encoded_import_is_stored_not_acknowledged_and_dropped() {
    let server = Server::start();
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
