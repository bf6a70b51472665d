//! The form that creates or replaces one entity and its properties. What the user types is turned
//! into the API's JSON on every keystroke and checked by the core's `validate_schema_entry`; each
//! issue is shown beside the field it concerns ([`crate::model::field_of`]).

use crate::api;
use crate::state::use_app_state;
use crate::components::log::{log_request, push};
use crate::model::{field_of, Field};
use crate::router::{Panel, Route};
use crate::state::{Action, Level, Load};
use datadict_core::{validate_schema_entry, EntityType, Issue, PropertyType, SchemaEntry, SchemaRules, DEFAULT_NAMESPACE};
use serde_json::{json, Map, Value};
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// One property row of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyDraft {
    /// Stable across edits of the name, so that the row keeps its focus while typing.
    pub id: u32,
    pub name: String,
    pub kind: PropertyType,
    pub description: String,
    pub display_name: String,
    pub hidden: bool,
    pub dropped: bool,
}

/// The form's content.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Draft {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub tags: String,
    pub contacts: String,
    pub team_contacts: String,
    pub hidden: bool,
    pub dropped: bool,
    pub properties: Vec<PropertyDraft>,
    /// Metadata of the entity the form does not edit (`$source`, other namespaces), kept as is.
    pub other_metadata: Map<String, Value>,
    pub other_vendor: Map<String, Value>,
    /// Keys of the schema the spec does not name (`schemaJson.extra`), kept as is: replacing a
    /// schema with the form's would otherwise delete them.
    pub other_fields: Map<String, Value>,
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

impl Draft {
    pub fn from_entry(entry: &SchemaEntry, namespace: &str) -> Self {
        let meta = entry.schema_json.vendor(namespace);
        let mut other_metadata = entry.schema_json.metadata.clone().unwrap_or_default();
        let mut other_vendor = match other_metadata.remove(namespace) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        for key in ["displayName", "tags", "contacts", "teamContacts", "hidden", "dropped"] {
            other_vendor.remove(key);
        }
        let properties = entry
            .schema_json
            .properties
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, (name, def))| {
                let pm = def.vendor(namespace);
                PropertyDraft {
                    id: i as u32,
                    name: name.clone(),
                    kind: def.kind,
                    description: def.description.clone().unwrap_or_default(),
                    display_name: pm.display_name.unwrap_or_default(),
                    hidden: pm.hidden.unwrap_or(false),
                    dropped: pm.dropped.unwrap_or(false),
                }
            })
            .collect();
        Self {
            name: entry.name.clone(),
            display_name: meta.display_name.unwrap_or_default(),
            description: entry.schema_json.description.clone().unwrap_or_default(),
            tags: meta.tags.unwrap_or_default().join(", "),
            contacts: meta.contacts.unwrap_or_default().join(", "),
            team_contacts: meta.team_contacts.unwrap_or_default().join(", "),
            hidden: meta.hidden.unwrap_or(false),
            dropped: meta.dropped.unwrap_or(false),
            properties,
            other_metadata,
            other_vendor,
            other_fields: entry.schema_json.extra.clone(),
        }
    }

    /// The `SchemaEntry` JSON the form stands for. Empty fields are left out; `hidden` (and for
    /// events `dropped`) are always sent, so that un-hiding is a real change on replace.
    pub fn to_value(&self, entity_type: EntityType, namespace: &str) -> Value {
        let mut vendor = self.other_vendor.clone();
        if !self.display_name.trim().is_empty() {
            vendor.insert("displayName".into(), json!(self.display_name.trim()));
        }
        for (key, text) in [("tags", &self.tags), ("contacts", &self.contacts), ("teamContacts", &self.team_contacts)] {
            let items = list(text);
            if !items.is_empty() {
                vendor.insert(key.into(), json!(items));
            }
        }
        vendor.insert("hidden".into(), json!(self.hidden));
        if entity_type == EntityType::Event {
            vendor.insert("dropped".into(), json!(self.dropped));
        }
        let mut metadata = self.other_metadata.clone();
        metadata.insert(namespace.to_owned(), Value::Object(vendor));
        let mut properties = Map::new();
        for p in &self.properties {
            let mut def = Map::new();
            def.insert("type".into(), json!(p.kind.as_str()));
            if !p.description.trim().is_empty() {
                def.insert("description".into(), json!(p.description.trim()));
            }
            let mut pm = Map::new();
            if !p.display_name.trim().is_empty() {
                pm.insert("displayName".into(), json!(p.display_name.trim()));
            }
            if p.hidden {
                pm.insert("hidden".into(), json!(true));
            }
            if p.dropped {
                pm.insert("dropped".into(), json!(true));
            }
            if !pm.is_empty() {
                def.insert("metadata".into(), json!({ namespace: pm }));
            }
            properties.insert(p.name.clone(), Value::Object(def));
        }
        let mut schema = Map::new();
        if !self.description.trim().is_empty() {
            schema.insert("description".into(), json!(self.description.trim()));
        }
        if !properties.is_empty() {
            schema.insert("properties".into(), Value::Object(properties));
        }
        schema.insert("metadata".into(), Value::Object(metadata));
        for (key, value) in &self.other_fields {
            schema.entry(key.clone()).or_insert_with(|| value.clone());
        }
        json!({ "entityType": entity_type.as_str(), "name": self.name, "schemaJson": schema })
    }

    /// Property names used twice: the API's `properties` is a map, so the form must refuse them
    /// itself (the core sees only the last one).
    pub fn duplicate_names(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut dups: Vec<String> = self.properties.iter().filter(|p| !seen.insert(p.name.as_str())).map(|p| p.name.clone()).collect();
        dups.dedup();
        dups
    }
}

/// The issues of a draft, grouped by the field that shows them.
pub fn issues_by_field(draft: &Draft, entity_type: EntityType, namespace: &str) -> Vec<(Field, Issue)> {
    let value = draft.to_value(entity_type, namespace);
    let rules = SchemaRules { namespace: namespace.to_owned() };
    let names: Vec<String> = draft.properties.iter().map(|p| p.name.clone()).collect();
    let mut out: Vec<(Field, Issue)> =
        validate_schema_entry(&value, &rules).into_iter().map(|i| (field_of(&i.path, namespace, &names), i)).collect();
    for name in draft.duplicate_names() {
        out.push((
            Field::Property(name.clone()),
            Issue::new("", datadict_core::IssueCode::InvalidName, format!("the property `{name}` is listed twice; give each property its own name")),
        ));
    }
    out
}

/// Why a new entity cannot take `name`: one of that type has it.
fn exists_message(entity_type: EntityType, name: &str) -> String {
    format!("{} {entity_type} named `{name}` already exists; open it to edit it (saving a new one would replace its description and properties)",
        if entity_type == EntityType::Event { "an" } else { "a" })
}

/// The error messages for one field, as an element (nothing when there are none).
fn errors_at(issues: &[(Field, Issue)], field: &Field, id: &str) -> Html {
    let messages: Vec<&Issue> = issues.iter().filter(|(f, _)| f == field).map(|(_, i)| i).collect();
    if messages.is_empty() {
        return html! {};
    }
    html! {
        <ul class="field-errors" id={id.to_owned()} role="alert">
            { for messages.iter().map(|i| html! { <li>{ i.message.clone() }</li> }) }
        </ul>
    }
}

#[derive(Properties, PartialEq)]
pub struct EntityFormProps {
    pub entity_type: EntityType,
    /// The entity being replaced; `None` to create one.
    pub initial: Option<SchemaEntry>,
    /// The name a new entity starts with (documenting an event seen without a schema).
    #[prop_or_default]
    pub prefill_name: Option<String>,
    pub onsaved: Callback<SchemaEntry>,
    pub oncancel: Callback<()>,
}

thread_local! {
    /// Unsaved forms left by navigating away (a menu, Back, another row), by form: they are shown
    /// again when the same form opens, until saved, cancelled or discarded. Kept for the tab's
    /// life, in memory only.
    static KEPT: std::cell::RefCell<std::collections::HashMap<String, Draft>> = Default::default();
}

#[derive(Debug, Clone, PartialEq)]
enum Save {
    Idle,
    Saving,
    Failed(String),
}

#[component]
pub fn EntityForm(props: &EntityFormProps) -> Html {
    let state = use_app_state();
    let namespace = DEFAULT_NAMESPACE;
    let entity_type = props.entity_type;
    // The form as opened, and the key its unsaved changes are kept under.
    let pristine = use_memo((), |()| match (&props.initial, &props.prefill_name) {
        (Some(e), _) => Draft::from_entry(e, namespace),
        (None, Some(name)) => Draft { name: name.clone(), ..Draft::default() },
        (None, None) if entity_type == EntityType::Profile => Draft { name: "$user".into(), ..Draft::default() },
        (None, None) => Draft::default(),
    });
    let key = format!("{entity_type}:{}:{}", props.initial.is_some(), pristine.name);
    let kept = use_state(|| KEPT.with(|k| k.borrow_mut().remove(&key)));
    let draft = {
        let (kept, pristine) = (kept.clone(), pristine.clone());
        use_state(move || (*kept).clone().unwrap_or_else(|| (*pristine).clone()))
    };
    // On leaving, changes not saved are kept rather than thrown away; `None` once saved or cancelled.
    let latest = use_mut_ref(|| Some((*draft).clone()));
    if latest.borrow().is_some() {
        *latest.borrow_mut() = Some((*draft).clone());
    }
    {
        let (latest, pristine, key) = (latest.clone(), pristine.clone(), key.clone());
        use_effect_with((), move |()| {
            move || {
                if let Some(d) = latest.borrow_mut().take().filter(|d| *d != *pristine) {
                    KEPT.with(|k| k.borrow_mut().insert(key, d));
                }
            }
        });
    }
    let next_id = use_mut_ref(|| 10_000u32);
    let save = use_state(|| Save::Idle);
    let mut issues = issues_by_field(&draft, entity_type, namespace);
    let editing = props.initial.is_some();
    // A new entity must not replace one that exists: saving here would send a schema without the
    // stored one's description and properties (only metadata is merged), losing them, a `dropped`
    // flag included. Checked live against the loaded dictionary, and against the server on save.
    let exists = !editing
        && matches!(&state.dictionary, Load::Loaded(d) if d.entries.iter().any(|e| e.entity_type == entity_type && e.name == draft.name));
    if exists {
        issues.push((Field::Name, Issue::new("", datadict_core::IssueCode::InvalidName, exists_message(entity_type, &draft.name))));
    }

    // One updater per text field: copies the draft, applies the change, stores it.
    let edit = |f: fn(&mut Draft, String)| {
        let draft = draft.clone();
        Callback::from(move |e: InputEvent| {
            let mut d = (*draft).clone();
            f(&mut d, e.target_unchecked_into::<HtmlInputElement>().value());
            draft.set(d);
        })
    };
    let toggle = |f: fn(&mut Draft, bool)| {
        let draft = draft.clone();
        Callback::from(move |e: Event| {
            let mut d = (*draft).clone();
            f(&mut d, e.target_unchecked_into::<HtmlInputElement>().checked());
            draft.set(d);
        })
    };
    let onadd = {
        let (draft, next_id) = (draft.clone(), next_id.clone());
        Callback::from(move |_| {
            let mut d = (*draft).clone();
            let id = {
                let mut n = next_id.borrow_mut();
                *n += 1;
                *n
            };
            d.properties.push(PropertyDraft {
                id,
                name: String::new(),
                kind: PropertyType::String,
                description: String::new(),
                display_name: String::new(),
                hidden: false,
                dropped: false,
            });
            draft.set(d);
        })
    };
    let onsubmit = {
        let (draft, save, state, latest) = (draft.clone(), save.clone(), state.clone(), latest.clone());
        let initial = props.initial.clone();
        let onsaved = props.onsaved.clone();
        let blocked = !issues.is_empty();
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            if blocked {
                return;
            }
            let Some(conn) = state.connection.clone() else { return };
            let value = draft.to_value(entity_type, namespace);
            let entry = match SchemaEntry::from_json(&value) {
                Ok(entry) => entry,
                Err(err) => {
                    save.set(Save::Failed(format!("the form could not be turned into a schema ({err})")));
                    return;
                }
            };
            let mut body = value["schemaJson"].clone();
            // FACTS.md: on replace, metadata keys left out are kept; `null` removes them. Keys the
            // user emptied are therefore sent as `null`.
            if let Some(old) = initial.as_ref().map(|e| e.schema_json.vendor(namespace)) {
                let old = serde_json::to_value(old).unwrap_or_default();
                if let (Some(old), Some(new)) = (old.as_object(), body["metadata"][namespace].as_object_mut()) {
                    for key in old.keys() {
                        if !new.contains_key(key) {
                            new.insert(key.clone(), Value::Null);
                        }
                    }
                }
            }
            save.set(Save::Saving);
            let (save, state, onsaved, latest) = (save.clone(), state.clone(), onsaved.clone(), latest.clone());
            let creating = initial.is_none();
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                // The loaded dictionary may be older than the server's: ask the server whether a
                // new entity's name is taken before writing, so that nothing is replaced unseen.
                if creating {
                    match api::find_schema(&conn, entity_type, &entry.name, &log).await {
                        Ok(None) => {}
                        Ok(Some(stored)) => {
                            save.set(Save::Failed(exists_message(entity_type, &stored.name)));
                            // The copy here learns of it, so the name's field says so and links it.
                            state.dispatch(Action::EntitySaved(stored));
                            return;
                        }
                        Err(err) => return save.set(Save::Failed(format!("could not check that the name is free, nothing was saved: {err}"))),
                    }
                }
                match api::put_schema_json(&conn, entity_type, &entry.name, &body, &log).await {
                    Ok(()) => {
                        *latest.borrow_mut() = None;
                        push(&state, Level::Info, format!("saved {} `{}`", entity_type, entry.name));
                        save.set(Save::Idle);
                        // The server merges metadata into what it held: show what it stored.
                        let stored = api::find_schema(&conn, entity_type, &entry.name, &log).await.ok().flatten().unwrap_or(entry);
                        state.dispatch(Action::EntitySaved(stored.clone()));
                        onsaved.emit(stored);
                    }
                    Err(err) => save.set(Save::Failed(err.to_string())),
                }
            });
        })
    };
    let open_existing = {
        let (state, name) = (state.clone(), draft.name.clone());
        Callback::from(move |_| state.dispatch(Action::Go(Route::Dictionary(entity_type, Panel::Edit(name.clone())))))
    };
    let oncancel = {
        let (cb, latest) = (props.oncancel.clone(), latest.clone());
        Callback::from(move |_| {
            *latest.borrow_mut() = None;
            cb.emit(())
        })
    };
    let ondiscard = {
        let (draft, kept, pristine) = (draft.clone(), kept.clone(), pristine.clone());
        Callback::from(move |_| {
            draft.set((*pristine).clone());
            kept.set(None);
        })
    };

    let property_rows = draft.properties.iter().enumerate().map(|(index, p)| {
        let update = |f: fn(&mut PropertyDraft, String)| {
            let draft = draft.clone();
            Callback::from(move |e: InputEvent| {
                let mut d = (*draft).clone();
                f(&mut d.properties[index], e.target_unchecked_into::<HtmlInputElement>().value());
                draft.set(d);
            })
        };
        let check = |f: fn(&mut PropertyDraft, bool)| {
            let draft = draft.clone();
            Callback::from(move |e: Event| {
                let mut d = (*draft).clone();
                f(&mut d.properties[index], e.target_unchecked_into::<HtmlInputElement>().checked());
                draft.set(d);
            })
        };
        let onkind = {
            let draft = draft.clone();
            Callback::from(move |e: Event| {
                let mut d = (*draft).clone();
                if let Some(kind) = PropertyType::parse(&e.target_unchecked_into::<HtmlSelectElement>().value()) {
                    d.properties[index].kind = kind;
                }
                draft.set(d);
            })
        };
        let onremove = {
            let draft = draft.clone();
            Callback::from(move |_| {
                let mut d = (*draft).clone();
                d.properties.remove(index);
                draft.set(d);
            })
        };
        let n = index + 1;
        let id = |what: &str| format!("prop-{n}-{what}");
        html! {
            <fieldset class="property" key={p.id}>
                <legend>{ format!("Property {n}") }</legend>
                <div class="grid">
                    <label for={id("name")}>{ "Name" }</label>
                    <input id={id("name")} class="prop-name" value={p.name.clone()} oninput={update(|p, v| p.name = v)} />
                    <label for={id("type")}>{ "Type" }</label>
                    <select id={id("type")} class="prop-type" onchange={onkind}>
                        { for PropertyType::ALL.iter().map(|t| html! { <option value={t.as_str()} selected={*t == p.kind}>{ t.as_str() }</option> }) }
                    </select>
                    <label for={id("display")}>{ "Display name" }</label>
                    <input id={id("display")} value={p.display_name.clone()} oninput={update(|p, v| p.display_name = v)} />
                    <label for={id("description")}>{ "Description" }</label>
                    <input id={id("description")} value={p.description.clone()} oninput={update(|p, v| p.description = v)} />
                </div>
                <label class="check"><input type="checkbox" checked={p.hidden} onchange={check(|p, v| p.hidden = v)} />{ " Hidden" }</label>
                if entity_type == EntityType::Event {
                    <label class="check"><input type="checkbox" checked={p.dropped} onchange={check(|p, v| p.dropped = v)} />{ " Dropped at ingestion" }</label>
                }
                <button type="button" class="remove" onclick={onremove} aria-label={format!("Remove property {n}")}>{ "Remove" }</button>
                { errors_at(&issues, &Field::Property(p.name.clone()), &id("errors")) }
            </fieldset>
        }
    });

    let saving = *save == Save::Saving;
    html! {
        <form id="entity-form" class="card entity-form" {onsubmit} aria-label="Entity form">
            <h2>{ if editing { format!("Edit {entity_type} “{}”", draft.name) } else { format!("New {entity_type}") } }</h2>
            if kept.is_some() {
                <p class="warn-box" id="kept-draft">{ "Your unsaved changes from before are back. " }
                    <button type="button" class="link" id="discard-kept" onclick={ondiscard}>{ "Discard them" }</button></p>
            }
            <label for="entity-name">{ "Name" }</label>
            // Read-only rather than disabled, so that the name can still be selected and copied; the
            // lock is drawn (grey, a padlock) and said in the hint, since the look alone did not tell.
            <input id="entity-name" class={classes!(editing.then_some("locked"))} value={draft.name.clone()} readonly={editing}
                   oninput={edit(|d, v| d.name = v)} aria-describedby="entity-name-hint" />
            <p class="hint" id="entity-name-hint">{
                if editing { "The name is fixed once created: to rename, create a new entry and delete this one." }
                else if entity_type == EntityType::Profile { "The user-profile schema is always named $user." }
                else { "The event name exactly as your app sends it." }
            }</p>
            { errors_at(&issues, &Field::Name, "entity-name-errors") }
            if exists {
                <button type="button" id="open-existing" class="link" onclick={open_existing}>{ format!("Open {} to edit it", draft.name) }</button>
            }
            <label for="entity-display">{ "Display name" }</label>
            <input id="entity-display" value={draft.display_name.clone()} oninput={edit(|d, v| d.display_name = v)} />
            { errors_at(&issues, &Field::DisplayName, "entity-display-errors") }
            <label for="entity-description">{ "Description" }</label>
            <input id="entity-description" value={draft.description.clone()} oninput={edit(|d, v| d.description = v)} />
            { errors_at(&issues, &Field::Description, "entity-description-errors") }
            <label for="entity-tags">{ "Tags (comma-separated)" }</label>
            <input id="entity-tags" value={draft.tags.clone()} oninput={edit(|d, v| d.tags = v)} />
            { errors_at(&issues, &Field::Tags, "entity-tags-errors") }
            <label for="entity-contacts">{ "Contacts (e-mail addresses, comma-separated)" }</label>
            <input id="entity-contacts" value={draft.contacts.clone()} oninput={edit(|d, v| d.contacts = v)} />
            { errors_at(&issues, &Field::Contacts, "entity-contacts-errors") }
            <label for="entity-teams">{ "Team contacts (comma-separated)" }</label>
            <input id="entity-teams" value={draft.team_contacts.clone()} oninput={edit(|d, v| d.team_contacts = v)} />
            { errors_at(&issues, &Field::TeamContacts, "entity-teams-errors") }
            <label class="check"><input id="entity-hidden" type="checkbox" checked={draft.hidden} onchange={toggle(|d, v| d.hidden = v)} />{ " Hidden in the UI" }</label>
            { errors_at(&issues, &Field::Hidden, "entity-hidden-errors") }
            if entity_type == EntityType::Event {
                <label class="check"><input id="entity-dropped" type="checkbox" checked={draft.dropped} onchange={toggle(|d, v| d.dropped = v)} />{ " Dropped at ingestion (the event is not stored)" }</label>
            }
            { errors_at(&issues, &Field::Dropped, "entity-dropped-errors") }
            <h3>{ format!("Properties ({})", draft.properties.len()) }</h3>
            { for property_rows }
            <button type="button" id="add-property" onclick={onadd}>{ "Add property" }</button>
            { errors_at(&issues, &Field::Form, "entity-form-errors") }
            <div class="actions">
                <button id="save-entity" type="submit" disabled={saving || !issues.is_empty()}>
                    { if saving { "Saving…" } else if issues.is_empty() { "Save" } else { "Fix the problems above to save" } }
                </button>
                <button type="button" onclick={oncancel}>{ "Cancel" }</button>
            </div>
            if let Save::Failed(message) = &*save {
                <p id="save-error" class="error" role="alert">{ message.clone() }</p>
            }
        </form>
    }
}

#[cfg(test)]
mod tests;
