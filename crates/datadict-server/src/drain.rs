//! Reads to its end a request body that the answer did not need. The auth extractors run before a
//! handler reads the body, so a refusal (401, 403, 429, or a 400 after the credentials) is ready
//! while the client may still be sending; answering then makes hyper close the connection with
//! unread data in it, which a client sees as a reset instead of the answer (and an importer may
//! retry it as a network failure). [`drain_unread_body`], a middleware over every route, hands the
//! body to the handler when the handler first reads it, and reads whatever was never handed over
//! before the answer leaves, as [`crate::error::read_limited`] does for bodies over a
//! limit.

use crate::error::read_limited;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::response::Response;
use http_body::{Body as HttpBody, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

/// The body of a request, shared between this middleware and the handler until the handler reads
/// it.
type Slot = Arc<Mutex<Option<Body>>>;

/// Runs the request through `run`, then reads the part of its body that nothing read (up to the
/// drain limit of `read_limited`) before answering. Called by [`crate::hosting::hosting`], so
/// that it wraps every route.
pub async fn drain_unread_body<F: Future<Output = Response>>(request: Request, run: impl FnOnce(Request) -> F) -> Response {
    let (parts, body) = request.into_parts();
    // Requests without a body (most GETs) need nothing.
    if body.is_end_stream() {
        return run(Request::from_parts(parts, body)).await;
    }
    let slot: Slot = Arc::new(Mutex::new(Some(body)));
    let response = run(Request::from_parts(parts, Body::new(Handover::Waiting(slot.clone())))).await;
    let unread = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(body) = unread {
        // The answer is already decided; a body that fails to arrive changes nothing in it.
        let _ = read_limited(body, 0).await;
    }
    response
}

/// The handler's view of the body: waiting in the shared slot until its first read, then its own.
enum Handover {
    Waiting(Slot),
    Taken(Body),
}

impl Handover {
    fn take(slot: &Slot) -> Body {
        slot.lock().unwrap_or_else(PoisonError::into_inner).take().unwrap_or_default()
    }
}

impl HttpBody for Handover {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if let Self::Waiting(slot) = this {
            *this = Self::Taken(Self::take(slot));
        }
        match this {
            Self::Taken(body) => Pin::new(body).poll_frame(cx),
            Self::Waiting(_) => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Waiting(slot) => slot.lock().unwrap_or_else(PoisonError::into_inner).as_ref().is_none_or(Body::is_end_stream),
            Self::Taken(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Waiting(slot) => slot.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(Body::size_hint).unwrap_or_default(),
            Self::Taken(body) => body.size_hint(),
        }
    }
}
