//! Hosting concerns: CORS for a web app served from another origin, and the security headers of
//! every answer, including a Content-Security-Policy that still lets a Trunk-built Yew app run.

use crate::Config;
use axum::http::{header, HeaderName, HeaderValue, Method};
use base64::Engine;
use sha2::{Digest, Sha256};
use std::path::Path;
use tower_http::cors::{AllowOrigin, CorsLayer};

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

    #[test]
    fn inline_scripts_are_hashed_and_external_ones_are_not() {
        let html = r#"<html><script src="/a.js"></script><script type="module">init()</script></html>"#;
        let hashes = inline_script_hashes(html);
        assert_eq!(hashes.len(), 1);
        let expected = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(b"init()"));
        assert_eq!(hashes[0], format!("'sha256-{expected}'"));
    }
}
