//! Hosting concerns: CORS (any origin for the tracking routes, the configured origins for the
//! rest), and the security headers of every answer, including a Content-Security-Policy that
//! still lets a Trunk-built Yew app run.

use crate::Config;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::convert::Infallible;
use std::sync::Arc;
use tower::{Layer, ServiceExt};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// The routes a page on any origin may call (issue 19): the token-authenticated tracking routes,
/// which an application under test calls from its own origin. They need no allow-list: their
/// credential is the project token the page sends in its records, which any page that has it can
/// send anyway (a form post or an image needs no CORS), and the answers carry nothing else.
/// `/import` is not among them: it is authenticated by an `Authorization` header, which makes
/// every browser request to it a preflighted one, like the service-account routes, so it keeps
/// their allow-list.
pub const TRACKING_ROUTES: [&str; 3] = ["/track", "/engage", "/groups"];

/// Whether `path` is one of [`TRACKING_ROUTES`], with or without the trailing slash that the
/// browser library adds (`/track/`, see `routes`).
pub fn is_tracking_route(path: &str) -> bool {
    TRACKING_ROUTES.contains(&path.strip_suffix('/').unwrap_or(path))
}

/// CORS for any origin, the tracking routes': the methods they serve, whatever headers the page
/// asks to send (`Content-Type: application/json` and `Content-Encoding` make a preflight), and
/// `Retry-After` readable by the page. Credentialed requests too: the service's browser library
/// sends every `XMLHttpRequest` with `withCredentials` (for its opt-out cookie), which a browser
/// lets through only when the answer names the page's origin (not `*`) and allows credentials.
/// This server sets no cookies and never asks a browser for Basic credentials (no
/// `WWW-Authenticate`), so a credentialed request carries nothing of the user's. The origin is
/// echoed only when it has the shape of one ([`is_origin`]).
pub fn tracking_cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(|origin, _| is_origin(origin)))
        .allow_credentials(true)
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers([header::RETRY_AFTER])
        .max_age(std::time::Duration::from_secs(600))
}

/// What [`hosting`] adds to every answer: one of two CORS policies, chosen by path, and the
/// security headers.
#[derive(Clone)]
pub struct Hosting {
    tracking: CorsLayer,
    /// What [`tracking_cors`] adds to an answer that is not to a preflight, set by hand on the
    /// tracking routes' answers ([`tracking_answer_headers`]).
    tracking_headers: Vec<(HeaderName, HeaderValue)>,
    /// `None`: same-origin only.
    configured: Option<CorsLayer>,
    /// Set on every answer that has none of its own ([`security_headers`]).
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Hosting {
    pub fn new(config: &Config, csp: &str) -> Self {
        Self { tracking: tracking_cors(), tracking_headers: tracking_answer_headers(), configured: cors(config), headers: security_headers(csp) }
    }
}

/// The CORS headers [`tracking_cors`] puts on every answer that is not to a preflight, whatever
/// its origin: `Retry-After` readable, credentials allowed, and the `Vary` of a policy that
/// depends on the request's origin and preflight headers. [`hosting`] adds the origin itself
/// ([`allow_origin`]). A test compares both with what the layer sets.
fn tracking_answer_headers() -> Vec<(HeaderName, HeaderValue)> {
    vec![
        (header::VARY, HeaderValue::from_static("origin, access-control-request-method, access-control-request-headers")),
        (header::ACCESS_CONTROL_ALLOW_CREDENTIALS, HeaderValue::from_static("true")),
        (header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("retry-after")),
    ]
}

/// `Access-Control-Allow-Origin` for a tracking answer to a request from `origin`: the origin
/// itself when it has the shape of one, else nothing (the browser then refuses the answer).
fn allow_origin(origin: Option<&HeaderValue>) -> Option<(HeaderName, HeaderValue)> {
    origin.filter(|o| is_origin(o)).map(|o| (header::ACCESS_CONTROL_ALLOW_ORIGIN, o.clone()))
}

/// Whether an `Origin` header has the shape of an origin (`scheme://host[:port]`, or `null` for
/// a page without one), so that only such a value is echoed back.
pub fn is_origin(value: &HeaderValue) -> bool {
    let text = value.as_bytes();
    if text == b"null" {
        return true;
    }
    let Some(at) = text.windows(3).position(|w| w == b"://") else { return false };
    let (scheme, host) = (&text[..at], &text[at + 3..]);
    let scheme_ok = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
    let host_ok = !host.is_empty() && host.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':' | b'[' | b']'));
    text.len() <= 2048 && scheme_ok && host_ok
}

/// The one middleware over every route (a tracking request is small enough for each layer's
/// boxed futures and cloned services to show in its CPU, so this does in one what was four):
/// - CORS: the tracking routes ([`TRACKING_ROUTES`]) answer it for any origin, preflights
///   included; every other route answers it for the configured origins only (one middleware that
///   picks, rather than two stacked layers, because a CORS layer answers a preflight itself and
///   the outer one would answer for both). A tracking request that is not a preflight gets its
///   headers set here directly, without running the layer;
/// - a `%00` in the address of the application API is refused ([`crate::nul::refusal`]);
/// - a request body the answer did not need is read to its end before the answer leaves
///   ([`crate::drain::drain_unread_body`]), whatever answered: a handler, an extractor or a refusal;
/// - every answer, a preflight's too, gets the security headers it does not set itself.
pub async fn hosting(State(hosting): State<Arc<Hosting>>, request: Request, next: Next) -> Response {
    let tracking = is_tracking_route(request.uri().path());
    let (mut response, cors) = if tracking && request.method() != Method::OPTIONS {
        let origin = allow_origin(request.headers().get(header::ORIGIN));
        let mut response = serve(request, next).await;
        response.headers_mut().extend(origin);
        (response, &hosting.tracking_headers[..])
    } else {
        let layer = if tracking { Some(&hosting.tracking) } else { hosting.configured.as_ref() };
        let response = match layer {
            Some(layer) => {
                let route = tower::service_fn(move |request| {
                    let next = next.clone();
                    async move { Ok::<_, Infallible>(serve(request, next).await) }
                });
                match layer.clone().layer(route).oneshot(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            }
            None => serve(request, next).await,
        };
        (response, &[][..])
    };
    let headers = response.headers_mut();
    headers.reserve(cors.len() + hosting.headers.len());
    for (name, value) in cors {
        headers.insert(name.clone(), value.clone());
    }
    for (name, value) in &hosting.headers {
        if !headers.contains_key(name) {
            headers.insert(name.clone(), value.clone());
        }
    }
    response
}

/// The route, behind the refusal of `%00` and the draining of unread bodies.
async fn serve(request: Request, next: Next) -> Response {
    crate::drain::drain_unread_body(request, |request| async move {
        match crate::nul::refusal(request.uri()) {
            Some(refusal) => refusal,
            None => next.run(request).await,
        }
    })
    .await
}

/// CORS for the configured origins: none (same-origin only), a list, or `*` for any origin.
/// Browsers send `Authorization` explicitly from the app, so no credentials mode is needed.
pub fn cors(config: &Config) -> Option<CorsLayer> {
    if config.cors_origins.is_empty() {
        return None;
    }
    let origin = if config.cors_origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        let list: Vec<HeaderValue> = config
            .cors_origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o.trim().trim_end_matches('/')).ok())
            .collect();
        AllowOrigin::list(list)
    };
    Some(
        CorsLayer::new()
            .allow_origin(origin)
            .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::PUT, Method::OPTIONS])
            .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE, header::CONTENT_ENCODING, header::ACCEPT])
            .expose_headers([header::RETRY_AFTER])
            .max_age(std::time::Duration::from_secs(600)),
    )
}

/// The Content-Security-Policy of the app. A Trunk build loads its wasm through an inline module
/// script, so the hashes of the inline scripts of `index.html` are allowed by name (no
/// `'unsafe-inline'` for scripts), and `'wasm-unsafe-eval'` lets the browser compile the wasm.
pub fn content_security_policy(web_dir: Option<&Path>) -> String {
    let mut script_src = vec!["'self'".to_owned(), "'wasm-unsafe-eval'".to_owned()];
    if let Some(html) = web_dir.and_then(|d| std::fs::read_to_string(d.join("index.html")).ok()) {
        script_src.extend(inline_script_hashes(&html));
    }
    format!(
        "default-src 'self'; script-src {}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
         font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; \
         form-action 'self'; frame-ancestors 'none'",
        script_src.join(" ")
    )
}

/// `'sha256-…'` sources for every inline `<script>` (one without `src`) of an HTML page.
pub fn inline_script_hashes(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<script") {
        rest = &rest[start..];
        let Some(tag_end) = rest.find('>') else { break };
        let tag = &rest[..tag_end];
        let body_start = tag_end + 1;
        let Some(close) = rest[body_start..].find("</script>") else { break };
        let body = &rest[body_start..body_start + close];
        if !tag.contains(" src=") && !body.trim().is_empty() {
            let digest = Sha256::digest(body.as_bytes());
            out.push(format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest)));
        }
        rest = &rest[body_start + close..];
    }
    out
}

/// Headers added to every answer (unless a handler set them).
pub fn security_headers(csp: &str) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = vec![
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        (HeaderName::from_static("cross-origin-opener-policy"), HeaderValue::from_static("same-origin")),
    ];
    if let Ok(v) = HeaderValue::from_str(csp) {
        out.push((header::CONTENT_SECURITY_POLICY, v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The headers set by hand on tracking answers are those the tracking CORS layer sets.
    #[tokio::test]
    async fn tracking_answers_get_the_headers_of_the_tracking_cors_layer() {
        for origin in [Some("http://app.example"), Some("null"), Some("http://evil.example\\x"), None] {
            let route = tower::service_fn(|_: Request| async { Ok::<_, Infallible>(Response::new(axum::body::Body::empty())) });
            let mut request = Request::post("/track");
            if let Some(origin) = origin {
                request = request.header(header::ORIGIN, origin);
            }
            let request = request.body(axum::body::Body::empty()).unwrap();
            let response = tracking_cors().layer(route).oneshot(request).await.unwrap();
            let mut set: Vec<(String, String)> =
                response.headers().iter().map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned())).collect();
            let origin = origin.map(HeaderValue::from_static);
            let by_hand = tracking_answer_headers().into_iter().chain(allow_origin(origin.as_ref()));
            let mut by_hand: Vec<(String, String)> = by_hand.map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned())).collect();
            set.sort();
            by_hand.sort();
            assert_eq!(set, by_hand, "origin {origin:?}");
        }
    }

    #[test]
    fn only_what_has_the_shape_of_an_origin_is_echoed() {
        for ok in ["http://shop.test:8080", "https://a.b-c.example", "http://[::1]:3000", "null", "chrome-extension://abcdef"] {
            assert!(is_origin(&HeaderValue::from_static(ok)), "{ok}");
        }
        for bad in ["", "*", "shop.test", "http://", "http://a/b", "http://a b", "javascript:alert(1)", "http://a\"<x>"] {
            assert!(!is_origin(&HeaderValue::from_str(bad).unwrap()), "{bad}");
        }
    }

    #[test]
    fn inline_scripts_are_hashed_and_external_ones_are_not() {
        let html = r#"<html><script src="/a.js"></script><script type="module">init()</script></html>"#;
        let hashes = inline_script_hashes(html);
        assert_eq!(hashes.len(), 1);
        let expected = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(b"init()"));
        assert_eq!(hashes[0], format!("'sha256-{expected}'"));
    }
}
