//! HTTPS on the real binary (`--tls-cert`, `--tls-key`): requests over TLS reach the same routes,
//! `ip=1` still sees the client's address, a client that speaks plain HTTP to the port is told to
//! use HTTPS, a client that never finishes its handshake holds back nobody, and a certificate or
//! key the server cannot use stops it with what to fix.

use crate::common::process::{credentials, Data};
use crate::common::{basic, Backend};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

/// A new self-signed certificate for 127.0.0.1 written into `dir`: the paths of its certificate
/// and key, and a client that trusts it.
fn certificate(dir: &Path) -> (PathBuf, PathBuf, ureq::Agent) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    let root = ureq::tls::Certificate::from_der(generated.cert.der()).to_owned();
    let tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::Specific(Arc::new(vec![root]))).build();
    // Well under the server's handshake timeout, so that a handshake held back by another
    // connection's fails the test.
    let timeout = Some(std::time::Duration::from_secs(5));
    (cert, key, ureq::Agent::config_builder().http_status_as_error(false).timeout_global(timeout).tls_config(tls).build().into())
}

#[test]
fn the_server_speaks_https_with_a_certificate() {
    let data = Data::new(Backend::Sqlite);
    let certs = tempfile::tempdir().unwrap();
    let (cert, key, agent) = certificate(certs.path());
    let options = ["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()];
    let server = data.spawn_with("datadict_server=warn", &[], &options, &[], Stdio::inherit());
    let address = server.base.strip_prefix("https://").unwrap_or_else(|| panic!("not announced as HTTPS: {}", server.base)).to_owned();
    let demo = credentials(data.dir.path());

    // A connection that never sends its handshake does not hold back the next client.
    let _silent = TcpStream::connect(&address).unwrap();

    let form = format!("data={}", serde_json::json!({"event": "Over TLS", "properties": {"token": demo.project_token, "distinct_id": "tls-1"}}));
    let answer = agent
        .post(format!("{}/track/?ip=1&verbose=1", server.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .send(form.as_str())
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.into_body().read_to_string().unwrap(), r#"{"status":1,"error":null}"#);

    let read = agent
        .get(format!("{}/api/app/projects/{}/events?event=Over%20TLS", server.base, demo.project_id))
        .header("Authorization", basic(&demo.username, &demo.secret))
        .call()
        .unwrap();
    assert_eq!(read.status(), 200);
    let body: serde_json::Value = serde_json::from_str(&read.into_body().read_to_string().unwrap()).unwrap();
    let props = &body["results"][0]["properties"];
    assert_eq!((&props["distinct_id"], &props["ip"]), (&serde_json::json!("tls-1"), &serde_json::json!("127.0.0.1")), "{body}");

    // Plain HTTP to the HTTPS port: a 400 that says to use https://.
    let mut plain = TcpStream::connect(&address).unwrap();
    plain.write_all(b"POST /track HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\ndata=1").unwrap();
    let mut text = String::new();
    plain.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
    assert!(text.contains("speaks HTTPS only") && text.contains("https://"), "{text}");
}

/// The binary's standard error when it is started with `options` and must refuse them.
fn refusal(data_dir: &Path, options: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_datadict-server"))
        .args(["--data-dir", data_dir.to_str().unwrap(), "--listen", "127.0.0.1:0", "--no-demo"])
        .args(options)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success(), "the server started with {options:?}: {}", String::from_utf8_lossy(&output.stdout));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_certificate_or_key_the_server_cannot_use_stops_it_with_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, _) = certificate(dir.path());
    let other = tempfile::tempdir().unwrap();
    let (_, other_key, _) = certificate(other.path());
    let (cert, key, other_key) = (cert.to_str().unwrap(), key.to_str().unwrap(), other_key.to_str().unwrap());
    let missing = dir.path().join("missing.pem");
    let data = dir.path().join("data");

    let error = refusal(&data, &["--tls-cert", missing.to_str().unwrap(), "--tls-key", key]);
    assert!(error.contains("cannot read the TLS certificate file") && error.contains("missing.pem"), "{error}");
    // The key given as the certificate: no certificate in it.
    let error = refusal(&data, &["--tls-cert", key, "--tls-key", key]);
    assert!(error.contains("holds no certificate") && error.contains("BEGIN CERTIFICATE"), "{error}");
    let error = refusal(&data, &["--tls-cert", cert, "--tls-key", cert]);
    assert!(error.contains("holds no private key") && error.contains("BEGIN PRIVATE KEY"), "{error}");
    let error = refusal(&data, &["--tls-cert", cert, "--tls-key", other_key]);
    assert!(error.contains("cannot serve the certificate"), "{error}");
    let error = refusal(&data, &["--tls-cert", cert]);
    assert!(error.contains("--tls-key"), "one without the other: {error}");
}
