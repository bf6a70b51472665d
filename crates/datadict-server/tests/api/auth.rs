//! The 401/403 matrix across roles and routes, and the `admin` command line.

use crate::common::{on_both_stores, Account, Backend, Server};
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::json;

/// Every authenticated route of the application API: method, path, body, and whether it writes.
fn routes(p: i64) -> Vec<(&'static str, String, Option<serde_json::Value>, bool)> {
    let s = format!("/api/app/projects/{p}/schemas");
    vec![
        ("GET", s.clone(), None, false),
        ("GET", format!("{s}/event"), None, false),
        ("GET", format!("{s}/event?entity_name=Purchase"), None, false),
        ("GET", format!("{s}/event/Purchase"), None, false),
        ("POST", s.clone(), Some(json!({"entries": [], "truncate": false})), true),
        ("POST", format!("{s}/event/Purchase"), Some(json!({"description": "x"})), true),
        ("DELETE", format!("{s}/event/Other"), None, true),
        ("DELETE", format!("{s}/profile"), None, true),
        ("DELETE", format!("{s}/profile?entity_name=$user"), None, true),
        ("DELETE", s.clone(), None, true),
        ("GET", format!("/api/app/projects/{p}/events"), None, false),
        ("GET", format!("/api/app/projects/{p}/event-counts"), None, false),
        ("GET", format!("/api/app/projects/{p}/lookup-tables"), None, false),
        ("GET", format!("/api/app/projects/{p}/violations"), None, false),
        ("GET", format!("/api/app/projects/{p}/rejected"), None, false),
        ("GET", format!("/api/app/projects/{p}/quality/summary"), None, false),
        ("GET", format!("/api/app/projects/{p}/quality/draft"), None, false),
        ("DELETE", format!("/api/app/projects/{p}/quality"), None, true),
        // No such profile: an authorized caller learns that (404), others do not.
        ("GET", format!("/api/app/projects/{p}/profiles/someone"), None, false),
    ]
}

/// A project `p` with an account of each role in it, and the owner of another project.
struct Cast {
    p: i64,
    owner: Account,
    admin: Account,
    consumer: Account,
    stranger: Account,
}

/// A caller: who, and the credentials sent.
type Caller<'a> = (&'static str, Option<(&'a str, &'a str)>);

impl Cast {
    fn new(server: &Server) -> Self {
        let p = server.project("p").id;
        let other = server.project("other").id;
        Self {
            p,
            owner: server.account("owner", p, Some(Role::Owner)),
            admin: server.account("admin", p, Some(Role::Admin)),
            consumer: server.account("consumer", p, Some(Role::Consumer)),
            stranger: server.account("stranger", other, Some(Role::Owner)),
        }
    }

    /// The callers a route refuses, with their status: 401 without valid credentials, 403 without
    /// a role in the project, and 403 for the consumer when the route `writes`.
    fn refused(&self, writes: bool) -> Vec<(Caller<'_>, u16)> {
        let mut out = vec![
            (("nobody", None), 401),
            (("wrong secret", Some((self.owner.username.as_str(), "not-the-secret"))), 401),
            (("unknown user", Some(("ghost", self.owner.secret.as_str()))), 401),
            (("no role", Some((self.stranger.username.as_str(), self.stranger.secret.as_str()))), 403),
        ];
        if writes {
            out.push((("consumer", Some((self.consumer.username.as_str(), self.consumer.secret.as_str()))), 403));
        }
        out
    }

    /// The callers a route admits (the consumer only when it does not write), the owner last, so
    /// that its deletions do not change what the others saw.
    fn admitted(&self, writes: bool) -> Vec<Caller<'_>> {
        let mut out = Vec::new();
        if !writes {
            out.push(("consumer", Some((self.consumer.username.as_str(), self.consumer.secret.as_str()))));
        }
        out.push(("admin", Some((self.admin.username.as_str(), self.admin.secret.as_str()))));
        out.push(("owner", Some((self.owner.username.as_str(), self.owner.secret.as_str()))));
        out
    }
}

fn call(server: &Server, method: &str, path: &str, auth: Option<(&str, &str)>, body: &Option<serde_json::Value>) -> crate::common::Reply {
    let bytes = body.as_ref().map(|b| serde_json::to_vec(b).unwrap());
    server.send(method, path, auth, &[("Content-Type", "application/json")], bytes)
}

/// Asserts that `r` has status `want` and, for an error, the API's error body with a specific
/// message (starting in lower case, as this API's messages do); returns the message (empty for a
/// success).
fn expect(r: &crate::common::Reply, want: u16, context: &str) -> String {
    assert_eq!(r.status, want, "{context}: {}", r.text);
    if want < 400 {
        return String::new();
    }
    assert_eq!(r.json()["status"], "error", "{context}: {}", r.text);
    let msg = r.json()["error"].as_str().unwrap().to_owned();
    assert!(!msg.is_empty() && msg.chars().next().unwrap().is_lowercase(), "{context}: {msg}");
    msg
}

fn every_route_answers_401_and_403_by_role(backend: Backend) {
    let server = Server::start_on(backend);
    let cast = Cast::new(&server);
    let (p, owner) = (cast.p, &cast.owner);
    // Keep one schema so that GET one answers 200.
    let r = server.post_json(&format!("/api/app/projects/{p}/schemas/event/Purchase"), owner, &json!({}));
    assert_eq!(r.status, 200);

    for (method, path, body, writes) in routes(p) {
        let allowed = if path.contains("/profiles/") { 404 } else { 200 };
        let check = |who: &str, auth: Option<(&str, &str)>, want: u16| {
            let want = if want == 200 { allowed } else { want };
            expect(&call(&server, method, &path, auth, &body), want, &format!("{who}: {method} {path}"));
        };
        for ((who, auth), want) in cast.refused(writes) {
            check(who, auth, want);
        }
        for (who, auth) in cast.admitted(writes) {
            check(who, auth, 200);
        }
        if method == "DELETE" || method == "POST" {
            server.post_json(&format!("/api/app/projects/{p}/schemas/event/Purchase"), owner, &json!({}));
        }
    }
    // A project that does not exist is indistinguishable from one the account cannot see.
    let r = server.get("/api/app/projects/999/schemas", owner);
    assert_eq!(r.status, 403);
    // A malformed header is a 401, not a 400 or a 500.
    for header in ["Basic", "Basic !!!", "Bearer abc", "Basic dXNlcg=="] {
        let r = server.send("GET", &format!("/api/app/projects/{p}/schemas"), None, &[("Authorization", header)], None);
        assert_eq!(r.status, 401, "{header}");
    }
}

/// The warehouse-import routes: method, path, body, whether it writes, and what an allowed caller
/// gets. `{fresh}` stands for an import created just before each call, so that every caller of
/// DELETE has an import of its own to delete.
fn warehouse_routes(p: i64, id: i64, run_id: &str, create: &serde_json::Value) -> Vec<(&'static str, String, Option<serde_json::Value>, bool, u16)> {
    let w = format!("/api/app/projects/{p}/warehouse-sources/imports");
    vec![
        ("GET", w.clone(), None, false, 200),
        ("GET", format!("{w}/{id}"), None, false, 200),
        ("GET", format!("{w}/{id}/runs"), None, false, 200),
        ("GET", format!("{w}/{id}/runs/{run_id}"), None, false, 200),
        // No such import: an authorized caller learns that (404), others do not.
        ("GET", format!("{w}/999"), None, false, 404),
        ("GET", format!("{w}/{id}/runs/no-such-run"), None, false, 404),
        ("POST", w.clone(), Some(create.clone()), true, 201),
        ("PUT", format!("{w}/{id}/manual-sync"), Some(json!({})), true, 200),
        ("PUT", format!("{w}/999/manual-sync"), Some(json!({})), true, 404),
        ("DELETE", format!("{w}/{{fresh}}"), None, true, 200),
        ("DELETE", format!("{w}/999"), None, true, 404),
    ]
}

/// Polls a warehouse run (`path` is its `.../runs/{run_id}`) until it has ended, with a deadline.
fn wait_run(server: &Server, path: &str, who: &Account) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let r = server.get(path, who);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        let status = r.json()["results"]["status"].clone();
        if status == "succeeded" || status == "failed" {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{path} did not end: {}", r.text);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Every warehouse-import route (list, get one, runs, one run, create, manual sync, delete) answers
/// 401 without valid credentials, 403 to an account without a role in the project and to a
/// consumer on writes, and its own answer (200/201/404) to the roles allowed; a refused call
/// changes neither the imports nor the run history.
fn every_warehouse_route_answers_401_and_403_by_role(backend: Backend) {
    let server = Server::start_on(backend);
    let cast = Cast::new(&server);
    let (p, owner) = (cast.p, &cast.owner);
    let file = server.dir.path().join("people.ndjson");
    std::fs::write(&file, "{\"u\":\"a\"}\n").unwrap();
    let body = json!({"name": "people", "kind": "people", "source": {"type": "ndjson", "path": file.to_str().unwrap()}, "mapping": {"user_column_name": "u"}});
    let w = format!("/api/app/projects/{p}/warehouse-sources/imports");
    let create = || {
        let r = server.post_json(&w, owner, &body);
        assert_eq!(r.status, 201, "{}", r.text);
        r.json()["results"]["id"].as_i64().unwrap()
    };
    let id = create();
    // One ended run, so that GET one run answers 200.
    let r = call(&server, "PUT", &format!("{w}/{id}/manual-sync"), Some((&owner.username, &owner.secret)), &Some(json!({})));
    assert_eq!(r.status, 200, "{}", r.text);
    let run_id = r.json()["results"]["run_id"].as_str().unwrap().to_owned();
    wait_run(&server, &format!("{w}/{id}/runs/{run_id}"), owner);
    // What a write could change: the imports (each with its last run) and the run history.
    let snapshot = || format!("{}\n{}", server.get(&w, owner).text, server.get(&format!("{w}/{id}/runs"), owner).text);

    for (method, template, body, writes, allowed) in warehouse_routes(p, id, &run_id, &body) {
        let check = |who: &str, auth: Option<(&str, &str)>, want: u16| {
            let want = if want == 200 { allowed } else { want };
            let path = if template.contains("{fresh}") { template.replace("{fresh}", &create().to_string()) } else { template.clone() };
            let before = snapshot();
            let r = call(&server, method, &path, auth, &body);
            let msg = expect(&r, want, &format!("{who}: {method} {path}"));
            if want == 403 {
                let needle = if who == "consumer" { "needs the owner or admin role".to_owned() } else { format!("no access to project {p}") };
                assert!(msg.contains(&needle), "{who}: {method} {path}: `{needle}` not in {msg}");
            }
            if want == 401 || want == 403 {
                assert_eq!(snapshot(), before, "{who}: the refused {method} {path} changed something");
            }
            if method == "PUT" && r.status == 200 {
                // The next caller's sync would be a 409 while this run has not ended.
                let run = r.json()["results"]["run_id"].as_str().unwrap().to_owned();
                wait_run(&server, &format!("{w}/{id}/runs/{run}"), owner);
            }
        };
        for ((who, auth), want) in cast.refused(writes) {
            check(who, auth, want);
        }
        for (who, auth) in cast.admitted(writes) {
            check(who, auth, 200);
        }
    }
    // The two allowed syncs and the first one are in the history; the two allowed creates are listed.
    assert_eq!(server.get(&format!("{w}/{id}/runs"), owner).json()["results"].as_array().unwrap().len(), 3);
    let listed = server.get(&w, owner).json()["results"].as_array().unwrap().len();
    // The first import, the admin's and owner's creates, and the five fresh imports whose deletion
    // was refused (nobody, wrong secret, unknown user, no role, consumer).
    assert_eq!(listed, 1 + 2 + 5);
}

/// `/import` and `/engage` with a service account and `?project_id=`: 401 without valid
/// credentials (`status` `Unauthorized`), 403 without a role or with the consumer role (ingestion
/// writes), 200 for admin and owner; nothing a refused request sent is stored.
fn ingestion_answers_401_and_403_by_role(backend: Backend) {
    let server = Server::start_on(backend);
    let cast = Cast::new(&server);
    let (p, owner) = (cast.p, &cast.owner);
    let t = crate::common::now_ms() - 60_000;
    let event = |who: &str| json!([{"event": "Matrix", "properties": {"time": t, "distinct_id": "u1", "$insert_id": format!("id-{}", who.replace(' ', "-"))}}]);
    let update = |who: &str| json!([{"$distinct_id": "u1", "$set": {who: true}}]);
    let events = || {
        let r = server.get(&format!("/api/app/projects/{p}/events?limit=1000"), owner);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["results"].as_array().unwrap().iter().map(|e| e["properties"]["$insert_id"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    let profile = || server.get(&format!("/api/app/projects/{p}/profiles/u1"), owner);

    for route in ["/import", "/engage"] {
        let path = format!("{route}?strict=1&project_id={p}");
        let check = |who: &str, auth: Option<(&str, &str)>, want: u16| {
            let body = if route == "/import" { event(who) } else { update(who) };
            let r = server.send("POST", &path, auth, &[("Content-Type", "application/json")], Some(serde_json::to_vec(&body).unwrap()));
            assert_eq!(r.status, want, "{who}: {path}: {}", r.text);
            let json = r.json();
            assert_eq!(json["code"], want, "{who}: {path}: {}", r.text);
            let msg = json["error"].as_str().unwrap_or_default().to_owned();
            match want {
                200 => assert_eq!(json["num_records_imported"], 1, "{who}: {path}: {}", r.text),
                401 => {
                    assert_eq!(json["status"], "Unauthorized", "{who}: {path}: {}", r.text);
                    assert!(!msg.is_empty(), "{who}: {path}: {}", r.text);
                }
                _ => {
                    assert_eq!(json["status"], "Forbidden", "{who}: {path}: {}", r.text);
                    assert!(msg.contains(&format!("project {p}")), "{who}: {path}: {msg}");
                }
            }
        };
        for ((who, auth), want) in cast.refused(true) {
            check(who, auth, want);
        }
        // Nothing a refused request sent was stored.
        if route == "/import" {
            assert_eq!(events(), Vec::<String>::new());
        } else {
            assert_eq!(profile().status, 404, "{}", profile().text);
        }
        for (who, auth) in cast.admitted(true) {
            check(who, auth, 200);
        }
    }
    // A wrong secret gets FACTS.md's 401 body word for word.
    let r = server.send("POST", &format!("/import?project_id={p}"), Some((&owner.username, "nope")), &[], Some(serde_json::to_vec(&event("x")).unwrap()));
    assert_eq!((r.status, r.json()), (401, json!({"code": 401, "error": "Invalid credentials", "status": "Unauthorized"})));
    let mut stored = events();
    stored.sort();
    assert_eq!(stored, vec!["id-admin", "id-owner"]);
    let r = profile();
    assert_eq!(r.json()["results"]["$properties"], json!({"admin": true, "owner": true}), "{}", r.text);
}

/// A refusal of the credentials is decided by the auth extractors before the handler reads the
/// body (the ingestion routes' 403 after, since their `project_id` may be a form field); it still
/// waits for the whole body, so that a client sending a large one gets the answer rather than a
/// connection closed under it, and the connection serves the next request.
fn a_refused_large_body_still_gets_its_answer(backend: Backend) {
    let server = Server::start_on(backend);
    let cast = Cast::new(&server);
    let p = cast.p;
    let owner = (cast.owner.username.as_str(), "not-the-secret");
    let consumer = (cast.consumer.username.as_str(), cast.consumer.secret.as_str());
    // Far more than socket buffers hold, and under every route's body limit.
    let body = crate::common::padded_object(8 << 20);
    let cases = [
        (format!("/import?project_id={p}"), Some(owner), 401),
        (format!("/import?project_id={p}"), Some(("not-a-project-token", "")), 401),
        (format!("/import?project_id={p}"), Some(consumer), 403),
        (format!("/engage?project_id={p}"), Some(owner), 401),
        (format!("/api/app/projects/{p}/schemas"), None, 401),
        (format!("/api/app/projects/{p}/schemas"), Some(consumer), 403),
        (format!("/api/app/projects/{p}/warehouse-sources/imports"), Some(owner), 401),
    ];
    for (path, auth, want) in cases {
        // Twice: the second request goes over the connection the first one used.
        for _ in 0..2 {
            let r = server.send("POST", &path, auth, &[("Content-Type", "application/json")], Some(body.clone()));
            assert_eq!(r.status, want, "{path}: {}", r.text);
        }
    }
    assert_eq!(server.get(&format!("/api/app/projects/{p}/schemas"), &cast.consumer).status, 200);
}

fn cli(dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_datadict-server"))
        .arg("--data-dir")
        .arg(dir)
        .arg("admin")
        .args(args)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The value after `label` on its line of `text`.
fn field(text: &str, label: &str) -> String {
    let line = text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no `{label}` in {text}"));
    line[label.len()..].split_whitespace().next().unwrap().to_owned()
}

#[test]
fn the_admin_command_line_manages_projects_accounts_and_roles() {
    let dir = tempfile::tempdir().unwrap();
    // The admin commands never create a database (a server's first start does).
    drop(datadict_server::Store::open(&dir.path().join("datadict.sqlite3")).unwrap());
    let (ok, out, _) = cli(dir.path(), &["create-project", "--name", "Shop"]);
    assert!(ok, "{out}");
    let project: i64 = field(&out, "project id:").parse().unwrap();
    let token = field(&out, "project token:");
    assert!(out.contains("shown once"));
    let (ok, out, _) = cli(dir.path(), &["create-account", "--username", "ci"]);
    assert!(ok);
    let secret = field(&out, "secret:");
    assert_eq!(secret.len(), 43);
    // The same name twice is refused, with a message.
    let (ok, _, err) = cli(dir.path(), &["create-account", "--username", "ci"]);
    assert!(!ok && err.contains("service account `ci` already exists"), "{err}");
    let (ok, _, err) = cli(dir.path(), &["grant", "--username", "ci", "--project", "77", "--role", "owner"]);
    assert!(!ok && err.contains("no project with id 77"), "{err}");
    let (ok, _, err) = cli(dir.path(), &["grant", "--username", "ci", "--project", &project.to_string(), "--role", "boss"]);
    assert!(!ok && err.contains("use owner, admin or consumer"), "{err}");
    let (ok, out, _) = cli(dir.path(), &["grant", "--username", "ci", "--project", &project.to_string(), "--role", "consumer"]);
    assert!(ok, "{out}");

    // Secrets are stored hashed: neither the secret nor the token is in the database file.
    let db = std::fs::read(dir.path().join("datadict.sqlite3")).unwrap();
    let wal = std::fs::read(dir.path().join("datadict.sqlite3-wal")).unwrap_or_default();
    for needle in [&secret, &token] {
        assert!(!contains(&db, needle.as_bytes()) && !contains(&wal, needle.as_bytes()));
    }

    let server = Server::start_in(dir, Config::default());
    let ci = Account { username: "ci".into(), secret: secret.clone() };
    let schemas = format!("/api/app/projects/{project}/schemas");
    assert_eq!(server.get(&schemas, &ci).status, 200);
    assert_eq!(server.post_json(&schemas, &ci, &json!({"entries": []})).status, 403);
    let dir = server.dir.path().to_owned();
    let (ok, _, _) = cli(&dir, &["grant", "--username", "ci", "--project", &project.to_string(), "--role", "admin"]);
    assert!(ok);
    assert_eq!(server.post_json(&schemas, &ci, &json!({"entries": []})).status, 200);

    let (ok, out, _) = cli(&dir, &["rotate-secret", "--username", "ci"]);
    assert!(ok);
    let new_secret = field(&out, "new secret:");
    assert_ne!(new_secret, secret);
    assert_eq!(server.get(&schemas, &ci).status, 401);
    let ci = Account { username: "ci".into(), secret: new_secret };
    assert_eq!(server.get(&schemas, &ci).status, 200);

    let (ok, out, _) = cli(&dir, &["revoke", "--username", "ci", "--project", &project.to_string()]);
    assert!(ok && out.contains("role revoked"), "{out}");
    assert_eq!(server.get(&schemas, &ci).status, 403);
    let (ok, _, err) = cli(&dir, &["rotate-secret", "--username", "nobody"]);
    assert!(!ok && err.contains("no service account named `nobody`"), "{err}");
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Credentials are judged before anything else in the request: without valid ones, a malformed
/// project id, query string or body still gets 401 (and says nothing about them); with valid ones,
/// each of those gets its own 400.
fn credentials_are_judged_before_the_rest_of_the_request(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let json = [("Content-Type", "application/json")];
    let cases: [(&str, String, Option<&[u8]>, &str); 7] = [
        ("GET", "/api/app/projects/zz/schemas".into(), None, "project id"),
        // A project id that is not UTF-8 once decoded is as malformed.
        ("GET", "/api/app/projects/%FF/schemas".into(), None, "Invalid UTF-8 in `project_id`"),
        ("GET", format!("/api/app/projects/{p}/warehouse-sources/imports/%FF/runs"), None, "Invalid UTF-8 in `import_id`"),
        ("GET", format!("/api/app/projects/{p}/event-counts?days=1&days=2"), None, "duplicate field `days`"),
        ("DELETE", format!("/api/app/projects/{p}/schemas/event?entity_name=a&entity_name=b"), None, "duplicate field `entity_name`"),
        ("POST", format!("/api/app/projects/{p}/schemas"), Some(b"{bad"), "not valid JSON"),
        ("POST", format!("/api/app/projects/{p}/schemas/events/X"), Some(b"{}"), "`event` or `profile`"),
    ];
    for (method, path, body, problem) in cases {
        let body = body.map(<[u8]>::to_vec);
        for (who, auth) in [("nobody", None), ("wrong secret", Some((owner.username.as_str(), "not-the-secret")))] {
            let r = server.send(method, &path, auth, &json, body.clone());
            assert_eq!(r.status, 401, "{who}: {method} {path}: {}", r.text);
            assert!(!r.text.contains(problem), "{who}: {method} {path} told a stranger about the request: {}", r.text);
        }
        let r = server.send(method, &path, Some((&owner.username, &owner.secret)), &json, body);
        assert_eq!(r.status, 400, "owner: {method} {path}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains(problem), "owner: {method} {path}: {}", r.text);
    }
    // The same on /import: a malformed `project_id` is reported only to valid credentials.
    let r = server.send("POST", "/import?project_id=zz", Some((&owner.username, "not-the-secret")), &json, Some(b"[]".to_vec()));
    assert_eq!(r.status, 401, "{}", r.text);
    let r = server.send("POST", "/import?project_id=zz", Some((&owner.username, &owner.secret)), &json, Some(b"[]".to_vec()));
    assert_eq!((r.status, r.text.contains("project id")), (400, true), "{}", r.text);
    // And on /engage, before its own `strict`.
    let r = server.send("POST", "/engage?project_id=zz&strict=2", Some((&owner.username, "not-the-secret")), &json, Some(b"[]".to_vec()));
    assert_eq!(r.status, 401, "{}", r.text);
    let r = server.send("POST", "/engage?project_id=zz&strict=2", Some((&owner.username, &owner.secret)), &json, Some(b"[]".to_vec()));
    assert_eq!((r.status, r.text.contains("project id")), (400, true), "{}", r.text);
    // And a missing one.
    let r = server.send("POST", "/import", Some((&owner.username, "not-the-secret")), &json, Some(b"[]".to_vec()));
    assert_eq!(r.status, 401, "{}", r.text);
    let r = server.send("POST", "/import", Some((&owner.username, &owner.secret)), &json, Some(b"[]".to_vec()));
    assert_eq!((r.status, r.text.contains("`project_id` is required")), (400, true), "{}", r.text);
}

/// The lookup-table routes, application and ingestion alike: 401 without valid credentials, 403
/// without a role (and for the consumer on writes), and what an allowed caller gets. Each caller of
/// a delete gets a table of its own; a refused replace or delete leaves the table as it was.
fn lookup_table_routes_answer_401_and_403_by_role(backend: Backend) {
    let server = Server::start_on(backend);
    let cast = Cast::new(&server);
    let (p, owner) = (cast.p, &cast.owner);
    let tables = format!("/api/app/projects/{p}/lookup-tables");
    let create = |name: &str| {
        let r = server.post_json(&tables, owner, &json!({"name": name}));
        assert_eq!(r.status, 201, "{}", r.text);
        r.json()["results"]["id"].as_str().unwrap().to_owned()
    };
    let kept = create("Kept");
    let csv = b"id,plan\nacme,pro\n".to_vec();
    let send = |method: &str, path: &str, auth: Option<(&str, &str)>, body: Option<Vec<u8>>, content_type: &str| {
        server.send(method, path, auth, &[("Content-Type", content_type)], body)
    };
    // (method, path, body, content type, writes, what an allowed caller gets, ingestion body?)
    type Route = (&'static str, String, Option<Vec<u8>>, &'static str, bool, u16, bool);
    let routes = |fresh: &str| -> Vec<Route> {
        vec![
            ("GET", tables.clone(), None, "application/json", false, 200, false),
            ("POST", tables.clone(), Some(br#"{"name":"N"}"#.to_vec()), "application/json", true, 201, false),
            ("GET", format!("{tables}/{kept}"), None, "application/json", false, 200, false),
            ("DELETE", format!("{tables}/{fresh}"), None, "application/json", true, 200, false),
            ("GET", format!("/lookup-tables?project_id={p}"), None, "application/json", false, 200, true),
            ("PUT", format!("/lookup-tables/{kept}?project_id={p}"), Some(csv.clone()), "text/csv", true, 200, true),
        ]
    };
    let mut n = 0;
    for index in 0..routes("x").len() {
        for writes_pass in [false, true] {
            let callers: Vec<(Caller<'_>, u16)> = if writes_pass {
                let writes = routes("x")[index].4;
                cast.admitted(writes).into_iter().map(|c| (c, 0)).collect()
            } else {
                cast.refused(routes("x")[index].4)
            };
            for ((who, auth), refused_with) in callers {
                n += 1;
                // A fresh table for each delete, and a fresh name for each create.
                let fresh = create(&format!("Fresh {n}"));
                let (method, path, body, content_type, _, allowed, ingestion) = routes(&fresh).swap_remove(index);
                let body = body.map(|b| if method == "POST" { format!(r#"{{"name":"N {n}"}}"#).into_bytes() } else { b });
                let want = if refused_with == 0 { allowed } else { refused_with };
                let r = send(method, &path, auth, body, content_type);
                let context = format!("{who}: {method} {path}");
                assert_eq!(r.status, want, "{context}: {}", r.text);
                if want >= 400 {
                    if ingestion {
                        assert_eq!(r.json()["code"], want, "{context}: {}", r.text);
                    } else {
                        assert_eq!(r.json()["status"], "error", "{context}: {}", r.text);
                    }
                    assert!(!r.json()["error"].as_str().unwrap_or_default().is_empty(), "{context}: {}", r.text);
                }
            }
        }
    }
    // The refused replaces and deletes changed nothing: the kept table has only what the admitted
    // replaces wrote, and one table per caller of a refused delete is still there.
    let r = server.get(&format!("{tables}/{kept}"), owner);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"]["rows"], json!([["acme", "pro"]]), "{}", r.text);
    let listed = send("GET", &tables, Some((&owner.username, &owner.secret)), None, "application/json");
    let names: Vec<String> = listed.json()["results"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert!(names.contains(&"Kept".to_owned()), "{names:?}");
    // Every caller got a fresh table; only the admitted callers of DELETE removed theirs.
    let fresh_left = names.iter().filter(|name| name.starts_with("Fresh ")).count();
    assert_eq!(fresh_left, n - cast.admitted(true).len(), "{names:?}");
}

on_both_stores!(every_route_answers_401_and_403_by_role, every_warehouse_route_answers_401_and_403_by_role, ingestion_answers_401_and_403_by_role, a_refused_large_body_still_gets_its_answer, credentials_are_judged_before_the_rest_of_the_request, lookup_table_routes_answer_401_and_403_by_role);
