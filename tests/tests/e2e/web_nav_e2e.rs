//! End-to-end of the web app's addresses, panels and log drawer, in headless Chromium and Firefox:
//! a row click, Edit and New open a panel inside the viewport that takes focus, Escape gives focus
//! back; Back, Forward and a refresh return to the same screen and entity (a refresh asks only for
//! the secret); the log's badge counts an error. Screenshots at 1280 and 390 px go to
//! `tests/artifacts/`.

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const ESCAPE: &str = "\u{E00C}";

/// Whether the side panel is wholly inside the viewport and holds the focus, as one JSON array
/// `[in view, focus inside]` (with the rectangle in the message when it is not).
fn assert_panel_in_view_with_focus(session: &Session, what: &str) {
    session.wait_for("document.querySelector('#side-panel')", what, WAIT).unwrap();
    // Focus moves in an effect after the panel is drawn: wait for it rather than sample once.
    session
        .wait_for(
            "document.querySelector('#side-panel').contains(document.activeElement)",
            &format!("focus inside the panel ({what})"),
            WAIT,
        )
        .unwrap();
    let v = session
        .script(
            "const r = document.querySelector('#side-panel').getBoundingClientRect();
             return [r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight + 0.5 && r.right <= innerWidth + 0.5 && r.width > 0 && r.height > 0,
                     [r.left, r.top, r.right, r.bottom, innerWidth, innerHeight]];",
        )
        .unwrap();
    assert_eq!(v[0], json!(true), "the panel ({what}) is inside the viewport: {}", v[1]);
}

fn hash(session: &Session) -> String {
    session.script("return location.hash;").unwrap().as_str().unwrap_or_default().to_owned()
}

/// Whether the focused element is the table's button of the row `name`.
fn focus_is_on_row(session: &Session, name: &str) -> bool {
    let js = format!(
        "const a = document.activeElement; return !!a && a.classList.contains('open-detail') && a.closest('tr').dataset.name === {};",
        json!(name)
    );
    session.script(&js).unwrap() == json!(true)
}

fn navigate_and_return(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let session = Session::start(browser).unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let shot = |name: &str| session.screenshot(&artifacts_dir().join(format!("web-{}-nav-{name}.png", browser.name()))).unwrap();
    session.set_window_size(1280, 800).unwrap();
    session.goto(&server.url("/")).unwrap();

    // Another region keeps the URLs (it used to empty both fields).
    session.find("#region").unwrap();
    session.set_value("#region", "eu");
    let urls = session.script("return [document.querySelector('#base-url').value, document.querySelector('#import-url').value];").unwrap();
    assert_eq!(urls, json!([server.url(""), server.url("")]), "the EU region keeps this server's URL");

    // A wrong secret is one error: the log's badge says 1 until the drawer is opened.
    session.type_into("#project-id", &server.demo.project_id.to_string()).unwrap();
    session.type_into("#username", &server.demo.username).unwrap();
    session.type_into("#secret", "wrong").unwrap();
    session.click("#connect").unwrap();
    session.wait_for("document.querySelector('#connect-error')", "the 401 message", WAIT).unwrap();
    let error = session.text_of("#connect-error");
    assert_eq!(error.matches("check").count(), 1, "the advice is given once: {error}");
    session.wait_for("document.querySelector('#log-badge')", "the error badge", WAIT).unwrap();
    assert_eq!(session.text_of("#log-badge"), "1");
    assert!(session.text_of("#log-toggle").contains('1'), "{}", session.text_of("#log-toggle"));
    session.click("#log-toggle").unwrap();
    session
        .wait_for(
            "!document.querySelector('#log').hidden && document.querySelector('#log').contains(document.activeElement)",
            "the open log with focus",
            WAIT,
        )
        .unwrap();
    assert!(session.text_of("#log-lines").contains("→ 401"), "{}", session.text_of("#log-lines"));
    assert_eq!(
        session.script("return document.querySelector('#log-badge') === null;").unwrap(),
        json!(true),
        "opening the log clears the badge"
    );
    shot("log-open");
    session.press_key(ESCAPE).unwrap();
    session
        .wait_for(
            "document.querySelector('#log').hidden && document.activeElement.id === 'log-toggle'",
            "the closed log, focus on its button",
            WAIT,
        )
        .unwrap();

    // Signing in moves focus to the menu.
    session.type_into("#secret", &server.demo.secret).unwrap();
    session.click("#connect").unwrap();
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the demo's four events", WAIT).unwrap();
    session.wait_for("document.activeElement.id === 'nav-dictionary'", "focus on the menu after signing in", WAIT).unwrap();
    assert_eq!(hash(&session), "#/dictionary/event");

    // A row opens its detail beside the table, which keeps Status, Properties and 30-day volume.
    session.click("tr[data-name='Purchase'] .open-detail").unwrap();
    assert_panel_in_view_with_focus(&session, "the detail of Purchase");
    assert_eq!(hash(&session), "#/dictionary/event/Purchase");
    let beside = session
        .script(
            "const p = document.querySelector('#side-panel').getBoundingClientRect().left;
             const heads = [...document.querySelectorAll('#schema-list th')].filter(th => ['Status', 'Properties', '30-day volume'].includes(th.innerText.trim()));
             const props = document.querySelector('#property-list').getBoundingClientRect();
             const panel = document.querySelector('#side-panel');
             return [heads.length, heads.every(th => { const r = th.getBoundingClientRect(); return r.width > 0 && r.right <= p; }),
                     props.right <= panel.getBoundingClientRect().right && props.width <= panel.clientWidth];",
        )
        .unwrap();
    assert_eq!(beside, json!([3, true, true]), "the table's key columns beside the panel, the panel's own table uncut");
    shot("1280-detail");
    session.press_key(ESCAPE).unwrap();
    session.wait_for("!document.querySelector('#side-panel')", "the panel closed by Escape", WAIT).unwrap();
    assert!(focus_is_on_row(&session, "Purchase"), "focus is back on the row that opened the panel");
    assert_eq!(hash(&session), "#/dictionary/event");

    // Edit, from the detail: the form in view with focus; Escape gives focus back to the row.
    session.click("tr[data-name='Purchase'] .open-detail").unwrap();
    assert_panel_in_view_with_focus(&session, "the detail again");
    session.click("#edit-entity").unwrap();
    session.wait_for("document.querySelector('#entity-form')", "the edit form", WAIT).unwrap();
    assert_panel_in_view_with_focus(&session, "the edit form");
    assert_eq!(hash(&session), "#/dictionary/event/Purchase/edit");
    assert_eq!(session.script("return document.querySelector('#entity-name').readOnly;").unwrap(), json!(true), "the name is locked");
    shot("1280-edit");

    // Back and Forward walk the panel's history; the page never leaves the app.
    session.back().unwrap();
    session
        .wait_for("document.querySelector('#detail') && location.hash === '#/dictionary/event/Purchase'", "Back to the detail", WAIT)
        .unwrap();
    session.back().unwrap();
    session
        .wait_for("!document.querySelector('#side-panel') && location.hash === '#/dictionary/event'", "Back to the table", WAIT)
        .unwrap();
    session.forward().unwrap();
    session
        .wait_for("document.querySelector('#detail') && location.hash === '#/dictionary/event/Purchase'", "Forward to the detail", WAIT)
        .unwrap();

    // A refresh asks only for the secret, then shows the same entity.
    session.refresh().unwrap();
    session.wait_for("document.querySelector('#secret')", "the sign-in after a refresh", WAIT).unwrap();
    let kept =
        session.script("return ['#base-url', '#project-id', '#username', '#secret'].map(s => document.querySelector(s).value);").unwrap();
    assert_eq!(kept, json!([server.url(""), server.demo.project_id.to_string(), server.demo.username, ""]), "only the secret is asked for");
    session.wait_for("document.activeElement.id === 'secret'", "the cursor in the secret field", WAIT).unwrap();
    assert_eq!(hash(&session), "#/dictionary/event/Purchase", "the address survives the refresh");
    session.type_into("#secret", &server.demo.secret).unwrap();
    session.click("#connect").unwrap();
    session
        .wait_for("document.querySelector('#detail') && document.querySelector('#property-list')", "the same entity after signing in", WAIT)
        .unwrap();
    assert!(session.text_of("#property-list").contains("price"), "{}", session.text_of("#detail"));
    assert_panel_in_view_with_focus(&session, "the detail after the refresh");

    // Another screen, and Back to the entity.
    session.click_js("#nav-import");
    session.wait_for("location.hash === '#/import'", "the import address", WAIT).unwrap();
    session.back().unwrap();
    session
        .wait_for(
            "document.querySelector('#detail') && location.hash === '#/dictionary/event/Purchase'",
            "Back from import to the detail",
            WAIT,
        )
        .unwrap();
    session.press_key(ESCAPE).unwrap();
    session.wait_for("!document.querySelector('#side-panel')", "the panel closed", WAIT).unwrap();

    // New: in view with focus; Escape gives focus back to the button.
    session.click("#new-entity").unwrap();
    assert_panel_in_view_with_focus(&session, "the new-event form");
    assert_eq!(hash(&session), "#/dictionary/event/~new");
    session.press_key(ESCAPE).unwrap();
    session
        .wait_for("!document.querySelector('#side-panel') && document.activeElement.id === 'new-entity'", "focus back on New event", WAIT)
        .unwrap();

    // The profile tab has an address, and no volume column or empty tag filter.
    session.click("#tab-profile").unwrap();
    session
        .wait_for("location.hash === '#/dictionary/profile' && document.querySelector(\"tr[data-name='$user']\")", "the profile tab", WAIT)
        .unwrap();
    let profile = session
        .script("return [document.querySelector('#schema-list').innerText.includes('unknown'), !!document.querySelector('#tag-filter')];")
        .unwrap();
    assert_eq!(profile, json!([false, false]), "no `unknown` volumes and no empty tag filter on profiles");
    session.click("#tab-event").unwrap();
    session.wait_for("document.querySelectorAll('#schema-list .schema-row').length === 4", "the events again", WAIT).unwrap();

    // At phone width the panel is the whole screen, in view at once.
    session.set_window_size(390, 844).unwrap();
    // Chromium goes down to 390 px; Firefox keeps a window at least 500 px wide, which is still
    // the narrow layout (up to 900 px).
    let width = session.script("return innerWidth;").unwrap().as_f64().unwrap();
    let narrowest = if browser == Browser::Chromium { 420.0 } else { 520.0 };
    assert!(width <= narrowest, "the viewport is phone-sized: {width}");
    session.click("tr[data-name='Purchase'] .open-detail").unwrap();
    assert_panel_in_view_with_focus(&session, "the detail at phone width");
    // Full width: from the left edge to the right edge of the layout (a scrollbar, where the
    // browser draws one, is not the panel's to cover).
    let full = session
        .script("const r = document.querySelector('#side-panel').getBoundingClientRect(); const w = document.documentElement.clientWidth; return [r.left === 0 && Math.abs(r.right - w) < 1, r.left, r.right, w, innerWidth];")
        .unwrap();
    assert_eq!(full[0], json!(true), "the panel is full-width on a phone: {full}");
    let uncut = session
        .script(
            "const p = document.querySelector('#side-panel'); const t = document.querySelector('#property-list');
             return [p.scrollWidth <= p.clientWidth, t.getBoundingClientRect().width <= p.clientWidth, p.scrollWidth, p.clientWidth];",
        )
        .unwrap();
    assert_eq!((&uncut[0], &uncut[1]), (&json!(true), &json!(true)), "nothing in the panel is cut off at phone width: {uncut}");
    shot("390-detail");
    session.press_key(ESCAPE).unwrap();
    session.wait_for("!document.querySelector('#side-panel')", "the panel closed at phone width", WAIT).unwrap();
    assert!(
        focus_is_on_row(&session, "Purchase"),
        "focus back on the row at phone width: {}",
        session.script("const a = document.activeElement; return a.outerHTML.slice(0, 200);").unwrap()
    );
    assert_eq!(session.script("return document.querySelector('#fatal').hidden;").unwrap(), json!(true), "{}", session.text_of("#fatal"));
}

#[test]
fn chromium_keeps_addresses_panels_and_the_log_in_view() {
    navigate_and_return(Browser::Chromium);
}

#[test]
fn firefox_keeps_addresses_panels_and_the_log_in_view() {
    navigate_and_return(Browser::Firefox);
}
