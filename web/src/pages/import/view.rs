//! The import screen itself: the choice of records, the input, the two buttons, progress, the
//! check's summary and the report. Running the steps is `run`'s work.

use super::report::{report_csv, report_json, ReportRow};
use super::outcome::{banner, bar, fmt_bytes, summary, tiles};
use super::run::{check, upload, Run, RunMemory};
use super::{Phase, Progress, Target};
use crate::components::download::download;
use crate::components::log::push;
use crate::reader::text_blob;
use crate::state::{use_app_state, Level, Load};
use datadict_core::count;
use std::cell::Cell;
use std::rc::Rc;
use web_sys::{Blob, HtmlInputElement, HtmlTextAreaElement};
use yew::prelude::*;

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
            Some(Rc::new(Run { state: state.clone(), conn, memory: memory.clone(), view: progress.clone(), cancel: flag, target }))
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
                download("import-report.json", "application/json", &report_json(rows))
            };
            if let Err(e) = result {
                push(&state, Level::Error, format!("the report could not be saved: {e}"));
            }
        })
    };

    let p = &*progress;
    let has_source = source.borrow().is_some();
    let (fraction, bar_words) = bar(p);
    let target = *target;
    let dictionary_note = match &state.dictionary {
        _ if target == Target::Profiles => {
            "Each update needs a $distinct_id and exactly one operation, and may be at most 1 MB; $token may be left out because your sign-in signs the requests.".into()
        }
        Load::Loaded(d) => format!("Events are checked against the dictionary ({}).", count(d.entries.len() as u64, "entry", "entries")),
        Load::Loading => "Loading the dictionary…".into(),
        Load::Failed(m) => format!("The dictionary could not be loaded ({m}); events are checked by the import rules only."),
        Load::Idle => "Sign in to check events against the dictionary.".into(),
    };
    let summary = p.summary.as_ref().map(|s| summary(s, p, target));
    let phase_text = match &p.phase {
        Phase::Idle => "Pick a file or paste text, then check it.".to_owned(),
        Phase::Checking => "Checking…".into(),
        Phase::Checked => "Checked. Nothing has been sent yet: upload when ready.".into(),
        Phase::Uploading => "Uploading…".into(),
        Phase::Cancelling => "Cancelling: waiting for the requests already sent…".into(),
        Phase::Cancelled => "Cancelled. Resume sends only the batches not yet acknowledged.".into(),
        Phase::Finished if p.batches_failed > 0 => format!("Finished with {} not imported: resume to send them again.", count(p.batches_failed, "batch", "batches")),
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
                <label for="kind-events">{ "Events" }</label>
                <input id="kind-profiles" type="radio" name="import-kind" checked={target == Target::Profiles} onchange={ontarget(Target::Profiles)} disabled={busy} />
                <label for="kind-profiles">{ "Profile updates" }</label>
            </fieldset>
            <p class="hint">{ match target {
                Target::Events => "NDJSON (one event per line) or a JSON array of events. ",
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
            <label for="import-progress" id="import-progress-words" class="hint">{ bar_words }</label>
            // In thousandths, from an integer: an `f64` as text would add the standard library's float
            // formatting (about 7 KB gzipped) to the wasm.
            <progress id="import-progress" max="1000" value={((fraction * 1000.0).round() as u32).to_string()}></progress>
            { banner(p, target, ondownload(true)) }
            { tiles(p, target) }
            <details class="tech">
                <summary>{ "For developers" }</summary>
                <p><b id="stat-memory">{ fmt_bytes(crate::wasm_memory_bytes()) }</b>{ " of memory used by the app at its peak" }</p>
            </details>
            { summary.unwrap_or_default() }
            if !p.report.is_empty() {
                <h3>{ format!("Report: {}", count(p.report.len() as u64, "problem", "problems")) }</h3>
                <div class="actions">
                    <button id="report-csv" onclick={ondownload(true)}>{ "Download report (CSV)" }</button>
                    <button id="report-json" onclick={ondownload(false)}>{ "Download report (JSON)" }</button>
                </div>
                { report_table(&p.report) }
                if p.report.len() > 500 { <p class="hint">{ format!("The first 500 of {} are shown; the download has them all.", p.report.len()) }</p> }
            }
        </section>
    }
}

/// The report's table. The "Found by" column appears only when the rows come from more than one
/// place, since a column that always says the same thing tells nothing. On a phone each row is a
/// card, so the message stays in view.
fn report_table(rows: &[ReportRow]) -> Html {
    let mixed = rows.iter().any(|r| r.source != rows[0].source);
    let found_by = |source: &str| match source {
        "check" => "check",
        "server" => "server",
        _ => "not sent",
    };
    html! {
        <div class="table-wrap">
        <table class="summary cards" id="import-report">
            <thead><tr>
                <th scope="col">{ "Line" }</th>
                if mixed { <th scope="col">{ "Found by" }</th> }
                <th scope="col">{ "Field" }</th>
                <th scope="col">{ "Problem" }</th>
            </tr></thead>
            <tbody>{ for rows.iter().take(500).map(|r| html! {
                <tr class="report-row" data-line={r.line.to_string()}>
                    <td class="count" data-label="Line">{ super::report::position(r.line, r.index) }</td>
                    if mixed { <td data-label="Found by">{ found_by(r.source) }</td> }
                    <td data-label="Field"><code>{ r.field.clone() }</code></td>
                    <td class="message" data-label="Problem">{ r.message.clone() }</td>
                </tr>
            }) }</tbody>
        </table>
        </div>
    }
}
