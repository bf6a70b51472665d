//! Refuses a request to the application API (`/api/`) or the lookup-table routes whose address
//! holds `%00`, the character U+0000. Names and ids are stored as text, which PostgreSQL cannot
//! hold that character in (it refuses such a query parameter outright), and the ingestion checks
//! refuse it in names and ids on every store, so no stored name or id holds it: the answer is the
//! same 400 on both stores instead of a 500 on one and a 404 or an empty page on the other. The
//! ingestion routes are left alone: they answer in their own formats, and their addresses carry
//! no name or id that reaches a query.

use crate::error::ApiError;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};

/// The 400 for a `%00` in the path or the query string of the routes above, if there is one
/// (checked by [`crate::hosting::hosting`] before any route runs).
pub fn refusal(uri: &Uri) -> Option<Response> {
    let covered = uri.path().starts_with("/api/") || uri.path().starts_with("/lookup-tables");
    if covered && holds_nul(uri.path()) {
        return Some(ApiError::BadRequest("the path holds `%00` (the character U+0000), which no name or id can hold; remove it".into()).into_response());
    }
    if covered && uri.query().is_some_and(holds_nul) {
        return Some(
            ApiError::BadRequest("the query string holds `%00` (the character U+0000), which no name or id can hold; remove it".into())
                .into_response(),
        );
    }
    None
}

/// Whether percent-encoded `text` decodes to a U+0000 somewhere (`%00`; a raw zero byte cannot be
/// in a request line).
fn holds_nul(text: &str) -> bool {
    text.as_bytes().windows(3).any(|w| w == b"%00")
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_percent_encoded_zero_byte_counts() {
        assert!(super::holds_nul("/api/app/projects/1/profiles/u%001"));
        assert!(!super::holds_nul("/api/app/projects/1/profiles/u%2500"));
        assert!(!super::holds_nul("event=a%20b&limit=100"));
    }
}
