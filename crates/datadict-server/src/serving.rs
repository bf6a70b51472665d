//! Serving the router on a listener (plain TCP or [`crate::tls::TlsListener`]): hyper's HTTP/1.1
//! with a time limit on reading a request's head, each connection's address for `ConnectInfo`,
//! the request log, and a graceful stop that has a time limit.
//!
//! `axum::serve` has neither limit: a client that sent half a request's head held its
//! connection for as long as it liked, and a stopping server waited for it without end (the
//! audit saw 200 s, and only `kill -9` helped).

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::watch;
use tower::ServiceExt;

/// How long a client may take to send a request's head (line and headers) once the server waits
/// for one, when `DATADICT_HEADER_READ_TIMEOUT_SECS` turns the limit on; an idle kept-alive
/// connection is closed after as long. Off by default: hyper arms a timer for every request's
/// head, 2% of a tracking request's instructions (callgrind, 101.2k against 99.3k), and a
/// stopping server no longer waits for a stalled client anyway (see [`Stop::grace`]).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a stopping server waits for the requests in flight (the default of
/// `DATADICT_SHUTDOWN_GRACE_SECS`).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// When and how a server stops.
pub struct Stop<S, F> {
    /// Resolves when the server should stop taking connections and finish its requests.
    pub shutdown: S,
    /// Resolves when it should stop at once, requests in flight or not (a second signal).
    pub force: F,
    /// How long it waits for the requests in flight after `shutdown`.
    pub grace: Duration,
    /// The time limit on a request's head, if any (see [`HEADER_READ_TIMEOUT`]).
    pub header_read_timeout: Option<Duration>,
}

/// A [`Stop`] on `shutdown` alone, with the default limits.
pub fn stop_on<S: Future<Output = ()>>(shutdown: S) -> Stop<S, std::future::Pending<()>> {
    Stop { shutdown, force: std::future::pending(), grace: SHUTDOWN_GRACE, header_read_timeout: None }
}

/// Serves `router` on `listener` until `stop.shutdown` resolves, then waits for the connections'
/// requests in flight, at most `stop.grace` or until `stop.force` resolves. Connections still
/// open then are left to the runtime's shutdown, which drops them.
pub async fn serve<L, S, F>(mut listener: L, router: Router, stop: Stop<S, F>)
where
    L: axum::serve::Listener<Addr = SocketAddr>,
    S: Future<Output = ()>,
    F: Future<Output = ()>,
{
    let mut http = hyper::server::conn::http1::Builder::new();
    if let Some(limit) = stop.header_read_timeout {
        http.timer(TokioTimer::new()).header_read_timeout(limit);
    }
    // Every connection holds a receiver of `open` until it ends; `stopping` tells them to finish.
    let (stopping, _) = watch::channel(false);
    let (open, open_rx) = watch::channel(());
    let shutdown = stop.shutdown;
    tokio::pin!(shutdown);
    loop {
        let (io, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        tracing::trace!(%peer, "connection accepted");
        let connection = http.serve_connection(TokioIo::new(io), hyper_service(router.clone(), peer));
        let (mut stopping, open) = (stopping.subscribe(), open_rx.clone());
        tokio::spawn(async move {
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => Some(ended),
                _ = stopping.wait_for(|s| *s) => None,
            };
            let ended = match ended {
                Some(ended) => ended,
                None => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = ended {
                tracing::trace!(%peer, "connection ended: {e}");
            }
            drop(open);
        });
    }
    drop((listener, open_rx));
    stopping.send_replace(true);
    let in_flight = open.receiver_count();
    if in_flight == 0 {
        return;
    }
    tracing::info!("waiting for {in_flight} open connection(s) to finish their requests (at most {:?})", stop.grace);
    tokio::select! {
        () = open.closed() => {}
        () = tokio::time::sleep(stop.grace) => {
            tracing::warn!("{} connection(s) still had a request in flight after {:?}: stopping without them", open.receiver_count(), stop.grace);
        }
        () = stop.force => {
            tracing::warn!("a second signal: stopping now, with {} connection(s) open", open.receiver_count());
        }
    }
}

/// The router as hyper's service for the connection from `peer`: each request gets the
/// connection's address (`ConnectInfo`), and the request log its line.
fn hyper_service(
    router: Router,
    peer: SocketAddr,
) -> hyper_util::service::TowerToHyperService<
    impl tower::Service<Request<hyper::body::Incoming>, Response = axum::response::Response, Error = std::convert::Infallible, Future = impl Send> + Clone,
> {
    let service = tower::service_fn(move |request: Request<hyper::body::Incoming>| answer(router.clone(), peer, request));
    hyper_util::service::TowerToHyperService::new(service)
}

/// Answers one request and logs it: at debug, one line per request (method, path without its
/// query string, which may carry credentials such as `?data=` or `token=`, status and time); at
/// info, a failed authentication (401 or 403) without any credential. With debug off nothing
/// is formatted or allocated for the log (the method and address are moved, not copied; the
/// path is a reference-counted handle).
async fn answer(router: Router, peer: SocketAddr, request: Request<hyper::body::Incoming>) -> Result<axum::response::Response, std::convert::Infallible> {
    let mut request = request.map(Body::new);
    request.extensions_mut().insert(ConnectInfo(peer));
    let started = tracing::enabled!(target: "datadict_server::requests", tracing::Level::DEBUG).then(std::time::Instant::now);
    let (method, uri) = (request.method().clone(), request.uri().clone());
    let response = router.oneshot(request).await?;
    let status = response.status();
    if let Some(started) = started {
        tracing::debug!(target: "datadict_server::requests", "{method} {} {} {:.1?}", uri.path(), status.as_u16(), started.elapsed());
    }
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        tracing::info!(target: "datadict_server::requests", %peer, "authentication failed: {method} {} answered {}", uri.path(), status.as_u16());
    }
    Ok(response)
}
