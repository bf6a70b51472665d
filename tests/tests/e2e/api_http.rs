//! The schemas list operation over real HTTP on 127.0.0.1 against a real SQLite file: 200 with the
//! spec's body, 401 and 403 with the error body (spec §4.1, §5, §7).

use datadict_server::admin;
use datadict_tests::server::TestServer;
use serde_json::json;

#[test]
fn list_schemas_answers_200_401_403_as_the_spec_says() {
    let server = TestServer::start(None);
    let pid = server.demo.project_id;
    let path = format!("/api/app/projects/{pid}/schemas/event");

    // 200: the demo's event schemas, sorted by name, in the §2.6 body.
    let (status, body) = server.call("GET", &path, Some(&server.demo_auth()), None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ok");
    let names: Vec<&str> = body["results"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Debug Ping", "Page View", "Purchase", "Sign Up"]);
    assert!(body["results"].as_array().unwrap().iter().all(|e| e["entityType"] == "event"));

    // entity_name narrows the list.
    let (status, body) = server.call("GET", &format!("{path}?entity_name=Purchase"), Some(&server.demo_auth()), None);
    assert_eq!(status, 200);
    assert_eq!(body["results"].as_array().unwrap().len(), 1);
    assert_eq!(body["results"][0]["schemaJson"]["properties"]["price"]["type"], "number");

    // 401: no credentials, a wrong secret, an unknown user.
    for auth in [None, Some(TestServer::basic(&server.demo.username, "wrong")), Some(TestServer::basic("nobody", "x"))] {
        let (status, body) = server.call("GET", &path, auth.as_deref(), None);
        assert_eq!(status, 401, "{auth:?}: {body}");
        assert_eq!(body["status"], "error");
        assert!(body["error"].as_str().unwrap().contains("credentials"), "{body}");
    }

    // 403: valid credentials of an account without a role in the project.
    let outsider = admin::create_service_account(&server.store, "outsider").unwrap();
    let (status, body) = server.call("GET", &path, Some(&TestServer::basic("outsider", &outsider.secret)), None);
    assert_eq!(status, 403, "{body}");
    assert_eq!(body, json!({"error": format!("service account `outsider` has no access to project {pid}; ask a project owner to grant it a role"), "status": "error"}));
}
