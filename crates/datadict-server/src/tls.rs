//! HTTPS for the server (`--tls-cert` and `--tls-key`), for the clients that send some requests
//! only over HTTPS: the service's Node library refuses to send `/import` with credentials over
//! plain HTTP. One port speaks one protocol: with a certificate the server serves HTTPS only.
//!
//! [`TlsListener`] is an `axum::serve::Listener`, which `serving::serve` takes. Its own task accepts TCP connections and runs
//! each handshake in a task of its own, under [`HANDSHAKE_TIMEOUT`], so a slow or silent client
//! delays nobody else. A client that speaks plain HTTP to the HTTPS port gets a plain-text 400
//! saying so, rather than a closed connection.

use anyhow::{bail, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client may take to complete its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first byte of every TLS connection: a handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// What a plain-HTTP request to the HTTPS port gets.
const PLAIN_HTTP_REFUSAL: &str = "this datadict server speaks HTTPS only (it was started with --tls-cert): send the request to https:// instead of http://\n";

/// The server's TLS configuration from a PEM certificate chain (the server's certificate first)
/// and its PEM private key, with errors that name the file and what it should hold.
pub fn server_config(cert: &Path, key: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read the TLS certificate file {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{} is not a PEM certificate chain", cert.display()))?;
    if chain.is_empty() {
        bail!(
            "{} holds no certificate: --tls-cert needs PEM `-----BEGIN CERTIFICATE-----` blocks, the server's own certificate first",
            cert.display()
        );
    }
    let private_key = PrivateKeyDer::from_pem_file(key).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => anyhow::anyhow!(
            "{} holds no private key: --tls-key needs a PEM `-----BEGIN PRIVATE KEY-----` (or RSA / EC PRIVATE KEY) block",
            key.display()
        ),
        other => anyhow::anyhow!("cannot read the TLS private key file {}: {other}", key.display()),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("the TLS library offers no protocol version")?
        .with_no_client_auth()
        .with_single_cert(chain, private_key)
        .with_context(|| format!("the key of {} cannot serve the certificate of {}", key.display(), cert.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepted and handshaken connections, for `serving::serve`.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Starts accepting on `tcp`; call it inside the runtime.
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (sender, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors, or a connection reset before it was accepted:
                        // wait a little rather than spin.
                        tracing::warn!("cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                if sender.is_closed() {
                    return;
                }
                let (acceptor, sender) = (acceptor.clone(), sender.clone());
                tokio::spawn(async move {
                    if let Some(tls) = handshake(&acceptor, stream, peer).await {
                        let _ = sender.send((tls, peer)).await;
                    }
                });
            }
        });
        Ok(Self { ready, local })
    }
}

/// The TLS connection of `stream`, or `None` (logged) when the client spoke plain HTTP, failed
/// the handshake or was too slow.
async fn handshake(acceptor: &TlsAcceptor, mut stream: TcpStream, peer: SocketAddr) -> Option<TlsStream<TcpStream>> {
    let _ = stream.set_nodelay(true);
    let attempt = async {
        let mut first = [0u8; 1];
        if stream.peek(&mut first).await.ok()? == 0 {
            return None;
        }
        if first[0] != TLS_HANDSHAKE_RECORD {
            tracing::info!(%peer, "a plain-HTTP request came to the HTTPS port: answered 400");
            let answer = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{PLAIN_HTTP_REFUSAL}",
                PLAIN_HTTP_REFUSAL.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
            return None;
        }
        match acceptor.accept(stream).await {
            Ok(tls) => Some(tls),
            Err(e) => {
                tracing::info!(%peer, "TLS handshake failed: {e}");
                None
            }
        }
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, attempt).await {
        Ok(tls) => tls,
        Err(_) => {
            tracing::info!(%peer, "TLS handshake not completed in {HANDSHAKE_TIMEOUT:?}: connection closed");
            None
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, over TLS with `config` and over
/// plain HTTP without, giving handlers each connection's address (`ConnectInfo`, which `ip=1`
/// reads): how the binary and the tests serve.
///
/// Requests hyper cannot parse never reach the router, so they get hyper's own bodiless answers
/// without CORS: a request target over 65,534 bytes is a 414 (`MAX_URI_LEN`, a constant in
/// hyper's `proto/h1/role.rs`, as `http::Uri` caps a URI), a head over hyper's read buffer (about
/// 408 KB) a 431, a malformed header such as `Content-Length: abc` a 400. hyper writes these in
/// `Conn::on_parse_error` with no hook for a body, and raising `http1::Builder::max_buf_size`
/// would only move the 431, not the 414; README.md
/// states the limit of a `GET`.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    config: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, router, config, crate::serving::stop_on(shutdown)).await
}

/// [`serve`] with the time limits and the forced stop of `stop` (see [`crate::serving::serve`]).
pub async fn serve_with<S: Future<Output = ()>, F: Future<Output = ()>>(
    listener: TcpListener,
    router: axum::Router,
    config: Option<Arc<rustls::ServerConfig>>,
    stop: crate::serving::Stop<S, F>,
) -> std::io::Result<()> {
    match config {
        Some(config) => crate::serving::serve(TlsListener::new(listener, config)?, router, stop).await,
        None => crate::serving::serve(listener, router, stop).await,
    }
    Ok(())
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task ended (it never does while the listener lives).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
