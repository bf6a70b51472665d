//! The real binary's log: a failed authentication at info (without the credential), one line
//! per request at debug (without the query string), and no colour codes when the log is not
//! written to a terminal.

use crate::common::process::{credentials, Data};
use crate::common::{Backend, Client};
use std::process::Stdio;

#[test]
fn failed_authentication_is_logged_at_info_without_credentials_or_colours() {
    let data = Data::new(Backend::Sqlite);
    // `NO_COLOR` empty counts as unset: the log is plain only because it goes to a pipe.
    let mut server = data.spawn_with("datadict_server=info", &[], &[], &[("NO_COLOR", "")], Stdio::inherit());
    let creds = credentials(data.dir.path());
    let path = format!("/api/app/projects/{}/schemas", creds.project_id);
    let r = Client::new(&server.base).send("GET", &path, Some((&creds.username, "wrong-secret-1234")), &[], None).unwrap();
    assert_eq!(r.status, 401);
    let line = server.line_with("authentication failed");
    assert!(line.contains(&format!("GET {path} answered 401")), "{line}");
    assert!(!line.contains("wrong-secret-1234") && !line.contains(&creds.username), "{line}");
    assert!(!line.contains('\u{1b}'), "colour codes in a log written to a pipe: {line:?}");
}

#[test]
fn every_request_is_logged_at_debug_without_its_query_string() {
    let data = Data::new(Backend::Sqlite);
    let mut server = data.spawn("datadict_server=debug", &[], Stdio::inherit());
    let creds = credentials(data.dir.path());
    let limits = format!("/api/app/limits?data=e30&token={}", creds.project_token);
    Client::new(&server.base).send("GET", &limits, None, &[], None).unwrap();
    let line = server.line_with("datadict_server::requests");
    assert!(line.contains("GET /api/app/limits 200"), "{line}");
    assert!(!line.contains(&creds.project_token) && !line.contains("data="), "{line}");
}
