//! The import's rows: [`EventBatch`] (rows ready to store, with their de-duplication digest)
//! and the digest itself, the same on both backends.

/// Events ready to be stored: the fields of each event's dedup key, its digest and the record's
/// JSON text. The texts of every row live in one buffer, so that preparing a 2,000-event request
/// costs a couple of allocations instead of five per event (profiled: `malloc`/`free` and the
/// copies of small strings were about a tenth of the import's CPU). Rows are added with
/// [`EventBatch::push`], which computes the digest, so that hashing happens where the rows are
/// prepared (in parallel, on the blocking pool) and not while the writer is held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventBatch {
    text: String,
    pub(super) rows: Vec<RowSpans>,
}

/// Where a row's texts are in [`EventBatch::text`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RowSpans {
    event: std::ops::Range<usize>,
    distinct_id: std::ops::Range<usize>,
    insert_id: std::ops::Range<usize>,
    record: std::ops::Range<usize>,
    time_ms: i64,
    dedup: [u8; 16],
}

/// One row of an [`EventBatch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRow<'a> {
    pub event: &'a str,
    pub time_ms: i64,
    pub distinct_id: &'a str,
    pub insert_id: &'a str,
    /// The whole record (`{"event":...,"properties":{...}}`) as it will be served back.
    pub record: &'a str,
    /// `dedup_key` of the four key fields.
    pub dedup: [u8; 16],
}

impl EventBatch {
    /// The bytes of text the batch holds (every row's texts).
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// An empty batch with room for `rows` rows of about `bytes` bytes of text in all.
    pub fn with_capacity(rows: usize, bytes: usize) -> Self {
        Self { text: String::with_capacity(bytes), rows: Vec::with_capacity(rows) }
    }

    /// Adds an event, computing its dedup digest. An event without `$insert_id` (an empty
    /// `insert_id`, which `/track` allows and no valid `$insert_id` is) cannot be de-duplicated
    /// (reference): every copy is stored. Its digest is then 128 random bits instead of
    /// [`dedup_key`], so that it never equals another's, and the record stays as it was sent (no
    /// made-up `$insert_id` is added). Re-keying leaves such digests alone (`rekey_events`).
    pub fn push(&mut self, event: &str, time_ms: i64, distinct_id: &str, insert_id: &str, record: &str) {
        let dedup = if insert_id.is_empty() { rand::random() } else { dedup_key(event, time_ms, distinct_id, insert_id) };
        let mut add = |s: &str| {
            let start = self.text.len();
            self.text.push_str(s);
            start..self.text.len()
        };
        let spans = RowSpans {
            event: add(event),
            distinct_id: add(distinct_id),
            insert_id: add(insert_id),
            record: add(record),
            time_ms,
            dedup,
        };
        self.rows.push(spans);
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows in the order they were pushed (the bench's bare `COPY` writes them as they are).
    pub fn iter(&self) -> impl Iterator<Item = EventRow<'_>> {
        self.rows.iter().map(|r| self.row(r))
    }

    pub(super) fn row(&self, r: &RowSpans) -> EventRow<'_> {
        EventRow {
            event: &self.text[r.event.clone()],
            time_ms: r.time_ms,
            distinct_id: &self.text[r.distinct_id.clone()],
            insert_id: &self.text[r.insert_id.clone()],
            record: &self.text[r.record.clone()],
            dedup: r.dedup,
        }
    }
}

/// The digest that identifies an event for de-duplication (FACTS.md: the key is
/// `(event, time, distinct_id, $insert_id)`): the first 128 bits of the BLAKE3 hash of the
/// length-prefixed fields. Length prefixes make every key a distinct input; 128 bits make an
/// accidental collision negligible, and a cryptographic hash makes a deliberate one (an event
/// crafted to replace another's stored copy) infeasible. BLAKE3, not SHA-256 as before
/// (`DEDUP_KEY_VERSION` 1): on this 88-byte input it takes 150 ns instead of 730 ns on a CPU
/// without SHA extensions, and SHA-256 was 6% of the import's CPU. The digest is what databases
/// hold: a change here needs a new `DEDUP_KEY_VERSION` and a re-key of stored events (see
/// `rekey_events`), or every re-sent event would be stored twice; a test pins it.
pub fn dedup_key(event: &str, time_ms: i64, distinct_id: &str, insert_id: &str) -> [u8; 16] {
    // One call over the whole input.
    let len = 32 + event.len() + distinct_id.len() + insert_id.len();
    let mut stack = [0u8; 256];
    let mut heap = Vec::new();
    let input: &mut [u8] = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        input[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    for field in [event, distinct_id, insert_id] {
        put(&(field.len() as u64).to_le_bytes());
        put(field.as_bytes());
    }
    put(&time_ms.to_le_bytes());
    let digest = blake3::hash(input);
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest.as_bytes()[..16]);
    out
}

/// The width of an `event_volume` bucket. Integer division as SQLite's `/` does it (PostgreSQL's `div` on the same non-negative times).
pub(crate) const HOUR_MS: i64 = 3_600_000;

