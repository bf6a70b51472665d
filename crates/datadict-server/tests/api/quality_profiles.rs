//! Data quality of profile updates (issue 20): `/engage` updates checked against the `$user`
//! schema and `/groups` updates against the profile schema of their group key, refused updates
//! kept as rejected records, and the same findings as the core's profile check.

use crate::common::{on_both_stores, Backend};
use crate::quality::{event, fixture, fixture_with, key, Fixture};
use datadict_server::Config;
use serde_json::{json, Value};
use std::collections::BTreeMap;

impl Fixture {
    /// Sends profile updates to `/engage` with the project token in each, as a tracking library does.
    pub(crate) fn engage(&self, updates: &[Value]) -> crate::common::Reply {
        let updates: Vec<Value> = updates.iter().map(|u| with_token(u, &self.token)).collect();
        self.server.send("POST", "/engage", None, &[("Content-Type", "application/json")], Some(serde_json::to_vec(&updates).unwrap()))
    }

    /// Defines the user-profile schema: `plan` a string, `seats` an integer, `tags` a list.
    pub(crate) fn define_user_profile(&self) {
        let schema = json!({"properties": {"plan": {"type": "string"}, "seats": {"type": "integer"}, "tags": {"type": "array"}}});
        let r = self.server.post_json(&format!("/api/app/projects/{}/schemas/profile/$user", self.p), &self.owner, &schema);
        assert_eq!(r.status, 200, "{}", r.text);
    }
}

fn with_token(update: &Value, token: &str) -> Value {
    let mut u = update.clone();
    u.as_object_mut().unwrap().insert("$token".into(), token.into());
    u
}

/// Profile updates with each kind of finding against [`Fixture::define_user_profile`]'s schema.
pub(crate) fn violating_updates() -> Vec<Value> {
    vec![
        json!({"$distinct_id": "u1", "$set": {"plan": "pro", "seats": "many", "color": "red"}}),
        json!({"$distinct_id": "u2", "$set": {"plan": 3, "color": "blue"}}),
        // On a profile without these properties: on u1's `seats` string or `plan` string they
        // would be refused (`profile::apply` never overwrites what it cannot work on).
        json!({"$distinct_id": "u3", "$add": {"seats": 1.5}}),
        json!({"$distinct_id": "u3", "$append": {"tags": "a", "plan": "x"}}),
        json!({"$distinct_id": "u1", "$unset": ["color", "gone"]}),
        json!({"$distinct_id": "u2", "$delete": ""}),
    ]
}

/// `/engage` updates are checked against the `$user` schema: one `no_schema` note per update
/// without it, then unknown properties and wrong types per property, with observed types and
/// samples (without the token), as kind `user`. Group updates are recorded apart, as kind `group`.
fn engage_records_user_violations_with_counts_types_and_samples(backend: Backend) {
    let f = fixture(backend);
    let updates = [json!({"$distinct_id": "u1", "$set": {"plan": "pro"}}), json!({"$distinct_id": "u1", "$unset": ["plan"]}), json!({"$distinct_id": "u1", "$delete": ""})];
    assert_eq!(f.engage(&updates).status, 200);
    assert_eq!(f.counts_where("&kind=user"), BTreeMap::from([(key("$user", "", "no_schema"), 2)]));
    assert_eq!(f.server.delete(&format!("/api/app/projects/{}/quality", f.p), &f.owner).status, 200);

    f.define_user_profile();
    let r = f.engage(&violating_updates());
    assert_eq!((r.status, &r.json()["num_records_imported"]), (200, &json!(6)), "{}", r.text);
    let expected = BTreeMap::from([
        (key("$user", "seats", "type_mismatch"), 2),
        (key("$user", "plan", "type_mismatch"), 2),
        (key("$user", "color", "unknown_property"), 3),
        (key("$user", "gone", "unknown_property"), 1),
    ]);
    assert_eq!(f.counts_where("&kind=user"), expected);
    assert!(f.violations("&kind=event").is_empty());
    let row = |property: &str, code: &str| f.violations(&format!("&kind=user&property={property}&code={code}")).remove(0);
    let color = row("color", "unknown_property");
    assert_eq!((color["kind"].as_str(), color["event"].as_str()), (Some("user"), Some("$user")));
    // `$unset` carries no value: only the two `$set` values give a type.
    assert_eq!(color["types"], json!(["string"]));
    let samples = color["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3);
    let first = samples[0].as_str().unwrap();
    assert!(first.contains(r#""$distinct_id":"u1""#) && first.contains(r#""color":"red""#), "{first}");
    assert!(!first.contains(&f.token), "the token is left out of samples: {first}");
    assert_eq!(row("seats", "type_mismatch")["types"], json!(["number", "string"]));
    assert_eq!(row("plan", "type_mismatch")["types"], json!(["array", "integer"]));
    assert!(row("plan", "type_mismatch")["message"].as_str().unwrap().contains("its schema says string"));
    let summary = f.server.get(&format!("/api/app/projects/{}/quality/summary", f.p), &f.owner).json();
    assert_eq!(summary["results"]["violations"]["by_profile"]["$user"], 8);
    assert_eq!(summary["results"]["violations"]["by_event"].get("$user"), None, "profile updates are not counted as events");
    // The updates were stored all the same.
    let profile = |user: &str| f.server.get(&format!("/api/app/projects/{}/profiles/{user}", f.p), &f.owner).json()["results"]["$properties"].clone();
    assert_eq!(profile("u1"), json!({"plan": "pro", "seats": "many"}));
    assert_eq!(profile("u3"), json!({"plan": ["x"], "seats": 1.5, "tags": ["a"]}));

    let group = with_token(&json!({"$group_key": "Company", "$group_id": "c1", "$set": {"anything": 1}}), &f.token);
    let r = f.server.send("POST", "/groups", None, &[("Content-Type", "application/json")], Some(group.to_string().into_bytes()));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(f.counts_where("&kind=user"), expected);
    assert_eq!(f.counts_where("&kind=group"), BTreeMap::from([(key("Company", "", "no_schema"), 1)]));
}

impl Fixture {
    /// Sends group updates to `/groups` with the project token in each.
    fn groups(&self, updates: &[Value]) -> crate::common::Reply {
        let updates: Vec<Value> = updates.iter().map(|u| with_token(u, &self.token)).collect();
        self.server.send("POST", "/groups", None, &[("Content-Type", "application/json")], Some(serde_json::to_vec(&updates).unwrap()))
    }
}

/// A group update with group key K is checked against the `profile` schema named K: one
/// `no_schema` note per update without it, then unknown properties and wrong types, as kind
/// `group` and entity K, with types and samples; another group key is checked against its own
/// schema; the `$user` schema does not apply to groups. The server's counts are the core's.
fn groups_are_checked_against_the_profile_schema_of_their_key(backend: Backend) {
    use datadict_core::{check_profile_against_dictionary, parse_profile_update, profile_schema_name, Dictionary, Limits, ProfileKind, SchemaEntry, TokenRule};
    let f = fixture(backend);
    f.define_user_profile();
    let c = |id: &str, op: &str, v: Value| json!({"$group_key": "company_id", "$group_id": id, op: v});
    let before = [c("c1", "$set", json!({"plan": "pro"})), json!({"$group_key": "team_id", "$group_id": "t1", "$set": {"name": "a"}})];
    assert_eq!(f.groups(&before).status, 200);
    let no_schema = BTreeMap::from([(key("company_id", "", "no_schema"), 1), (key("team_id", "", "no_schema"), 1)]);
    assert_eq!(f.counts_where("&kind=group"), no_schema);
    assert!(f.counts_where("&kind=user").is_empty(), "the $user schema does not apply to groups");
    assert_eq!(f.server.delete(&format!("/api/app/projects/{}/quality", f.p), &f.owner).status, 200);

    let schema = json!({"properties": {"name": {"type": "string"}, "employees": {"type": "integer"}, "domains": {"type": "array"}}});
    let r = f.server.post_json(&format!("/api/app/projects/{}/schemas/profile/company_id", f.p), &f.owner, &schema);
    assert_eq!(r.status, 200, "{}", r.text);
    let updates = vec![
        c("c1", "$set", json!({"name": "Acme", "employees": "many", "plan": "pro"})),
        c("c2", "$set", json!({"name": 7, "plan": "free"})),
        // On a group without these properties (c1's are strings, which these would not replace).
        c("c3", "$add", json!({"employees": 1.5})),
        c("c3", "$union", json!({"domains": ["a.example"], "name": ["x"]})),
        c("c2", "$unset", json!(["plan"])),
        json!({"$group_key": "team_id", "$group_id": "t1", "$set": {"name": "a"}}),
    ];
    let r = f.groups(&updates);
    assert_eq!((r.status, &r.json()["num_records_imported"]), (200, &json!(6)), "{}", r.text);
    let expected = BTreeMap::from([
        (key("company_id", "employees", "type_mismatch"), 2),
        (key("company_id", "name", "type_mismatch"), 2),
        (key("company_id", "plan", "unknown_property"), 3),
        (key("team_id", "", "no_schema"), 1),
    ]);
    assert_eq!(f.counts_where("&kind=group"), expected);
    let plan = f.violations("&kind=group&property=plan").remove(0);
    assert_eq!((plan["event"].as_str(), plan["types"].clone()), (Some("company_id"), json!(["string"])));
    let sample = plan["samples"][0].as_str().unwrap();
    assert!(sample.contains(r#""$group_id":"c1""#) && !sample.contains(&f.token), "{sample}");
    assert!(plan["message"].as_str().unwrap().contains("schema of `company_id`"), "{plan}");

    // The same counts as the core's check of the same updates.
    let r = f.server.get(&format!("/api/app/projects/{}/schemas", f.p), &f.owner);
    let entries: Vec<SchemaEntry> = serde_json::from_value(r.json()["results"].clone()).unwrap();
    let dictionary = Dictionary::new(&entries, datadict_core::DEFAULT_NAMESPACE);
    let mut core: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    for update in &updates {
        let parsed = parse_profile_update(&update.to_string(), ProfileKind::Group, &Limits::default(), TokenRule::Optional).unwrap();
        for issue in check_profile_against_dictionary(&parsed.target, &parsed.operation, &dictionary) {
            let property = issue.path.strip_prefix(parsed.operation.key()).and_then(|p| p.strip_prefix('.')).unwrap_or("").to_owned();
            *core.entry((profile_schema_name(&parsed.target).to_owned(), property, issue.code.as_str().to_owned())).or_default() += 1;
        }
    }
    assert_eq!(f.counts_where("&kind=group"), core);

    // An event named like the group key, without a schema: the summary counts it apart from the
    // group updates checked against the `profile` schema of that name.
    let mut same_name = event("x", 0, json!({}));
    same_name["event"] = json!("company_id");
    let r = f.import(&[same_name]);
    assert_eq!(r.status, 200, "{}", r.text);
    let summary = f.server.get(&format!("/api/app/projects/{}/quality/summary", f.p), &f.owner).json();
    let v = &summary["results"]["violations"];
    assert_eq!((&v["by_event"]["company_id"], &v["by_profile"]["company_id"], &v["by_profile"]["team_id"]), (&json!(1), &json!(7), &json!(1)), "{v}");
}

/// Profile and group updates that are refused (unparsable, breaking a rule, another project's
/// token, refused when applied) are kept as rejected records of their route with the core's code
/// and a sample, as refused events are; the valid neighbours are applied.
fn refused_profile_and_group_updates_are_kept_as_rejected_records(backend: Backend) {
    // A profile holds at most two properties here: the third is refused when applied.
    let f = fixture_with(backend, Config { limits: datadict_core::Limits { max_profile_properties: 2, ..datadict_core::Limits::default() }, ..Config::default() });
    let other = f.server.project("other");
    let engage = vec![
        json!({"$distinct_id": "u1", "$set": {"plan": "pro", "seats": 2}}),
        json!({"$distinct_id": "u1"}),
        json!({"$distinct_id": "u1", "$set": {"a": 1}, "$unset": ["b"]}),
        json!({"$distinct_id": "u1", "$add": {"n": "one"}}),
        json!({"$distinct_id": "u1", "$set": {"third": true}}),
    ];
    // A tracking answer without `strict`: the count of applied updates tells what was kept.
    let applied = |r: crate::common::Reply| r.json()["num_records_imported"].clone();
    assert_eq!(applied(f.engage(&engage)), json!(1));
    let mut theirs = with_token(&json!({"$distinct_id": "u9", "$set": {"x": 1}}), &other.token);
    theirs["$set"]["y"] = json!(2);
    let body = json!([with_token(&json!({"$distinct_id": "u2", "$set": {"x": 1}}), &f.token), theirs]);
    let r = f.server.send("POST", "/engage", None, &[("Content-Type", "application/json")], Some(body.to_string().into_bytes()));
    assert_eq!(applied(r), json!(1));
    let groups = vec![json!({"$group_key": "company_id", "$group_id": "c1", "$set": {"name": "Acme"}}), json!({"$group_key": "company_id", "$set": {"name": "x"}})];
    assert_eq!(applied(f.groups(&groups)), json!(1));

    let r = f.server.get(&format!("/api/app/projects/{}/rejected?limit=1000", f.p), &f.owner);
    assert_eq!(r.status, 200, "{}", r.text);
    let rows = r.json()["results"].as_array().unwrap().clone();
    let codes: BTreeMap<(String, String, String), i64> = rows
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_owned();
            ((s("route"), s("event"), s("code")), r["count"].as_i64().unwrap())
        })
        .collect();
    let expected = BTreeMap::from([
        (key("engage", "$user", "missing_operation"), 1),
        (key("engage", "$user", "multiple_operations"), 1),
        (key("engage", "$user", "wrong_type"), 1),
        (key("engage", "$user", "token_refused"), 1),
        (key("engage", "$user", "too_many_properties"), 1),
        (key("groups", "company_id", "missing_field"), 1),
    ]);
    assert_eq!(codes, expected, "{rows:#?}");
    let find = |route: &str, code: &str| rows.iter().find(|r| r["route"] == route && r["code"] == code).unwrap().clone();
    let refused = find("engage", "token_refused");
    let record = refused["samples"][0]["record"].as_str().unwrap();
    assert!(record.contains(r#""$distinct_id":"u9""#) && !record.contains(&other.token), "{record}");
    assert!(refused["samples"][0]["message"].as_str().unwrap().contains("not the token of project"));
    assert!(find("engage", "missing_operation")["samples"][0]["record"].as_str().unwrap().contains(r#""u1""#));
    let summary = f.server.get(&format!("/api/app/projects/{}/quality/summary", f.p), &f.owner).json();
    assert!(find("engage", "too_many_properties")["samples"][0]["record"].as_str().unwrap().contains("third"));
    assert_eq!(summary["results"]["rejected"]["total"], 6);
    // The valid updates were applied.
    let u2 = f.server.get(&format!("/api/app/projects/{}/profiles/u2", f.p), &f.owner).json();
    assert_eq!(u2["results"]["$properties"], json!({"x": 1}));
}

/// The server's findings for `/engage` updates are the core's profile check's for the same
/// updates: the same (entity, property, code) counts.
fn the_server_and_the_core_agree_on_profile_updates(backend: Backend) {
    use datadict_core::{check_profile_against_dictionary, parse_profile_update, Dictionary, Limits, ProfileKind, SchemaEntry, TokenRule, USER_PROFILE};
    let f = fixture(backend);
    f.define_user_profile();
    let updates = violating_updates();
    assert_eq!(f.engage(&updates).status, 200);
    let r = f.server.get(&format!("/api/app/projects/{}/schemas", f.p), &f.owner);
    let entries: Vec<SchemaEntry> = serde_json::from_value(r.json()["results"].clone()).unwrap();
    let dictionary = Dictionary::new(&entries, datadict_core::DEFAULT_NAMESPACE);
    let mut core: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    for update in &updates {
        let parsed = parse_profile_update(&update.to_string(), ProfileKind::User, &Limits::default(), TokenRule::Optional).unwrap();
        for issue in check_profile_against_dictionary(&parsed.target, &parsed.operation, &dictionary) {
            let property = issue.path.strip_prefix(parsed.operation.key()).and_then(|p| p.strip_prefix('.')).unwrap_or("").to_owned();
            *core.entry((USER_PROFILE.to_owned(), property, issue.code.as_str().to_owned())).or_default() += 1;
        }
    }
    assert!(!core.is_empty());
    assert_eq!(f.counts_where("&kind=user"), core);
}

on_both_stores!(
    engage_records_user_violations_with_counts_types_and_samples,
    the_server_and_the_core_agree_on_profile_updates,
    groups_are_checked_against_the_profile_schema_of_their_key,
    refused_profile_and_group_updates_are_kept_as_rejected_records,
);
