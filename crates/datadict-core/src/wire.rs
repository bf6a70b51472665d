//! The wire formats of the ingestion routes (`/track`, `/import`, `/engage`, `/groups`): how a
//! request's method, `Content-Type`, query string and body become a records payload and its
//! parameters ([`decode_request`]), and how an outcome becomes the answer a tracking library
//! reads ([`answer()`]). Pure logic, so that the server, the web app and the npm module agree.
//!
//! Where a rule comes from is marked at the rule: "reference" for
//! `ingestion.openapi.yaml`, "FACTS.md" for the vendor's documented behaviour, "issue 19" for this
//! project's own choices where both are silent.
//!
//! # Map
//! - [`form`]: percent-decoding and `name=value` pairs (form bodies and query strings).
//! - [`params`]: `verbose`, `ip`, `img`, `callback`, `strict`, `project_id`, and which wins when a
//!   parameter is in both the query string and the form body.
//! - [`decode`]: the framing decision, [`decode_request`] and [`Payload`]; `data` values (JSON or
//!   base64 JSON) are read by a private `data` module.
//! - [`answer`](mod@answer): the `1`/`0`, verbose JSON, pixel and `callback` answers, and the
//!   callback name rule.
//! - [`WireError`]: every refusal, each saying what was found and what to send.

pub mod answer;
mod data;
pub mod decode;
mod error;
pub mod form;
pub mod params;

pub use answer::{answer, check_callback, Answer, CallbackError, Outcome};
pub use decode::{decode_request, Carrier, Decoded, Framing, Payload, WireRequest};
pub use error::{Place, WireError};
pub use params::{AnswerKind, Params};

/// The routes that speak these wire formats. Their differences are data here, not branches in
/// the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `POST /import`: events, authenticated by a service account or the project token.
    Import,
    /// `POST`/`GET /track`: events, authenticated by `properties.token` (reference).
    Track,
    /// `POST`/`GET /engage`: user profile updates, authenticated by `$token` (reference).
    Engage,
    /// `POST`/`GET /groups`: group profile updates, authenticated by `$token` (reference).
    Groups,
}

impl Route {
    /// The route's path, for messages.
    pub fn path(self) -> &'static str {
        match self {
            Self::Import => "/import",
            Self::Track => "/track",
            Self::Engage => "/engage",
            Self::Groups => "/groups",
        }
    }

    /// Whether a body of several JSON values, one a line, is accepted. FACTS.md allows NDJSON on
    /// `/import`; this server has also accepted it on `/engage` (a test pins it), and `/groups`
    /// carries the same kind of updates. `/track` takes one event object or an array (reference),
    /// so there a second value is refused rather than guessed at.
    pub fn accepts_ndjson(self) -> bool {
        !matches!(self, Self::Track)
    }

    /// What this route's records are, for messages.
    pub fn records(self) -> &'static str {
        match self {
            Self::Import | Self::Track => "events",
            Self::Engage => "profile updates",
            Self::Groups => "group profile updates",
        }
    }

    /// What to send to this route, ending the messages of [`WireError`].
    pub(crate) fn send_hint(self) -> &'static str {
        match self {
            Self::Import => {
                "send a JSON array of events (or NDJSON with `Content-Type: application/x-ndjson`), or `data=<JSON or base64 JSON>` form-encoded"
            }
            Self::Track => "send a JSON event object or an array of events, or `data=<JSON or base64 JSON>` form-encoded",
            Self::Engage => {
                "send a JSON profile update or an array of updates (or NDJSON with `Content-Type: application/x-ndjson`), or `data=<JSON or base64 JSON>` form-encoded"
            }
            Self::Groups => {
                "send a JSON group profile update or an array of updates (or NDJSON with `Content-Type: application/x-ndjson`), or `data=<JSON or base64 JSON>` form-encoded"
            }
        }
    }
}

/// The names of the query and form parameters (reference: the `parameters` of `/track`,
/// `/engage`, `/groups` and `/import`; `data` from the batch operations' descriptions, "the data
/// parameter of an application/x-www-form-urlencoded POST or GET request").
pub mod param {
    /// The records: JSON or base64 JSON (issue 19: tracking libraries send both).
    pub const DATA: &str = "data";
    /// `1`: answer `{"status":1,"error":null}` or `{"status":0,"error":"..."}` (reference).
    pub const VERBOSE: &str = "verbose";
    /// `1`: use the connection's address as the event's `ip` (reference).
    pub const IP: &str = "ip";
    /// `1`: answer a 1x1 transparent GIF (reference).
    pub const IMG: &str = "img";
    /// A JavaScript function to call with the answer (reference).
    pub const CALLBACK: &str = "callback";
    /// `1`: report every invalid record (reference, FACTS.md).
    pub const STRICT: &str = "strict";
    /// The project of service-account credentials (reference, `/import`).
    pub const PROJECT_ID: &str = "project_id";
}

/// Media types, as requests name them (lowercase, without parameters) and as answers send them.
pub mod media {
    /// A JSON body (reference: every ingestion route).
    pub const JSON: &str = "application/json";
    /// An older name for JSON that some clients still send.
    pub const TEXT_JSON: &str = "text/json";
    /// NDJSON (FACTS.md: `/import`).
    pub const NDJSON: &str = "application/x-ndjson";
    /// The unprefixed NDJSON name, treated like [`NDJSON`].
    pub const NDJSON_UNPREFIXED: &str = "application/ndjson";
    /// A form body with `data=` (reference: the batch operations; issue 19).
    pub const FORM: &str = "application/x-www-form-urlencoded";
    /// `navigator.sendBeacon` with a string labels it `text/plain`, so such a body is sniffed.
    pub const TEXT_PLAIN: &str = "text/plain";
    /// A body of unknown type, sniffed like `text/plain`.
    pub const OCTET_STREAM: &str = "application/octet-stream";
    /// What `FormData` bodies are labelled; not read here (see [`super::WireError`]).
    pub const MULTIPART: &str = "multipart/form-data";

    /// The answer `1` or `0` (reference: the `Received` response is `text/plain`).
    pub const ANSWER_TEXT: &str = "text/plain; charset=utf-8";
    /// The `verbose=1` answer.
    pub const ANSWER_JSON: &str = "application/json";
    /// The `img=1` answer (reference).
    pub const ANSWER_GIF: &str = "image/gif";
    /// The `callback=NAME` answer (reference: "`content-type: text/javascript`").
    pub const ANSWER_JAVASCRIPT: &str = "text/javascript; charset=utf-8";
}

/// The longest `callback` name accepted, in bytes (issue 19). Real callbacks are short generated
/// names; the cap keeps an attacker from making the answer large.
pub const MAX_CALLBACK_BYTES: usize = 128;

/// A 1x1 transparent GIF, the `img=1` answer (reference: "a 1x1 transparent pixel image"). The
/// bytes, field by field, so that the test can check each one.
pub const TRANSPARENT_GIF: [u8; 43] = [
    // Header: the GIF89a signature (89a is needed for transparency).
    b'G', b'I', b'F', b'8', b'9', b'a', //
    // Logical screen: width 1, height 1 (little-endian); a global colour table of two entries;
    // background colour 0; no aspect ratio.
    0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, //
    // The colour table: black and white (colour 0 is made transparent below).
    0x00, 0x00, 0x00, 0xff, 0xff, 0xff, //
    // Graphic control extension: 4 bytes follow; the transparency flag set; no delay;
    // transparent colour 0; end of extension.
    0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, //
    // Image descriptor: at (0,0), 1x1, no local colour table.
    0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, //
    // Image data: LZW minimum code size 2; one block of 2 bytes holding the codes clear, 0 and
    // end (3 bits each); the block terminator.
    0x02, 0x02, 0x44, 0x01, 0x00, //
    // Trailer.
    0x3b,
];
