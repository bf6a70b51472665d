//! What the migration makes of the source's export, end to end against a scripted stand-in of the
//! source (`common::amplitude`): every gzip member of a file read, distinct events kept apart,
//! live profile values kept, profiles only from events that passed the checks, the counts of a
//! dry run equal to those of the real run, refused lines in the bad store, and the mapping of the
//! source's fields.

use crate::common::amplitude::{body, config, export, gz, row, scripted, zip, Canned};
use crate::common::{on_both_stores, Account, Backend, Server};
use crate::migrate::{count_events, run};
use datadict_server::store::Role;
use serde_json::{json, Value};

struct Fixture {
    server: Server,
    p: i64,
    token: String,
    owner: Account,
    _source: crate::common::amplitude::Scripted,
}

fn fixture(backend: Backend, answers: Vec<Canned>) -> Fixture {
    let source = scripted(answers);
    let server = Server::start_with_on(backend, config(&source, 1_000_000));
    let project = server.project("p");
    let owner = server.account("owner", project.id, Some(Role::Owner));
    Fixture { server, p: project.id, token: project.token, owner, _source: source }
}

impl Fixture {
    fn migrate(&self, dry_run: bool) -> Value {
        run(&self.server, &body(&self.token, dry_run))
    }

    fn events(&self, query: &str) -> Vec<Value> {
        let r = self.server.get(&format!("/api/app/projects/{}/events?limit=1000&{query}", self.p), &self.owner);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"].as_array().unwrap().clone()
    }

    fn profile(&self, id: &str) -> (u16, Value) {
        let r = self.server.get(&format!("/api/app/projects/{}/profiles/{id}", self.p), &self.owner);
        (r.status, r.json())
    }
}

/// A file of the export made of two gzip members (valid per RFC 1952, as `zcat` reads it) is
/// read whole: both events are loaded, not only the first.
fn every_gzip_member_of_an_export_file_is_read(backend: Backend) {
    let first = gz(&[row(json!({"event_type": "MG", "user_id": "m", "$insert_id": "mg-1"}))]);
    let second = gz(&[row(json!({"event_type": "MG", "user_id": "m", "$insert_id": "mg-2"}))]);
    let f = fixture(backend, vec![Canned::zip(zip(&[("187520/187520_2024-01-01_12#0.json.gz", [first, second].concat())]))]);
    let job = f.migrate(false);
    assert_eq!(job["phase"], "succeeded", "{job}");
    assert_eq!(job["events"], json!({"counted": 2, "loaded": 2, "rejected": 0}), "{job}");
    assert_eq!(f.events("event=MG").len(), 2);
}

/// Two events without an insert id, alike in device, time and type, stay two: the generated
/// `$insert_id` comes from the source's per-event `uuid` (or, without one, from the whole row).
/// Running the same export again still stores each once.
fn events_without_an_insert_id_stay_apart(backend: Backend) {
    let tap = |uuid: Value, button: &str| row(json!({"event_type": "Tap", "device_id": "dev-x", "event_time": "2024-01-01 12:00:00.000000", "uuid": uuid, "event_properties": {"button": button}}));
    let rows = [
        tap(json!("aaaaaaaa-0000-0000-0000-000000000001"), "A"),
        tap(json!("aaaaaaaa-0000-0000-0000-000000000002"), "B"),
        tap(Value::Null, "C"),
        tap(Value::Null, "D"),
    ];
    let f = fixture(backend, vec![Canned::zip(export(&rows))]);
    for round in 0..2 {
        let job = f.migrate(false);
        assert_eq!(job["events"], json!({"counted": 4, "loaded": 4, "rejected": 0}), "{job}");
        let mut buttons: Vec<String> = f.events("event=Tap").iter().map(|e| e["properties"]["button"].as_str().unwrap().to_owned()).collect();
        buttons.sort();
        assert_eq!(buttons, ["A", "B", "C", "D"], "round {round}");
    }
    let a = f.events("event=Tap&where=button%3DA");
    assert_eq!(a[0]["properties"]["$insert_id"], "aaaaaaaa-0000-0000-0000-000000000001");
}

/// Live data wins: a value a profile already has (here set by `/engage` after the exported
/// events) is not replaced by the migration's older one; properties it lacks are filled in.
fn migrated_profiles_never_replace_values_the_profile_has(backend: Backend) {
    let rows = [row(json!({"user_id": "alice@example.com", "$insert_id": "a-1", "user_properties": {"plan": "enterprise", "company": "Acme", "seats": 5}}))];
    let f = fixture(backend, vec![Canned::zip(export(&rows))]);
    let live = json!([{"$token": f.token, "$distinct_id": "alice@example.com", "$set": {"plan": "ultimate", "company": "NewCo"}}]);
    let r = f.server.send("POST", "/engage", None, &[("Content-Type", "application/json")], Some(live.to_string().into_bytes()));
    assert_eq!(r.status, 200, "{}", r.text);
    let job = f.migrate(false);
    assert_eq!(job["profiles"], json!({"counted": 1, "loaded": 1, "rejected": 0}), "{job}");
    let (status, profile) = f.profile("alice@example.com");
    assert_eq!(status, 200, "{profile}");
    let props = &profile["results"]["$properties"];
    assert_eq!((&props["plan"], &props["company"], &props["seats"]), (&json!("ultimate"), &json!("NewCo"), &json!(5)), "{profile}");
}

/// Profiles come only from events that passed the import's checks: an event refused for its
/// time (2099) does not set the profile, and a placeholder `user_id` (`undefined`) makes no
/// profile; its event is the device's (`distinct_id` falls back to `device_id`).
fn profiles_come_only_from_events_that_passed_the_checks(backend: Backend) {
    let rows = [
        row(json!({"event_type": "PE", "user_id": "undefined", "device_id": "pd1", "$insert_id": "pe-1", "user_properties": {"x": 1}})),
        row(json!({"event_type": "PE", "user_id": "pe-user", "device_id": "pd2", "$insert_id": "pe-2", "user_properties": {"plan": "real"}})),
        row(json!({"event_type": "PE", "user_id": "pe-user", "device_id": "pd2", "$insert_id": "pe-3", "event_time": "2099-01-01 00:00:00.000000", "user_properties": {"plan": "from-rejected-event"}})),
    ];
    let f = fixture(backend, vec![Canned::zip(export(&rows))]);
    let job = f.migrate(false);
    assert_eq!(job["events"], json!({"counted": 3, "loaded": 2, "rejected": 1}), "{job}");
    assert_eq!(f.profile("undefined").0, 404);
    assert_eq!(f.profile("pe-user").1["results"]["$properties"]["plan"], "real");
    let device = f.events("distinct_id=pd1");
    assert_eq!(device.len(), 1);
    assert_eq!(device[0]["properties"]["$user_id"], "undefined");
}

/// A dry run runs the real run's checks without storing: its counts are the real run's, and
/// `counted` is `loaded` plus `rejected`. Lines that cannot be transformed are rejected records
/// of route `job` in the bad store (after the real run only), like the import's refusals.
fn a_dry_run_counts_what_the_real_run_loads(backend: Backend) {
    let rows = [
        row(json!({"event_type": "Good1", "user_id": "u1", "$insert_id": "good-1"})),
        json!(r#"{"event_type": "Broken", "user_id": "u2", "#),
        row(json!({"event_type": null, "user_id": "u3", "$insert_id": "noname-1"})),
        row(json!({"event_type": "BadTime", "user_id": "u4", "event_time": "01/01/2024 12:00", "$insert_id": "badtime-1"})),
        row(json!({"event_type": "Future", "user_id": "u5", "event_time": "2099-01-01 00:00:00.000000", "$insert_id": "future-1"})),
        row(json!({"event_type": "Old", "user_id": "u5", "event_time": "1969-12-31 23:59:59.000000", "$insert_id": "old-1"})),
        json!("[1,2,3]"),
        row(json!({"event_type": "Good2", "user_id": "u1", "$insert_id": "good-2", "user_properties": {"plan": "pro"}})),
    ];
    let f = fixture(backend, vec![Canned::zip(export(&rows))]);
    let expected = json!({"counted": 8, "loaded": 2, "rejected": 6});
    let dry = f.migrate(true);
    assert_eq!((dry["phase"].as_str(), &dry["events"]), (Some("succeeded"), &expected), "{dry}");
    assert_eq!(dry["profiles"], json!({"counted": 1, "loaded": 1, "rejected": 0}), "{dry}");
    assert_eq!(count_events(&f.server, f.p, &f.owner), 0, "a dry run stores nothing");
    assert_eq!(f.profile("u1").0, 404);
    let rejected = |f: &Fixture| f.server.get(&format!("/api/app/projects/{}/rejected?route=job&limit=1000", f.p), &f.owner).json()["results"].as_array().unwrap().clone();
    assert_eq!(rejected(&f), Vec::<Value>::new(), "a dry run records nothing");

    let job = f.migrate(false);
    assert_eq!(job["events"], expected, "{job}");
    assert_eq!(count_events(&f.server, f.p, &f.owner), 2);
    let errors = job["errors"].to_string();
    assert!(errors.contains("line 2:") && errors.contains("line 5:"), "member lines are named: {errors}");
    let rows = rejected(&f);
    let total: i64 = rows.iter().map(|r| r["count"].as_i64().unwrap()).sum();
    assert_eq!(total, 6, "{rows:?}");
    let broken = rows.iter().find(|r| r["code"] == "invalid_json" && r["samples"][0]["record"].as_str().unwrap().contains("Broken")).unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(broken["route"], "job");
    assert!(rows.iter().any(|r| r["event"] == "Future" && r["code"] == "time_in_future"), "{rows:?}");
}

/// The source's fields are carried (`amplitude_*`), a source property whose name the transform
/// sets is kept under another name, `country` (a name) goes to `$country` and not to the
/// two-letter `mp_country_code`, and `$identify` and `$groupidentify` rows update user and group
/// profiles without being events.
/// Events the dictionary drops count as loaded, and a note says how many.
fn the_mapping_keeps_what_the_source_holds(backend: Backend) {
    let rows = [
        row(json!({"event_type": "Reserved", "user_id": "carol", "$insert_id": "carol-1", "uuid": "77777777-7777-7777-7777-777777777777",
            "groups": {"company": ["acme"]}, "group_properties": {"company": {"acme": {"plan": "big"}}}, "version_name": "3.2.1",
            "event_properties": {"ip": "9.9.9.9", "mp_country_code": "FR", "distinct_id": "evil", "plan": "free"},
            "user_properties": {"plan": "pro"}})),
        row(json!({"event_type": "$identify", "data_type": "identify", "user_id": "carol", "user_properties": {"company": "Acme"}})),
        row(json!({"event_type": "Debug Ping", "user_id": "carol", "$insert_id": "ping-1"})),
        row(json!({"event_type": "$groupidentify", "data_type": "group_identify", "groups": {"company": "acme"}, "group_properties": {"tier": "gold"}})),
    ];
    let f = fixture(backend, vec![Canned::zip(export(&rows))]);
    let schemas = json!({"entries": [{"entityType": "event", "name": "Debug Ping", "schemaJson": {"metadata": {"com.vendor": {"dropped": true}}}}]});
    assert_eq!(f.server.post_json(&format!("/api/app/projects/{}/schemas", f.p), &f.owner, &schemas).status, 200);
    let job = f.migrate(false);
    assert_eq!(job["events"], json!({"counted": 2, "loaded": 2, "rejected": 0}), "the $identify row is no event: {job}");
    assert!(job["errors"].to_string().contains("1 events were dropped by the project's dictionary"), "{job}");
    assert_eq!(count_events(&f.server, f.p, &f.owner), 1);
    let p = f.events("event=Reserved")[0]["properties"].clone();
    assert_eq!((&p["distinct_id"], &p["amplitude_event_distinct_id"]), (&json!("carol"), &json!("evil")));
    assert_eq!((&p["ip"], &p["amplitude_event_ip"]), (&json!("203.0.113.5"), &json!("9.9.9.9")));
    assert_eq!((&p["plan"], &p["amplitude_user_plan"]), (&json!("free"), &json!("pro")));
    assert_eq!((&p["$country"], p.get("mp_country_code")), (&json!("United States"), None), "{p}");
    assert_eq!(p["amplitude_event_mp_country_code"], "FR");
    assert_eq!((&p["amplitude_uuid"], &p["amplitude_id"], &p["amplitude_session_id"]), (&json!("77777777-7777-7777-7777-777777777777"), &json!(1234567890), &json!(1704110400000_i64)));
    assert_eq!((&p["amplitude_platform"], &p["amplitude_library"], &p["amplitude_version_name"]), (&json!("Web"), &json!("amplitude-ts/2.0.0"), &json!("3.2.1")));
    assert_eq!(p["amplitude_groups"], json!({"company": ["acme"]}));
    assert_eq!(p["amplitude_group_properties"]["company"]["acme"]["plan"], "big");
    let profile = f.profile("carol").1;
    assert_eq!(profile["results"]["$properties"], json!({"plan": "pro", "company": "Acme"}), "{profile}");
    let group = f.server.get(&format!("/api/app/projects/{}/groups/company/acme", f.p), &f.owner).json();
    assert_eq!(group["results"]["$properties"], json!({"tier": "gold"}), "{group}");
    assert_eq!(job["profiles"], json!({"counted": 2, "loaded": 2, "rejected": 0}), "{job}");
}

/// `GET /api/app/projects/{id}/migrations` lists the project's jobs, newest first, a page at a
/// time, to its members only; another project's jobs are not in it.
fn a_project_lists_its_migrations_newest_first(backend: Backend) {
    let f = fixture(backend, vec![Canned::zip(export(&[row(json!({"$insert_id": "l-1", "user_id": "u"}))]))]);
    let ids: Vec<String> = (0..3).map(|i| f.migrate(i == 1)["job_id"].as_str().unwrap().to_owned()).collect();
    let other = f.server.project("other");
    run(&f.server, &body(&other.token, true));
    let list = |query: &str| f.server.get(&format!("/api/app/projects/{}/migrations?{query}", f.p), &f.owner);
    let first = list("limit=2").json();
    let page: Vec<&str> = first["results"].as_array().unwrap().iter().map(|j| j["job_id"].as_str().unwrap()).collect();
    assert_eq!(page, [ids[2].as_str(), ids[1].as_str()], "{first}");
    assert_eq!(first["results"][1]["dry_run"], true);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = list(&format!("limit=2&cursor={}", crate::common::urlencode(cursor))).json();
    assert_eq!(second["results"].as_array().unwrap().len(), 1, "{second}");
    assert_eq!(second["results"][0]["job_id"], ids[0].as_str());
    assert_eq!(second["next_cursor"], Value::Null);
    assert_eq!(list("cursor=nonsense").status, 400);
    let stranger = f.server.account("stranger", other.id, Some(Role::Owner));
    assert_eq!(f.server.get(&format!("/api/app/projects/{}/migrations", f.p), &stranger).status, 403);
}

on_both_stores!(
    a_project_lists_its_migrations_newest_first,
    every_gzip_member_of_an_export_file_is_read,
    events_without_an_insert_id_stay_apart,
    migrated_profiles_never_replace_values_the_profile_has,
    profiles_come_only_from_events_that_passed_the_checks,
    a_dry_run_counts_what_the_real_run_loads,
    the_mapping_keeps_what_the_source_holds
);
