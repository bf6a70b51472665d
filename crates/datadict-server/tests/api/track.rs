//! `/track` over real HTTP (issue 19): every wire format and answer, the rules of tracked events
//! (time, `$insert_id`, `distinct_id`, `ip=1`), partial batches, token errors, and tracked events
//! read back through the events read API and counted in the 30-day volumes.

use crate::common::{base64, form, gzip, now_ms, on_both_stores, urlencode, Account, Backend, Reply, Server};
use datadict_server::store::Role;
use serde_json::{json, Value};

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");
const JSON: (&str, &str) = ("Content-Type", "application/json");

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
    /// An event of this project, with `extra` merged into its properties.
    fn event(&self, name: &str, extra: Value) -> Value {
        let mut props = json!({"token": self.token});
        props.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        json!({"event": name, "properties": props})
    }

    fn post(&self, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
        self.server.send("POST", path, None, headers, Some(body))
    }

    /// The stored events of this project named `name`, newest first.
    fn stored(&self, name: &str) -> Vec<Value> {
        let r = self.server.get(&format!("/api/app/projects/{}/events?limit=1000&event={}", self.p, urlencode(name)), &self.owner);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"].as_array().unwrap().clone()
    }
}

/// Every format a tracking library sends, each answered `1` as `text/plain`, and every event
/// stored (without its token) and readable through the events read API.
fn every_format_is_stored_and_answered_1(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 60_000;
    let ev = |n: usize| f.event(&format!("Format {n}"), json!({"time": t, "distinct_id": "u1", "$insert_id": format!("fmt-{n}")}));
    let json_of = |n: usize| ev(n).to_string();
    // Name, path, headers, body (none for a `GET`).
    type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, Option<Vec<u8>>);
    let cases: Vec<Case> = vec![
        ("one JSON object", "/track".into(), vec![JSON], Some(json_of(0).into_bytes())),
        ("a JSON array", "/track".into(), vec![JSON], Some(format!("[{}]", json_of(1)).into_bytes())),
        ("a gzipped JSON array", "/track".into(), vec![JSON, ("Content-Encoding", "gzip")], Some(gzip(format!("[{}]", json_of(2)).as_bytes()))),
        ("a form with JSON", "/track".into(), vec![FORM], Some(form(&[("data", &json_of(3))]))),
        ("a form with base64", "/track".into(), vec![FORM], Some(form(&[("data", &base64(json_of(4).as_bytes()))]))),
        ("a gzipped form", "/track".into(), vec![FORM, ("Content-Encoding", "gzip")], Some(gzip(&form(&[("data", &base64(json_of(5).as_bytes()))])))),
        ("sendBeacon's text/plain", "/track".into(), vec![("Content-Type", "text/plain;charset=UTF-8")], Some(json_of(6).into_bytes())),
        ("a form in text/plain", "/track".into(), vec![("Content-Type", "text/plain;charset=UTF-8")], Some(form(&[("data", &base64(json_of(7).as_bytes()))]))),
        ("no Content-Type", "/track".into(), vec![], Some(json_of(8).into_bytes())),
        ("GET with base64", format!("/track?data={}", urlencode(&base64(json_of(9).as_bytes()))), vec![], None),
        ("GET with JSON", format!("/track?data={}&_=123", urlencode(&json_of(10))), vec![], None),
    ];
    for (name, path, headers, body) in &cases {
        let method = if body.is_some() { "POST" } else { "GET" };
        let r = f.server.send(method, path, None, headers, body.clone());
        assert_eq!((r.status, r.text.as_str()), (200, "1"), "{name}");
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"), "{name}");
    }
    for (n, (name, ..)) in cases.iter().enumerate() {
        let stored = f.stored(&format!("Format {n}"));
        assert_eq!(stored.len(), 1, "{name}");
        let mut sent = ev(n);
        sent["properties"].as_object_mut().unwrap().remove("token");
        assert_eq!(stored[0], sent, "{name}: stored as sent, without the token");
    }
}

/// The answers: `verbose=1` (query or form body) JSON, `img=1` the transparent GIF, `callback`
/// a script (with `nosniff`), for success and for failure.
fn every_answer_form(backend: Backend) {
    let f = fixture(backend);
    let data = base64(f.event("Answered", json!({})).to_string().as_bytes());
    let bad = base64(json!({"event": "Answered", "properties": {"token": f.token, "time": "yesterday"}}).to_string().as_bytes());
    let send = |query: &str, data: &str, extra: &[(&str, &str)]| {
        let mut pairs = vec![("data", data)];
        pairs.extend_from_slice(extra);
        f.post(&format!("/track{query}"), &[FORM], form(&pairs))
    };
    let r = send("?verbose=1", &data, &[]);
    assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = send("", &data, &[("verbose", "1")]);
    assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})), "verbose in the form body");
    let r = send("?verbose=1", &bad, &[]);
    assert_eq!(r.status, 400);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("stored 0 of 1 events; event 0: `properties.time` is the string \"yesterday\""), "{error}");
    let r = send("", &bad, &[]);
    assert_eq!((r.status, r.text.as_str()), (400, "0"));

    for data in [&data, &bad] {
        let r = send("?img=1&verbose=1", data, &[]);
        assert_eq!(r.header("content-type"), Some("image/gif"));
        assert_eq!(&r.bytes[..6], b"GIF89a");
        assert_eq!(r.bytes, datadict_core::wire::TRANSPARENT_GIF);
        assert_eq!(r.header("cache-control"), Some("no-store"));
    }
    let r = f.server.send("GET", &format!("/track?img=1&data={}", urlencode(&data)), None, &[], None);
    assert_eq!((r.status, r.bytes.len()), (200, 43));

    let r = send("?callback=app.onTracked", &data, &[]);
    assert_eq!((r.status, r.text.as_str()), (200, "app.onTracked(1)"));
    assert_eq!(r.header("content-type"), Some("text/javascript; charset=utf-8"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    // A failure is still a 200 to a script, so that the page's callback learns of it.
    let r = send("?callback=cb&verbose=1", &bad, &[]);
    assert_eq!(r.status, 200);
    assert!(r.text.starts_with("cb({\"status\":0,\"error\":\"stored 0 of 1 events"), "{}", r.text);
    // A hostile name is refused as plain JSON and never echoed.
    let hostile = "alert(document.cookie)//";
    let r = send(&format!("?callback={}", urlencode(hostile)), &data, &[]);
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(!r.text.contains("alert") && r.json()["error"].as_str().unwrap().contains("`callback`"), "{}", r.text);
    // Five stored: the two verbose ones, the two pixels and the script with valid data.
    assert_eq!(f.stored("Answered").len(), 5);
}

/// `/track`'s own rules: time, `$insert_id` and `distinct_id` optional; a future time set to
/// the server's; de-duplication only with `$insert_id`; `ip=1`.
fn time_insert_id_distinct_id_and_ip(backend: Backend) {
    let f = fixture(backend);
    let track = |query: &str, events: Value| {
        let r = f.post(&format!("/track?verbose=1{query}"), &[JSON], events.to_string().into_bytes());
        assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})), "{events}");
    };
    // No time, no `$insert_id`, no `distinct_id`: stored with the server's time, twice.
    let before = now_ms();
    track("", json!([f.event("Bare", json!({"n": 1})), f.event("Bare", json!({"n": 1}))]));
    let after = now_ms();
    let stored = f.stored("Bare");
    assert_eq!(stored.len(), 2, "without `$insert_id` every copy is stored");
    for e in &stored {
        let time = e["properties"]["time"].as_i64().unwrap();
        assert!((before..=after).contains(&time), "{time} not in {before}..={after}");
        let keys: Vec<&str> = e["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["n", "time"], "nothing but the time is added");
    }
    // With `$insert_id` and a time, a copy replaces the stored event (the latest wins).
    let t = now_ms() - 3_600_000;
    let keyed = |v: i64| f.event("Keyed", json!({"time": t, "distinct_id": "u1", "$insert_id": "k-1", "v": v}));
    track("", keyed(1));
    track("", keyed(2));
    let stored = f.stored("Keyed");
    assert_eq!((stored.len(), stored[0]["properties"]["v"].clone()), (1, json!(2)));
    // A time later than the server's clock is set to it; an earlier one is kept.
    let later = now_ms() + 10 * 60_000;
    track("", f.event("Future", json!({"time": later, "$insert_id": "f-1"})));
    let future = f.stored("Future")[0]["properties"]["time"].as_i64().unwrap();
    assert!(future < later && future >= after, "{future}");
    // `ip=1`: the connection's address, unless the event has its own.
    track("&ip=1", json!([f.event("Located", json!({"$insert_id": "ip-1"})), f.event("Located", json!({"ip": "203.0.113.9", "$insert_id": "ip-2"}))]));
    let mut ips: Vec<String> = f.stored("Located").iter().map(|e| e["properties"]["ip"].as_str().unwrap().to_owned()).collect();
    ips.sort();
    assert_eq!(ips, ["127.0.0.1", "203.0.113.9"]);
    track("&ip=0", f.event("Unlocated", json!({})));
    assert_eq!(f.stored("Unlocated")[0]["properties"].get("ip"), None);
    assert_eq!(f.stored("Unlocated")[0]["properties"].get("distinct_id"), None, "without `ip=1` no distinct_id is made");
    // `ip=1` and no `distinct_id` (reference: "compute a distinct_id using a hash function if no
    // distinct_id is provided"): one id for the address, stored and searchable like a sent one.
    let hashed = datadict_core::ClientIp::new("127.0.0.1").distinct_id;
    let ids = |stored: Vec<Value>| stored.iter().map(|e| e["properties"]["distinct_id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let mut located = ids(f.stored("Located"));
    located.sort();
    assert_eq!(located, [hashed.clone(), hashed.clone()]);
    track("&ip=1", json!([f.event("Identified", json!({"distinct_id": "u-7"})), f.event("Identified", json!({"distinct_id": ""}))]));
    let mut identified = ids(f.stored("Identified"));
    identified.sort();
    assert_eq!(identified, ["", "u-7"], "a sent distinct_id, even empty, is kept");
    let r = f.server.get(&format!("/api/app/projects/{}/events?distinct_id={hashed}", f.p), &f.owner).json();
    assert_eq!(r["results"].as_array().map(Vec::len), Some(2), "{r}");
}

/// A batch with invalid events stores the valid ones and says so, without claiming success;
/// every import rule applies (forbidden ids, `$insert_id` alphabet, nesting).
fn a_partial_batch_stores_the_valid_events_and_answers_0(backend: Backend) {
    let f = fixture(backend);
    let events = json!([
        f.event("Partial", json!({"$insert_id": "p-1"})),
        f.event("Partial", json!({"distinct_id": "null"})),
        f.event("Partial", json!({"$insert_id": "p-3"})),
        f.event("Partial", json!({"$insert_id": "has space"})),
        f.event("Partial", json!({"deep": {"a": {"b": {"c": {"d": 1}}}}})),
    ]);
    let r = f.post("/track?verbose=1", &[JSON], events.to_string().into_bytes());
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("stored 2 of 5 events; event 1: `properties.distinct_id` is \"null\""), "{error}");
    assert!(error.contains("; event 3: `properties.$insert_id`") && error.contains("; event 4: "), "{error}");
    assert_eq!(f.stored("Partial").len(), 2);
    let r = f.post("/track", &[FORM], form(&[("data", &events.to_string())]));
    assert_eq!((r.status, r.text.as_str()), (400, "0"));
    // Nothing valid at all, and an empty batch.
    let r = f.post("/track?verbose=1", &[JSON], json!([f.event("", json!({}))]).to_string().into_bytes());
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().starts_with("stored 0 of 1 events; event 0: `event` is empty"), "{}", r.text);
    let r = f.post("/track?verbose=1", &[JSON], b"[]".to_vec());
    assert_eq!((r.status, r.json()["error"].clone()), (400, json!("the body holds no events; send at least one event")));
}

/// A record that is not UTF-8 text is refused as such (not as a JSON syntax error), and its
/// neighbours are stored.
fn a_record_that_is_not_utf8_says_so(backend: Backend) {
    let f = fixture(backend);
    let mut body = format!("[{},", f.event("Readable", json!({}))).into_bytes();
    body.extend_from_slice(format!(r#"{{"event":"Unreadable","properties":{{"token":"{}","x":""#, f.token).as_bytes());
    body.extend_from_slice(b"\xff\"}}]");
    let r = f.post("/track?verbose=1", &[JSON], body);
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("stored 1 of 2 events; event 1: the record is not UTF-8 text ("), "{error}");
    assert!(error.ends_with("); send JSON encoded in UTF-8"), "{error}");
    assert_eq!(f.stored("Readable").len(), 1);
}

/// A body over 16 KiB (a batching library's flush) is read off the request's task, and is
/// answered, stored and refused as a small one: the valid events stored, each invalid one and each
/// of another project named, 401 when no event names a project, and a broken body refused whole.
fn a_batch_over_16_kib_is_answered_as_a_small_one(backend: Backend) {
    let f = fixture(backend);
    let other = f.server.project("other");
    let pad = "x".repeat(400);
    let batch = |name: &str| -> Vec<Value> { (0..60).map(|i| f.event(name, json!({"$insert_id": format!("{name}-{i}"), "pad": pad}))).collect() };
    let mut events = batch("Batched");
    events[7] = f.event("Batched", json!({"distinct_id": "null", "pad": pad}));
    events[30] = json!({"event": "Batched", "properties": {"token": other.token, "pad": pad}});
    let body = json!(events).to_string();
    assert!(body.len() > 16 * 1024, "{} bytes", body.len());
    let r = f.post("/track?verbose=1", &[FORM], form(&[("data", &base64(body.as_bytes()))]));
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("stored 58 of 60 events; event 7: `properties.distinct_id` is \"null\""), "{error}");
    assert!(error.contains(&format!("; event 30: `properties.token` is the token of another project than project {}", f.p)), "{error}");
    assert_eq!(f.stored("Batched").len(), 58);

    let whole = json!(batch("Whole")).to_string();
    let r = f.post("/track", &[FORM], form(&[("data", &base64(whole.as_bytes()))]));
    assert_eq!((r.status, r.text.as_str()), (200, "1"));
    assert_eq!(f.stored("Whole").len(), 60);

    let strangers: Vec<Value> = (0..60).map(|_| json!({"event": "Never", "properties": {"token": "not-a-token", "pad": pad}})).collect();
    let r = f.post("/track?verbose=1", &[JSON], json!(strangers).to_string().into_bytes());
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("name no project"), "{}", r.text);
    assert!(f.stored("Never").is_empty());

    // Cut short: refused whole, as a small body is, nothing stored.
    let cut = json!(batch("Cut")).to_string();
    let r = f.post("/track?verbose=1", &[JSON], cut.as_bytes()[..cut.len() - 1].to_vec());
    assert_eq!(r.status, 400, "{}", r.text);
    let small = json!(batch("Cut")[..1]).to_string();
    let small = f.post("/track?verbose=1", &[JSON], small.as_bytes()[..small.len() - 1].to_vec());
    let first_words = |text: &str| text.split(|c: char| c.is_ascii_digit()).next().unwrap_or_default().to_owned();
    assert_eq!(first_words(&r.text), first_words(&small.text), "{} against {}", r.text, small.text);
    assert!(f.stored("Cut").is_empty());
}

/// Tokens: required in each event without an `Authorization` header; events naming another
/// project's token (or none) are refused one by one; 401 when no event names a project. With
/// the project token as Basic user name (as server-side senders authenticate) events may leave
/// it out.
fn tokens_decide_the_project_and_refuse_strangers(backend: Backend) {
    let f = fixture(backend);
    let other = f.server.project("other");
    let stranger = |name: &str| json!({"event": name, "properties": {"token": other.token}});
    let unknown = json!({"event": "Unknown", "properties": {"token": "not-a-token"}});
    let send = |auth: Option<(&str, &str)>, events: &Value| f.server.send("POST", "/track?verbose=1", auth, &[JSON], Some(events.to_string().into_bytes()));

    let r = send(None, &json!([{"event": "No token", "properties": {}}]));
    assert_eq!(r.status, 401);
    assert!(r.json()["error"].as_str().unwrap().contains("no event carries `properties.token`"), "{}", r.text);
    let r = send(None, &json!([unknown]));
    assert_eq!(r.status, 401);
    assert!(r.json()["error"].as_str().unwrap().contains("name no project") && !r.text.contains("not-a-token"), "{}", r.text);

    // The first event with a valid token decides; the others are refused, the rest stored.
    let r = send(None, &json!([unknown, f.event("Mine", json!({})), stranger("Theirs"), f.event("Mine", json!({}))]));
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("stored 2 of 4 events; event 0: `properties.token` is not the token of any project"), "{error}");
    assert!(error.contains(&format!("event 2: `properties.token` is the token of another project than project {}", f.p)), "{error}");
    assert_eq!(f.stored("Mine").len(), 2);
    assert!(f.stored("Theirs").is_empty() && f.stored("Unknown").is_empty());

    // Basic with the project token: the token may be left out, and must match where given.
    let basic = Some((f.token.as_str(), ""));
    let r = send(basic, &json!([{"event": "Signed", "properties": {"distinct_id": "u1"}}, stranger("Signed")]));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().starts_with("stored 1 of 2 events; event 1: `properties.token`"), "{}", r.text);
    assert_eq!(f.stored("Signed").len(), 1);
    // Wrong Basic credentials are refused before anything else, in the asked style.
    let r = send(Some(("not-a-token", "")), &json!([f.event("Never", json!({}))]));
    assert_eq!((r.status, r.json()), (401, json!({"status": 0, "error": "Invalid credentials"})));
    let r = f.server.send("POST", "/track", Some(("not-a-token", "")), &[JSON], Some(b"not json".to_vec()));
    assert_eq!((r.status, r.text.as_str()), (401, "0"));
    assert!(f.stored("Never").is_empty());
}

/// Events that cannot be read (not UTF-8, not JSON, nested past the parser's limit) or that break
/// other rules, sent without an `Authorization` header and naming no project, are answered as a
/// batch of which nothing was stored (400, with every problem), not as missing credentials: their
/// token may be in them, unseen. Only a request whose events were all read and lack a project's
/// token is a 401.
fn unreadable_events_naming_no_project_are_a_400_not_a_401(backend: Backend) {
    let f = fixture(backend);
    let send = |query: &str, body: Vec<u8>| f.post(&format!("/track{query}"), &[JSON], body);
    let mut not_utf8 = format!(r#"{{"event":"Unreadable","properties":{{"token":"{}","x":""#, f.token).into_bytes();
    not_utf8.extend_from_slice(b"\xff\"}}");
    let escape = format!(r#"{{"event":"Unreadable","properties":{{"token":"{}","x":"\xff"}}}}"#, f.token);
    let deep = format!(r#"{{"event":"Unreadable","properties":{{"token":"{}","d":{}1{}}}}}"#, f.token, r#"{"a":"#.repeat(127), "}".repeat(127));
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("not UTF-8", not_utf8.clone(), "event 0: the record is not UTF-8 text"),
        ("a bad escape", escape.into_bytes(), "event 0: the record is not valid JSON (invalid escape"),
        ("127 levels deep", deep.into_bytes(), "event 0: the record is not valid JSON (recursion limit exceeded"),
        ("properties a string", br#"{"event":"Unreadable","properties":"abc"}"#.to_vec(), "event 0: `properties` is the string \"abc\""),
        ("a bad time", br#"{"event":"Unreadable","properties":{"time":"now"}}"#.to_vec(), "event 0: `properties.time` is the string \"now\""),
    ];
    for (what, body, says) in cases {
        let r = send("?verbose=1", body.clone());
        assert_eq!(r.status, 400, "{what}: {}", r.text);
        let error = r.json()["error"].as_str().unwrap().to_owned();
        assert!(error.starts_with("stored 0 of 1 events; ") && error.contains(says), "{what}: {error}");
        assert_eq!((send("", body).status), 400, "{what}");
    }
    // Every problem is listed, a token of no project's among them.
    let mut batch = b"[".to_vec();
    batch.extend_from_slice(&not_utf8);
    batch.extend_from_slice(br#",{"event":"Unreadable","properties":{"token":"not-a-token"}}]"#);
    let r = send("?verbose=1", batch);
    assert_eq!(r.status, 400, "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("stored 0 of 2 events; event 0: the record is not UTF-8 text"), "{error}");
    assert!(error.contains("; event 1: `properties.token` is not the token of any project"), "{error}");
    // Read, but without a project's token: 401, as before.
    for events in [json!({"event": "Unreadable", "properties": {"token": 5}}), json!([{"event": "Unreadable", "properties": {}}])] {
        let r = send("?verbose=1", events.to_string().into_bytes());
        assert_eq!(r.status, 401, "{events}: {}", r.text);
    }
    assert!(f.stored("Unreadable").is_empty());
}

/// What `properties` must be is said by `/track`'s rules, under which `time`, `distinct_id` and
/// `$insert_id` are optional: the token, or nothing when the header authenticates the request.
fn the_properties_message_follows_the_track_rules(backend: Backend) {
    let f = fixture(backend);
    let events = json!([f.event("Said", json!({})), {"event": "Said", "properties": "abc"}]).to_string();
    let cases = [(None, "an object with `token` (the project token)"), (Some((f.token.as_str(), "")), "an object of the event's properties")];
    for (auth, expected) in cases {
        let r = f.server.send("POST", "/track?verbose=1", auth, &[JSON], Some(events.clone().into_bytes()));
        assert_eq!(r.status, 400, "{}", r.text);
        let error = r.json()["error"].as_str().unwrap().to_owned();
        assert_eq!(error, format!("stored 1 of 2 events; event 1: `properties` is the string \"abc\"; it must be {expected}"));
    }
    assert_eq!(f.stored("Said").len(), 2);
}

/// Tracked events take the import's path: the dictionary's drops, truncation, the events read
/// API, and the 30-day volumes of the dictionary.
fn tracked_events_are_dropped_filtered_and_counted_like_imported_ones(backend: Backend) {
    let f = fixture(backend);
    let schemas = json!({"entries": [
        {"entityType": "event", "name": "Debug", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}},
        {"entityType": "event", "name": "Checkout", "schemaJson": {"properties": {"card": {"type": "string", "metadata": {"com.vendor": {"dropped": true}}}}}}
    ]});
    assert_eq!(f.server.post_json(&format!("/api/app/projects/{}/schemas", f.p), &f.owner, &schemas).status, 200);
    let long = "x".repeat(300);
    let events = json!([
        f.event("Debug", json!({})),
        f.event("Checkout", json!({"card": "4242", "total": 5, "note": long})),
        f.event("Checkout", json!({})),
        f.event("Page View", json!({})),
    ]);
    let r = f.post("/track", &[FORM], form(&[("data", &base64(events.to_string().as_bytes()))]));
    assert_eq!((r.status, r.text.as_str()), (200, "1"), "dropped events count as accepted");
    assert!(f.stored("Debug").is_empty());
    let checkout = f.stored("Checkout");
    assert_eq!(checkout.len(), 2);
    let with_total = checkout.iter().find(|e| e["properties"].get("total").is_some()).unwrap();
    assert_eq!(with_total["properties"].get("card"), None);
    assert_eq!(with_total["properties"]["note"].as_str().unwrap().len(), 255);
    let counts = f.server.get(&format!("/api/app/projects/{}/event-counts?days=30", f.p), &f.owner).json();
    let count = |name: &str| counts["results"].as_array().unwrap().iter().find(|c| c["event"] == name).map(|c| c["count"].clone());
    assert_eq!((count("Checkout"), count("Page View"), count("Debug")), (Some(json!(2)), Some(json!(1)), None));
    // The read API finds them by distinct_id and property as imported events.
    f.post("/track", &[JSON], f.event("Page View", json!({"distinct_id": "u9", "plan": "pro"})).to_string().into_bytes());
    let r = f.server.get(&format!("/api/app/projects/{}/events?distinct_id=u9&where=plan=pro", f.p), &f.owner).json();
    assert_eq!(r["results"].as_array().unwrap().len(), 1);
}

/// The server keeps each project's compiled dictionary between requests (`ingest::cache`): a
/// schema written or deleted through the API changes what the very next `/track` and `/import`
/// request drop and record as violations.
fn a_schema_write_reaches_the_next_request(backend: Backend) {
    let f = fixture(backend);
    let track = |n: usize| {
        let r = f.post("/track", &[FORM], form(&[("data", &base64(f.event("Cached", json!({"n": n})).to_string().as_bytes()))]));
        assert_eq!((r.status, r.text.as_str()), (200, "1"));
    };
    let import = |n: usize| {
        let mut event = f.event("Cached", json!({"n": n, "time": now_ms(), "distinct_id": "u", "$insert_id": format!("i{n}")}));
        event["properties"].as_object_mut().unwrap().remove("token");
        let r = f.server.send("POST", "/import?strict=1", Some((&f.token, "")), &[JSON], Some(json!([event]).to_string().into_bytes()));
        assert_eq!(r.status, 200, "{}", r.text);
    };
    let schemas = format!("/api/app/projects/{}/schemas", f.p);
    let unknown = || {
        let r = f.server.get(&format!("/api/app/projects/{}/violations?limit=1000", f.p), &f.owner);
        assert_eq!(r.status, 200, "{}", r.text);
        let rows = r.json()["results"].as_array().unwrap().clone();
        rows.iter().filter(|v| v["event"] == "Cached" && v["code"] == "unknown_property").map(|v| v["count"].as_i64().unwrap()).sum::<i64>()
    };
    // Both routes compile the (empty) dictionary once and keep it.
    track(1);
    import(2);
    assert_eq!(f.stored("Cached").len(), 2);
    // The event becomes dropped: neither route stores it from the next request on.
    let dropped = json!({"entries": [{"entityType": "event", "name": "Cached", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}}]});
    assert_eq!(f.server.post_json(&schemas, &f.owner, &dropped).status, 200);
    track(3);
    import(4);
    assert_eq!(f.stored("Cached").len(), 2);
    // Kept again (a schema write merges, so `dropped` is turned off explicitly) with a property
    // `m` only: stored again, and its `n` is an unknown property for the check on arrival.
    let kept = json!({"entries": [{"entityType": "event", "name": "Cached",
        "schemaJson": {"metadata": {"com.vendor": {"dropped": false}}, "properties": {"m": {"type": "number"}}}}]});
    assert_eq!(f.server.post_json(&schemas, &f.owner, &kept).status, 200);
    let before = unknown();
    track(5);
    import(6);
    assert_eq!(f.stored("Cached").len(), 4);
    assert_eq!(unknown(), before + 2);
    // Deleted: the event has no schema again, and nothing is unknown about its properties.
    assert_eq!(f.server.delete(&format!("{schemas}/event/Cached"), &f.owner).status, 200);
    let before = unknown();
    track(7);
    assert_eq!(f.stored("Cached").len(), 5);
    assert_eq!(unknown(), before);
}

/// The paths and requests of the browser tracking library, which adds a trailing slash
/// (`/track/`, `/engage/`, `/groups/`) and sends `verbose=1&ip=1&_=<time>` with a base64 form
/// from the page's own origin, and identity fields in profile updates: each is answered as
/// without the slash, CORS included, and what it sent is stored (the identity fields are not
/// profile properties). `/import/` answers too.
fn the_browser_librarys_slashed_paths_are_the_same_routes(backend: Backend) {
    let f = fixture(backend);
    let origin = ("Origin", "http://shop.test:8080");
    let query = format!("?verbose=1&ip=1&_={}", now_ms());
    let send = |path: &str, records: Value| {
        let r = f.post(&format!("{path}{query}"), &[FORM, origin], form(&[("data", &base64(records.to_string().as_bytes()))]));
        assert_eq!((r.status, r.json()), (200, json!({"status": 1, "error": null})), "{path}");
        assert_eq!(r.header("access-control-allow-origin"), Some(origin.1), "{path}");
    };
    send("/track/", json!([f.event("Slashed", json!({"distinct_id": "u1", "$insert_id": "s1"}))]));
    // The library adds its identity fields to every profile update.
    let identity = json!({"$device_id": "19a2-device", "$user_id": "u1", "$had_persisted_distinct_id": true});
    let mut update = json!({"$token": f.token, "$distinct_id": "u1", "$set": {"plan": "pro"}});
    update.as_object_mut().unwrap().extend(identity.as_object().unwrap().clone());
    send("/engage/", json!([update]));
    send("/groups/", json!([{"$token": f.token, "$group_key": "Company", "$group_id": "acme", "$set": {"name": "Acme"}}]));
    let stored = f.stored("Slashed");
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["properties"]["ip"], "127.0.0.1", "ip=1 applies on /track/ too");
    let profile = f.server.get(&format!("/api/app/projects/{}/profiles/u1", f.p), &f.owner);
    assert_eq!(profile.json()["results"]["$properties"], json!({"plan": "pro"}), "{}", profile.text);
    let group = f.server.get(&format!("/api/app/projects/{}/groups/Company/acme", f.p), &f.owner);
    assert_eq!(group.json()["results"]["$properties"]["name"], "Acme", "{}", group.text);
    // The preflight of a JSON post, and a pixel.
    let r = f.server.send("OPTIONS", "/track/", None, &[origin, ("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "content-type")], None);
    assert!(r.status < 300 && r.header("access-control-allow-origin") == Some(origin.1), "{} {:?}", r.status, r.header("access-control-allow-origin"));
    let pixel = format!("/track/?img=1&data={}", urlencode(&base64(f.event("Pixel", json!({})).to_string().as_bytes())));
    let r = f.server.send("GET", &pixel, None, &[origin], None);
    assert_eq!((r.status, r.header("content-type")), (200, Some("image/gif")));
    // `/import/` with the project token as the Basic user name.
    let event = f.event("Imported", json!({"time": now_ms() - 1_000, "distinct_id": "u1", "$insert_id": "i1"}));
    let r = f.server.send("POST", "/import/", Some((&f.token, "")), &[JSON], Some(json!([event]).to_string().into_bytes()));
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (200, json!(1)), "{}", r.text);
}

/// The largest `GET` this server reads, as README.md states it: a request target (path and
/// query) of 65,534 bytes reaches `/track`; one byte more gets hyper's bare 414 (its
/// `MAX_URI_LEN`, not configurable), without a body or CORS headers, before any route runs. Sent
/// over a plain socket, since the client's own URI type has the same cap. One store suffices: the
/// limit is the HTTP layer's.
#[test]
fn a_get_is_read_up_to_hypers_uri_limit() {
    use std::io::{Read, Write};
    let f = fixture(Backend::Sqlite);
    let event = json!({"event": "Beacon", "properties": {"token": f.token, "pad": "x".repeat(48_000)}});
    let data = urlencode(&base64(event.to_string().as_bytes()));
    let get = |len: usize| {
        let mut target = format!("/track?verbose=1&data={data}&_=");
        target.push_str(&"x".repeat(len - target.len()));
        let mut socket = std::net::TcpStream::connect(f.server.base.trim_start_matches("http://")).unwrap();
        write!(socket, "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://app.example\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_owned(), head.to_ascii_lowercase().contains("access-control-allow-origin"), body.to_owned())
    };
    let (status, cors, body) = get(65_534);
    assert_eq!((status.as_str(), cors, body.as_str()), ("HTTP/1.1 200 OK", true, r#"{"status":1,"error":null}"#));
    let (status, cors, body) = get(65_535);
    assert_eq!((status.as_str(), cors, body.as_str()), ("HTTP/1.1 414 URI Too Long", false, ""));
    assert_eq!(f.server.get(&format!("/api/app/projects/{}/events", f.p), &f.owner).json()["results"].as_array().unwrap().len(), 1);
}

on_both_stores!(
    the_browser_librarys_slashed_paths_are_the_same_routes,
    a_schema_write_reaches_the_next_request,
    every_format_is_stored_and_answered_1,
    every_answer_form,
    time_insert_id_distinct_id_and_ip,
    a_partial_batch_stores_the_valid_events_and_answers_0,
    a_record_that_is_not_utf8_says_so,
    a_batch_over_16_kib_is_answered_as_a_small_one,
    tokens_decide_the_project_and_refuse_strangers,
    unreadable_events_naming_no_project_are_a_400_not_a_401,
    the_properties_message_follows_the_track_rules,
    tracked_events_are_dropped_filtered_and_counted_like_imported_ones,
);
