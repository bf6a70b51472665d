//! The Migrate screen (spec §4.3): the form of a migration request (source tool, key, secret,
//! target token, date range with the 30-day default shown, dry run, region), checked with the
//! core's own rules before it is sent, the billing warning of §4.3, then the job's progress
//! (phase, events and profiles counted / loaded / rejected) until its final counts. Also the
//! migration of an export file in the browser: the archive is read and transformed here with the
//! core, checked against the dictionary by the core's batcher, and sent through the normal import
//! (and `/engage` for profiles), so the source tool's credentials are never needed at all.

use crate::state::use_app_state;
use crate::components::focus_field;
use crate::components::log::push;
use crate::pages::warehouse::sleep_ms;
use crate::state::Level;
use datadict_core::migration::{DEFAULT_RANGE_DAYS, SOURCE_TOOLS};
use datadict_core::{count, validate_migration_request, Date};
use gloo_net::http::Request;
use serde_json::{json, Value};
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// Spec §4.3, word for word in meaning: shown above the start button.
pub const BILLING_WARNING: &str = "Events ingested in the current month count toward the plan: backfilling historical events can significantly affect billing.";

#[derive(Clone, PartialEq, Default)]
struct Form {
    tool: String,
    key: String,
    secret: String,
    token: String,
    start: String,
    end: String,
    dry_run: bool,
    eu: bool,
}

impl Form {
    /// The body of spec §4.3; empty dates are left out (the service then takes the default range).
    fn body(&self) -> Value {
        let mut b = json!({"SOURCE_API_KEY": self.key, "SOURCE_API_SECRET": self.secret, "TARGET_TOKEN": self.token});
        if !self.start.is_empty() {
            b["START_DATE"] = json!(self.start);
        }
        if !self.end.is_empty() {
            b["END_DATE"] = json!(self.end);
        }
        if self.dry_run {
            b["DRY_RUN"] = json!(true);
        }
        if self.eu {
            b["REGION"] = json!("EU");
        }
        b
    }
}

fn today() -> Date {
    Date::from_ms(js_sys::Date::now() as i64)
}

/// The job as the page shows it.
#[derive(Clone, PartialEq)]
enum Job {
    Idle,
    Starting,
    Running(Value),
    Done(Value),
    Failed(String),
}

/// The migration service takes no authorization header (spec §4.3, §5), so these calls do not go
/// through `api::request`, which always sends the service account's credentials. A failure is in
/// the core's words.
async fn send(method: &str, url: &str, body: Option<&Value>) -> Result<Value, String> {
    let context = datadict_core::StatusContext { url: Some(url.to_owned()), ..datadict_core::StatusContext::default() };
    let req = match (method, body) {
        ("POST", Some(b)) => Request::post(url).json(b).map_err(|e| e.to_string())?,
        _ => Request::get(url).build().map_err(|e| e.to_string())?,
    };
    let resp = req.send().await.map_err(|e| datadict_core::explain_status(datadict_core::Attempt::NetworkError, &e.to_string(), &context))?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| e.to_string())?;
    if (200..300).contains(&status) {
        Ok(serde_json::from_slice(text.as_bytes()).unwrap_or(Value::String(text)))
    } else {
        Err(datadict_core::explain_answer(status, text.as_bytes(), &context))
    }
}

/// The fields of the form by their name on the wire: the id of their input and their label.
const FIELDS: [(&str, &str, &str); 7] = [
    ("SOURCE_API_KEY", "mig-key", "Source API key"),
    ("SOURCE_API_SECRET", "mig-secret", "Source API secret"),
    ("TARGET_TOKEN", "mig-token", "Project token"),
    ("START_DATE", "mig-start", "Start date"),
    ("END_DATE", "mig-end", "End date"),
    ("REGION", "mig-region", "Region"),
    ("DRY_RUN", "mig-dry-run", "Dry run"),
];

/// One problem of the form, at its field, in the user's words.
#[derive(Clone, PartialEq)]
struct FieldIssue {
    field: &'static str,
    message: String,
}

/// A message of the core or the server in the words of the form: a quoted wire name becomes the
/// field's label, and a bare one (a path, as the server lists its problems) keeps the wire name
/// beside the label, so that it can still be searched for.
fn in_words(message: &str) -> String {
    let mut out = message.to_owned();
    for (key, _, label) in FIELDS {
        out = out.replace(&format!("`{key}`"), label).replace(key, &format!("{label} ({key})"));
    }
    out
}

/// The core's issue at the field it belongs to. An empty or missing text field says so plainly
/// ("Source API key is empty"); other messages are the core's, in the form's words.
fn field_issue(issue: &datadict_core::Issue) -> FieldIssue {
    use datadict_core::IssueCode;
    let (field, label) = FIELDS.iter().find(|(k, _, _)| *k == issue.path).map_or(("mig-tool", ""), |(_, id, label)| (*id, *label));
    let message = match issue.code {
        IssueCode::MissingField | IssueCode::InvalidName if !label.is_empty() => format!("{label} is empty"),
        _ => sentence(&issue.message),
    };
    FieldIssue { field, message }
}

/// A message of the core or the server in the form's words, opening with a capital as the form's
/// own messages do (the messages are English and open with an ASCII letter).
fn sentence(message: &str) -> String {
    let words = in_words(message);
    let mut chars = words.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// The problems of the server's refusal that name a field of the form, at those fields; `None`
/// when one names none (then the whole answer is shown under the form).
fn server_issues(error: &str) -> Option<Vec<FieldIssue>> {
    let mut at_fields = Vec::new();
    for (path, m) in crate::api::listed_issues(error) {
        let (_, id, _) = FIELDS.iter().find(|(k, _, _)| *k == path)?;
        at_fields.push(FieldIssue { field: id, message: sentence(&m) });
    }
    (!at_fields.is_empty()).then_some(at_fields)
}

fn counts(job: &Value) -> Html {
    let row = |what: &str, c: &Value| html! {
        <tr><th>{ what.to_owned() }</th><td>{ c["counted"].to_string() }</td><td>{ c["loaded"].to_string() }</td><td>{ c["rejected"].to_string() }</td></tr>
    };
    html! {
        <table class="grid" id="mig-counts">
            <thead><tr><th></th><th>{ "Counted" }</th><th>{ "Loaded" }</th><th>{ "Rejected" }</th></tr></thead>
            <tbody>{ row("Events", &job["events"]) }{ row("Profiles", &job["profiles"]) }</tbody>
        </table>
    }
}

#[component]
pub fn MigratePage() -> Html {
    let state = use_app_state();
    // Dry run starts on: a real run writes events that count toward the plan (the warning below).
    let form = use_state(|| Form { tool: SOURCE_TOOLS[0].to_owned(), dry_run: true, ..Form::default() });
    let job = use_state(|| Job::Idle);
    let issues = use_state(Vec::<FieldIssue>::new);
    let Some(conn) = state.connection.clone() else {
        return html! { <section class="card"><p>{ "Connect first (Settings)." }</p></section> };
    };
    let t = today();
    let default_start = t.add_days(-(DEFAULT_RANGE_DAYS - 1));

    let text = |f: fn(&mut Form, String)| {
        let form = form.clone();
        Callback::from(move |e: InputEvent| {
            let mut next = (*form).clone();
            f(&mut next, e.target_unchecked_into::<HtmlInputElement>().value());
            form.set(next);
        })
    };
    let onsubmit = {
        let (state, form, job, issues) = (state.clone(), form.clone(), job.clone(), issues.clone());
        let base = conn.base_url.trim_end_matches('/').to_owned();
        let endpoints = conn.endpoints();
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let body = form.body();
            // The core's rules, as the server applies them: every problem at once.
            let check = validate_migration_request(&body, today());
            if !check.issues.is_empty() {
                issues.set(check.issues.iter().map(field_issue).collect());
                return;
            }
            issues.set(Vec::new());
            job.set(Job::Starting);
            let (state, job, base, start, issues) = (state.clone(), job.clone(), base.clone(), endpoints.migrate(&form.tool), issues.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let started = send("POST", &start, Some(&body)).await;
                let url = match started {
                    Ok(v) => format!("{base}{}", v["results"]["status_url"].as_str().unwrap_or_default()),
                    Err(e) => {
                        let words = in_words(&e);
                        push(&state, Level::Error, format!("migration refused: {words}"));
                        // Problems that name a field are shown at it, as the form's own checks are.
                        match server_issues(&e) {
                            Some(at_fields) => {
                                issues.set(at_fields);
                                job.set(Job::Failed("the server refused the migration: fix the fields marked above, then start again".into()));
                            }
                            None => job.set(Job::Failed(words)),
                        }
                        return;
                    }
                };
                push(&state, Level::Info, format!("migration started: {url}"));
                loop {
                    match send("GET", &url, None).await {
                        Ok(v) => {
                            let j = v["results"].clone();
                            if j["phase"] == "failed" {
                                // The reason is in the job's errors; the log counts it as an error.
                                let reasons: Vec<&str> = j["errors"].as_array().into_iter().flatten().filter_map(Value::as_str).take(3).collect();
                                push(&state, Level::Error, format!("migration failed: {}", if reasons.is_empty() { "the server gave no reason" .to_owned() } else { reasons.join("; ") }));
                                job.set(Job::Done(j));
                                return;
                            }
                            if j["phase"] == "succeeded" {
                                push(&state, Level::Info, "migration succeeded".to_owned());
                                job.set(Job::Done(j));
                                return;
                            }
                            job.set(Job::Running(j));
                        }
                        Err(e) => {
                            let e = in_words(&e);
                            push(&state, Level::Error, format!("the migration's progress could not be read: {e}"));
                            job.set(Job::Failed(e));
                            return;
                        }
                    }
                    sleep_ms(1000).await;
                }
            });
        })
    };
    let f = &*form;
    let running = matches!(*job, Job::Starting | Job::Running(_));
    let ontool = {
        let form = form.clone();
        Callback::from(move |e: Event| {
            let mut next = (*form).clone();
            next.tool = e.target_unchecked_into::<HtmlSelectElement>().value();
            form.set(next);
        })
    };
    let ondry = {
        let form = form.clone();
        Callback::from(move |e: Event| {
            let mut next = (*form).clone();
            next.dry_run = e.target_unchecked_into::<HtmlInputElement>().checked();
            form.set(next);
        })
    };
    let onregion = {
        let form = form.clone();
        Callback::from(move |e: Event| {
            let mut next = (*form).clone();
            next.eu = e.target_unchecked_into::<HtmlSelectElement>().value() == "EU";
            form.set(next);
        })
    };
    // The first problem of each field, shown under it and tied to it.
    let error_of = |id: &str| issues.iter().find(|i| i.field == id).map(|i| i.message.clone());
    let invalid = |id: &str| error_of(id).map(|_| "true");
    let described = |id: &str| error_of(id).map(|_| format!("{id}-error"));
    let field = |id: &'static str, label: &str, input: Html| -> Html {
        let error = error_of(id);
        html! {
            <div class={classes!("field", error.is_some().then_some("invalid"))}>
                <label for={id}>{ label.to_owned() }</label>
                { input }
                if let Some(m) = error { <p class="field-error" id={format!("{id}-error")}><span class="icon" aria-hidden="true">{ "⚠" }</span>{ m }</p> }
            </div>
        }
    };
    html! {
        <section class="card" id="migrate">
            <h2>{ "Migrate from another analytics tool" }</h2>
            <form id="mig-form" {onsubmit} novalidate=true>
                <p class="hint" id="mig-target">{ format!("Events go to project {} on {}.", conn.project_id, conn.base_url) }</p>
                <div class="field">
                    <label for="mig-tool">{ "Source tool" }</label>
                    <select id="mig-tool" onchange={ontool}>{ for SOURCE_TOOLS.iter().map(|t| html! { <option value={*t} selected={f.tool == *t}>{ *t }</option> }) }</select>
                </div>
                { field("mig-key", "Source API key", html! { <input id="mig-key" autocomplete="off" value={f.key.clone()} oninput={text(|f, v| f.key = v)} aria-invalid={invalid("mig-key")} aria-describedby={described("mig-key")} /> }) }
                { field("mig-secret", "Source API secret", html! { <input id="mig-secret" type="password" autocomplete="off" value={f.secret.clone()} oninput={text(|f, v| f.secret = v)} aria-invalid={invalid("mig-secret")} aria-describedby={described("mig-secret")} /> }) }
                { field("mig-token", "Project token of this project", html! { <input id="mig-token" type="password" autocomplete="off" value={f.token.clone()} oninput={text(|f, v| f.token = v)} aria-invalid={invalid("mig-token")} aria-describedby={described("mig-token").unwrap_or_else(|| "mig-token-hint".into())} /> }) }
                <p class="hint" id="mig-token-hint">{ "Your sign-in is a service account, which cannot read the project token: it was shown once when the project was created (datadict-server admin create-project). Ask the project's owner for it." }</p>
                { field("mig-start", "Start date", html! { <input id="mig-start" type="date" placeholder={default_start.to_string()} value={f.start.clone()} oninput={text(|f, v| f.start = v)} aria-invalid={invalid("mig-start")} aria-describedby={described("mig-start")} /> }) }
                { field("mig-end", "End date", html! { <input id="mig-end" type="date" placeholder={t.to_string()} value={f.end.clone()} oninput={text(|f, v| f.end = v)} aria-invalid={invalid("mig-end")} aria-describedby={described("mig-end")} /> }) }
                <p class="hint" id="mig-default-range">{ format!("Without dates: the {DEFAULT_RANGE_DAYS} days up to today, {default_start} to {t}.") }</p>
                <div class="field">
                    <label for="mig-region">{ "Region" }</label>
                    <select id="mig-region" onchange={onregion}>
                        <option value="" selected={!f.eu}>{ "default" }</option>
                        <option value="EU" selected={f.eu}>{ "EU (either side uses EU data residency)" }</option>
                    </select>
                </div>
                <p class="warn-box" id="mig-billing" role="note">{ BILLING_WARNING }</p>
                <label class="check" for="mig-dry-run"><input id="mig-dry-run" type="checkbox" checked={f.dry_run} onchange={ondry} />{ "Dry run: count only, write nothing" }</label>
                if !issues.is_empty() {
                    <div id="mig-issues" class="error-summary" role="alert">
                        <p><span class="icon" aria-hidden="true">{ "⚠" }</span>{ format!("{} before starting:", datadict_core::count(issues.len() as u64, "problem to fix", "problems to fix")) }</p>
                        <ul>{ for issues.iter().map(|i| html! { <li><a href={format!("#{}", i.field)} onclick={focus_field(i.field)}>{ i.message.clone() }</a></li> }) }</ul>
                    </div>
                }
                <button type="submit" id="mig-start-button" disabled={running}>{ if f.dry_run { "Count events" } else { "Start migration" } }</button>
            </form>
            <FileMigration />
            { match &*job {
                Job::Idle => html! {},
                Job::Starting => html! { <p id="mig-phase">{ "Starting…" }</p> },
                Job::Running(j) => html! {
                    <div id="mig-progress" role="status">
                        <p id="mig-phase">{ format!("Phase: {}", j["phase"].as_str().unwrap_or_default()) }</p>
                        { counts(j) }
                    </div>
                },
                Job::Done(j) => html! {
                    <div id="mig-result" role="status">
                        <p id="mig-phase">{ format!("{}{}: {} to {}", j["phase"].as_str().unwrap_or_default(), if j["dry_run"] == true { " (dry run)" } else { "" }, j["start_date"].as_str().unwrap_or_default(), j["end_date"].as_str().unwrap_or_default()) }</p>
                        { counts(j) }
                        <ul id="mig-errors">{ for j["errors"].as_array().into_iter().flatten().take(20).map(|e| html! { <li>{ e.as_str().unwrap_or_default().to_owned() }</li> }) }</ul>
                    </div>
                },
                Job::Failed(m) => html! { <p id="mig-error" class="error" role="alert">{ m.clone() }</p> },
            } }
        </section>
    }
}

/// What a migration of a file in the browser has done so far.
#[derive(Clone, PartialEq, Default)]
struct FileProgress {
    members: usize,
    transformed: u64,
    transform_errors: u64,
    rejected_by_checks: u64,
    imported: u64,
    failed_on_server: u64,
    profiles: u64,
    done: bool,
    error: Option<String>,
    notes: Vec<String>,
}

async fn migrate_file(state: crate::state::StateHandle, conn: crate::api::Connection, file: web_sys::File, progress: UseStateHandle<Option<FileProgress>>) {
    use datadict_core::amplitude::{transform_ndjson, ExportArchive, ProfileAccumulator};
    use datadict_core::{BatchOptions, Batcher, Dictionary, InputFormat, Limits, DEFAULT_NAMESPACE};
    let log = crate::components::log::log_request(&state);
    let mut p = FileProgress::default();
    let fail = |mut p: FileProgress, m: String| {
        p.error = Some(m);
        p.done = true;
        progress.set(Some(p));
    };
    let bytes = match wasm_bindgen_futures::JsFuture::from(file.array_buffer()).await {
        Ok(buf) => js_sys::Uint8Array::new(&buf).to_vec(),
        Err(_) => return fail(p, "the file cannot be read; pick it again".into()),
    };
    let mut archive = match ExportArchive::new(&bytes) {
        Ok(a) => a,
        Err(e) => return fail(p, e.to_string()),
    };
    let names = match archive.member_names() {
        Ok(n) => n,
        Err(e) => return fail(p, e.to_string()),
    };
    let limits = Limits::default();
    let dictionary = match &state.dictionary {
        crate::state::Load::Loaded(d) => Some(Dictionary::new(&d.entries, DEFAULT_NAMESPACE)),
        _ => None,
    };
    let options = BatchOptions { now_ms: js_sys::Date::now() as i64, format: InputFormat::Ndjson, dictionary, ..BatchOptions::default() };
    let mut batcher = Batcher::new(options);
    let mut profiles = ProfileAccumulator::default();
    for name in &names {
        let data = match archive.read_member(name, 1 << 30) {
            Ok(d) => d,
            Err(e) => return fail(p, e.to_string()),
        };
        let t = transform_ndjson(&data, &limits, &mut profiles);
        p.members += 1;
        p.transformed += t.events;
        p.transform_errors += t.errors.len() as u64;
        for (line, e) in t.errors.iter().take(3) {
            if p.notes.len() < 20 {
                p.notes.push(format!("{name}, line {line}: {e}"));
            }
        }
        if let Err(e) = batcher.push(&t.ndjson) {
            return fail(p, e.to_string());
        }
        if send_ready(&conn, &mut batcher, &mut p, &log).await.is_err() {
            return fail(p, "the import failed; see the log".into());
        }
        progress.set(Some(p.clone()));
    }
    if let Err(e) = batcher.finish() {
        return fail(p, e.to_string());
    }
    if send_ready(&conn, &mut batcher, &mut p, &log).await.is_err() {
        return fail(p, "the import failed; see the log".into());
    }
    let updates = profiles.updates();
    for chunk in updates.chunks(limits.max_profile_updates_per_request.max(1)) {
        // Sent to the application host, with the project in the query and without strict mode.
        let url = format!("{}?project_id={}", datadict_core::Endpoints::single_host(&conn.base_url).engage(datadict_core::Region::Default), conn.project_id);
        let body = serde_json::to_value(chunk).unwrap_or_default();
        match crate::api::request::<Value>(&conn, crate::api::Method::Post, &url, Some(&body), &log).await {
            Ok(_) => p.profiles += chunk.len() as u64,
            Err(e) => return fail(p, e.to_string()),
        }
    }
    p.done = true;
    progress.set(Some(p));
}

/// Sends every batch the batcher has ready through the normal import; counts what happened.
async fn send_ready(conn: &crate::api::Connection, batcher: &mut datadict_core::Batcher, p: &mut FileProgress, log: &dyn Fn(crate::api::RequestRecord)) -> Result<(), ()> {
    p.rejected_by_checks += batcher.take_rejected().len() as u64;
    while let Some(batch) = batcher.next_batch() {
        match crate::api::import_batch(conn, &batch, log).await {
            Ok(answer) => {
                p.imported += answer.num_records_imported.unwrap_or_default();
                p.failed_on_server += answer.failed_records.map_or(0, |f| f.len() as u64);
            }
            Err(_) => return Err(()),
        }
    }
    Ok(())
}

/// "Migrate a file": an export archive downloaded from the source tool, migrated from the browser.
#[component]
fn FileMigration() -> Html {
    let state = use_app_state();
    let progress = use_state(|| None::<FileProgress>);
    let Some(conn) = state.connection.clone() else { return html! {} };
    let onchange = {
        let (state, progress) = (state.clone(), progress.clone());
        Callback::from(move |e: Event| {
            let input = e.target_unchecked_into::<HtmlInputElement>();
            let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
            progress.set(Some(FileProgress::default()));
            let (state, conn, progress) = (state.clone(), conn.clone(), progress.clone());
            wasm_bindgen_futures::spawn_local(migrate_file(state, conn, file, progress));
        })
    };
    html! {
        <div id="mig-file" class="card">
            <h3>{ "Migrate an export file in the browser" }</h3>
            <p class="hint">{ "Pick the zip the source tool's export gave you: it is transformed and checked here, then imported like any file. No key or secret of the source tool is needed." }</p>
            <input id="mig-file-input" type="file" accept=".zip,application/zip" {onchange} />
            if let Some(p) = &*progress {
                <ul id="mig-file-progress" role="status">
                    <li>{ format!("{} read, {} transformed, {} not transformable", count(p.members as u64, "file of the archive", "files of the archive"), count(p.transformed, "event", "events"), count(p.transform_errors, "line", "lines")) }</li>
                    <li>{ format!("{} imported, {} left out by the check, {} rejected by the server", count(p.imported, "event", "events"), p.rejected_by_checks, p.failed_on_server) }</li>
                    <li>{ format!("{} set", count(p.profiles, "profile", "profiles")) }</li>
                    if p.done && p.error.is_none() { <li id="mig-file-done">{ "done" }</li> }
                    if let Some(e) = &p.error { <li id="mig-file-error" class="error">{ e.clone() }</li> }
                    { for p.notes.iter().map(|n| html! { <li class="note">{ n.clone() }</li> }) }
                </ul>
            }
        </div>
    }
}
