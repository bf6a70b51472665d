//! The bad-input corpus: every file of `tests/data/bad-input/` is sent as `cases.tsv` describes
//! (method, path, credentials, content encoding; the file's extension gives its `Content-Type`:
//! `.ndjson`, `.csv`, `.form` for a form, `.txt` for `text/plain`, JSON otherwise), and must get the
//! expected 4xx with a specific message, never a 5xx; the server must still answer after each
//! case. The tracking routes are asked for `verbose=1`, so that their refusals are JSON too.

use crate::common::{on_both_stores, Backend, Server};
use datadict_server::store::Role;
use serde_json::Value;
use std::path::Path;

fn every_bad_input_gets_a_specific_4xx_and_the_server_stays_up(backend: Backend) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad-input");
    let manifest = std::fs::read_to_string(dir.join("cases.tsv")).unwrap();
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    let p = project.id.to_string();
    let r = server.post_json(&format!("/api/app/projects/{p}/lookup-tables"), &owner, &serde_json::json!({"name": "corpus"}));
    assert_eq!(r.status, 201, "{}", r.text);
    let lookup = r.json()["results"]["id"].as_str().unwrap().to_owned();

    let mut failures = Vec::new();
    let mut count = 0;
    for line in manifest.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [file, method, path, auth, encoding, status, expected] = cols[..] else {
            panic!("a line of cases.tsv needs 7 tab-separated columns: {line}");
        };
        count += 1;
        let body = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let path = path.replace("{p}", &p).replace("{lookup}", &lookup);
        let auth = match auth {
            "owner" => Some((owner.username.as_str(), owner.secret.as_str())),
            "token" => Some((project.token.as_str(), "")),
            "wrongtoken" => Some(("not-a-project-token", "")),
            "none" | "garbage" => None,
            other => panic!("unknown auth `{other}` in {file}"),
        };
        let mut headers = vec![];
        if auth.is_none() && line.contains("\tgarbage\t") {
            headers.push(("Authorization", "Basic !!not-base64!!"));
        }
        if encoding != "-" {
            headers.push(("Content-Encoding", encoding));
        }
        // The file's extension says how the body is labelled.
        let content_type = match file {
            f if f.contains(".ndjson") => "application/x-ndjson",
            f if f.contains(".csv") => "text/csv",
            f if f.contains(".form") => "application/x-www-form-urlencoded",
            f if f.contains(".txt") => "text/plain;charset=UTF-8",
            _ => "application/json",
        };
        headers.push(("Content-Type", content_type));
        let body = (method != "GET").then_some(body);
        let reply = match server.client().send(method, &path, auth, &headers, body) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{file}: no answer ({e})"));
                continue;
            }
        };
        let want: u16 = status.parse().unwrap();
        if reply.status != want {
            failures.push(format!("{file}: status {} instead of {want}: {}", reply.status, excerpt(&reply.text)));
        }
        if reply.status >= 500 {
            failures.push(format!("{file}: a server error: {}", excerpt(&reply.text)));
        }
        match serde_json::from_str::<Value>(&reply.text) {
            Ok(body) => {
                if let Some(problem) = vague(&body) {
                    failures.push(format!("{file}: {problem}: {}", excerpt(&reply.text)));
                }
            }
            Err(_) => failures.push(format!("{file}: the answer is not JSON: {}", excerpt(&reply.text))),
        }
        if !expected.is_empty() && !reply.text.contains(expected) {
            failures.push(format!("{file}: the answer does not mention `{expected}`: {}", excerpt(&reply.text)));
        }
        // The server is still up and well.
        let alive = server.send("GET", "/api/app/limits", None, &[], None);
        assert_eq!(alive.status, 200, "the server stopped answering after {file}");
    }
    assert!(count >= 100, "the corpus has only {count} cases");
    assert!(failures.is_empty(), "{} of {count} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// Why an error body is not specific, if it is not.
fn vague(body: &Value) -> Option<String> {
    if let Some(records) = body["failed_records"].as_array() {
        if records.is_empty() {
            return Some("`failed_records` is empty".into());
        }
        for r in records {
            let message = r["message"].as_str().unwrap_or_default();
            if message.len() < 10 {
                return Some(format!("record {} has no real message", r["index"]));
            }
        }
        return None;
    }
    let error = body["error"].as_str().unwrap_or_default();
    if error.len() < 15 || error == "internal error" {
        return Some("the error message is missing or generic".into());
    }
    None
}

fn excerpt(text: &str) -> String {
    text.chars().take(300).collect()
}

on_both_stores!(every_bad_input_gets_a_specific_4xx_and_the_server_stays_up);
