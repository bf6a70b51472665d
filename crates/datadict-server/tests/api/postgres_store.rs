//! What is particular to running on PostgreSQL: the versioned schema applied at start (once, and
//! refused when newer), `--database` on the command line, and the `admin` commands against it.
//! The HTTP behaviour itself is tested on both stores by the other files (`on_both_stores!`).

use crate::common::postgres::fresh_database;
use crate::common::{Account, Server};
use datadict_server::{Config, Store};
use serde_json::json;

fn cli(database: &str, args: &[&str]) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_datadict-server"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--database", database])
        .args(args)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn schema_version(url: &str) -> i64 {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client.query_one("SELECT version FROM schema_version", &[]).unwrap().get(0)
}

#[test]
fn the_schema_is_applied_once_and_a_newer_one_is_refused() {
    let url = fresh_database();
    let store = Store::open_postgres(&url).unwrap();
    let version = schema_version(&url);
    assert!(version >= 1);
    let project = datadict_server::admin::create_project(&store, "p").unwrap();
    drop(store);
    // Opening again applies nothing and keeps the data.
    let store = Store::open_postgres(&url).unwrap();
    assert_eq!(schema_version(&url), version);
    assert_eq!(store.call_sync(|conn| datadict_server::store::project_count(conn)).unwrap(), 1);
    assert!(store.call_sync(|conn| datadict_server::store::project_exists(conn, project.id)).unwrap());
    drop(store);

    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client.execute("UPDATE schema_version SET version = version + 1", &[]).unwrap();
    let err = format!("{:#}", Store::open_postgres(&url).err().expect("a newer schema is refused"));
    assert!(err.contains("written by a newer datadict") && err.contains(&format!("schema version {}", version + 1)), "{err}");
    // The refusal changed nothing.
    assert_eq!(schema_version(&url), version + 1);
}

#[test]
fn a_database_that_cannot_be_used_is_refused_at_start_with_what_to_do() {
    let (ok, _, err) = cli("mysql://u@h/d", &["admin", "create-project", "--name", "p"]);
    assert!(!ok && err.contains("--database takes a PostgreSQL URL") && err.contains("`mysql`"), "{err}");
    // A server that is not there: no port answers on 1 of 127.0.0.1. The password is not shown.
    let (ok, _, err) = cli("postgres://u:hunter2@127.0.0.1:1/d", &["admin", "create-project", "--name", "p"]);
    assert!(!ok && err.contains("cannot connect to the PostgreSQL database") && !err.contains("hunter2"), "{err}");
}

/// `admin` works against PostgreSQL, and a server on the same database sees what it wrote.
#[test]
fn the_admin_command_line_works_on_postgresql() {
    let url = fresh_database();
    let field = |text: &str, label: &str| -> String {
        let line = text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no `{label}` in {text}"));
        line[label.len()..].split_whitespace().next().unwrap().to_owned()
    };
    let (ok, out, err) = cli(&url, &["admin", "create-project", "--name", "Shop"]);
    assert!(ok, "{out} {err}");
    let project = field(&out, "project id:");
    let (ok, out, _) = cli(&url, &["admin", "create-account", "--username", "ci"]);
    assert!(ok);
    let secret = field(&out, "secret:");
    let (ok, _, err) = cli(&url, &["admin", "create-account", "--username", "ci"]);
    assert!(!ok && err.contains("taken"), "{err}");
    let (ok, _, err) = cli(&url, &["admin", "grant", "--username", "ci", "--project", "77", "--role", "owner"]);
    assert!(!ok && err.contains("no project with id 77"), "{err}");
    let (ok, _, _) = cli(&url, &["admin", "grant", "--username", "ci", "--project", &project, "--role", "admin"]);
    assert!(ok);

    let server = Server::serve(Store::open_postgres(&url).unwrap(), tempfile::tempdir().unwrap(), Config::default());
    let ci = Account { username: "ci".into(), secret };
    let schemas = format!("/api/app/projects/{project}/schemas");
    assert_eq!(server.post_json(&schemas, &ci, &json!({"entries": []})).status, 200);
    let (ok, out, _) = cli(&url, &["admin", "revoke", "--username", "ci", "--project", &project]);
    assert!(ok && out.contains("role revoked"), "{out}");
    assert_eq!(server.get(&schemas, &ci).status, 403);
}
