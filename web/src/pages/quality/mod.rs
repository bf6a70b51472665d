//! The Data quality screen (`#/quality`): what the server's dictionary check on arrival found in
//! the last 30 days and the records its rules refused, read from the data-quality API. Its views
//! (totals, the chart per day, the tables by event, property and finding, samples) are in
//! `view.rs`; this file reads the answers, resets them after an in-page confirmation, and shows
//! schemas the server drafts from what arrived in the bulk-upload preview (`#/quality/draft`),
//! where nothing is written before the user applies it.

mod view;

use crate::api;
use crate::components::log::{log_request, push};
use crate::components::side_panel::SidePanel;
use crate::pages::bulk::{parse_dictionary, BulkUpload};
use crate::router::{QualityView, Route};
use crate::state::{use_app_state, Action, Level, Load, StateHandle};
use datadict_core::{count, SchemaEntry};
use serde_json::Value;
use std::rc::Rc;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// The three answers the screen shows: the summary, and the violation and rejected rows of the
/// last 30 days (one per day and key).
#[derive(Debug, PartialEq)]
pub(crate) struct Answers {
    pub summary: Value,
    pub violations: Value,
    pub rejected: Value,
}

/// A draft from the server: entries for the bulk-upload preview, and the properties it would not
/// guess a type for, in words.
#[derive(Debug, PartialEq)]
struct Draft {
    entries: Rc<Vec<SchemaEntry>>,
    unresolved: Vec<String>,
}

/// The reset's steps: asked for in the page, never through `window.confirm`.
#[derive(Debug, Clone, PartialEq)]
enum Reset {
    Idle,
    Asking,
    Sending,
    Done(String),
    Failed(String),
}

/// Shows another view of the screen, as a new address.
pub(crate) fn go(state: &StateHandle, view: QualityView) {
    state.dispatch(Action::Go(Route::Quality(view)));
}

/// Reads the summary and both lists, in that order; the first failure is the screen's.
fn read(state: &StateHandle, load: UseStateHandle<Load<Rc<Answers>>>) {
    let Some(conn) = state.connection.clone() else {
        return;
    };
    load.set(Load::Loading);
    let state = state.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let log = log_request(&state);
        let mut answers = Vec::with_capacity(3);
        for url in [
            api::quality_summary_url(&conn),
            api::quality_rows_url(&conn, "violations"),
            api::quality_rows_url(&conn, "rejected"),
        ] {
            match api::read_data(&conn, &url, &log).await {
                Ok(answer) => answers.push(answer),
                Err(err) => {
                    load.set(Load::Failed(err.to_string()));
                    return;
                }
            }
        }
        let rejected = answers.pop().unwrap_or_default();
        let violations = answers.pop().unwrap_or_default();
        let summary = answers.pop().unwrap_or_default();
        load.set(Load::Loaded(Rc::new(Answers {
            summary,
            violations,
            rejected,
        })));
    });
}

/// Reads the server's draft for `event` (every undocumented event and unknown property when
/// `None`), and checks its entries with the core as a dictionary file would be.
fn read_draft(state: &StateHandle, event: Option<String>, draft: UseStateHandle<Load<Rc<Draft>>>) {
    let Some(conn) = state.connection.clone() else {
        return;
    };
    draft.set(Load::Loading);
    let state = state.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let log = log_request(&state);
        let answer = match api::read_data(
            &conn,
            &api::quality_draft_url(&conn, event.as_deref()),
            &log,
        )
        .await
        {
            Ok(answer) => answer,
            Err(err) => return draft.set(Load::Failed(err.to_string())),
        };
        let unresolved = answer["unresolved"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|u| {
                let types: Vec<String> = u["types"]
                    .as_array()
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .map(crate::pages::data::value_text)
                    .collect();
                format!(
                    "{}, property {}: seen as {}; not guessed, give it a type by hand",
                    crate::pages::data::field(u, "event"),
                    crate::pages::data::field(u, "property"),
                    types.join(" and ")
                )
            })
            .collect();
        match parse_dictionary(&answer["results"].to_string()) {
            Ok(entries) => draft.set(Load::Loaded(Rc::new(Draft {
                entries: Rc::new(entries),
                unresolved,
            }))),
            Err(problems) => draft.set(Load::Failed(format!(
                "the server's draft is not a valid dictionary: {}",
                problems.join("; ")
            ))),
        }
    });
}

#[component]
pub fn QualityPage() -> Html {
    let state = use_app_state();
    let load = use_state(|| Load::<Rc<Answers>>::Idle);
    let reload = use_state(|| 0u32);
    let reset = use_state(|| Reset::Idle);
    let also_events = use_state(|| false);
    let draft = use_state(|| Load::<Rc<Draft>>::Idle);
    let view = match &state.route {
        Route::Quality(view) => view.clone(),
        _ => QualityView::Overview,
    };
    {
        let (state, load) = (state.clone(), load.clone());
        use_effect_with((state.connection.clone(), *reload), move |_| {
            read(&state, load)
        });
    }
    {
        let (state, draft) = (state.clone(), draft.clone());
        use_effect_with(
            (state.connection.clone(), view.clone()),
            move |(_, view)| {
                match view {
                    QualityView::Draft(event) => read_draft(&state, event.clone(), draft),
                    QualityView::Overview => draft.set(Load::Idle),
                }
            },
        );
    }
    let onreload = {
        let reload = reload.clone();
        Callback::from(move |_| reload.set(*reload + 1))
    };
    let ondraft = {
        let state = state.clone();
        Callback::from(move |_| go(&state, QualityView::Draft(None)))
    };
    let set_reset = |next: Reset| {
        let reset = reset.clone();
        Callback::from(move |_| reset.set(next.clone()))
    };
    let onevents = {
        let also_events = also_events.clone();
        Callback::from(move |e: Event| {
            also_events.set(e.target_unchecked_into::<HtmlInputElement>().checked())
        })
    };
    let onconfirm = {
        let (state, reset, reload, events) =
            (state.clone(), reset.clone(), reload.clone(), *also_events);
        Callback::from(move |_| {
            let Some(conn) = state.connection.clone() else {
                return;
            };
            reset.set(Reset::Sending);
            let (state, reset, reload) = (state.clone(), reset.clone(), reload.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                match api::reset_quality(&conn, events, &log).await {
                    Ok(answer) => {
                        let r = &answer["results"];
                        let n = |k: &str| r[k].as_u64().unwrap_or(0);
                        let mut text = format!(
                            "reset: {} and {} deleted",
                            count(n("violations_deleted"), "violation row", "violation rows"),
                            count(
                                n("rejected_deleted"),
                                "rejected-record row",
                                "rejected-record rows"
                            )
                        );
                        if events {
                            text.push_str(&format!(
                                ", and {}",
                                count(n("events_deleted"), "stored event", "stored events")
                            ));
                        }
                        push(&state, Level::Info, text.clone());
                        reset.set(Reset::Done(text));
                        reload.set(*reload + 1);
                    }
                    Err(err) => reset.set(Reset::Failed(err.to_string())),
                }
            });
        })
    };
    let answers = match &*load {
        Load::Loaded(a) => Some(a.clone()),
        _ => None,
    };
    // Drafting needs something to draft from: an undocumented event or an unknown property.
    let draftable = answers.as_ref().is_some_and(|a| {
        let codes = &a.summary["results"]["violations"]["by_code"];
        codes.get("no_schema").is_some() || codes.get("unknown_property").is_some()
    });
    let reset_box = match &*reset {
        Reset::Idle => html! {},
        Reset::Asking | Reset::Sending => html! {
            <section class="warn-box confirm" id="reset-confirm" role="alertdialog" aria-labelledby="reset-title">
                <h3 id="reset-title">{ "Reset the data quality of this project?" }</h3>
                <p>{ "Every recorded violation and rejected record of this project is deleted, for every day, not only the last 30. The dictionary is not touched." }</p>
                <label class="check"><input id="reset-events" type="checkbox" checked={*also_events} onchange={onevents} />
                    { " Also delete every stored event of this project" }</label>
                <div class="actions">
                    <button id="reset-yes" class="danger" onclick={onconfirm} disabled={*reset == Reset::Sending}>
                        { if *also_events { "Reset and delete events" } else { "Reset" } }
                    </button>
                    <button id="reset-no" onclick={set_reset(Reset::Idle)}>{ "Keep it" }</button>
                </div>
            </section>
        },
        Reset::Done(text) => {
            html! { <p id="reset-done" class="ok" role="status">{ text.clone() }</p> }
        }
        Reset::Failed(message) => {
            html! { <p id="reset-failed" class="error" role="alert">{ format!("the reset failed: {message}") }</p> }
        }
    };
    let body = match &*load {
        Load::Idle | Load::Loading => html! { <p class="hint" role="status">{ "Loading…" }</p> },
        Load::Failed(message) => {
            html! { <p id="quality-error" class="error" role="alert">{ message.clone() }</p> }
        }
        Load::Loaded(a) => view::overview(a, &state),
    };
    let panel = match &view {
        QualityView::Overview => None,
        QualityView::Draft(event) => Some(draft_panel(&state, event.as_deref(), &draft)),
    };
    html! {
        <div id="quality" class={classes!("data", "quality", panel.is_some().then_some("with-panel"))}>
            <section class="card">
                <h2>{ "Data quality" }</h2>
                <p class="hint">{ "What the server found when it checked arriving events and profile updates against this project's dictionary in the last 30 days (UTC days, today included), and the records its rules refused." }</p>
                <div class="actions">
                    <button id="quality-reload" onclick={onreload}>{ "Reload" }</button>
                    <button id="quality-draft" onclick={ondraft} disabled={!draftable}>{ "Draft schemas from this…" }</button>
                    <button id="quality-reset" class="danger" onclick={set_reset(Reset::Asking)}>{ "Reset…" }</button>
                </div>
                { reset_box }
                { body }
            </section>
            { for panel }
        </div>
    }
}

/// The side panel of a draft: the properties left out, then the drafted entries in the
/// bulk-upload preview, which compares them with the server's dictionary as it is now.
fn draft_panel(state: &StateHandle, event: Option<&str>, draft: &Load<Rc<Draft>>) -> Html {
    let onclose = {
        let state = state.clone();
        Callback::from(move |()| go(&state, QualityView::Overview))
    };
    let close = html! { <div class="actions"><button id="draft-close" onclick={onclose.reform(|_| ())}>{ "Close" }</button></div> };
    let content = match draft {
        Load::Failed(message) => {
            html! { <><p id="draft-error" class="error" role="alert">{ message.clone() }</p>{ close }</> }
        }
        Load::Loaded(d) => {
            html! {
            <>
                if !d.unresolved.is_empty() {
                    <div class="warn-box" id="draft-unresolved">
                        <p>{ format!("Left out of the draft: {} seen with more than one type.", count(d.unresolved.len() as u64, "property", "properties")) }</p>
                        <ul>{ for d.unresolved.iter().map(|u| html! { <li>{ u.clone() }</li> }) }</ul>
                    </div>
                }
                if d.entries.is_empty() {
                    <p id="draft-empty">{ "Nothing to draft: no undocumented event or unknown property with a single type in the last 30 days." }</p>
                    { close }
                } else {
                    <BulkUpload key={event.unwrap_or_default()} draft={Some(d.entries.clone())} onclose={onclose.clone()} />
                }
            </>
            }
        }
        _ => html! { <><p class="hint" role="status">{ "Loading the draft…" }</p>{ close }</> },
    };
    let heading = match event {
        Some(e) => format!("Draft for {e}"),
        None => "Draft from every undocumented event and unknown property".to_owned(),
    };
    html! {
        <SidePanel content_key={format!("draft:{}", event.unwrap_or_default())} label="Drafted schemas" onclose={onclose.clone()}>
            <section class="detail" id="draft">
                <h2>{ heading }</h2>
                { content }
            </section>
        </SidePanel>
    }
}
