//! The upload of batches as a state machine without I/O, in the style of [`crate::retry`]: the
//! caller registers the batches the [`crate::Batcher`] cuts, asks which one to send next, and
//! reports each answer with the time and a random number for the jitter. The machine answers what
//! was acknowledged, which records the server refused and on which input line, what to send again
//! and when, and which batch failed and why, in the words of [`crate::status`].
//!
//! It never sees a body: only a batch's sequence number, size and the input positions of its
//! records. Bodies stay where the caller keeps them (recycled buffers in the npm importer, the
//! core's `Batch` in the web app), so the machine costs a few bytes per record, not a copy.
//!
//! At most `concurrency` batches are active at once: sent and not yet answered, or waiting to be
//! sent again. Cancelling stops new sends and fails the waiting ones; the set of acknowledged
//! batches is all a checkpoint needs, and [`Upload::resume`] takes it back.

use crate::api::ImportResponse;
use crate::batch::Batch;
use crate::request::{map_failed_positions, parse_import_response, FailedInput};
use crate::retry::{parse_retry_after, Attempt, Decision, GiveUp, RetryPolicy};
use crate::split::RecordPos;
use crate::status::{error_detail, explain_short_count, explain_status, StatusContext};
use serde::Serialize;
use std::collections::{HashMap, HashSet, VecDeque};

/// How an upload behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadOptions {
    /// Batches active at once (sent, or waiting to be sent again); at least one.
    pub concurrency: usize,
    pub retry: RetryPolicy,
    /// Whether the first batch that fails stops the whole upload. The npm importer stops (a 401
    /// or a 413 will not get better for the next batch); the web app goes on, reports the batch,
    /// and its resume sends it again.
    pub stop_on_failure: bool,
    /// What the words of a failure may name (the URL, the project).
    pub context: StatusContext,
}

impl Default for UploadOptions {
    fn default() -> Self {
        Self { concurrency: 4, retry: RetryPolicy::default(), stop_on_failure: false, context: StatusContext::default() }
    }
}

/// What the machine keeps of a batch: never its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchMeta {
    pub sequence: u64,
    pub uncompressed_bytes: usize,
    /// `positions[i]` is where the batch's `i`-th record was in the input.
    pub positions: Vec<RecordPos>,
}

impl BatchMeta {
    /// The metadata of a batch of the core's `Batcher`; only the positions are copied.
    pub fn of(batch: &Batch) -> Self {
        Self { sequence: batch.sequence, uncompressed_bytes: batch.uncompressed_bytes, positions: batch.positions.clone() }
    }

    pub fn records(&self) -> usize {
        self.positions.len()
    }
}

/// What became of a registered batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Registered {
    /// It waits for its turn.
    Queued,
    /// A previous run had it acknowledged: it is not sent again.
    AlreadyAcknowledged,
    /// A batch with this sequence number is already under way; this one is ignored.
    Duplicate,
}

/// The caller's report of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// The server answered; `retry_after` is the raw `Retry-After` header, if any.
    Answer { status: u16, body: &'a [u8], retry_after: Option<&'a str> },
    /// No answer; the text says why (the network layer's message).
    NetworkError(&'a str),
}

/// The machine's order: send this batch now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendOrder {
    pub sequence: u64,
    /// 1 for the first send.
    pub attempt: u32,
}

/// Why a batch was not imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// A 400 without `failed_records`: the request itself was refused.
    InvalidRequest,
    Unauthorized,
    TooLarge,
    NotRetryable,
    TooManyAttempts,
    /// The upload was cancelled (or stopped by another batch) while this one waited to be sent
    /// again.
    Cancelled,
    /// A success whose body is not the import's answer (a proxy's page, an empty body): nothing
    /// says what was stored. Not retried: the same address will answer the same.
    UnexpectedAnswer,
    /// The answer counts fewer records than were sent and refused: the others are not known to
    /// be stored. Not acknowledged, so that a resumed upload sends the batch again (the server's
    /// de-duplication by `$insert_id` makes that harmless).
    ShortCount,
}

impl From<GiveUp> for Stop {
    fn from(g: GiveUp) -> Self {
        match g {
            GiveUp::InvalidRequest => Self::InvalidRequest,
            GiveUp::Unauthorized => Self::Unauthorized,
            GiveUp::TooLarge => Self::TooLarge,
            GiveUp::NotRetryable => Self::NotRetryable,
            GiveUp::TooManyAttempts => Self::TooManyAttempts,
        }
    }
}

/// The server took the batch (a 2xx, or a 400 listing the records it refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Acknowledged {
    pub sequence: u64,
    pub records: usize,
    pub uncompressed_bytes: usize,
    /// The server's `num_records_imported` (a success always says it; one that does not fails
    /// the batch as [`Stop::UnexpectedAnswer`]).
    pub imported: u64,
    /// Every entry of `failed_records`, with where its record was in the input.
    pub failed: Vec<FailedInput>,
    /// The records refused, each counted once however many entries name it.
    pub refused: u64,
}

/// The batch is sent again once [`Upload::next_send`] is asked at or after `due_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Retry {
    pub sequence: u64,
    /// The attempt that failed (1 for the first).
    pub attempt: u32,
    /// The answer's status; `None` for a network error.
    pub status: Option<u16>,
    pub delay_ms: u64,
    pub due_ms: i64,
    /// What the answer means.
    pub message: String,
}

/// The batch was not imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failed {
    pub sequence: u64,
    pub records: usize,
    /// Where the batch's first and last records were in the input.
    pub first: RecordPos,
    pub last: RecordPos,
    /// The last answer's status; `None` for a network error (or a batch never answered).
    pub status: Option<u16>,
    pub reason: Stop,
    /// What happened and what to do, in the words of [`crate::status`].
    pub message: String,
    /// Records the answer counts as imported: only a [`Stop::ShortCount`] has any.
    pub imported: u64,
    /// The records the answer refused, with where they were in the input ([`Stop::ShortCount`]
    /// of a 400).
    pub failed: Vec<FailedInput>,
}

/// What one answer means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Outcome {
    Acknowledged(Acknowledged),
    Retry(Retry),
    Failed(Failed),
}

/// The totals of an upload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadSummary {
    pub batches_acknowledged: u64,
    pub batches_failed: u64,
    /// Records of acknowledged batches.
    pub records_sent: u64,
    pub records_imported: u64,
    pub records_refused: u64,
    pub bytes_acknowledged: u64,
    /// Sends ordered, first attempts and retries.
    pub requests: u64,
    pub retries: u64,
    pub cancelled: bool,
    /// A failure stopped the upload (with [`UploadOptions::stop_on_failure`]).
    pub stopped: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Queued,
    Sending,
    /// Waiting to be sent again at this time; the last failed answer is kept for the words of a
    /// cancellation.
    Waiting { due_ms: i64 },
}

#[derive(Debug)]
struct Entry {
    meta: BatchMeta,
    attempt: u32,
    state: State,
    /// The last failed answer, in words, and its status.
    last_error: Option<(Option<u16>, String)>,
}

/// The upload's state; see the module documentation.
#[derive(Debug)]
pub struct Upload {
    options: UploadOptions,
    acknowledged: HashSet<u64>,
    entries: HashMap<u64, Entry>,
    queue: VecDeque<u64>,
    /// Sending or waiting; at most `concurrency`.
    active: usize,
    summary: UploadSummary,
}

impl Upload {
    pub fn new(options: UploadOptions) -> Self {
        Self::resume(options, [])
    }

    /// An upload that skips the batches a previous run had acknowledged (a checkpoint, or the web
    /// app's memory of a cancelled run). Batches are cut deterministically from the same input and
    /// limits, so equal sequence numbers are equal batches.
    pub fn resume(mut options: UploadOptions, acknowledged: impl IntoIterator<Item = u64>) -> Self {
        options.concurrency = options.concurrency.max(1);
        Self {
            options,
            acknowledged: acknowledged.into_iter().collect(),
            entries: HashMap::new(),
            queue: VecDeque::new(),
            active: 0,
            summary: UploadSummary::default(),
        }
    }

    /// Adds a batch as the batcher produced it.
    pub fn register(&mut self, meta: BatchMeta) -> Registered {
        if self.acknowledged.contains(&meta.sequence) {
            return Registered::AlreadyAcknowledged;
        }
        if self.entries.contains_key(&meta.sequence) {
            return Registered::Duplicate;
        }
        self.queue.push_back(meta.sequence);
        self.entries.insert(meta.sequence, Entry { meta, attempt: 0, state: State::Queued, last_error: None });
        Registered::Queued
    }

    /// Whether the caller should produce another batch: nothing is queued and a slot is free.
    /// Asking this before reading more input keeps memory flat.
    pub fn wants_more(&self) -> bool {
        !self.is_closed() && self.queue.is_empty() && self.active < self.options.concurrency
    }

    /// The batch to send now, if any: a retry that is due (the earliest first), else the next
    /// queued batch while fewer than `concurrency` are active. Call it until it says `None`.
    pub fn next_send(&mut self, now_ms: i64) -> Option<SendOrder> {
        if self.is_closed() {
            return None;
        }
        let due = self
            .entries
            .iter()
            .filter_map(|(seq, e)| match e.state {
                State::Waiting { due_ms } if due_ms <= now_ms => Some((due_ms, *seq)),
                _ => None,
            })
            .min();
        let sequence = match due {
            Some((_, seq)) => seq,
            None if self.active < self.options.concurrency => {
                let seq = self.queue.pop_front()?;
                self.active += 1;
                seq
            }
            None => return None,
        };
        let entry = self.entries.get_mut(&sequence)?;
        entry.state = State::Sending;
        entry.attempt += 1;
        self.summary.requests += 1;
        Some(SendOrder { sequence, attempt: entry.attempt })
    }

    /// When the earliest waiting retry is due, so the caller can set one timer.
    pub fn next_wake_ms(&self) -> Option<i64> {
        self.entries
            .values()
            .filter_map(|e| match e.state {
                State::Waiting { due_ms } => Some(due_ms),
                _ => None,
            })
            .min()
    }

    /// Reports the answer to a batch that [`Upload::next_send`] ordered, at `now_ms`, with a
    /// random number in `[0, 1)` for the retry's jitter. `None` when that batch is not being sent
    /// (an answer reported twice).
    pub fn answer(&mut self, sequence: u64, reply: Reply<'_>, now_ms: i64, unit_random: f64) -> Option<Outcome> {
        let entry = self.entries.get(&sequence).filter(|e| e.state == State::Sending)?;
        let (attempt, response, retry_after_ms, detail) = match reply {
            Reply::Answer { status, body, retry_after } => {
                let response = parse_import_response(status, body);
                (Attempt::Status(status), Some(response), retry_after.and_then(|v| parse_retry_after(v, now_ms)), error_detail(body))
            }
            Reply::NetworkError(why) => (Attempt::NetworkError, None, None, why.to_owned()),
        };
        let status = match attempt {
            Attempt::Status(s) => Some(s),
            Attempt::NetworkError => None,
        };
        let decision = self.options.retry.decide(entry.attempt, attempt, retry_after_ms, unit_random);
        if let Some(response) = response.filter(|r| decision == Decision::Done || (decision == Decision::GiveUp(GiveUp::InvalidRequest) && r.failed_records.is_some())) {
            // A 400 with `failed_records` is an answer, not a failure: the valid records were
            // imported, and the others are reported, never resent as they are (FACTS.md).
            // A 200 counts exactly what was stored (README): one that does not say, or says less
            // than was sent, is not taken as "all of them".
            let Some(imported) = response.num_records_imported else {
                let detail = match detail.as_str() {
                    "" => "an empty body, not the import's answer".to_owned(),
                    text => format!("`{text}`, not the import's answer"),
                };
                let message = explain_status(attempt, &detail, &self.options.context);
                return self.give_up(sequence, status, Stop::UnexpectedAnswer, message, 0, Vec::new());
            };
            let records = entry.meta.records() as u64;
            let failed = map_failed_positions(&entry.meta.positions, &response);
            let refused = failed.iter().map(|f| f.failure.index).collect::<HashSet<_>>().len() as u64;
            if imported + refused < records {
                let positions = &entry.meta.positions;
                let lines = (positions.first().map_or(0, |p| p.line), positions.last().map_or(0, |p| p.line));
                let message = explain_short_count(response.code, imported, refused, records, lines);
                return self.give_up(sequence, status, Stop::ShortCount, message, imported, failed);
            }
            return Some(Outcome::Acknowledged(self.acknowledge(sequence, &response)));
        }
        let context = StatusContext { retry_after_ms, attempts: entry.attempt, ..self.options.context.clone() };
        let message = explain_status(attempt, &detail, &context);
        match decision {
            Decision::RetryAfterMs(delay_ms) if !self.is_closed() => {
                let due_ms = now_ms.saturating_add(i64::try_from(delay_ms).unwrap_or(i64::MAX));
                let entry = self.entries.get_mut(&sequence)?;
                entry.state = State::Waiting { due_ms };
                entry.last_error = Some((status, message.clone()));
                self.summary.retries += 1;
                Some(Outcome::Retry(Retry { sequence, attempt: entry.attempt, status, delay_ms, due_ms, message }))
            }
            Decision::GiveUp(reason) => self.give_up(sequence, status, reason.into(), message, 0, Vec::new()),
            // A retry after a cancellation, or a success the filter above already took.
            _ => self.fail(sequence, status, Stop::Cancelled, message).map(Outcome::Failed),
        }
    }

    /// Fails a batch for good, and with `stop_on_failure` stops the upload.
    fn give_up(&mut self, sequence: u64, status: Option<u16>, reason: Stop, message: String, imported: u64, failed: Vec<FailedInput>) -> Option<Outcome> {
        let mut out = self.fail(sequence, status, reason, message)?;
        out.imported = imported;
        out.failed = failed;
        self.summary.records_imported += imported;
        if self.options.stop_on_failure {
            self.summary.stopped = true;
            self.close();
        }
        Some(Outcome::Failed(out))
    }

    /// Stops the upload: nothing more is sent, queued batches are forgotten (they were never
    /// sent), and the batches waiting to be sent again fail, each with its last answer's words.
    /// Batches being sent stay until their answers are reported.
    pub fn cancel(&mut self) -> Vec<Failed> {
        self.summary.cancelled = true;
        self.close()
    }

    fn close(&mut self) -> Vec<Failed> {
        for seq in self.queue.drain(..) {
            self.entries.remove(&seq);
        }
        let mut waiting: Vec<u64> = self.entries.iter().filter(|(_, e)| matches!(e.state, State::Waiting { .. })).map(|(s, _)| *s).collect();
        crate::order::sort(&mut waiting);
        waiting
            .into_iter()
            .filter_map(|seq| {
                let (status, message) = self.entries.get_mut(&seq)?.last_error.take().unwrap_or_default();
                self.fail(seq, status, Stop::Cancelled, message)
            })
            .collect()
    }

    fn is_closed(&self) -> bool {
        self.summary.cancelled || self.summary.stopped
    }

    /// Whether nothing is queued, being sent or waiting: once the input is read to its end, the
    /// upload is over.
    pub fn is_idle(&self) -> bool {
        self.entries.is_empty()
    }

    /// The acknowledged batches, in order: what a checkpoint records.
    pub fn acknowledged(&self) -> Vec<u64> {
        let mut sequences: Vec<u64> = self.acknowledged.iter().copied().collect();
        crate::order::sort(&mut sequences);
        sequences
    }

    pub fn is_acknowledged(&self, sequence: u64) -> bool {
        self.acknowledged.contains(&sequence)
    }

    pub fn summary(&self) -> UploadSummary {
        self.summary
    }

    fn acknowledge(&mut self, sequence: u64, response: &ImportResponse) -> Acknowledged {
        let meta = self.remove(sequence).map(|e| e.meta).unwrap_or(BatchMeta { sequence, uncompressed_bytes: 0, positions: Vec::new() });
        let records = meta.records();
        let success = (200..300).contains(&response.code);
        let imported = response.num_records_imported.unwrap_or(if success { records as u64 } else { 0 });
        let failed = map_failed_positions(&meta.positions, response);
        let refused = failed.iter().map(|f| f.failure.index).collect::<HashSet<_>>().len() as u64;
        self.acknowledged.insert(sequence);
        let s = &mut self.summary;
        s.batches_acknowledged += 1;
        s.records_sent += records as u64;
        s.records_imported += imported;
        s.records_refused += refused;
        s.bytes_acknowledged += meta.uncompressed_bytes as u64;
        Acknowledged { sequence, records, uncompressed_bytes: meta.uncompressed_bytes, imported, failed, refused }
    }

    fn fail(&mut self, sequence: u64, status: Option<u16>, reason: Stop, message: String) -> Option<Failed> {
        let entry = self.remove(sequence)?;
        self.summary.batches_failed += 1;
        let positions = &entry.meta.positions;
        Some(Failed {
            sequence,
            records: positions.len(),
            first: positions.first().copied().unwrap_or_default(),
            last: positions.last().copied().unwrap_or_default(),
            status,
            reason,
            message,
            imported: 0,
            failed: Vec::new(),
        })
    }

    fn remove(&mut self, sequence: u64) -> Option<Entry> {
        let entry = self.entries.remove(&sequence)?;
        if entry.state != State::Queued {
            self.active -= 1;
        }
        Some(entry)
    }
}

#[cfg(test)]
mod tests;
