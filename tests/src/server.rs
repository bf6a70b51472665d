//! A real datadict server for a test: the same `app()` the binary serves, on a free port of
//! 127.0.0.1, with a SQLite file in a temporary folder and the demo project created; over plain
//! HTTP, or over HTTPS with a self-signed certificate ([`TestServer::start_https`]).

use base64::Engine;
use datadict_server::demo::{ensure_demo, DemoCredentials};
use datadict_server::{app, AppState, Config, Store};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub struct TestServer {
    pub addr: SocketAddr,
    pub demo: DemoCredentials,
    pub store: Store,
    pub data_dir: tempfile::TempDir,
    /// The PEM certificate of an HTTPS server, which its clients must trust.
    pub certificate: Option<PathBuf>,
    agent: ureq::Agent,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server; `web_dir` is the built app to serve at `/`, if any.
    pub fn start(web_dir: Option<PathBuf>) -> Self {
        Self::serve(web_dir, false)
    }

    /// Starts a server that speaks HTTPS only, with a new self-signed certificate for `localhost`
    /// and `127.0.0.1` (in [`TestServer::certificate`]), as `--tls-cert` and `--tls-key` do.
    pub fn start_https() -> Self {
        Self::serve(None, true)
    }

    fn serve(web_dir: Option<PathBuf>, https: bool) -> Self {
        let data_dir = tempfile::tempdir().expect("can create a temporary folder");
        let store = Store::open(&data_dir.path().join("datadict.sqlite3")).expect("can open the database");
        let demo = ensure_demo(&store, data_dir.path(), datadict_core::DEFAULT_NAMESPACE).expect("demo set-up works").expect("a new database gets the demo");
        let state = AppState::new(store.clone(), Arc::new(Config { web_dir, ..Config::default() }));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("can bind 127.0.0.1");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (certificate, tls, agent) = if https {
            let (certificate, tls, agent) = self_signed(data_dir.path());
            (Some(certificate), Some(tls), agent)
        } else {
            (None, None, ureq::Agent::config_builder().http_status_as_error(false).build().into())
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let stop = async {
                    let _ = rx.await;
                };
                datadict_server::tls::serve(listener, app(state), tls, stop).await.unwrap();
            });
        });
        Self { addr, demo, store, data_dir, certificate, agent, shutdown: Some(tx), thread: Some(thread) }
    }

    pub fn url(&self, path: &str) -> String {
        let scheme = if self.certificate.is_some() { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.addr)
    }

    /// An `Authorization: Basic` value.
    pub fn basic(user: &str, secret: &str) -> String {
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{secret}")))
    }

    /// The demo owner's `Authorization` value.
    pub fn demo_auth(&self) -> String {
        Self::basic(&self.demo.username, &self.demo.secret)
    }

    /// Sends a request and returns the status and the body parsed as JSON (never fails on 4xx/5xx).
    pub fn call(&self, method: &str, path: &str, auth: Option<&str>, body: Option<&serde_json::Value>) -> (u16, serde_json::Value) {
        let agent = &self.agent;
        let url = self.url(path);
        let mut req = ureq::http::Request::builder().method(method).uri(&url);
        if let Some(auth) = auth {
            req = req.header("Authorization", auth);
        }
        let response = match body {
            Some(json) => agent.run(req.header("Content-Type", "application/json").body(json.to_string()).unwrap()),
            None => agent.run(req.body(()).unwrap()),
        }
        .unwrap_or_else(|e| panic!("{method} {url} failed: {e}"));
        let status = response.status().as_u16();
        let text = response.into_body().read_to_string().unwrap_or_default();
        let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        (status, json)
    }
}

impl TestServer {
    /// Sends a request with any body and headers (a CSV, a form, a beacon's text) and returns the
    /// status and the body as text (never fails on 4xx/5xx).
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
        let agent = &self.agent;
        let url = self.url(path);
        let req = headers.iter().fold(ureq::http::Request::builder().method(method).uri(&url), |r, (name, value)| r.header(*name, *value));
        let response = agent.run(req.body(body.to_vec()).unwrap()).unwrap_or_else(|e| panic!("{method} {url} failed: {e}"));
        let status = response.status().as_u16();
        (status, response.into_body().read_to_string().unwrap_or_default())
    }
}

/// A new self-signed certificate for `localhost` and `127.0.0.1`, written as `cert.pem` and
/// `key.pem` into `dir`: its path, the server's TLS configuration read back from the files, and a
/// client that trusts it.
fn self_signed(dir: &std::path::Path) -> (PathBuf, Arc<rustls::ServerConfig>, ureq::Agent) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    let tls = datadict_server::tls::server_config(&cert, &key).expect("the generated certificate serves");
    let root = ureq::tls::Certificate::from_der(generated.cert.der()).to_owned();
    let client_tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::Specific(Arc::new(vec![root]))).build();
    let agent = ureq::Agent::config_builder().http_status_as_error(false).tls_config(client_tls).build().into();
    (cert, tls, agent)
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
