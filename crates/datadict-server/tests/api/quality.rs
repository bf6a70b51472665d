//! Data quality (issue 20): the dictionary check on arrival through `/import`, `/track` and
//! `/engage`, the violations API with its counts, samples, bounds and reset, the rejected records
//! with their reasons, and the same findings as the core's checks for the same records.

use crate::common::{now_ms, on_both_stores, Account, Backend, Server};
use crate::quality_profiles::violating_updates;
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(crate) struct Fixture {
    pub(crate) server: Server,
    pub(crate) p: i64,
    pub(crate) token: String,
    pub(crate) owner: Account,
}

pub(crate) fn fixture_with(backend: Backend, config: Config) -> Fixture {
    let server = Server::start_with_on(backend, config);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let f = Fixture { p: project.id, token: project.token, owner, server };
    // One documented event: `price` is a number, `card` is dropped.
    let schema = json!({"properties": {"price": {"type": "number"}, "card": {"type": "string", "metadata": {"com.vendor": {"dropped": true}}}}});
    let r = f.server.post_json(&format!("/api/app/projects/{}/schemas/event/Purchase", f.p), &f.owner, &schema);
    assert_eq!(r.status, 200, "{}", r.text);
    f
}

pub(crate) fn fixture(backend: Backend) -> Fixture {
    fixture_with(backend, Config::default())
}

impl Fixture {
    pub(crate) fn import(&self, records: &[Value]) -> crate::common::Reply {
        let body: String = records.iter().map(|r| format!("{r}\n")).collect();
        let path = format!("/import?project_id={}", self.p);
        self.server.send("POST", &path, Some((&self.owner.username, &self.owner.secret)), &[("Content-Type", "application/x-ndjson")], Some(body.into_bytes()))
    }

    pub(crate) fn violations(&self, query: &str) -> Vec<Value> {
        let r = self.server.get(&format!("/api/app/projects/{}/violations?limit=1000{query}", self.p), &self.owner);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"].as_array().unwrap().clone()
    }

    /// `(event, property, code) -> count` of every violation row.
    pub(crate) fn counts(&self) -> BTreeMap<(String, String, String), i64> {
        self.counts_where("")
    }

    /// `(event, property, code) -> count` of the violation rows `query` selects.
    pub(crate) fn counts_where(&self, query: &str) -> BTreeMap<(String, String, String), i64> {
        self.violations(query)
            .iter()
            .map(|v| {
                let s = |k: &str| v[k].as_str().unwrap().to_owned();
                ((s("event"), s("property"), s("code")), v["count"].as_i64().unwrap())
            })
            .collect()
    }
}

pub(crate) fn event(name: &str, i: usize, props: Value) -> Value {
    let mut p = json!({"time": now_ms() - 60_000, "distinct_id": "u1", "$insert_id": format!("q-{}-{i}", name.replace(' ', "-"))});
    p.as_object_mut().unwrap().extend(props.as_object().cloned().unwrap());
    json!({"event": name, "properties": p})
}

pub(crate) fn key(e: &str, p: &str, c: &str) -> (String, String, String) {
    (e.to_owned(), p.to_owned(), c.to_owned())
}

/// The records of the comparison with the core: one of each finding, twice over for counts.
fn violating_records() -> Vec<Value> {
    vec![
        event("Purchase", 0, json!({"price": "free"})),
        event("Purchase", 1, json!({"price": 1.5, "coupon": "X"})),
        event("Purchase", 2, json!({"price": "gratis", "coupon": 3})),
        event("Purchase", 3, json!({"price": 2, "card": "4242"})),
        event("Sign Up", 0, json!({"plan": "pro"})),
        event("Sign Up", 1, json!({})),
    ]
}

fn import_records_violations_with_counts_types_and_samples(backend: Backend) {
    let f = fixture(backend);
    let r = f.import(&violating_records());
    assert_eq!(r.status, 200, "{}", r.text);
    let counts = f.counts();
    assert_eq!(counts.get(&key("Purchase", "price", "type_mismatch")), Some(&2), "{counts:?}");
    assert_eq!(counts.get(&key("Purchase", "coupon", "unknown_property")), Some(&2));
    assert_eq!(counts.get(&key("Purchase", "card", "dropped_property")), Some(&1));
    assert_eq!(counts.get(&key("Sign Up", "", "no_schema")), Some(&2));
    let coupon = f.violations("&event=Purchase&property=coupon");
    assert_eq!(coupon.len(), 1);
    // Seen as a string and as an integer: both types are kept.
    assert_eq!(coupon[0]["types"], json!(["integer", "string"]));
    assert_eq!(coupon[0]["samples"].as_array().unwrap().len(), 2);
    assert!(coupon[0]["samples"][0].as_str().unwrap().contains("\"coupon\""));
    assert_eq!(coupon[0]["kind"], "event");
    assert!(coupon[0]["first_seen"].as_i64().unwrap() <= coupon[0]["last_seen"].as_i64().unwrap());
    // An event with violations is still stored; the dropped property is not.
    let stored = f.server.get(&format!("/api/app/projects/{}/events?event=Purchase", f.p), &f.owner).json();
    assert_eq!(stored["results"].as_array().unwrap().len(), 4);
    // By its name: the digits `4242` can also occur in a stored event's time.
    assert!(stored["results"].as_array().unwrap().iter().all(|e| e["properties"].get("card").is_none()), "{stored}");
    // A second request adds to the same rows, and keeps at most 5 samples.
    let more: Vec<Value> = (10..16).map(|i| event("Sign Up", i, json!({}))).collect();
    assert_eq!(f.import(&more).status, 200);
    let signup = f.violations("&code=no_schema");
    assert_eq!(signup[0]["count"], 8);
    assert_eq!(signup[0]["samples"].as_array().unwrap().len(), 5);
    // Filters and the summary.
    assert!(f.violations("&code=no_schema&event=Purchase").is_empty());
    let s = f.server.get(&format!("/api/app/projects/{}/quality/summary?since=1d", f.p), &f.owner);
    assert_eq!(s.status, 200, "{}", s.text);
    let v = &s.json()["results"]["violations"];
    assert_eq!(v["total"], 2 + 2 + 1 + 8);
    assert_eq!(v["by_code"]["no_schema"], 8);
    assert_eq!(v["by_event"]["Purchase"], 5);
    assert_eq!(v["by_property"]["price"], 2);
    assert_eq!(v["per_day"].as_array().unwrap().len(), 1);
    assert_eq!(f.server.get(&format!("/api/app/projects/{}/violations?since=soon", f.p), &f.owner).status, 400);
}

fn track_records_violations(backend: Backend) {
    let f = fixture(backend);
    let ev = json!({"event": "Purchase", "properties": {"token": f.token, "price": "free", "distinct_id": "u"}});
    let r = f.server.send("POST", "/track", None, &[("Content-Type", "application/json")], Some(ev.to_string().into_bytes()));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(f.counts().get(&key("Purchase", "price", "type_mismatch")), Some(&1));
}

/// Tracked events one per request, as an application sends them: counts, types, samples and the
/// count of valid events are those of the same events in one import, once their shape has its
/// samples (and the requests only count it) and again after a reset, which makes samples come
/// back.
fn tracked_events_of_one_shape_count_past_their_samples(backend: Backend) {
    let f = fixture(backend);
    let track = |i: usize, coupon: Value| {
        let ev = json!({"event": "Purchase", "properties": {"token": f.token, "price": "free", "coupon": coupon, "distinct_id": "u", "$insert_id": format!("s-{i}")}});
        let r = f.server.send("POST", "/track", None, &[("Content-Type", "application/json")], Some(ev.to_string().into_bytes()));
        assert_eq!((r.status, r.text.as_str()), (200, "1"));
    };
    (0..12).for_each(|i| track(i, json!("X")));
    (12..15).for_each(|i| track(i, json!(7)));
    let counts = f.counts();
    assert_eq!(counts.get(&key("Purchase", "price", "type_mismatch")), Some(&15), "{counts:?}");
    assert_eq!(counts.get(&key("Purchase", "coupon", "unknown_property")), Some(&15), "{counts:?}");
    let coupon = &f.violations("&property=coupon")[0];
    assert_eq!(coupon["types"], json!(["integer", "string"]));
    assert_eq!(coupon["samples"].as_array().unwrap().len(), 5, "{coupon}");
    assert!(coupon["samples"][0].as_str().unwrap().contains("s-0"), "the first events' samples: {coupon}");
    // Counted by their shape or not, every valid event counts once as good.
    let summary = f.server.get(&format!("/api/app/projects/{}/quality/summary", f.p), &f.owner).json();
    assert_eq!(summary["results"]["events"]["good"]["Purchase"], 15, "{summary}");
    assert_eq!(f.server.delete(&format!("/api/app/projects/{}/quality", f.p), &f.owner).status, 200);
    (15..17).for_each(|i| track(i, json!("Y")));
    let coupon = &f.violations("&property=coupon")[0];
    assert_eq!((coupon["count"].as_i64(), coupon["samples"].as_array().unwrap().len()), (Some(2), 2), "{coupon}");
}

/// No sample holds a project token: not the token of a tracked event (kept only as a hash), of an
/// event refused for another project's token, or of a refused profile update.
fn samples_hold_no_token(backend: Backend) {
    let f = fixture(backend);
    let other = f.server.project("other");
    let ours = json!({"event": "Purchase", "properties": {"token": f.token, "price": "free", "distinct_id": "u"}});
    let theirs = json!({"event": "Purchase", "properties": {"token": other.token, "distinct_id": "u"}});
    let invalid = json!({"event": "Purchase", "properties": {"token": f.token, "time": "yesterday"}});
    // Our token again, every character written as a JSON escape (which JSON allows).
    let escaped: String = f.token.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
    let spelled = format!(r#"{{"event":"Purchase","properties":{{"token":"{escaped}","price":"gratis","distinct_id":"v"}}}}"#);
    let body = format!("[{ours},{theirs},{invalid},{spelled}]");
    // As the answers write it: each backslash of the sample's text escaped once more.
    let escaped = escaped.replace('\\', "\\\\");
    let r = f.server.send("POST", "/track", None, &[("Content-Type", "application/json")], Some(body.into_bytes()));
    assert_eq!(r.status, 400, "{}", r.text);
    let update = json!([{"$token": f.token, "$distinct_id": "u", "$add": {"n": "one"}}]).to_string();
    assert_eq!(f.server.send("POST", "/engage", None, &[], Some(update.into_bytes())).status, 400);
    let violations = f.server.get(&format!("/api/app/projects/{}/violations", f.p), &f.owner).text;
    let rejected = f.server.get(&format!("/api/app/projects/{}/rejected", f.p), &f.owner).text;
    for (what, text) in [("violations", &violations), ("rejected", &rejected)] {
        assert!(text.contains("[redacted]"), "{what}: {text}");
        for token in [&f.token, &other.token, &escaped] {
            assert!(!text.contains(token.as_str()), "{what} hold a token: {text}");
        }
    }
    // The samples are there, only their tokens are not.
    assert_eq!(f.counts().get(&key("Purchase", "price", "type_mismatch")), Some(&2));
    assert!(violations.contains("gratis"), "{violations}");
    assert!(rejected.contains("token_refused") && rejected.contains("yesterday"), "{rejected}");
}

fn a_flood_of_names_stays_bounded_with_an_others_row(backend: Backend) {
    let f = fixture_with(backend, Config { quality_max_keys: 3, ..Config::default() });
    let flood: Vec<Value> = (0..10).map(|i| event(&format!("Undocumented {i}"), i, json!({}))).collect();
    assert_eq!(f.import(&flood).status, 200);
    let more: Vec<Value> = (10..14).map(|i| event(&format!("Undocumented {i}"), i, json!({}))).collect();
    assert_eq!(f.import(&more).status, 200);
    let rows = f.violations("");
    assert_eq!(rows.len(), 4, "{rows:?}");
    let others: Vec<&Value> = rows.iter().filter(|r| r["event"] == "$others").collect();
    assert_eq!(others.len(), 1);
    assert_eq!(others[0]["count"], 14 - 3);
    assert_eq!(rows.iter().map(|r| r["count"].as_i64().unwrap()).sum::<i64>(), 14);
}

fn reset_empties_violations_and_events_only_with_the_flag(backend: Backend) {
    let f = fixture(backend);
    assert_eq!(f.import(&violating_records()).status, 200);
    let events = |f: &Fixture| f.server.get(&format!("/api/app/projects/{}/events", f.p), &f.owner).json()["results"].as_array().unwrap().len();
    assert_eq!(events(&f), 6);
    let r = f.server.delete(&format!("/api/app/projects/{}/quality", f.p), &f.owner);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"]["violations_deleted"], 4);
    assert_eq!(r.json()["results"]["events_deleted"], 0);
    assert!(f.violations("").is_empty());
    assert_eq!(events(&f), 6);
    assert_eq!(f.server.delete(&format!("/api/app/projects/{}/quality?events=yes", f.p), &f.owner).status, 400);
    let r = f.server.delete(&format!("/api/app/projects/{}/quality?events=true", f.p), &f.owner);
    assert_eq!(r.json()["results"]["events_deleted"], 6);
    assert_eq!(events(&f), 0);
}

fn rejected_records_are_kept_with_their_reasons(backend: Backend) {
    let f = fixture(backend);
    let other = f.server.project("other");
    // A strict import with a record of the wrong time type and an unreadable line: a 400.
    let bad = json!({"event": "Purchase", "properties": {"time": "yesterday", "distinct_id": "u", "$insert_id": "bad-1"}});
    let body = format!("{}\nnot json\n{}\n", bad, event("Purchase", 9, json!({"price": 1})));
    let path = format!("/import?strict=1&project_id={}", f.p);
    let r = f.server.send("POST", &path, Some((&f.owner.username, &f.owner.secret)), &[("Content-Type", "application/x-ndjson")], Some(body.into_bytes()));
    assert_eq!(r.status, 400, "{}", r.text);
    // A tracked event naming another project's token is refused; its neighbour is stored.
    let batch = json!([
        {"event": "Purchase", "properties": {"token": f.token, "distinct_id": "u"}},
        {"event": "Stray", "properties": {"token": other.token, "distinct_id": "u"}},
    ]);
    let r = f.server.send("POST", "/track", None, &[("Content-Type", "application/json")], Some(batch.to_string().into_bytes()));
    assert_eq!(r.status, 400, "{}", r.text);
    let r = f.server.get(&format!("/api/app/projects/{}/rejected?limit=1000", f.p), &f.owner);
    assert_eq!(r.status, 200, "{}", r.text);
    let rows = r.json()["results"].as_array().unwrap().clone();
    let find = |route: &str, event: &str| rows.iter().find(|r| r["route"] == route && r["event"] == event).unwrap_or_else(|| panic!("no {route} {event}: {rows:?}")).clone();
    let wrong_time = find("import", "Purchase");
    assert_eq!(wrong_time["count"], 1);
    assert!(wrong_time["samples"][0]["record"].as_str().unwrap().contains("yesterday"));
    assert!(!wrong_time["samples"][0]["message"].as_str().unwrap().is_empty());
    let unreadable = find("import", "");
    assert_eq!((unreadable["code"].as_str(), unreadable["samples"][0]["record"].as_str()), (Some("invalid_json"), Some("not json")));
    let stray = find("track", "Stray");
    assert_eq!((stray["code"].as_str(), stray["count"].as_i64()), (Some("token_refused"), Some(1)));
    assert!(stray["samples"][0]["message"].as_str().unwrap().contains("another project"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    let only_track = f.server.get(&format!("/api/app/projects/{}/rejected?route=track", f.p), &f.owner).json();
    assert_eq!(only_track["results"].as_array().unwrap().len(), 1);
    let summary = f.server.get(&format!("/api/app/projects/{}/quality/summary", f.p), &f.owner).json();
    assert_eq!(summary["results"]["rejected"]["total"], 3);
    assert_eq!(summary["results"]["rejected"]["by_code"]["token_refused"], 1);
    // Good and bad per event name: each request's valid Purchase was stored, the rest refused
    // (the unreadable line has no name).
    let events = &summary["results"]["events"];
    assert_eq!((events["bad"]["Purchase"].as_i64(), events["bad"]["Stray"].as_i64(), events["bad"][""].as_i64()), (Some(1), Some(1), Some(1)), "{events}");
    assert_eq!(events["good"]["Purchase"], 2, "{events}");
    let r = f.server.delete(&format!("/api/app/projects/{}/quality", f.p), &f.owner);
    assert_eq!(r.json()["results"]["rejected_deleted"], 3);
    assert!(f.server.get(&format!("/api/app/projects/{}/rejected", f.p), &f.owner).json()["results"].as_array().unwrap().is_empty());
}

fn the_check_can_be_turned_off(backend: Backend) {
    let f = fixture_with(backend, Config { dictionary_check: false, ..Config::default() });
    assert_eq!(f.import(&violating_records()).status, 200);
    let r = f.engage(&violating_updates());
    assert_eq!((r.status, &r.json()["num_records_imported"]), (200, &json!(6)), "{}", r.text);
    f.define_user_profile();
    assert_eq!(f.engage(&violating_updates()).status, 200);
    assert!(f.violations("").is_empty());
}


/// The server's findings are the core's pre-import check's (as the web app runs it) for the same
/// records: the same (event, property, code) counts.
fn the_server_and_the_core_agree(backend: Backend) {
    use datadict_core::{check_against_dictionary, check_event, Dictionary, Limits, SchemaEntry};
    let f = fixture(backend);
    let records = violating_records();
    assert_eq!(f.import(&records).status, 200);
    let r = f.server.get(&format!("/api/app/projects/{}/schemas", f.p), &f.owner);
    let entries: Vec<SchemaEntry> = serde_json::from_value(r.json()["results"].clone()).unwrap();
    let dictionary = Dictionary::new(&entries, datadict_core::DEFAULT_NAMESPACE);
    let mut core: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    for record in &records {
        let text = record.to_string();
        let check = check_event(text.as_bytes(), &Limits::default(), now_ms());
        let name = check.event.clone().unwrap().into_owned();
        for issue in check_against_dictionary(&check, &dictionary).issues {
            let property = issue.path.strip_prefix("properties.").unwrap_or("").to_owned();
            *core.entry((name.clone(), property, issue.code.as_str().to_owned())).or_default() += 1;
        }
    }
    assert!(!core.is_empty());
    assert_eq!(f.counts(), core);
}

/// The draft proposes one type per property seen with one, lists conflicting ones, keeps the
/// current schema of a documented event, and is accepted as it is by the batch upload, after which
/// new events of those names are no longer violations.
fn the_draft_proposes_types_and_lists_conflicts(backend: Backend) {
    let f = fixture(backend);
    let records = vec![
        event("Sign Up", 0, json!({"plan": "pro", "seats": 3})),
        event("Sign Up", 1, json!({"plan": "free", "seats": "many"})),
        event("Purchase", 0, json!({"price": 1, "coupon": "X"})),
    ];
    assert_eq!(f.import(&records).status, 200);
    let r = f.server.get(&format!("/api/app/projects/{}/quality/draft", f.p), &f.owner);
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    let entries = body["results"]["entries"].as_array().unwrap();
    let entry = |name: &str| entries.iter().find(|e| e["name"] == name).unwrap_or_else(|| panic!("no {name}: {body}")).clone();
    assert_eq!(entry("Sign Up")["schemaJson"]["properties"], json!({"plan": {"type": "string"}}));
    let purchase = entry("Purchase")["schemaJson"]["properties"].clone();
    assert_eq!(purchase["coupon"], json!({"type": "string"}));
    assert_eq!(purchase["price"]["type"], "number");
    assert!(purchase.get("card").is_some(), "the current schema is kept: {purchase}");
    assert_eq!(body["unresolved"], json!([{"event": "Sign Up", "property": "seats", "types": ["integer", "string"]}]));
    assert_eq!(body["results"]["truncate"], false);
    let r = f.server.post_json(&format!("/api/app/projects/{}/schemas", f.p), &f.owner, &body["results"]);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(f.server.delete(&format!("/api/app/projects/{}/quality", f.p), &f.owner).status, 200);
    assert_eq!(f.import(&[event("Sign Up", 5, json!({"plan": "team"})), event("Purchase", 5, json!({"coupon": "Y"}))]).status, 200);
    assert!(f.violations("").is_empty(), "{:?}", f.violations(""));
}

/// An undocumented event's draft holds what its later events carried too, past the five samples
/// of its `no_schema` row: a property only they have, and a second type of a property.
fn the_draft_reads_past_the_samples(backend: Backend) {
    let f = fixture(backend);
    let mut records: Vec<Value> = (0..8).map(|i| event("Bulk", i, json!({"n": i}))).collect();
    records.extend((8..40).map(|i| event("Bulk", i, json!({"n": i, "extra": "x"}))));
    records.push(event("Bulk", 40, json!({"n": true})));
    assert_eq!(f.import(&records).status, 200);
    let r = f.server.get(&format!("/api/app/projects/{}/quality/draft?event=Bulk", f.p), &f.owner);
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(body["results"]["entries"][0]["schemaJson"]["properties"], json!({"extra": {"type": "string"}}), "{body}");
    assert_eq!(body["unresolved"], json!([{"event": "Bulk", "property": "n", "types": ["boolean", "integer"]}]), "{body}");
}

on_both_stores!(
    the_draft_reads_past_the_samples,
    the_draft_proposes_types_and_lists_conflicts,
    import_records_violations_with_counts_types_and_samples,
    track_records_violations,
    tracked_events_of_one_shape_count_past_their_samples,
    samples_hold_no_token,
    a_flood_of_names_stays_bounded_with_an_others_row,
    reset_empties_violations_and_events_only_with_the_flag,
    rejected_records_are_kept_with_their_reasons,
    the_check_can_be_turned_off,
    the_server_and_the_core_agree,
);
