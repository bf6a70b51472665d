//! The migration's download of the source's export, against a scripted stand-in of the source
//! (`common::amplitude`): a source that stops answering fails the job; a busy or failing source
//! is asked again, as long as it asks (`Retry-After`), a bounded number of times; an answer that
//! is not an export and a corrupt member are described as the source's; the event limit is a
//! bound the range must stay under.

use crate::common::amplitude::{body, config, export, row, scripted, zip, Canned};
use crate::common::Server;
use crate::migrate::run;
use serde_json::{json, Value};
use std::time::Duration;

fn migrate(answers: Vec<Canned>, max_events: u64) -> (Value, crate::common::amplitude::Scripted) {
    let source = scripted(answers);
    let server = Server::start_with(config(&source, max_events));
    let project = server.project("p");
    (run(&server, &body(&project.token, false)), source)
}

fn errors(job: &Value) -> String {
    job["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_owned()).collect::<Vec<_>>().join(" | ")
}

/// A source that accepts the request and never answers fails the job once the read timeout (one
/// second here) passes, rather than leaving it `exporting` forever.
#[test]
fn a_source_that_stops_answering_fails_the_job() {
    let (job, _) = migrate(vec![Canned::Hang], 100);
    assert_eq!(job["phase"], "failed", "{job}");
    let e = errors(&job);
    assert!(e.contains("did not answer within 1 s"), "{e}");
}

/// A 429 with `Retry-After: 1`, then a 503: the download is asked again, no sooner than the
/// source asked, and the export of the third answer is migrated. A source that answers 500 every
/// time fails the job after the attempts (three here), saying so.
#[test]
fn a_busy_source_is_asked_again_as_it_asks() {
    let events = export(&[row(json!({"$insert_id": "r-1", "user_id": "u"}))]);
    let answers = vec![Canned::status(429, &[("retry-after", "1")], "Too many requests"), Canned::status(503, &[], "unavailable"), Canned::zip(events)];
    let (job, source) = migrate(answers, 100);
    assert_eq!(job["phase"], "succeeded", "{job}");
    assert_eq!(job["events"]["loaded"], 1);
    let at = source.requests.lock().unwrap().clone();
    assert_eq!(at.len(), 3);
    assert!(at[1] - at[0] >= Duration::from_millis(950), "Retry-After: 1 was not honoured: {:?}", at[1] - at[0]);

    let (job, source) = migrate(vec![Canned::status(500, &[], "Internal Server Error")], 100);
    assert_eq!(job["phase"], "failed", "{job}");
    assert_eq!(source.requests.lock().unwrap().len(), 3);
    let e = errors(&job);
    assert!(e.contains("answered 500 3 times") && e.contains("start the migration again later"), "{e}");
}

/// A 200 that is a web page, not the export (a wrong source URL, a login page), is described by
/// what the source answered: its content type and first bytes, and the setting to check. A member
/// that is not valid gzip is the source's corrupt export, not a body to compress.
#[test]
fn answers_that_are_not_an_export_are_described() {
    let page = Canned::Answer { status: 200, headers: vec![("content-type", "text/html".into())], body: b"<html><body>Login</body></html>".to_vec() };
    let (job, _) = migrate(vec![page], 100);
    assert_eq!(job["phase"], "failed", "{job}");
    let e = errors(&job);
    assert!(e.contains("text/html") && e.contains("<html><body>Login") && e.contains("DATADICT_AMPLITUDE_URL"), "{e}");
    assert!(!e.contains("as it was downloaded"), "{e}");

    let member = br#"{"event_type":"X","user_id":"u","event_time":"2024-01-01 12:00:00.000000"}"#.to_vec();
    let (job, _) = migrate(vec![Canned::zip(zip(&[("187520/187520_2024-01-01_12#0.json.gz", member)]))], 100);
    assert_eq!(job["phase"], "failed", "{job}");
    let e = errors(&job);
    assert!(e.contains("is not valid gzip") && e.contains("the source's export is corrupt") && e.contains("187520_2024-01-01_12#0.json.gz"), "{e}");
    assert!(!e.contains("Content-Encoding"), "{e}");
}

/// Spec §8: the service takes sources of *under* the limit: a range of exactly the limit is
/// refused before anything is loaded, one under it is migrated, and the message says what to do
/// when a single day is over it.
#[test]
fn the_event_limit_is_a_bound_to_stay_under() {
    let rows: Vec<Value> = (0..5).map(|i| row(json!({"$insert_id": format!("e-{i}"), "user_id": "u"}))).collect();
    let (job, _) = migrate(vec![Canned::zip(export(&rows))], 5);
    assert_eq!(job["phase"], "failed", "{job}");
    assert_eq!(job["events"]["loaded"], 0);
    let e = errors(&job);
    assert!(e.contains("under 5 events") && e.contains("a single day"), "{e}");
    let (job, _) = migrate(vec![Canned::zip(export(&rows))], 6);
    assert_eq!(job["phase"], "succeeded", "{job}");
    assert_eq!(job["events"]["loaded"], 5);
}

/// `GET /api/app/limits` reports the migration's settings: the event bound, the source URLs and
/// the download's read timeout and attempts.
#[test]
fn the_limits_route_reports_the_migration_settings() {
    let source = scripted(vec![Canned::Hang]);
    let server = Server::start_with(config(&source, 42));
    let limits = server.send("GET", "/api/app/limits", None, &[], None).json();
    let m = &limits["migration"];
    assert_eq!((&m["events_below"], &m["source_url"], &m["eu_source_url"]), (&json!(42), &json!(source.base), &json!(source.base)), "{limits}");
    assert_eq!((&m["read_timeout_secs"], &m["download_attempts"]), (&json!(1), &json!(3)), "{limits}");
}
