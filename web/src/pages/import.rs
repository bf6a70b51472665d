//! The import screen: events for `/import` or profile updates for `/engage`, from a file (read in
//! chunks, never whole) or pasted text; step 1 checks every record with the core's `Batcher`
//! (spec rules, and the dictionary for events) and shows a summary; step 2 uploads the batches
//! with bounded concurrency, retries, cancel and resume, and ends with a report that maps each
//! rejected record back to its input line.

use crate::api::{self, now_ms, ApiError, Connection};
use crate::app::{use_app_state, StateHandle};
use crate::components::download::download;
use crate::components::log::{log_request, push};
use crate::reader::{text_blob, ChunkReader, CHUNK_BYTES};
use crate::state::{Level, Load};
use datadict_core::{
    Attempt, Batch, BatchOptions, BatchStats, Batcher, Decision, Dictionary, IssueSummary, RecordKind, RetryPolicy, Tally, TokenRule,
    DEFAULT_NAMESPACE,
};
use futures::StreamExt;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;
use web_sys::{Blob, HtmlInputElement, HtmlTextAreaElement};
use yew::prelude::*;

/// What the input holds, and so where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Target {
    /// Events for `POST /import`.
    #[default]
    Events,
    /// Profile updates for `POST /engage`.
    Profiles,
}

impl Target {
    /// The core's record kind. `$token` is optional in profile updates because the app sends them
    /// with the service account's Basic auth, and the server then accepts updates without it.
    pub fn kind(self) -> RecordKind {
        match self {
            Self::Events => RecordKind::Events,
            Self::Profiles => RecordKind::ProfileUpdates(TokenRule::Optional),
        }
    }

    pub fn noun(self) -> &'static str {
        match self {
            Self::Events => "events",
            Self::Profiles => "profile updates",
        }
    }
}

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

/// Where the screen is.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    Idle,
    Checking,
    Checked,
    Uploading,
    Cancelling,
    Cancelled,
    Finished,
    Failed(String),
}

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
            started_ms: 0.0,
            elapsed_ms: 0.0,
            report: Rc::new(Vec::new()),
        }
    }
}

/// What a run keeps between "cancel" and "resume": which batches the server acknowledged (they
/// are never sent again), the clock the checks used (so batches come out identical), and the
/// report so far.
#[derive(Debug, Default)]
struct RunMemory {
    acked: HashSet<u64>,
    now_ms: Option<i64>,
    /// Keyed by record index so that a resumed run does not list a record twice.
    local: BTreeMap<u64, ReportRow>,
    server: Vec<ReportRow>,
    progress: Progress,
}

fn report_of(memory: &RunMemory) -> Rc<Vec<ReportRow>> {
    let mut rows: Vec<ReportRow> = memory.local.values().cloned().chain(memory.server.iter().cloned()).collect();
    rows.sort_by_key(|r| (r.line, r.index));
    Rc::new(rows)
}

fn wall_clock_ms() -> i64 {
    js_sys::Date::now() as i64
}

async fn sleep_ms(ms: f64) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms as i32);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// The shared pieces of a running import.
struct Run {
    state: StateHandle,
    conn: Connection,
    memory: Rc<RefCell<RunMemory>>,
    view: UseStateHandle<Progress>,
    cancel: Rc<Cell<bool>>,
    retry: RetryPolicy,
    target: Target,
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
        for r in rejected {
            let (field, message) = r.issues.first().map_or((String::new(), String::new()), |i| (i.path.clone(), i.message.clone()));
            let extra = if r.issues.len() > 1 { format!(" (and {} more problems)", r.issues.len() - 1) } else { String::new() };
            m.local.insert(r.pos.index, ReportRow { line: r.pos.line, index: r.pos.index, source: "check", field, message: message + &extra });
        }
    }
}

/// Step 1: runs the whole input through the batcher without sending anything.
async fn check(run: Rc<Run>, blob: Blob) {
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
        let report = report_of(&run.memory.borrow());
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

/// Step 2: reads the input again, sends every batch not yet acknowledged, `concurrency` at once.
async fn upload(run: Rc<Run>, blob: Blob, concurrency: usize) {
    let reader = ChunkReader::new(blob, CHUNK_BYTES);
    let total = reader.size();
    run.update(|p| {
        p.phase = Phase::Uploading;
        p.total_bytes = total;
        p.started_ms = now_ms();
        p.elapsed_ms = 0.0;
        p.batches_failed = 0;
    });
    run.memory.borrow_mut().server.retain(|r| r.source != "batch");
    let batcher = Batcher::new(run.options(true));
    let producer = {
        let run = run.clone();
        futures::stream::unfold(Some((reader, batcher, false)), move |state| {
            let run = run.clone();
            async move {
                let (mut reader, mut batcher, mut finished) = state?;
                loop {
                    if run.cancel.get() {
                        return None;
                    }
                    if let Some(batch) = batcher.next_batch() {
                        if run.memory.borrow().acked.contains(&batch.sequence) {
                            continue;
                        }
                        return Some((batch, Some((reader, batcher, finished))));
                    }
                    if finished {
                        return None;
                    }
                    let result = match reader.next_chunk().await {
                        Ok(Some(chunk)) => batcher.push(&chunk).map_err(|e| e.to_string()),
                        Ok(None) => {
                            finished = true;
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
                        run.update(|p| p.phase = Phase::Failed(format!("reading stopped: {e}")));
                        return None;
                    }
                }
            }
        })
    };
    producer.map(|batch| send(run.clone(), batch)).buffer_unordered(concurrency.max(1)).for_each(|()| async {}).await;
    let report = report_of(&run.memory.borrow());
    let cancelled = run.cancel.get();
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
            "import {}: {} {} imported, {} rejected by the server, {} left out by the check, {} batches not sent",
            if cancelled { "cancelled" } else { "finished" },
            p.events_imported,
            run.target.noun(),
            p.events_failed,
            p.stats.rejected,
            p.batches_failed
        ),
    );
}

/// Sends one batch, retrying as the core's `RetryPolicy` decides (FACTS.md: 429, 502, 503 and
/// network failures, backing off from 2 s to 60 s with jitter; never a 400 as is).
async fn send(run: Rc<Run>, batch: Batch) {
    let log = log_request(&run.state);
    let events = batch.events() as u64;
    let mut attempt = 0;
    loop {
        let answer = match run.target {
            Target::Events => api::import_batch(&run.conn, &batch, &log).await,
            Target::Profiles => api::engage_batch(&run.conn, &batch, &log).await,
        };
        match answer {
            Ok(answer) => {
                let imported = answer.num_records_imported.unwrap_or(0);
                let failed = answer.failed_records.unwrap_or_default();
                let failed_count = failed.iter().map(|f| f.index).collect::<HashSet<_>>().len() as u64;
                {
                    let mut m = run.memory.borrow_mut();
                    m.acked.insert(batch.sequence);
                    for f in failed {
                        let pos = batch.input_position(f.index).unwrap_or_default();
                        m.server.push(ReportRow { line: pos.line, index: pos.index, source: "server", field: f.field, message: f.message });
                    }
                }
                let report = report_of(&run.memory.borrow());
                run.update(|p| {
                    p.events_sent += events;
                    p.events_imported += imported;
                    p.events_failed += failed_count;
                    p.bytes_acked += batch.uncompressed_bytes as u64;
                    p.batches_acked += 1;
                    p.report = report;
                });
                return;
            }
            Err(err) => {
                attempt += 1;
                let (outcome, retry_after_ms) = match &err {
                    ApiError::Network(_) => (Attempt::NetworkError, None),
                    ApiError::Unauthorized(_) => (Attempt::Status(401), None),
                    ApiError::Forbidden(_) => (Attempt::Status(403), None),
                    ApiError::Status { status, .. } => (Attempt::Status(*status), None),
                    ApiError::RateLimited { retry_after_ms, .. } => (Attempt::Status(429), *retry_after_ms),
                    // An answer that cannot be read will not read better the second time.
                    ApiError::Decode(_) => (Attempt::Status(0), None),
                };
                if let Decision::RetryAfterMs(wait) = run.retry.decide(attempt, outcome, retry_after_ms, js_sys::Math::random()) {
                    if !run.cancel.get() {
                        push(&run.state, Level::Error, format!("batch {} will be sent again in {:.0} s: {err}", batch.sequence + 1, wait as f64 / 1000.0));
                        run.update(|p| p.retries += 1);
                        sleep_ms(wait as f64).await;
                        continue;
                    }
                }
                batch_failed(&run, &batch, &err);
                return;
            }
        }
    }
}

fn batch_failed(run: &Run, batch: &Batch, err: &ApiError) {
    let first = batch.positions.first().copied().unwrap_or_default();
    let last = batch.positions.last().copied().unwrap_or_default();
    run.memory.borrow_mut().server.push(ReportRow {
        line: first.line,
        index: first.index,
        source: "batch",
        field: String::new(),
        message: format!(
            "batch {} (lines {}–{}, {} {}) was not imported: {err}. Resume sends it again",
            batch.sequence + 1,
            first.line,
            last.line,
            batch.events(),
            run.target.noun()
        ),
    });
    let report = report_of(&run.memory.borrow());
    run.update(|p| {
        p.batches_failed += 1;
        p.report = report;
    });
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The report as CSV: one row per problem, with the input line first.
pub fn report_csv(rows: &[ReportRow]) -> String {
    let mut out = String::from("line,index,source,field,message\n");
    for r in rows {
        out.push_str(&format!("{},{},{},{},{}\n", r.line, r.index, r.source, csv_field(&r.field), csv_field(&r.message)));
    }
    out
}

fn fmt_bytes(b: f64) -> String {
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MB", b / 1024.0 / 1024.0)
    } else if b >= 1024.0 {
        format!("{:.1} KB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

fn lines(t: &Tally) -> String {
    let mut s: Vec<String> = t.examples.iter().map(|p| p.line.to_string()).collect();
    if (t.count as usize) > t.examples.len() {
        s.push("…".into());
    }
    s.join(", ")
}

fn tally_table(id: &str, title: &str, head: &str, rows: Vec<(String, &Tally)>) -> Html {
    if rows.is_empty() {
        return html! {};
    }
    html! {
        <>
        <h4>{ title }</h4>
        <table class="summary" id={id.to_owned()}>
            <thead><tr><th scope="col">{ head }</th><th scope="col">{ "Count" }</th><th scope="col">{ "Example lines" }</th></tr></thead>
            <tbody>{ for rows.into_iter().take(100).map(|(k, t)| html! {
                <tr><td><code>{ k }</code></td><td class="count">{ t.count }</td><td>{ lines(t) }</td></tr>
            }) }</tbody>
        </table>
        </>
    }
}

#[component]
pub fn ImportPage() -> Html {
    let state = use_app_state();
    let progress = use_state(Progress::default);
    let memory = use_mut_ref(RunMemory::default);
    let cancel = use_mut_ref(|| Rc::new(Cell::new(false)));
    let source = use_mut_ref(|| None::<Blob>);
    let source_name = use_state(String::new);
    let pasted = use_state(String::new);
    let concurrency = use_state(|| 4usize);
    let target = use_state(Target::default);
    let busy = matches!(progress.phase, Phase::Checking | Phase::Uploading | Phase::Cancelling);

    // A new input forgets everything about the previous run.
    let reset = {
        let (memory, progress) = (memory.clone(), progress.clone());
        move || {
            *memory.borrow_mut() = RunMemory::default();
            progress.set(Progress::default());
        }
    };
    let onfile = {
        let (source, source_name, reset) = (source.clone(), source_name.clone(), reset.clone());
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            if let Some(file) = input.files().and_then(|f| f.get(0)) {
                source_name.set(format!("{} ({})", file.name(), fmt_bytes(file.size())));
                *source.borrow_mut() = Some(file.into());
                reset();
            }
        })
    };
    let onpaste = {
        let pasted = pasted.clone();
        Callback::from(move |e: InputEvent| pasted.set(e.target_unchecked_into::<HtmlTextAreaElement>().value()))
    };
    let onusepaste = {
        let (source, source_name, pasted, reset) = (source.clone(), source_name.clone(), pasted.clone(), reset.clone());
        Callback::from(move |_| match text_blob(&pasted) {
            Ok(blob) => {
                source_name.set(format!("pasted text ({})", fmt_bytes(blob.size())));
                *source.borrow_mut() = Some(blob);
                reset();
            }
            Err(e) => source_name.set(format!("the text could not be used: {e}")),
        })
    };
    let ontarget = |choice: Target| {
        let (target, reset) = (target.clone(), reset.clone());
        Callback::from(move |_: Event| {
            target.set(choice);
            // Batches and acknowledgements of one kind mean nothing for the other.
            reset();
        })
    };
    let make_run = {
        let (state, memory, progress, cancel, target) = (state.clone(), memory.clone(), progress.clone(), cancel.clone(), *target);
        move || -> Option<Rc<Run>> {
            let conn = state.connection.clone()?;
            let flag = Rc::new(Cell::new(false));
            *cancel.borrow_mut() = flag.clone();
            // The run shares the component's memory, so that resume sees what was acknowledged.
            Some(Rc::new(Run {
                state: state.clone(),
                conn,
                memory: memory.clone(),
                view: progress.clone(),
                cancel: flag,
                retry: RetryPolicy::default(),
                target,
            }))
        }
    };
    let oncheck = {
        let (source, make_run, reset) = (source.clone(), make_run.clone(), reset.clone());
        Callback::from(move |_| {
            let Some(blob) = source.borrow().clone() else { return };
            reset();
            let Some(run) = make_run() else { return };
            wasm_bindgen_futures::spawn_local(check(run, blob));
        })
    };
    let onupload = {
        let (source, make_run, concurrency) = (source.clone(), make_run.clone(), concurrency.clone());
        Callback::from(move |_| {
            let Some(blob) = source.borrow().clone() else { return };
            let Some(run) = make_run() else { return };
            wasm_bindgen_futures::spawn_local(upload(run, blob, *concurrency));
        })
    };
    let oncancel = {
        let (cancel, progress) = (cancel.clone(), progress.clone());
        Callback::from(move |_| {
            cancel.borrow().set(true);
            let mut p = (*progress).clone();
            if p.phase == Phase::Uploading {
                p.phase = Phase::Cancelling;
                progress.set(p);
            }
        })
    };
    let onconcurrency = {
        let concurrency = concurrency.clone();
        Callback::from(move |e: InputEvent| {
            if let Ok(n) = e.target_unchecked_into::<HtmlInputElement>().value().parse::<usize>() {
                concurrency.set(n.clamp(1, 20));
            }
        })
    };
    let ondownload = |csv: bool| {
        let (progress, state) = (progress.clone(), state.clone());
        Callback::from(move |_| {
            let rows = &progress.report;
            let result = if csv {
                download("import-report.csv", "text/csv", &report_csv(rows))
            } else {
                let json: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|r| serde_json::json!({"line": r.line, "index": r.index, "source": r.source, "field": r.field, "message": r.message}))
                    .collect();
                download("import-report.json", "application/json", &serde_json::to_string_pretty(&json).unwrap_or_default())
            };
            if let Err(e) = result {
                push(&state, Level::Error, format!("the report could not be saved: {e}"));
            }
        })
    };

    let p = &*progress;
    let has_source = source.borrow().is_some();
    let secs = (p.elapsed_ms / 1000.0).max(0.001);
    let byte_rate = p.bytes_acked as f64 / secs;
    let left = if byte_rate > 0.0 { ((p.total_bytes - p.bytes_acked as f64).max(0.0) / byte_rate).round() } else { f64::NAN };
    let fraction = if p.total_bytes > 0.0 {
        match p.phase {
            Phase::Checking | Phase::Checked => p.read_bytes / p.total_bytes,
            // Rejected records are never acknowledged, so bytes alone would stop short of full.
            Phase::Finished if p.batches_failed == 0 => 1.0,
            _ => (p.bytes_acked as f64 / p.total_bytes).min(1.0),
        }
    } else {
        0.0
    };
    let target = *target;
    let dictionary_note = match &state.dictionary {
        _ if target == Target::Profiles => {
            "Profile updates are checked by the /engage rules: one operation each, a $distinct_id, and at most 1 MB; $token may be left out because the service account signs the requests.".into()
        }
        Load::Loaded(d) => format!("Events are checked against the dictionary ({} entities).", d.entries.len()),
        Load::Loading => "Loading the dictionary…".into(),
        Load::Failed(m) => format!("The dictionary could not be loaded ({m}); events are checked by the spec's rules only."),
        Load::Idle => "Connect to check events against the dictionary.".into(),
    };
    let summary = p.summary.as_ref().map(|s| {
        html! {
            <div id="check-summary">
                <h3>{ "Step 1 result" }</h3>
                <p id="check-counts">{ match target {
                    Target::Events => format!(
                        "{} records; {} with problems or notes; {} would be left out (invalid); {} dropped by the dictionary; {} batches.",
                        s.records, s.records_with_issues, p.checked.rejected, p.checked.dropped, p.checked.batches),
                    Target::Profiles => format!(
                        "{} records; {} with problems; {} would be left out (invalid); {} batches.",
                        s.records, s.records_with_issues, p.checked.rejected, p.checked.batches),
                } }</p>
                { tally_table("by-problem", "By problem", "Problem", s.by_code.iter().map(|(c, t)| (c.to_string(), t)).collect()) }
                { match target {
                    Target::Events => tally_table("by-event", "By event", "Event", s.by_event.iter().map(|(e, t)| (if e.is_empty() { "(no event name)".to_owned() } else { e.clone() }, t)).collect()),
                    Target::Profiles => tally_table("by-operation", "By operation", "Operation", s.by_event.iter().map(|(e, t)| (if e.is_empty() { "(no single operation)".to_owned() } else { e.clone() }, t)).collect()),
                } }
                { tally_table("by-property", "By property", "Property", s.by_property.iter().map(|(e, t)| (e.clone(), t)).collect()) }
            </div>
        }
    });
    let phase_text = match &p.phase {
        Phase::Idle => "Pick a file or paste text, then check it.".to_owned(),
        Phase::Checking => "Checking…".into(),
        Phase::Checked => "Checked. Nothing has been sent yet.".into(),
        Phase::Uploading => "Uploading…".into(),
        Phase::Cancelling => "Cancelling: waiting for the requests already sent…".into(),
        Phase::Cancelled => "Cancelled. Resume sends only the batches not yet acknowledged.".into(),
        Phase::Finished if p.batches_failed > 0 => format!("Finished with {} batches not imported: resume to send them again.", p.batches_failed),
        Phase::Finished => "Finished.".into(),
        Phase::Failed(m) => format!("Stopped: {m}"),
    };
    let finished_clean = p.phase == Phase::Finished && p.batches_failed == 0;
    let can_upload = has_source && !busy && !finished_clean && matches!(p.phase, Phase::Checked | Phase::Cancelled | Phase::Finished | Phase::Failed(_));
    let resume = matches!(p.phase, Phase::Cancelled) || (p.phase == Phase::Finished && p.batches_failed > 0);
    html! {
        <section class="card" id="import">
            <h2>{ "Import" }</h2>
            <fieldset class="choice" id="import-kind">
                <legend>{ "Records" }</legend>
                <input id="kind-events" type="radio" name="import-kind" checked={target == Target::Events} onchange={ontarget(Target::Events)} disabled={busy} />
                <label for="kind-events">{ "Events (/import)" }</label>
                <input id="kind-profiles" type="radio" name="import-kind" checked={target == Target::Profiles} onchange={ontarget(Target::Profiles)} disabled={busy} />
                <label for="kind-profiles">{ "Profile updates (/engage)" }</label>
            </fieldset>
            <p class="hint">{ match target {
                Target::Events => "NDJSON (one event per line) or a JSON array of events (spec §2.8). ",
                Target::Profiles => "NDJSON (one update per line) or a JSON array of updates such as {\"$distinct_id\": \"u1\", \"$set\": {\"plan\": \"pro\"}}. ",
            } }{ "The file is read in 1 MB slices, so its size does not matter. " }{ dictionary_note }</p>
            <label for="import-file">{ if target == Target::Events { "Events file" } else { "Profile updates file" } }</label>
            <input id="import-file" type="file" accept=".json,.ndjson,.jsonl,.txt,application/json,application/x-ndjson" onchange={onfile} disabled={busy} />
            <details>
                <summary>{ "…or paste text" }</summary>
                <label for="import-text">{ if target == Target::Events { "Events as text" } else { "Profile updates as text" } }</label>
                <textarea id="import-text" rows="6" value={(*pasted).clone()} oninput={onpaste} disabled={busy} />
                <button id="use-text" onclick={onusepaste} disabled={busy || pasted.is_empty()}>{ "Use this text" }</button>
            </details>
            <p id="import-source">{ if source_name.is_empty() { "No input chosen.".to_owned() } else { format!("Input: {}", *source_name) } }</p>
            <div class="actions">
                <button id="import-check" onclick={oncheck} disabled={!has_source || busy}>{ "1. Check" }</button>
                <label for="concurrency">{ "Requests at once" }</label>
                <input id="concurrency" type="number" min="1" max="20" value={concurrency.to_string()} oninput={onconcurrency} disabled={busy} />
                <button id="import-upload" onclick={onupload} disabled={!can_upload}>{ if resume { "Resume upload" } else { "2. Upload" } }</button>
                <button id="import-cancel" onclick={oncancel} disabled={!busy}>{ "Cancel" }</button>
            </div>
            <p id="import-phase" role="status">{ phase_text }</p>
            <progress id="import-progress" max="1" value={fraction.to_string()} aria-label="Progress"></progress>
            <div class="stats" id="import-stats">
                <div><b id="stat-events">{ format!("{} / {}", p.events_imported, p.stats.batched) }</b>{ format!("{} imported / batched", target.noun()) }</div>
                <div><b>{ format!("{} of {}", fmt_bytes(p.bytes_acked as f64), fmt_bytes(p.total_bytes)) }</b>{ "sent and acknowledged" }</div>
                <div><b>{ format!("{:.0} records/s · {}/s", p.events_sent as f64 / secs, fmt_bytes(byte_rate)) }</b>{ "rate" }</div>
                <div><b>{ if left.is_finite() && p.phase == Phase::Uploading { format!("{left:.0} s") } else { "–".into() } }</b>{ "time left" }</div>
                <div><b id="stat-failed">{ p.events_failed + p.stats.rejected }</b>{ "records rejected" }</div>
                <div><b>{ p.retries }</b>{ "retries" }</div>
                <div><b id="stat-memory">{ fmt_bytes(crate::wasm_memory_bytes()) }</b>{ "app memory (peak)" }</div>
            </div>
            { summary.unwrap_or_default() }
            if !p.report.is_empty() {
                <h3>{ format!("Report: {} problems", p.report.len()) }</h3>
                <div class="actions">
                    <button id="report-csv" onclick={ondownload(true)}>{ "Download report (CSV)" }</button>
                    <button id="report-json" onclick={ondownload(false)}>{ "Download report (JSON)" }</button>
                </div>
                <div class="table-wrap">
                <table class="summary" id="import-report">
                    <thead><tr><th scope="col">{ "Line" }</th><th scope="col">{ "Where" }</th><th scope="col">{ "Field" }</th><th scope="col">{ "Problem" }</th></tr></thead>
                    <tbody>{ for p.report.iter().take(500).map(|r| html! {
                        <tr class="report-row" data-line={r.line.to_string()}>
                            <td class="count">{ r.line }</td><td>{ r.source }</td><td><code>{ r.field.clone() }</code></td><td>{ r.message.clone() }</td>
                        </tr>
                    }) }</tbody>
                </table>
                </div>
                if p.report.len() > 500 { <p class="hint">{ format!("The first 500 of {} are shown; the download has them all.", p.report.len()) }</p> }
            }
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn the_report_csv_quotes_what_needs_quoting() {
        let rows = [ReportRow { line: 3, index: 2, source: "server", field: "properties.time".into(), message: "bad, \"very\"".into() }];
        assert_eq!(report_csv(&rows), "line,index,source,field,message\n3,2,server,properties.time,\"bad, \"\"very\"\"\"\n");
    }

    #[wasm_bindgen_test]
    async fn profile_updates_from_a_blob_become_engage_bodies_with_their_lines() {
        // No `$token`: the screen signs `/engage` with the service account, so it is optional.
        let text = "{\"$distinct_id\":\"u1\",\"$set\":{\"plan\":\"pro\"}}\n\n{\"$distinct_id\":\"u2\"}\n{\"$distinct_id\":\"u3\",\"$unset\":[\"plan\"]}\n";
        let mut reader = ChunkReader::new(text_blob(text).unwrap(), 5.0);
        let options = BatchOptions { kind: Target::Profiles.kind(), gzip_level: None, ..BatchOptions::default() };
        let mut batcher = Batcher::new(options);
        while let Some(chunk) = reader.next_chunk().await.unwrap() {
            batcher.push(&chunk).unwrap();
        }
        batcher.finish().unwrap();
        let rejected = batcher.take_rejected();
        assert_eq!(rejected.iter().map(|r| (r.pos.line, r.issues[0].code.as_str())).collect::<Vec<_>>(), [(3, "missing_operation")]);
        let batch = batcher.next_batch().unwrap();
        let body: Vec<serde_json::Value> = serde_json::from_slice(&batch.body).unwrap();
        assert_eq!(body.iter().map(|u| u["$distinct_id"].as_str().unwrap()).collect::<Vec<_>>(), ["u1", "u3"]);
        assert_eq!(batch.positions.iter().map(|p| p.line).collect::<Vec<_>>(), [1, 4]);
        assert_eq!(Target::Events.kind(), RecordKind::Events);
    }
}
