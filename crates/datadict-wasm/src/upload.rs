//! The `Upload` class: the core's upload state machine for an importer that does the I/O itself
//! (requests, timers, files, compression). Only small per-batch metadata crosses: a sequence
//! number, a size and the packed input positions; bodies never do.

use crate::requests::{ProjectIdDto, StatusContextDto};
use crate::{args, to_js, JsResult};
use datadict_core as core;
use serde::Deserialize;
use wasm_bindgen::prelude::*;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct UploadOptionsDto {
    /// Batches active at once (default 8, as the importer's).
    concurrency: Option<usize>,
    /// Overrides of the retry policy; absent fields keep the defaults.
    retry_policy: Option<core::RetryPolicy>,
    stop_on_failure: bool,
    /// Named when the server cannot be reached.
    url: Option<String>,
    /// Named by a 403.
    project_id: Option<ProjectIdDto>,
    /// Batches a previous run had acknowledged (a checkpoint).
    acknowledged: Vec<u64>,
}

/// An upload's state: `register` each batch the `Batcher` cuts, send what `nextSend` names,
/// report each answer with `answer`, and set a timer for `nextWakeMs` when retries wait.
#[wasm_bindgen]
pub struct Upload {
    inner: core::Upload,
}

#[wasm_bindgen]
impl Upload {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_optional_param_type = "UploadOptions")] options: JsValue) -> JsResult<Upload> {
        let o: UploadOptionsDto = args::opt_typed(&options, "new Upload: options")?;
        let options = core::UploadOptions {
            concurrency: o.concurrency.unwrap_or(8),
            retry: o.retry_policy.unwrap_or_default(),
            stop_on_failure: o.stop_on_failure,
            context: StatusContextDto { url: o.url, project_id: o.project_id, ..StatusContextDto::default() }.into_core(),
        };
        Ok(Upload { inner: core::Upload::resume(options, o.acknowledged) })
    }

    /// Registers a batch by its sequence number, uncompressed size and packed positions (the
    /// `Float64Array` of `nextBatchPacked`, copied in once); answers `queued`, `alreadyAcknowledged` (skip it) or
    /// `duplicate`.
    #[wasm_bindgen(unchecked_return_type = "\"queued\" | \"alreadyAcknowledged\" | \"duplicate\"")]
    pub fn register(
        &mut self,
        sequence: f64,
        uncompressed_bytes: f64,
        #[wasm_bindgen(unchecked_param_type = "Float64Array | RecordPos[]")] positions: JsValue,
    ) -> JsResult<String> {
        let positions = crate::positions_arg(&positions, "Upload.register: positions")?;
        let meta = core::BatchMeta { sequence: sequence as u64, uncompressed_bytes: uncompressed_bytes as usize, positions };
        Ok(match self.inner.register(meta) {
            core::Registered::Queued => "queued",
            core::Registered::AlreadyAcknowledged => "alreadyAcknowledged",
            core::Registered::Duplicate => "duplicate",
        }
        .to_owned())
    }

    /// Whether to produce another batch: nothing waits for a slot and one is free.
    #[wasm_bindgen(js_name = wantsMore)]
    pub fn wants_more(&self) -> bool {
        self.inner.wants_more()
    }

    /// The sequence number of the batch to send now, or `undefined`; call until `undefined`.
    #[wasm_bindgen(js_name = nextSend)]
    pub fn next_send(&mut self, now_ms: f64) -> Option<f64> {
        self.inner.next_send(now_ms as i64).map(|order| order.sequence as f64)
    }

    /// When the earliest waiting retry is due (ms since the epoch), or `undefined`.
    #[wasm_bindgen(js_name = nextWakeMs)]
    pub fn next_wake_ms(&self) -> Option<f64> {
        self.inner.next_wake_ms().map(|ms| ms as f64)
    }

    /// Reports the answer to batch `sequence`: its HTTP `status` and body text, or `status`
    /// `null` and the network's reason as `body`; `retryAfter` is the raw header. Returns what it
    /// means, or `undefined` when that batch is not being sent.
    #[wasm_bindgen(unchecked_return_type = "UploadOutcome | undefined")]
    pub fn answer(
        &mut self,
        sequence: f64,
        status: Option<u16>,
        #[wasm_bindgen(unchecked_param_type = "string")] body: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | null | undefined")] retry_after: JsValue,
        now_ms: f64,
        random: f64,
    ) -> JsResult<JsValue> {
        let body = args::text(&body, "Upload.answer: body")?;
        let retry_after = args::opt_text(&retry_after, "Upload.answer: retryAfter")?;
        let reply = match status {
            Some(status) => core::Reply::Answer { status, body: body.as_bytes(), retry_after: retry_after.as_deref() },
            None => core::Reply::NetworkError(&body),
        };
        match self.inner.answer(sequence as u64, reply, now_ms as i64, random) {
            Some(outcome) => to_js(&outcome),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Stops sending; returns the batches that were waiting to be sent again, now failed.
    #[wasm_bindgen(unchecked_return_type = "UploadFailed[]")]
    pub fn cancel(&mut self) -> JsResult<JsValue> {
        to_js(&self.inner.cancel())
    }

    /// Whether nothing is queued, being sent or waiting.
    #[wasm_bindgen(js_name = isIdle)]
    pub fn is_idle(&self) -> bool {
        self.inner.is_idle()
    }

    /// The acknowledged batches' sequence numbers, in order.
    pub fn acknowledged(&self) -> Vec<f64> {
        self.inner.acknowledged().into_iter().map(|s| s as f64).collect()
    }

    #[wasm_bindgen(unchecked_return_type = "UploadSummary")]
    pub fn summary(&self) -> JsResult<JsValue> {
        to_js(&self.inner.summary())
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_UPLOAD: &'static str = r#"
export interface UploadOptions {
  /** Batches active at once, sent or waiting to be sent again (default 8). */
  concurrency?: number;
  retryPolicy?: Partial<RetryPolicy>;
  /** Whether the first batch that fails stops the upload. */
  stopOnFailure?: boolean;
  /** Named when the server cannot be reached. */
  url?: string;
  /** Named by a 403. */
  projectId?: number | string;
  /** Sequence numbers of batches acknowledged before (a checkpoint). */
  acknowledged?: number[];
}

/** Why a batch failed; `unexpected_answer`: a 2xx that is not the import's answer (a proxy's page,
 * an empty body); `short_count`: an answer counting fewer records than were sent. */
export type UploadStop = "invalid_request" | "unauthorized" | "too_large" | "not_retryable" | "too_many_attempts" | "cancelled" | "unexpected_answer" | "short_count";

export interface UploadFailed {
  sequence: number;
  records: number;
  first: RecordPos;
  last: RecordPos;
  /** The last answer's status; null for a network error. */
  status: number | null;
  reason: UploadStop;
  /** What happened and what to do. */
  message: string;
  /** Records the answer counted as imported (only a `short_count` has any). */
  imported: number;
  /** Records the answer refused, with their input positions (a `short_count` of a 400). */
  failed: FailedInput[];
}

export type UploadOutcome =
  | { kind: "acknowledged"; sequence: number; records: number; uncompressedBytes: number; imported: number; failed: FailedInput[]; refused: number }
  | { kind: "retry"; sequence: number; attempt: number; status: number | null; delayMs: number; dueMs: number; message: string }
  | ({ kind: "failed" } & UploadFailed);

export interface UploadSummary {
  batchesAcknowledged: number;
  batchesFailed: number;
  recordsSent: number;
  recordsImported: number;
  recordsRefused: number;
  bytesAcknowledged: number;
  requests: number;
  retries: number;
  cancelled: boolean;
  stopped: boolean;
}
"#;
