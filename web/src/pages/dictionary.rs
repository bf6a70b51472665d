//! The dictionary view: the project's event schemas with their display metadata.

use crate::api::{self, ApiError};
use crate::app::use_app_state;
use crate::components::log::push;
use crate::state::Level;
use datadict_core::{EntityType, SchemaEntry, DEFAULT_NAMESPACE};
use yew::prelude::*;

/// Loading state of a request: explicit, never a pair of booleans.
#[derive(Debug, Clone, PartialEq)]
pub enum Load<T> {
    Idle,
    Loading,
    Loaded(T),
    Failed(String),
}

/// The status an entity shows: dropped wins over hidden.
pub fn status_of(entry: &SchemaEntry) -> &'static str {
    let meta = entry.schema_json.vendor(DEFAULT_NAMESPACE);
    if meta.dropped == Some(true) {
        "dropped"
    } else if meta.hidden == Some(true) {
        "hidden"
    } else {
        "visible"
    }
}

#[component]
pub fn DictionaryPage() -> Html {
    let state = use_app_state();
    let load = use_state(|| Load::<Vec<SchemaEntry>>::Idle);
    {
        let (state, load) = (state.clone(), load.clone());
        let conn = state.connection.clone();
        use_effect_with(conn, move |conn| {
            if let Some(conn) = conn.clone() {
                load.set(Load::Loading);
                wasm_bindgen_futures::spawn_local(async move {
                    let log_state = state.clone();
                    let log = move |r: api::RequestRecord| {
                        push(&log_state, if r.error.is_some() { Level::Error } else { Level::Info }, r.to_string())
                    };
                    match api::list_schemas(&conn, EntityType::Event, &log).await {
                        Ok(list) => load.set(Load::Loaded(list)),
                        Err(err @ ApiError::Unauthorized(_)) | Err(err @ ApiError::Forbidden(_)) => load.set(Load::Failed(err.to_string())),
                        Err(err) => load.set(Load::Failed(err.to_string())),
                    }
                });
            }
        });
    }
    let body = match &*load {
        Load::Idle => html! { <p>{ "Connect to a project in Settings first." }</p> },
        Load::Loading => html! { <p aria-busy="true">{ "Loading the dictionary…" }</p> },
        Load::Failed(message) => html! { <p class="error" role="alert">{ message.clone() }</p> },
        Load::Loaded(list) if list.is_empty() => html! { <p>{ "This project has no event schemas yet." }</p> },
        Load::Loaded(list) => html! {
            <table id="schema-list" class="schemas">
                <thead><tr>
                    <th scope="col">{ "Display name" }</th>
                    <th scope="col">{ "Name" }</th>
                    <th scope="col">{ "Description" }</th>
                    <th scope="col">{ "Tags" }</th>
                    <th scope="col">{ "Status" }</th>
                    <th scope="col">{ "Properties" }</th>
                </tr></thead>
                <tbody>{ for list.iter().map(row) }</tbody>
            </table>
        },
    };
    html! {
        <section class="card">
            <h2>{ "Events" }</h2>
            { body }
        </section>
    }
}

fn row(entry: &SchemaEntry) -> Html {
    let meta = entry.schema_json.vendor(DEFAULT_NAMESPACE);
    let display = meta.display_name.clone().unwrap_or_else(|| entry.name.clone());
    let tags = meta.tags.clone().unwrap_or_default();
    let count = entry.schema_json.properties.as_ref().map_or(0, |p| p.len());
    let status = status_of(entry);
    // Every string is rendered as text: Yew escapes it, and no HTML is built from dictionary data.
    html! {
        <tr class="schema-row" data-name={entry.name.clone()}>
            <td class="display-name">{ display }</td>
            <td class="name"><code>{ entry.name.clone() }</code></td>
            <td class="description">{ entry.schema_json.description.clone().unwrap_or_default() }</td>
            <td class="tags">{ for tags.into_iter().map(|t| html! { <span class="tag">{ t }</span> }) }</td>
            <td class={classes!("status", status)}>{ status }</td>
            <td class="count">{ count }</td>
        </tr>
    }
}
