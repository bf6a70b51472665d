//! What is particular to running on PostgreSQL: the versioned schema applied at start (once,
//! refused when newer, lookup tables and group profiles added to an older database), `--database`
//! on the command line, and the `admin` commands against it.
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

/// A database at schema version 1 (before lookup tables) gains them, and the later migrations, at
/// start and keeps its data; a replace that fails (a key twice) names the key and changes nothing, as on SQLite.
#[test]
fn a_version_1_database_gains_lookup_tables() {
    use datadict_server::store::lookup::{self, Created, NewRow};
    let url = fresh_database();
    let store = Store::open_postgres(&url).unwrap();
    let project = datadict_server::admin::create_project(&store, "p").unwrap();
    drop(store);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    // Back to version 1: without what migrations 2 (lookup tables), 3 (group profiles), 4
    // (rate-limit buckets, job leases), 5 (data quality), 6 (dictionary versions) and 7 (the
    // quality samples apart) add.
    client
        .batch_execute(
            "DROP TABLE lookup_rows; DROP TABLE lookup_tables; DROP TABLE group_profiles; DROP TABLE rate_buckets;
             DROP TABLE quality_violations_samples; DROP TABLE quality_rejected_samples; DROP TABLE quality_event_counts_samples;
             DROP TABLE quality_violations; DROP TABLE quality_rejected; DROP TABLE quality_event_counts;
             DROP TABLE dictionary_versions;
             ALTER TABLE warehouse_runs DROP COLUMN owner, DROP COLUMN lease_until;
             ALTER TABLE migration_jobs DROP COLUMN owner, DROP COLUMN lease_until, DROP COLUMN done;
             UPDATE schema_version SET version = 1",
        )
        .unwrap();

    let store = Store::open_postgres(&url).unwrap();
    assert_eq!(schema_version(&url), 7);
    let id = "0b6f3c2e-8d1a-4f5e-9c7b-2a4d6e8f0a1b";
    let row = |key: &str| NewRow { key: key.into(), record: json!([key]).to_string() };
    let columns = vec!["id".to_owned()];
    store
        .call_sync(|conn| {
            assert!(datadict_server::store::project_exists(conn, project.id)?);
            assert!(matches!(lookup::create_table(conn, project.id, id, "t", 1)?, Created::Created(_)));
            assert_eq!(lookup::create_table(conn, project.id, "other", "t", 1)?, Created::NameTaken(id.into()));
            lookup::replace_rows(conn, project.id, id, &columns, &[row("b"), row("a")], 2)?;
            let err = lookup::replace_rows(conn, project.id, id, &columns, &[row("x"), row("y"), row("x")], 3).unwrap_err();
            assert!(format!("{err:#}").contains("key `x`"), "{err:#}");
            let (table, rows) = lookup::read_page(conn, project.id, id, None, 10)?;
            assert_eq!((table.unwrap().updated_at, rows.iter().map(|r| r.key.as_str()).collect::<Vec<_>>()), (2, vec!["a", "b"]));
            assert!(lookup::delete_table(conn, project.id, id)?);
            Ok(())
        })
        .unwrap();
    let left: i64 = client.query_one("SELECT count(*) FROM lookup_rows", &[]).unwrap().get(0);
    assert_eq!(left, 0);
}

/// A database at schema version 2 (before group profiles) gains their table at start and keeps
/// its data; group keys and ids page in byte order, as on SQLite.
#[test]
fn a_version_2_database_gains_group_profiles() {
    use datadict_server::store::{get_group, list_groups, put_group};
    let url = fresh_database();
    let store = Store::open_postgres(&url).unwrap();
    let project = datadict_server::admin::create_project(&store, "p").unwrap();
    drop(store);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    // Back to version 2: without what migrations 3 (group profiles) and 4 (rate-limit buckets, job
    // leases) and 5 (data quality) add.
    client
        .batch_execute(
            "DROP TABLE group_profiles; DROP TABLE rate_buckets;
             DROP TABLE quality_violations_samples; DROP TABLE quality_rejected_samples; DROP TABLE quality_event_counts_samples;
             DROP TABLE quality_violations; DROP TABLE quality_rejected; DROP TABLE quality_event_counts;
             DROP TABLE dictionary_versions;
             ALTER TABLE warehouse_runs DROP COLUMN owner, DROP COLUMN lease_until;
             ALTER TABLE migration_jobs DROP COLUMN owner, DROP COLUMN lease_until, DROP COLUMN done;
             UPDATE schema_version SET version = 2",
        )
        .unwrap();

    let store = Store::open_postgres(&url).unwrap();
    assert_eq!(schema_version(&url), 7);
    let props = |n: i64| json!({"n": n}).as_object().cloned().unwrap();
    store
        .call_sync(|conn| {
            assert!(datadict_server::store::project_exists(conn, project.id)?);
            for (key, id, n) in [("Company", "é", 1), ("Company", "Z", 2), ("Company", "a", 3), ("Team", "a", 4)] {
                put_group(conn, project.id, key, id, &props(n))?;
            }
            put_group(conn, project.id, "Company", "a", &props(5))?;
            assert_eq!(get_group(conn, project.id, "Company", "a")?, Some(props(5)));
            let page = list_groups(conn, project.id, None, Some(("Company", "Z")), 2)?;
            let names: Vec<_> = page.iter().map(|g| format!("{}/{}", g.key, g.id)).collect();
            assert_eq!(names, ["Company/a", "Company/é"]);
            Ok(())
        })
        .unwrap();
}

/// A database at schema version 6 (each quality row with its samples) gains the tables of
/// samples at start: the samples move there, the column goes, and every row reads back as it was.
#[test]
fn a_version_6_database_keeps_its_quality_samples_apart() {
    use datadict_server::store::quality::{list_violations, Table, ViolationFilter};
    let url = fresh_database();
    let store = Store::open_postgres(&url).unwrap();
    let project = datadict_server::admin::create_project(&store, "p").unwrap();
    drop(store);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let p = project.id;
    client
        .batch_execute(&format!(
            "DROP TABLE quality_violations_samples; DROP TABLE quality_rejected_samples; DROP TABLE quality_event_counts_samples;
             ALTER TABLE quality_violations ADD COLUMN samples text NOT NULL DEFAULT '[]';
             ALTER TABLE quality_rejected ADD COLUMN samples text NOT NULL DEFAULT '[]';
             ALTER TABLE quality_event_counts ADD COLUMN samples text NOT NULL DEFAULT '[]';
             INSERT INTO quality_violations VALUES
                 ({p}, '2026-01-01', 'event', 'E', 'x', 'unknown_property', 'm', 7, 1, 2, '[\"string\"]', '[\"s1\",\"s2\"]'),
                 ({p}, '2026-01-01', 'event', 'F', '', 'no_schema', 'm', 1, 1, 1, '[]', '[]');
             INSERT INTO quality_rejected VALUES ({p}, '2026-01-01', 'track', 'E', '', 'bad', 'm', 1, 1, 1, '[]', '[{{\"record\":\"r\"}}]');
             UPDATE schema_version SET version = 6"
        ))
        .unwrap();
    let store = Store::open_postgres(&url).unwrap();
    assert_eq!(schema_version(&url), 7);
    let (violations, rejected) = store
        .call_sync(|conn| {
            let all = ViolationFilter::default();
            Ok((list_violations(conn, Table::Violations, p, &all, 10)?, list_violations(conn, Table::Rejected, p, &all, 10)?))
        })
        .unwrap();
    let samples: Vec<(String, serde_json::Value, i64)> = violations.iter().map(|v| (v.row.entity.clone(), json!(v.row.samples), v.row.count)).collect();
    assert_eq!(samples, [("E".to_owned(), json!(["s1", "s2"]), 7), ("F".to_owned(), json!([]), 1)]);
    assert_eq!(rejected[0].row.samples, [json!({"record": "r"})]);
    let moved: i64 = client.query_one("SELECT count(*) FROM quality_violations_samples", &[]).unwrap().get(0);
    assert_eq!(moved, 1, "an empty list of samples is not copied");
    let column: i64 = client
        .query_one("SELECT count(*) FROM information_schema.columns WHERE table_name = 'quality_violations' AND column_name = 'samples'", &[])
        .unwrap()
        .get(0);
    assert_eq!(column, 0);
}

#[test]
fn a_database_that_cannot_be_used_is_refused_at_start_with_what_to_do() {
    let (ok, _, err) = cli("mysql://u@h/d", &["admin", "create-project", "--name", "p"]);
    assert!(!ok && err.contains("--database takes a PostgreSQL URL") && err.contains("`mysql://`") && !err.contains("u@h"), "{err}");
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
    assert!(!ok && err.contains("service account `ci` already exists"), "{err}");
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
