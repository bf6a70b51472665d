//! End-to-end of the web app against a dictionary that changed on the server after the app read
//! it, in headless Chromium and Firefox: "New event" refuses a name that exists (live against the
//! loaded dictionary, and against the server on save, so a colleague's schema is never replaced
//! unseen); the bulk-upload preview compares with the server's dictionary as it is now, says which
//! stored properties an entry would remove, and reads it again before sending; the Data quality
//! screen shows a group profile's violation as such, in the server's words, linked to the
//! `profile` schema of its group key. Long names, tags and descriptions never make the page
//! scroll sideways.

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir, sign_in_as_demo};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Writes an event schema as another client would, behind the app's back.
fn put_event(server: &TestServer, name: &str, schema: &Value) {
    let path = format!("/api/app/projects/{}/schemas/event/{}", server.demo.project_id, name.replace(' ', "%20"));
    let (status, body) = server.call("POST", &path, Some(&server.demo_auth()), Some(schema));
    assert_eq!(status, 200, "{body}");
}

fn get_event(server: &TestServer, name: &str) -> Value {
    let path = format!("/api/app/projects/{}/schemas/event/{}", server.demo.project_id, name.replace(' ', "%20"));
    let (status, body) = server.call("GET", &path, Some(&server.demo_auth()), None);
    assert_eq!(status, 200, "{body}");
    body
}

fn stale_dictionary(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let pid = server.demo.project_id;
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let shot = |name: &str| session.screenshot(&artifacts_dir().join(format!("web-{}-stale-{name}.png", browser.name()))).unwrap();
    sign_in_as_demo(&session, &server);
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the demo's four events", WAIT).unwrap();

    // 1. A name the loaded dictionary holds is refused as the user types, with a way to open it.
    session.click_js("#new-entity");
    session.type_into("#entity-name", "Purchase").unwrap();
    session.wait_for("document.querySelector('#entity-name-errors') && document.querySelector('#open-existing')", "the name refused", WAIT).unwrap();
    assert!(session.text_of("#entity-name-errors").contains("an event named `Purchase` already exists"), "{}", session.text_of("#entity-name-errors"));
    assert_eq!(session.script("return document.querySelector('#save-entity').disabled;").unwrap(), json!(true));

    // A colleague documents an event after the app read the dictionary, with a dropped property.
    let colleague = json!({"description": "Order placed", "properties": {
        "card_number": {"type": "string", "metadata": {"com.vendor": {"dropped": true}}}, "total": {"type": "number"}}});
    put_event(&server, "Checkout", &colleague);
    // The loaded copy does not know it, so the form lets it be typed; the save asks the server first.
    session.set_value("#entity-name", "Checkout");
    session.wait_for("!document.querySelector('#entity-name-errors') && !document.querySelector('#save-entity').disabled", "the form valid", WAIT).unwrap();
    session.click_js("#save-entity");
    session.wait_for("document.querySelector('#save-error')", "the save refused", WAIT).unwrap();
    assert!(session.text_of("#save-error").contains("an event named `Checkout` already exists"), "{}", session.text_of("#save-error"));
    // Nothing was replaced: the description and both properties, the dropped flag included, stay.
    let stored = get_event(&server, "Checkout");
    assert_eq!(stored["description"], "Order placed", "{stored}");
    assert_eq!(stored["properties"]["card_number"]["metadata"]["com.vendor"]["dropped"], true, "{stored}");
    // And the form now says so at the name, linking to the stored event.
    session.wait_for("document.querySelector('#open-existing')", "the link to the stored event", WAIT).unwrap();
    shot("new-existing-name");
    session.click_js("#open-existing");
    session.wait_for("location.hash === '#/dictionary/event/Checkout/edit' && document.querySelector('#entity-name').readOnly", "the stored event's edit form", WAIT).unwrap();
    assert_eq!(session.script("return document.querySelector('#entity-description').value;").unwrap(), json!("Order placed"));

    // 2. Bulk upload of a file that names an event a colleague made after the app read the
    // dictionary: the preview calls it a change that removes its properties, not an addition.
    put_event(&server, "Colleague Event", &json!({"properties": {"a": {"type": "string"}, "b": {"type": "number"}}}));
    session.click_js("#bulk-upload");
    session.wait_for("document.querySelector('#bulk-file')", "the bulk-upload panel", WAIT).unwrap();
    let file = json!([
        {"entityType": "event", "name": "Colleague Event", "schemaJson": {"description": "mine"}},
        {"entityType": "event", "name": "Late Event", "schemaJson": {"description": "mine too"}}
    ]);
    session.pick_file("#bulk-file", "colleague.json", &file.to_string());
    session.wait_for("document.querySelector('#bulk-preview')", "the preview", WAIT).unwrap();
    assert_eq!(session.text_of("#bulk-added"), "Added: 1");
    assert_eq!(session.text_of("#bulk-changed"), "Changed: 1");
    let changed = session.script("return document.querySelector('#bulk-changed').parentElement.innerText;").unwrap();
    assert!(changed.as_str().unwrap().contains("event Colleague Event: removes 2 stored properties: a, b"), "{changed}");
    shot("bulk-fresh-preview");

    // The dictionary changes again before the user confirms: nothing is sent, and the new
    // preview is shown to review.
    put_event(&server, "Late Event", &json!({"properties": {"z": {"type": "string"}}}));
    session.click_js("#bulk-send");
    session.wait_for("document.querySelector('#bulk .error') && document.querySelector('#bulk-added').innerText === 'Added: 0'", "the preview made again", WAIT).unwrap();
    assert!(session.text_of("#bulk .error").contains("changed since this preview"), "{}", session.text_of("#bulk .error"));
    assert!(get_event(&server, "Late Event")["properties"]["z"].is_object(), "nothing was sent");
    assert!(get_event(&server, "Colleague Event")["properties"]["a"].is_object(), "nothing was sent");
    // Confirmed after review, it is sent.
    session.click_js("#bulk-send");
    session.wait_for("document.querySelector('#bulk-done')", "the upload", WAIT).unwrap();
    assert_eq!(get_event(&server, "Colleague Event")["description"], "mine");

    // 3. A group profile update without a schema for its group key is a group-profile violation,
    // in the server's words, linked to the `profile` schema named by the key.
    let token = server.demo.project_token.as_str();
    let groups = json!([{"$token": token, "$group_key": "company", "$group_id": "acme", "$set": {"name": "x"}}]);
    let (status, text) = server.send("POST", "/groups", &[("Content-Type", "application/json")], groups.to_string().as_bytes());
    assert_eq!(status, 200, "{text}");
    session.goto(&server.url("/#/quality")).unwrap();
    session.wait_for("document.querySelector(\"#quality-events tr[data-id='group:company']\")", "the group key's row", WAIT).unwrap();
    assert_eq!(session.script("return document.querySelector(\"#quality-events tr[data-id='company']\");").unwrap(), Value::Null, "no event row for a group key");
    let finding = session
        .script("return [...document.querySelectorAll('#quality-findings tr.finding')].map(r => r.innerText).find(t => t.includes('company'));")
        .unwrap();
    let finding = finding.as_str().unwrap_or_default();
    assert!(finding.contains("group profiles"), "{finding}");
    assert!(finding.contains("`profile` schema named `company`"), "the server's message: {finding}");
    assert!(!finding.contains("an event the dictionary does not describe"), "{finding}");
    shot("quality-group");
    session.click_js("#quality-events tr[data-id='group:company'] .open-schema");
    session.wait_for("location.hash === '#/dictionary/profile/company'", "the group key's profile schema", WAIT).unwrap();

    // 10. Long unbroken text fits the window at 1280 px and on a phone: a 300-character tag and
    // name, a 5,000-character description, in the list and in the side panel.
    let long = "x".repeat(300);
    put_event(&server, &long, &json!({"description": "d".repeat(5000), "properties": {long.clone(): {"type": "string", "description": "p".repeat(2000)}},
        "metadata": {"com.vendor": {"tags": [long.clone()]}}}));
    for width in [1280, 390] {
        let granted = session.set_window_size(width, 844).unwrap();
        session.goto(&server.url("/#/dictionary/event")).unwrap();
        session.click_js("#reload");
        session.wait_for(&format!("document.querySelector(\"tr[data-name='{long}']\")"), "the long event", WAIT).unwrap();
        session.assert_no_sideways_scroll(&format!("the dictionary at {granted} px"));
        let status_in_view = session
            .script(&format!("return document.querySelector(\"tr[data-name='{long}'] td.status\").getBoundingClientRect().right <= window.innerWidth;"))
            .unwrap();
        assert_eq!(status_in_view, json!(true), "the Status column is off-screen at {granted} px");
        session.click_js(&format!("tr[data-name='{long}'] .open-detail"));
        session.wait_for("document.querySelector('#property-list')", "the long event's detail", WAIT).unwrap();
        session.assert_no_sideways_scroll(&format!("the long event's detail at {granted} px"));
        // The property table's last column stays inside the panel.
        let fits = session
            .script("const p = document.querySelector('#detail').getBoundingClientRect(); const c = document.querySelector('#property-list tr.property-row td:last-child').getBoundingClientRect(); return c.right <= p.right + 1;")
            .unwrap();
        assert_eq!(fits, json!(true), "the Shown column is off the panel at {granted} px");
        shot(&format!("long-{granted}"));
    }
    let _ = pid;
}

#[test]
fn chromium_never_replaces_what_changed_on_the_server() {
    stale_dictionary(Browser::Chromium);
}

#[test]
fn firefox_never_replaces_what_changed_on_the_server() {
    stale_dictionary(Browser::Firefox);
}
