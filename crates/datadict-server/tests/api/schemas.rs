//! The schemas API over real HTTP: every operation of FACTS.md with its bodies and statuses.

use crate::common::{on_both_stores, Backend, Server};
use datadict_server::ratelimit::RateLimiter;
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::json;

fn purchase() -> serde_json::Value {
    json!({"entityType": "event", "name": "Purchase", "schemaJson": {
        "description": "An order was paid",
        "properties": {"price": {"type": "number"}},
        "metadata": {"com.vendor": {"tags": ["revenue"], "hidden": true, "displayName": "Buy"}}
    }})
}

fn create_list_get_replace_and_delete(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");

    let empty = server.get(&base, &owner);
    assert_eq!((empty.status, empty.json()), (200, json!({"results": [], "status": "ok"})));

    let user = json!({"entityType": "profile", "name": "$user", "schemaJson": {"description": "A user"}});
    let r = server.post_json(&base, &owner, &json!({"entries": [purchase(), user], "truncate": false}));
    assert_eq!((r.status, r.json()), (200, json!({"results": {"added": 2, "deleted": 0}, "status": "ok"})));

    let all = server.get(&base, &owner).json();
    assert_eq!(all["results"].as_array().unwrap().len(), 2);
    assert_eq!(all["results"][0], purchase());

    let events = server.get(&format!("{base}/event"), &owner).json();
    assert_eq!(events, json!({"results": [purchase()], "status": "ok"}));
    let named = server.get(&format!("{base}/event?entity_name=Purchase"), &owner).json();
    assert_eq!(named["results"].as_array().unwrap().len(), 1);
    let none = server.get(&format!("{base}/event?entity_name=Nope"), &owner).json();
    assert_eq!(none, json!({"results": [], "status": "ok"}));

    // GET one answers the bare Schema.
    let one = server.get(&format!("{base}/event/Purchase"), &owner);
    assert_eq!((one.status, one.json()), (200, purchase()["schemaJson"].clone()));
    let missing = server.get(&format!("{base}/event/Refund"), &owner);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["status"], "error");

    // Replace one: absent metadata keys are kept, null removes, the rest is replaced.
    let r = server.post_json(
        &format!("{base}/event/Purchase"),
        &owner,
        &json!({"description": "Paid", "metadata": {"com.vendor": {"hidden": null, "displayName": "Order paid"}}}),
    );
    assert_eq!((r.status, r.json()), (200, json!({"status": "ok"})));
    let one = server.get(&format!("{base}/event/Purchase"), &owner).json();
    assert_eq!(
        one,
        json!({"description": "Paid", "metadata": {"com.vendor": {"tags": ["revenue"], "displayName": "Order paid"}}})
    );

    // Names with spaces and `$` travel in the path.
    let r = server.post_json(&format!("{base}/event/Sign%20Up"), &owner, &json!({}));
    assert_eq!(r.status, 200);
    assert_eq!(server.get(&format!("{base}/event/Sign%20Up"), &owner).json(), json!({}));

    // Deletes.
    let r = server.delete(&format!("{base}/event/Sign%20Up"), &owner);
    assert_eq!((r.status, r.json()), (200, json!({"results": {"delete_count": 1}, "status": "ok"})));
    let r = server.delete(&format!("{base}/event/Sign%20Up"), &owner);
    assert_eq!(r.json(), json!({"results": {"delete_count": 0}, "status": "ok"}));
    let r = server.delete(&format!("{base}/profile?entity_name=$user"), &owner);
    assert_eq!(r.json(), json!({"results": {"delete_count": 1}, "status": "ok"}));
    server.post_json(&format!("{base}/profile/$user"), &owner, &json!({}));
    let r = server.delete(&format!("{base}/event"), &owner);
    assert_eq!(r.json(), json!({"results": {"delete_count": 1}, "status": "ok"}));
    let r = server.delete(&base, &owner);
    assert_eq!(r.json(), json!({"results": {"delete_count": 1}, "status": "ok"}));
    assert_eq!(server.get(&base, &owner).json(), json!({"results": [], "status": "ok"}));
}

/// Spec §2.3 does not forbid other keys in a schema: they are stored and served back on every
/// route, and a replace replaces them with the rest of the schema.
fn keys_a_schema_does_not_define_are_kept(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");

    let order = json!({"description": "An order", "propertes": {"price": {"type": "number"}}, "x-owner": {"team": "growth", "since": null}});
    let r = server.post_json(&format!("{base}/event/Order"), &owner, &order);
    assert_eq!((r.status, r.json()), (200, json!({"status": "ok"})));
    assert_eq!(server.get(&format!("{base}/event/Order"), &owner).json(), order);

    let refund = json!({"entityType": "event", "name": "Refund", "schemaJson": {"$comment": "from the tracking plan", "properties": {"amount": {"type": "number"}}}});
    let r = server.post_json(&base, &owner, &json!({"entries": [refund]}));
    assert_eq!(r.status, 200, "{}", r.text);
    let listed = server.get(&format!("{base}/event"), &owner).json();
    assert_eq!(listed["results"][0], json!({"entityType": "event", "name": "Order", "schemaJson": order}));
    assert_eq!(listed["results"][1], refund);
    assert_eq!(server.get(&base, &owner).json()["results"][1], refund);

    // A replace keeps absent entity metadata only; other keys are replaced with the schema.
    let r = server.post_json(&format!("{base}/event/Order"), &owner, &json!({"properties": {"price": {"type": "number"}}, "x-new": 1}));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(server.get(&format!("{base}/event/Order"), &owner).json(), json!({"properties": {"price": {"type": "number"}}, "x-new": 1}));
}

/// A write route refuses a query parameter it does not take, naming it and the ones it takes:
/// ignored, a misspelled filter widened a delete to every schema. Reads still ignore them.
fn a_write_refuses_query_parameters_it_does_not_take(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    let user = json!({"entityType": "profile", "name": "$user", "schemaJson": {}});
    let a = json!({"entityType": "event", "name": "a", "schemaJson": {}});
    let b = json!({"entityType": "event", "name": "b", "schemaJson": {}});
    assert_eq!(server.post_json(&base, &owner, &json!({"entries": [a, b, user]})).status, 200);
    let count = || server.get(&base, &owner).json()["results"].as_array().unwrap().len();

    let name_only = "(unknown parameter `entityName`; this route takes only `entity_name`)";
    let none = "this route takes no parameters";
    for (method, path, needle) in [
        ("DELETE", format!("{base}/event?entityName=a"), name_only),
        ("DELETE", format!("{base}/event?entity_name=a&entityName=a"), name_only),
        ("DELETE", format!("{base}?entity_name=%24user"), "(unknown parameter `entity_name`; this route takes no parameters)"),
        ("DELETE", format!("{base}/event/a?dry_run=1&x"), "unknown parameters `dry_run`, `x`"),
        ("POST", format!("{base}?truncate=true"), none),
        ("POST", format!("{base}/event/a?merge=false"), none),
    ] {
        let body = (method == "POST").then(|| serde_json::to_vec(&json!({"entries": []})).unwrap());
        let r = server.send(method, &path, Some((&owner.username, &owner.secret)), &[], body);
        assert_eq!(r.status, 400, "{method} {path}: {}", r.text);
        assert_eq!(r.json()["status"], "error");
        let error = r.json()["error"].as_str().unwrap().to_owned();
        for needle in [needle, "the query string cannot be read", "nothing was changed", "/openapi.json"] {
            assert!(error.contains(needle), "`{needle}` missing from the answer to {method} {path}: {error}");
        }
        assert_eq!(count(), 3, "{method} {path} changed the dictionary");
    }
    // Reads ignore what they do not know; the filter they know still narrows.
    let r = server.get(&format!("{base}/event?entityName=a&_=1"), &owner);
    assert_eq!((r.status, r.json()["results"].as_array().unwrap().len()), (200, 2));
    let r = server.delete(&format!("{base}/event?entity_name=a"), &owner);
    assert_eq!(r.json(), json!({"results": {"delete_count": 1}, "status": "ok"}));
    assert_eq!(count(), 2);
}

/// `entity_name` that is not UTF-8 once percent-decoded is refused as the path's `name` is,
/// rather than decoded to U+FFFD, which matched (and deleted) a schema named `�`.
fn an_entity_name_that_is_not_utf8_is_refused(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    assert_eq!(server.post_json(&format!("{base}/event/%EF%BF%BD"), &owner, &json!({})).status, 200);
    for method in ["GET", "DELETE"] {
        let r = server.send(method, &format!("{base}/event?entity_name=%ff"), Some((&owner.username, &owner.secret)), &[], None);
        assert_eq!(r.status, 400, "{method}: {}", r.text);
        let error = r.json()["error"].as_str().unwrap().to_owned();
        assert!(error.contains("Invalid UTF-8 in `entity_name`"), "{method}: {error}");
    }
    let path = server.get(&format!("{base}/event/%ff"), &owner);
    assert!(path.json()["error"].as_str().unwrap().contains("Invalid UTF-8 in `name`"), "{}", path.text);
    // The schema named U+FFFD is still there, and found by its own name.
    let r = server.get(&format!("{base}/event?entity_name=%EF%BF%BD"), &owner);
    assert_eq!(r.json()["results"][0]["name"], "\u{fffd}");
}

/// One upload names each entity once: two entries for one entity were both counted as added,
/// and the first one's metadata leaked into the stored schema. Every duplicate is named, with
/// its positions, and nothing is stored (nor truncated).
fn a_batch_naming_an_entity_twice_is_refused(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    assert_eq!(server.post_json(&base, &owner, &json!({"entries": [purchase()]})).status, 200);
    let hidden = json!({"entityType": "event", "name": "DD2", "schemaJson": {"metadata": {"com.vendor": {"hidden": true}}}});
    let plain = json!({"entityType": "event", "name": "DD2", "schemaJson": {"description": "second"}});
    let user = json!({"entityType": "profile", "name": "$user", "schemaJson": {}});
    let body = json!({"entries": [hidden, plain, user.clone(), purchase(), user], "truncate": true});
    let r = server.post_json(&base, &owner, &body);
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    for needle in [
        "event `DD2` is given 2 times, at entries[0] and entries[1]",
        "profile `$user` is given 2 times, at entries[2] and entries[4]",
        "merge them into one entry",
    ] {
        assert!(error.contains(needle), "`{needle}` missing from: {error}");
    }
    assert!(!error.contains("Purchase"), "{error}");
    assert_eq!(server.get(&base, &owner).json(), json!({"results": [purchase()], "status": "ok"}));
}

/// The properties `/import` requires (`time`, `distinct_id`, `$insert_id`) cannot be marked
/// dropped: the import would store events without them.
fn the_properties_import_requires_cannot_be_dropped(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    let dropped = json!({"type": "string", "metadata": {"com.vendor": {"dropped": true}}});
    let one = json!({"properties": {"time": {"type": "number", "metadata": {"com.vendor": {"dropped": true}}}}});
    let r = server.post_json(&format!("{base}/event/Order"), &owner, &one);
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("properties.time.metadata[\"com.vendor\"].dropped: [required_property] `time` cannot be dropped: `/import` requires"), "{error}");
    let entry = json!({"entityType": "event", "name": "Order", "schemaJson": {"properties": {"distinct_id": dropped, "$insert_id": dropped, "card": dropped}}});
    let r = server.post_json(&base, &owner, &json!({"entries": [entry]}));
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    for needle in ["`distinct_id` cannot be dropped", "`$insert_id` cannot be dropped"] {
        assert!(error.contains(needle), "`{needle}` missing from: {error}");
    }
    assert!(!error.contains("`card`"), "{error}");
    assert_eq!(server.get(&base, &owner).json()["results"], json!([]));
    // `false` is the default and stays allowed; so is dropping any other property.
    let kept = json!({"properties": {"time": {"type": "number", "metadata": {"com.vendor": {"dropped": false}}}, "card": dropped}});
    assert_eq!(server.post_json(&format!("{base}/event/Order"), &owner, &kept).status, 200);
}

/// `dropped: false` is the default (spec §2.4, §2.5), so a profile and its properties may say it;
/// only `true` is for events only.
fn a_profile_may_say_dropped_false(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    let not_dropped = json!({"com.vendor": {"dropped": false}});
    let user = json!({"properties": {"plan": {"type": "string", "metadata": not_dropped}}, "metadata": not_dropped});
    let r = server.post_json(&format!("{base}/profile/$user"), &owner, &user);
    assert_eq!((r.status, r.json()), (200, json!({"status": "ok"})), "{}", r.text);
    assert_eq!(server.get(&format!("{base}/profile/$user"), &owner).json(), user);
    let entry = json!({"entityType": "profile", "name": "$user", "schemaJson": user});
    assert_eq!(server.post_json(&base, &owner, &json!({"entries": [entry]})).status, 200);
    let r = server.post_json(&format!("{base}/profile/$user"), &owner, &json!({"metadata": {"com.vendor": {"dropped": true}}}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("[events_only] only events can be dropped"), "{}", r.text);
}

/// A body that starts with a UTF-8 byte order mark (as editors on Windows save files) is read
/// as the JSON after it.
fn a_leading_byte_order_mark_is_skipped(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    let auth = Some((owner.username.as_str(), owner.secret.as_str()));
    let with_bom = |value: &serde_json::Value| [&b"\xEF\xBB\xBF"[..], &serde_json::to_vec(value).unwrap()].concat();
    let r = server.send("POST", &format!("{base}/event/A"), auth, &[], Some(with_bom(&json!({"description": "a"}))));
    assert_eq!((r.status, r.json()), (200, json!({"status": "ok"})), "{}", r.text);
    let r = server.send("POST", &base, auth, &[], Some(with_bom(&json!({"entries": [purchase()]}))));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(server.get(&format!("{base}/event/A"), &owner).json(), json!({"description": "a"}));
    let r = server.send("POST", &base, auth, &[], Some(b"\xEF\xBB\xBF \n".to_vec()));
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("the request body is empty"), "{}", r.text);
}

fn truncate_replaces_the_whole_dictionary(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Admin));
    let base = format!("/api/app/projects/{p}/schemas");
    let entries: Vec<_> = (0..3)
        .map(|i| json!({"entityType": "event", "name": format!("E{i}"), "schemaJson": {}}))
        .collect();
    server.post_json(&base, &owner, &json!({"entries": entries}));
    let r = server.post_json(&base, &owner, &json!({"entries": [purchase()], "truncate": true}));
    assert_eq!(r.json(), json!({"results": {"added": 1, "deleted": 3}, "status": "ok"}));
    assert_eq!(server.get(&base, &owner).json(), json!({"results": [purchase()], "status": "ok"}));
}

fn a_bad_body_lists_every_problem_and_changes_nothing(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let base = format!("/api/app/projects/{p}/schemas");
    let body = json!({
        "entries": [
            purchase(),
            {"entityType": "events", "name": "", "schemaJson": {"properties": {"x": {"type": "text"}}}},
            {"entityType": "profile", "name": "$user", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}}
        ],
        "truncate": "yes",
        "extra": 1
    });
    let r = server.post_json(&base, &owner, &body);
    assert_eq!(r.status, 400);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    for needle in ["extra", "truncate", "entries[1].entityType", "entries[1].name", "entries[1].schemaJson.properties.x.type", "entries[2].schemaJson.metadata"] {
        assert!(error.contains(needle), "`{needle}` missing from: {error}");
    }
    assert_eq!(r.json()["status"], "error");
    assert_eq!(server.get(&base, &owner).json()["results"], json!([]));

    for (path, body, needle) in [
        (base.clone(), json!([]), "must be an object"),
        (base.clone(), json!({}), "`entries` is required"),
        (format!("{base}/event/X"), json!({"properties": []}), "`properties` is an array; it must be an object"),
        (format!("{base}/event/X"), json!({"properties": {"p": {}}}), "properties.p.type"),
        (format!("{base}/profile/$user"), json!({"properties": {"p": {"type": "string", "metadata": {"com.vendor": {"dropped": true}}}}}), "only events"),
        (format!("{base}/event/%20"), json!({}), "the entity name in the path is blank (whitespace only)"),
        (base.clone(), json!({"entries": [{"entityType": "event", "name": " ", "schemaJson": {}}]}), "entries[0].name: [invalid_name] `name` is blank (whitespace only)"),
        (base.clone(), json!({"entries": [{"entityType": "event", "name": "", "schemaJson": {}}]}), "entries[0].name: [invalid_name] `name` is empty"),
    ] {
        let r = server.post_json(&path, &owner, &body);
        assert_eq!(r.status, 400, "{path} {body}");
        assert_eq!(r.json()["status"], "error", "{path} {body}");
        let error = r.json()["error"].as_str().unwrap().to_owned();
        assert!(error.contains(needle), "`{needle}` missing from the answer to {path} {body}: {error}");
    }
    let r = server.send("POST", &base, Some((&owner.username, &owner.secret)), &[], Some(b"{\"entries\": [".to_vec()));
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("cut short"), "{}", r.text);
    let r = server.get(&format!("{base}/events"), &owner);
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("use `event` or `profile`"));
    let r = server.get("/api/app/projects/abc/schemas", &owner);
    assert_eq!(r.status, 400);
}

fn the_schemas_rate_limit_answers_429_with_retry_after(backend: Backend) {
    let config = Config { schema_rate_limit: Some(5), rate_limiter: RateLimiter::default(), ..Default::default() };
    let server = Server::start_with_on(backend, config);
    let p = server.project("p").id;
    let q = server.project("q").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    datadict_server::admin::grant(&server.store, "owner", q, Role::Owner).unwrap();
    for _ in 0..5 {
        assert_eq!(server.get(&format!("/api/app/projects/{p}/schemas"), &owner).status, 200);
    }
    let r = server.get(&format!("/api/app/projects/{p}/schemas"), &owner);
    assert_eq!(r.status, 429);
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=12).contains(&retry), "{retry}");
    assert_eq!(r.json()["status"], "error");
    // Limits are per project.
    assert_eq!(server.get(&format!("/api/app/projects/{q}/schemas"), &owner).status, 200);
}

/// Both schema uploads refuse a body over the JSON body limit with 413 naming the limit, and write
/// nothing.
fn a_schema_body_over_the_json_limit_is_answered_413(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let limit = crate::common::JSON_BODY_LIMIT;
    for path in [format!("/api/app/projects/{p}/schemas"), format!("/api/app/projects/{p}/schemas/event/Big")] {
        let r = server.send("POST", &path, Some((&owner.username, &owner.secret)), &[("Content-Type", "application/json")], Some(crate::common::padded_object(limit + 1)));
        assert_eq!(r.status, 413, "{path}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains(&limit.to_string()), "{path}: {}", r.text);
    }
    assert_eq!(server.get(&format!("/api/app/projects/{p}/schemas"), &owner).json()["results"], json!([]));
}

on_both_stores!(create_list_get_replace_and_delete, keys_a_schema_does_not_define_are_kept, a_write_refuses_query_parameters_it_does_not_take, an_entity_name_that_is_not_utf8_is_refused, a_batch_naming_an_entity_twice_is_refused, the_properties_import_requires_cannot_be_dropped, a_profile_may_say_dropped_false, a_leading_byte_order_mark_is_skipped, truncate_replaces_the_whole_dictionary, a_bad_body_lists_every_problem_and_changes_nothing, the_schemas_rate_limit_answers_429_with_retry_after, a_schema_body_over_the_json_limit_is_answered_413);
