//! The Data screen: what the server has stored beside the dictionary, read through its read API.
//! Three tabs, each with its own address ([`crate::router::DataView`]): a user profile looked up
//! by `distinct_id` (`profiles.rs`), the group profiles a page at a time with one open in the side
//! panel (`groups.rs`), and the lookup tables with their row counts, one open with its rows a page
//! at a time (`tables.rs`). Every value from the server is shown as text.

mod groups;
mod profiles;
mod reader;
mod tables;

use crate::router::{DataView, Route};
use crate::state::{use_app_state, Action, Load, StateHandle};
use serde_json::Value;
use yew::prelude::*;

/// The state of a list's next page, beside its "Show more" button: explicit, so that a failed
/// page says so where it was asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum More {
    Idle,
    Loading,
    Failed(String),
}

/// Shows another view of the Data screen, as a new address.
pub(crate) fn go(state: &StateHandle, view: DataView) {
    state.dispatch(Action::Go(Route::Data(view)));
}

/// A stored value as the page shows it: a string as itself, anything else as compact JSON.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Milliseconds since the epoch as an ISO 8601 time in UTC.
pub(crate) fn time_text(ms: i64) -> String {
    String::from(js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64)).to_iso_string())
}

/// Focuses the element `id` when nothing has focus: the "Show more" button that was clicked is
/// gone once the last page is read, and focus would fall to the page's body, where Escape no
/// longer reaches the side panel and a screen reader says nothing. The element (a count of what is
/// shown) says what changed.
pub(crate) fn focus_if_lost(id: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let lost = document
        .active_element()
        .is_none_or(|a| a.tag_name() == "BODY");
    if let Some(el) = document.get_element_by_id(id).filter(|_| lost) {
        let _ = el.set_attribute("tabindex", "-1");
        if let Ok(el) = wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(el) {
            let _ = el.focus();
        }
    }
}

/// "Loading…", announced to screen readers.
pub(crate) fn loading() -> Html {
    html! { <p class="hint" role="status">{ "Loading…" }</p> }
}

/// A failed read, on the page in the core's words.
pub(crate) fn failed(message: &str) -> Html {
    html! { <p class="error" role="alert">{ message.to_owned() }</p> }
}

/// A profile's properties by name (the `$properties` object of an answer), one card per
/// property on a phone: the one key/value table of the profile and group views.
pub(crate) fn properties_table(id: &'static str, properties: &Value) -> Html {
    let Some(properties) = properties.as_object().filter(|p| !p.is_empty()) else {
        return html! { <p class="hint">{ "No properties." }</p> };
    };
    let mut names: Vec<&String> = properties.keys().collect();
    names.sort();
    html! {
        <table {id} class="schemas cards data-properties">
            <thead><tr><th scope="col">{ "Property" }</th><th scope="col">{ "Value" }</th></tr></thead>
            <tbody>{ for names.into_iter().map(|name| html! {
                <tr>
                    <td data-label="Property"><code>{ name.clone() }</code></td>
                    <td data-label="Value" class="value">{ value_text(&properties[name]) }</td>
                </tr>
            }) }</tbody>
        </table>
    }
}

/// A field of an answer as text (an absent one as empty text).
pub(crate) fn field(value: &Value, name: &str) -> String {
    value.get(name).map(value_text).unwrap_or_default()
}

/// The "Show more" button of a list (while there is a next page) and the state of that page.
pub(crate) fn pager(id: &'static str, label: &'static str, has_next: bool, more: &More, onclick: Callback<MouseEvent>) -> Html {
    html! {
        <>
            if has_next {
                <div class="actions">
                    <button {id} {onclick} disabled={*more == More::Loading}>{ label }</button>
                </div>
            }
            { match more {
                More::Idle => html! {},
                More::Loading => loading(),
                More::Failed(message) => failed(message),
            } }
        </>
    }
}

/// "Loading…" or the failure of a read that has not answered well, `None` once it has.
pub(crate) fn pending(load: &Load<Value>) -> Result<&Value, Html> {
    match load {
        Load::Idle | Load::Loading => Err(loading()),
        Load::Failed(message) => Err(failed(message)),
        Load::Loaded(value) => Ok(value),
    }
}

#[component]
pub fn DataPage() -> Html {
    let state = use_app_state();
    let view = match &state.route {
        Route::Data(view) => view.clone(),
        _ => DataView::Profiles(None),
    };
    let tab = |label: &'static str, id: &'static str, target: DataView| {
        let on = std::mem::discriminant(&view) == std::mem::discriminant(&target);
        let state = state.clone();
        let onclick = Callback::from(move |_| go(&state, target.clone()));
        html! {
            <button id={id} aria-pressed={on.to_string()} class={classes!("tab", on.then_some("active"))} {onclick}>{ label }</button>
        }
    };
    let with_panel = matches!(view, DataView::Groups(Some(_)) | DataView::Tables(Some(_)));
    let body = match view.clone() {
        DataView::Profiles(id) => html! { <profiles::ProfileLookup {id} /> },
        DataView::Groups(open) => html! { <groups::GroupList {open} /> },
        DataView::Tables(open) => html! { <tables::TableList {open} /> },
    };
    html! {
        <div id="data" class={classes!("data", with_panel.then_some("with-panel"))}>
            <section class="card">
                <h2>{ "Data" }</h2>
                <p class="hint">{ "What the server has stored for this project beside its dictionary: user profiles, group profiles and lookup tables." }</p>
                // Toggle buttons, as on the dictionary screen: reached with Tab, `aria-pressed`
                // says which one is on.
                <div class="tabs" role="group" aria-label="Kind of data">
                    { tab("User profiles", "tab-profiles", DataView::Profiles(None)) }
                    { tab("Group profiles", "tab-groups", DataView::Groups(None)) }
                    { tab("Lookup tables", "tab-tables", DataView::Tables(None)) }
                </div>
                { body }
            </section>
        </div>
    }
}
