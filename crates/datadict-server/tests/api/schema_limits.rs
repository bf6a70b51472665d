//! The schemas API's limits beyond the request rate (FACTS.md), over real HTTP: the budget of
//! events+properties written per minute, the cap on schemas removed by one request, and the
//! length of a refusal that lists problems.

use crate::common::{on_both_stores, Account, Backend, Server};
use datadict_server::ratelimit::{ManualClock, RateLimiter};
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::{json, Value};
use std::time::Duration;

fn event(name: &str, props: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> =
        props.iter().map(|p| ((*p).to_owned(), json!({"type": "string"}))).collect();
    json!({"entityType": "event", "name": name, "schemaJson": {"properties": properties}})
}

fn names(server: &Server, base: &str, owner: &Account) -> Vec<String> {
    let list = server.get(base, owner).json();
    list["results"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_owned()).collect()
}

/// A server whose update budget is `limit` events+properties a minute, on a clock the test moves,
/// with an owner of one project and the project's schemas path.
struct Budgeted {
    clock: ManualClock,
    server: Server,
    owner: Account,
    base: String,
}

fn budgeted(backend: Backend, limit: u64) -> Budgeted {
    let clock = ManualClock::default();
    let config = Config { schema_update_rate_limit: Some(limit), rate_limiter: RateLimiter::with_clock(clock.clone()), ..Default::default() };
    let server = Server::start_with_on(backend, config);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    Budgeted { clock, server, owner, base: format!("/api/app/projects/{p}/schemas") }
}

fn the_update_budget_refuses_with_429_writes_nothing_and_refills(backend: Backend) {
    let Budgeted { clock, server, owner, base } = budgeted(backend, 5);

    // One entity and two properties cost 3 of the 5.
    let r = server.post_json(&base, &owner, &json!({"entries": [event("E0", &["a", "b"])]}));
    assert_eq!(r.status, 200, "{}", r.text);

    // Two entities and one property cost 3, but 2 are left: refused, and nothing written.
    let batch = json!({"entries": [event("E1", &["a"]), event("E2", &[])]});
    let r = server.post_json(&base, &owner, &batch);
    assert_eq!(r.status, 429, "{}", r.text);
    // The missing 1 refills at 5 a minute, in 12 seconds.
    assert_eq!(r.header("retry-after"), Some("12"));
    assert_eq!(r.json()["status"], "error");
    let error = r.json()["error"].as_str().unwrap().to_owned();
    for needle in ["5 events+properties per minute", "writes 3", "nothing was written", "Retry-After"] {
        assert!(error.contains(needle), "`{needle}` missing from: {error}");
    }
    assert_eq!(names(&server, &base, &owner), ["E0"]);

    // A single create is charged the same way.
    let r = server.post_json(&format!("{base}/event/E3"), &owner, &json!({"properties": {"x": {"type": "string"}, "y": {"type": "number"}}}));
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(server.get(&format!("{base}/event/E3"), &owner).status, 404);

    // Once the budget has refilled, the same batch passes.
    clock.advance(Duration::from_secs(11));
    assert_eq!(server.post_json(&base, &owner, &batch).status, 429);
    clock.advance(Duration::from_secs(1));
    let r = server.post_json(&base, &owner, &batch);
    assert_eq!((r.status, r.json()), (200, json!({"results": {"added": 2, "deleted": 0}, "status": "ok"})));
    assert_eq!(names(&server, &base, &owner), ["E0", "E1", "E2"]);

    // A refused `truncate` upload keeps the old dictionary: its truncation is rolled back.
    let r = server.post_json(&base, &owner, &json!({"entries": [event("E9", &[])], "truncate": true}));
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(names(&server, &base, &owner), ["E0", "E1", "E2"]);
}

/// A request that alone costs more than the whole per-minute budget can never fit: it is a 400
/// that says to split it (a 429 would be retried forever), not let through on a full bucket.
/// One within the budget is charged in full.
fn a_request_over_the_whole_update_budget_is_refused_with_400(backend: Backend) {
    let Budgeted { clock, server, owner, base } = budgeted(backend, 10);

    // Ten entities of four properties: 50 units, on a full bucket of 10.
    let entries: Vec<_> = (0..10).map(|i| event(&format!("E{i}"), &["a", "b", "c", "d"])).collect();
    let one = json!({"properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}, "d": {"type": "string"}, "e": {"type": "string"}, "f": {"type": "string"}, "g": {"type": "string"}, "h": {"type": "string"}, "i": {"type": "string"}, "j": {"type": "string"}}});
    for (path, body, cost) in [(base.clone(), json!({"entries": entries}), 50), (format!("{base}/event/Big"), one, 11)] {
        let r = server.post_json(&path, &owner, &body);
        assert_eq!(r.status, 400, "{path}: {}", r.text);
        assert_eq!(r.header("retry-after"), None);
        let error = r.json()["error"].as_str().unwrap().to_owned();
        for needle in [format!("updates {cost} events+properties"), "more than the 10 a project may update per minute".into(), "nothing was written".into(), "split it".into()] {
            assert!(error.contains(&needle), "`{needle}` missing from: {error}");
        }
    }
    assert!(names(&server, &base, &owner).is_empty());

    // Exactly the budget passes, and is charged in full: the next unit waits for the refill.
    let r = server.post_json(&base, &owner, &json!({"entries": [event("A", &["a", "b", "c", "d"]), event("B", &["a", "b", "c", "d"])]}));
    assert_eq!(r.status, 200, "{}", r.text);
    let r = server.post_json(&format!("{base}/event/C"), &owner, &json!({}));
    assert_eq!((r.status, r.header("retry-after")), (429, Some("6")), "{}", r.text);
    clock.advance(Duration::from_secs(6));
    assert_eq!(server.post_json(&format!("{base}/event/C"), &owner, &json!({})).status, 200);
}

fn the_update_budget_is_off_by_default_and_reported_when_set(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let entries: Vec<_> = (0..50).map(|i| event(&format!("E{i}"), &["a", "b", "c"])).collect();
    let base = format!("/api/app/projects/{p}/schemas");
    for _ in 0..30 {
        assert_eq!(server.post_json(&base, &owner, &json!({"entries": entries})).status, 200);
    }
    let limits = server.send("GET", "/api/app/limits", None, &[], None).json();
    assert_eq!(limits["rate_limits"]["schema_updates_per_minute"], Value::Null);
    assert_eq!(limits["rate_limits"]["schema_deletions_per_request"], 3000);
}

fn deletions_over_the_cap_are_refused_and_remove_nothing(backend: Backend) {
    let server = Server::start_with_on(backend, Config { schema_deletion_limit: Some(3), ..Default::default() });
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    let mut entries: Vec<_> = (0..4).map(|i| event(&format!("E{i}"), &[])).collect();
    entries.push(json!({"entityType": "profile", "name": "$user", "schemaJson": {}}));
    assert_eq!(server.post_json(&base, &owner, &json!({"entries": entries})).status, 200);
    let all = ["$user", "E0", "E1", "E2", "E3"];
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(sorted(names(&server, &base, &owner)), all);

    // The hints name only requests that pass: the 4 event schemas are over the cap on their own,
    // so no hint suggests deleting them as a type.
    let events_over = "the 4 event schemas are over the cap on their own: raise the server's `--schema-deletion-limit` (0 removes the cap), or delete by name (`DELETE .../schemas/event/{name}`)";
    let and_profile = ", and use `DELETE .../schemas/profile` for the 1 profile schema";
    for (reply, count, hint) in [
        (server.delete(&base, &owner), 5, format!("{events_over}{and_profile}")),
        (server.delete(&format!("{base}/event"), &owner), 4, events_over.to_owned()),
        (server.post_json(&base, &owner, &json!({"entries": [event("New", &[])], "truncate": true})), 5, format!("{events_over}{and_profile}; then upload without `truncate`")),
    ] {
        assert_eq!(reply.status, 400, "{}", reply.text);
        assert_eq!(reply.json()["status"], "error");
        let error = reply.json()["error"].as_str().unwrap().to_owned();
        let expected = format!("this request would remove {count} schemas, more than the 3 one request may remove; nothing was removed; {hint}");
        assert_eq!(error, expected);
        assert!(!error.contains("`DELETE .../schemas/event`"), "{error}");
        assert_eq!(sorted(names(&server, &base, &owner)), all);
    }

    // Under the cap, the same deletes pass.
    let r = server.delete(&format!("{base}/event?entity_name=E0"), &owner);
    assert_eq!(r.json(), json!({"results": {"delete_count": 1}, "status": "ok"}));
    // With each type within the cap, the hint is a delete per type.
    let r = server.delete(&base, &owner);
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.ends_with("nothing was removed; delete one entity type at a time: `DELETE .../schemas/event` for the 3 event schemas, then `DELETE .../schemas/profile` for the 1 profile schema"), "{error}");
    let r = server.delete(&format!("{base}/event"), &owner);
    assert_eq!(r.json(), json!({"results": {"delete_count": 3}, "status": "ok"}));
    let r = server.post_json(&base, &owner, &json!({"entries": [event("New", &[])], "truncate": true}));
    assert_eq!(r.json(), json!({"results": {"added": 1, "deleted": 1}, "status": "ok"}));
    let r = server.delete(&base, &owner);
    assert_eq!(r.json(), json!({"results": {"delete_count": 1}, "status": "ok"}));
    assert!(names(&server, &base, &owner).is_empty());
}

/// A body with thousands of bad entries is counted whole, but its message lists the first 100
/// problems only (it was megabytes long), and says how many more there are.
fn a_message_lists_at_most_100_problems(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    let entries: Vec<_> = (0..5000).map(|i| json!({"entityType": "events", "name": format!("E{i}"), "schemaJson": {"properties": {"p": {"type": "text"}}}})).collect();
    let r = server.post_json(&base, &owner, &json!({"entries": entries}));
    assert_eq!(r.status, 400);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.len() < 40_000, "{} bytes", error.len());
    assert!(error.starts_with("the request has 10000 problem(s): entries[0].entityType: [invalid_enum]"), "{}", &error[..200]);
    assert!(error.contains("entries[49].schemaJson.properties.p.type") && !error.contains("entries[50]."), "{error}");
    assert!(error.ends_with("; and 9900 more not listed here (the first 100 are): fix these and send again to see the rest"), "{error}");
    assert!(names(&server, &base, &owner).is_empty());
}

on_both_stores!(the_update_budget_refuses_with_429_writes_nothing_and_refills, a_request_over_the_whole_update_budget_is_refused_with_400, the_update_budget_is_off_by_default_and_reported_when_set, deletions_over_the_cap_are_refused_and_remove_nothing, a_message_lists_at_most_100_problems);
