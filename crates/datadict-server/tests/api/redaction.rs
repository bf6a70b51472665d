//! Project tokens kept out of the bad store's samples over real HTTP, for refused records that
//! cannot be parsed (not UTF-8, a bad escape, cut short), on `/track`, `/import` and `/engage`.
//! `quality.rs` covers records that parse. What the dictionary drops is kept out of samples too.

use crate::common::{on_both_stores, Backend, Server};
use datadict_server::store::Role;
use serde_json::json;

/// A refused record's token is written `"[redacted]"` in its sample even when the record is no
/// JSON: found by the value of its `token` or `$token` member (a key written with escapes too),
/// or, cut short, from where it starts; the samples are kept all the same.
fn unparsable_records_keep_no_token_in_their_samples(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let t = project.token.as_str();
    let json = ("Content-Type", "application/json");
    let ndjson = ("Content-Type", "application/x-ndjson");

    // `/track`: a readable event names the project; the others carry its token unparsed.
    let mut body = format!(r#"[{{"event":"Readable","properties":{{"token":"{t}"}}}},"#).into_bytes();
    body.extend_from_slice(format!(r#"{{"event":"NotUtf8","properties":{{"token":"{t}","x":""#).as_bytes());
    body.extend_from_slice(b"\xff\"}},");
    body.extend_from_slice(format!(r#"{{"event":"Escape","properties":{{"token":"{t}","x":"\x41"}}}}]"#).as_bytes());
    let r = server.send("POST", "/track?verbose=1", None, &[json], Some(body));
    assert!(r.status == 400 && r.text.contains("stored 1 of 3 events"), "{}", r.text);

    // `/import` with a service account: no token is known to the server, only written in records.
    let mut lines = format!(r#"{{"event":"Import","properties":{{"\u0074oken":"{t}","x":""#).into_bytes();
    lines.extend_from_slice(b"\xff\"}}\n");
    lines.extend_from_slice(format!(r#"{{"event":"Import","properties":{{"token":"{t}","time":}}}}"#).as_bytes());
    lines.extend_from_slice(format!("\n{{\"event\":\"Import\",\"properties\":{{\"token\":\"{}", &t[..20]).as_bytes());
    let path = format!("/import?project_id={}", project.id);
    let r = server.send("POST", &path, Some((&owner.username, &owner.secret)), &[ndjson], Some(lines));
    assert_eq!(r.status, 400, "{}", r.text);

    // `/engage`: an update cut short after its `$token`, beside a readable one.
    let lines = format!("{}\n{{\"$token\":\"{t}\",\"$distinct_id\":\"u2\",\"$set\":{{\"a\":", json!({"$token": t, "$distinct_id": "u1", "$set": {"a": 1}}));
    let r = server.send("POST", "/engage", None, &[ndjson], Some(lines.into_bytes()));
    assert_eq!((r.status, r.json()["num_records_imported"].clone()), (200, json!(1)), "{}", r.text);

    let r = server.get(&format!("/api/app/projects/{}/rejected?limit=1000", project.id), &owner);
    assert_eq!(r.status, 200, "{}", r.text);
    let rows = r.json()["results"].as_array().unwrap().clone();
    let samples: Vec<String> = rows.iter().flat_map(|row| row["samples"].as_array().unwrap().iter().map(|s| s["record"].as_str().unwrap().to_owned())).collect();
    // One sample for each refused record: three of /import, two of /track and one of /engage.
    assert_eq!(samples.len(), 6, "{rows:#?}");
    for sample in &samples {
        assert!(sample.contains("[redacted]"), "{sample}");
        assert!(!sample.contains(&t[..20]), "a sample holds the token: {sample}");
    }
}


/// What the dictionary drops never stays in a sample (spec §2.4, §2.5: dropped at ingestion): a
/// dropped property's value and every value of a dropped event are written `[dropped]` in the
/// violations' samples, for the first event of a shape and for the ones after it (`/import` and
/// `/track`), and in the sample of a refused record whose event drops it.
fn dropped_values_stay_out_of_samples(backend: Backend) {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let dropped = json!({"com.vendor": {"dropped": true}});
    for (name, schema) in [
        ("Purchase", json!({"properties": {"card": {"type": "string", "metadata": dropped}, "price": {"type": "number"}}})),
        ("Debug", json!({"properties": {}, "metadata": dropped})),
    ] {
        let r = server.post_json(&format!("/api/app/projects/{}/schemas/event/{name}", project.id), &owner, &schema);
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let now = crate::common::now_ms();
    let event = |name: &str, i: usize, secret: &str| {
        json!({"event": name, "properties": {"time": now, "distinct_id": "u", "$insert_id": format!("{name}-{i}"), "card": secret, "extra": i, "price": "1"}})
    };
    let mut lines: String = (0..3).map(|i| format!("{}\n", event("Purchase", i, "CARD-SECRET"))).collect();
    lines.push_str(&format!("{}\n", event("Debug", 0, "DEBUG-SECRET")));
    // Refused (no `distinct_id`) under a name that drops `card`.
    lines.push_str(&format!("{}\n", json!({"event": "Purchase", "properties": {"time": now, "$insert_id": "r", "card": "REFUSED-SECRET"}})));
    let path = format!("/import?project_id={}", project.id);
    let r = server.send("POST", &path, Some((&owner.username, &owner.secret)), &[("Content-Type", "application/x-ndjson")], Some(lines.into_bytes()));
    assert_eq!(r.status, 200, "{}", r.text);
    let tracked = json!({"event": "Purchase", "properties": {"token": project.token, "card": "TRACK-SECRET", "extra": 1}});
    let r = server.send("POST", "/track?verbose=1", None, &[("Content-Type", "application/json")], Some(tracked.to_string().into_bytes()));
    assert_eq!(r.status, 200, "{}", r.text);

    let mut samples = Vec::new();
    for listing in ["violations", "rejected"] {
        let r = server.get(&format!("/api/app/projects/{}/{listing}?limit=1000", project.id), &owner);
        assert_eq!(r.status, 200, "{}", r.text);
        for row in r.json()["results"].as_array().unwrap() {
            samples.extend(row["samples"].as_array().unwrap().iter().map(|s| s.get("record").unwrap_or(s).as_str().unwrap().to_owned()));
        }
    }
    let text = samples.join("\n");
    for secret in ["CARD-SECRET", "DEBUG-SECRET", "REFUSED-SECRET", "TRACK-SECRET"] {
        assert!(!text.contains(secret), "a sample holds the dropped value {secret}:\n{text}");
    }
    // The samples are kept all the same, with the names of what was dropped.
    assert!(samples.iter().any(|s| s.contains(r#""card":"[dropped]""#) && s.contains(r#""extra":2"#)), "{text}");
    assert!(samples.iter().any(|s| s.contains(r#""event":"Debug""#) && s.contains(r#""extra":"[dropped]""#)), "{text}");
    assert!(samples.iter().any(|s| s.contains(r#""$insert_id":"r""#) && s.contains(r#""card":"[dropped]""#)), "{text}");
}

on_both_stores!(unparsable_records_keep_no_token_in_their_samples, dropped_values_stay_out_of_samples);
