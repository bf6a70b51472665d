//! Checking a whole import request body (spec §4.4, rules from FACTS.md): request-level limits
//! first (bytes, record count), then every record, producing the strict-mode `failed_records`.

use crate::api::{failed_records, FailedRecord, ImportResponse};
use crate::event::{check_event, check_event_text, EventCheck};
use crate::limits::Limits;
use crate::split::{split_body, BodyRecord, InputFormat, SplitError};

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
/// record with [`check_event`]. `now_ms` is the receiver's clock.
pub fn check_import_body<'a>(body: &'a [u8], format: InputFormat, limits: &Limits, now_ms: i64) -> Result<ImportBodyCheck<'a>, ImportBodyError> {
    let mut records = check_import_records(body, format, limits, now_ms)?;
    let checked: Vec<CheckedRecord<'a>> = records.by_ref().collect();
    Ok(ImportBodyCheck { records: checked, failed_records: records.failed_records, valid: records.valid })
}

/// [`check_import_body`] one record at a time: the request-level checks (size, framing, record
/// count) are done when this returns, and each record is checked when the iterator reaches it,
/// so that a caller can act on the first records (store them, say) while the rest are checked.
/// After the last record, [`ImportRecords::failed_records`] and [`ImportRecords::valid`] hold
/// what [`ImportBodyCheck`] would.
pub fn check_import_records<'a>(body: &'a [u8], format: InputFormat, limits: &Limits, now_ms: i64) -> Result<ImportRecords<'a>, ImportBodyError> {
    if body.len() > limits.max_request_bytes {
        return Err(ImportBodyError::TooLarge { bytes: body.len(), max: limits.max_request_bytes });
    }
    let split = split_body(body, format)?;
    if split.len() > limits.max_events_per_request {
        return Err(ImportBodyError::TooManyRecords { count: split.len(), max: limits.max_events_per_request });
    }
    Ok(ImportRecords { body, limits: limits.clone(), now_ms, split: split.into_iter().enumerate(), failed_records: Vec::new(), valid: 0 })
}

/// The records of a body in order, each checked as it is reached: see [`check_import_records`].
#[derive(Debug)]
pub struct ImportRecords<'a> {
    body: &'a [u8],
    limits: Limits,
    now_ms: i64,
    split: std::iter::Enumerate<std::vec::IntoIter<BodyRecord>>,
    /// One entry per issue of every invalid record reached so far.
    pub failed_records: Vec<FailedRecord>,
    /// How many records reached so far passed every rule.
    pub valid: usize,
}

impl ImportRecords<'_> {
    /// How many records are left to check.
    pub fn remaining(&self) -> usize {
        self.split.len()
    }
}

impl<'a> Iterator for ImportRecords<'a> {
    type Item = CheckedRecord<'a>;

    fn next(&mut self) -> Option<CheckedRecord<'a>> {
        let (i, record) = self.split.next()?;
        let bytes = &self.body[record.range.clone()];
        let (check, text) = match std::str::from_utf8(bytes) {
            Ok(text) => (check_event_text(text, &self.limits, self.now_ms), Some(text)),
            Err(_) => (check_event(bytes, &self.limits, self.now_ms), None),
        };
        if check.is_valid() {
            self.valid += 1;
        } else {
            self.failed_records.extend(failed_records(i, &check));
        }
        Some(CheckedRecord { record, check, text })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.split.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// One record at a time gives what the whole-body check gives, and request-level refusals
    /// come before any record.
    #[test]
    fn records_one_at_a_time_match_the_whole_body_check() {
        let body = format!("{}\n{}\nnot json\n{}", event("a", 1_767_225_600), event("b", 0), event("c", 1_767_225_600));
        let whole = check_import_body(body.as_bytes(), InputFormat::Ndjson, &Limits::default(), NOW).unwrap();
        let mut records = check_import_records(body.as_bytes(), InputFormat::Ndjson, &Limits::default(), NOW).unwrap();
        assert_eq!(records.remaining(), 4);
        let first = records.next().unwrap();
        assert!(first.check.is_valid());
        assert_eq!((records.remaining(), records.valid, records.failed_records.len()), (3, 1, 0));
        let rest: Vec<_> = records.by_ref().collect();
        assert_eq!(rest.len(), 3);
        assert_eq!(records.valid, whole.valid);
        assert_eq!(records.failed_records, whole.failed_records);
        assert_eq!(records.failed_records.iter().map(|f| f.index).collect::<Vec<_>>(), [1, 2]);
        let limits = Limits { max_events_per_request: 3, ..Limits::default() };
        let err = check_import_records(body.as_bytes(), InputFormat::Ndjson, &limits, NOW).unwrap_err();
        assert_eq!(err, ImportBodyError::TooManyRecords { count: 4, max: 3 });
    }

    /// Each record's text is kept when it is UTF-8, and its check is what `check_event` gives.
    #[test]
    fn records_keep_their_text_when_it_is_utf8() {
        let mut body = format!("{}\n", event("a", 1_767_225_600)).into_bytes();
        body.extend_from_slice(b"{\"event\":\"\xff\"}\n");
        body.extend_from_slice(event("b", 0).as_bytes());
        let records: Vec<_> = check_import_records(&body, InputFormat::Ndjson, &Limits::default(), NOW).unwrap().collect();
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
