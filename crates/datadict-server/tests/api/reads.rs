//! The read API as a CI check uses it: values read back exactly as sent, property filters that
//! compare values rather than spellings, and parameters that refuse what they do not know
//! instead of answering every row or none. `import.rs` covers paging and the basic filters.

use crate::common::{now_ms, on_both_stores, Account, Backend, Server};
use datadict_server::store::Role;

struct Fixture {
    server: Server,
    p: i64,
    owner: Account,
}

fn fixture(backend: Backend) -> Fixture {
    let server = Server::start_on(backend);
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    Fixture { p: project.id, owner, server }
}

impl Fixture {
    /// Imports NDJSON `lines` as written (so that their spellings reach the server).
    fn import(&self, lines: &str) {
        let path = format!("/import?project_id={}&strict=1", self.p);
        let auth = Some((self.owner.username.as_str(), self.owner.secret.as_str()));
        let r = self.server.send("POST", &path, auth, &[("Content-Type", "application/x-ndjson")], Some(lines.as_bytes().to_vec()));
        assert_eq!(r.status, 200, "{}", r.text);
    }

    fn get(&self, path_and_query: &str) -> crate::common::Reply {
        self.server.get(&format!("/api/app/projects/{}/{path_and_query}", self.p), &self.owner)
    }

    /// The `$insert_id`s of the events `query` selects.
    fn ids(&self, query: &str) -> Vec<String> {
        let r = self.get(&format!("events?{query}"));
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        let ids = r.json()["results"].as_array().unwrap().iter().map(|e| e["properties"]["$insert_id"].as_str().unwrap().to_owned()).collect();
        ids
    }
}

/// `where=` compares the value, however the sender spelt it: escapes, a trailing zero, an
/// exponent; a number also matches its string, as before, and types stay apart.
fn where_compares_values_not_spellings(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 1000;
    let line = |id: &str, props: &str| format!("{{\"event\":\"e\",\"properties\":{{\"time\":{t},\"distinct_id\":\"u\",\"$insert_id\":\"{id}\",{props}}}}}\n");
    let lines = [
        line("escaped", r#""s":"caf\u00e9","slash":"a\/b","emoji":"\ud83c\udf89""#),
        line("decimals", r#""s":"plain","b":2.50,"c":1e3,"big":123456789012345678901234567890"#),
        line("strings", r#""b":"2.5","c":"1000","flag":true,"none":null"#),
    ]
    .concat();
    f.import(&lines);
    let cases = [
        ("s=caf%C3%A9", vec!["escaped"]),
        ("slash=a%2Fb", vec!["escaped"]),
        ("emoji=%F0%9F%8E%89", vec!["escaped"]),
        ("b=2.5", vec!["strings", "decimals"]),
        ("b=2.50", vec!["decimals"]),
        ("c=1000", vec!["strings", "decimals"]),
        ("c=1000.0", vec!["decimals"]),
        ("c=1e3", vec!["decimals"]),
        ("c=%221000%22", vec!["strings"]),
        ("flag=true", vec!["strings"]),
        ("none=null", vec!["strings"]),
        ("s=plain", vec!["decimals"]),
        ("s=caf", vec![]),
    ];
    for (filter, want) in cases {
        assert_eq!(f.ids(&format!("where={filter}")), want, "where={filter}");
    }
}

/// An event is served as it was stored: an integer wider than 64 bits keeps every digit.
fn events_keep_every_digit(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 1000;
    f.import(&format!(
        "{{\"event\":\"e\",\"properties\":{{\"time\":{t},\"distinct_id\":\"u\",\"$insert_id\":\"i\",\"huge\":123456789012345678901234567890,\"max\":18446744073709551615,\"tiny\":5e-324}}}}\n"
    ));
    let r = f.get("events");
    assert_eq!(r.status, 200, "{}", r.text);
    for digits in ["123456789012345678901234567890", "18446744073709551615", "5e-324"] {
        assert!(r.text.contains(digits), "{digits} is not in {}", r.text);
    }
}

/// A parameter a read route does not take is a 400 naming it and the ones it takes (a misspelt
/// filter answered every row, a misspelt reset flag deleted nothing); so is a value of `code`,
/// `kind` or `route` that no row can have, a time range that is empty by construction, and a
/// time beyond the calendar (which answered nothing).
fn read_parameters_refuse_what_they_do_not_know(backend: Backend) {
    let f = fixture(backend);
    let cases = [
        ("GET", "events?Event=Purchase", "`Event` is not a parameter of this route"),
        ("GET", "events?event_name=Purchase", "`event`"),
        ("GET", "violations?codes=type_mismatch", "`codes` is not a parameter"),
        ("GET", "quality/summary?sinse=1h", "`sinse`"),
        ("GET", "event-counts?day=3", "`days`"),
        ("GET", "groups?key=x", "`group_key`"),
        ("DELETE", "quality?event=true", "`event` is not a parameter of this route"),
        ("GET", "violations?kind=User", "use one of `event`, `user`, `group`"),
        ("GET", "violations?code=type-mismatch", "`type_mismatch`"),
        ("GET", "rejected?route=Track", "`track`"),
        ("GET", "rejected?code=nope", "`code=nope` is not a code"),
        ("GET", "violations?since=1000000d", "before the year 1"),
        ("GET", "quality/summary?since=0000-01-01", "is before the year 1"),
        ("GET", "violations?since=2026-01-02&until=2026-01-01", "is after `until"),
        ("GET", "events?from=2026-01-02&to=2026-01-01", "is not before `to`"),
        ("GET", "events?from=5&to=5", "is not before `to`"),
    ];
    for (method, path, says) in cases {
        let r = f.server.send(method, &format!("/api/app/projects/{}/{path}", f.p), Some((&f.owner.username, &f.owner.secret)), &[], None);
        let error = r.json()["error"].as_str().unwrap_or_default().to_owned();
        assert!(r.status == 400 && error.contains(says), "{method} {path}: {} {}", r.status, r.text);
    }
    // What they do take still works, `from` and `to` as times before now too.
    for path in ["violations?kind=user&code=type_mismatch", "rejected?route=track&code=token_refused", "events?from=2h&to=1s", "quality/summary?since=0001-01-01"] {
        let r = f.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
}

/// A page of events ends at the event that reaches 8 MiB of records, whatever `limit` says, and
/// the next page goes on after it: nothing is skipped or repeated.
fn a_page_of_events_is_bounded_in_bytes(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 10_000;
    // Strings are cut at 255 bytes and arrays hold fewer than 255 elements, but a number's digits
    // are kept: 900 KB of them.
    let blob = format!("0.{}", "1".repeat(900_000));
    for chunk in 0..4 {
        let lines: String = (0..3)
            .map(|i| {
                let n = chunk * 3 + i;
                format!("{{\"event\":\"e\",\"properties\":{{\"time\":{},\"distinct_id\":\"u\",\"$insert_id\":\"{n:02}\",\"blob\":{blob}}}}}\n", t + n)
            })
            .collect();
        f.import(&lines);
    }
    let first = f.get("events?limit=1000");
    assert_eq!(first.status, 200);
    let page = first.json();
    let ids: Vec<&str> = page["results"].as_array().unwrap().iter().map(|e| e["properties"]["$insert_id"].as_str().unwrap()).collect();
    // 900 KB each: the tenth reaches 8 MiB.
    assert_eq!(ids, ["11", "10", "09", "08", "07", "06", "05", "04", "03", "02"]);
    let cursor = page["next_cursor"].as_str().expect("a cursor after a full page");
    assert_eq!(f.ids(&format!("limit=1000&cursor={cursor}")), ["01", "00"]);
}

/// The violations listing pages by the last row's key: a row added between pages in front of the
/// cursor does not push a row of the first page onto the second, nor one of the second away.
fn violation_pages_hold_under_new_rows(backend: Backend) {
    let f = fixture(backend);
    let t = now_ms() - 1000;
    let line = |name: &str| format!("{{\"event\":\"{name}\",\"properties\":{{\"time\":{t},\"distinct_id\":\"u\",\"$insert_id\":\"{name}\"}}}}\n");
    f.import(&["B", "C", "D", "E"].map(line).concat());
    let names = |r: &crate::common::Reply| -> Vec<String> {
        r.json()["results"].as_array().unwrap().iter().map(|v| v["event"].as_str().unwrap().to_owned()).collect()
    };
    let first = f.get("violations?code=no_schema&limit=2");
    assert_eq!(names(&first), ["B", "C"]);
    let cursor = first.json()["next_cursor"].as_str().unwrap().to_owned();
    f.import(&line("A"));
    let second = f.get(&format!("violations?code=no_schema&limit=2&cursor={cursor}"));
    assert_eq!((second.status, names(&second)), (200, vec!["D".to_owned(), "E".to_owned()]), "{}", second.text);
    assert_eq!(second.json()["next_cursor"], serde_json::Value::Null);
    for bad in ["3", "WyJhIl0", "%%%"] {
        assert_eq!(f.get(&format!("violations?cursor={bad}")).status, 400, "{bad}");
    }
}

on_both_stores!(
    violation_pages_hold_under_new_rows,
    where_compares_values_not_spellings,
    events_keep_every_digit,
    read_parameters_refuse_what_they_do_not_know,
    a_page_of_events_is_bounded_in_bytes,
);
