//! Starting the real binary: its command line (options before or after `serve`, values refused
//! at start with what is allowed), what a start checks in the data folder, and the admin command.

use crate::common::process::{run_in, Data};
use crate::common::{Backend, Client};
use std::process::Stdio;

/// Every serve option takes effect when written before the word `serve` too (it was once parsed
/// and dropped there: a demo owner account despite `--no-demo`, the default limits), and `admin`
/// refuses a serve option instead of ignoring it.
#[test]
fn serve_options_work_before_the_word_serve_and_admin_refuses_them() {
    let data = Data::new(Backend::Sqlite);
    let before = ["--no-demo", "--namespace", "org.before", "--max-request-bytes", "5000", "--schema-rate-limit", "7", "--lookup-table-max-bytes", "60", "--quality-max-keys", "3", "--no-dictionary-check", "serve"];
    let server = data.spawn_with("datadict_server=info", &before, &[], &[], Stdio::inherit());
    let limits = Client::new(&server.base).send("GET", "/api/app/limits", None, &[], None).unwrap().json();
    assert_eq!(limits["namespace"], "org.before", "{limits}");
    assert_eq!(limits["results"]["maxRequestBytes"], 5000, "{limits}");
    assert_eq!(limits["rate_limits"]["schema_requests_per_minute"], 7, "{limits}");
    // Every limit a flag sets is reported (the lookup-table size and the quality settings were not).
    assert_eq!(limits["lookup_table_max_bytes"], 60, "{limits}");
    assert_eq!(limits["quality"], serde_json::json!({"dictionary_check": false, "max_keys_per_day": 3}), "{limits}");
    assert!(!data.dir.path().join(datadict_server::demo::CREDENTIALS_FILE).exists(), "a demo was created despite --no-demo");
    drop(server);

    let dir = data.dir.path().to_str().unwrap();
    for args in [
        vec!["--data-dir", dir, "admin", "--listen", "127.0.0.1:1", "create-project", "--name", "x"],
        vec!["--data-dir", dir, "--no-demo", "admin", "create-project", "--name", "x"],
        vec!["--data-dir", dir, "admin", "create-project", "--name", "x", "--namespace", "y"],
    ] {
        let ended = run_in(data.dir.path(), &args, &[]);
        assert_eq!(ended.code, Some(2), "{args:?}: {}", ended.stdout);
        assert!(ended.stderr.contains("is an option of `serve`, which `admin` does not take"), "{}", ended.stderr);
    }
    let help = run_in(data.dir.path(), &["admin", "create-project", "--help"], &[]);
    assert!(!help.stdout.contains("--listen"), "admin's help lists the serve options: {}", help.stdout);
}

/// A database remembers the namespace of its first start: a restart with another `--namespace`
/// (under which every stored dropped and hidden flag would be ignored, and a dropped property
/// stored) is refused with a message naming the stored one; an empty namespace is refused.
fn a_restart_with_another_namespace_is_refused(backend: Backend) {
    let data = Data::new(backend);
    drop(data.spawn("datadict_server=info", &[], Stdio::inherit()));
    let refused = data.try_spawn("datadict_server=info", &[], &["--namespace", "org.acme"], &[], Stdio::piped()).err().expect("a start with another namespace was not refused");
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(refused.stderr.contains("kept under the namespace `com.vendor`"), "{}", refused.stderr);
    assert!(refused.stderr.contains("start it with --namespace com.vendor"), "{}", refused.stderr);
    let env = [("DATADICT_NAMESPACE", "org.acme")];
    let refused = data.try_spawn("datadict_server=info", &[], &[], &env, Stdio::piped()).err().expect("DATADICT_NAMESPACE was not checked");
    assert!(refused.stderr.contains("`org.acme`"), "{}", refused.stderr);
    drop(data.spawn_with("datadict_server=info", &[], &["--namespace", "com.vendor"], &[], Stdio::inherit()));
    for bad in ["", "a b", "a\tb"] {
        let refused = data.try_spawn("datadict_server=info", &[], &["--namespace", bad], &[], Stdio::piped()).err().expect("a bad namespace was taken");
        assert_eq!(refused.code, Some(2), "{bad:?}: {}", refused.stderr);
        assert!(refused.stderr.contains("namespace"), "{}", refused.stderr);
    }
}

crate::common::on_both_stores!(a_restart_with_another_namespace_is_refused);

/// A database from before the check adopts the namespace of its next start, says so, and keeps
/// it.
#[test]
fn a_database_without_a_stored_namespace_adopts_the_next_one() {
    let data = Data::new(Backend::Sqlite);
    drop(data.spawn("datadict_server=info", &[], Stdio::inherit()));
    let file = data.dir.path().join("datadict.sqlite3");
    rusqlite::Connection::open(&file).unwrap().execute("DROP TABLE server_settings", []).unwrap();
    let started = data.spawn_with("datadict_server=info", &[], &["--namespace", "org.acme"], &[], Stdio::inherit());
    assert!(started.printed.contains("now remembers its namespace `org.acme`"), "{}", started.printed);
    drop(started);
    let refused = data.try_spawn("datadict_server=info", &[], &[], &[], Stdio::piped()).err().expect("the adopted namespace was not kept");
    assert!(refused.stderr.contains("kept under the namespace `org.acme`"), "{}", refused.stderr);
}

/// A `--database` value whose start fails is never echoed with its password, in any of the forms
/// PostgreSQL takes one (a closed port makes the connection fail).
#[test]
fn no_start_up_error_shows_the_database_password() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let d = dir.path().to_str().unwrap();
    for url in [
        format!("host=127.0.0.1 port={port} user=dd password=SECRETPW dbname=datadict"),
        format!("postgres://dd@127.0.0.1:{port}/x?password=SECRETPW"),
        format!("postgres://dd:SECRETPW@127.0.0.1:{port}/x"),
        format!("postgres:dd:SECRETPW@127.0.0.1:{port}/x"),
        format!("mysql://dd:SECRETPW@127.0.0.1:{port}/x"),
    ] {
        for args in [vec!["--data-dir", d, "--database", &url, "--listen", "127.0.0.1:0"], vec!["--data-dir", d, "--database", &url, "admin", "revoke", "--username", "a", "--project", "1"]] {
            let ended = run_in(dir.path(), &args, &[]);
            assert_eq!(ended.code, Some(1), "{url}: {}{}", ended.stdout, ended.stderr);
            assert!(!ended.stderr.contains("SECRETPW") && !ended.stdout.contains("SECRETPW"), "{url}: {}{}", ended.stdout, ended.stderr);
        }
    }
}

/// A rate or size flag of 0 (a server that refuses nearly everything) or beyond what the limits
/// route can report exactly is refused at start with the allowed range and what leaving it out
/// means; `--schema-deletion-limit 0` keeps its documented meaning, no cap.
#[test]
fn impossible_limits_are_refused_at_start_with_the_allowed_range() {
    let data = Data::new(Backend::Sqlite);
    for (flag, value, unset) in [
        ("--schema-rate-limit", "0", "leave it out for no limit"),
        ("--schema-update-rate-limit", "0", "leave it out for no limit"),
        ("--ingest-rate-limit", "0", "leave it out for no limit"),
        ("--ingest-rate-limit", "18446744073709551615", "leave it out for no limit"),
        ("--max-request-bytes", "0", "leave it out for 10 MiB"),
        ("--lookup-table-max-bytes", "0", "leave it out for 10 MiB"),
        ("--quality-max-keys", "0", "leave it out for 1000"),
        ("--schema-deletion-limit=-1", "", "0 removes the cap"),
    ] {
        let args: Vec<&str> = [flag, value].into_iter().filter(|a| !a.is_empty()).collect();
        let flag = flag.split('=').next().unwrap();
        let refused = data.try_spawn("datadict_server=info", &[], &args, &[], Stdio::piped()).err().unwrap_or_else(|| panic!("{flag} {value} was taken"));
        assert_eq!(refused.code, Some(2), "{flag} {value}: {}", refused.stderr);
        assert!(refused.stderr.contains(flag) && refused.stderr.contains("give a whole number from") && refused.stderr.contains(unset), "{}", refused.stderr);
    }
    let server = data.spawn_with("datadict_server=info", &[], &["--schema-deletion-limit", "0"], &[], Stdio::inherit());
    let limits = Client::new(&server.base).send("GET", "/api/app/limits", None, &[], None).unwrap().json();
    assert_eq!(limits["rate_limits"]["schema_deletions_per_request"], serde_json::Value::Null, "{limits}");
}

/// After `admin rotate-secret` of the demo owner, a start prints the new secret (the rotation
/// wrote it into `demo-credentials.json`), never the revoked one: when the kept secret no longer
/// matches the account (rotated where the file could not be updated), the start says it was
/// rotated and drops it from the file.
#[test]
fn a_start_never_prints_a_rotated_demo_secret() {
    let data = Data::new(Backend::Sqlite);
    drop(data.spawn("datadict_server=info", &[], Stdio::inherit()));
    let old = crate::common::process::credentials(data.dir.path());
    let dir = data.dir.path().to_str().unwrap();
    let rotated = run_in(data.dir.path(), &["--data-dir", dir, "admin", "rotate-secret", "--username", "demo-owner"], &[]);
    assert_eq!(rotated.code, Some(0), "{}", rotated.stderr);
    assert!(rotated.stdout.contains("also written to"), "{}", rotated.stdout);
    let new = crate::common::process::credentials(data.dir.path());
    assert_ne!(new.secret, old.secret);
    assert!(rotated.stdout.contains(&new.secret));
    let mut server = data.spawn("datadict_server=info", &[], Stdio::inherit());
    let line = server.line_with("service account secret:");
    assert!(line.contains(&new.secret), "{line}");
    let r = Client::new(&server.base).send("GET", &format!("/api/app/projects/{}/schemas", new.project_id), Some((&new.username, &new.secret)), &[], None).unwrap();
    assert_eq!(r.status, 200);
    drop(server);

    // The file holds a secret the account no longer has.
    let file = data.dir.path().join(datadict_server::demo::CREDENTIALS_FILE);
    std::fs::write(&file, serde_json::to_string(&old).unwrap()).unwrap();
    let mut server = data.spawn("datadict_server=info", &[], Stdio::inherit());
    let line = server.line_with("service account secret:");
    assert!(line.contains("rotated") && !line.contains(&old.secret), "{line}");
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(!kept.contains(&old.secret) && kept.contains(&old.project_token), "{kept}");
}

/// An admin command never creates a database: a folder without one (a mistyped `--data-dir`, or
/// the default `data` in another working folder) is refused with how to create one, and with
/// `--database` no `./data` folder is left behind.
#[test]
fn admin_refuses_a_folder_without_a_database_and_creates_no_folder() {
    let cwd = tempfile::tempdir().unwrap();
    let typo = cwd.path().join("typo");
    let refused = run_in(cwd.path(), &["--data-dir", typo.to_str().unwrap(), "admin", "create-project", "--name", "x"], &[]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(refused.stderr.contains("there is no datadict database in") && refused.stderr.contains("is --data-dir right?"), "{}", refused.stderr);
    assert!(refused.stderr.contains("run `datadict-server --data-dir"), "{}", refused.stderr);
    assert!(!typo.exists(), "the admin command created {}", typo.display());
    let refused = run_in(cwd.path(), &["admin", "create-account", "--username", "a"], &[]);
    assert_eq!(refused.code, Some(1));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://u@127.0.0.1:{port}/x");
    let failed = run_in(cwd.path(), &["--database", &url, "admin", "revoke", "--username", "a", "--project", "1"], &[]);
    assert_eq!(failed.code, Some(1));
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "the admin commands left files in the working folder");
}

/// A data folder the server creates, and its database files, are readable by the owner only.
#[cfg(unix)]
#[test]
fn a_new_data_folder_and_its_database_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let parent = tempfile::tempdir().unwrap();
    let inner = parent.path().join("new").join("data");
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_datadict-server"))
        .args(["--listen", "127.0.0.1:0", "--data-dir", inner.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stdout.take().unwrap()));
    let listening = lines.find(|l| l.as_ref().unwrap().contains("Press Ctrl-C to stop"));
    assert!(listening.is_some(), "the server did not start");
    assert_eq!((mode(&inner), mode(inner.parent().unwrap())), (0o700, 0o700));
    for file in ["datadict.sqlite3", "datadict.sqlite3-wal", "datadict.sqlite3-shm", "server.lock", "demo-credentials.json"] {
        assert_eq!(mode(&inner.join(file)), 0o600, "{file}");
    }
    assert_eq!(mode(&inner.join("warehouse-files")), 0o700);
    server.kill().unwrap();
    server.wait().unwrap();
}

/// A SQLite file of another application where datadict's database would be is refused, not
/// taken over, and left as it was.
#[test]
fn another_applications_sqlite_file_is_refused() {
    let data = Data::new(Backend::Sqlite);
    let file = data.dir.path().join("datadict.sqlite3");
    rusqlite::Connection::open(&file).unwrap().execute_batch("CREATE TABLE foo (x); INSERT INTO foo VALUES (1);").unwrap();
    let before = std::fs::read(&file).unwrap();
    let refused = data.try_spawn("datadict_server=info", &[], &[], &[], Stdio::piped()).err().expect("another application's database was taken over");
    assert_eq!(refused.code, Some(1));
    assert!(refused.stderr.contains("it is not a datadict database: it holds tables of another application (foo)"), "{}", refused.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), before, "the file was changed");
}

/// A `--cors-origin` entry that is not an origin (no scheme, a path, `null`) is refused with the
/// right form, since it would never match a browser's `Origin`; `--listen` takes a host name.
#[test]
fn cors_origins_must_be_origins_and_listen_takes_a_host_name() {
    let data = Data::new(Backend::Sqlite);
    for (bad, says) in [("app.example.com", "such as https://app.example.com"), ("https://a.example/x", "without a path"), ("null", "cannot be allowed by name")] {
        let refused = data.try_spawn("datadict_server=info", &[], &["--cors-origin", bad], &[], Stdio::piped()).err().unwrap_or_else(|| panic!("{bad} was taken"));
        assert_eq!(refused.code, Some(2), "{bad}: {}", refused.stderr);
        assert!(refused.stderr.contains(says), "{bad}: {}", refused.stderr);
    }
    let server = data.spawn_with("datadict_server=info", &[], &["--cors-origin", "https://app.example.com/"], &[], Stdio::inherit());
    drop(server);

    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_datadict-server"))
        .arg("--data-dir")
        .arg(data.dir.path())
        .args(["--listen", "localhost:0", "--no-demo"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stdout.take().unwrap()));
    let listening = lines.find_map(|l| l.unwrap().strip_prefix("datadict is listening on ").map(str::to_owned));
    server.kill().unwrap();
    server.wait().unwrap();
    let listening = listening.expect("the server did not listen on localhost:0");
    assert!(listening.starts_with("http://127.0.0.1:") || listening.starts_with("http://[::1]:"), "{listening}");
    let refused = run_in(data.dir.path(), &["--data-dir", data.dir.path().to_str().unwrap(), "--listen", "127.0.0.1"], &[]);
    assert_eq!(refused.code, Some(2));
    assert!(refused.stderr.contains("give an address with its port"), "{}", refused.stderr);
}

/// The admin commands: `revoke` of a project that does not exist is an error (as `grant`'s is),
/// a second account of one name says so plainly, and names too long or with control characters
/// are refused.
#[test]
fn admin_refuses_what_grant_refuses_and_names_it_cannot_keep() {
    let data = Data::new(Backend::Sqlite);
    drop(data.spawn("datadict_server=info", &[], Stdio::inherit()));
    let dir = data.dir.path().to_str().unwrap();
    let admin = |args: &[&str]| {
        let mut all = vec!["--data-dir", dir, "admin"];
        all.extend_from_slice(args);
        run_in(data.dir.path(), &all, &[])
    };
    for (args, says) in [
        (vec!["revoke", "--username", "demo-owner", "--project", "99"], "no project with id 99".to_owned()),
        (vec!["create-account", "--username", "demo-owner"], "service account `demo-owner` already exists; for a new secret, run `admin rotate-secret --username demo-owner`".to_owned()),
        (vec!["create-project", "--name", &"p".repeat(201)], "at most 200".to_owned()),
        (vec!["create-project", "--name", "a\tb"], "control character".to_owned()),
        (vec!["create-project", "--name", "a\u{1b}[31m"], "control character".to_owned()),
        (vec!["create-account", "--username", &"u".repeat(65)], "at most 64".to_owned()),
    ] {
        let ended = admin(&args);
        assert_eq!(ended.code, Some(1), "{args:?}: {}", ended.stdout);
        assert!(ended.stderr.contains(&says), "{args:?}: {}", ended.stderr);
        assert!(!ended.stderr.contains("UNIQUE constraint"), "{}", ended.stderr);
    }
    for sub in ["create-project", "create-account", "grant", "revoke", "rotate-secret"] {
        let help = admin(&[sub, "--help"]).stdout;
        for option in help.lines().filter(|l| l.trim_start().starts_with("--") && !l.contains("--data-dir") && !l.contains("--database") && !l.contains("--sqlite-synchronous")) {
            let described = help.lines().skip_while(|l| *l != option).nth(1).is_some_and(|next| !next.trim().is_empty() && !next.trim_start().starts_with("--"));
            assert!(described, "`admin {sub} --help` has no text for {option}:\n{help}");
        }
    }
    assert!(admin(&["grant", "--help"]).stdout.contains("consumer (may read only)"));
}
