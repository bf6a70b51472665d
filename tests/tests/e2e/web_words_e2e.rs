//! End-to-end of what the web app says and how it fits, in headless Chromium and Firefox: at
//! 390x844 (500 px in Firefox, its narrowest headless window) no screen scrolls sideways and the import report's message stays in view; the import
//! ends with one sentence whose numbers are the read API's and the report's; the warehouse and
//! migration forms tie each error to its field (`aria-describedby`, `aria-invalid`) in the user's
//! words, and migration starts as a dry run. Screenshots of every screen at 1280x800 and 390x844
//! go to `tests/artifacts/`.

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir, sign_in_as_demo};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// The screens, by the id of their menu button.
const SCREENS: [&str; 6] = ["dictionary", "quality", "import", "warehouse", "migrate", "settings"];

/// Clicks a screen's menu button as a user would (a real click, so it must be reachable).
fn open(session: &Session, screen: &str) {
    session.click(&format!("#nav-{screen}")).unwrap();
    session.wait_for(&format!("document.querySelector('#nav-{screen}').getAttribute('aria-current') === 'page'"), screen, WAIT).unwrap();
}

fn words_and_widths(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let pid = server.demo.project_id;
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let shot = |name: &str| session.screenshot(&artifacts_dir().join(format!("words-{}-{name}.png", browser.name()))).unwrap();
    // Chromium gives 390 px; headless Firefox keeps its windows at least 500 px wide, which is
    // still a phone layout (below the 640 px break), so it is checked there.
    let phone = session.set_window_size(390, 844).unwrap();
    let narrowest = if browser == Browser::Firefox { 500 } else { 390 };
    assert!(phone <= narrowest, "{} px wide", phone);
    session.goto(&server.url("/")).unwrap();
    session.wait_for("document.querySelector('#connect')", "the sign-in form", WAIT).unwrap();
    session.assert_no_sideways_scroll("sign-in");
    shot("390-signin");
    sign_in_as_demo(&session, &server);
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the demo dictionary", WAIT).unwrap();

    // Every screen at phone width, reached through the menu; the dictionary's own buttons too.
    for screen in SCREENS {
        open(&session, screen);
        session.assert_no_sideways_scroll(screen);
        shot(&format!("390-{screen}"));
    }
    open(&session, "dictionary");
    session.click("#reload").unwrap();
    // Bulk upload is disabled while the dictionary reloads: wait for it, as a user would.
    session.wait_for("document.querySelector('#bulk-upload') && !document.querySelector('#bulk-upload').disabled", "the reloaded dictionary", WAIT).unwrap();
    session.click("#bulk-upload").unwrap();
    session.wait_for("document.querySelector('#bulk-file')", "the bulk upload panel", WAIT).unwrap();
    session.assert_no_sideways_scroll("bulk upload");
    shot("390-bulk");
    // Bulk upload opens in the side panel, which fills a phone's screen; Escape closes it, as a
    // user would before going to another screen.
    session.press_key("\u{E00C}").unwrap();
    session.wait_for("!document.querySelector('#bulk-file')", "the bulk upload panel to close", WAIT).unwrap();

    // An import with three bad records of twelve: lines 2 (time before 1971), 5 (bad insert id)
    // and 9 (not JSON). Every good record is an undocumented event, a note and not an error.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let ndjson: String = (1..=12)
        .map(|line| match line {
            2 => json!({"event": "Words Test", "properties": {"time": 1000, "distinct_id": "u2", "$insert_id": "words-2"}}).to_string(),
            5 => json!({"event": "Words Test", "properties": {"time": now, "distinct_id": "u5", "$insert_id": "bad:id"}}).to_string(),
            9 => "{\"event\": \"Words Test\", \"properties\": ".to_owned(),
            _ => json!({"event": "Words Test", "properties": {"time": now - line, "distinct_id": format!("u{line}"), "$insert_id": format!("words-{line}")}}).to_string(),
        } + "\n")
        .collect();
    open(&session, "import");
    session.pick_file("#import-file", "words.ndjson", &ndjson);
    session.wait_for("!document.querySelector('#import-check').disabled", "the check button", WAIT).unwrap();
    // Nothing is sent yet, so nothing can have been rejected by the server.
    assert_eq!(session.text_of("#stat-refused"), "–");
    session.click("#import-check").unwrap();
    session.wait_for("document.querySelector('#import-phase').innerText.startsWith('Checked')", "the check", WAIT).unwrap();
    let counts = session.text_of("#check-counts");
    assert!(counts.starts_with("12 records; 3 with errors, left out; 9 with notes only, sent anyway;"), "{counts}");
    assert!(counts.ends_with("1 batch."), "singular: {counts}");
    assert_eq!(session.text_of("#stat-refused"), "–", "still nothing sent");
    assert_eq!(session.text_of("#stat-left-out"), "3");
    assert_eq!(session.script("return document.querySelector('#import-progress').value;").unwrap(), json!(0), "an empty bar: nothing sent");
    // Errors and notes apart, each code in words with the code beside it.
    let errors = session.text_of("#by-problem");
    assert!(errors.contains("a time before 1971 time_too_early") && errors.contains("not valid JSON invalid_json"), "{errors}");
    assert!(!errors.contains("no_schema"), "a note is not an error: {errors}");
    let notes = session.text_of("#by-note");
    assert!(notes.contains("an event the dictionary does not describe no_schema") && notes.contains('9'), "{notes}");
    session.assert_no_sideways_scroll("import, checked");
    shot("390-import-checked");
    session.click("#import-upload").unwrap();
    session.wait_for("document.querySelector('#import-outcome')", "the outcome sentence", WAIT).unwrap();
    let sentence = session.text_of("#import-outcome");
    let (_, body) = server.call("GET", &format!("/api/app/projects/{pid}/events?event=Words%20Test&limit=100"), Some(&server.demo_auth()), None);
    let arrived = body["results"].as_array().unwrap().len();
    let sources = session.script("return [...document.querySelectorAll('#import-report .report-row')].map(r => r.dataset.line);").unwrap();
    let report_lines: Vec<&str> = sources.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let refused = session.script("return [...document.querySelectorAll('#import-report .report-row td')].filter(c => c.innerText === 'server').length;").unwrap();
    let expected = format!("{arrived} events imported; {} left out by the check, download the report; {refused} rejected by the server.", report_lines.len());
    assert!(sentence.ends_with(&expected), "the sentence says what the read API and the report say: {sentence:?} vs {expected:?}");
    assert_eq!((arrived, report_lines), (9, vec!["2", "5", "9"]), "{sentence}");
    assert!(session.text_of("#import-report").contains("Problem"), "the report has its message column");
    // The report's message is in view at phone width.
    let message = session
        .script("const r = document.querySelector('#import-report .report-row .message').getBoundingClientRect(); return [r.left, r.right, r.width, window.innerWidth];")
        .unwrap();
    assert!(message[0].as_f64().unwrap() >= 0.0 && message[1].as_f64().unwrap() <= message[3].as_f64().unwrap() && message[2].as_f64().unwrap() > 50.0, "{message}");
    assert!(session.text_of("#stat-events").starts_with("9 / 9"), "{}", session.text_of("#stat-events"));
    session.assert_no_sideways_scroll("import, finished");
    session.script("document.querySelector('#import-outcome').scrollIntoView({block: 'start'}); return 1;").unwrap();
    shot("390-import-finished");

    // Warehouse: each error under its field, tied to it, and a summary linking to each.
    open(&session, "warehouse");
    session.wait_for("document.querySelector('#wh-empty')", "the empty list", WAIT).unwrap();
    session.click("#wh-create-button").unwrap();
    session.wait_for("document.querySelector('#wh-error-summary')", "the error summary", WAIT).unwrap();
    for id in ["wh-name", "wh-path", "wh-event", "wh-time", "wh-user", "wh-keys"] {
        let tie = session
            .script(&format!(
                "const i = document.getElementById('{id}'); const m = document.getElementById(i.getAttribute('aria-describedby'));
                 return [i.getAttribute('aria-invalid'), m && m.id, m && m.innerText, !!document.querySelector('#wh-error-summary a[href=\"#{id}\"]'),
                         !!(document.querySelector('label[for={id}]') || i.closest('label'))];"
            ))
            .unwrap();
        assert_eq!(tie[0], "true", "{id}: {tie}");
        assert_eq!(tie[1], format!("{id}-error"), "{id}: {tie}");
        assert!(tie[2].as_str().unwrap().len() > 5 && tie[3] == true && tie[4] == true, "{id}: {tie}");
    }
    assert!(session.text_of("#wh-name-error").ends_with("Give the import a name"), "{}", session.text_of("#wh-name-error"));
    // Every input of the form has a label.
    let unlabelled = session.script("return [...document.querySelectorAll('#wh-create input, #wh-create select')].filter(i => !i.labels || i.labels.length === 0).map(i => i.id);").unwrap();
    assert_eq!(unlabelled, json!([]));
    session.assert_no_sideways_scroll("warehouse, errors");
    shot("390-warehouse-errors");
    session.set_value("#wh-name", "orders");
    session.wait_for("!document.querySelector('#wh-name-error') && document.querySelector('#wh-name').getAttribute('aria-invalid') === null", "the fixed field", WAIT).unwrap();

    // Migrate: dry run is on; each problem at its field in words, without internal names.
    open(&session, "migrate");
    session.wait_for("document.querySelector('#mig-form')", "the migration form", WAIT).unwrap();
    assert_eq!(session.script("return document.querySelector('#mig-dry-run').checked;").unwrap(), json!(true), "dry run starts on");
    assert!(session.text_of("#mig-target").contains(&format!("project {pid}")), "{}", session.text_of("#mig-target"));
    session.set_value("#mig-end", "2099-01-01");
    session.click("#mig-start-button").unwrap();
    session.wait_for("document.querySelector('#mig-issues')", "the form's problems", WAIT).unwrap();
    for (id, words) in [("mig-key", "Source API key is empty"), ("mig-secret", "Source API secret is empty"), ("mig-token", "Project token is empty"), ("mig-end", "End date 2099-01-01 is after today")] {
        let tie = session
            .script(&format!(
                "const i = document.getElementById('{id}'); const m = document.getElementById(i.getAttribute('aria-describedby'));
                 return [i.getAttribute('aria-invalid'), m && m.id, m && m.innerText];"
            ))
            .unwrap();
        assert_eq!((tie[0].clone(), tie[1].clone()), (json!("true"), json!(format!("{id}-error"))), "{id}: {tie}");
        assert!(tie[2].as_str().unwrap().contains(words), "{id}: {tie}");
    }
    let issues = session.text_of("#mig-issues");
    assert!(!issues.contains("SOURCE_API_KEY") && !issues.contains("invalid_name") && !issues.contains('`'), "no internal names: {issues}");
    session.assert_no_sideways_scroll("migrate, errors");
    shot("390-migrate-errors");

    // The same screens at 1280x800, for people to look at.
    assert_eq!(session.set_window_size(1280, 800).unwrap(), 1280);
    for screen in SCREENS {
        open(&session, screen);
        session.assert_no_sideways_scroll(screen);
        shot(&format!("1280-{screen}"));
    }
    open(&session, "import");
    session.script("document.querySelector('#import-outcome').scrollIntoView({block: 'start'}); return 1;").unwrap();
    shot("1280-import-finished");
    assert_eq!(session.script("return document.querySelector('#fatal').hidden;").unwrap(), json!(true), "{}", session.text_of("#fatal"));
}

#[test]
fn chromium_says_outcomes_in_words_and_fits_a_phone() {
    words_and_widths(Browser::Chromium);
}

#[test]
fn firefox_says_outcomes_in_words_and_fits_a_phone() {
    words_and_widths(Browser::Firefox);
}
