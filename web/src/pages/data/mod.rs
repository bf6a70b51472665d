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

/// A column of a [`grid`]: its header, and the classes of its header cell and of its cells.
pub(crate) struct Col {
    pub head: String,
    pub th: Option<&'static str>,
    pub td: Option<&'static str>,
}

impl Col {
    /// A column of text without classes.
    pub(crate) fn plain(head: impl Into<String>) -> Col {
        Col {
            head: head.into(),
            th: None,
            td: None,
        }
    }
}

/// A row of a [`grid`]: its class, its `data-id`, and its cells in the order of the columns.
pub(crate) struct Row {
    pub class: Option<&'static str>,
    pub id: Option<String>,
    pub cells: Vec<Html>,
}

/// The one table of the Data screen, one card per row on a phone: each cell is labelled by its
/// column's header (`data-label`), which the phone layout shows beside it.
pub(crate) fn grid(id: &'static str, class: &'static str, cols: &[Col], rows: Vec<Row>) -> Html {
    html! {
        <table {id} {class}>
            <thead><tr>{ for cols.iter().map(|c| html! { <th scope="col" class={c.th}>{ c.head.clone() }</th> }) }</tr></thead>
            <tbody>{ for rows.into_iter().map(|row| html! {
                <tr class={row.class} data-id={row.id}>{ for row.cells.into_iter().zip(cols).map(|(cell, c)| html! {
                    <td data-label={c.head.clone()} class={c.td}>{ cell }</td>
                }) }</tr>
            }) }</tbody>
        </table>
    }
}

/// A cell of text.
pub(crate) fn text(text: String) -> Html {
    html! { { text } }
}

/// A cell of a name or key, as code.
pub(crate) fn code(text: String) -> Html {
    html! { <code>{ text }</code> }
}

/// A cell that opens something in the side panel.
pub(crate) fn link(
    class: &'static str,
    label: String,
    text: String,
    onclick: Callback<MouseEvent>,
) -> Html {
    html! { <button {class} {onclick} aria-label={label}>{ text }</button> }
}

/// A profile's properties by name (the `$properties` object of an answer): the one key/value
/// table of the profile and group views.
pub(crate) fn properties_table(id: &'static str, properties: &Value) -> Html {
    let Some(properties) = properties.as_object().filter(|p| !p.is_empty()) else {
        return html! { <p class="hint">{ "No properties." }</p> };
    };
    let mut names: Vec<&String> = properties.keys().collect();
    datadict_core::order::sort(&mut names);
    let cols = [
        Col::plain("Property"),
        Col {
            head: "Value".into(),
            th: None,
            td: Some("value"),
        },
    ];
    let rows = names.into_iter().map(|name| Row {
        class: None,
        id: None,
        cells: vec![code(name.clone()), text(value_text(&properties[name]))],
    });
    grid(id, "schemas cards data-properties", &cols, rows.collect())
}

/// A field of an answer as text (an absent one as empty text).
pub(crate) fn field(value: &Value, name: &str) -> String {
    value.get(name).map(value_text).unwrap_or_default()
}

/// The "Show more" button of a list (while there is a next page) and the state of that page.
pub(crate) fn pager(
    id: &'static str,
    label: &'static str,
    has_next: bool,
    more: &More,
    onclick: Callback<MouseEvent>,
) -> Html {
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

/// The state of a tab, kept while its view changes (a panel opens or closes) and dropped when
/// another tab is shown: one component for the three tabs, keyed by tab.
pub(crate) struct Tab {
    pub state: StateHandle,
    /// What is typed in the tab's field: a user id, or a group key.
    pub typed: UseStateHandle<String>,
    /// Whether the profile form was sent without a user id.
    pub blank: UseStateHandle<bool>,
    /// The group key the list shows, and a counter that reads a list again.
    pub shown_key: UseStateHandle<String>,
    pub reload: UseStateHandle<u32>,
}

#[derive(Properties, PartialEq)]
struct TabProps {
    view: DataView,
}

#[component]
fn TabView(props: &TabProps) -> Html {
    let tab = Tab {
        state: use_app_state(),
        typed: use_state(|| match &props.view {
            DataView::Profiles(Some(id)) => id.clone(),
            _ => String::new(),
        }),
        blank: use_state(|| false),
        shown_key: use_state(String::new),
        reload: use_state(|| 0u32),
    };
    let oninput = {
        let (typed, blank) = (tab.typed.clone(), tab.blank.clone());
        Callback::from(move |e: InputEvent| {
            typed.set(
                e.target_unchecked_into::<web_sys::HtmlInputElement>()
                    .value(),
            );
            if *blank {
                blank.set(false);
            }
        })
    };
    match props.view.clone() {
        DataView::Profiles(id) => profiles::profile_tab(&tab, id, oninput),
        DataView::Groups(open) => groups::group_tab(&tab, open, oninput),
        DataView::Tables(open) => tables::table_tab(&tab, open),
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
        DataView::Profiles(_) => html! { <TabView key="profiles" view={view.clone()} /> },
        DataView::Groups(_) => html! { <TabView key="groups" view={view.clone()} /> },
        DataView::Tables(_) => html! { <TabView key="tables" view={view.clone()} /> },
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
