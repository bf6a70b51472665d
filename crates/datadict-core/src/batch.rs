//! The streaming batcher: chunks of NDJSON or a JSON array in, ready import request bodies out
//! (gzipped JSON arrays of at most 2,000 events and 10 MB uncompressed, FACTS.md), each event
//! keeping its input position so that a 400's `failed_records[i].index` maps back to a line.
//! The same machinery batches profile updates for `/engage` ([`RecordKind::ProfileUpdates`]:
//! at most 2,000 updates per request and 1 MB per update, FACTS.md).
//!
//! The fast path of the design notes: records are found without parsing values, checked by a
//! borrowing pass, and their original bytes are copied into the open batch while the gzip encoder
//! compresses as it goes, so no batch is held twice. Only a record that must change (a property
//! the dictionary drops) is parsed and re-serialized. Memory is bounded by one open batch, the
//! batches the caller has not pulled yet, and one record split across chunks.

use crate::dictionary::{check_against_dictionary, remove_properties, Dictionary};
use crate::event::check_event;
use crate::issue::{Issue, IssueCode};
use crate::limits::Limits;
use crate::profile::{check_profile_update, TokenRule};
use crate::split::{InputFormat, RawRecord, RecordPos, RecordSplitter, SplitError};
use crate::summary::IssueSummary;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::collections::VecDeque;
use std::io::Write;

/// What the records of the input are; the kind chooses the per-record check and the request
/// limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordKind {
    /// Events for `/import`: checked by `check_event` (and the dictionary, when given), at most
    /// `max_events_per_request` per body, each under `event_bytes_below`.
    #[default]
    Events,
    /// Profile updates for `/engage`: checked by `check_profile_update` with this token rule, at
    /// most `max_profile_updates_per_request` per body, each at most `max_profile_update_bytes`.
    /// The dictionary does not apply to them.
    ProfileUpdates(TokenRule),
}

impl RecordKind {
    /// The most records one request body may hold.
    pub fn max_records(self, limits: &Limits) -> usize {
        match self {
            Self::Events => limits.max_events_per_request,
            Self::ProfileUpdates(_) => limits.max_profile_updates_per_request,
        }
    }

    /// The longest record, in bytes, that is checked at all; a longer one is rejected unbuffered.
    pub fn max_record_bytes(self, limits: &Limits) -> usize {
        match self {
            Self::Events => limits.event_bytes_below.saturating_sub(1),
            Self::ProfileUpdates(_) => limits.max_profile_update_bytes,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Self::Events => "event",
            Self::ProfileUpdates(_) => "update",
        }
    }
}

/// How the batcher works; `Default` gives the documented limits, gzip level 6 and format sniffing.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// `max_events_per_request` and `max_request_bytes` bound each batch; the event rules check
    /// each record.
    pub limits: Limits,
    /// The gzip level (0–9) of the bodies; `None` leaves them uncompressed, for a caller that
    /// compresses on another thread or worker (see [`Batch::gzip`]).
    pub gzip_level: Option<u32>,
    pub format: InputFormat,
    /// Events or profile updates.
    pub kind: RecordKind,
    /// The clock for the `time` rule, in milliseconds since the epoch.
    pub now_ms: i64,
    /// When set, events are checked against it: dropped events are left out and dropped
    /// properties are removed.
    pub dictionary: Option<Dictionary>,
    /// How many example positions each tally of the summary keeps.
    pub summary_examples: usize,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self { limits: Limits::default(), gzip_level: Some(6), format: InputFormat::Auto, kind: RecordKind::Events, now_ms: 0, dictionary: None, summary_examples: 5 }
    }
}

/// One ready request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// A JSON array of events (or profile updates), gzipped unless the options say otherwise.
    pub body: Vec<u8>,
    /// Whether `body` is gzipped (send `Content-Encoding: gzip`).
    pub gzipped: bool,
    /// `positions[i]` is where the batch's `i`-th event was in the input.
    pub positions: Vec<RecordPos>,
    /// The size of the JSON array before compression.
    pub uncompressed_bytes: usize,
    /// The batch's ordinal (0-based).
    pub sequence: u64,
}

impl Batch {
    /// The number of records (events or profile updates) in the batch.
    pub fn events(&self) -> usize {
        self.positions.len()
    }

    /// Where the event at `index` of this request (a `failed_records[i].index`) was in the input.
    pub fn input_position(&self, index: usize) -> Option<RecordPos> {
        self.positions.get(index).copied()
    }

    /// Compresses an uncompressed batch at `level`; a gzipped one is returned as it is.
    pub fn gzip(mut self, level: u32) -> Self {
        if !self.gzipped {
            self.body = crate::gzip::gzip(&self.body, level);
            self.gzipped = true;
        }
        self
    }
}

/// A record left out of every batch because it breaks an import rule.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rejected {
    pub pos: RecordPos,
    pub issues: Vec<Issue>,
}

/// Totals of a batcher's run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchStats {
    /// Records found in the input.
    pub records: u64,
    /// Records put into batches.
    pub batched: u64,
    /// Records left out because they break an import rule.
    pub rejected: u64,
    /// Records left out because the dictionary drops their event.
    pub dropped: u64,
    /// Records re-serialized to remove dropped properties.
    pub rewritten: u64,
    /// Bytes of input consumed.
    pub input_bytes: u64,
    pub batches: u64,
}

/// Accumulates records into batches; the encoder is fed through a staging buffer because many
/// small writes into miniz_oxide cost more than a few large ones. The encoder is boxed (once per
/// run): held inline, its large state would size every `Sink`, the plain one too.
enum Sink {
    Plain(Vec<u8>),
    Gzip { encoder: Box<GzEncoder<Vec<u8>>>, staging: Vec<u8> },
}

const STAGING_BYTES: usize = 128 * 1024;

impl Sink {
    fn new(level: Option<u32>, capacity: usize) -> Self {
        match level {
            None => Sink::Plain(Vec::with_capacity(capacity)),
            Some(level) => Sink::Gzip {
                encoder: Box::new(GzEncoder::new(Vec::with_capacity(capacity / 4), Compression::new(level.min(9)))),
                staging: Vec::with_capacity(STAGING_BYTES + 64 * 1024),
            },
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        match self {
            Sink::Plain(buf) => buf.extend_from_slice(bytes),
            Sink::Gzip { encoder, staging } => {
                staging.extend_from_slice(bytes);
                if staging.len() >= STAGING_BYTES {
                    encoder.write_all(staging).expect("writing to memory");
                    staging.clear();
                }
            }
        }
    }

    fn finish(self) -> (Vec<u8>, bool) {
        match self {
            Sink::Plain(buf) => (buf, false),
            Sink::Gzip { mut encoder, staging } => {
                encoder.write_all(&staging).expect("writing to memory");
                (encoder.finish().expect("writing to memory"), true)
            }
        }
    }
}

struct OpenBatch {
    sink: Sink,
    positions: Vec<RecordPos>,
    bytes: usize,
}

/// The streaming batcher. Push chunks with [`Batcher::push`], pull ready bodies with
/// [`Batcher::next_batch`] after each push (that keeps memory flat), call [`Batcher::finish`] at
/// the end of the input and pull the last body. Rejected records are collected for
/// [`Batcher::take_rejected`]; every issue, warning and dictionary finding goes into
/// [`Batcher::summary`].
pub struct Batcher {
    options: BatchOptions,
    splitter: RecordSplitter,
    open: Option<OpenBatch>,
    ready: VecDeque<Batch>,
    rejected: Vec<Rejected>,
    summary: IssueSummary,
    stats: BatchStats,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").field("stats", &self.stats).field("ready", &self.ready.len()).finish_non_exhaustive()
    }
}

impl Default for Batcher {
    fn default() -> Self {
        Self::new(BatchOptions::default())
    }
}

/// The batcher's state apart from the splitter, so that the splitter's callback can borrow it.
struct Work<'b> {
    options: &'b BatchOptions,
    open: &'b mut Option<OpenBatch>,
    ready: &'b mut VecDeque<Batch>,
    rejected: &'b mut Vec<Rejected>,
    summary: &'b mut IssueSummary,
    stats: &'b mut BatchStats,
}

impl Work<'_> {
    fn record(&mut self, raw: RawRecord<'_>) {
        self.stats.records += 1;
        let limits = &self.options.limits;
        if let RecordKind::ProfileUpdates(token) = self.options.kind {
            return self.profile_update(raw, token);
        }
        if let Some(len) = raw.oversized {
            let issue = Issue::new(
                "",
                IssueCode::TooLarge,
                format!("the event is {len} bytes of JSON; it must be under {} bytes: move large values out of the event", limits.event_bytes_below),
            );
            self.reject(raw.pos, None, vec![issue]);
            return;
        }
        let check = check_event(raw.bytes, limits, self.options.now_ms);
        let findings = self.options.dictionary.as_ref().filter(|_| check.is_valid()).map(|d| check_against_dictionary(&check, d));
        let event = check.event.as_deref();
        if !check.is_valid() {
            let mut issues = check.issues.clone();
            issues.extend(check.warnings.iter().cloned());
            self.summary.add(raw.pos, event, &issues);
            self.stats.rejected += 1;
            self.rejected.push(Rejected { pos: raw.pos, issues: check.issues });
            return;
        }
        match &findings {
            Some(f) if !f.issues.is_empty() || !check.warnings.is_empty() => {
                let mut issues = check.warnings.clone();
                issues.extend(f.issues.iter().cloned());
                self.summary.add(raw.pos, event, &issues);
            }
            None if !check.warnings.is_empty() => self.summary.add(raw.pos, event, &check.warnings),
            _ => self.summary.add(raw.pos, event, &[]),
        }
        match findings {
            Some(f) if f.drop_event => self.stats.dropped += 1,
            Some(f) if f.must_rewrite() => match remove_properties(raw.bytes, &f.dropped_properties) {
                Ok(rewritten) => {
                    self.stats.rewritten += 1;
                    self.append(raw.pos, &rewritten);
                }
                // Unreachable for a record that passed the check, which parsed it; reported
                // rather than unwrapped so that a bug cannot lose data silently.
                Err(err) => self.reject(raw.pos, event, vec![Issue::new("", IssueCode::InvalidJson, err.to_string())]),
            },
            _ => self.append(raw.pos, raw.bytes),
        }
    }

    fn profile_update(&mut self, raw: RawRecord<'_>, token: TokenRule) {
        let limits = &self.options.limits;
        if let Some(len) = raw.oversized {
            let issue = Issue::new(
                "",
                IssueCode::TooLarge,
                format!("the update is {len} bytes of JSON; it must be at most {} bytes: split it into several updates", limits.max_profile_update_bytes),
            );
            self.reject(raw.pos, None, vec![issue]);
            return;
        }
        let check = check_profile_update(raw.bytes, limits, token);
        if !check.is_valid() {
            self.reject(raw.pos, check.operation, check.issues);
            return;
        }
        self.summary.add(raw.pos, check.operation, &[]);
        self.append(raw.pos, raw.bytes);
    }

    fn reject(&mut self, pos: RecordPos, event: Option<&str>, issues: Vec<Issue>) {
        self.summary.add(pos, event, &issues);
        self.stats.rejected += 1;
        self.rejected.push(Rejected { pos, issues });
    }

    fn append(&mut self, pos: RecordPos, bytes: &[u8]) {
        let limits = &self.options.limits;
        let (kind, max_records) = (self.options.kind, self.options.kind.max_records(limits));
        // The array costs its brackets and one comma per record after the first.
        if bytes.len() + 2 > limits.max_request_bytes {
            let noun = kind.noun();
            let issue = Issue::new(
                "",
                IssueCode::TooLarge,
                format!("the {noun} is {} bytes; a request may hold at most {} bytes: raise the request limit or shrink the {noun}", bytes.len(), limits.max_request_bytes),
            );
            self.stats.rejected += 1;
            self.summary.add(pos, None, std::slice::from_ref(&issue));
            self.rejected.push(Rejected { pos, issues: vec![issue] });
            return;
        }
        if let Some(open) = self.open.as_ref() {
            if open.positions.len() >= max_records || open.bytes + 1 + bytes.len() > limits.max_request_bytes {
                self.close();
            }
        }
        let level = self.options.gzip_level;
        let open = self.open.get_or_insert_with(|| {
            let mut sink = Sink::new(level, limits.max_request_bytes.min(4 * 1024 * 1024));
            sink.write(b"[");
            OpenBatch { sink, positions: Vec::with_capacity(max_records.min(4096)), bytes: 2 }
        });
        if !open.positions.is_empty() {
            open.sink.write(b",");
            open.bytes += 1;
        }
        open.sink.write(bytes);
        open.bytes += bytes.len();
        open.positions.push(pos);
        self.stats.batched += 1;
    }

    fn close(&mut self) {
        if let Some(mut open) = self.open.take() {
            open.sink.write(b"]");
            let (body, gzipped) = open.sink.finish();
            self.ready.push_back(Batch { body, gzipped, positions: open.positions, uncompressed_bytes: open.bytes, sequence: self.stats.batches });
            self.stats.batches += 1;
        }
    }
}

impl Batcher {
    pub fn new(options: BatchOptions) -> Self {
        // A record over the kind's size limit is skipped unbuffered by the splitter.
        let splitter = RecordSplitter::new(options.format, options.kind.max_record_bytes(&options.limits));
        let summary = IssueSummary::new(options.summary_examples);
        Self { options, splitter, open: None, ready: VecDeque::new(), rejected: Vec::new(), summary, stats: BatchStats::default() }
    }

    fn work(&mut self) -> (Work<'_>, &mut RecordSplitter) {
        (
            Work {
                options: &self.options,
                open: &mut self.open,
                ready: &mut self.ready,
                rejected: &mut self.rejected,
                summary: &mut self.summary,
                stats: &mut self.stats,
            },
            &mut self.splitter,
        )
    }

    /// Feeds one chunk of input (split anywhere).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), SplitError> {
        let (mut work, splitter) = self.work();
        work.stats.input_bytes += chunk.len() as u64;
        splitter.push(chunk, &mut |raw| work.record(raw))
    }

    /// Ends the input and closes the last batch.
    pub fn finish(&mut self) -> Result<(), SplitError> {
        let (mut work, splitter) = self.work();
        splitter.finish(&mut |raw| work.record(raw))?;
        work.close();
        Ok(())
    }

    /// The next ready body, oldest first.
    pub fn next_batch(&mut self) -> Option<Batch> {
        self.ready.pop_front()
    }

    /// The number of ready bodies not pulled yet.
    pub fn ready(&self) -> usize {
        self.ready.len()
    }

    /// The records rejected since the last call.
    pub fn take_rejected(&mut self) -> Vec<Rejected> {
        std::mem::take(&mut self.rejected)
    }

    /// Every issue, warning and dictionary finding so far.
    pub fn summary(&self) -> &IssueSummary {
        &self.summary
    }

    pub fn stats(&self) -> BatchStats {
        self.stats
    }

    pub fn options(&self) -> &BatchOptions {
        &self.options
    }
}

#[cfg(test)]
mod tests;
