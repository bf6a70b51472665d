//! Warehouse sources over HTTP: what a source may name (`password_env`, paths), how a source that
//! changed or cannot be read is reported, and how its values and times are read.

use crate::common::{on_both_stores, Backend, Server};
use crate::warehouse::imports;
use datadict_server::store::Role;
use serde_json::json;

/// A PostgreSQL source's `password_env` may only name a variable starting with
/// `DATADICT_WAREHOUSE_`: any other name (`PATH`, which exists, and one that does not) gets the
/// same 400 saying so, before the variable is looked up or any host is contacted.
fn password_env_names_only_warehouse_variables(backend: Backend) {
    let server = Server::start_on(backend);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    // A listener standing for the host a password would be sent to: it must hear nothing. A
    // connection made is counted and dropped at once, so that a server without the rule fails fast.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = heard.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    let heard = || heard.load(std::sync::atomic::Ordering::SeqCst);
    let mapping = json!({"event_name": "E", "time_column_name": "ts", "user_column_name": "uid", "key_column_names": ["id"]});
    let mut answers = Vec::new();
    for var in ["PATH", "NO_SUCH_VARIABLE_ANYWHERE", "DATADICT_WAREHOUSE_FILE_ROOT", "DATADICT_WAREHOUSE_"] {
        let source = json!({"type": "postgres", "host": "127.0.0.1", "port": port, "user": "x", "dbname": "y", "table": "t", "password_env": var});
        let r = server.post_json(&imports(p), &owner, &json!({"name": "n", "kind": "event_sync", "source": source, "mapping": mapping}));
        assert_eq!(r.status, 400, "{var}: {}", r.text);
        let msg = r.json()["error"].as_str().unwrap().to_owned();
        assert!(msg.contains("starts with `DATADICT_WAREHOUSE_`"), "{var}: {msg}");
        assert!(!msg.contains("no environment variable"), "{var}: {msg}");
        answers.push(msg);
        assert_eq!(heard(), 0, "{var}: the server connected to the source host");
    }
    assert_eq!(answers[0], answers[1], "the answer must not tell whether a variable exists");
    // An allowed name that is not set is named as missing.
    let source = json!({"type": "postgres", "host": "127.0.0.1", "port": port, "user": "x", "dbname": "y", "table": "t", "password_env": "DATADICT_WAREHOUSE_NOT_SET_PW"});
    let r = server.post_json(&imports(p), &owner, &json!({"name": "n", "kind": "event_sync", "source": source, "mapping": mapping}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.text.contains("no environment variable `DATADICT_WAREHOUSE_NOT_SET_PW`"), "{}", r.text);
    assert_eq!(heard(), 0);
}

on_both_stores!(password_env_names_only_warehouse_variables);
