//! Deciding a request's framing: from its method, `Content-Type`, query string and (already
//! gunzipped) body to the records' JSON text and the request's parameters, or to a
//! [`WireError`] that says what was found. Never by guessing past what the request says: a body
//! labelled one way and written another is refused, not reinterpreted.
//!
//! The formats (issue 19, from the reference and FACTS.md):
//! - a JSON body, an object or an array; NDJSON where [`Route::accepts_ndjson`];
//! - a form body (`application/x-www-form-urlencoded`) with `data=` holding JSON or base64 JSON,
//!   and the parameters of [`Params`];
//! - `GET` with `data=` in the query string (beacons, pixels);
//! - a body without a usable label (`text/plain`, which `navigator.sendBeacon` gives a string,
//!   `application/octet-stream`, or none) is JSON when it starts with `{` or `[`, else a form.

use super::data::{decode_data, json_start, opens_records, start_of};
use super::form::{percent_decode, printable, raw_pairs};
use super::params::{Fields, NAMES};
use super::{media, Params, Place, Route, WireError};
use crate::request::Method;
use crate::split::{is_blank, Element, InputFormat, BOM};
use std::borrow::Cow;

/// A request as the server received it.
#[derive(Debug, Clone, Copy)]
pub struct WireRequest<'a> {
    pub route: Route,
    pub method: Method,
    /// The `Content-Type` header as sent (parameters such as `charset` are ignored: JSON is UTF-8
    /// by RFC 8259, and form values are percent-encoded bytes). `None` when absent.
    pub content_type: Option<&'a str>,
    /// The query string, without or with its leading `?`; empty when there is none.
    pub query: &'a str,
    /// The body, already gunzipped. Ignored for `GET`.
    pub body: &'a [u8],
}

/// Which part of the request carried the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Carrier {
    /// The body is the JSON.
    JsonBody,
    /// `data=` in a form body.
    FormBody,
    /// `data=` in the query string.
    Query,
}

/// How the records are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// A JSON array of records.
    Array,
    /// One JSON object, one record.
    Object,
    /// One JSON value a line (FACTS.md: `application/x-ndjson`).
    Ndjson,
}

/// The records of a request: JSON text ready for the import path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload<'a> {
    /// The JSON text. Borrowed from the request when it is the body, or a `data` value that
    /// needed no decoding; owned after percent- or base64-decoding. A server that holds the body
    /// in a shared buffer can take a borrowed payload as a slice of that buffer, without a copy.
    pub bytes: Cow<'a, [u8]>,
    /// The framing to read `bytes` with ([`crate::check_import_records`], [`crate::split_body`]).
    /// One object is one NDJSON line; an object that spans lines is wrapped in `[` `]` (lines
    /// keep their numbers), since NDJSON would cut it at its first line break.
    pub format: InputFormat,
    /// The framing the request used.
    pub framing: Framing,
    pub carrier: Carrier,
    /// Whether `data` was base64.
    pub base64: bool,
}

/// A decoded request: its parameters (as far as they could be read, so that even a refusal is
/// answered the way the client asked) and its records or why they cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded<'a> {
    pub params: Params,
    pub payload: Result<Payload<'a>, WireError>,
}

/// What the body is, once its label and its first byte are known.
enum Body {
    /// No body, or only blanks: the records can only be in the query string.
    Empty,
    /// A JSON body; `ndjson` when it was labelled so.
    Json { ndjson: bool },
    /// A form body; `sniffed` holds the label it came with when that label did not say form.
    Form { sniffed: Option<Option<String>> },
}

/// Decodes a request of `route`: see the module documentation for the formats. The first
/// problem found is the error; parameters are read as far as they can be in any case.
pub fn decode_request<'a>(request: &WireRequest<'a>) -> Decoded<'a> {
    let mut error = None;
    let mut fields = Fields::default();
    let query = request.query.strip_prefix('?').unwrap_or(request.query).as_bytes();
    let query_names = read_pairs(query, Place::Query, &mut fields, &mut error);
    let body = if request.method == Method::Get { Ok(Body::Empty) } else { classify(request) };
    let mut body_names = FieldNames::default();
    if let Ok(Body::Form { .. }) = body {
        body_names = read_pairs(request.body, Place::Body, &mut fields, &mut error);
    }
    let params = Params::read(&fields, &mut error);
    let payload = match (error, body) {
        (Some(e), _) | (None, Err(e)) => Err(e),
        (None, Ok(body)) => match (body, fields.take_data()) {
            (Body::Json { .. }, Some(_)) => Err(WireError::DataTwice),
            (Body::Json { ndjson }, None) => json_body(request, ndjson),
            (_, Some(data)) => {
                let carrier = if data.place == Place::Body { Carrier::FormBody } else { Carrier::Query };
                decode_data(data.value, data.place).and_then(|d| frame(d.bytes, d.start, false, carrier, d.base64))
            }
            _ if request.method == Method::Get => Err(WireError::MissingData { place: Place::Query, found: query_names.describe() }),
            (Body::Empty, None) => Err(WireError::EmptyBody { route: request.route }),
            (Body::Form { sniffed: None }, None) => Err(WireError::MissingData { place: Place::Body, found: body_names.describe() }),
            (Body::Form { sniffed: Some(media_type) }, None) => {
                let at = json_start(request.body).unwrap_or(0);
                Err(WireError::NeitherJsonNorForm { media_type, found: start_of(request.body, at), route: request.route })
            }
        },
    };
    Decoded { params, payload }
}

/// What a body is, from its `Content-Type` and its first byte.
fn classify(request: &WireRequest<'_>) -> Result<Body, WireError> {
    let Some(start) = json_start(request.body) else { return Ok(Body::Empty) };
    let first = request.body[start];
    let label = request.content_type.map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()).filter(|m| !m.is_empty());
    let found = || start_of(request.body, start);
    match label.as_deref() {
        Some(media::JSON | media::TEXT_JSON | media::NDJSON | media::NDJSON_UNPREFIXED) => {
            let label = label.unwrap_or_default();
            let ndjson = label.ends_with("ndjson");
            if ndjson && !request.route.accepts_ndjson() {
                Err(WireError::NdjsonNotAccepted { route: request.route })
            } else if opens_records(first) {
                Ok(Body::Json { ndjson })
            } else if looks_like_form(&request.body[start..]) {
                Err(WireError::FormLabelledJson { media_type: label, found: found() })
            } else if request.route.accepts_ndjson() {
                // Where a body may hold several JSON values, one a line, each is a record of its
                // own, and the record checks say what is wrong with each (`42`: "the record is
                // the number 42; an event must be an object..."), as the import always did.
                Ok(Body::Json { ndjson: true })
            } else {
                Err(WireError::NotJson { media_type: label, found: found(), route: request.route })
            }
        }
        Some(media::FORM) if opens_records(first) => Err(WireError::JsonLabelledForm { found: found() }),
        Some(media::FORM) => Ok(Body::Form { sniffed: None }),
        None | Some(media::TEXT_PLAIN | media::OCTET_STREAM) if opens_records(first) => Ok(Body::Json { ndjson: false }),
        None | Some(media::TEXT_PLAIN | media::OCTET_STREAM) => Ok(Body::Form { sniffed: Some(label) }),
        Some(_) => Err(WireError::UnsupportedMediaType { media_type: label.unwrap_or_default(), route: request.route }),
    }
}

/// Whether a body that should be JSON is a form instead: a field name (letters, digits, `_`, `.`,
/// `-`, `%`) and then `=` within its first 64 bytes.
fn looks_like_form(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64)];
    match memchr::memchr(b'=', head) {
        Some(eq) => eq > 0 && head[..eq].iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'%')),
        None => false,
    }
}

/// Reads the pairs of `text` into `fields`; returns the names found, for a message.
fn read_pairs<'a>(text: &'a [u8], place: Place, fields: &mut Fields<'a>, error: &mut Option<WireError>) -> FieldNames<'a> {
    let mut names = FieldNames::default();
    for pair in raw_pairs(text) {
        let name = match percent_decode(pair.name) {
            Ok(name) => name,
            Err(e) => {
                error.get_or_insert(WireError::BadPercentEncoding { place, at: pair.offset + e.at, found: e.found });
                continue;
            }
        };
        // Unknown names (a cache-busting `_=...`, say) are ignored, their values unread.
        let index = NAMES.iter().position(|known| known.as_bytes() == &*name);
        names.push(name);
        let Some(index) = index else { continue };
        let value = match percent_decode(pair.value) {
            Ok(value) => value,
            Err(e) => {
                let at = pair.offset + pair.name.len() + 1 + e.at;
                error.get_or_insert(WireError::BadPercentEncoding { place, at, found: e.found });
                continue;
            }
        };
        if let Err(e) = fields.set(index, value, place) {
            error.get_or_insert(e);
        }
    }
    names
}

/// The first five field names of a query string or a form, and whether there were more: what a
/// message says was found when `data` is missing. Kept as they came, and written out only for
/// that message: formatting them for every request was a tenth of a tracking request's
/// allocations (DHAT).
#[derive(Default)]
struct FieldNames<'a> {
    first: [Option<Cow<'a, [u8]>>; 5],
    more: bool,
}

impl<'a> FieldNames<'a> {
    fn push(&mut self, name: Cow<'a, [u8]>) {
        match self.first.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => *slot = Some(name),
            None => self.more = true,
        }
    }

    /// `` `a`, `b`, … ``: each name's first 32 bytes, printable.
    fn describe(&self) -> String {
        let mut names: Vec<String> = self.first.iter().flatten().map(|name| format!("`{}`", printable(&name[..name.len().min(32)]))).collect();
        if self.more {
            names.push("…".to_owned());
        }
        names.join(", ")
    }
}

/// The records of a JSON body.
fn json_body<'a>(request: &WireRequest<'a>, ndjson: bool) -> Result<Payload<'a>, WireError> {
    let body = request.body;
    if ndjson {
        let payload = Payload {
            bytes: Cow::Borrowed(body),
            format: InputFormat::Ndjson,
            framing: Framing::Ndjson,
            carrier: Carrier::JsonBody,
            base64: false,
        };
        return Ok(payload);
    }
    let start = json_start(body).expect("classify found a first byte");
    frame(Cow::Borrowed(body), start, request.route.accepts_ndjson(), Carrier::JsonBody, false)
}

/// Frames JSON text whose first value opens at `start` with `{` or `[`. An array is left to the
/// import path, which reads it and reports its framing errors. An object is scanned to its end:
/// text after it (or an object that does not end) is NDJSON where `ndjson` allows it, else
/// refused.
fn frame(bytes: Cow<'_, [u8]>, start: usize, ndjson: bool, carrier: Carrier, base64: bool) -> Result<Payload<'_>, WireError> {
    let payload = |bytes, format, framing| Ok(Payload { bytes, format, framing, carrier, base64 });
    if bytes[start] == b'[' {
        return payload(bytes, InputFormat::JsonArray, Framing::Array);
    }
    let mut lines = 0;
    let Some(end) = Element::starting_with(b'{').scan(&bytes, start, &mut lines) else {
        // Where NDJSON is read, the record check reports the object cut short, with its line and
        // column, as it reports the framing of an array.
        return if ndjson { payload(bytes, InputFormat::Ndjson, Framing::Ndjson) } else { Err(WireError::UnclosedObject) };
    };
    if let Some(next) = bytes[end..].iter().position(|&b| !is_blank(b)).map(|p| end + p) {
        if ndjson {
            return payload(bytes, InputFormat::Ndjson, Framing::Ndjson);
        }
        let line = 1 + memchr::memchr_iter(b'\n', &bytes[..next]).count() as u64;
        return Err(WireError::MoreThanOneValue { line });
    }
    if memchr::memchr(b'\n', &bytes[start..end]).is_none() {
        return payload(bytes, InputFormat::Ndjson, Framing::Object);
    }
    let text = bytes.strip_prefix(BOM).unwrap_or(&bytes);
    let mut wrapped = Vec::with_capacity(text.len() + 2);
    wrapped.push(b'[');
    wrapped.extend_from_slice(text);
    wrapped.push(b']');
    payload(Cow::Owned(wrapped), InputFormat::JsonArray, Framing::Object)
}

#[cfg(test)]
mod tests;
