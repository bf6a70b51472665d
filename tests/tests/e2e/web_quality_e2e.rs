//! End-to-end of the web app's Data quality screen against the real server, in headless Chromium
//! and Firefox: events that break the demo dictionary (an undocumented event, an unknown property,
//! a type mismatch) and a record the import rules refuse are sent to the server; the dictionary
//! marks the entities with violations; the screen shows the counts by event, issue and property,
//! the chart per day, samples as text and the rejected record; a schema is drafted for the
//! undocumented event, reviewed in the bulk-upload preview and applied, after which the same event
//! adds no violation; the reset asks first. The screen fits a phone without sideways scrolling.
//! Screenshots at 1280x800 and 390x844 go to `tests/artifacts/`.

use datadict_core::IssueCode;
use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir, sign_in_as_demo};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const WAIT: Duration = Duration::from_secs(30);
/// The event the demo dictionary does not describe.
const UNDOCUMENTED: &str = "Checkout Started";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn event(name: &str, id: &str, props: Value) -> Value {
    let mut p = json!({"time": now_ms() - 60_000, "distinct_id": "u1", "$insert_id": id});
    p.as_object_mut()
        .unwrap()
        .extend(props.as_object().cloned().unwrap());
    json!({"event": name, "properties": p})
}

/// Sends `records` to a strict `/import` of the demo project as NDJSON; returns the status.
fn import(server: &TestServer, records: &[Value]) -> u16 {
    let body: String = records.iter().map(|r| format!("{r}\n")).collect();
    let auth = server.demo_auth();
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/x-ndjson"),
    ];
    let path = format!("/import?strict=1&project_id={}", server.demo.project_id);
    server.send("POST", &path, &headers, body.as_bytes()).0
}

fn hash(session: &Session) -> String {
    session
        .script("return location.hash;")
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The cells' text of the row of `table` whose `data-id` is `id`.
fn row(session: &Session, table: &str, id: &str) -> Value {
    let script = format!(
        "const r = [...document.querySelectorAll('#{table} tbody tr')].find(r => r.dataset.id === {id}); return r ? [...r.cells].map(c => c.innerText) : null;",
        id = Value::from(id)
    );
    session.script(&script).unwrap()
}

fn open_quality(session: &Session) {
    session.click("#nav-quality").unwrap();
    session
        .wait_for(
            "document.querySelector('#quality-totals')",
            "the Data quality screen",
            WAIT,
        )
        .unwrap();
}

fn quality_screen(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    // Two undocumented events (one with a value that looks like HTML), a price sent as text, an
    // unknown property, and a record whose time is no time, which the strict import refuses.
    let records = [
        event(
            UNDOCUMENTED,
            "e1",
            json!({"plan": "pro", "seats": 3, "note": "<b>bold</b>"}),
        ),
        event(
            UNDOCUMENTED,
            "e2",
            json!({"plan": "team", "seats": 5, "note": "plain"}),
        ),
        event("Purchase", "p1", json!({"price": "free"})),
        event("Purchase", "p2", json!({"price": 2, "coupon": "X"})),
        // Another undocumented event whose `amount` arrives as a number and as text: the draft
        // leaves it out rather than guess.
        event("Refund Asked", "r1", json!({"amount": 1})),
        event("Refund Asked", "r2", json!({"amount": "one"})),
        json!({"event": "Purchase", "properties": {"time": "yesterday", "distinct_id": "u1", "$insert_id": "p3"}}),
    ];
    assert_eq!(
        import(&server, &records),
        400,
        "the strict import refuses the record without a time"
    );

    let session = Session::start(browser)
        .unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let shot = |name: &str| {
        session
            .screenshot(&artifacts_dir().join(format!("web-{}-quality-{name}.png", browser.name())))
            .unwrap()
    };
    session.set_window_size(1280, 800).unwrap();
    sign_in_as_demo(&session, &server);
    session
        .wait_for(
            "document.querySelector('#schema-list .schema-row[data-name=\"Purchase\"] .flag')",
            "the dictionary's marks",
            WAIT,
        )
        .unwrap();

    // The dictionary marks the entities with violations, with words for screen readers.
    let mark = |name: &str| {
        session.script(&format!("const f = document.querySelector('#schema-list .schema-row[data-name=\"{name}\"] .flag'); return f && f.getAttribute('aria-label');")).unwrap()
    };
    assert_eq!(mark("Purchase"), json!("2 violations in the last 30 days"));
    assert_eq!(
        mark(UNDOCUMENTED),
        json!("2 violations in the last 30 days")
    );
    assert_eq!(mark("Sign Up"), Value::Null, "no mark without violations");
    shot("1280-dictionary-marks");

    // The screen: totals, the chart, the tables by event, issue and property.
    open_quality(&session);
    assert_eq!(hash(&session), "#/quality");
    assert_eq!(session.text_of("#total-violations"), "6");
    assert_eq!(session.text_of("#total-rejected"), "1");
    let charted = session.script("return [...document.querySelectorAll('#quality-chart li')].map(l => +l.dataset.violations);").unwrap();
    let charted: Vec<i64> = serde_json::from_value(charted).unwrap();
    assert_eq!(
        (charted.len(), charted.iter().sum::<i64>()),
        (30, 6),
        "30 days, every violation in a bar: {charted:?}"
    );
    assert_eq!(
        row(&session, "quality-events", "Purchase"),
        json!(["Purchase", "2", "2", "1"]),
        "violations, stored, rejected"
    );
    assert_eq!(
        row(&session, "quality-events", UNDOCUMENTED),
        json!([UNDOCUMENTED, "2", "2", "0"])
    );
    let no_schema = IssueCode::NoSchema;
    assert_eq!(
        row(&session, "quality-codes", no_schema.as_str()),
        // `no_schema` counts profile updates too, so its words do not say "an event".
        json!([
            format!("a record the dictionary has no schema for (an event, or a profile update) {}", no_schema.as_str()),
            "4"
        ])
    );
    assert_eq!(
        row(&session, "quality-properties", "price"),
        json!(["price", "1"])
    );
    assert_eq!(
        row(&session, "quality-properties", "coupon"),
        json!(["coupon", "1"])
    );
    let mismatch = row(
        &session,
        "quality-findings",
        "Purchase\u{1f}price\u{1f}type_mismatch",
    );
    assert_eq!(
        (&mismatch[3], &mismatch[4]),
        (&json!("1"), &json!("string")),
        "{mismatch}"
    );
    assert!(
        mismatch[2]
            .as_str()
            .unwrap()
            .contains(IssueCode::TypeMismatch.describe()),
        "{mismatch}"
    );

    // Samples are pretty-printed JSON, as text: the value that looks like HTML is no markup.
    session.script("document.querySelectorAll('#quality details.samples').forEach(d => d.open = true); return 1;").unwrap();
    let samples = session.script("return [...document.querySelectorAll('#quality-findings pre.sample')].map(p => p.textContent).join('\\n');").unwrap();
    let samples = samples.as_str().unwrap();
    assert!(samples.contains("\"note\": \"<b>bold</b>\""), "{samples}");
    assert_eq!(
        session
            .script("return document.querySelector('#quality-findings b') === null;")
            .unwrap(),
        json!(true),
        "no markup from data"
    );
    let refused = session
        .script("return document.querySelector('#quality-rejected').innerText;")
        .unwrap();
    assert!(
        refused.as_str().unwrap().contains("yesterday"),
        "the refused record's sample: {refused}"
    );
    session.script("document.querySelector('#quality-findings').scrollIntoView({block: 'start'}); return 1;").unwrap();
    shot("1280-samples");
    session.script("document.querySelectorAll('#quality details.samples').forEach(d => d.open = false); window.scrollTo(0, 0); return 1;").unwrap();
    shot("1280");

    // An entity links to its detail in the dictionary.
    session
        .click("#quality-events tr[data-id='Purchase'] .open-schema")
        .unwrap();
    session
        .wait_for(
            "document.querySelector('#detail-violations')",
            "Purchase's detail with its violations",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/dictionary/event/Purchase");
    assert!(session
        .text_of("#detail")
        .contains("2 violations in the last 30 days"));

    // A schema drafted for the undocumented event, reviewed in the bulk-upload preview, applied.
    open_quality(&session);
    session
        .click(&format!(
            "button.draft-event[aria-label='Draft a schema for {UNDOCUMENTED}']"
        ))
        .unwrap();
    session
        .wait_for(
            "document.querySelector('#bulk-preview')",
            "the draft in the bulk-upload preview",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/quality/draft/Checkout%20Started");
    assert_eq!(session.text_of("#bulk-added"), "Added: 1");
    assert_eq!(session.text_of("#bulk-send"), "Upload 1 entry");
    let before = server
        .call(
            "GET",
            &format!("/api/app/projects/{}/schemas/event", server.demo.project_id),
            Some(&server.demo_auth()),
            None,
        )
        .1;
    assert!(
        !before.to_string().contains(UNDOCUMENTED),
        "nothing is written before the user applies the draft"
    );
    shot("1280-draft");
    session.click("#bulk-send").unwrap();
    session
        .wait_for(
            "document.querySelector('#bulk-done')",
            "the draft applied",
            WAIT,
        )
        .unwrap();
    let (_, stored) = server.call(
        "GET",
        &format!(
            "/api/app/projects/{}/schemas/event/Checkout%20Started",
            server.demo.project_id
        ),
        Some(&server.demo_auth()),
        None,
    );
    let props = &stored["properties"];
    assert_eq!(
        (
            &props["plan"]["type"],
            &props["seats"]["type"],
            &props["note"]["type"]
        ),
        (&json!("string"), &json!("integer"), &json!("string")),
        "{stored}"
    );
    session.click("#bulk button:not(#bulk-send)").unwrap();
    session
        .wait_for(
            "!document.querySelector('#side-panel')",
            "the draft closed",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/quality");

    // The same event again: stored, and no new violation counted for it.
    assert_eq!(
        import(
            &server,
            &[event(
                UNDOCUMENTED,
                "e3",
                json!({"plan": "pro", "seats": 1, "note": "again"})
            )]
        ),
        200
    );
    session.click("#quality-reload").unwrap();
    session.wait_for(&format!("document.querySelector('#quality-events tr[data-id=\"{UNDOCUMENTED}\"]')?.cells[2].innerText === '3'"), "the third event stored", WAIT).unwrap();
    assert_eq!(
        row(&session, "quality-events", UNDOCUMENTED),
        json!([UNDOCUMENTED, "2", "3", "0"]),
        "no new violation for the documented event"
    );
    assert_eq!(session.text_of("#total-violations"), "6");

    // A group update whose group key is an event's name: its `no_schema` note is a row of its own,
    // and the event's row and the dictionary's mark of the event stay as they were.
    let group = json!({"$token": server.demo.project_token, "$group_key": "Purchase", "$group_id": "g1", "$set": {"size": 3}});
    let (status, body) = server.send("POST", "/groups", &[("Content-Type", "application/json")], group.to_string().as_bytes());
    assert_eq!(status, 200, "{body}");
    session.click("#quality-reload").unwrap();
    session.wait_for("document.querySelector('#quality-events tr[data-id=\"group:Purchase\"]')", "the group key's row", WAIT).unwrap();
    assert_eq!(row(&session, "quality-events", "group:Purchase"), json!(["group profiles Purchase", "1", "0", "0"]));
    assert_eq!(row(&session, "quality-events", "Purchase"), json!(["Purchase", "2", "2", "1"]), "the event's row without the group's note");
    assert_eq!(session.text_of("#total-violations"), "7");

    // Just above the phone layout the menu of seven screens stays on one line in its header.
    session.set_window_size(920, 800).unwrap();
    let rows = session
        .script("return new Set([...document.querySelectorAll('header.top nav button')].map(b => Math.round(b.getBoundingClientRect().top))).size;")
        .unwrap();
    assert_eq!(rows, json!(1), "the menu on one line at 920 px");
    session.assert_no_sideways_scroll("the header at 920 px");
    shot("920");

    // A phone: cards, no sideways scroll, the draft panel too.
    session.set_window_size(390, 844).unwrap();
    session.assert_no_sideways_scroll("the Data quality screen");
    shot("390");
    session.script("document.querySelector('#quality-findings').scrollIntoView({block: 'start'}); return 1;").unwrap();
    session.assert_no_sideways_scroll("the findings as cards");
    shot("390-findings");
    session.click("#quality-draft").unwrap();
    session
        .wait_for(
            "document.querySelector('#draft h2')",
            "the draft panel at phone width",
            WAIT,
        )
        .unwrap();
    session
        .wait_for(
            "document.querySelector('#bulk-preview, #draft-empty, #draft-error')",
            "the draft's content",
            WAIT,
        )
        .unwrap();
    session.assert_no_sideways_scroll("the draft panel");
    assert_eq!(
        session.text_of("#draft-unresolved li"),
        "Refund Asked, property amount: seen as integer and string; not guessed, give it a type by hand"
    );
    shot("390-draft");
    session
        .click("#bulk button:not(#bulk-send), #draft-close")
        .unwrap();
    session
        .wait_for(
            "!document.querySelector('#side-panel')",
            "the draft closed at phone width",
            WAIT,
        )
        .unwrap();

    // The reset asks in the page first; keeping it changes nothing, confirming empties the screen.
    session.click("#quality-reset").unwrap();
    session
        .wait_for(
            "document.querySelector('#reset-confirm')",
            "the reset's question",
            WAIT,
        )
        .unwrap();
    session.click("#reset-no").unwrap();
    session
        .wait_for(
            "!document.querySelector('#reset-confirm')",
            "the reset kept",
            WAIT,
        )
        .unwrap();
    assert_eq!(session.text_of("#total-violations"), "7");
    session.click("#quality-reset").unwrap();
    session
        .wait_for(
            "document.querySelector('#reset-confirm')",
            "the reset's question again",
            WAIT,
        )
        .unwrap();
    session.assert_no_sideways_scroll("the reset's question");
    session.click("#reset-yes").unwrap();
    session
        .wait_for(
            "document.querySelector('#quality-empty')",
            "the screen after the reset",
            WAIT,
        )
        .unwrap();
    let done = session.text_of("#reset-done");
    assert!(
        done.starts_with("reset: ")
            && done.ends_with(" violation rows and 1 rejected-record row deleted"),
        "{done}"
    );
    assert_eq!(session.text_of("#total-violations"), "0");
    shot("390-reset");
    assert_eq!(
        session
            .script("return document.querySelector('#fatal').hidden;")
            .unwrap(),
        json!(true),
        "{}",
        session.text_of("#fatal")
    );
}

#[test]
fn chromium_shows_data_quality_and_drafts_a_schema() {
    quality_screen(Browser::Chromium);
}

#[test]
fn firefox_shows_data_quality_and_drafts_a_schema() {
    quality_screen(Browser::Firefox);
}
