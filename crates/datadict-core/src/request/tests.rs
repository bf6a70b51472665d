//! Tests of request building and response parsing: URLs per operation and region, credentials
//! and headers, and import answers including partial success.

use super::*;
use crate::api::{BatchUploadResponse, ManualSyncResponse};
use crate::schema::ListSchemasResponse;

fn endpoints() -> Endpoints {
    Endpoints {
        app: RegionUrls { default: "https://app.test/api/app".into(), eu: "https://eu.app.test/api/app".into(), india: "https://in.app.test/api/app".into() },
        ingest: RegionUrls { default: "https://api.test".into(), eu: "https://api-eu.test".into(), india: "https://api-in.test".into() },
        migrate: "https://migrate.test/".into(),
    }
}

#[test]
fn urls_of_every_operation_and_region() {
    let e = endpoints();
    let cases: Vec<(String, &str)> = vec![
        (e.schemas(Region::Default, 7), "https://app.test/api/app/projects/7/schemas"),
        (e.schemas(Region::Eu, 7), "https://eu.app.test/api/app/projects/7/schemas"),
        (e.schemas_of_type(Region::India, 7, EntityType::Event, None), "https://in.app.test/api/app/projects/7/schemas/event"),
        (
            e.schemas_of_type(Region::Default, 7, EntityType::Event, Some("Add To Cart")),
            "https://app.test/api/app/projects/7/schemas/event?entity_name=Add%20To%20Cart",
        ),
        (e.schema(Region::Eu, 7, EntityType::Profile, "$user"), "https://eu.app.test/api/app/projects/7/schemas/profile/%24user"),
        (e.manual_sync(Region::Default, 7, "imp-1"), "https://app.test/api/app/projects/7/warehouse-sources/imports/imp-1/manual-sync"),
        (e.import(Region::Default, 7, true), "https://api.test/import?strict=1&project_id=7"),
        (e.import(Region::India, 7, false), "https://api-in.test/import?strict=0&project_id=7"),
        (e.engage(Region::Eu), "https://api-eu.test/engage"),
        (e.engage_project(Region::Default, 7, true), "https://api.test/engage?strict=1&project_id=7"),
        (e.project(Region::India, 7), "https://in.app.test/api/app/projects/7"),
        (e.migrate("amplitude"), "https://migrate.test/amplitude"),
        (e.profile(Region::Default, 7, "u 1/2"), "https://app.test/api/app/projects/7/profiles/u%201%2F2"),
        (e.groups(Region::Default, 7, None, 50, None), "https://app.test/api/app/projects/7/groups?limit=50"),
        (e.groups(Region::Eu, 7, Some("Company"), 2, Some("WyJhIiwiYiJd")), "https://eu.app.test/api/app/projects/7/groups?limit=2&group_key=Company&after=WyJhIiwiYiJd"),
        (e.group(Region::Default, 7, "Company", "Acme & Co"), "https://app.test/api/app/projects/7/groups/Company/Acme%20%26%20Co"),
        (e.lookup_tables(Region::India, 7), "https://in.app.test/api/app/projects/7/lookup-tables"),
        (e.lookup_table(Region::Default, 7, "t-1", 100, None), "https://app.test/api/app/projects/7/lookup-tables/t-1?limit=100"),
        (e.lookup_table(Region::Default, 7, "t-1", 100, Some("a b")), "https://app.test/api/app/projects/7/lookup-tables/t-1?limit=100&cursor=a%20b"),
        (e.quality_summary(Region::Default, 7, None, None), "https://app.test/api/app/projects/7/quality/summary"),
        (e.quality_summary(Region::Eu, 7, Some("10m"), None), "https://eu.app.test/api/app/projects/7/quality/summary?since=10m"),
        (e.quality_summary(Region::Default, 7, None, Some("2026-01-02")), "https://app.test/api/app/projects/7/quality/summary?until=2026-01-02"),
        (e.quality_summary(Region::Default, 7, Some("7d"), Some("1 d")), "https://app.test/api/app/projects/7/quality/summary?since=7d&until=1%20d"),
        (e.quality_rows(Region::Default, 7, "violations", None, 500), "https://app.test/api/app/projects/7/violations?limit=500"),
        (e.quality_rows(Region::Default, 7, "rejected", Some("29d"), 10), "https://app.test/api/app/projects/7/rejected?limit=10&since=29d"),
        (e.quality_draft(Region::Default, 7, None, None), "https://app.test/api/app/projects/7/quality/draft"),
        (e.quality_draft(Region::Default, 7, Some("Sign Up"), Some("29d")), "https://app.test/api/app/projects/7/quality/draft?event=Sign%20Up&since=29d"),
        (e.quality_reset(Region::India, 7, false), "https://in.app.test/api/app/projects/7/quality"),
        (e.quality_reset(Region::Default, 7, true), "https://app.test/api/app/projects/7/quality?events=true"),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    let local = Endpoints::single_host("http://127.0.0.1:8080/");
    assert_eq!(local.schemas(Region::Eu, 1), "http://127.0.0.1:8080/api/app/projects/1/schemas");
    assert_eq!(local.import(Region::Default, 1, true), "http://127.0.0.1:8080/import?strict=1&project_id=1");
    assert_eq!("EU".parse::<Region>(), Ok(Region::Eu));
    assert_eq!("in".parse::<Region>(), Ok(Region::India));
    assert!("mars".parse::<Region>().is_err());
    assert_eq!(serde_json::to_value(Region::India).unwrap(), "in");
}

#[test]
fn credentials_and_headers() {
    let sa = Credentials::ServiceAccount { username: "bot".into(), secret: "s3cret".into() };
    assert_eq!(sa.header_value(), "Basic Ym90OnMzY3JldA==");
    assert_eq!(Credentials::ProjectToken { token: "tok".into() }.header_value(), "Basic dG9rOg==");
    let batch = Batch { body: vec![1, 2], gzipped: true, positions: vec![], uncompressed_bytes: 2, sequence: 0 };
    let req = import_request(&endpoints(), Region::Default, 7, &sa, &batch);
    assert_eq!(req.method, Method::Post);
    assert_eq!(req.url, "https://api.test/import?strict=1&project_id=7");
    let names: Vec<&str> = req.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["content-encoding", "content-type", "accept", "authorization"]);
    assert_eq!(req.body, [1, 2]);
    let plain = Batch { gzipped: false, ..batch };
    assert!(!import_request(&endpoints(), Region::Default, 7, &sa, &plain).headers.iter().any(|(n, _)| n == "content-encoding"));
    let sync = manual_sync_request(&endpoints(), Region::Eu, 3, "i9", &sa);
    assert_eq!((sync.method, sync.body.as_slice()), (Method::Put, &b"{}"[..]));
}

#[test]
fn import_responses_including_partial_success() {
    let body = br#"{"code":400,"error":"some data points in the request failed validation","failed_records":[{"index":1,"$insert_id":"b","field":"properties.time","message":"too old"}],"num_records_imported":2,"status":"Bad Request"}"#;
    let parsed = parse_import_response(400, body);
    assert_eq!(parsed.num_records_imported, Some(2));
    let batch = Batch {
        body: vec![],
        gzipped: false,
        positions: vec![RecordPos { index: 10, line: 11 }, RecordPos { index: 12, line: 13 }],
        uncompressed_bytes: 0,
        sequence: 0,
    };
    let mapped = map_failed_records(&batch, &parsed);
    assert_eq!(mapped.len(), 1);
    assert_eq!(mapped[0].pos, Some(RecordPos { index: 12, line: 13 }));
    assert_eq!(mapped[0].failure.field, "properties.time");
    let ok = parse_import_response(200, br#"{"code":200,"num_records_imported":3,"status":"OK"}"#);
    assert_eq!(ok, ImportResponse::ok(3));
    let proxy = parse_import_response(502, b"<html>Bad Gateway</html>");
    assert_eq!((proxy.code, proxy.error.as_deref()), (502, Some("<html>Bad Gateway</html>")));
    assert_eq!(parse_import_response(503, b"").error.as_deref(), Some("HTTP 503 without a body"));
    let limited = parse_import_response(429, serde_json::to_vec(&ImportResponse::rate_limited()).unwrap().as_slice());
    assert_eq!(limited, ImportResponse::rate_limited());
}

#[test]
fn api_responses() {
    let list: ListSchemasResponse = parse_api_response(200, br#"{"results":[],"status":"ok"}"#).unwrap();
    assert!(list.results.is_empty());
    let up: BatchUploadResponse = parse_api_response(200, br#"{"results":{"added":1,"deleted":0},"status":"ok"}"#).unwrap();
    assert_eq!(up, BatchUploadResponse::ok(1, 0));
    let sync: ManualSyncResponse = parse_api_response(200, br#"{"status":"ok","results":{"run_id":"r"}}"#).unwrap();
    assert_eq!(sync.results.run_id, "r");
    let err = parse_api_response::<ListSchemasResponse>(401, br#"{"error":"bad credentials","status":"error"}"#).unwrap_err();
    assert_eq!(err, ApiError { status: 401, message: "bad credentials".into() });
    assert!(err.to_string().starts_with("the server rejected the credentials (401): bad credentials;"), "{err}");
    let err = parse_api_response::<ListSchemasResponse>(500, b"oops").unwrap_err();
    assert_eq!(err.message, "oops");
    let context = StatusContext { project_id: Some(3), writes: true, ..StatusContext::default() };
    let forbidden = ApiError { status: 403, message: "no".into() };
    assert!(forbidden.explain(&context).contains("project 3 (403): no; this request writes"), "{}", forbidden.explain(&context));
    assert_eq!(parse_api_response::<ListSchemasResponse>(200, b"{}").unwrap_err().status, 200);
}
