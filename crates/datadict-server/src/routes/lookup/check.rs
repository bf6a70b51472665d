//! The check of a lookup table's CSV: the core's `csv::Reader` reads it a chunk at a time, and
//! every record is checked against the table's rules. The answer is either the rows to store or
//! every problem, each with the index of its record and a message that names its line.
//!
//! The rules: the first record is the header, whose names are not blank and all differ; every
//! other record is a row with as many fields as the header; its first field, the primary key, is
//! not blank and differs from every other row's. An input with no header is refused; one with a
//! header and no rows is an empty table.

use crate::store::lookup::NewRow;
use datadict_core::csv::Reader;
use serde::Serialize;
use std::collections::HashMap;

/// How many problems an answer lists: enough to fix a file by, small enough to read; the count of
/// all of them is told beside.
pub const MAX_LISTED: usize = 1000;

/// How much of the body the reader is fed at a time, so that it holds few parsed records at once.
const CHUNK: usize = 64 * 1024;

/// A table that passed the check: its header and its rows in the order of the CSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<NewRow>,
}

/// One problem: the 0-based index of its record in the CSV (the header is 0, the first row 1; a
/// record is counted once however many lines it spans) and what is wrong, naming the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FailedRow {
    pub index: u64,
    pub message: String,
}

/// Every problem of a CSV: the first [`MAX_LISTED`], and how many there are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems {
    pub listed: Vec<FailedRow>,
    pub total: usize,
}

impl Problems {
    fn push(&mut self, index: u64, message: String) {
        self.total += 1;
        if self.listed.len() < MAX_LISTED {
            self.listed.push(FailedRow { index, message });
        }
    }
}

/// Checks `body` as a lookup table, reading records of at most `max_record_bytes` bytes.
pub fn check_csv(body: &[u8], max_record_bytes: usize) -> Result<Table, Problems> {
    let mut check = Check::default();
    let mut reader = Reader::with_budget(max_record_bytes);
    for chunk in body.chunks(CHUNK) {
        reader.feed(chunk);
        check.records(&mut reader);
    }
    reader.finish();
    check.records(&mut reader);
    check.finish()
}

#[derive(Debug, Default)]
struct Check {
    /// Records seen so far, the header included.
    records: u64,
    /// How many fields a row has: the header's count once it is read, `None` before or if it
    /// cannot be read.
    width: Option<usize>,
    columns: Vec<String>,
    /// The line of each primary key seen, to name the first row of a duplicate.
    keys: HashMap<String, u64>,
    /// The rows to store, until the first problem (after it nothing is stored, so nothing is kept).
    rows: Vec<NewRow>,
    problems: Problems,
}

impl Check {
    fn records(&mut self, reader: &mut Reader) {
        for record in reader.by_ref() {
            let index = self.records;
            self.records += 1;
            match record {
                Err(e) => self.problem(index, e.to_string()),
                Ok(r) if index == 0 => self.header(r.line, r.fields),
                Ok(r) => self.row(index, r.line, r.fields),
            }
        }
    }

    fn problem(&mut self, index: u64, message: String) {
        self.problems.push(index, message);
        self.rows = Vec::new();
    }

    fn header(&mut self, line: u64, fields: Vec<String>) {
        self.width = Some(fields.len());
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut problems = Vec::new();
        for (i, name) in fields.iter().enumerate() {
            if name.trim().is_empty() {
                problems.push(format!(
                    "line {line}: column {} of the header has no name; name every column (the first names the primary key)",
                    i + 1
                ));
            } else if let Some(first) = seen.insert(name, i) {
                problems.push(format!(
                    "line {line}: the header names columns {} and {} both `{}`; give every column its own name",
                    first + 1,
                    i + 1,
                    shown(name)
                ));
            }
        }
        for p in problems {
            self.problem(0, p);
        }
        self.columns = fields;
    }

    fn row(&mut self, index: u64, line: u64, fields: Vec<String>) {
        let mut ok = true;
        if let Some(width) = self.width.filter(|w| *w != fields.len()) {
            ok = false;
            self.problem(
                index,
                format!(
                    "line {line}: invalid row: wrong number of fields ({} where the header has {width}); give every row one field per column, and put a value that holds a comma between double quotes",
                    fields.len()
                ),
            );
        }
        let key = &fields[0];
        if key.trim().is_empty() {
            let column = self.columns.first().map(|c| format!(" (`{}`)", shown(c))).unwrap_or_default();
            self.problem(
                index,
                format!("line {line}: primary key is required and cannot be blank; give the row a value in the first column{column}"),
            );
            return;
        }
        if let Some(first) = self.keys.get(key.as_str()) {
            self.problem(
                index,
                format!("line {line}: the primary key `{}` is already the key of the row on line {first}; give every row its own key", shown(key)),
            );
            return;
        }
        self.keys.insert(key.clone(), line);
        if ok && self.problems.total == 0 {
            let record = serde_json::to_string(&fields).expect("a list of strings is always JSON");
            self.rows.push(NewRow { key: key.clone(), record });
        }
    }

    fn finish(self) -> Result<Table, Problems> {
        let mut problems = self.problems;
        if self.records == 0 {
            problems.push(
                0,
                "the CSV is empty; send a header row (the first column names the primary key), then one row per entry".into(),
            );
        }
        if problems.total > 0 {
            return Err(problems);
        }
        Ok(Table { columns: self.columns, rows: self.rows })
    }
}

/// A name or key as a message shows it: at most 60 characters, so that one long value does not
/// fill the answer.
fn shown(text: &str) -> String {
    const MAX: usize = 60;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
