//! Project tokens kept out of the bad store's samples over real HTTP, for refused records that
//! cannot be parsed (not UTF-8, a bad escape, cut short), on `/track`, `/import` and `/engage`.
//! `quality.rs` covers records that parse.

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

on_both_stores!(unparsable_records_keep_no_token_in_their_samples);
