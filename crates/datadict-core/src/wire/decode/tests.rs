//! The framing decision and the parameters, one table each.

use super::*;
use crate::wire::AnswerKind;
use base64::engine::general_purpose;
use base64::Engine;

const JSON: Option<&str> = Some("application/json");
const FORM: Option<&str> = Some("application/x-www-form-urlencoded");
const NDJSON: Option<&str> = Some("application/x-ndjson");
const PLAIN: Option<&str> = Some("text/plain;charset=UTF-8");

fn post<'a>(route: Route, content_type: Option<&'a str>, query: &'a str, body: &'a [u8]) -> WireRequest<'a> {
    WireRequest { route, method: Method::Post, content_type, query, body }
}

fn get(route: Route, query: &str) -> WireRequest<'_> {
    WireRequest { route, method: Method::Get, content_type: None, query, body: b"" }
}

/// The payload as one line, `carrier framing format json|base64 text`, or `! message`.
fn summary(payload: &Result<Payload<'_>, WireError>) -> String {
    match payload {
        Ok(p) => {
            let encoding = if p.base64 { "base64" } else { "json" };
            format!("{:?} {:?} {:?} {encoding} {}", p.carrier, p.framing, p.format, String::from_utf8_lossy(&p.bytes))
        }
        Err(e) => format!("! {e}"),
    }
}

/// `expected` is the whole summary of a payload, or a part of an error's message after `! `.
#[track_caller]
fn check(request: WireRequest<'_>, expected: &str) {
    let got = summary(&decode_request(&request).payload);
    match expected.strip_prefix("! ") {
        Some(part) => assert!(got.starts_with("! ") && got.contains(part), "{request:?}\n got: {got}\nwant: {expected}"),
        None => assert_eq!(got, expected, "{request:?}"),
    }
}

fn b64(text: &str) -> String {
    general_purpose::STANDARD.encode(text)
}

/// Percent-encodes every byte that is not unreserved, as `encodeURIComponent` does.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[test]
fn json_bodies() {
    use Route::*;
    let one = br#"{"event":"a"}"#;
    check(post(Track, JSON, "", br#"[{"event":"a"}]"#), r#"JsonBody Array JsonArray json [{"event":"a"}]"#);
    check(post(Track, JSON, "", one), r#"JsonBody Object Ndjson json {"event":"a"}"#);
    check(post(Track, Some("Application/JSON ; charset=utf-8"), "", one), r#"JsonBody Object Ndjson json {"event":"a"}"#);
    check(post(Track, Some("text/json"), "", one), r#"JsonBody Object Ndjson json {"event":"a"}"#);
    check(post(Track, JSON, "", b"  {\"event\":\"a\"}\n\n"), "JsonBody Object Ndjson json   {\"event\":\"a\"}\n\n");
    // An object over several lines is wrapped, so that NDJSON does not cut it.
    check(post(Track, JSON, "", b"{\n \"event\": \"a\"\n}\n"), "JsonBody Object JsonArray json [{\n \"event\": \"a\"\n}\n]");
    check(post(Track, JSON, "", b"\xEF\xBB\xBF{\n}"), "JsonBody Object JsonArray json [{\n}]");
    check(post(Track, JSON, "", b"{\"event\":\"}\\\"\n\"}"), "JsonBody Object JsonArray json [{\"event\":\"}\\\"\n\"}]");
    check(
        post(Track, JSON, "", b"{\"a\":1}\n{\"a\":2}"),
        "! the JSON holds more than one value (the second starts at line 2); send one object or a JSON array",
    );
    check(post(Track, JSON, "", b"{\"a\":1} 7"), "! (the second starts at line 1)");
    check(post(Track, JSON, "", b"{\"a\":{\"b\":1}"), "! the JSON object is not closed");
    // Arrays are left whole to the import path, which reports their framing.
    check(post(Track, JSON, "", b"[{}] x"), "JsonBody Array JsonArray json [{}] x");
    // NDJSON: labelled, or found, where the route takes it.
    check(post(Import, JSON, "", b"{\"a\":1}\n{\"a\":2}"), "JsonBody Ndjson Ndjson json {\"a\":1}\n{\"a\":2}");
    check(post(Engage, JSON, "", b"{\"a\":1}\n{\"a\":2}"), "JsonBody Ndjson Ndjson json {\"a\":1}\n{\"a\":2}");
    check(post(Import, NDJSON, "", b"{\"a\":1}\n{\"a\":2}"), "JsonBody Ndjson Ndjson json {\"a\":1}\n{\"a\":2}");
    check(post(Import, Some("application/ndjson"), "", b"{\"a\":1}"), "JsonBody Ndjson Ndjson json {\"a\":1}");
    check(post(Groups, NDJSON, "", b"{\"a\":1}"), "JsonBody Ndjson Ndjson json {\"a\":1}");
    check(post(Track, NDJSON, "", b"{\"a\":1}"), "! /track does not take NDJSON; send a JSON event object or an array of events");
    // Bodies that say JSON and are not.
    check(post(Import, JSON, "", b""), "! the body holds no events: it is empty, and the query string has no `data`; send a JSON array of events");
    check(post(Engage, None, "", b" \r\n"), "! the body holds no profile updates: it is empty, and the query string has no `data`; send a JSON profile update");
    check(post(Track, JSON, "", b"data=%5B%5D"), "! the body is labelled `application/json` but looks form-encoded (it starts with `data=%5B%5D`); send `Content-Type: application/x-www-form-urlencoded`");
    check(
        post(Track, JSON, "", b"hello world"),
        "! the body is labelled `application/json` but is not a JSON object or array (it starts with `hello world`)",
    );
    check(post(Track, JSON, "", b"\x00\x01{}"), "! (it starts with `\\x00\\x01{}`)");
    // Where NDJSON is read, other JSON values (and what is not JSON) are records, each reported
    // by the record checks; so is an object that does not end.
    check(post(Import, NDJSON, "", b"\"text\""), "JsonBody Ndjson Ndjson json \"text\"");
    check(post(Engage, JSON, "", b"42"), "JsonBody Ndjson Ndjson json 42");
    check(post(Import, JSON, "", b"\x00\x01{}"), "JsonBody Ndjson Ndjson json \0\u{1}{}");
    check(post(Engage, JSON, "", b"{\"$distinct_id\":"), "JsonBody Ndjson Ndjson json {\"$distinct_id\":");
    // A JSON body and `data` in the query string are two sets of records.
    check(post(Track, JSON, "data=%5B%5D", b"[]"), "! `data` is in both the query string and the body");
}

#[test]
fn form_bodies() {
    use Route::*;
    // The token makes the base64 hold `+` and end in `=`.
    let event = r#"{"event":"a","properties":{"token":"t>>?"}}"#;
    let form_json = format!("data={}", url_encode(event));
    check(post(Track, FORM, "", form_json.as_bytes()), &format!("FormBody Object Ndjson json {event}"));
    let array = format!("[{event}]");
    let form_b64 = format!("data={}&verbose=1", url_encode(&b64(&array)));
    check(post(Import, FORM, "", form_b64.as_bytes()), &format!("FormBody Array JsonArray base64 {array}"));
    // Base64 sent without percent-encoding: its `+` arrives as a space, its `=` stays.
    let raw_b64 = format!("data={}", b64(event));
    assert!(raw_b64.contains('+') && raw_b64.ends_with('='), "{raw_b64}");
    check(post(Track, FORM, "", raw_b64.as_bytes()), &format!("FormBody Object Ndjson base64 {event}"));
    let url_safe = format!("data={}", general_purpose::URL_SAFE_NO_PAD.encode(event));
    check(
        post(Track, Some("application/x-www-form-urlencoded; charset=UTF-8"), "", url_safe.as_bytes()),
        &format!("FormBody Object Ndjson base64 {event}"),
    );
    // Raw JSON in a form (as `curl -d` sends it) needs no decoding.
    check(post(Track, FORM, "", b"data=[{\"event\":\"a\"}]"), "FormBody Array JsonArray json [{\"event\":\"a\"}]");
    check(post(Track, FORM, "", b"data=%7B%0A%7D"), "FormBody Object JsonArray json [{\n}]");
    // The import takes the same forms (issue 19: how server-side libraries send imports).
    check(post(Import, FORM, "project_id=1", b"data=%5B%7B%7D%5D&verbose=1"), "FormBody Array JsonArray json [{}]");
    // Refusals.
    check(
        post(Track, FORM, "", b"verbose=1&ip=1"),
        "! the body is form-encoded but has no `data` field (found `verbose`, `ip`); send `data=<JSON or base64 JSON>`",
    );
    check(post(Track, FORM, "", b"a=1&b=2&c=3&d=4&e=5&f=6&g=7"), "! (found `a`, `b`, `c`, `d`, `e`, …)");
    check(post(Track, FORM, "", b"a=1&b=2&c=3&d=4&e=5"), "! (found `a`, `b`, `c`, `d`, `e`); send");
    check(post(Track, FORM, "", b"a=1&b=2&c=3&d=4&e=5&f=6"), "! (found `a`, `b`, `c`, `d`, `e`, …); send");
    check(post(Track, FORM, "", b"data="), "! `data` in the body is empty; send `data=<JSON or base64 JSON>`");
    check(post(Track, FORM, "", b"data=hello"), "! `data` in the body is neither JSON (it starts with `hello`, not `{` or `[`) nor base64");
    check(post(Track, FORM, "", b"data=%5B%zz"), "! the body has bad percent-encoding at byte 8 (`%zz`)");
    check(post(Track, FORM, "", b"verbose=1&data=100%"), "! the body has bad percent-encoding at byte 18 (`%`)");
    check(post(Track, FORM, "", b"da%ta=1"), "! the body has bad percent-encoding at byte 2 (`%ta`)");
    check(post(Track, FORM, "", b"data=%5B%5D&data=%5B%5D"), "! `data` appears more than once in the body; send it once");
    check(post(Track, FORM, "data=%5B%5D", b"data=%5B%5D"), "! `data` is in both the query string and the body");
    check(
        post(Track, FORM, "", b"[{\"event\":\"a\"}]"),
        "! the body is labelled `application/x-www-form-urlencoded` but is JSON (it starts with `[{\"event\":\"a\"}]`)",
    );
    check(
        post(Track, FORM, "", format!("data={}", url_encode(&b64("7"))).as_bytes()),
        "! what it encodes is not a JSON object or array (it starts with `7`)",
    );
    // `data` holds one JSON value, even where the route takes NDJSON bodies.
    check(post(Import, FORM, "", b"data=%7B%7D%0A%7B%7D"), "! the JSON holds more than one value (the second starts at line 2)");
    check(post(Track, FORM, "", b"data=%7B"), "! the JSON object is not closed");
}

#[test]
fn unlabelled_bodies_and_other_types() {
    use Route::*;
    // `navigator.sendBeacon(url, string)` labels the body `text/plain`.
    check(post(Track, PLAIN, "", b"[{}]"), "JsonBody Array JsonArray json [{}]");
    check(post(Track, PLAIN, "", b"data=%5B%5D"), "FormBody Array JsonArray json []");
    check(post(Track, None, "", b"{}"), "JsonBody Object Ndjson json {}");
    check(post(Track, None, "", b"data=e30"), "FormBody Object Ndjson base64 {}");
    check(post(Track, Some("application/octet-stream"), "", b"{}"), "JsonBody Object Ndjson json {}");
    check(
        post(Track, PLAIN, "", b"hello"),
        "! the body (`text/plain`) is neither JSON nor form-encoded with a `data` field (it starts with `hello`); send a JSON event object",
    );
    check(
        post(Track, None, "", b"verbose=1"),
        "! the body (without `Content-Type`) is neither JSON nor form-encoded with a `data` field (it starts with `verbose=1`)",
    );
    check(post(Track, Some(""), "", b"x"), "! the body (without `Content-Type`) is neither JSON");
    check(
        post(Track, Some("application/xml"), "", b"<a/>"),
        "! `Content-Type: application/xml` is not read here; send a JSON event object",
    );
    check(post(Track, Some("multipart/form-data; boundary=x"), "", b"--x"), "! `Content-Type: multipart/form-data` is not read here");
    // With no body, the label does not matter and the query string may carry the records.
    check(post(Track, Some("application/xml"), "data=%5B%5D", b""), "Query Array JsonArray json []");
    check(post(Track, JSON, "?data=e30", b""), "Query Object Ndjson base64 {}");
    check(post(Track, FORM, "verbose=1", b""), "! the body holds no events: it is empty, and the query string has no `data`");
}

#[test]
fn get_requests() {
    use Route::*;
    let event = r#"{"event":"pixel","properties":{"token":"t"}}"#;
    check(get(Track, &format!("data={}&img=1", url_encode(&b64(event)))), &format!("Query Object Ndjson base64 {event}"));
    check(get(Track, &format!("?data={}", url_encode(event))), &format!("Query Object Ndjson json {event}"));
    check(get(Engage, &format!("data={}&_=1700000000", b64(event).replace('+', "%2B"))), &format!("Query Object Ndjson base64 {event}"));
    check(get(Groups, "data=%5B%5D"), "Query Array JsonArray json []");
    check(
        get(Track, "img=1&verbose=0"),
        "! the query string has no `data` parameter (found `img`, `verbose`); a GET request sends its records as `?data=",
    );
    check(get(Track, ""), "! the query string has no `data` parameter (no fields)");
    check(get(Track, "data=%"), "! the query string has bad percent-encoding at byte 5 (`%`)");
    // A GET's body is not read.
    let with_body = WireRequest { body: b"[{}]", content_type: JSON, ..get(Track, "") };
    check(with_body, "! the query string has no `data` parameter");
}

#[test]
fn payloads_borrow_what_needs_no_decoding() {
    let body = br#"[{"event":"a"}]"#;
    let decoded = decode_request(&post(Route::Track, JSON, "", body));
    assert!(matches!(decoded.payload, Ok(Payload { bytes: Cow::Borrowed(b), .. }) if b.as_ptr() == body.as_ptr()));
    let decoded = decode_request(&post(Route::Track, FORM, "", b"verbose=1&data=[{}]"));
    assert!(matches!(decoded.payload, Ok(Payload { bytes: Cow::Borrowed(b"[{}]"), .. })));
}

/// The parameters as one line, `answer ip= strict= project=`, then ` ! message` if refused.
fn params_summary(decoded: &Decoded<'_>) -> String {
    let p = &decoded.params;
    let answer = match &p.answer {
        AnswerKind::Text => "text".to_owned(),
        AnswerKind::Verbose => "verbose".to_owned(),
        AnswerKind::Pixel => "pixel".to_owned(),
        AnswerKind::Script { callback, verbose: false } => format!("script:{callback}"),
        AnswerKind::Script { callback, verbose: true } => format!("script-verbose:{callback}"),
    };
    let flag = |v: Option<bool>| v.map_or("-", |v| if v { "1" } else { "0" });
    let project = match &p.project_id {
        None => "-",
        Some(Ok(id)) => id,
        Some(Err(_)) => "?",
    };
    let mut line = format!("{answer} ip={} strict={} project={project}", flag(p.ip), flag(p.strict));
    if let Err(e) = &decoded.payload {
        line.push_str(&format!(" ! {e}"));
    }
    line
}

/// Parameters from `query` and the form `body` (given `data=[{}]` when neither has `data`).
/// `expected` is the whole summary, or its start and then a part of the error after ` ! `.
#[track_caller]
fn check_params(query: &str, body: &str, expected: &str) {
    let body = if query.contains("data=") || body.contains("data=") { body.to_owned() } else { format!("{body}&data=%5B%7B%7D%5D") };
    let got = params_summary(&decode_request(&post(Route::Track, FORM, query, body.as_bytes())));
    match expected.split_once(" ! ") {
        Some((head, part)) => assert!(got.starts_with(head) && got.contains(part), "{query} | {body}\n got: {got}\nwant: {expected}"),
        None => assert_eq!(got, expected, "{query} | {body}"),
    }
}

#[test]
fn parameters() {
    check_params("", "", "text ip=- strict=- project=-");
    check_params("verbose=1", "", "verbose ip=- strict=- project=-");
    check_params("", "verbose=1", "verbose ip=- strict=- project=-");
    check_params("ip=1&strict=1&project_id=42", "", "text ip=1 strict=1 project=42");
    check_params("", "ip=0&strict=&project_id=7", "text ip=0 strict=0 project=7");
    check_params("_=1700000000&verbose=1", "", "verbose ip=- strict=- project=-");
    // The form body wins over the query string.
    check_params("verbose=0", "verbose=1", "verbose ip=- strict=- project=-");
    check_params("verbose=1&ip=1", "verbose=0&ip=0", "text ip=0 strict=- project=-");
    check_params("project_id=1", "project_id=2", "text ip=- strict=- project=2");
    check_params("data=%5B%5D", "verbose=1", "verbose ip=- strict=- project=-");
    // img, then callback, then verbose.
    check_params("img=1&verbose=1&callback=cb", "", "pixel ip=- strict=- project=-");
    check_params("callback=cb", "", "script:cb ip=- strict=- project=-");
    check_params("", "callback=app.onTrack&verbose=1", "script-verbose:app.onTrack ip=- strict=- project=-");
    // Wrong values are refused; the rest are still read, to answer the refusal as asked.
    check_params("verbose=1", "img=yes", "verbose ip=- strict=- project=- ! `img=yes` is not allowed");
    check_params("strict=true", "", "text ip=- strict=- project=- ! `strict=true` is not allowed");
    check_params("ip=2", "verbose=0", "text ip=- strict=- project=- ! `ip=2` is not allowed");
    // A wrong `verbose` or `img` is refused in JSON, which says why (in the script's call with a
    // safe `callback`); a valid `img=1` still gets its pixel.
    check_params("verbose=2&ip=1", "", "verbose ip=1 strict=- project=- ! `verbose=2` is not allowed; use `verbose=1` or `verbose=0`");
    check_params("verbose=abc", "", "verbose ip=- strict=- project=- ! `verbose=abc` is not allowed");
    check_params("img=yes", "", "verbose ip=- strict=- project=- ! `img=yes` is not allowed");
    check_params("img=2&callback=cb", "", "script-verbose:cb ip=- strict=- project=- ! `img=2` is not allowed");
    check_params("img=1&verbose=x", "", "pixel ip=- strict=- project=- ! `verbose=x` is not allowed");
    check_params("verbose=1&verbose=1", "", "verbose ip=- strict=- project=- ! `verbose` appears more than once in the query string");
    check_params("%zz=1&verbose=1", "", "verbose ip=- strict=- project=- ! the query string has bad percent-encoding at byte 0 (`%zz`)");
    check_params("project_id=%FF", "", "text ip=- strict=- project=? ! `project_id` in the query string is not UTF-8");
    // A repeated `project_id` is refused like any other parameter, and names no project, even
    // where the form body gives one.
    check_params("project_id=1&project_id=2", "", "text ip=- strict=- project=? ! `project_id` appears more than once in the query string");
    check_params("", "project_id=1&project_id=1", "text ip=- strict=- project=? ! `project_id` appears more than once in the body");
    check_params("project_id=1&project_id=2", "project_id=3", "text ip=- strict=- project=? ! `project_id` appears more than once in the query string");
    // An unsafe callback is answered as plain JSON, whatever else was asked.
    check_params("callback=alert(1);x", "", "verbose ip=- strict=- project=- ! `callback` has a byte at offset 5");
    check_params("img=1", "callback=%3C%2Fscript%3E", "verbose ip=- strict=- project=- ! `callback` has a byte at offset 0");
    check_params("callback=", "", "verbose ip=- strict=- project=- ! `callback` is empty");
    check_params("callback=%FF", "", "verbose ip=- strict=- project=- ! `callback` has a byte at offset 0");
}

/// Every framing feeds the import path as is: the same events, valid, on the lines they were
/// sent on.
#[test]
fn payloads_feed_the_import_path() {
    use crate::{check_import_body, Limits};
    let event = |n: u32| format!(r#"{{"event":"e","properties":{{"time":1700000000,"distinct_id":"u","$insert_id":"id-{n}"}}}}"#);
    let pretty =
        "\n\n{\n \"event\": \"e\",\n \"properties\": {\"time\": 1700000000, \"distinct_id\": \"u\", \"$insert_id\": \"id-1\"}\n}\n";
    let array = format!("[{},\n{}]", event(1), event(2));
    let ndjson = format!("{}\n\n{}\n", event(1), event(2));
    let form = format!("verbose=1&data={}", url_encode(&b64(&array)));
    let query = format!("data={}", url_encode(&event(1)));
    #[track_caller]
    fn check(request: WireRequest<'_>, expected_lines: &[u64]) {
        let payload = decode_request(&request).payload.expect("records");
        let checked = check_import_body(&payload.bytes, payload.format, &Limits::default(), 1_700_000_001_000).expect("framing");
        let lines: Vec<u64> = checked.records.iter().map(|r| r.record.pos.line).collect();
        assert_eq!(
            (lines.as_slice(), checked.valid, checked.failed_records.len()),
            (expected_lines, expected_lines.len(), 0),
            "{request:?}"
        );
    }
    check(post(Route::Track, JSON, "", event(1).as_bytes()), &[1]);
    check(post(Route::Track, JSON, "", pretty.as_bytes()), &[3]);
    check(post(Route::Track, JSON, "", array.as_bytes()), &[1, 2]);
    check(post(Route::Import, JSON, "", ndjson.as_bytes()), &[1, 3]);
    check(post(Route::Import, FORM, "project_id=1", form.as_bytes()), &[1, 2]);
    check(get(Route::Track, &query), &[1]);
}
