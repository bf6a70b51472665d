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
    let before = ["--no-demo", "--namespace", "org.before", "--max-request-bytes", "5000", "--schema-rate-limit", "7", "serve"];
    let server = data.spawn_with("datadict_server=info", &before, &[], &[], Stdio::inherit());
    let limits = Client::new(&server.base).send("GET", "/api/app/limits", None, &[], None).unwrap().json();
    assert_eq!(limits["namespace"], "org.before", "{limits}");
    assert_eq!(limits["results"]["maxRequestBytes"], 5000, "{limits}");
    assert_eq!(limits["rate_limits"]["schema_requests_per_minute"], 7, "{limits}");
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
