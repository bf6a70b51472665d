//! The streaming `Batcher` class: chunks in, request bodies out with their records' input
//! positions, in the object form or packed into typed arrays for a bulk importer.

use crate::{args, fail, to_js, JsResult};
use datadict_core as core;
use datadict_core::{Limits, SchemaEntry};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct BatcherOptions {
    limits: Option<Limits>,
    /// 0–9; `null` leaves bodies uncompressed; absent means 6.
    #[serde(deserialize_with = "present")]
    gzip_level: Option<Option<u32>>,
    format: core::InputFormat,
    now_ms: Option<f64>,
    dictionary: Option<Vec<SchemaEntry>>,
    namespace: Option<String>,
    summary_examples: Option<usize>,
    kind: KindDto,
    /// For profile updates: whether each must carry `$token` (default `required`).
    profile_token: core::TokenRule,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
enum KindDto {
    #[default]
    Events,
    ProfileUpdates,
}

/// Tells a field given as `null` (`Some(None)`) from a missing one (`None`, via `default`).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchMetaDto<'a> {
    gzipped: bool,
    positions: &'a [core::RecordPos],
    uncompressed_bytes: usize,
    sequence: u64,
    events: usize,
}

/// The streaming batcher: `push(chunk)` any bytes of NDJSON or a JSON array (split anywhere),
/// `nextBatch()` after each push to pull ready request bodies, `finish()` at the end.
#[wasm_bindgen]
pub struct Batcher {
    inner: core::Batcher,
}

#[wasm_bindgen]
impl Batcher {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_optional_param_type = "BatcherOptions")] options: JsValue) -> JsResult<Batcher> {
        let o: BatcherOptions = args::opt_typed(&options, "new Batcher: options")?;
        let namespace = o.namespace.unwrap_or_else(|| core::DEFAULT_NAMESPACE.to_owned());
        if let Some(Some(level)) = o.gzip_level.filter(|l| l.is_some_and(|l| l > 9)) {
            return Err(args::range_error(&format!("new Batcher: options.gzipLevel must be 0 to 9 (or null for no compression), got {level}")));
        }
        let defaults = core::BatchOptions::default();
        let options = core::BatchOptions {
            limits: o.limits.unwrap_or_default(),
            gzip_level: o.gzip_level.unwrap_or(defaults.gzip_level),
            format: o.format,
            now_ms: o.now_ms.unwrap_or_else(js_sys::Date::now) as i64,
            dictionary: o.dictionary.map(|d| core::Dictionary::new(&d, &namespace)),
            summary_examples: o.summary_examples.unwrap_or(defaults.summary_examples),
            kind: match o.kind {
                KindDto::Events => core::RecordKind::Events,
                KindDto::ProfileUpdates => core::RecordKind::ProfileUpdates(o.profile_token),
            },
        };
        Ok(Batcher { inner: core::Batcher::new(options) })
    }

    /// Feeds one chunk of bytes (a string is taken as its UTF-8); throws on a framing error (the
    /// input is not NDJSON or a JSON array).
    pub fn push(&mut self, #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer | string")] chunk: JsValue) -> JsResult<()> {
        let chunk = args::bytes(&chunk, "Batcher.push: chunk")?;
        self.inner.push(&chunk).map_err(fail)
    }

    /// Ends the input and closes the last batch.
    pub fn finish(&mut self) -> JsResult<()> {
        self.inner.finish().map_err(fail)
    }

    /// The next ready body as `{body: Uint8Array, gzipped, positions, uncompressedBytes,
    /// sequence, events}`, or `undefined`.
    #[wasm_bindgen(js_name = nextBatch, unchecked_return_type = "Batch | undefined")]
    pub fn next_batch(&mut self) -> JsResult<JsValue> {
        let Some(batch) = self.inner.next_batch() else {
            return Ok(JsValue::UNDEFINED);
        };
        let meta = to_js(&BatchMetaDto {
            gzipped: batch.gzipped,
            positions: &batch.positions,
            uncompressed_bytes: batch.uncompressed_bytes,
            sequence: batch.sequence,
            events: batch.events(),
        })?;
        // The body goes across as one copy into a Uint8Array, not as an array of numbers.
        js_sys::Reflect::set(&meta, &JsValue::from_str("body"), &js_sys::Uint8Array::from(batch.body.as_slice()))
            .map_err(|_| args::error("cannot attach the body to the batch"))?;
        Ok(meta)
    }

    /// The next ready body like [`Batcher::next_batch`], with `positions` packed into one
    /// `Float64Array` of `(index, line)` pairs instead of an array of objects: a batch of 2,000
    /// events crosses as two typed arrays and a few numbers rather than 2,000 objects, which is
    /// what a bulk importer wants (`mapFailedRecords` takes either form).
    ///
    /// With `into`, a buffer the caller is done with, the body is copied into it when it fits
    /// (`body` is then a view of its first bytes), so that a caller who recycles its buffers
    /// allocates none per batch; when it does not fit, `body` is a view of a new buffer with an
    /// eighth more room, worth keeping for the next call.
    #[wasm_bindgen(js_name = nextBatchPacked, unchecked_return_type = "PackedBatch | undefined")]
    pub fn next_batch_packed(&mut self, #[wasm_bindgen(unchecked_optional_param_type = "Uint8Array | null")] into: JsValue) -> JsResult<JsValue> {
        let into = match into.dyn_into::<js_sys::Uint8Array>() {
            Ok(buffer) => Some(buffer),
            Err(v) if v.is_undefined() || v.is_null() => None,
            Err(v) => return Err(args::type_error(&format!("Batcher.nextBatchPacked: into must be a Uint8Array, got {}", args::describe(&v)))),
        };
        let Some(batch) = self.inner.next_batch() else {
            return Ok(JsValue::UNDEFINED);
        };
        let positions: Vec<f64> = batch.positions.iter().flat_map(|p| [p.index as f64, p.line as f64]).collect();
        let meta = js_sys::Object::new();
        let set = |key: &str, value: JsValue| {
            js_sys::Reflect::set(&meta, &JsValue::from_str(key), &value).map_err(|_| args::error("cannot build the batch object"))
        };
        let len = batch.body.len() as u32;
        let body = match into {
            Some(buffer) if buffer.length() >= len => buffer.subarray(0, len),
            Some(_) => js_sys::Uint8Array::new_with_length(len.saturating_add(len / 8)).subarray(0, len),
            None => js_sys::Uint8Array::new_with_length(len),
        };
        body.copy_from(&batch.body);
        set("body", body.into())?;
        set("gzipped", batch.gzipped.into())?;
        set("positions", js_sys::Float64Array::from(positions.as_slice()).into())?;
        set("uncompressedBytes", (batch.uncompressed_bytes as f64).into())?;
        set("sequence", (batch.sequence as f64).into())?;
        set("events", (batch.events() as f64).into())?;
        Ok(meta.into())
    }

    /// The number of ready bodies not pulled yet.
    pub fn ready(&self) -> usize {
        self.inner.ready()
    }

    /// Records rejected since the last call: `[{pos: {index, line}, issues}]`.
    #[wasm_bindgen(js_name = takeRejected, unchecked_return_type = "Rejected[]")]
    pub fn take_rejected(&mut self) -> JsResult<JsValue> {
        to_js(&self.inner.take_rejected())
    }

    /// Every issue, warning and dictionary finding so far, by code, event and property.
    #[wasm_bindgen(unchecked_return_type = "IssueSummary")]
    pub fn summary(&self) -> JsResult<JsValue> {
        to_js(self.inner.summary())
    }

    /// Totals: records, batched, rejected, dropped, rewritten, inputBytes, batches.
    #[wasm_bindgen(unchecked_return_type = "BatchStats")]
    pub fn stats(&self) -> JsResult<JsValue> {
        to_js(&self.inner.stats())
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_BATCHER: &'static str = r#"
export interface BatcherOptions extends EventOptions {
  /** 0-9; `null` leaves bodies uncompressed; default 6. */
  gzipLevel?: number | null;
  format?: InputFormat;
  /** Check events against these schemas: dropped events are left out, dropped properties removed. */
  dictionary?: SchemaEntry[];
  namespace?: string;
  summaryExamples?: number;
  /** `profileUpdates` batches `/engage` updates (at most 2,000 per body, 1 MB each); default `events`. */
  kind?: "events" | "profileUpdates";
  /** For profile updates: whether each must carry `$token`; default `required`. */
  profileToken?: "required" | "optional";
}

/** Where a record was in the input: its ordinal and the 1-based line it starts on. */
export interface RecordPos {
  index: number;
  line: number;
}

export interface Batch {
  /** A JSON array of events, gzipped unless `gzipped` is false. */
  body: Uint8Array;
  gzipped: boolean;
  /** `positions[i]` is where the batch's i-th event was in the input. */
  positions: RecordPos[];
  uncompressedBytes: number;
  sequence: number;
  events: number;
}

/** A batch of `nextBatchPacked()`: `positions` holds `(index, line)` pairs, so the batch's i-th
 * event was record `positions[2 * i]` of the input, starting on line `positions[2 * i + 1]`. */
export interface PackedBatch {
  body: Uint8Array;
  gzipped: boolean;
  positions: Float64Array;
  uncompressedBytes: number;
  sequence: number;
  events: number;
}

export interface Rejected {
  pos: RecordPos;
  issues: Issue[];
}

export interface Tally {
  count: number;
  examples: RecordPos[];
}

export interface IssueSummary {
  records: number;
  recordsWithIssues: number;
  byCode: Record<string, Tally>;
  byEvent: Record<string, Tally>;
  byProperty: Record<string, Tally>;
  maxExamples: number;
}

export interface BatchStats {
  records: number;
  batched: number;
  rejected: number;
  dropped: number;
  rewritten: number;
  inputBytes: number;
  batches: number;
}
"#;
