//! Unit tests of the row mapping: times, insert ids, properties and the §2.10 defaults.

use super::*;
use serde_json::json;

fn mapping() -> Mapping {
    Mapping {
        event_column_name: Some("kind".into()),
        time_column_name: Some("ts".into()),
        user_column_name: Some("user".into()),
        key_column_names: vec!["id".into()],
        ..Mapping::default()
    }
}

fn row(v: Value) -> Row {
    v.as_object().unwrap().clone()
}

#[test]
fn events_carry_the_defaults_and_stable_ids() {
    let limits = Limits::default();
    let r = row(json!({"id": 7, "kind": "Buy", "ts": 1_700_000_000, "user": 42, "price": 9.5, "empty": null}));
    let a = row_to_event(&mapping(), 3, "run-1", &r, &limits).unwrap();
    let b = row_to_event(&mapping(), 3, "run-2", &r, &limits).unwrap();
    let p = &a["properties"];
    assert_eq!(a["event"], "Buy");
    assert_eq!(p["time"], 1_700_000_000_000i64);
    assert_eq!(p["distinct_id"], "42");
    assert_eq!(p["$warehouse_import_id"], "3");
    assert_eq!(p["$warehouse_import_job_id"], "run-1");
    assert_eq!(p["$import"], true);
    assert_eq!(p["$source"], "warehouse-import");
    // Key columns stay properties; mapped ones and empty values do not.
    assert_eq!(p["id"], 7);
    assert_eq!(p["price"], 9.5);
    assert!(p.get("kind").is_none() && p.get("ts").is_none() && p.get("empty").is_none());
    // The same row makes the same insert id in every run; another import or key makes another.
    assert_eq!(p["$insert_id"], b["properties"]["$insert_id"]);
    let other_import = row_to_event(&mapping(), 4, "run-1", &r, &limits).unwrap();
    assert_ne!(p["$insert_id"], other_import["properties"]["$insert_id"]);
    let other_key = row_to_event(&mapping(), 3, "run-1", &row(json!({"id": 8, "kind": "Buy", "ts": 1, "user": 42})), &limits).unwrap();
    assert_ne!(p["$insert_id"], other_key["properties"]["$insert_id"]);
    let id = p["$insert_id"].as_str().unwrap();
    assert!(id.len() <= 36 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'), "{id}");
}

#[test]
fn bad_rows_say_why() {
    let limits = Limits::default();
    let check = |v: Value, needle: &str| {
        let err = row_to_event(&mapping(), 1, "r", &row(v), &limits).unwrap_err().message;
        assert!(err.contains(needle), "{err}");
        assert!(!err.ends_with('.'), "{err}");
    };
    check(json!({"id": 1, "ts": 1, "user": "u"}), "`kind` is empty");
    check(json!({"id": 1, "kind": "A", "user": "u"}), "`ts` is empty");
    check(json!({"id": 1, "kind": "A", "ts": "soon", "user": "u"}), "not a time");
    check(json!({"kind": "A", "ts": 1, "user": "u"}), "key column `id`");
    // An insert-id column with a value the import refuses is hashed into a valid one.
    let m = Mapping { insert_id_column_name: Some("iid".into()), key_column_names: vec![], ..mapping() };
    let e = row_to_event(&m, 1, "r", &row(json!({"iid": "a:b", "kind": "A", "ts": 1, "user": "u"})), &limits).unwrap();
    assert!(e["properties"]["$insert_id"].as_str().unwrap().chars().all(|c| c != ':'));
    let e = row_to_event(&m, 1, "r", &row(json!({"iid": "ok-1", "kind": "A", "ts": 1, "user": "u"})), &limits).unwrap();
    assert_eq!(e["properties"]["$insert_id"], "ok-1");
}

#[test]
fn profiles_need_a_real_distinct_id() {
    let m = Mapping { user_column_name: Some("u".into()), property_column_names: Some(vec!["plan".into()]), ..Mapping::default() };
    let limits = Limits::default();
    let (id, props) = row_to_profile(&m, &row(json!({"u": "a", "plan": "pro", "other": 1})), &limits).unwrap();
    assert_eq!((id.as_str(), props.len()), ("a", 1));
    assert!(row_to_profile(&m, &row(json!({"u": null})), &limits).is_err());
    assert!(row_to_profile(&m, &row(json!({"u": "undefined"})), &limits).is_err());
}
