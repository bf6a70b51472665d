//! The two steps of an import. Step 1 runs the whole input through the core's `Batcher` and sends
//! nothing. Step 2 reads it again and drives the core's upload machine (`datadict_core::Upload`):
//! it sends what the machine names, reports each answer back with the time and a random number,
//! and shows what the machine makes of it. The rules (the concurrency bound, retries, what an
//! answer means, the lines of refused records, the words of a failure) are the machine's; this
//! module only reads, sends, waits and draws.

use super::report::{failed_batch_row, refused_row, rejected_rows, report_of, ReportRow};
use super::{Phase, Target};
use crate::api::{self, now_ms, Connection, Reply};
use crate::components::log::{log_request, push};
use crate::reader::{ChunkReader, CHUNK_BYTES};
use crate::state::{Level, Load, StateHandle};
use datadict_core::{
    Batch, BatchMeta, BatchOptions, BatchStats, Batcher, Dictionary, Failed, IssueSummary, Outcome, Region, Registered, RetryPolicy,
    StatusContext, Upload, UploadOptions, DEFAULT_NAMESPACE,
};
use futures::future::Either;
use futures::stream::{FuturesUnordered, StreamExt};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use web_sys::Blob;
use yew::prelude::*;

/// How long the upload waits at most before it looks at the cancel button again.
const TICK_MS: i64 = 200;

/// Everything the screen shows about a run, replaced as a whole on each update.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub phase: Phase,
    pub total_bytes: f64,
    pub read_bytes: f64,
    pub summary: Option<Rc<IssueSummary>>,
    /// The batcher's totals of the current run (step 1 or step 2).
    pub stats: BatchStats,
    /// Step 1's totals, kept for its summary while step 2 runs.
    pub checked: BatchStats,
    pub events_sent: u64,
    pub events_imported: u64,
    pub events_failed: u64,
    pub bytes_acked: u64,
    pub batches_acked: u64,
    pub batches_failed: u64,
    pub retries: u64,
    /// While a batch waits to be sent again: why the last try failed and when the next one is.
    pub retrying: Option<String>,
    /// Why the last batch that failed for good failed, for the ending sentence.
    pub last_error: Option<String>,
    pub started_ms: f64,
    pub elapsed_ms: f64,
    pub report: Rc<Vec<ReportRow>>,
}

impl Default for Progress {
    fn default() -> Self {
        Self {
            phase: Phase::Idle,
            total_bytes: 0.0,
            read_bytes: 0.0,
            summary: None,
            stats: BatchStats::default(),
            checked: BatchStats::default(),
            events_sent: 0,
            events_imported: 0,
            events_failed: 0,
            bytes_acked: 0,
            batches_acked: 0,
            batches_failed: 0,
            retries: 0,
            retrying: None,
            last_error: None,
            started_ms: 0.0,
            elapsed_ms: 0.0,
            report: Rc::new(Vec::new()),
        }
    }
}

/// What a run keeps between "cancel" and "resume": which batches the server acknowledged (the
/// upload machine of the next run skips them), the clock the checks used (so batches come out
/// identical), and the report so far.
#[derive(Debug, Default)]
pub struct RunMemory {
    acked: HashSet<u64>,
    now_ms: Option<i64>,
    /// Keyed by record index so that a resumed run does not list a record twice.
    local: BTreeMap<(u64, usize), ReportRow>,
    server: Vec<ReportRow>,
    pub progress: Progress,
}

impl RunMemory {
    fn report(&self) -> Rc<Vec<ReportRow>> {
        report_of(&self.local, &self.server)
    }
}

fn wall_clock_ms() -> i64 {
    js_sys::Date::now() as i64
}

async fn sleep_ms(ms: i64) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms.clamp(0, i64::from(i32::MAX)) as i32);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// The shared pieces of a running import.
pub struct Run {
    pub state: StateHandle,
    pub conn: Connection,
    /// Shared with the component, so that a resume sees what was acknowledged.
    pub memory: Rc<RefCell<RunMemory>>,
    pub view: UseStateHandle<Progress>,
    pub cancel: Rc<Cell<bool>>,
    pub target: Target,
}

impl Run {
    fn update(&self, f: impl FnOnce(&mut Progress)) {
        let mut m = self.memory.borrow_mut();
        f(&mut m.progress);
        if m.progress.started_ms > 0.0 {
            m.progress.elapsed_ms = now_ms() - m.progress.started_ms;
        }
        self.view.set(m.progress.clone());
    }

    fn options(&self, gzip: bool) -> BatchOptions {
        let now = *self.memory.borrow_mut().now_ms.get_or_insert_with(wall_clock_ms);
        let dictionary = match (&self.state.dictionary, self.target) {
            (Load::Loaded(d), Target::Events) => Some(Dictionary::new(&d.entries, DEFAULT_NAMESPACE)),
            _ => None,
        };
        BatchOptions { now_ms: now, gzip_level: gzip.then_some(6), dictionary, kind: self.target.kind(), ..BatchOptions::default() }
    }

    fn note_rejected(&self, batcher: &mut Batcher) {
        let rejected = batcher.take_rejected();
        if rejected.is_empty() {
            return;
        }
        let mut m = self.memory.borrow_mut();
        for r in &rejected {
            for (k, row) in rejected_rows(r).enumerate() {
                m.local.insert((r.pos.index, k), row);
            }
        }
    }

    /// The URL the target's batches go to (spec §4.4, FACTS.md), as the core builds it.
    fn url(&self) -> String {
        let endpoints = self.conn.endpoints();
        match self.target {
            Target::Events => endpoints.import(Region::Default, self.conn.project_id, true),
            Target::Profiles => endpoints.engage_project(Region::Default, self.conn.project_id, true),
        }
    }

    /// Shows what the upload machine made of an answer.
    fn apply(&self, outcome: Outcome) {
        match outcome {
            Outcome::Acknowledged(a) => {
                let report = {
                    let mut m = self.memory.borrow_mut();
                    m.acked.insert(a.sequence);
                    m.server.extend(a.failed.iter().map(refused_row));
                    m.report()
                };
                self.update(|p| {
                    p.events_sent += a.records as u64;
                    p.events_imported += a.imported;
                    p.events_failed += a.refused;
                    p.bytes_acked += a.uncompressed_bytes as u64;
                    p.batches_acked += 1;
                    p.report = report;
                    p.retrying = None;
                });
            }
            Outcome::Retry(r) => {
                push(&self.state, Level::Error, format!("batch {} will be sent again in {} s: {}", r.sequence + 1, (r.delay_ms as f64 / 1000.0).round() as u64, r.message));
                let clock = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(r.due_ms as f64)).to_time_string();
                let when = String::from(clock).split(' ').next().unwrap_or_default().to_owned();
                let waiting = format!("{}; batch {} is sent again at {when} (try {})", r.message, r.sequence + 1, r.attempt + 1);
                self.update(|p| {
                    p.retries += 1;
                    p.retrying = Some(waiting);
                });
            }
            Outcome::Failed(f) => self.batch_failed(&f),
        }
    }

    fn batch_failed(&self, failed: &Failed) {
        let report = {
            let mut m = self.memory.borrow_mut();
            let target = self.target;
            m.server.push(failed_batch_row(failed, move |n| super::outcome::records(target, n)));
            m.report()
        };
        self.update(|p| {
            p.batches_failed += 1;
            p.report = report;
            p.retrying = None;
            p.last_error = Some(failed.message.clone());
        });
    }
}

/// Step 1: runs the whole input through the batcher without sending anything.
pub async fn check(run: Rc<Run>, blob: Blob) {
    let mut reader = ChunkReader::new(blob, CHUNK_BYTES);
    let total = reader.size();
    run.update(|p| {
        *p = Progress { phase: Phase::Checking, total_bytes: total, started_ms: now_ms(), ..Progress::default() };
    });
    let mut batcher = Batcher::new(run.options(false));
    loop {
        if run.cancel.get() {
            run.update(|p| p.phase = Phase::Idle);
            return;
        }
        let chunk = match reader.next_chunk().await {
            Ok(c) => c,
            Err(e) => return run.update(|p| p.phase = Phase::Failed(e)),
        };
        let result = match &chunk {
            Some(c) => batcher.push(c),
            None => batcher.finish(),
        };
        if let Err(e) = result {
            return run.update(|p| p.phase = Phase::Failed(format!("the input is not NDJSON or a JSON array: {e}")));
        }
        // Batches are only counted here; dropping them keeps memory flat.
        while batcher.next_batch().is_some() {}
        run.note_rejected(&mut batcher);
        let (read, stats, summary) = (reader.offset(), batcher.stats(), batcher.summary().clone());
        let done = chunk.is_none();
        let report = run.memory.borrow().report();
        run.update(|p| {
            p.read_bytes = read;
            p.stats = stats;
            p.checked = stats;
            p.summary = Some(Rc::new(summary));
            p.report = report;
            if done {
                p.phase = Phase::Checked;
            }
        });
        if done {
            return;
        }
    }
}

/// One request of a batch; the answer goes back to the upload machine as it came.
async fn send(run: Rc<Run>, url: Rc<str>, batch: Rc<Batch>) -> (u64, Result<Reply, String>) {
    let log = log_request(&run.state);
    (batch.sequence, api::send_batch(&run.conn, &url, &batch, &log).await)
}

/// Step 2: reads the input again and uploads every batch not yet acknowledged, `concurrency` at
/// once, as the core's upload machine directs.
pub async fn upload(run: Rc<Run>, blob: Blob, concurrency: usize) {
    let mut reader = ChunkReader::new(blob, CHUNK_BYTES);
    let total = reader.size();
    run.update(|p| {
        p.phase = Phase::Uploading;
        p.total_bytes = total;
        p.started_ms = now_ms();
        p.elapsed_ms = 0.0;
        p.batches_failed = 0;
    });
    run.memory.borrow_mut().server.retain(|r| r.source != "batch");
    let mut batcher = Batcher::new(run.options(true));
    let url: Rc<str> = run.url().into();
    let options = UploadOptions {
        concurrency,
        retry: RetryPolicy::default(),
        // A failed batch is reported and the others go on; resume sends it again.
        stop_on_failure: false,
        context: StatusContext { url: Some(url.to_string()), project_id: Some(run.conn.project_id), ..StatusContext::default() },
    };
    let acked: Vec<u64> = run.memory.borrow().acked.iter().copied().collect();
    let mut machine = Upload::resume(options, acked);
    // The bodies of registered batches, until the machine is done with them.
    let mut bodies: HashMap<u64, Rc<Batch>> = HashMap::new();
    let mut inflight = FuturesUnordered::new();
    // `reading` until the input's end; `stopped` when reading failed (nothing more is sent then).
    let (mut reading, mut stopped, mut cancelled) = (true, false, false);
    loop {
        if run.cancel.get() && !cancelled {
            cancelled = true;
            for failed in machine.cancel() {
                bodies.remove(&failed.sequence);
                run.batch_failed(&failed);
            }
        }
        // Send what the machine names; read on while it wants another batch.
        loop {
            let now = wall_clock_ms();
            while let Some(order) = machine.next_send(now) {
                if let Some(batch) = bodies.get(&order.sequence) {
                    inflight.push(send(run.clone(), url.clone(), batch.clone()));
                }
            }
            if cancelled || !machine.wants_more() {
                break;
            }
            if let Some(mut batch) = batcher.next_batch().filter(|_| !stopped) {
                // The machine keeps the positions; the body stays here.
                let meta = BatchMeta { sequence: batch.sequence, uncompressed_bytes: batch.uncompressed_bytes, positions: std::mem::take(&mut batch.positions) };
                if machine.register(meta) == Registered::Queued {
                    bodies.insert(batch.sequence, Rc::new(batch));
                }
                continue;
            }
            if !reading || stopped || run.cancel.get() {
                break;
            }
            let result = match reader.next_chunk().await {
                Ok(Some(chunk)) => batcher.push(&chunk).map_err(|e| e.to_string()),
                Ok(None) => {
                    reading = false;
                    batcher.finish().map_err(|e| e.to_string())
                }
                Err(e) => Err(e),
            };
            run.note_rejected(&mut batcher);
            let (read, stats) = (reader.offset(), batcher.stats());
            run.update(|p| {
                p.read_bytes = read;
                p.stats = stats;
            });
            if let Err(e) = result {
                // What was sent is still answered; nothing more is read or sent.
                stopped = true;
                run.update(|p| p.phase = Phase::Failed(format!("reading stopped: {e}")));
            }
        }
        let ended = stopped || (!reading && batcher.ready() == 0);
        if machine.is_idle() && (ended || cancelled) {
            break;
        }
        // Wait for an answer, the machine's next retry, or a tick to look at the cancel button.
        let now = wall_clock_ms();
        let wait = machine.next_wake_ms().map_or(TICK_MS, |at| (at - now).clamp(0, TICK_MS));
        if inflight.is_empty() {
            sleep_ms(wait).await;
            continue;
        }
        let Either::Left((Some((sequence, reply)), _)) = futures::future::select(inflight.next(), Box::pin(sleep_ms(wait))).await else {
            continue;
        };
        let reply = match &reply {
            Ok(r) => datadict_core::Reply::Answer { status: r.status, body: r.text.as_bytes(), retry_after: r.retry_after.as_deref() },
            Err(why) => datadict_core::Reply::NetworkError(why),
        };
        if let Some(outcome) = machine.answer(sequence, reply, wall_clock_ms(), js_sys::Math::random()) {
            if !matches!(outcome, Outcome::Retry(_)) {
                bodies.remove(&sequence);
            }
            run.apply(outcome);
        }
    }
    let report = run.memory.borrow().report();
    run.update(|p| {
        p.report = report;
        p.phase = match &p.phase {
            Phase::Failed(m) => Phase::Failed(m.clone()),
            _ if cancelled => Phase::Cancelled,
            _ => Phase::Finished,
        };
    });
    let p = run.memory.borrow().progress.clone();
    push(
        &run.state,
        if p.batches_failed > 0 || p.events_failed > 0 { Level::Error } else { Level::Info },
        format!(
            "import {}: {} imported, {} rejected by the server, {} left out by the check, {} not sent",
            if cancelled { "cancelled" } else { "finished" },
            super::outcome::records(run.target, p.events_imported),
            p.events_failed,
            p.stats.rejected,
            datadict_core::count(p.batches_failed, "batch", "batches")
        ),
    );
}
