//! Bulk upload of a dictionary file: read, check every entry with the core, preview what changes
//! against the server's dictionary as it is now (added / changed / removed, read afresh rather
//! than this tab's copy), and only then send it, with `truncate` as an explicit choice; the
//! dictionary is read again before sending, and a preview that no longer holds is shown again.

use crate::api;
use crate::state::{use_app_state, StateHandle};
use crate::components::log::{log_request, push};
use crate::pages::dictionary::load_dictionary;
use crate::state::Level;
use datadict_core::{dictionary_from_csv, diff_dictionaries, duplicate_entries, merge_schema, validate_schema_entry, BatchUploadRequest, SchemaEntry, SchemaRules, DEFAULT_NAMESPACE};
use serde_json::Value;
use std::rc::Rc;
use wasm_bindgen_futures::JsFuture;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// What the file holds, compared with the dictionary by the core's `diff_dictionaries`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Preview {
    pub entries: Vec<SchemaEntry>,
    pub added: Vec<String>,
    /// One line per changed entity, naming the fields that change, when uploaded without
    /// `truncate` (entity metadata merged into the stored schema by the server's replace rule).
    pub changed: Vec<String>,
    /// The same when truncating: the dictionary is emptied first, so each entry is stored as is.
    pub changed_if_truncated: Vec<String>,
    /// In the dictionary, not in the file: deleted only when truncating.
    pub absent: Vec<String>,
    pub unchanged: usize,
    pub unchanged_if_truncated: usize,
}

/// Compares the file's entries with the current dictionary, both as the server will store them
/// without `truncate` (each entry merged into its stored namesake by the core's `merge_schema`)
/// and with it (each entry stored as is).
pub fn preview(file: Vec<SchemaEntry>, current: &[SchemaEntry]) -> Preview {
    let merged: Vec<SchemaEntry> = file
        .iter()
        .map(|entry| {
            let old = current
                .iter()
                .find(|c| c.entity_type == entry.entity_type && c.name == entry.name)
                .map(|c| c.schema_json.clone());
            SchemaEntry { schema_json: merge_schema(old, entry.schema_json.clone(), DEFAULT_NAMESPACE), ..entry.clone() }
        })
        .collect();
    let merged_diff = diff_dictionaries(current, &merged);
    let as_is_diff = diff_dictionaries(current, &file);
    let added = merged_diff.added.iter().map(|e| format!("{} {}", e.entity_type, e.name)).collect::<Vec<_>>();
    let changed_lines = |diff: &datadict_core::diff::DictionaryDiff| -> Vec<String> {
        diff.changed
            .iter()
            .map(|c| {
                let fields: Vec<&str> = c.changes.iter().map(|f| f.path.as_str()).take(8).collect();
                let more = if c.changes.len() > 8 { format!(" and {} more", c.changes.len() - 8) } else { String::new() };
                // Properties are replaced whole (only metadata merges): say which stored ones go.
                let props = |entries: &[SchemaEntry]| -> Vec<String> {
                    entries
                        .iter()
                        .find(|e| e.entity_type == c.entity.entity_type && e.name == c.entity.name)
                        .and_then(|e| e.schema_json.properties.as_ref())
                        .map_or_else(Vec::new, |p| p.keys().cloned().collect())
                };
                let kept = props(&file);
                let lost: Vec<String> = props(current).into_iter().filter(|p| !kept.contains(p)).collect();
                let removes = if lost.is_empty() {
                    String::new()
                } else {
                    format!("removes {}: {}; ", datadict_core::count(lost.len() as u64, "stored property", "stored properties"), lost.join(", "))
                };
                format!("{} {}: {removes}{}{more}", c.entity.entity_type, c.entity.name, fields.join(", "))
            })
            .collect()
    };
    let changed = changed_lines(&merged_diff);
    let changed_if_truncated = changed_lines(&as_is_diff);
    let absent = merged_diff.removed.iter().map(|k| format!("{} {}", k.entity_type, k.name)).collect();
    let unchanged = file.len() - added.len() - changed.len();
    let unchanged_if_truncated = file.len() - added.len() - changed_if_truncated.len();
    Preview { entries: file, added, changed, changed_if_truncated, absent, unchanged, unchanged_if_truncated }
}

/// Reads a dictionary file's JSON: an array of entries, `{"entries":[...]}` (the upload body) or
/// `{"results":[...]}` (the list answer, so an export can be uploaded back). Every problem of every
/// entry is returned, prefixed with the entry's position.
pub fn parse_dictionary(text: &str) -> Result<Vec<SchemaEntry>, Vec<String>> {
    let value: Value = serde_json::from_slice(text.as_bytes()).map_err(|e| vec![format!("the file is not valid JSON ({e}); export a dictionary as JSON and try again")])?;
    let items = match &value {
        Value::Array(items) => items,
        Value::Object(o) => match o.get("entries").or_else(|| o.get("results")) {
            Some(Value::Array(items)) => items,
            _ => return Err(vec!["expected a JSON array of schema entries, or an object with `entries` or `results`".into()]),
        },
        _ => return Err(vec!["expected a JSON array of schema entries".into()]),
    };
    let rules = SchemaRules::default();
    let mut problems: Vec<String> = items
        .iter()
        .enumerate()
        .flat_map(|(i, item)| {
            let name = item.get("name").and_then(Value::as_str).unwrap_or("?").to_owned();
            validate_schema_entry(item, &rules).into_iter().map(move |issue| format!("entry {} ({name}): {issue}", i + 1))
        })
        .collect();
    // The server refuses an upload that names an entity twice; say so before sending it.
    for issue in duplicate_entries(items, "entries") {
        problems.push(issue.to_string());
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    items.iter().map(|i| SchemaEntry::from_json(i).map_err(|e| vec![e])).collect()
}

/// Compares `entries` with the dictionary the server holds now, not the copy this tab loaded:
/// someone may have changed it since, and a preview against an old copy could call "added" what
/// replaces a schema and its properties.
async fn fresh_preview(state: &StateHandle, entries: Vec<SchemaEntry>) -> Result<Preview, String> {
    let conn = state.connection.clone().ok_or("sign in first")?;
    match api::list_all_schemas(&conn, &log_request(state)).await {
        Ok(current) => Ok(preview(entries, &current)),
        Err(err) => Err(format!("nothing was sent: the server's dictionary, which the preview compares with, could not be read: {err}")),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Pick,
    Reading,
    Rejected(Vec<String>),
    Ready(Rc<Preview>),
    Sending(Rc<Preview>),
    Done(String),
    Failed(Rc<Preview>, String),
}

#[derive(Properties, PartialEq)]
pub struct BulkUploadProps {
    pub onclose: Callback<()>,
    /// Entries to review instead of a file's (schemas the server drafted from what arrived): the
    /// preview shows at once, and nothing is sent before the user confirms, as with a file.
    #[prop_or_default]
    pub draft: Option<Rc<Vec<SchemaEntry>>>,
}

#[component]
pub fn BulkUpload(props: &BulkUploadProps) -> Html {
    let state = use_app_state();
    let step = use_state(|| if props.draft.is_some() { Step::Reading } else { Step::Pick });
    {
        let (step, state, draft) = (step.clone(), state.clone(), props.draft.clone());
        use_effect_with((), move |()| {
            if let Some(entries) = draft {
                wasm_bindgen_futures::spawn_local(async move {
                    step.set(match fresh_preview(&state, (*entries).clone()).await {
                        Ok(p) => Step::Ready(Rc::new(p)),
                        Err(message) => Step::Rejected(vec![message]),
                    });
                });
            }
        });
    }
    let truncate = use_state(|| false);
    let onfile = {
        let (step, state) = (step.clone(), state.clone());
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
            let csv = file.name().to_ascii_lowercase().ends_with(".csv");
            step.set(Step::Reading);
            let (step, state) = (step.clone(), state.clone());
            wasm_bindgen_futures::spawn_local(async move {
                // A dictionary file is small (a few MB for thousands of entities): read at once.
                let text = match JsFuture::from(file.text()).await {
                    Ok(t) => t.as_string().unwrap_or_default(),
                    Err(e) => {
                        step.set(Step::Rejected(vec![format!("the file could not be read: {e:?}")]));
                        return;
                    }
                };
                let parsed = if csv {
                    dictionary_from_csv(&text, DEFAULT_NAMESPACE).map_err(|issues| issues.iter().map(ToString::to_string).collect())
                } else {
                    parse_dictionary(&text)
                };
                step.set(match parsed {
                    Ok(entries) => match fresh_preview(&state, entries).await {
                        Ok(p) => Step::Ready(Rc::new(p)),
                        Err(message) => Step::Rejected(vec![message]),
                    },
                    Err(problems) => Step::Rejected(problems),
                });
            });
        })
    };
    let ontruncate = {
        let truncate = truncate.clone();
        Callback::from(move |e: Event| truncate.set(e.target_unchecked_into::<HtmlInputElement>().checked()))
    };
    let onsend = {
        let (step, state, truncate) = (step.clone(), state.clone(), truncate.clone());
        Callback::from(move |_| {
            let (Step::Ready(p) | Step::Failed(p, _)) = &*step else { return };
            let Some(conn) = state.connection.clone() else { return };
            let p = p.clone();
            step.set(Step::Sending(p.clone()));
            let (step, state, truncate) = (step.clone(), state.clone(), *truncate);
            wasm_bindgen_futures::spawn_local(async move {
                // What was reviewed must still be what happens: compare with the server again.
                let again = match fresh_preview(&state, p.entries.clone()).await {
                    Ok(again) => again,
                    Err(message) => return step.set(Step::Failed(p, message)),
                };
                if again != *p {
                    let message = "nothing was sent: the server's dictionary changed since this preview was made; review the new preview above, then upload again";
                    return step.set(Step::Failed(Rc::new(again), message.into()));
                }
                let log = log_request(&state);
                let body = BatchUploadRequest { entries: p.entries.clone(), truncate };
                match api::upload_schemas(&conn, &body, &log).await {
                    Ok(answer) => {
                        let text = format!("uploaded: {} added or replaced, {} deleted", answer.results.added, answer.results.deleted);
                        push(&state, Level::Info, text.clone());
                        step.set(Step::Done(text));
                        load_dictionary(&state);
                    }
                    Err(err) => step.set(Step::Failed(p, err.to_string())),
                }
            });
        })
    };
    let onclose = {
        let cb = props.onclose.clone();
        Callback::from(move |_| cb.emit(()))
    };
    let list = |title: &str, id: &str, items: &[String]| {
        html! {
            <details open={!items.is_empty() && items.len() <= 50}>
                <summary id={id.to_owned()}>{ format!("{title}: {}", items.len()) }</summary>
                <ul>{ for items.iter().take(500).map(|i| html! { <li>{ i.clone() }</li> }) }</ul>
            </details>
        }
    };
    let is_draft = props.draft.is_some();
    let preview_view = |p: &Preview| {
        html! {
            <div id="bulk-preview">
                { list("Added", "bulk-added", &p.added) }
                { list("Changed", "bulk-changed", if *truncate { &p.changed_if_truncated } else { &p.changed }) }
                { list(if *truncate { "Removed (truncate deletes them)" } else if is_draft { "Not in the draft (kept)" } else { "Not in the file (kept)" }, "bulk-removed", &p.absent) }
                <p>{ format!("Unchanged: {}", if *truncate { p.unchanged_if_truncated } else { p.unchanged }) }</p>
            </div>
        }
    };
    let body = match &*step {
        Step::Pick => html! {},
        Step::Reading => html! { <p aria-busy="true">{ "Comparing with the server's dictionary…" }</p> },
        Step::Rejected(problems) => html! {
            <div id="bulk-problems" role="alert">
                <p class="error">{ format!("Nothing will be sent: {} in the file.", datadict_core::count(problems.len() as u64, "problem", "problems")) }</p>
                <ul class="field-errors">{ for problems.iter().take(200).map(|p| html! { <li>{ p.clone() }</li> }) }</ul>
            </div>
        },
        Step::Ready(p) | Step::Sending(p) | Step::Failed(p, _) => html! {
            <>
            { preview_view(p) }
            // A draft only adds to the dictionary: emptying it first is offered for files alone.
            if !is_draft {
                <label class="check warn-box">
                    <input id="bulk-truncate" type="checkbox" checked={*truncate} onchange={ontruncate} />
                    { " Truncate: delete the whole dictionary of this project first (events and profiles), then insert the file" }
                </label>
            }
            <div class="actions">
                <button id="bulk-send" class={classes!((*truncate).then_some("danger"))} onclick={onsend} disabled={matches!(&*step, Step::Sending(_))}>
                    { format!("{} {}", if *truncate { "Replace the dictionary with" } else { "Upload" }, datadict_core::count(p.entries.len() as u64, "entry", "entries")) }
                </button>
            </div>
            if let Step::Failed(_, message) = &*step { <p class="error" role="alert">{ message.clone() }</p> }
            </>
        },
        Step::Done(text) => html! { <p id="bulk-done" class="ok">{ text.clone() }</p> },
    };
    html! {
        <aside class="card detail" id="bulk" aria-label="Bulk upload">
            // A draft's panel has its own heading above.
            if is_draft {
                <p class="hint">{ "Drafted by the server from the events that arrived. Nothing is written before you confirm." }</p>
            } else {
                <h2>{ "Bulk upload a dictionary" }</h2>
                <p class="hint">{ "A JSON file (a list of dictionary entries, {\"entries\": [...]}, or this app's JSON export) or this app's CSV export. Nothing is sent before you confirm." }</p>
                <label for="bulk-file">{ "Dictionary file" }</label>
                <input id="bulk-file" type="file" accept=".json,application/json,.csv,text/csv" onchange={onfile} />
            }
            { body }
            <div class="actions"><button onclick={onclose}>{ "Close" }</button></div>
        </aside>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn entry(name: &str, description: &str) -> SchemaEntry {
        serde_json::from_value(json!({"entityType": "event", "name": name, "schemaJson": {"description": description}})).unwrap()
    }

    #[wasm_bindgen_test]
    fn the_preview_sorts_entries_into_added_changed_and_absent() {
        let p = preview(vec![entry("A", "same"), entry("B", "new text"), entry("C", "c")], &[entry("A", "same"), entry("B", "old"), entry("D", "d")]);
        assert_eq!((p.added, p.changed, p.absent, p.unchanged), (vec!["event C".to_owned()], vec!["event B: description".to_owned()], vec!["event D".to_owned()], 1));
    }

    #[wasm_bindgen_test]
    fn metadata_left_out_of_the_file_is_kept_unless_truncating() {
        let stored: SchemaEntry = serde_json::from_value(json!({"entityType": "event", "name": "A",
            "schemaJson": {"description": "d", "metadata": {"com.vendor": {"tags": ["core"]}}}})).unwrap();
        let p = preview(vec![entry("A", "d")], &[stored]);
        // Without truncate the server keeps the stored tags: nothing changes.
        assert_eq!((p.changed.len(), p.unchanged), (0, 1));
        // With truncate the entry is stored as is: the tags go.
        assert_eq!(p.changed_if_truncated, vec!["event A: metadata".to_owned()]);
        assert_eq!(p.unchanged_if_truncated, 0);
    }

    #[wasm_bindgen_test]
    fn every_bad_entry_is_reported_before_anything_is_sent() {
        let text = r#"{"entries":[{"entityType":"event","name":"ok","schemaJson":{}},{"entityType":"thing","name":"","schemaJson":{}}]}"#;
        let problems = parse_dictionary(text).unwrap_err();
        assert!(problems.len() >= 2, "{problems:?}");
        assert!(problems.iter().all(|p| p.starts_with("entry 2")), "{problems:?}");
        assert_eq!(parse_dictionary(r#"[{"entityType":"profile","name":"$user","schemaJson":{}}]"#).unwrap().len(), 1);
        assert!(parse_dictionary("nope").is_err());
        let twice = parse_dictionary(r#"[{"entityType":"event","name":"a","schemaJson":{}},{"entityType":"event","name":"a","schemaJson":{}}]"#).unwrap_err();
        assert_eq!(twice.len(), 1, "{twice:?}");
        assert!(twice[0].contains("event `a` is given 2 times, at entries[0] and entries[1]"), "{twice:?}");
    }
}
