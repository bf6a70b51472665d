//! Shared test harness: a real server on 127.0.0.1 (port 0) over a real SQLite file in a
//! temporary folder or a real PostgreSQL database (`postgres.rs`), and a blocking HTTP client.
//! Tests that take a [`Backend`] run once per store through [`on_both_stores`].
#![allow(dead_code)]

pub mod amplitude;
pub mod postgres;
pub mod process;

use base64::Engine;
use datadict_server::store::Role;
use datadict_server::{admin, app, AppState, Config, Store};
use serde_json::Value;
use std::sync::Arc;

pub use datadict_server::JSON_BODY_LIMIT;

/// A JSON object of exactly `bytes` bytes: `{"pad":"xxx..."}`, so that a size test is exact.
pub fn padded_object(bytes: usize) -> Vec<u8> {
    let empty = br#"{"pad":""}"#.len();
    let mut out = Vec::with_capacity(bytes);
    out.extend_from_slice(br#"{"pad":""#);
    out.resize(bytes - 2, b'x');
    out.extend_from_slice(br#""}"#);
    assert!(bytes >= empty && out.len() == bytes);
    out
}

/// A running server. Dropping it shuts the server down and removes its folder.
pub struct Server {
    pub base: String,
    pub store: Store,
    pub dir: tempfile::TempDir,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    agent: ureq::Agent,
}

/// A service account with its secret.
#[derive(Debug, Clone)]
pub struct Account {
    pub username: String,
    pub secret: String,
}

/// An answer: status, headers and body (its bytes, and as text; JSON with [`Reply::json`]).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: ureq::http::HeaderMap,
    /// The body as text (lossy for a body that is not UTF-8, such as a GIF).
    pub text: String,
    pub bytes: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The store a test server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file in the server's temporary folder.
    Sqlite,
    /// A new database in the PostgreSQL cluster the test binary shares.
    Postgres,
}

/// Runs each named test function, `fn name(backend: Backend)`, as one test per store:
/// `<module>::sqlite::name` and `<module>::postgres::name`.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[test]
            fn $name() {
                super::$name($crate::common::Backend::Sqlite)
            })*
        }
        mod postgres {
            $(#[test]
            fn $name() {
                super::$name($crate::common::Backend::Postgres)
            })*
        }
    };
}
pub(crate) use on_both_stores;

impl Server {
    pub fn start() -> Self {
        Self::start_with(Config::default())
    }

    /// A server with the default configuration on `backend`.
    pub fn start_on(backend: Backend) -> Self {
        Self::start_with_on(backend, Config::default())
    }

    /// A server with `config` on `backend`.
    pub fn start_with_on(backend: Backend, config: Config) -> Self {
        match backend {
            Backend::Sqlite => Self::start_with(config),
            Backend::Postgres => {
                let store = Store::open_postgres(&postgres::fresh_database()).unwrap();
                Self::serve(store, tempfile::tempdir().unwrap(), config)
            }
        }
    }

    pub fn start_with(config: Config) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), config)
    }

    /// Serves the database `datadict.sqlite3` of `dir` (which may already hold data).
    pub fn start_in(dir: tempfile::TempDir, config: Config) -> Self {
        let store = Store::open(&dir.path().join("datadict.sqlite3")).unwrap();
        Self::serve(store, dir, config)
    }

    /// Serves `store`; `dir` is the server's folder.
    pub fn serve(store: Store, dir: tempfile::TempDir, config: Config) -> Self {
        Self::serve_with_header_timeout(store, dir, config, None)
    }

    /// A server on SQLite whose time limit on reading a request's head is `timeout`.
    pub fn start_with_header_timeout(timeout: std::time::Duration) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("datadict.sqlite3")).unwrap();
        Self::serve_with_header_timeout(store, dir, Config::default(), Some(timeout))
    }

    fn serve_with_header_timeout(store: Store, dir: tempfile::TempDir, config: Config, timeout: Option<std::time::Duration>) -> Self {
        let state = AppState::new(store.clone(), Arc::new(config));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                // The app is built (its start-up steps, such as failing the jobs whose lease
                // expired, done) before the test hears of the server: a test that writes jobs
                // right after the start must not race them.
                let router = app(state);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let stop = async move {
                    let _ = shutdown_rx.await;
                };
                let stop = datadict_server::serving::Stop { header_read_timeout: timeout, ..datadict_server::serving::stop_on(stop) };
                datadict_server::tls::serve_with(listener, router, None, stop).await.unwrap();
            });
        });
        let addr = addr_rx.recv().unwrap();
        let agent: ureq::Agent =
            ureq::Agent::config_builder().http_status_as_error(false).build().into();
        Self {
            base: format!("http://{addr}"),
            store,
            dir,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
            agent,
        }
    }

    pub fn project(&self, name: &str) -> admin::NewProject {
        admin::create_project(&self.store, name).unwrap()
    }

    /// A new service account with `role` in `project_id` (no role when `None`).
    pub fn account(&self, username: &str, project_id: i64, role: Option<Role>) -> Account {
        let s = admin::create_service_account(&self.store, username).unwrap();
        if let Some(role) = role {
            admin::grant(&self.store, username, project_id, role).unwrap();
        }
        Account { username: s.username, secret: s.secret }
    }

    /// Sends a request. `auth` is `(user, password)`.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        auth: Option<(&str, &str)>,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Reply {
        self.client().send(method, path, auth, headers, body).unwrap_or_else(|e| panic!("{method} {path} failed: {e}"))
    }

    pub fn client(&self) -> Client {
        Client { base: self.base.clone(), agent: self.agent.clone() }
    }

    pub fn get(&self, path: &str, auth: &Account) -> Reply {
        self.send("GET", path, Some((&auth.username, &auth.secret)), &[], None)
    }

    pub fn delete(&self, path: &str, auth: &Account) -> Reply {
        self.send("DELETE", path, Some((&auth.username, &auth.secret)), &[], None)
    }

    pub fn post_json(&self, path: &str, auth: &Account, body: &Value) -> Reply {
        self.send(
            "POST",
            path,
            Some((&auth.username, &auth.secret)),
            &[("Content-Type", "application/json")],
            Some(serde_json::to_vec(body).unwrap()),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A blocking HTTP client for a base URL; 4xx and 5xx are answers, not errors.
#[derive(Clone)]
pub struct Client {
    pub base: String,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(base: &str) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        Self { base: base.trim_end_matches('/').to_owned(), agent }
    }

    /// Sends a request; `Err` only when no answer came (connection refused or dropped).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        auth: Option<(&str, &str)>,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Result<Reply, ureq::Error> {
        let mut builder = ureq::http::Request::builder().method(method).uri(format!("{}{path}", self.base));
        if let Some((user, pass)) = auth {
            builder = builder.header("Authorization", basic(user, pass));
        }
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let mut response = match body {
            Some(bytes) => self.agent.run(builder.body(bytes).unwrap()),
            None => self.agent.run(builder.body(()).unwrap()),
        }?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.body_mut().with_config().limit(1 << 30).read_to_vec()?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(Reply { status, headers, text, bytes })
    }
}

pub fn basic(user: &str, pass: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}")))
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    datadict_core::gzip(bytes, 1)
}

/// A form body (`application/x-www-form-urlencoded`) of `pairs`, each value percent-encoded.
pub fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    pairs.iter().map(|(k, v)| format!("{k}={}", urlencode(v))).collect::<Vec<_>>().join("&").into_bytes()
}

/// Standard base64 with padding, as most tracking libraries send `data`.
pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The current time in milliseconds since epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// Percent-encodes `s` for a URL path segment or query value (every byte but ASCII letters,
/// digits and `-_.`).
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}
