//! The import screen itself: the choice of records, the input, the two buttons, progress, the
//! check's summary and the report. Running the steps is `run`'s work.

use super::report::{report_csv, report_json};
use super::run::{check, upload, Run, RunMemory};
use super::{Phase, Progress, Target};
use crate::components::download::download;
use crate::components::log::push;
use crate::reader::text_blob;
use crate::state::{use_app_state, Level, Load};
use datadict_core::Tally;
use std::cell::Cell;
use std::rc::Rc;
use web_sys::{Blob, HtmlInputElement, HtmlTextAreaElement};
use yew::prelude::*;

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
