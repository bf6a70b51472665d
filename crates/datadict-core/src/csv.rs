//! CSV (RFC 4180) in one place, for dictionary files, warehouse files and import reports: a writer
//! that quotes what needs quoting, and a reader that takes a whole text or input in chunks split
//! anywhere, names the line of every record and of every problem, and keeps at most one record of
//! a bounded size in memory.
//!
//! The dialect: fields are separated by commas and records end with `\n` or `\r\n`; a field that
//! holds a comma, a quote or a line break is written between double quotes, with each quote inside
//! doubled. A quote opens a quoted field only at the start of a field; elsewhere it is text, kept
//! as written. Text between a closing quote and the next comma or line end is refused
//! ([`CsvError::AfterQuote`]) rather than joined to the field: `"x"y` has no reading that keeps
//! what its writer meant, and RFC 4180 does not allow it. Empty lines between records are skipped, and a
//! UTF-8 byte-order mark at the start of the input is not part of the first field.

use crate::limits::MB;
use std::collections::VecDeque;

/// The largest record the reader keeps by default: the server's largest JSON body, so that no
/// record a face could send in one piece is refused for its size by the CSV layer.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 16 * MB;

/// Appends `field` to `out` as one field: between double quotes, with its quotes doubled, when it
/// holds a comma, a quote or a line break; as it is otherwise.
pub fn push_field(out: &mut String, field: &str) {
    if field.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(field);
    }
}

/// Appends one record to `out`: its fields separated by commas, then `\n`.
///
/// A record of one empty field is written as `""`, because an empty line is no record to a reader.
pub fn push_record<I>(out: &mut String, fields: I)
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let start = out.len();
    for (i, field) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_field(out, field.as_ref());
    }
    if out.len() == start {
        out.push_str("\"\"");
    }
    out.push('\n');
}

/// One record as read: the 1-based line it starts on and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub line: u64,
    pub fields: Vec<String>,
}

/// Why a record cannot be read. Each names a line of the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CsvError {
    /// The input ended inside a quoted field; `line` is where its quote opened.
    #[error("the quoted field that opens on line {line} is not closed; close it with `\"`")]
    Unclosed { line: u64 },
    /// The record is over the reader's budget; its fields were not kept.
    #[error("the record that starts on line {line} is over {limit} bytes; split its values, or close a quote left open before it")]
    TooLarge { line: u64, limit: usize },
    /// Text follows the closing quote of a quoted field, before the next comma or line end.
    #[error("on line {line} a quoted field is followed by text before the next comma; write a quote inside a quoted field as `\"\"`, and quote a field from its first character to its last")]
    AfterQuote { line: u64 },
    /// A field is not valid UTF-8; `line` is where the first bad byte is.
    #[error("line {line} is not UTF-8 text; save the file as UTF-8")]
    NotUtf8 { line: u64 },
}

impl CsvError {
    /// The line the problem is on.
    pub fn line(&self) -> u64 {
        match *self {
            Self::Unclosed { line } | Self::TooLarge { line, .. } | Self::AfterQuote { line } | Self::NotUtf8 { line } => line,
        }
    }
}

/// Reads a whole text: every record, or the first problem.
pub fn parse(text: &str) -> Result<Vec<Record>, CsvError> {
    let mut reader = Reader::default();
    reader.feed(text.as_bytes());
    reader.finish();
    reader.collect()
}

/// Where the reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between records (at the start of a line).
    Between,
    /// In a field that is not quoted.
    Field,
    /// Inside a quoted field.
    Quoted,
    /// Just after a quote inside a quoted field: a second quote is a quote, anything else
    /// closes the field.
    QuoteSeen,
}

const BOM: &[u8] = "\u{feff}".as_bytes();

/// A streaming reader: [`feed`](Self::feed) it bytes in chunks split anywhere, call
/// [`finish`](Self::finish) at the end of the input, and take the records as an iterator
/// between calls. It holds at most one record, and a record over its budget is answered
/// [`CsvError::TooLarge`] without being kept; reading goes on after it, and after a field that is
/// not UTF-8, at the next record.
#[derive(Debug)]
pub struct Reader {
    max_record_bytes: usize,
    state: State,
    /// How many bytes of a byte-order mark the input started with so far; `None` once decided.
    bom_seen: Option<usize>,
    /// A `\r` outside quotes at the end of the last chunk: a line end if a `\n` follows.
    pending_cr: bool,
    /// The 1-based line of the next byte.
    line: u64,
    record_line: u64,
    field_line: u64,
    quote_line: u64,
    fields: Vec<String>,
    field: Vec<u8>,
    /// Bytes of the current field, counted even once they are no longer kept.
    field_bytes: usize,
    record_bytes: usize,
    error: Option<CsvError>,
    ready: VecDeque<Result<Record, CsvError>>,
}

impl Default for Reader {
    fn default() -> Self {
        Self::with_budget(DEFAULT_MAX_RECORD_BYTES)
    }
}

impl Iterator for Reader {
    type Item = Result<Record, CsvError>;

    /// The next record read so far, or `None` until more input is fed.
    fn next(&mut self) -> Option<Self::Item> {
        self.ready.pop_front()
    }
}

impl Reader {
    /// A reader that refuses records of more than `max_record_bytes` bytes (separators and
    /// quotes included).
    pub fn with_budget(max_record_bytes: usize) -> Self {
        Self {
            max_record_bytes,
            state: State::Between,
            bom_seen: Some(0),
            pending_cr: false,
            line: 1,
            record_line: 1,
            field_line: 1,
            quote_line: 1,
            fields: Vec::new(),
            field: Vec::new(),
            field_bytes: 0,
            record_bytes: 0,
            error: None,
            ready: VecDeque::new(),
        }
    }

    /// Reads the next chunk of input. The records it completes are then available as an iterator.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        if let Some(seen) = self.bom_seen {
            let take = (BOM.len() - seen).min(chunk.len());
            if chunk[..take] == BOM[seen..seen + take] {
                if seen + take < BOM.len() {
                    // The chunk ended inside what may still be a byte-order mark.
                    self.bom_seen = Some(seen + take);
                    return;
                }
                chunk = &chunk[take..];
            } else {
                // Not a byte-order mark after all: what looked like one is text.
                self.read(&BOM[..seen]);
            }
            self.bom_seen = None;
        }
        self.read(chunk);
    }

    /// Ends the input: completes the last record, or reports a quoted field left open.
    pub fn finish(&mut self) {
        if let Some(seen) = self.bom_seen.take() {
            self.read(&BOM[..seen]);
        }
        // A `\r` at the very end is the end of the last line, as `\r\n` would be.
        self.pending_cr = false;
        match self.state {
            State::Between => {}
            State::Field | State::QuoteSeen => self.end_record(),
            State::Quoted => {
                self.ready.push_back(Err(CsvError::Unclosed { line: self.quote_line }));
                self.clear_record();
            }
        }
        self.state = State::Between;
    }

    fn read(&mut self, input: &[u8]) {
        let mut i = 0;
        if self.pending_cr && !input.is_empty() {
            self.pending_cr = false;
            if input[0] == b'\n' {
                i = 1;
                self.end_line();
            } else {
                self.start_record();
                self.append(b"\r");
            }
        }
        while i < input.len() {
            match self.state {
                State::Between | State::Field => {
                    let start = i;
                    while i < input.len() && !matches!(input[i], b',' | b'"' | b'\n' | b'\r') {
                        i += 1;
                    }
                    if i > start {
                        self.start_record();
                        self.append(&input[start..i]);
                    }
                    let Some(&b) = input.get(i) else { break };
                    i += 1;
                    match b {
                        b'\n' => self.end_line(),
                        b'\r' => match input.get(i) {
                            Some(b'\n') => {
                                i += 1;
                                self.end_line();
                            }
                            Some(_) => {
                                self.start_record();
                                self.append(b"\r");
                            }
                            None => self.pending_cr = true,
                        },
                        b',' => {
                            self.start_record();
                            self.end_field();
                            self.charge(1);
                        }
                        _ => {
                            self.start_record();
                            if self.field_bytes == 0 {
                                self.state = State::Quoted;
                                self.quote_line = self.line;
                                self.charge(1);
                            } else {
                                self.append(b"\"");
                            }
                        }
                    }
                }
                State::Quoted => {
                    let rest = &input[i..];
                    match memchr::memchr2(b'"', b'\n', rest) {
                        None => {
                            self.append(rest);
                            i = input.len();
                        }
                        Some(at) => {
                            self.append(&rest[..at]);
                            i += at + 1;
                            if rest[at] == b'\n' {
                                self.append(b"\n");
                                self.line += 1;
                            } else {
                                self.state = State::QuoteSeen;
                                self.charge(1);
                            }
                        }
                    }
                }
                State::QuoteSeen => {
                    if input[i] == b'"' {
                        i += 1;
                        self.append(b"\"");
                        self.state = State::Quoted;
                    } else {
                        // The quote closed the field; this byte is read as outside quotes, and
                        // only a separator or a line end may follow it.
                        if !matches!(input[i], b',' | b'\n' | b'\r') && self.error.is_none() {
                            self.error = Some(CsvError::AfterQuote { line: self.line });
                            self.fields = Vec::new();
                            self.field = Vec::new();
                        }
                        self.state = State::Field;
                    }
                }
            }
        }
    }

    /// Opens a record at the current line if none is open.
    fn start_record(&mut self) {
        if self.state == State::Between {
            self.state = State::Field;
            self.record_line = self.line;
            self.field_line = self.line;
        }
    }

    /// A line break outside quotes: the end of the record, or an empty line between records.
    fn end_line(&mut self) {
        if self.state != State::Between {
            self.end_record();
            self.state = State::Between;
        }
        self.line += 1;
    }

    /// Counts `n` bytes of the record that are not kept (separators and quotes).
    fn charge(&mut self, n: usize) {
        self.record_bytes += n;
        if self.record_bytes > self.max_record_bytes && self.error.is_none() {
            self.error = Some(CsvError::TooLarge { line: self.record_line, limit: self.max_record_bytes });
            // Nothing more of this record is kept, so memory stays within the budget.
            self.fields = Vec::new();
            self.field = Vec::new();
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        self.field_bytes += bytes.len();
        self.charge(bytes.len());
        if self.error.is_none() {
            self.field.extend_from_slice(bytes);
        }
    }

    fn end_field(&mut self) {
        if self.error.is_none() {
            match String::from_utf8(std::mem::take(&mut self.field)) {
                Ok(text) => self.fields.push(text),
                Err(e) => {
                    let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                    let line = self.field_line + memchr::memchr_iter(b'\n', good).count() as u64;
                    self.error = Some(CsvError::NotUtf8 { line });
                    self.fields = Vec::new();
                }
            }
        }
        self.field_bytes = 0;
        self.field_line = self.line;
    }

    fn end_record(&mut self) {
        self.end_field();
        let fields = std::mem::take(&mut self.fields);
        let record = match self.error.take() {
            Some(e) => Err(e),
            None => Ok(Record { line: self.record_line, fields }),
        };
        self.ready.push_back(record);
        self.clear_record();
    }

    fn clear_record(&mut self) {
        self.fields.clear();
        self.field.clear();
        self.field_bytes = 0;
        self.record_bytes = 0;
        self.error = None;
    }
}

#[cfg(test)]
mod tests;
