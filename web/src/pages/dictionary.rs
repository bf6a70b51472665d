//! The dictionary view: events and the user profile in tabs, with search, filters and sorting over
//! [`crate::model`] rows, a detail panel, the entity form, bulk upload and export.

use crate::api;
use crate::state::{use_app_state, StateHandle};
use crate::components::download::download;
use crate::components::entity_form::EntityForm;
use crate::components::log::{log_request, push};
use crate::model::{all_tags, build_rows, filter_rows, Filter, Row, SortKey, Status};
use crate::pages::bulk::BulkUpload;
use crate::state::{Action, Dictionary, Level, Load};
use datadict_core::{EntityType, SchemaEntry, DEFAULT_NAMESPACE};
use std::collections::HashMap;
use std::rc::Rc;
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// How many rows are drawn at first, and added per "show more": drawing all of a 5,000-entity
/// dictionary at once would cost far more than a frame, and nobody reads 5,000 rows unfiltered.
pub const PAGE_ROWS: usize = 100;

/// Reads the whole dictionary and the 30-day volumes into the shared state.
pub fn load_dictionary(state: &StateHandle) {
    let Some(conn) = state.connection.clone() else { return };
    state.dispatch(Action::DictionaryLoading);
    let state = state.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let log = log_request(&state);
        let entries = match api::list_all_schemas(&conn, &log).await {
            Ok(entries) => entries,
            Err(err) => {
                state.dispatch(Action::DictionaryFailed(err.to_string()));
                return;
            }
        };
        // The read API is this server's own addition; without it the volume column says so.
        let volumes = match api::event_counts(&conn, &log).await {
            Ok(counts) => Some(Rc::new(counts.into_iter().map(|c| (c.event, c.count)).collect::<HashMap<_, _>>())),
            Err(err) => {
                push(&state, Level::Error, format!("30-day volumes are unavailable: {err}"));
                None
            }
        };
        crate::mark("dd:dictionary-loaded");
        state.dispatch(Action::DictionaryLoaded(Dictionary { entries: Rc::new(entries), volumes }));
    });
}

/// What the side panel shows.
#[derive(Debug, Clone, PartialEq)]
enum Panel {
    None,
    Detail(String),
    Edit(Option<SchemaEntry>),
    /// Create the schema of an undocumented event, its name filled in.
    Document(String),
    Bulk,
    ConfirmDelete(SchemaEntry),
}

fn find<'a>(entries: &'a [SchemaEntry], key: &str) -> Option<&'a SchemaEntry> {
    entries.iter().find(|e| format!("{}:{}", e.entity_type, e.name) == key)
}

#[component]
pub fn DictionaryPage() -> Html {
    let state = use_app_state();
    let filter = use_state(Filter::default);
    let shown = use_state(|| PAGE_ROWS);
    let panel = use_state(|| Panel::None);
    let dictionary = match &state.dictionary {
        Load::Loaded(d) => Some(d.clone()),
        _ => None,
    };
    // Rows are rebuilt only when the dictionary changes (its version number: comparing 5,000
    // entries on every render would cost what the memo saves).
    let version = state.dictionary_version;
    let rows = {
        let dictionary = dictionary.clone();
        use_memo(version, move |_| {
            crate::mark("dd:rows-start");
            let rows = match &dictionary {
                Some(d) => build_rows(&d.entries, d.volumes.as_deref(), DEFAULT_NAMESPACE),
                None => Vec::new(),
            };
            crate::mark("dd:rows-built");
            rows
        })
    };
    let visible = {
        let rows = rows.clone();
        use_memo((version, (*filter).clone()), move |(_, f)| {
            let out = filter_rows(&rows, f);
            crate::mark("dd:rows-filtered");
            out
        })
    };
    // Marks for the benchmark: effects run once the DOM holds the new rows.
    use_effect_with((version, rows.len()), |(_, n)| {
        if *n > 0 {
            crate::mark("dd:dictionary-rendered");
        }
    });
    use_effect_with((version, (*filter).clone()), |_| crate::mark("dd:filter-rendered"));
    let tags = {
        let rows = rows.clone();
        use_memo((version, filter.entity_type), move |(_, t)| all_tags(&rows, *t))
    };

    let set_filter = |f: fn(&mut Filter, String)| {
        let (filter, shown) = (filter.clone(), shown.clone());
        move |value: String| {
            let mut next = (*filter).clone();
            f(&mut next, value);
            filter.set(next);
            shown.set(PAGE_ROWS);
        }
    };
    let onsearch = {
        let set = set_filter(|f, v| f.query = v);
        Callback::from(move |e: InputEvent| {
            crate::mark("dd:filter-input");
            set(e.target_unchecked_into::<HtmlInputElement>().value())
        })
    };
    let select = |f: fn(&mut Filter, String)| {
        let set = set_filter(f);
        Callback::from(move |e: Event| set(e.target_unchecked_into::<HtmlSelectElement>().value()))
    };
    let tab = |t: EntityType| {
        let set = set_filter(|f, v| {
            f.entity_type = v.parse().unwrap_or(EntityType::Event);
            f.tag = None;
        });
        let panel = panel.clone();
        Callback::from(move |_| {
            set(t.as_str().to_owned());
            panel.set(Panel::None);
        })
    };
    let open = |p: Panel| {
        let panel = panel.clone();
        Callback::from(move |_| panel.set(p.clone()))
    };
    let onreload = {
        let state = state.clone();
        Callback::from(move |_| load_dictionary(&state))
    };
    let onexport = {
        let (state, dictionary) = (state.clone(), dictionary.clone());
        Callback::from(move |_| {
            let Some(d) = &dictionary else { return };
            let body = datadict_core::BatchUploadRequest { entries: (*d.entries).clone(), truncate: false };
            let text = serde_json::to_string_pretty(&body).unwrap_or_default();
            match download("dictionary.json", "application/json", &text) {
                Ok(()) => push(&state, Level::Info, format!("exported {} entities as dictionary.json", d.entries.len())),
                Err(err) => push(&state, Level::Error, format!("the export could not be saved: {err}")),
            }
        })
    };
    let onexportcsv = {
        let (state, dictionary) = (state.clone(), dictionary.clone());
        Callback::from(move |_| {
            let Some(d) = &dictionary else { return };
            let text = datadict_core::dictionary_to_csv(&d.entries, DEFAULT_NAMESPACE);
            match download("dictionary.csv", "text/csv", &text) {
                Ok(()) => push(&state, Level::Info, format!("exported {} entities as dictionary.csv", d.entries.len())),
                Err(err) => push(&state, Level::Error, format!("the export could not be saved: {err}")),
            }
        })
    };
    let onsaved = {
        let panel = panel.clone();
        Callback::from(move |e: SchemaEntry| panel.set(Panel::Detail(format!("{}:{}", e.entity_type, e.name))))
    };
    let oncancel = {
        let panel = panel.clone();
        Callback::from(move |()| panel.set(Panel::None))
    };

    let entity_type = filter.entity_type;
    let body = match &state.dictionary {
        Load::Idle => html! { <p>{ "Connect to a project in Settings first." }</p> },
        Load::Loading => html! { <p aria-busy="true">{ "Loading the dictionary…" }</p> },
        Load::Failed(message) => html! { <p class="error" role="alert">{ message.clone() }</p> },
        Load::Loaded(_) if visible.is_empty() => html! {
            <p id="no-rows">{ if rows.iter().any(|r| r.entity_type == entity_type) { "No entity matches the search and filters." } else { "Nothing documented here yet." } }</p>
        },
        Load::Loaded(_) => {
            let onmore = {
                let shown = shown.clone();
                Callback::from(move |_| shown.set(*shown + PAGE_ROWS))
            };
            let more = visible.len().saturating_sub(*shown);
            html! {
                <>
                <p class="hint" id="row-count">{ format!("{} of {} shown", visible.len().min(*shown), visible.len()) }</p>
                <div class="table-wrap">
                <table id="schema-list" class="schemas">
                    <thead><tr>
                        <th scope="col">{ "Display name" }</th>
                        <th scope="col">{ "Name" }</th>
                        <th scope="col" class="description">{ "Description" }</th>
                        <th scope="col">{ "Tags" }</th>
                        <th scope="col" class="contacts">{ "Contacts" }</th>
                        <th scope="col">{ "Status" }</th>
                        <th scope="col" class="count">{ "Properties" }</th>
                        <th scope="col" class="count">{ "30-day volume" }</th>
                    </tr></thead>
                    <tbody>{ for visible.iter().take(*shown).map(|&i| row(&rows[i], &panel)) }</tbody>
                </table>
                </div>
                if more > 0 {
                    <button id="show-more" onclick={onmore}>{ format!("Show {} more ({more} not shown)", more.min(PAGE_ROWS)) }</button>
                }
                </>
            }
        }
    };

    let side = match (&*panel, &dictionary) {
        (Panel::Detail(key), Some(d)) => match (find(&d.entries, key), rows.iter().find(|r| &r.key() == key)) {
            (Some(entry), _) => detail(entry, &panel),
            (None, Some(r)) => html! {
                <aside class="card detail" id="detail" aria-label="Details">
                    <h2>{ r.name.clone() }</h2>
                    <p>{ format!("Seen {} times in the last 30 days, but not documented.", r.volume.unwrap_or(0)) }</p>
                    <button id="document-it" onclick={open(Panel::Document(r.name.clone()))}>{ "Document it" }</button>
                </aside>
            },
            _ => html! {},
        },
        (Panel::Edit(initial), _) => {
            let t = initial.as_ref().map_or(entity_type, |e| e.entity_type);
            let key = initial.as_ref().map_or_else(|| "new".to_owned(), |e| e.name.clone());
            html! { <EntityForm {key} entity_type={t} initial={initial.clone()} onsaved={onsaved.clone()} oncancel={oncancel.clone()} /> }
        }
        (Panel::Document(name), _) => html! {
            <EntityForm key={format!("doc:{name}")} entity_type={EntityType::Event} initial={None::<SchemaEntry>}
                        prefill_name={name.clone()} onsaved={onsaved.clone()} oncancel={oncancel.clone()} />
        },
        // Shown while the dictionary reloads after an upload too, so that the result stays.
        (Panel::Bulk, d) => html! {
            <BulkUpload current={d.as_ref().map_or_else(Rc::default, |d| d.entries.clone())} onclose={oncancel.clone()} />
        },
        (Panel::ConfirmDelete(entry), _) => confirm_delete(entry, &state, &panel),
        _ => html! {},
    };

    html! {
        <div class="dictionary">
        <section class="card">
            // Plain toggle buttons rather than ARIA tabs: tabs promise arrow-key navigation, while
            // buttons are reached with Tab and say which one is on through `aria-pressed`.
            <div class="tabs" role="group" aria-label="Entity type">
                { for EntityType::ALL.iter().map(|&t| html! {
                    <button id={format!("tab-{t}")} aria-pressed={(t == entity_type).to_string()}
                            class={classes!("tab", (t == entity_type).then_some("active"))} onclick={tab(t)}>
                        { if t == EntityType::Event { "Events" } else { "User profiles" } }
                    </button>
                }) }
            </div>
            <div class="toolbar">
                <label for="search" class="sr-only">{ "Search" }</label>
                <input id="search" type="search" placeholder="Search name, display name, description, tags"
                       value={filter.query.clone()} oninput={onsearch} />
                <label for="status-filter">{ "Status" }</label>
                <select id="status-filter" onchange={select(|f, v| f.status = Status::parse(&v))}>
                    <option value="" selected={filter.status.is_none()}>{ "any" }</option>
                    { for Status::ALL.iter().map(|s| html! { <option value={s.as_str()} selected={filter.status == Some(*s)}>{ s.as_str() }</option> }) }
                </select>
                <label for="tag-filter">{ "Tag" }</label>
                <select id="tag-filter" onchange={select(|f, v| f.tag = (!v.is_empty()).then_some(v))}>
                    <option value="" selected={filter.tag.is_none()}>{ "any" }</option>
                    { for tags.iter().map(|t| html! { <option value={t.clone()} selected={filter.tag.as_ref() == Some(t)}>{ t.clone() }</option> }) }
                </select>
                <label for="sort">{ "Sort by" }</label>
                <select id="sort" onchange={select(|f, v| f.sort = SortKey::parse(&v).unwrap_or(SortKey::Display))}>
                    { for SortKey::ALL.iter().map(|k| html! { <option value={k.as_str()} selected={filter.sort == *k}>{ k.label() }</option> }) }
                </select>
                <label class="check"><input id="sort-desc" type="checkbox" checked={filter.descending}
                    onchange={select(|f, _| f.descending = !f.descending)} />{ " Descending" }</label>
            </div>
            <div class="actions">
                <button id="new-entity" onclick={open(Panel::Edit(None))} disabled={dictionary.is_none()}>
                    { if entity_type == EntityType::Event { "New event" } else { "New profile schema" } }
                </button>
                <button id="bulk-upload" onclick={open(Panel::Bulk)} disabled={dictionary.is_none()}>{ "Bulk upload…" }</button>
                <button id="export-json" onclick={onexport} disabled={dictionary.is_none()}>{ "Export JSON" }</button>
                <button id="export-csv" onclick={onexportcsv} disabled={dictionary.is_none()}>{ "Export CSV" }</button>
                <button id="reload" onclick={onreload}>{ "Reload" }</button>
            </div>
            { body }
        </section>
        { side }
        </div>
    }
}

fn row(r: &Row, panel: &UseStateHandle<Panel>) -> Html {
    let key = r.key();
    let onclick = {
        let (panel, key) = (panel.clone(), key.clone());
        Callback::from(move |_| panel.set(Panel::Detail(key.clone())))
    };
    let volume = r.volume.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
    let join = |v: &[String]| v.join(", ");
    // Every string is rendered as text: Yew escapes it, and no HTML is built from dictionary data.
    html! {
        <tr {key} class={classes!("schema-row", (r.status == Status::Undocumented).then_some("undocumented"))} data-name={r.name.clone()}>
            <td class="display-name"><button class="link open-detail" {onclick} aria-label={format!("Details of {}", r.display)}>{ r.display.clone() }</button></td>
            <td class="name"><code>{ r.name.clone() }</code></td>
            <td class="description">{ r.description.clone() }</td>
            <td class="tags">{ for r.tags.iter().map(|t| html! { <span class="tag">{ t.clone() }</span> }) }</td>
            <td class="contacts">{ join(&r.contacts) }{ if !r.contacts.is_empty() && !r.team_contacts.is_empty() { "; " } else { "" } }{ join(&r.team_contacts) }</td>
            <td class={classes!("status", r.status.as_str())}>{ r.status.as_str() }</td>
            <td class="count">{ r.properties }</td>
            <td class="count volume">{ volume }</td>
        </tr>
    }
}

fn detail(entry: &SchemaEntry, panel: &UseStateHandle<Panel>) -> Html {
    let meta = entry.schema_json.vendor(DEFAULT_NAMESPACE);
    let flag = |b: Option<bool>| if b == Some(true) { "yes" } else { "no" };
    let props = entry.schema_json.properties.iter().flatten().map(|(name, def)| {
        let pm = def.vendor(DEFAULT_NAMESPACE);
        html! {
            <tr class="property-row">
                <td><code>{ name.clone() }</code></td>
                <td>{ pm.display_name.clone().unwrap_or_default() }</td>
                <td>{ def.kind.as_str() }</td>
                <td>{ def.description.clone().unwrap_or_default() }</td>
                <td>{ flag(pm.hidden) }</td>
                <td>{ flag(pm.dropped) }</td>
            </tr>
        }
    });
    let json_schema = serde_json::to_string_pretty(&datadict_core::entity_json_schema(entry, DEFAULT_NAMESPACE)).unwrap_or_default();
    let stored = serde_json::to_string_pretty(&entry.schema_json).unwrap_or_default();
    let edit = {
        let (panel, entry) = (panel.clone(), entry.clone());
        Callback::from(move |_| panel.set(Panel::Edit(Some(entry.clone()))))
    };
    let delete = {
        let (panel, entry) = (panel.clone(), entry.clone());
        Callback::from(move |_| panel.set(Panel::ConfirmDelete(entry.clone())))
    };
    let close = {
        let panel = panel.clone();
        Callback::from(move |_| panel.set(Panel::None))
    };
    html! {
        <aside class="card detail" id="detail" aria-label="Details">
            <h2>{ meta.display_name.clone().unwrap_or_else(|| entry.name.clone()) }</h2>
            <p><code>{ entry.name.clone() }</code>{ format!(" · {}", entry.entity_type) }</p>
            <p>{ entry.schema_json.description.clone().unwrap_or_default() }</p>
            <div class="actions">
                <button id="edit-entity" onclick={edit}>{ "Edit" }</button>
                <button id="delete-entity" class="danger" onclick={delete}>{ "Delete…" }</button>
                <button onclick={close}>{ "Close" }</button>
            </div>
            <h3>{ "Properties" }</h3>
            <div class="table-wrap">
            <table id="property-list" class="schemas">
                <thead><tr>
                    <th scope="col">{ "Name" }</th><th scope="col">{ "Display name" }</th><th scope="col">{ "Type" }</th>
                    <th scope="col">{ "Description" }</th><th scope="col">{ "Hidden" }</th><th scope="col">{ "Dropped" }</th>
                </tr></thead>
                <tbody>{ for props }</tbody>
            </table>
            </div>
            <h3>{ "JSON Schema (draft-07)" }</h3>
            <pre id="schema-json" class="json">{ json_schema }</pre>
            <details>
                <summary>{ "schemaJson as stored" }</summary>
                <pre id="schema-stored" class="json">{ stored }</pre>
            </details>
        </aside>
    }
}

fn confirm_delete(entry: &SchemaEntry, state: &StateHandle, panel: &UseStateHandle<Panel>) -> Html {
    let onconfirm = {
        let (state, panel, entry) = (state.clone(), panel.clone(), entry.clone());
        Callback::from(move |_| {
            let Some(conn) = state.connection.clone() else { return };
            let (state, panel, entry) = (state.clone(), panel.clone(), entry.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                match api::delete_schema(&conn, entry.entity_type, &entry.name, &log).await {
                    Ok(n) => {
                        push(&state, Level::Info, format!("deleted {} `{}` ({n} removed)", entry.entity_type, entry.name));
                        state.dispatch(Action::EntityDeleted(entry.entity_type, entry.name.clone()));
                        panel.set(Panel::None);
                    }
                    Err(err) => push(&state, Level::Error, format!("could not delete `{}`: {err}", entry.name)),
                }
            });
        })
    };
    let oncancel = {
        let (panel, key) = (panel.clone(), format!("{}:{}", entry.entity_type, entry.name));
        Callback::from(move |_| panel.set(Panel::Detail(key.clone())))
    };
    html! {
        <aside class="card detail" id="confirm-delete" role="alertdialog" aria-label="Confirm delete">
            <h2>{ "Delete this entity?" }</h2>
            <p>{ format!("The {} “{}” and its {} properties will be removed from the dictionary. Events already stored are not touched.",
                entry.entity_type, entry.name, entry.schema_json.properties.as_ref().map_or(0, |p| p.len())) }</p>
            <div class="actions">
                <button id="confirm-delete-yes" class="danger" onclick={onconfirm}>{ "Delete" }</button>
                <button id="confirm-delete-no" onclick={oncancel}>{ "Keep it" }</button>
            </div>
        </aside>
    }
}
