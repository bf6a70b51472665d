//! Checking a whole import request body (spec §4.4, rules from FACTS.md): its size, its framing
//! and record count, and every record, producing the strict-mode `failed_records`. A JSON array is
//! read in one pass (records found by checking them, framing and count known at its end); other
//! bodies are split first.

use crate::api::{failed_records, FailedRecord, ImportResponse};
use crate::event::{check_event_at, check_event_text_with_rules, check_event_walk, check_event_with_rules, EventCheck, EventRules};
use crate::limits::Limits;
use crate::split::{is_blank, split_body, BodyRecord, Element, InputFormat, RecordPos, SplitError, BOM};

/// Why a request body is refused as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportBodyError {
    /// FACTS.md: at most 10 MB of uncompressed JSON per request (answer 413).
    #[error("the request body is {bytes} bytes of JSON; send at most {max} bytes per request")]
    TooLarge { bytes: usize, max: usize },
    /// FACTS.md: at most 2,000 events per request (answer 413).
    #[error("the request holds {count} events; send at most {max} events per request")]
    TooManyRecords { count: usize, max: usize },
    /// The body is neither NDJSON nor a JSON array (answer 400).
    #[error(transparent)]
    Framing(#[from] SplitError),
}

impl ImportBodyError {
    /// The HTTP status this error is answered with.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::TooLarge { .. } | Self::TooManyRecords { .. } => 413,
            Self::Framing(_) => 400,
        }
    }

    /// The import's error body for this error.
    pub fn response(&self) -> ImportResponse {
        match self.status_code() {
            413 => ImportResponse::payload_too_large(self.to_string()),
            _ => ImportResponse::bad_request(self.to_string()),
        }
    }
}

/// One record of a checked body.
#[derive(Debug, Clone)]
pub struct CheckedRecord<'a> {
    pub record: BodyRecord,
    pub check: EventCheck<'a>,
    /// The record as text, when it is UTF-8 (every valid record is): validated once, here.
    pub text: Option<&'a str>,
}

/// The result of [`check_import_body`].
#[derive(Debug, Clone)]
pub struct ImportBodyCheck<'a> {
    /// Every record in body order, with its check.
    pub records: Vec<CheckedRecord<'a>>,
    /// One entry per issue of every invalid record, `index` being the record's position.
    pub failed_records: Vec<FailedRecord>,
    /// How many records passed every rule.
    pub valid: usize,
}

impl ImportBodyCheck<'_> {
    /// The strict-mode answer (FACTS.md): 200 when all records are valid, else 400 listing the
    /// failures while counting the valid records as imported.
    pub fn response(&self) -> ImportResponse {
        if self.failed_records.is_empty() {
            ImportResponse::ok(self.valid as u64)
        } else {
            ImportResponse::validation_failed(self.failed_records.clone(), self.valid as u64)
        }
    }
}

/// Checks an uncompressed import body: its size, its framing, its record count, then every
/// record with [`check_event`](crate::check_event) (the import's rules). `now_ms` is the
/// receiver's clock.
pub fn check_import_body<'a>(body: &'a [u8], format: InputFormat, limits: &Limits, now_ms: i64) -> Result<ImportBodyCheck<'a>, ImportBodyError> {
    check_import_body_with_rules(body, format, &EventRules::IMPORT, limits, now_ms)
}

/// [`check_import_body`] under `rules` (the import's, or `/track`'s).
pub fn check_import_body_with_rules<'a>(
    body: &'a [u8],
    format: InputFormat,
    rules: &EventRules,
    limits: &Limits,
    now_ms: i64,
) -> Result<ImportBodyCheck<'a>, ImportBodyError> {
    let mut records = check_import_records(body, format, rules, limits, now_ms)?;
    let checked = records.by_ref().collect::<Result<Vec<CheckedRecord<'a>>, _>>()?;
    Ok(ImportBodyCheck { records: checked, failed_records: records.failed_records, valid: records.valid })
}

/// [`check_import_body`] one record at a time, under `rules` (the import's, or `/track`'s), so
/// that a caller can act on the first records (store them, say) while the rest are checked. After the last record,
/// [`ImportRecords::failed_records`] and [`ImportRecords::valid`] hold what [`ImportBodyCheck`]
/// would.
///
/// The size is checked when this returns. A JSON array (the common body) is read once: each
/// element is found by checking it, as the check's scanner reads a record to its closing brace,
/// instead of splitting the whole body first and reading every record a second time. Its framing
/// and its record count are therefore known only at its end: a framing error, or one record over
/// the limit, is yielded as an `Err` when the iterator reaches it, after which it ends. A caller
/// that stored records must then discard them, as the body is refused as a whole. Other bodies
/// (NDJSON, or an array that is not UTF-8) are split first, and their framing errors and record
/// count are checked when this returns.
pub fn check_import_records<'a, 'l>(
    body: &'a [u8],
    format: InputFormat,
    rules: &EventRules,
    limits: &'l Limits,
    now_ms: i64,
) -> Result<ImportRecords<'a, 'l>, ImportBodyError> {
    if body.len() > limits.max_request_bytes {
        return Err(ImportBodyError::TooLarge { bytes: body.len(), max: limits.max_request_bytes });
    }
    let source = match ArrayWalk::start(body, format) {
        Some(walk) => Source::Array(walk),
        None => Source::Split(split_checked(body, format, limits, 0)?),
    };
    Ok(ImportRecords { body, format, rules: *rules, limits, now_ms, source, failed_records: Vec::new(), valid: 0 })
}

/// The records of `body` split up front, once its framing and record count are checked, less the
/// first `skip` (already handed out).
fn split_checked(body: &[u8], format: InputFormat, limits: &Limits, skip: usize) -> Result<SplitRecords, ImportBodyError> {
    let split = split_body(body, format)?;
    if split.len() > limits.max_events_per_request {
        return Err(ImportBodyError::TooManyRecords { count: split.len(), max: limits.max_events_per_request });
    }
    let mut records = split.into_iter();
    if skip > 0 {
        records.nth(skip - 1);
    }
    Ok(records)
}

type SplitRecords = std::vec::IntoIter<BodyRecord>;

/// The records of a body in order, each checked as it is reached: see [`check_import_records`].
#[derive(Debug)]
pub struct ImportRecords<'a, 'l> {
    body: &'a [u8],
    format: InputFormat,
    rules: EventRules,
    /// Borrowed: a copy's strings (the forbidden ids) cost a tracking request more than its check.
    limits: &'l Limits,
    now_ms: i64,
    source: Source<'a>,
    /// One entry per issue of every invalid record reached so far.
    pub failed_records: Vec<FailedRecord>,
    /// How many records reached so far passed every rule.
    pub valid: usize,
}

/// Where [`ImportRecords`] finds its records.
#[derive(Debug)]
enum Source<'a> {
    /// Split up front.
    Split(SplitRecords),
    /// Found while checking them.
    Array(ArrayWalk<'a>),
    /// After the last record, or after an error.
    Done,
}

impl<'a> Iterator for ImportRecords<'a, '_> {
    type Item = Result<CheckedRecord<'a>, ImportBodyError>;

    fn next(&mut self) -> Option<Self::Item> {
        let checked = match &mut self.source {
            Source::Done => return None,
            Source::Split(split) => {
                let Some(record) = split.next() else {
                    self.source = Source::Done;
                    return None;
                };
                let bytes = &self.body[record.range.clone()];
                let (check, text) = match std::str::from_utf8(bytes) {
                    Ok(text) => (check_event_text_with_rules(text, &self.rules, self.limits, self.now_ms), Some(text)),
                    Err(_) => (check_event_with_rules(bytes, &self.rules, self.limits, self.now_ms), None),
                };
                CheckedRecord { record, check, text }
            }
            Source::Array(walk) => match walk.step(&self.rules, self.limits, self.now_ms) {
                Step::Record(checked) => checked,
                Step::End => {
                    self.source = Source::Done;
                    return None;
                }
                Step::Irregular => {
                    // The splitter is the authority on framing: it gives the exact error, or
                    // (one record over the limit) the count.
                    match split_checked(self.body, self.format, self.limits, walk.index) {
                        Ok(rest) => self.source = Source::Split(rest),
                        Err(e) => {
                            self.source = Source::Done;
                            return Some(Err(e));
                        }
                    }
                    return self.next();
                }
            },
        };
        if checked.check.is_valid() {
            self.valid += 1;
        } else {
            self.failed_records.extend(failed_records(checked.record.pos.index as usize, &checked.check));
        }
        Some(Ok(checked))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.source {
            Source::Split(split) => split.size_hint(),
            Source::Array(_) => (0, None),
            Source::Done => (0, Some(0)),
        }
    }
}

/// A JSON array body read one element at a time, each element found and checked in one pass (see
/// [`check_import_records`]). It follows well-formed arrays only: at anything else (a framing
/// error, one record over the limit) it reports [`Step::Irregular`], and the body goes to
/// [`split_body`], which finds the same records and gives the exact error.
#[derive(Debug)]
struct ArrayWalk<'a> {
    /// The whole body, including any byte-order mark.
    bytes: &'a [u8],
    /// The same, validated as UTF-8 once (once the body is known to be an array).
    text: &'a str,
    /// Where reading resumes: after the `[`, or after the last element handed out.
    at: usize,
    /// The number of elements handed out.
    index: usize,
    /// The line at `at`, 1-based.
    line: u64,
    /// Whether the body has a newline at all: most arrays are written on one line, and their
    /// records need not be searched for one.
    newlines: bool,
}

/// What [`ArrayWalk::step`] found. Returned by value once per record: boxing the large variant
/// would allocate once per record.
#[allow(clippy::large_enum_variant)]
enum Step<'a> {
    Record(CheckedRecord<'a>),
    End,
    Irregular,
}

impl<'a> ArrayWalk<'a> {
    /// A walk when `body` is UTF-8 text whose first non-blank byte is `[` (and `format` allows an
    /// array), with the cursor after the `[`.
    fn start(body: &'a [u8], format: InputFormat) -> Option<Self> {
        if format == InputFormat::Ndjson {
            return None;
        }
        let at = if body.starts_with(BOM) { BOM.len() } else { 0 };
        let mut walk = Self { bytes: body, text: "", at, index: 0, line: 1, newlines: false };
        // The array's `[` is looked for before the body is validated: NDJSON is not validated here.
        walk.skip_blank();
        if walk.byte() != Some(b'[') {
            return None;
        }
        walk.text = std::str::from_utf8(body).ok()?;
        walk.newlines = memchr::memchr(b'\n', body).is_some();
        walk.at += 1;
        Some(walk)
    }

    fn byte(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_blank(&mut self) {
        while let Some(b) = self.byte().filter(|&b| is_blank(b)) {
            self.line += u64::from(b == b'\n');
            self.at += 1;
        }
    }

    /// The next element, with its check; or the end of a well-formed array.
    fn step(&mut self, rules: &EventRules, limits: &Limits, now_ms: i64) -> Step<'a> {
        self.skip_blank();
        let first = match (self.index, self.byte()) {
            (0, Some(b']')) => return self.close(),
            (0, first) => first,
            (_, Some(b',')) => {
                self.at += 1;
                self.skip_blank();
                self.byte()
            }
            (_, Some(b']')) => return self.close(),
            _ => return Step::Irregular,
        };
        // A `,` or `]` where an element should be, the end of the body, or one record too many.
        let Some(first) = first.filter(|b| !matches!(b, b',' | b']')) else { return Step::Irregular };
        if self.index >= limits.max_events_per_request {
            return Step::Irregular;
        }
        let (start, line) = (self.at, self.line);
        let bytes = self.bytes;
        let (check, end) = match check_event_at(self.text, start, rules, limits, now_ms) {
            Some((check, end)) => {
                // The scanner gives up on a control character inside a string, so every newline
                // of the record is between values, where the splitter counts them too.
                if self.newlines {
                    self.line += memchr::memchr_iter(b'\n', &bytes[start..end]).count() as u64;
                }
                (check, end)
            }
            None => {
                let Some(end) = Element::starting_with(first).scan(bytes, start, &mut self.line) else { return Step::Irregular };
                // `start` follows ASCII and `end` is at or after an ASCII delimiter: both are
                // character boundaries.
                (check_event_walk(&self.text[start..end], rules, limits, now_ms), end)
            }
        };
        let record = BodyRecord { pos: RecordPos { index: self.index as u64, line }, range: start..end, oversized: None };
        self.at = end;
        self.index += 1;
        Step::Record(CheckedRecord { record, check, text: Some(&self.text[start..end]) })
    }

    /// After the closing `]`: the end, when only blanks follow.
    fn close(&mut self) -> Step<'a> {
        self.at += 1;
        self.skip_blank();
        if self.at == self.bytes.len() {
            Step::End
        } else {
            Step::Irregular
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::check_event;

    const NOW: i64 = 1_767_225_600_000;

    fn event(id: &str, time: i64) -> String {
        format!(r#"{{"event":"e","properties":{{"time":{time},"distinct_id":"u","$insert_id":"{id}"}}}}"#)
    }

    #[test]
    fn partial_failures_keep_their_index() {
        let body = format!("[{},{},{}]", event("a", 1_767_225_600), event("b", 0), event("c", 1_767_225_600));
        let checked = check_import_body(body.as_bytes(), InputFormat::Auto, &Limits::default(), NOW).unwrap();
        assert_eq!(checked.valid, 2);
        assert_eq!(checked.failed_records.len(), 1);
        assert_eq!((checked.failed_records[0].index, checked.failed_records[0].insert_id.as_str()), (1, "b"));
        let response = checked.response();
        assert_eq!((response.code, response.num_records_imported), (400, Some(2)));
        assert_eq!(checked.records[2].check.insert_id.as_deref(), Some("c"));
    }

    /// One record at a time gives what the whole-body check gives; for NDJSON, request-level
    /// refusals come before any record.
    #[test]
    fn records_one_at_a_time_match_the_whole_body_check() {
        let body = format!("{}\n{}\nnot json\n{}", event("a", 1_767_225_600), event("b", 0), event("c", 1_767_225_600));
        let whole = check_import_body(body.as_bytes(), InputFormat::Ndjson, &Limits::default(), NOW).unwrap();
        let limits = Limits::default();
        let mut records = check_import_records(body.as_bytes(), InputFormat::Ndjson, &EventRules::IMPORT, &limits, NOW).unwrap();
        assert_eq!(records.size_hint(), (4, Some(4)));
        let first = records.next().unwrap().unwrap();
        assert!(first.check.is_valid());
        assert_eq!((records.size_hint().0, records.valid, records.failed_records.len()), (3, 1, 0));
        let rest: Vec<_> = records.by_ref().map(Result::unwrap).collect();
        assert_eq!(rest.len(), 3);
        assert_eq!(records.valid, whole.valid);
        assert_eq!(records.failed_records, whole.failed_records);
        assert_eq!(records.failed_records.iter().map(|f| f.index).collect::<Vec<_>>(), [1, 2]);
        let limits = Limits { max_events_per_request: 3, ..Limits::default() };
        let err = check_import_records(body.as_bytes(), InputFormat::Ndjson, &EventRules::IMPORT, &limits, NOW).unwrap_err();
        assert_eq!(err, ImportBodyError::TooManyRecords { count: 4, max: 3 });
    }

    /// Each record's text is kept when it is UTF-8, and its check is what `check_event` gives.
    #[test]
    fn records_keep_their_text_when_it_is_utf8() {
        let mut body = format!("{}\n", event("a", 1_767_225_600)).into_bytes();
        body.extend_from_slice(b"{\"event\":\"\xff\"}\n");
        body.extend_from_slice(event("b", 0).as_bytes());
        let records: Vec<_> = check_import_records(&body, InputFormat::Ndjson, &EventRules::IMPORT, &Limits::default(), NOW).unwrap().map(Result::unwrap).collect();
        let texts: Vec<Option<&str>> = records.iter().map(|r| r.text).collect();
        assert_eq!(texts, [Some(event("a", 1_767_225_600).as_str()), None, Some(event("b", 0).as_str())]);
        for r in &records {
            let alone = check_event(&body[r.record.range.clone()], &Limits::default(), NOW);
            assert_eq!((r.check.is_valid(), &r.check.issues), (alone.is_valid(), &alone.issues));
        }
        assert_eq!(records[1].check.issues[0].code, crate::IssueCode::InvalidJson);
    }

    #[test]
    fn request_limits_come_first() {
        let limits = Limits { max_events_per_request: 2, max_request_bytes: 400, ..Limits::default() };
        let three = [event("a", 1), event("b", 1), event("c", 1)].join("\n");
        let err = check_import_body(three.as_bytes(), InputFormat::Ndjson, &limits, NOW).unwrap_err();
        assert_eq!(err, ImportBodyError::TooManyRecords { count: 3, max: 2 });
        assert_eq!(err.response().code, 413);
        let big = " ".repeat(401);
        let err = check_import_body(big.as_bytes(), InputFormat::Ndjson, &limits, NOW).unwrap_err();
        assert_eq!(err.status_code(), 413);
        let err = check_import_body(b"[{}", InputFormat::Auto, &limits, NOW).unwrap_err();
        assert_eq!(err.status_code(), 400);
        assert_eq!(check_import_body(b"[]", InputFormat::Auto, &limits, NOW).unwrap().response(), ImportResponse::ok(0));
    }
}
