//! The dictionary view: events and the user profile in tabs, with search, filters and sorting over
//! [`crate::model`] rows, a side panel for the detail, the entity form and bulk upload, and export.
//! The tab and what the panel shows are the route's ([`crate::router::Panel`]), so each has an address.

use crate::api;
use crate::state::{use_app_state, StateHandle};
use crate::components::download::download;
use crate::components::entity_form::EntityForm;
use crate::components::log::{log_request, push};
use crate::components::side_panel::SidePanel;
use crate::router::{Panel, Route};
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
        let violations = match api::read_data(&conn, &api::quality_summary_url(&conn), &log).await {
            Ok(answer) => Some(Rc::new(answer["results"]["violations"].clone())),
            Err(err) => {
                push(&state, Level::Error, format!("violation marks are unavailable: {err}"));
                None
            }
        };
        crate::mark("dd:dictionary-loaded");
        state.dispatch(Action::DictionaryLoaded(Dictionary { entries: Rc::new(entries), volumes, violations }));
    });
}

fn find<'a>(entries: &'a [SchemaEntry], entity_type: EntityType, name: &str) -> Option<&'a SchemaEntry> {
    entries.iter().find(|e| e.entity_type == entity_type && e.name == name)
}

/// How many violations the data-quality summary counts under `name` in `map` (`by_event`,
/// `by_profile` or `by_property`).
fn violations_of(violations: Option<&serde_json::Value>, map: &str, name: &str) -> u64 {
    violations.and_then(|v| v[map][name].as_u64()).unwrap_or(0)
}

/// The violations of one entity: the summary counts events and the profile updates checked
/// against a `profile` schema apart, since the two may share a name.
fn entity_violations(violations: Option<&serde_json::Value>, entity_type: EntityType, name: &str) -> u64 {
    let map = if entity_type == EntityType::Event { "by_event" } else { "by_profile" };
    violations_of(violations, map, name)
}

/// The mark of an entity or property with violations: a count that says what it counts.
fn flag(n: u64, label: String) -> Html {
    if n == 0 {
        return html! {};
    }
    html! { <span class="flag" role="img" aria-label={label.clone()} title={label}>{ format!("⚠ {n}") }</span> }
}

/// Opens `panel` on the tab `entity_type`, as a new address.
fn go(state: &StateHandle, entity_type: EntityType, panel: Panel) -> Callback<MouseEvent> {
    let state = state.clone();
    Callback::from(move |_| state.dispatch(Action::Go(Route::Dictionary(entity_type, panel.clone()))))
}

#[component]
pub fn DictionaryPage() -> Html {
    let state = use_app_state();
    let filter_state = use_state(Filter::default);
    let shown = use_state(|| PAGE_ROWS);
    let (entity_type, panel) = match &state.route {
        Route::Dictionary(t, p) => (*t, p.clone()),
        _ => (EntityType::Event, Panel::None),
    };
    // Asking before a delete is a step inside the detail, not an address of its own.
    let confirming = use_state(|| false);
    {
        let confirming = confirming.clone();
        use_effect_with(panel.clone(), move |_| confirming.set(false));
    }
    let dictionary = match &state.dictionary {
        Load::Loaded(d) => Some(d.clone()),
        _ => None,
    };
    let violations = dictionary.as_ref().and_then(|d| d.violations.clone());
    let violations = violations.as_deref();
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
    // The tab is the route's; the filter follows it so that the model sees one value.
    let filter = {
        let mut f = (*filter_state).clone();
        if f.entity_type != entity_type {
            f.entity_type = entity_type;
            f.tag = None;
        }
        f
    };
    let visible = {
        let rows = rows.clone();
        use_memo((version, filter.clone()), move |(_, f)| {
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
    use_effect_with((version, filter.clone()), |_| crate::mark("dd:filter-rendered"));
    let tags = {
        let rows = rows.clone();
        use_memo((version, filter.entity_type), move |(_, t)| all_tags(&rows, *t))
    };

    let set_filter = |f: fn(&mut Filter, String)| {
        let (filter_state, filter, shown) = (filter_state.clone(), filter.clone(), shown.clone());
        move |value: String| {
            let mut next = filter.clone();
            f(&mut next, value);
            filter_state.set(next);
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
        let shown = shown.clone();
        let go = go(&state, t, Panel::None);
        Callback::from(move |e| {
            shown.set(PAGE_ROWS);
            go.emit(e);
        })
    };
    let open = |p: Panel| go(&state, entity_type, p);
    let onreload = {
        let state = state.clone();
        Callback::from(move |_| load_dictionary(&state))
    };
    let onexport = {
        let (state, dictionary) = (state.clone(), dictionary.clone());
        Callback::from(move |_| {
            let Some(d) = &dictionary else { return };
            let body = datadict_core::BatchUploadRequest { entries: (*d.entries).clone(), truncate: false };
            // Through a `Value`, like every pretty-printed JSON of the app: the same text, and one copy
            // of the pretty printer in the wasm instead of one per printed type.
            let text = serde_json::to_string_pretty(&serde_json::to_value(&body).unwrap_or_default()).unwrap_or_default();
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
        let state = state.clone();
        Callback::from(move |e: SchemaEntry| state.dispatch(Action::Go(Route::Dictionary(e.entity_type, Panel::Detail(e.name)))))
    };
    let oncancel = {
        let state = state.clone();
        Callback::from(move |()| state.dispatch(Action::Go(Route::Dictionary(entity_type, Panel::None))))
    };
    let has_volume = entity_type == EntityType::Event;
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
                        if has_volume {
                            <th scope="col" class="count">{ "30-day volume" }</th>
                        }
                    </tr></thead>
                    <tbody>{ for visible.iter().take(*shown).map(|&i| row(&rows[i], &state, &panel, violations)) }</tbody>
                </table>
                </div>
                if more > 0 {
                    <button id="show-more" onclick={onmore}>{ format!("Show {} more ({more} not shown)", more.min(PAGE_ROWS)) }</button>
                }
                </>
            }
        }
    };

    // What the route names but the dictionary does not hold (a stale link, a deleted entity).
    let missing = |name: &str| html! {
        <section class="detail" id="detail-missing">
            <h2>{ name.to_owned() }</h2>
            <p>{ format!("There is no {entity_type} named “{name}” in this project's dictionary.") }</p>
            <button onclick={oncancel.reform(|_| ())}>{ "Close" }</button>
        </section>
    };
    let side = match (&panel, &dictionary) {
        (Panel::None, _) => None,
        (Panel::Detail(name), Some(d)) => Some(match (find(&d.entries, entity_type, name), rows.iter().find(|r| r.entity_type == entity_type && &r.name == name)) {
            (Some(entry), _) if *confirming => confirm_delete(entry, &state, &confirming),
            (Some(entry), _) => detail(entry, &state, &confirming, violations),
            (None, Some(r)) => html! {
                <section class="detail" id="detail">
                    <h2>{ r.name.clone() }</h2>
                    <p>{ format!("Seen {} times in the last 30 days, but not documented.", r.volume.unwrap_or(0)) }</p>
                    <div class="actions">
                        <button id="document-it" onclick={open(Panel::Document(r.name.clone()))}>{ "Document it" }</button>
                        <button onclick={oncancel.reform(|_| ())}>{ "Close" }</button>
                    </div>
                </section>
            },
            (None, None) => missing(name),
        }),
        (Panel::Edit(name), Some(d)) => Some(match find(&d.entries, entity_type, name) {
            Some(entry) => html! {
                <EntityForm key={format!("edit:{name}")} {entity_type} initial={Some(entry.clone())} onsaved={onsaved.clone()} oncancel={oncancel.clone()} />
            },
            None => missing(name),
        }),
        (Panel::New, _) => Some(html! {
            <EntityForm key="new" {entity_type} initial={None::<SchemaEntry>} onsaved={onsaved.clone()} oncancel={oncancel.clone()} />
        }),
        (Panel::Document(name), _) => Some(html! {
            <EntityForm key={format!("doc:{name}")} entity_type={EntityType::Event} initial={None::<SchemaEntry>}
                        prefill_name={name.clone()} onsaved={onsaved.clone()} oncancel={oncancel.clone()} />
        }),
        // Shown while the dictionary reloads after an upload too, so that the result stays.
        (Panel::Bulk, _) => Some(html! { <BulkUpload onclose={oncancel.clone()} /> }),
        // The entity of the address is shown once the dictionary is read (after a refresh).
        (_, None) => None,
    };
    let side = side.map(|content| {
        let (label, row) = match &panel {
            Panel::Detail(n) => ("Details", Some(n.clone())),
            Panel::Edit(n) => ("Edit", Some(n.clone())),
            Panel::Bulk => ("Bulk upload", None),
            _ => ("New", None),
        };
        html! {
            <SidePanel content_key={format!("{panel:?}{}", *confirming)} {label} {row} onclose={oncancel.clone()}>{ content }</SidePanel>
        }
    });
    let with_panel = side.is_some();

    html! {
        <div class={classes!("dictionary", with_panel.then_some("with-panel"))}>
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
                // A filter with nothing to choose is not offered (profiles usually have no tags).
                if !tags.is_empty() {
                    <label for="tag-filter">{ "Tag" }</label>
                    <select id="tag-filter" onchange={select(|f, v| f.tag = (!v.is_empty()).then_some(v))}>
                        <option value="" selected={filter.tag.is_none()}>{ "any" }</option>
                        { for tags.iter().map(|t| html! { <option value={t.clone()} selected={filter.tag.as_ref() == Some(t)}>{ t.clone() }</option> }) }
                    </select>
                }
                <label for="sort">{ "Sort by" }</label>
                <select id="sort" onchange={select(|f, v| f.sort = SortKey::parse(&v).unwrap_or(SortKey::Display))}>
                    { for SortKey::ALL.iter().map(|k| html! { <option value={k.as_str()} selected={filter.sort == *k}>{ k.label() }</option> }) }
                </select>
                <label class="check"><input id="sort-desc" type="checkbox" checked={filter.descending}
                    onchange={select(|f, _| f.descending = !f.descending)} />{ " Descending" }</label>
            </div>
            <div class="actions">
                <button id="new-entity" onclick={open(Panel::New)} disabled={dictionary.is_none()}>
                    { if entity_type == EntityType::Event { "New event" } else { "New profile schema" } }
                </button>
                <button id="bulk-upload" onclick={open(Panel::Bulk)} disabled={dictionary.is_none()}>{ "Bulk upload…" }</button>
                <button id="export-json" onclick={onexport} disabled={dictionary.is_none()}>{ "Export JSON" }</button>
                <button id="export-csv" onclick={onexportcsv} disabled={dictionary.is_none()}>{ "Export CSV" }</button>
                <button id="reload" onclick={onreload}>{ "Reload" }</button>
            </div>
            { body }
        </section>
        { for side }
        </div>
    }
}

fn row(r: &Row, state: &StateHandle, panel: &Panel, violations: Option<&serde_json::Value>) -> Html {
    let flagged = entity_violations(violations, r.entity_type, &r.name);
    let key = r.key();
    let onclick = go(state, r.entity_type, Panel::Detail(r.name.clone()));
    let open = matches!(panel, Panel::Detail(n) | Panel::Edit(n) if *n == r.name);
    let volume = r.volume.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
    let join = |v: &[String]| v.join(", ");
    // Every string is rendered as text: Yew escapes it, and no HTML is built from dictionary data.
    html! {
        <tr {key} class={classes!("schema-row", (r.status == Status::Undocumented).then_some("undocumented"), open.then_some("open"))} data-name={r.name.clone()}>
            <td class="display-name"><button class="link open-detail" {onclick} aria-label={format!("Details of {}", r.display)}>{ r.display.clone() }</button>
                { flag(flagged, format!("{} in the last 30 days", datadict_core::count(flagged, "violation", "violations"))) }</td>
            <td class="name"><code>{ r.name.clone() }</code></td>
            <td class="description">{ r.description.clone() }</td>
            <td class="tags">{ for r.tags.iter().map(|t| html! { <span class="tag">{ t.clone() }</span> }) }</td>
            <td class="contacts">{ join(&r.contacts) }{ if !r.contacts.is_empty() && !r.team_contacts.is_empty() { "; " } else { "" } }{ join(&r.team_contacts) }</td>
            <td class={classes!("status", r.status.as_str())}>{ r.status.as_str() }</td>
            <td class="count">{ r.properties }</td>
            // Volumes are counted per event; a profile schema has none to show.
            if r.entity_type == EntityType::Event {
                <td class="count volume">{ volume }</td>
            }
        </tr>
    }
}

fn detail(entry: &SchemaEntry, state: &StateHandle, confirming: &UseStateHandle<bool>, violations: Option<&serde_json::Value>) -> Html {
    let meta = entry.schema_json.vendor(DEFAULT_NAMESPACE);
    // Four narrow columns rather than six, so that the table fits the panel without a sideways
    // scroll: the display name goes under the name, and the two flags share one cell.
    let props = entry.schema_json.properties.iter().flatten().map(|(name, def)| {
        let pm = def.vendor(DEFAULT_NAMESPACE);
        let flags: Vec<&str> = [(pm.hidden == Some(true)).then_some("hidden"), (pm.dropped == Some(true)).then_some("dropped")].into_iter().flatten().collect();
        html! {
            <tr class="property-row">
                <td><code>{ name.clone() }</code>
                    { flag(violations_of(violations, "by_property", name), format!("{} of a property named {name} in the last 30 days, across all events and profiles",
                        datadict_core::count(violations_of(violations, "by_property", name), "violation", "violations"))) }
                    if let Some(d) = pm.display_name.clone() { <div class="hint">{ d }</div> }</td>
                <td>{ def.kind.as_str() }</td>
                <td>{ def.description.clone().unwrap_or_default() }</td>
                <td>{ if flags.is_empty() { "visible".to_owned() } else { flags.join(", ") } }</td>
            </tr>
        }
    });
    let json_schema = serde_json::to_string_pretty(&datadict_core::entity_json_schema(entry, DEFAULT_NAMESPACE)).unwrap_or_default();
    // Through a `Value` for the reason given in `onexport`.
    let stored = serde_json::to_string_pretty(&serde_json::to_value(&entry.schema_json).unwrap_or_default()).unwrap_or_default();
    let edit = go(state, entry.entity_type, Panel::Edit(entry.name.clone()));
    let delete = {
        let confirming = confirming.clone();
        Callback::from(move |_| confirming.set(true))
    };
    let close = go(state, entry.entity_type, Panel::None);
    html! {
        <section class="detail" id="detail">
            <h2>{ meta.display_name.clone().unwrap_or_else(|| entry.name.clone()) }</h2>
            if entity_violations(violations, entry.entity_type, &entry.name) > 0 {
                <p class="error" id="detail-violations">{ format!("{} in the last 30 days: see ", datadict_core::count(entity_violations(violations, entry.entity_type, &entry.name), "violation", "violations")) }
                    <a href="#/quality">{ "Data quality" }</a>{ "." }</p>
            }
            <p><code>{ entry.name.clone() }</code>{ format!(" · {}", entry.entity_type) }</p>
            <p>{ entry.schema_json.description.clone().unwrap_or_default() }</p>
            <div class="actions">
                <button id="edit-entity" onclick={edit}>{ "Edit" }</button>
                <button id="delete-entity" class="danger" onclick={delete}>{ "Delete…" }</button>
                <button id="close-detail" onclick={close}>{ "Close" }</button>
            </div>
            <h3>{ "Properties" }</h3>
            <table id="property-list" class="schemas properties">
                <thead><tr>
                    <th scope="col">{ "Name" }</th><th scope="col">{ "Type" }</th>
                    <th scope="col">{ "Description" }</th><th scope="col">{ "Shown" }</th>
                </tr></thead>
                <tbody>{ for props }</tbody>
            </table>
            <h3>{ "JSON Schema (draft-07)" }</h3>
            <pre id="schema-json" class="json">{ json_schema }</pre>
            <details>
                <summary>{ "schemaJson as stored" }</summary>
                <pre id="schema-stored" class="json">{ stored }</pre>
            </details>
        </section>
    }
}

fn confirm_delete(entry: &SchemaEntry, state: &StateHandle, confirming: &UseStateHandle<bool>) -> Html {
    let onconfirm = {
        let (state, entry) = (state.clone(), entry.clone());
        Callback::from(move |_| {
            let Some(conn) = state.connection.clone() else { return };
            let (state, entry) = (state.clone(), entry.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                match api::delete_schema(&conn, entry.entity_type, &entry.name, &log).await {
                    Ok(n) => {
                        push(&state, Level::Info, format!("deleted {} `{}` ({n} removed)", entry.entity_type, entry.name));
                        state.dispatch(Action::EntityDeleted(entry.entity_type, entry.name.clone()));
                        state.dispatch(Action::Go(Route::Dictionary(entry.entity_type, Panel::None)));
                    }
                    Err(err) => push(&state, Level::Error, format!("could not delete `{}`: {err}", entry.name)),
                }
            });
        })
    };
    let oncancel = {
        let confirming = confirming.clone();
        Callback::from(move |_| confirming.set(false))
    };
    html! {
        <section class="detail" id="confirm-delete" role="alertdialog" aria-label="Confirm delete">
            <h2>{ "Delete this entity?" }</h2>
            <p>{ format!("The {} “{}” and its {} properties will be removed from the dictionary. Events already stored are not touched.",
                entry.entity_type, entry.name, entry.schema_json.properties.as_ref().map_or(0, |p| p.len())) }</p>
            <div class="actions">
                <button id="confirm-delete-yes" class="danger" onclick={onconfirm}>{ "Delete" }</button>
                <button id="confirm-delete-no" onclick={oncancel}>{ "Keep it" }</button>
            </div>
        </section>
    }
}
