//! The import's report: one row per problem with the input line where its record starts (left
//! out by the check, refused by the server, or in a batch that was not imported), and the report
//! as CSV and JSON for download.

use datadict_core::request::FailedInput;
use datadict_core::{Failed, Rejected};
use std::collections::BTreeMap;
use std::rc::Rc;

/// One line of the final report.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRow {
    /// The 1-based input line where the record starts.
    pub line: u64,
    /// The record's ordinal in the input (0-based).
    pub index: u64,
    /// `check` (left out before sending), `server` (in `failed_records`), or `batch` (a whole
    /// request that did not succeed; resume sends it again).
    pub source: &'static str,
    pub field: String,
    pub message: String,
}

/// Where a record starts, as the page says it: its line, and its record number too when the line
/// alone does not name it (a one-line JSON array holds every record on line 1).
pub fn position(line: u64, index: u64) -> String {
    if line == index + 1 {
        line.to_string()
    } else {
        format!("{line} (record {})", index + 1)
    }
}

/// A JSON parse error's position made the file's: the check reads each record alone, so its
/// `at line X column Y` counts from the record's start, on line `line` of the file.
fn in_file(message: &str, line: u64, index: u64) -> String {
    let Some(at) = message.rfind(" at line ") else { return message.to_owned() };
    let mut words = message[at + 9..].split(" column ");
    let (Some(Ok(x)), Some(Ok(y))) = (words.next().map(str::parse::<u64>), words.next().map(str::parse::<u64>)) else {
        return message.to_owned();
    };
    let place = if x > 1 {
        format!("at line {} column {y} of the file", line + x - 1)
    } else {
        format!("at character {y} of record {}, which starts on line {line}", index + 1)
    };
    format!("{} {place}", &message[..at])
}

/// The report so far, in input order: the check's rows (keyed by record index and the problem's
/// place among the record's, so a resumed run does not list a record twice) and the server's.
pub(super) fn report_of(local: &BTreeMap<(u64, usize), ReportRow>, server: &[ReportRow]) -> Rc<Vec<ReportRow>> {
    let mut rows: Vec<ReportRow> = local.values().cloned().chain(server.iter().cloned()).collect();
    datadict_core::order::sort_by(&mut rows, &|a, b| (a.line, a.index).cmp(&(b.line, b.index)));
    Rc::new(rows)
}

/// The rows of a record the check left out: one per problem, so that every problem is listed and
/// the report counts what the summary's tables count.
pub(super) fn rejected_rows(r: &Rejected) -> impl Iterator<Item = ReportRow> + '_ {
    r.issues.iter().map(|i| ReportRow {
        line: r.pos.line,
        index: r.pos.index,
        source: "check",
        field: i.path.clone(),
        message: if i.code == datadict_core::IssueCode::InvalidJson { in_file(&i.message, r.pos.line, r.pos.index) } else { i.message.clone() },
    })
}

/// A record the server refused (an entry of a 400's `failed_records`).
pub(super) fn refused_row(f: &FailedInput) -> ReportRow {
    let pos = f.pos.unwrap_or_default();
    ReportRow { line: pos.line, index: pos.index, source: "server", field: f.failure.field.clone(), message: f.failure.message.clone() }
}

/// A batch that was not imported, at its first record's line; resume sends it again.
pub(super) fn failed_batch_row(f: &Failed, records: impl Fn(u64) -> String) -> ReportRow {
    ReportRow {
        line: f.first.line,
        index: f.first.index,
        source: "batch",
        field: String::new(),
        message: format!(
            "batch {} (lines {}–{}, {}) was not imported: {}. Resume sends it again",
            f.sequence + 1,
            f.first.line,
            f.last.line,
            records(f.records as u64),
            f.message
        ),
    }
}

/// The report as CSV (the core's writer): one row per problem, with the input line first.
pub fn report_csv(rows: &[ReportRow]) -> String {
    let mut out = String::new();
    datadict_core::csv::push_record(&mut out, ["line", "index", "source", "field", "message"]);
    for r in rows {
        let (line, index) = (r.line.to_string(), r.index.to_string());
        datadict_core::csv::push_record(&mut out, [line.as_str(), index.as_str(), r.source, &r.field, &r.message]);
    }
    out
}

/// The report as JSON: an array of `{line, index, source, field, message}`.
pub fn report_json(rows: &[ReportRow]) -> String {
    let json: Vec<serde_json::Value> =
        rows.iter().map(|r| serde_json::json!({"line": r.line, "index": r.index, "source": r.source, "field": r.field, "message": r.message})).collect();
    // Printed as one `Value`, the type every pretty-printed JSON of the app goes through, so the
    // wasm keeps one copy of the pretty printer.
    serde_json::to_string_pretty(&serde_json::Value::Array(json)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn positions_name_the_record_and_the_file_line() {
        assert_eq!(position(3, 2), "3");
        assert_eq!(position(1, 7), "1 (record 8)");
        assert_eq!(in_file("expected value at line 7 column 12", 390, 30), "expected value at line 396 column 12 of the file");
        assert_eq!(in_file("expected value at line 1 column 141", 1, 11), "expected value at character 141 of record 12, which starts on line 1");
        assert_eq!(in_file("no position here", 1, 0), "no position here");
    }

    #[wasm_bindgen_test]
    fn the_report_csv_quotes_what_needs_quoting() {
        let rows = [ReportRow { line: 3, index: 2, source: "server", field: "properties.time".into(), message: "bad, \"very\"".into() }];
        assert_eq!(report_csv(&rows), "line,index,source,field,message\n3,2,server,properties.time,\"bad, \"\"very\"\"\"\n");
    }
}
