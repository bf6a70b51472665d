//! The Migrate screen (spec §4.3): the form of a migration request (source tool, key, secret,
//! target token, date range with the 30-day default shown, dry run, region), checked with the
//! core's own rules before it is sent, the billing warning of §4.3, then the job's progress
//! (phase, events and profiles counted / loaded / rejected) until its final counts.

use crate::app::use_app_state;
use crate::components::log::push;
use crate::pages::warehouse::sleep_ms;
use crate::state::Level;
use datadict_core::migration::{DEFAULT_RANGE_DAYS, SOURCE_TOOLS};
use datadict_core::{validate_migration_request, Date};
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
/// through `api::request`, which always sends the service account's credentials.
async fn send(method: &str, url: &str, body: Option<&Value>) -> Result<Value, String> {
    let req = match (method, body) {
        ("POST", Some(b)) => Request::post(url).json(b).map_err(|e| e.to_string())?,
        _ => Request::get(url).build().map_err(|e| e.to_string())?,
    };
    let resp = req.send().await.map_err(|e| format!("cannot reach the server ({e}); check the API base URL in Settings"))?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| e.to_string())?;
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text.clone()));
    if (200..300).contains(&status) {
        Ok(value)
    } else {
        Err(format!("the server answered {status}: {}", value["error"].as_str().unwrap_or(&text)))
    }
}

fn counts(job: &Value) -> Html {
    let row = |what: &str, c: &Value| html! {
        <tr><th>{ what.to_owned() }</th><td>{ c["counted"].to_string() }</td><td>{ c["loaded"].to_string() }</td><td>{ c["rejected"].to_string() }</td></tr>
    };
    html! {
        <table class="grid" id="mig-counts">
            <thead><tr><th></th><th>{ "counted" }</th><th>{ "loaded" }</th><th>{ "rejected" }</th></tr></thead>
            <tbody>{ row("events", &job["events"]) }{ row("profiles", &job["profiles"]) }</tbody>
        </table>
    }
}

#[component]
pub fn MigratePage() -> Html {
    let state = use_app_state();
    let form = use_state(|| Form { tool: SOURCE_TOOLS[0].to_owned(), ..Form::default() });
    let job = use_state(|| Job::Idle);
    let issues = use_state(Vec::<String>::new);
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
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let body = form.body();
            // The core's rules, as the server applies them: every problem at once.
            let check = validate_migration_request(&body, today());
            if !check.issues.is_empty() {
                issues.set(check.issues.iter().map(ToString::to_string).collect());
                return;
            }
            issues.set(Vec::new());
            job.set(Job::Starting);
            let (state, job, base, tool) = (state.clone(), job.clone(), base.clone(), form.tool.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let started = send("POST", &format!("{base}/migrate/{tool}"), Some(&body)).await;
                let url = match started {
                    Ok(v) => format!("{base}{}", v["results"]["status_url"].as_str().unwrap_or_default()),
                    Err(e) => {
                        push(&state, Level::Error, format!("migration refused: {e}"));
                        job.set(Job::Failed(e));
                        return;
                    }
                };
                push(&state, Level::Info, format!("migration started: {url}"));
                loop {
                    match send("GET", &url, None).await {
                        Ok(v) => {
                            let j = v["results"].clone();
                            if j["phase"] == "succeeded" || j["phase"] == "failed" {
                                push(&state, Level::Info, format!("migration {}", j["phase"].as_str().unwrap_or_default()));
                                job.set(Job::Done(j));
                                return;
                            }
                            job.set(Job::Running(j));
                        }
                        Err(e) => {
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
    html! {
        <section class="card" id="migrate">
            <h2>{ "Migrate from another analytics tool" }</h2>
            <form id="mig-form" {onsubmit} novalidate=true>
                <label>{ "Source tool " }
                    <select id="mig-tool" onchange={ontool}>{ for SOURCE_TOOLS.iter().map(|t| html! { <option value={*t} selected={f.tool == *t}>{ *t }</option> }) }</select>
                </label>
                <label>{ "Source API key " }<input id="mig-key" autocomplete="off" value={f.key.clone()} oninput={text(|f, v| f.key = v)} /></label>
                <label>{ "Source API secret " }<input id="mig-secret" type="password" autocomplete="off" value={f.secret.clone()} oninput={text(|f, v| f.secret = v)} /></label>
                <label>{ "Target project token " }<input id="mig-token" type="password" autocomplete="off" value={f.token.clone()} oninput={text(|f, v| f.token = v)} /></label>
                <label>{ "Start date " }<input id="mig-start" type="date" placeholder={default_start.to_string()} value={f.start.clone()} oninput={text(|f, v| f.start = v)} /></label>
                <label>{ "End date " }<input id="mig-end" type="date" placeholder={t.to_string()} value={f.end.clone()} oninput={text(|f, v| f.end = v)} /></label>
                <p class="hint" id="mig-default-range">{ format!("Without dates: the {DEFAULT_RANGE_DAYS} days up to today, {default_start} to {t}.") }</p>
                <label><input id="mig-dry-run" type="checkbox" checked={f.dry_run} onchange={ondry} />{ " Dry run (count only, write nothing)" }</label>
                <label>{ "Region " }
                    <select id="mig-region" onchange={onregion}>
                        <option value="" selected={!f.eu}>{ "default" }</option>
                        <option value="EU" selected={f.eu}>{ "EU (either side uses EU data residency)" }</option>
                    </select>
                </label>
                <p class="warning" id="mig-billing" role="note">{ BILLING_WARNING }</p>
                <button type="submit" id="mig-start-button" disabled={running}>{ if f.dry_run { "Count events" } else { "Start migration" } }</button>
                if !issues.is_empty() {
                    <ul id="mig-issues" class="error" role="alert">{ for issues.iter().map(|i| html! { <li>{ i.clone() }</li> }) }</ul>
                }
            </form>
            { match &*job {
                Job::Idle => html! {},
                Job::Starting => html! { <p id="mig-phase">{ "starting…" }</p> },
                Job::Running(j) => html! {
                    <div id="mig-progress" role="status">
                        <p id="mig-phase">{ format!("phase: {}", j["phase"].as_str().unwrap_or_default()) }</p>
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
