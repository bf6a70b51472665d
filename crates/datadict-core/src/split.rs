//! Finding record boundaries in a byte stream without parsing values (design notes, step 1): NDJSON
//! is split at newlines, a JSON array by a small scanner that tracks nesting, strings and escapes.
//! Input arrives in chunks split anywhere (inside a record, a string, an escape or a UTF-8
//! character); a record split across chunks is kept in a carry-over buffer, every other record is
//! handed out as a slice of the chunk itself.

use crate::words::{find_in_words, flag_byte};
use memchr::{memchr, memchr2};

/// How the input is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputFormat {
    /// A JSON array when the first non-blank byte is `[`, NDJSON otherwise.
    #[default]
    Auto,
    /// One JSON record per line (`application/x-ndjson`, FACTS.md); blank lines are skipped.
    Ndjson,
    /// One JSON array of records (spec §4.4).
    JsonArray,
}

/// Where a record was in the input, so that a 400's `failed_records[i].index` maps back to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct RecordPos {
    /// The record's ordinal in the input (0-based): the array index, or the count of non-blank
    /// NDJSON lines before it.
    pub index: u64,
    /// The 1-based line on which the record starts.
    pub line: u64,
}

/// One record found by the splitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'a> {
    pub pos: RecordPos,
    /// The record's bytes, trimmed of surrounding blanks; empty when `oversized` is set.
    pub bytes: &'a [u8],
    /// Set to the record's length when it was longer than the splitter's `max_record_bytes`:
    /// its bytes were skipped instead of buffered, so memory stays bounded.
    pub oversized: Option<u64>,
}

/// A framing error: the input is not NDJSON or not a well-formed JSON array. Records inside the
/// array are not parsed here, so a broken record is reported by the record check, not here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("expected `[` to open the JSON array at line {line}, found {found}; send a JSON array of events or NDJSON")]
    NoArray { line: u64, found: String },
    #[error("expected `,` or `]` after array element {index} at line {line}, found {found}; separate events with commas")]
    ExpectedComma { index: u64, line: u64, found: String },
    #[error("an element is missing after the comma at line {line}; remove the trailing comma")]
    TrailingComma { line: u64 },
    #[error("unexpected {found} after the closing `]` at line {line}; send one JSON array per request")]
    AfterArray { line: u64, found: String },
    #[error("the JSON array is not closed (the input ended inside element {index}); send the whole array")]
    Unterminated { index: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Auto mode before the first non-blank byte.
    Sniff,
    Ndjson,
    /// Before the array's `[`.
    ArrayStart,
    /// After `[` (`comma` false) or after `,` (`comma` true), before an element.
    BeforeValue { comma: bool },
    /// Inside an element.
    InValue,
    /// After an element, before `,` or `]`.
    AfterValue,
    /// After the closing `]`.
    Done,
}

/// The streaming record splitter. Feed chunks with [`RecordSplitter::push`], then call
/// [`RecordSplitter::finish`]; each call hands complete records to a callback in input order.
#[derive(Debug, Clone)]
pub struct RecordSplitter {
    state: State,
    max_record_bytes: usize,
    /// The start of a record that began in an earlier chunk.
    carry: Vec<u8>,
    /// Whether a record is open (its start has been seen).
    open: bool,
    /// The open record's length so far, counted even when its bytes are skipped.
    open_len: u64,
    open_line: u64,
    /// The open array element's scan.
    element: Element,
    index: u64,
    line: u64,
    bom_checked: bool,
    /// The first bytes of the input while they may still be a byte-order mark.
    bom_buf: Vec<u8>,
}

impl Default for RecordSplitter {
    fn default() -> Self {
        Self::new(InputFormat::Auto, usize::MAX)
    }
}

/// The first three bytes of a UTF-8 byte-order mark, which some tools write at the start of a file.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

pub(crate) fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Where the first `"` or `\` is in `bytes`. Most strings in analytics records (keys, names,
/// ids) are short: their first 32 bytes are searched eight at a time in a `u64`, which costs less
/// than a call to `memchr2` (measured: the splitter made one such call per string, a third of its
/// instructions); the rest of a longer string goes to `memchr2`.
fn find_quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    let at = match find_in_words(bytes, 0, 4, |w| flag_byte(w, b'"') | flag_byte(w, b'\\')) {
        Ok(found) => return Some(found),
        Err(at) => at,
    };
    let rest = &bytes[at..];
    let found = if rest.len() < 8 { rest.iter().position(|&c| c == b'"' || c == b'\\') } else { memchr2(b'"', b'\\', rest) };
    found.map(|off| at + off)
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !is_blank(*b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !is_blank(*b)).map_or(start, |e| e + 1);
    &bytes[start..end]
}

fn describe_byte(b: Option<u8>) -> String {
    match b {
        None => "the end of the input".to_owned(),
        Some(b) if b.is_ascii_graphic() => format!("`{}`", b as char),
        Some(b) => format!("byte 0x{b:02x}"),
    }
}

/// The scan of one array element: nesting depth, string and escape state, and whether the
/// element is a bare scalar (a number or literal, which ends at a delimiter rather than a closing
/// byte). It finds where the element ends without parsing it, across chunks.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Element {
    depth: u32,
    in_string: bool,
    escape: bool,
    scalar: bool,
}

impl Element {
    /// The scan of an element whose first byte is `first` (not yet scanned).
    pub(crate) fn starting_with(first: u8) -> Self {
        Self { scalar: !matches!(first, b'{' | b'[' | b'"'), ..Self::default() }
    }

    /// Scans `chunk[i..]`: `Some(end)` when the element ends at `end` (exclusive) in this chunk,
    /// `None` when the chunk ends first. Adds the newlines seen outside strings to `lines`. The
    /// state lives in locals during the loop and goes back to `self` when the loop ends.
    pub(crate) fn scan(&mut self, chunk: &[u8], mut i: usize, lines: &mut u64) -> Option<usize> {
        let Self { mut depth, mut in_string, mut escape, scalar } = *self;
        let mut newlines = 0;
        let end = loop {
            let Some(&b) = chunk.get(i) else { break None };
            if in_string {
                if escape {
                    escape = false;
                    i += 1;
                    continue;
                }
                match find_quote_or_backslash(&chunk[i..]) {
                    None => i = chunk.len(),
                    Some(off) => {
                        i += off + 1;
                        if chunk[i - 1] == b'\\' {
                            escape = true;
                        } else {
                            in_string = false;
                            if depth == 0 {
                                break Some(i);
                            }
                        }
                    }
                }
                continue;
            }
            if scalar {
                if b == b',' || b == b']' || is_blank(b) {
                    break Some(i);
                }
                i += 1;
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break Some(i + 1);
                    }
                }
                b'\n' => newlines += 1,
                _ => {}
            }
            i += 1;
        };
        (self.depth, self.in_string, self.escape) = (depth, in_string, escape);
        *lines += newlines;
        end
    }
}

impl RecordSplitter {
    /// A splitter for `format`. A record longer than `max_record_bytes` is not buffered: it is
    /// reported with `oversized` set, so a client can reject it without holding it in memory.
    pub fn new(format: InputFormat, max_record_bytes: usize) -> Self {
        let state = match format {
            InputFormat::Auto => State::Sniff,
            InputFormat::Ndjson => State::Ndjson,
            InputFormat::JsonArray => State::ArrayStart,
        };
        Self {
            state,
            max_record_bytes,
            carry: Vec::new(),
            open: false,
            open_len: 0,
            open_line: 1,
            element: Element::default(),
            index: 0,
            line: 1,
            bom_checked: false,
            bom_buf: Vec::new(),
        }
    }

    /// The format in use, once the first non-blank byte has been seen (`Auto` before that).
    pub fn format(&self) -> InputFormat {
        match self.state {
            State::Sniff => InputFormat::Auto,
            State::Ndjson => InputFormat::Ndjson,
            _ => InputFormat::JsonArray,
        }
    }

    /// The number of records handed out so far.
    pub fn records(&self) -> u64 {
        self.index
    }

    /// Feeds one chunk and hands every record completed by it to `emit`, in input order.
    pub fn push(&mut self, mut chunk: &[u8], emit: &mut dyn FnMut(RawRecord<'_>)) -> Result<(), SplitError> {
        if !self.bom_checked {
            if self.bom_buf.is_empty() && chunk.len() >= BOM.len() {
                // The common case: the whole mark (or its absence) is visible in this chunk.
                self.bom_checked = true;
                if chunk.starts_with(BOM) {
                    chunk = &chunk[BOM.len()..];
                }
            } else {
                // The mark may itself be split across chunks: wait until three bytes are known.
                let take = (BOM.len() - self.bom_buf.len()).min(chunk.len());
                self.bom_buf.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
                if self.bom_buf.len() < BOM.len() && BOM.starts_with(&self.bom_buf) {
                    return Ok(());
                }
                self.bom_checked = true;
                let head = std::mem::take(&mut self.bom_buf);
                if head != BOM {
                    self.scan(&head, emit)?;
                }
            }
        }
        self.scan(chunk, emit)
    }

    fn scan(&mut self, chunk: &[u8], emit: &mut dyn FnMut(RawRecord<'_>)) -> Result<(), SplitError> {
        let mut i = 0;
        while i < chunk.len() {
            i = match self.state {
                State::Sniff => {
                    let b = chunk[i];
                    if is_blank(b) {
                        if b == b'\n' {
                            self.line += 1;
                        }
                        i + 1
                    } else {
                        self.state = if b == b'[' { State::ArrayStart } else { State::Ndjson };
                        i
                    }
                }
                State::Ndjson => self.ndjson(chunk, i, emit),
                State::ArrayStart => {
                    let b = chunk[i];
                    if b == b'\n' {
                        self.line += 1;
                    }
                    if is_blank(b) {
                        i + 1
                    } else if b == b'[' {
                        self.state = State::BeforeValue { comma: false };
                        i + 1
                    } else {
                        return Err(SplitError::NoArray { line: self.line, found: describe_byte(Some(b)) });
                    }
                }
                State::BeforeValue { comma } => {
                    let b = chunk[i];
                    if b == b'\n' {
                        self.line += 1;
                    }
                    if is_blank(b) {
                        i + 1
                    } else if b == b']' {
                        if comma {
                            return Err(SplitError::TrailingComma { line: self.line });
                        }
                        self.state = State::Done;
                        i + 1
                    } else {
                        self.open_record(b);
                        self.state = State::InValue;
                        self.scan_value(chunk, i, i, emit)
                    }
                }
                // A continued element: its earlier part is in the carry-over buffer.
                State::InValue => self.scan_value(chunk, i, i, emit),
                State::AfterValue => {
                    let b = chunk[i];
                    if b == b'\n' {
                        self.line += 1;
                    }
                    match b {
                        b',' => self.state = State::BeforeValue { comma: true },
                        b']' => self.state = State::Done,
                        b if is_blank(b) => {}
                        other => {
                            return Err(SplitError::ExpectedComma { index: self.index - 1, line: self.line, found: describe_byte(Some(other)) })
                        }
                    }
                    i + 1
                }
                State::Done => {
                    let b = chunk[i];
                    if b == b'\n' {
                        self.line += 1;
                    }
                    if !is_blank(b) {
                        return Err(SplitError::AfterArray { line: self.line, found: describe_byte(Some(b)) });
                    }
                    i + 1
                }
            };
        }
        Ok(())
    }

    /// Ends the input: hands out a last NDJSON line without a newline, and reports an array that
    /// was never closed.
    pub fn finish(&mut self, emit: &mut dyn FnMut(RawRecord<'_>)) -> Result<(), SplitError> {
        if !self.bom_checked {
            // Fewer than three bytes in all: they were not a byte-order mark.
            let head = std::mem::take(&mut self.bom_buf);
            self.bom_checked = true;
            self.scan(&head, emit)?;
        }
        match self.state {
            State::Sniff | State::Done => Ok(()),
            State::Ndjson => {
                if self.open {
                    self.close_record(&[], emit);
                }
                Ok(())
            }
            State::InValue => Err(SplitError::Unterminated { index: self.index }),
            State::ArrayStart => Err(SplitError::NoArray { line: self.line, found: describe_byte(None) }),
            State::BeforeValue { .. } | State::AfterValue => Err(SplitError::Unterminated { index: self.index }),
        }
    }

    /// Opens an array element whose first byte is `first`.
    fn open_record(&mut self, first: u8) {
        self.open = true;
        self.open_len = 0;
        self.open_line = self.line;
        self.element = Element::starting_with(first);
    }

    /// Appends `part` (the rest of the open record within the current chunk) to the carry-over
    /// buffer, or only counts it once the record is too long to keep.
    fn keep(&mut self, part: &[u8]) {
        self.open_len += part.len() as u64;
        if self.open_len <= self.max_record_bytes as u64 {
            self.carry.extend_from_slice(part);
        } else {
            self.carry = Vec::new();
        }
    }

    /// Closes the open record whose last part is `tail` and hands it out.
    fn close_record(&mut self, tail: &[u8], emit: &mut dyn FnMut(RawRecord<'_>)) {
        self.open = false;
        let total = self.open_len + tail.len() as u64;
        let pos = RecordPos { index: self.index, line: self.open_line };
        let record = if total > self.max_record_bytes as u64 {
            // Blank padding does not count toward the size of an NDJSON line.
            Some(RawRecord { pos, bytes: &[], oversized: Some(total) })
        } else if self.carry.is_empty() {
            let bytes = trim(tail);
            (!bytes.is_empty()).then_some(RawRecord { pos, bytes, oversized: None })
        } else {
            self.carry.extend_from_slice(tail);
            let bytes = trim(&self.carry);
            if bytes.is_empty() {
                None
            } else {
                emit(RawRecord { pos, bytes, oversized: None });
                self.index += 1;
                self.carry.clear();
                self.open_len = 0;
                return;
            }
        };
        self.carry.clear();
        self.open_len = 0;
        if let Some(record) = record {
            emit(record);
            self.index += 1;
        }
    }

    /// NDJSON: hands out every line completed in `chunk[i..]`; returns the end of the chunk.
    fn ndjson(&mut self, chunk: &[u8], mut i: usize, emit: &mut dyn FnMut(RawRecord<'_>)) -> usize {
        while let Some(nl) = memchr(b'\n', &chunk[i..]) {
            let line = &chunk[i..i + nl];
            if !self.open {
                self.open = true;
                self.open_len = 0;
                self.open_line = self.line;
            }
            self.close_record(line, emit);
            self.line += 1;
            i += nl + 1;
        }
        if i < chunk.len() {
            if !self.open {
                self.open = true;
                self.open_len = 0;
                self.open_line = self.line;
            }
            self.keep(&chunk[i..]);
        }
        chunk.len()
    }

    /// Scans an array element from `chunk[i..]`, which started at `start` in this chunk (or in an
    /// earlier chunk when the record is carried over); returns where scanning stopped.
    fn scan_value(&mut self, chunk: &[u8], i: usize, start: usize, emit: &mut dyn FnMut(RawRecord<'_>)) -> usize {
        match self.element.scan(chunk, i, &mut self.line) {
            Some(end) => self.end_value(chunk, start, end, emit),
            None => {
                self.keep(&chunk[start..]);
                chunk.len()
            }
        }
    }

    fn end_value(&mut self, chunk: &[u8], start: usize, end: usize, emit: &mut dyn FnMut(RawRecord<'_>)) -> usize {
        self.close_record(&chunk[start..end], emit);
        self.state = State::AfterValue;
        end
    }
}

/// One record of a complete body: its position and its byte range in the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyRecord {
    pub pos: RecordPos,
    pub range: std::ops::Range<usize>,
    /// Never set by [`split_body`], which has the whole body in memory; kept for symmetry.
    pub oversized: Option<u64>,
}

/// Splits a complete request body (JSON array or NDJSON) into records without parsing them; for
/// a server that has the body in memory.
pub fn split_body(input: &[u8], format: InputFormat) -> Result<Vec<BodyRecord>, SplitError> {
    let mut splitter = RecordSplitter::new(format, usize::MAX);
    // The byte-order mark is handled here so that the splitter never buffers the first bytes.
    splitter.bom_checked = true;
    let body = input.strip_prefix(BOM).unwrap_or(input);
    let base = input.as_ptr() as usize;
    let data_end = input.len() - input.iter().rev().take_while(|b| is_blank(**b)).count();
    let mut out = Vec::new();
    let mut emit = |r: RawRecord<'_>| {
        let at = r.bytes.as_ptr() as usize;
        // With one push every record is a slice of the input, except a last NDJSON line without
        // a newline, which went through the carry-over buffer: it ends where the data ends.
        let start = if (base..base + input.len()).contains(&at) { at - base } else { data_end - r.bytes.len() };
        out.push(BodyRecord { pos: r.pos, range: start..start + r.bytes.len(), oversized: r.oversized });
    };
    splitter.push(body, &mut emit)?;
    splitter.finish(&mut emit)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
