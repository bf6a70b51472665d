//! Why a request's wire format is refused. Every message says what was found and what to send,
//! since a tracking library shows it (with `verbose=1`) to a developer who cannot see the server.

use super::answer::CallbackError;
use super::Route;
use std::fmt;

/// Where a parameter or the records were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Place {
    Body,
    Query,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Body => "the body",
            Self::Query => "the query string",
        })
    }
}

/// A request whose records cannot be read, or whose parameters are not allowed. Each is answered
/// with [`WireError::status_code`] and its message; none is ever skipped silently (issue 19).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("the body holds no {}: it is empty, and the query string has no `data`; {}", .route.records(), .route.send_hint())]
    EmptyBody { route: Route },
    #[error("{}", missing_data(*.place, .found))]
    MissingData { place: Place, found: String },
    #[error("`data` in {place} is empty; send `data=<JSON or base64 JSON>`")]
    EmptyData { place: Place },
    #[error("`data` is in both the query string and the body; send the records once, in the body")]
    DataTwice,
    #[error("`{name}` appears more than once in {place}; send it once")]
    RepeatedParameter { name: &'static str, place: Place },
    #[error(
        "{place} has bad percent-encoding at byte {at} (`{found}`); write every `%` as `%25` and any other byte as `%` and two hex digits"
    )]
    BadPercentEncoding { place: Place, at: usize, found: String },
    #[error("`data` in {place} is neither JSON (it starts with `{found}`, not `{{` or `[`) nor base64 ({reason}); send `data=<JSON>` or `data=<base64 of JSON>`, URL-encoded")]
    DataNotJson { place: Place, found: String, reason: String },
    #[error("`data` in {place} is base64, but what it encodes is not a JSON object or array (it starts with `{found}`); encode the JSON text of the records")]
    Base64NotJson { place: Place, found: String },
    #[error("`{name}={value}` is not allowed; use `{name}=1` or `{name}=0`")]
    BadFlag { name: &'static str, value: String },
    #[error("`{name}` in {place} is not UTF-8 once percent-decoded; send it as URL-encoded UTF-8")]
    NotUtf8 { name: &'static str, place: Place },
    #[error(transparent)]
    UnsafeCallback(#[from] CallbackError),
    #[error("the body is labelled `{media_type}` but looks form-encoded (it starts with `{found}`); send `Content-Type: application/x-www-form-urlencoded`, or send the JSON itself")]
    FormLabelledJson { media_type: String, found: String },
    #[error("the body is labelled `application/x-www-form-urlencoded` but is JSON (it starts with `{found}`); send `Content-Type: application/json`, or send `data=<JSON or base64 JSON>`")]
    JsonLabelledForm { found: String },
    #[error("{} does not take NDJSON; {}", .route.path(), .route.send_hint())]
    NdjsonNotAccepted { route: Route },
    #[error("the JSON holds more than one value (the second starts at line {line}); send one object or a JSON array")]
    MoreThanOneValue { line: u64 },
    #[error("the JSON object is not closed (the input ends inside it); send the whole object")]
    UnclosedObject,
    #[error("the body is labelled `{media_type}` but is not a JSON object or array (it starts with `{found}`); {}", .route.send_hint())]
    NotJson { media_type: String, found: String, route: Route },
    #[error("{} is neither JSON nor form-encoded with a `data` field (it starts with `{found}`); {}", described(.media_type), .route.send_hint())]
    NeitherJsonNorForm { media_type: Option<String>, found: String, route: Route },
    #[error("`Content-Type: {media_type}` is not read here; {}", .route.send_hint())]
    UnsupportedMediaType { media_type: String, route: Route },
}

fn missing_data(place: Place, found: &str) -> String {
    let found = if found.is_empty() { "no fields".to_owned() } else { format!("found {found}") };
    match place {
        Place::Body => format!("the body is form-encoded but has no `data` field ({found}); send `data=<JSON or base64 JSON>`"),
        Place::Query => {
            format!("the query string has no `data` parameter ({found}); a GET request sends its records as `?data=<base64 JSON or URL-encoded JSON>`")
        }
    }
}

fn described(media_type: &Option<String>) -> String {
    match media_type {
        Some(m) => format!("the body (`{m}`)"),
        None => "the body (without `Content-Type`)".to_owned(),
    }
}

impl WireError {
    /// The HTTP status this error is answered with: 415 for a body type that is not read, 400 for
    /// everything else.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::UnsupportedMediaType { .. } => 415,
            _ => 400,
        }
    }
}
