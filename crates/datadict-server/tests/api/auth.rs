//! The 401/403 matrix across roles and routes, and the `admin` command line.

use crate::common::{Account, Server};
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
        // No such profile: an authorized caller learns that (404), others do not.
        ("GET", format!("/api/app/projects/{p}/profiles/someone"), None, false),
    ]
}

fn call(server: &Server, method: &str, path: &str, auth: Option<(&str, &str)>, body: &Option<serde_json::Value>) -> crate::common::Reply {
    let bytes = body.as_ref().map(|b| serde_json::to_vec(b).unwrap());
    server.send(method, path, auth, &[("Content-Type", "application/json")], bytes)
}

#[test]
fn every_route_answers_401_and_403_by_role() {
    let server = Server::start();
    let p = server.project("p").id;
    let other = server.project("other").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let admin = server.account("admin", p, Some(Role::Admin));
    let consumer = server.account("consumer", p, Some(Role::Consumer));
    let stranger = server.account("stranger", other, Some(Role::Owner));
    // Keep one schema so that GET one answers 200.
    let r = server.post_json(&format!("/api/app/projects/{p}/schemas/event/Purchase"), &owner, &json!({}));
    assert_eq!(r.status, 200);

    for (method, path, body, writes) in routes(p) {
        let allowed = if path.contains("/profiles/") { 404 } else { 200 };
        let check = |who: &str, auth: Option<(&str, &str)>, want: u16| {
            let want = if want == 200 { allowed } else { want };
            let r = call(&server, method, &path, auth, &body);
            assert_eq!(r.status, want, "{who}: {method} {path}: {}", r.text);
            if want >= 400 {
                assert_eq!(r.json()["status"], "error", "{who}: {method} {path}");
                let msg = r.json()["error"].as_str().unwrap().to_owned();
                assert!(!msg.is_empty() && msg.chars().next().unwrap().is_lowercase(), "{msg}");
            }
        };
        check("nobody", None, 401);
        check("wrong secret", Some((&owner.username, "not-the-secret")), 401);
        check("unknown user", Some(("ghost", &owner.secret)), 401);
        check("no role", Some((&stranger.username, &stranger.secret)), 403);
        check("consumer", Some((&consumer.username, &consumer.secret)), if writes { 403 } else { 200 });
        let a: &Account = &admin;
        check("admin", Some((&a.username, &a.secret)), 200);
        // The owner goes last, so that its deletions do not change what the others saw.
        check("owner", Some((&owner.username, &owner.secret)), 200);
        if method == "DELETE" || method == "POST" {
            server.post_json(&format!("/api/app/projects/{p}/schemas/event/Purchase"), &owner, &json!({}));
        }
    }
    // A project that does not exist is indistinguishable from one the account cannot see.
    let r = server.get("/api/app/projects/999/schemas", &owner);
    assert_eq!(r.status, 403);
    // A malformed header is a 401, not a 400 or a 500.
    for header in ["Basic", "Basic !!!", "Bearer abc", "Basic dXNlcg=="] {
        let r = server.send("GET", &format!("/api/app/projects/{p}/schemas"), None, &[("Authorization", header)], None);
        assert_eq!(r.status, 401, "{header}");
    }
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
    assert!(!ok && err.contains("taken"), "{err}");
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
