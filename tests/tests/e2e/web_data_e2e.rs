//! End-to-end of the web app's Data screen against the real server, in headless Chromium and
//! Firefox: a user profile looked up by its id (a value that looks like HTML shown as text, an
//! unknown id answered on the page), group profiles a page at a time and of one group key with
//! one group's properties in the side panel, the lookup tables with their row counts, and one
//! table's rows read a page at a time in the side panel; each view has its address, and the screen fits a
//! phone without sideways scrolling. Screenshots at 1280x800 and 390x844 go to `tests/artifacts/`.

use datadict_tests::server::TestServer;
use datadict_tests::webdriver::{Browser, Session};
use datadict_tests::{artifacts_dir, dist_dir, sign_in_as_demo};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const ESCAPE: &str = "\u{E00C}";
/// More rows than two of the screen's pages (50 each), so that "Show more rows" is needed twice.
const ROWS: usize = 120;
/// More `Company` groups than one page holds.
const COMPANIES: usize = 55;

/// A user profile, [`COMPANIES`] companies and a team as group profiles, and a lookup table of
/// [`ROWS`] rows, through the server's own routes.
fn seed(server: &TestServer) -> String {
    let pid = server.demo.project_id;
    let auth = server.demo_auth();
    let updates =
        json!([{"$distinct_id": "ada", "$set": {"plan": "pro", "seats": 3, "name": "<b>Ada</b>"}}]);
    let (status, body) = server.call(
        "POST",
        &format!("/engage?strict=1&project_id={pid}"),
        Some(&auth),
        Some(&updates),
    );
    assert_eq!(status, 200, "{body}");
    let token = server.demo.project_token.as_str();
    let mut groups: Vec<_> =
        (0..COMPANIES).map(|i| json!({"$token": token, "$group_key": "Company", "$group_id": format!("c{i:02}"), "$set": {"n": i}})).collect();
    groups.push(json!({"$token": token, "$group_key": "Team", "$group_id": "core", "$set": {"lead": "<i>Grace</i>", "size": 4}}));
    let (status, text) = server.send(
        "POST",
        "/groups",
        &[("Content-Type", "application/json")],
        json!(groups).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{text}");
    let (status, body) = server.call(
        "POST",
        &format!("/api/app/projects/{pid}/lookup-tables"),
        Some(&auth),
        Some(&json!({"name": "Plans"})),
    );
    assert_eq!(status, 201, "{body}");
    let id = body["results"]["id"].as_str().unwrap().to_owned();
    let mut csv = String::from("plan_id,tier,price\n");
    for i in 0..ROWS {
        csv.push_str(&format!("p{i:03},tier {},{}\n", i % 3, i * 10));
    }
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "text/csv"),
    ];
    let (status, text) = server.send(
        "PUT",
        &format!("/lookup-tables/{id}?project_id={pid}"),
        &headers,
        csv.as_bytes(),
    );
    assert_eq!(status, 200, "{text}");
    id
}

fn hash(session: &Session) -> String {
    session
        .script("return location.hash;")
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Fails when the page is wider than the window.
fn assert_no_sideways_scroll(session: &Session, what: &str) {
    let widths = session
        .script("return [document.documentElement.scrollWidth, window.innerWidth];")
        .unwrap();
    assert!(
        widths[0].as_i64() <= widths[1].as_i64(),
        "{what}: the page is wider than the window (scroll width, window width): {widths}"
    );
}

fn data_screen(browser: Browser) {
    let server = TestServer::start(Some(dist_dir()));
    let table_id = seed(&server);
    let session = Session::start(browser)
        .unwrap_or_else(|e| panic!("cannot start {}: {e:#}", browser.name()));
    let shot = |name: &str| {
        session
            .screenshot(&artifacts_dir().join(format!("web-{}-data-{name}.png", browser.name())))
            .unwrap()
    };
    session.set_window_size(1280, 800).unwrap();
    sign_in_as_demo(&session, &server);
    session
        .wait_for(
            "document.querySelectorAll('#schema-list .schema-row').length > 0",
            "the dictionary after signing in",
            WAIT,
        )
        .unwrap();

    // A user profile by its id; the value that looks like HTML is text, not markup.
    session.click("#nav-data").unwrap();
    session
        .wait_for(
            "document.querySelector('#profile-id')",
            "the profile lookup",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/data/profiles");
    session.click("#profile-go").unwrap();
    session
        .wait_for(
            "document.querySelector('#profile-id-error')",
            "the blank id's error under its field",
            WAIT,
        )
        .unwrap();
    assert_eq!(
        session
            .script(
                "return document.querySelector('#profile-id').getAttribute('aria-describedby');"
            )
            .unwrap(),
        "profile-id-error"
    );
    session.type_into("#profile-id", "ada").unwrap();
    session.click("#profile-go").unwrap();
    session
        .wait_for(
            "document.querySelector('#profile-properties')",
            "the profile of ada",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/data/profiles/ada");
    let cells = session
        .script("return [...document.querySelectorAll('#profile-properties tbody tr')].map(r => [r.cells[0].innerText, r.cells[1].innerText]);")
        .unwrap();
    assert_eq!(
        cells,
        json!([["name", "<b>Ada</b>"], ["plan", "pro"], ["seats", "3"]])
    );
    assert_eq!(
        session
            .script("return document.querySelector('#profile-properties b') === null;")
            .unwrap(),
        true,
        "no markup from data"
    );
    shot("1280-profile");

    // An unknown id is answered on the page, in words.
    session.type_into("#profile-id", "nobody").unwrap();
    session.click("#profile-go").unwrap();
    session
        .wait_for(
            "document.querySelector('#data [role=alert]')",
            "the unknown profile's error",
            WAIT,
        )
        .unwrap();
    let error = session.text_of("#data [role=alert]");
    assert!(
        error.contains("404") && error.contains("no profile `nobody`"),
        "{error}"
    );

    // Group profiles: a page, then the next; one key only; one group's properties in the panel.
    session.click("#tab-groups").unwrap();
    session
        .wait_for(
            "document.querySelectorAll('#group-list .group-row').length === 50",
            "the first page of groups",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/data/groups");
    assert_eq!(
        session.text_of("#groups-count"),
        "50 groups shown, more to show"
    );
    session.click_js("#groups-more");
    let all = COMPANIES + 1;
    session
        .wait_for(
            &format!("document.querySelectorAll('#group-list .group-row').length === {all}"),
            "every group",
            WAIT,
        )
        .unwrap();
    assert_eq!(
        session
            .script("return document.querySelector('#groups-more') === null;")
            .unwrap(),
        true,
        "no more groups to show"
    );
    session.type_into("#group-key", "Team").unwrap();
    session.click("#groups-show").unwrap();
    session
        .wait_for(
            "document.querySelectorAll('#group-list .group-row').length === 1",
            "the Team groups only",
            WAIT,
        )
        .unwrap();
    session.click("#group-list .open-group").unwrap();
    session
        .wait_for(
            "document.querySelector('#group-properties')",
            "the properties of Team core",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/data/groups/Team/core");
    let cells = session
        .script("return [...document.querySelectorAll('#group-properties tbody tr')].map(r => [r.cells[0].innerText, r.cells[1].innerText]);")
        .unwrap();
    assert_eq!(cells, json!([["lead", "<i>Grace</i>"], ["size", "4"]]));
    assert_eq!(
        session
            .script("return document.querySelector('#group-properties i') === null;")
            .unwrap(),
        true,
        "no markup from data"
    );
    shot("1280-group");
    session.click("#close-panel").unwrap();
    session
        .wait_for(
            "!document.querySelector('#side-panel')",
            "the group panel closed",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/data/groups");

    // The lookup tables with their row counts; one opens in the panel, a page of rows at a time.
    session.click("#tab-tables").unwrap();
    session
        .wait_for(
            "document.querySelectorAll('#table-list .table-row').length === 1",
            "the table list",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/data/tables");
    let row = session.script("return [...document.querySelector('#table-list .table-row').cells].map(c => c.innerText);").unwrap();
    assert_eq!(row[0], "Plans");
    assert_eq!(row[1], ROWS.to_string());
    assert_eq!(row[2], "plan_id, tier, price");
    session.click("#table-list .open-table").unwrap();
    session
        .wait_for(
            "document.querySelectorAll('#table-rows tbody tr').length === 50",
            "the first page of rows",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), format!("#/data/tables/{table_id}"));
    assert_eq!(
        session.text_of("#rows-count"),
        format!("50 rows of {ROWS} shown")
    );
    let head = session
        .script("return [...document.querySelectorAll('#table-rows th')].map(c => c.innerText);")
        .unwrap();
    assert_eq!(head, json!(["plan_id", "tier", "price"]));
    shot("1280-table");
    session.click_js("#rows-more");
    session
        .wait_for(
            "document.querySelectorAll('#table-rows tbody tr').length === 100",
            "the second page of rows",
            WAIT,
        )
        .unwrap();
    session.click_js("#rows-more");
    session
        .wait_for(
            &format!("document.querySelectorAll('#table-rows tbody tr').length === {ROWS}"),
            "the last page of rows",
            WAIT,
        )
        .unwrap();
    assert_eq!(
        session
            .script("return document.querySelector('#rows-more') === null;")
            .unwrap(),
        true,
        "no more rows to show"
    );
    let last = session.script("return [...document.querySelector('#table-rows tbody tr:last-child').cells].map(c => c.innerText);").unwrap();
    assert_eq!(
        last,
        json!([
            format!("p{:03}", ROWS - 1),
            "tier 2",
            ((ROWS - 1) * 10).to_string()
        ]),
        "rows in the order of their keys"
    );

    // A phone: the rows are cards, the page never scrolls sideways; Escape closes the panel.
    session.set_window_size(390, 844).unwrap();
    assert_no_sideways_scroll(&session, "the table's rows");
    shot("390-table");
    session.press_key(ESCAPE).unwrap();
    session
        .wait_for(
            "!document.querySelector('#side-panel')",
            "the panel closed by Escape",
            WAIT,
        )
        .unwrap();
    assert_eq!(hash(&session), "#/data/tables");
    assert_no_sideways_scroll(&session, "the table list");
    session.click("#tab-groups").unwrap();
    session
        .wait_for(
            "document.querySelectorAll('#group-list .group-row').length === 50",
            "the groups at phone width",
            WAIT,
        )
        .unwrap();
    assert_no_sideways_scroll(&session, "the group list");
    shot("390-groups");
    session.click("#tab-profiles").unwrap();
    session.type_into("#profile-id", "ada").unwrap();
    session.click("#profile-go").unwrap();
    session
        .wait_for(
            "document.querySelector('#profile-properties')",
            "the profile of ada at phone width",
            WAIT,
        )
        .unwrap();
    assert_no_sideways_scroll(&session, "the profile");
    shot("390-profile");

    // The address alone opens the same table after a refresh.
    session
        .goto(&server.url(&format!("/#/data/tables/{table_id}")))
        .unwrap();
    session.refresh().unwrap();
    session.type_into("#secret", &server.demo.secret).unwrap();
    session.click("#connect").unwrap();
    session
        .wait_for(
            "document.querySelectorAll('#table-rows tbody tr').length === 50",
            "the table from its address",
            WAIT,
        )
        .unwrap();
}

#[test]
fn chromium_shows_profiles_groups_and_lookup_tables() {
    data_screen(Browser::Chromium);
}

#[test]
fn firefox_shows_profiles_groups_and_lookup_tables() {
    data_screen(Browser::Firefox);
}
