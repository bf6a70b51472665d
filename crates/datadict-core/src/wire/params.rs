//! The parameters of an ingestion request (reference: `verbose`, `ip`, `img`, `callback`,
//! `strict`, and `project_id` on `/import`), read from the query string and the form body.
//!
//! **When a parameter is in both, the form body wins** (issue 19). A tracking library builds the
//! body for each request, from the call the application made; a query string is more often fixed
//! once, in the configured endpoint URL or by a proxy, so it states a default and the body the
//! request's own intent. Either place alone is honoured. `data` is different: records in both
//! places are refused ([`WireError::DataTwice`]), since keeping one would drop the other.

use super::answer::check_callback;
use super::form::printable;
use super::{param, Place, WireError};
use std::borrow::Cow;

/// How the answer is written, decided by `img`, `callback` and `verbose` (reference).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AnswerKind {
    /// The text `1` or `0` (reference: the `Received` response).
    #[default]
    Text,
    /// `{"status":1,"error":null}` or `{"status":0,"error":"..."}` (`verbose=1`).
    Verbose,
    /// A 1x1 transparent GIF (`img=1`). It wins over `callback` and `verbose`: a pixel request
    /// comes from an `<img>`, which can show neither.
    Pixel,
    /// `NAME(1)` or, with `verbose=1`, `NAME({"status":1,"error":null})` (`callback=NAME`), the
    /// name checked by [`check_callback`]. An unsafe name makes the answer [`AnswerKind::Verbose`]
    /// instead, so the refusal is plain JSON and the name is never echoed.
    Script { callback: String, verbose: bool },
}

/// The parameters of a request, each read from the query string or the form body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Params {
    pub answer: AnswerKind,
    /// `ip`: `Some(true)` for `ip=1`. Absent is `None`, since the reference gives the routes
    /// different defaults.
    pub ip: Option<bool>,
    /// `strict`: `Some(true)` for `strict=1`; absent is `None` (the route decides the default).
    pub strict: Option<bool>,
    /// `project_id` as written, or why it cannot be used: given twice in one place, or not UTF-8
    /// once decoded. The server parses it after judging the credentials, and answers either
    /// problem before it asks about a project, so that a repeated `project_id` never picks one.
    pub project_id: Option<Result<String, WireError>>,
}

/// The known names in one order; [`Fields`] holds a value for each.
pub(crate) const NAMES: [&str; 7] = [param::DATA, param::VERBOSE, param::IP, param::IMG, param::CALLBACK, param::STRICT, param::PROJECT_ID];
pub(crate) const DATA: usize = 0;
const VERBOSE: usize = 1;
const IP: usize = 2;
const IMG: usize = 3;
const CALLBACK: usize = 4;
const STRICT: usize = 5;
const PROJECT_ID: usize = 6;

/// A decoded value and where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Field<'a> {
    pub value: Cow<'a, [u8]>,
    pub place: Place,
}

/// The known parameters found in a request, after the body-wins rule.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fields<'a> {
    pub values: [Option<Field<'a>>; NAMES.len()],
    /// Where each name was given more than once, if it was (the request is refused, and the
    /// first value kept so that the refusal is written the way the client asked).
    repeated: [Option<Place>; NAMES.len()],
}

impl<'a> Fields<'a> {
    /// Keeps `value` for the known name at `index`, found in `place`. Places are read query
    /// first, body second, so a body value replaces a query one.
    pub fn set(&mut self, index: usize, value: Cow<'a, [u8]>, place: Place) -> Result<(), WireError> {
        match &self.values[index] {
            Some(old) if old.place == place => {
                self.repeated[index] = Some(place);
                return Err(WireError::RepeatedParameter { name: NAMES[index], place });
            }
            Some(_) if index == DATA => return Err(WireError::DataTwice),
            _ => {}
        }
        self.values[index] = Some(Field { value, place });
        Ok(())
    }

    pub fn take_data(&mut self) -> Option<Field<'a>> {
        self.values[DATA].take()
    }

    fn get(&self, index: usize) -> Option<&Field<'a>> {
        self.values[index].as_ref()
    }
}

impl Params {
    /// Reads the parameters from `fields`. Every valid parameter is kept even when another is
    /// wrong, so that the refusal is written the way the client asked; the first error found is
    /// stored in `error` unless one is there already.
    ///
    /// A bad value of a parameter that picks the answer is refused in an answer that says why
    /// (issue 19), as an unsafe `callback` is: a bad `verbose` (`verbose=2`) asked for the verbose
    /// JSON, and gets it; a bad `img` gets it too, since a pixel could not say why. With a safe
    /// `callback`, the script's call carries that JSON.
    pub(crate) fn read(fields: &Fields<'_>, error: &mut Option<WireError>) -> Self {
        let mut flag = |index: usize| {
            let value = &fields.get(index)?.value;
            Some(read_flag(NAMES[index], value).map_err(|e| keep_first(error, e)))
        };
        let (verbose, img) = (flag(VERBOSE), flag(IMG));
        let ip = flag(IP).and_then(Result::ok);
        let strict = flag(STRICT).and_then(Result::ok);
        let verbose = matches!(verbose, Some(Ok(true) | Err(()))) || matches!(img, Some(Err(())));
        let img = matches!(img, Some(Ok(true)));
        let answer = match fields.get(CALLBACK).map(|f| check_callback(&f.value)) {
            Some(Err(e)) => {
                keep_first(error, e.into());
                AnswerKind::Verbose
            }
            _ if img => AnswerKind::Pixel,
            Some(Ok(callback)) => AnswerKind::Script { callback: callback.to_owned(), verbose },
            None if verbose => AnswerKind::Verbose,
            None => AnswerKind::Text,
        };
        let project_id = fields.get(PROJECT_ID).map(|f| {
            if let Some(place) = fields.repeated[PROJECT_ID] {
                // Already the request's error (`read_pairs`).
                return Err(WireError::RepeatedParameter { name: param::PROJECT_ID, place });
            }
            std::str::from_utf8(&f.value).map(str::to_owned).map_err(|_| {
                let e = WireError::NotUtf8 { name: param::PROJECT_ID, place: f.place };
                keep_first(error, e.clone());
                e
            })
        });
        Self { answer, ip, strict, project_id }
    }
}

/// Stores `e` unless an earlier error is stored: the first problem is the one reported.
fn keep_first(error: &mut Option<WireError>, e: WireError) {
    error.get_or_insert(e);
}

/// A `0`/`1` parameter (reference: `minimum: 0, maximum: 1`). An empty value is `0`, as the
/// server has always read `strict=`.
fn read_flag(name: &'static str, value: &[u8]) -> Result<bool, WireError> {
    match value {
        b"" | b"0" => Ok(false),
        b"1" => Ok(true),
        other => Err(WireError::BadFlag { name, value: printable(&other[..other.len().min(32)]) }),
    }
}
