//! What the import screen says about a run, drawn from its `Progress` alone: the one-sentence
//! outcome at the end, the tiles (consistent with that sentence at every moment), the progress
//! bar's value and words, and the check's summary with errors and notes apart, each code in words
//! with the code beside it.

use super::run::Progress;
use super::{Phase, Target};
use datadict_core::{count, IssueCode, IssueSummary, Tally};
use yew::prelude::*;

/// A size in B, KB or MB with one decimal. Formatted from integers: the standard library's
/// fixed-precision float formatting would add about 4 KB gzipped to the app's wasm.
pub fn fmt_bytes(b: f64) -> String {
    let one_decimal = |x: f64, unit: &str| {
        let tenths = (x * 10.0).round() as u64;
        format!("{}.{} {unit}", tenths / 10, tenths % 10)
    };
    if b >= 1024.0 * 1024.0 {
        one_decimal(b / 1024.0 / 1024.0, "MB")
    } else if b >= 1024.0 {
        one_decimal(b / 1024.0, "KB")
    } else {
        format!("{} B", b.round() as u64)
    }
}

/// "event"/"events" or "profile update"/"profile updates", with the count.
pub fn records(target: Target, n: u64) -> String {
    match target {
        Target::Events => count(n, "event", "events"),
        Target::Profiles => count(n, "profile update", "profile updates"),
    }
}

/// Whether step 2 has begun, so that the server's counts mean something.
fn sending_started(phase: &Phase) -> bool {
    matches!(phase, Phase::Uploading | Phase::Cancelling | Phase::Cancelled | Phase::Finished) || matches!(phase, Phase::Failed(_))
}

/// The records the check leaves out: step 2's own count once it has read the input, else step 1's.
fn left_out(p: &Progress) -> u64 {
    if sending_started(&p.phase) && p.stats.records > 0 {
        p.stats.rejected
    } else {
        p.checked.rejected
    }
}

/// The one sentence at the end of an upload; `None` before one has ended. `ondownload` is the
/// report's download, offered in the sentence when there is a report.
pub fn banner(p: &Progress, target: Target, ondownload: Callback<MouseEvent>) -> Html {
    let ended = matches!(p.phase, Phase::Finished | Phase::Cancelled) || (matches!(p.phase, Phase::Failed(_)) && p.batches_acked + p.batches_failed > 0);
    if !ended {
        return html! {};
    }
    let (imported, left, refused, dropped) = (p.events_imported, left_out(p), p.events_failed, p.stats.dropped);
    let clean = left == 0 && refused == 0 && p.batches_failed == 0 && p.phase == Phase::Finished;
    let mut rest = vec![];
    if dropped > 0 {
        rest.push(format!("{dropped} dropped by the dictionary"));
    }
    if p.batches_failed > 0 {
        let why = p.last_error.as_ref().map_or(String::new(), |e| format!(" (the last failure: {e})"));
        rest.push(format!("{} not sent{why}: resume to send {}", count(p.batches_failed, "batch", "batches"), if p.batches_failed == 1 { "it" } else { "them" }));
    }
    if p.phase == Phase::Cancelled {
        rest.push("cancelled: resume sends only what was not acknowledged".into());
    }
    html! {
        <div id="import-outcome" class={classes!("outcome", if clean { "ok" } else { "warn" })} role="status"
            data-imported={imported.to_string()} data-left-out={left.to_string()} data-refused={refused.to_string()}>
            <span class="outcome-icon" aria-hidden="true">{ if clean { "✔" } else { "!" } }</span>
            <p>
                { format!("{} imported; {left} left out by the check", records(target, imported)) }
                if !p.report.is_empty() {
                    { ", " }<button class="link" id="outcome-download" onclick={ondownload}>{ "download the report" }</button>
                }
                { format!("; {refused} rejected by the server") }
                { for rest.iter().map(|r| format!("; {r}")) }
                { "." }
            </p>
        </div>
    }
}

/// The progress bar's value (0 to 1) and the words beside it. After the check the bar is empty,
/// because nothing has been sent yet.
pub fn bar(p: &Progress) -> (f64, String) {
    let of = |a: f64| if p.total_bytes > 0.0 { (a / p.total_bytes).clamp(0.0, 1.0) } else { 0.0 };
    match &p.phase {
        Phase::Idle => (0.0, "Nothing checked yet".into()),
        Phase::Checking => (of(p.read_bytes), format!("Checking: {} of {} read", fmt_bytes(p.read_bytes), fmt_bytes(p.total_bytes))),
        Phase::Checked => (0.0, "Upload progress".into()),
        // Left-out records are never acknowledged, so bytes alone would stop short of full.
        Phase::Finished if p.batches_failed == 0 => (1.0, "Every batch sent".into()),
        _ => {
            // While a batch waits to be tried again, the page says why and when, not only the log.
            let waiting = p.retrying.as_ref().map_or(String::new(), |r| format!(". Waiting to retry: {r}"));
            (of(p.bytes_acked as f64), format!("Sent: {} of {} acknowledged{waiting}", fmt_bytes(p.bytes_acked as f64), fmt_bytes(p.total_bytes)))
        }
    }
}

/// The tiles under the bar.
pub fn tiles(p: &Progress, target: Target) -> Html {
    let secs = (p.elapsed_ms / 1000.0).max(0.001);
    let byte_rate = p.bytes_acked as f64 / secs;
    let left = if byte_rate > 0.0 { ((p.total_bytes - p.bytes_acked as f64).max(0.0) / byte_rate).round() } else { f64::NAN };
    let started = sending_started(&p.phase);
    let to_send = if started { p.stats.batched } else { p.checked.batched };
    let checked = p.phase != Phase::Idle && p.phase != Phase::Checking;
    let noun = target.noun();
    html! {
        <div class="stats" id="import-stats">
            <div><b id="stat-events">{ format!("{} / {}", p.events_imported, to_send) }</b>{ format!("{noun} imported / to send") }</div>
            <div><b id="stat-left-out">{ if checked { left_out(p).to_string() } else { "–".into() } }</b>{ "left out by the check" }</div>
            <div><b id="stat-refused">{ if started { p.events_failed.to_string() } else { "–".into() } }</b>{ "rejected by the server" }</div>
            <div><b>{ if started { fmt_bytes(p.bytes_acked as f64) } else { "–".into() } }</b>{ "sent and acknowledged" }</div>
            <div><b>{ if started { format!("{} records/s", (p.events_sent as f64 / secs).round() as u64) } else { "–".into() } }</b>{ "rate" }</div>
            <div><b>{ if left.is_finite() && p.phase == Phase::Uploading { format!("{} s", left.round() as u64) } else { "–".into() } }</b>{ "time left" }</div>
            <div><b>{ p.retries }</b>{ "retries" }</div>
        </div>
    }
}

fn lines(t: &Tally) -> String {
    let mut s: Vec<String> = t.examples.iter().map(|p| super::report::position(p.line, p.index)).collect();
    if (t.count as usize) > t.examples.len() {
        s.push("…".into());
    }
    s.join(", ")
}

/// A table of tallies, the first cell already drawn. It takes a `Vec` rather than an iterator so
/// that the table is compiled once, not once per caller (the app's size budget).
fn tally_table(id: &str, title: &str, head: &str, mut rows: Vec<(Html, &Tally)>) -> Html {
    rows.truncate(100);
    if rows.is_empty() {
        return html! {};
    }
    html! {
        <>
        <h4>{ title }</h4>
        <table class="summary cards" id={id.to_owned()}>
            <thead><tr><th scope="col">{ head }</th><th scope="col">{ "Count" }</th><th scope="col">{ "Example lines" }</th></tr></thead>
            <tbody>{ for rows.into_iter().map(|(k, t)| html! {
                <tr><td data-label={head.to_owned()}>{ k }</td><td class="count" data-label="Count">{ t.count }</td><td data-label="Example lines">{ lines(t) }</td></tr>
            }) }</tbody>
        </table>
        </>
    }
}

/// A code in words, with the code beside it for searching.
fn code_cell(code: IssueCode) -> Html {
    html! { <>{ code.describe() }{ " " }<code class="code">{ code.as_str() }</code></> }
}

/// The check's summary: counts of records, then errors and notes apart.
pub fn summary(s: &IssueSummary, p: &Progress, target: Target) -> Html {
    let c = &p.checked;
    let errors = c.rejected;
    let notes_only = s.records_with_issues.saturating_sub(errors).saturating_sub(c.dropped);
    let counts = match target {
        Target::Events => format!(
            "{}; {errors} with errors, left out; {notes_only} with notes only, sent anyway; {} dropped by the dictionary; {}.",
            count(s.records, "record", "records"),
            c.dropped,
            count(c.batches, "batch", "batches")
        ),
        Target::Profiles => format!(
            "{}; {errors} with errors, left out; {}.",
            count(s.records, "record", "records"),
            count(c.batches, "batch", "batches")
        ),
    };
    let key = |k: &str, empty: &str| -> Html {
        if k.is_empty() {
            html! { <i>{ empty.to_owned() }</i> }
        } else {
            html! { <code>{ k.to_owned() }</code> }
        }
    };
    let (event_id, event_title, event_head, no_name) = match target {
        Target::Events => ("by-event", "By event", "Event", "(no event name)"),
        Target::Profiles => ("by-operation", "By operation", "Operation", "(no single operation)"),
    };
    html! {
        <div id="check-summary">
            <h3>{ "What the check found" }</h3>
            <p id="check-counts">{ counts }</p>
            { tally_table("by-problem", "Errors (these records are left out)", "Error", s.by_code.iter().filter(|(c, _)| !c.is_note()).map(|(c, t)| (code_cell(*c), t)).collect()) }
            { tally_table("by-note", "Notes (these records are sent anyway)", "Note", s.by_code.iter().filter(|(c, _)| c.is_note()).map(|(c, t)| (code_cell(*c), t)).collect()) }
            { tally_table(event_id, event_title, event_head, s.by_event.iter().map(|(e, t)| (key(e, no_name), t)).collect()) }
            { tally_table("by-property", "By property", "Property", s.by_property.iter().map(|(e, t)| (key(e, ""), t)).collect()) }
        </div>
    }
}
