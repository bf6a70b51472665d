//! The Warehouse screen: the project's warehouse imports with their last run, a form to create one
//! (source and column mapping; required fields checked as they are typed, the server's own issues
//! shown as it lists them), "Sync now" that shows the run id and follows the run to its end, and
//! each import's run history. Import and run bodies are read as JSON values: their shapes belong
//! to the server's API (`/api/app/projects/{id}/warehouse-sources/imports`).

use crate::api::{self, Connection, Method};
use crate::state::{use_app_state, StateHandle};
use crate::components::focus_field;
use crate::components::log::{log_request, push};
use crate::state::{Level, Load};
use serde_json::{json, Value};
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// Waits `ms` milliseconds (between polls of a running job).
pub async fn sleep_ms(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// `…/projects/{id}/warehouse-sources/imports`: the warehouse imports of the project (spec §4.2).
fn imports_path(conn: &Connection) -> String {
    format!("{}/warehouse-sources/imports", conn.project_url())
}

/// The fields of the create form, as typed.
#[derive(Clone, PartialEq)]
struct Form {
    name: String,
    kind: String,
    source_type: String,
    path: String,
    table: String,
    /// PostgreSQL: `host:port`, user, database and the server variable holding the password.
    pg_host: String,
    pg_user: String,
    pg_dbname: String,
    pg_password_env: String,
    event_from_column: bool,
    event: String,
    time_column: String,
    user_column: String,
    id_from_column: bool,
    insert_id_column: String,
    key_columns: String,
    property_columns: String,
}

impl Default for Form {
    fn default() -> Self {
        Self {
            name: String::new(),
            kind: "event_sync".into(),
            source_type: "sqlite".into(),
            path: String::new(),
            table: String::new(),
            pg_host: String::new(),
            pg_user: String::new(),
            pg_dbname: String::new(),
            pg_password_env: String::new(),
            event_from_column: true,
            event: String::new(),
            time_column: String::new(),
            user_column: String::new(),
            id_from_column: false,
            insert_id_column: String::new(),
            key_columns: String::new(),
            property_columns: String::new(),
        }
    }
}

fn list(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect()
}

impl Form {
    /// The required fields still empty, as (field id, message).
    fn problems(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = Vec::new();
        let empty = |s: &str| s.trim().is_empty();
        if empty(&self.name) {
            out.push(("wh-name", "Give the import a name"));
        }
        let pg = self.source_type == "postgres";
        if !pg && empty(&self.path) {
            out.push(("wh-path", "Give the path of the source file on the server"));
        }
        if pg && empty(&self.pg_host) {
            out.push(("wh-pg-host", "Give the database host, e.g. db.internal:5432"));
        }
        if pg && empty(&self.pg_user) {
            out.push(("wh-pg-user", "Give the database user"));
        }
        if pg && empty(&self.pg_dbname) {
            out.push(("wh-pg-dbname", "Give the database name"));
        }
        if (pg || self.source_type == "sqlite") && empty(&self.table) {
            out.push(("wh-table", "Give the table to read"));
        }
        if empty(&self.user_column) {
            out.push(("wh-user", "Name the column holding the user id"));
        }
        if self.kind == "event_sync" {
            if empty(&self.event) {
                out.push(("wh-event", if self.event_from_column { "Name the column holding the event name" } else { "Give the event name" }));
            }
            if empty(&self.time_column) {
                out.push(("wh-time", "Name the column holding the event time"));
            }
            if self.id_from_column && empty(&self.insert_id_column) {
                out.push(("wh-insert-id", "Name the column holding the insert id"));
            }
            if !self.id_from_column && list(&self.key_columns).is_empty() {
                out.push(("wh-keys", "Name the columns that identify a row, so that syncing again makes no duplicates"));
            }
        }
        out
    }

    fn body(&self) -> Value {
        let source = match self.source_type.as_str() {
            "sqlite" => json!({"type": "sqlite", "path": self.path.trim(), "table": self.table.trim()}),
            "postgres" => {
                let (host, port) = match self.pg_host.trim().rsplit_once(':') {
                    Some((h, p)) if p.parse::<u16>().is_ok() => (h.to_owned(), p.parse::<u16>().unwrap_or(5432)),
                    _ => (self.pg_host.trim().to_owned(), 5432),
                };
                let mut s = json!({"type": "postgres", "host": host, "port": port, "user": self.pg_user.trim(), "dbname": self.pg_dbname.trim(), "table": self.table.trim()});
                if !self.pg_password_env.trim().is_empty() {
                    s["password_env"] = json!(self.pg_password_env.trim());
                }
                s
            }
            other => json!({"type": other, "path": self.path.trim()}),
        };
        let mut mapping = serde_json::Map::new();
        mapping.insert("user_column_name".into(), json!(self.user_column.trim()));
        if self.kind == "event_sync" {
            let key = if self.event_from_column { "event_column_name" } else { "event_name" };
            mapping.insert(key.into(), json!(self.event.trim()));
            mapping.insert("time_column_name".into(), json!(self.time_column.trim()));
            if self.id_from_column {
                mapping.insert("insert_id_column_name".into(), json!(self.insert_id_column.trim()));
            } else {
                mapping.insert("key_column_names".into(), json!(list(&self.key_columns)));
            }
        }
        let props = list(&self.property_columns);
        if !props.is_empty() {
            mapping.insert("property_column_names".into(), json!(props));
        }
        json!({"name": self.name.trim(), "kind": self.kind, "source": source, "mapping": mapping})
    }
}

/// The form field a problem of the server's refusal names, by its path (`source.path`,
/// `mapping.key_column_names[0]`); `source` alone is the table or the file, as its message says.
fn field_of(path: &str, message: &str, postgres: bool) -> Option<&'static str> {
    Some(match path.split('[').next().unwrap_or(path) {
        "name" => "wh-name",
        "source.path" => "wh-path",
        "source.table" => "wh-table",
        "source" if message.contains("table") => "wh-table",
        "source.host" | "source.port" => "wh-pg-host",
        "source" if postgres => "wh-pg-host",
        "source" => "wh-path",
        "source.user" => "wh-pg-user",
        "source.dbname" => "wh-pg-dbname",
        "source.password_env" => "wh-pg-password-env",
        "mapping.event_column_name" | "mapping.event_name" => "wh-event",
        "mapping.time_column_name" => "wh-time",
        "mapping.user_column_name" => "wh-user",
        "mapping.insert_id_column_name" => "wh-insert-id",
        "mapping.key_column_names" => "wh-keys",
        "mapping.property_column_names" => "wh-props",
        _ => return None,
    })
}

/// A run being followed after "Sync now".
#[derive(Clone, PartialEq)]
struct Following {
    import_id: i64,
    run_id: String,
    run: Option<Value>,
    error: Option<String>,
}

fn is_final(run: &Value) -> bool {
    run["status"] == "succeeded" || run["status"] == "failed"
}

fn run_summary(run: &Value) -> String {
    format!(
        "{}: {}, {} loaded, {} rejected",
        run["status"].as_str().unwrap_or("?"),
        datadict_core::count(run["rows_read"].as_u64().unwrap_or_default(), "row read", "rows read"),
        run["events_loaded"],
        run["rows_rejected"]
    )
}

fn fmt_time(ms: &Value) -> String {
    match ms.as_f64() {
        Some(ms) => String::from(js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms)).to_iso_string()),
        None => "–".into(),
    }
}

async fn follow(state: StateHandle, conn: Connection, import_id: i64, following: UseStateHandle<Option<Following>>, reload: UseStateHandle<u32>) {
    let log = log_request(&state);
    let path = conn.endpoints().manual_sync(datadict_core::Region::Default, conn.project_id, &import_id.to_string());
    let answer: Result<Value, _> = api::request(&conn, Method::Put, &path, Some(&json!({})), &log).await;
    let run_id = match answer {
        Ok(v) => v["results"]["run_id"].as_str().unwrap_or_default().to_owned(),
        Err(e) => {
            following.set(Some(Following { import_id, run_id: String::new(), run: None, error: Some(e.to_string()) }));
            return;
        }
    };
    let mut current = Following { import_id, run_id: run_id.clone(), run: None, error: None };
    following.set(Some(current.clone()));
    let run_path = format!("{}/{import_id}/runs/{run_id}", imports_path(&conn));
    loop {
        match api::request::<Value>(&conn, Method::Get, &run_path, None, &log).await {
            Ok(v) => {
                let run = v["results"].clone();
                let done = is_final(&run);
                // The request succeeded, so nothing logged the run's failure yet: log it as one.
                if run["status"] == "failed" {
                    push(&state, Level::Error, format!("warehouse import {import_id} failed: {}", run["error"].as_str().unwrap_or("the server gave no reason")));
                }
                current.run = Some(run);
                following.set(Some(current.clone()));
                if done {
                    break;
                }
            }
            Err(e) => {
                current.error = Some(e.to_string());
                following.set(Some(current.clone()));
                break;
            }
        }
        sleep_ms(700).await;
    }
    reload.set(*reload + 1);
}

#[component]
pub fn WarehousePage() -> Html {
    let state = use_app_state();
    let imports = use_state(|| Load::<Vec<Value>>::Idle);
    let reload = use_state(|| 0u32);
    let following = use_state(|| None::<Following>);
    let history = use_state(|| None::<(i64, Load<Vec<Value>>)>);
    let form = use_state(Form::default);
    let touched = use_state(|| false);
    let create_error = use_state(|| None::<String>);
    // The server's problems of the last refusal that name a field, shown at it until the next try.
    let server_issues = use_state(Vec::<(&'static str, String)>::new);
    let created = use_state(|| None::<String>);

    {
        let (state, imports) = (state.clone(), imports.clone());
        use_effect_with((state.connection.clone(), *reload), move |(conn, _)| {
            let Some(conn) = conn.clone() else { return };
            imports.set(Load::Loading);
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                match api::request::<Value>(&conn, Method::Get, &imports_path(&conn), None, &log).await {
                    Ok(v) => imports.set(Load::Loaded(v["results"].as_array().cloned().unwrap_or_default())),
                    Err(e) => imports.set(Load::Failed(e.to_string())),
                }
            });
        });
    }

    // Hooks first, unconditionally; the page needs a connection only to draw.
    let Some(conn) = state.connection.clone() else {
        return html! { <section class="card"><p>{ "Connect first (Settings)." }</p></section> };
    };
    let field = |f: fn(&mut Form, String)| {
        let form = form.clone();
        Callback::from(move |e: InputEvent| {
            let mut next = (*form).clone();
            f(&mut next, e.target_unchecked_into::<HtmlInputElement>().value());
            form.set(next);
        })
    };
    let select = |f: fn(&mut Form, String)| {
        let form = form.clone();
        Callback::from(move |e: Event| {
            let mut next = (*form).clone();
            f(&mut next, e.target_unchecked_into::<HtmlSelectElement>().value());
            form.set(next);
        })
    };
    let mut problems: Vec<(&'static str, String)> =
        if *touched { form.problems().into_iter().map(|(id, m)| (id, m.to_owned())).collect() } else { Vec::new() };
    problems.extend(server_issues.iter().cloned());
    let error_of = |id: &str| -> Option<String> { problems.iter().find(|(f, _)| *f == id).map(|(_, m)| m.clone()) };
    // A text field with its label, and its error (if any) right under it, tied to it for
    // assistive technology by `aria-describedby` and `aria-invalid`.
    let text_field = |id: &'static str, label: &str, value: &str, oninput: Callback<InputEvent>| -> Html {
        let error = error_of(id);
        let error_id = format!("{id}-error");
        html! {
            <div class={classes!("field", error.is_some().then_some("invalid"))}>
                <label for={id}>{ label.to_owned() }</label>
                <input {id} value={value.to_owned()} {oninput} aria-invalid={error.is_some().then_some("true")} aria-describedby={error.is_some().then(|| error_id.clone())} />
                if let Some(m) = error { <p class="field-error" id={error_id}><span class="icon" aria-hidden="true">{ "⚠" }</span>{ m }</p> }
            </div>
        }
    };
    // The summary above the button: one link per field in error, which moves focus to it.
    let error_summary = if !problems.is_empty() {
        html! {
            <div id="wh-error-summary" class="error-summary" role="alert">
                <p><span class="icon" aria-hidden="true">{ "⚠" }</span>{ format!("{} to fix before creating the import:", datadict_core::count(problems.len() as u64, "problem", "problems")) }</p>
                <ul>{ for problems.iter().map(|(id, m)| html! { <li><a href={format!("#{id}")} onclick={focus_field(id)}>{ m.clone() }</a></li> }) }</ul>
            </div>
        }
    } else {
        html! {}
    };

    let oncreate = {
        let (state, conn, form, touched, create_error, created, reload, server_issues) =
            (state.clone(), conn.clone(), form.clone(), touched.clone(), create_error.clone(), created.clone(), reload.clone(), server_issues.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            touched.set(true);
            create_error.set(None);
            server_issues.set(Vec::new());
            if !form.problems().is_empty() {
                return;
            }
            let postgres = form.source_type == "postgres";
            let (state, conn, body, create_error, created, reload, server_issues) =
                (state.clone(), conn.clone(), form.body(), create_error.clone(), created.clone(), reload.clone(), server_issues.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                match api::request::<Value>(&conn, Method::Post, &imports_path(&conn), Some(&body), &log).await {
                    Ok(v) => {
                        create_error.set(None);
                        created.set(Some(format!("import {} created", v["results"]["id"])));
                        reload.set(*reload + 1);
                    }
                    Err(e) => {
                        // Each problem that names a field goes to that field; the rest stay here.
                        let text = e.to_string();
                        let (mut at_fields, mut rest) = (Vec::new(), String::new());
                        for (path, m) in api::listed_issues(&text) {
                            match field_of(&path, &m, postgres) {
                                Some(id) => at_fields.push((id, m)),
                                None => rest.push_str(&format!("; {path}: {m}")),
                            }
                        }
                        if at_fields.is_empty() {
                            create_error.set(Some(text));
                        } else {
                            create_error.set(Some(format!("the server refused the import: fix the fields marked above{rest}")));
                            server_issues.set(at_fields);
                        }
                    }
                }
            });
        })
    };

    let rows = match &*imports {
        Load::Idle | Load::Loading => html! { <p>{ "Loading the imports…" }</p> },
        Load::Failed(m) => html! { <p class="error" role="alert">{ m.clone() }</p> },
        Load::Loaded(list) if list.is_empty() => html! { <p id="wh-empty">{ "No warehouse import yet: create one below." }</p> },
        Load::Loaded(list) => {
            let rows = list.iter().map(|imp| {
                let id = imp["id"].as_i64().unwrap_or_default();
                let onsync = {
                    let (state, conn, following, reload) = (state.clone(), conn.clone(), following.clone(), reload.clone());
                    Callback::from(move |_| {
                        wasm_bindgen_futures::spawn_local(follow(state.clone(), conn.clone(), id, following.clone(), reload.clone()));
                    })
                };
                let onhistory = {
                    let (state, conn, history) = (state.clone(), conn.clone(), history.clone());
                    Callback::from(move |_| {
                        history.set(Some((id, Load::Loading)));
                        let (state, conn, history) = (state.clone(), conn.clone(), history.clone());
                        wasm_bindgen_futures::spawn_local(async move {
                            let log = log_request(&state);
                            let path = format!("{}/{id}/runs", imports_path(&conn));
                            match api::request::<Value>(&conn, Method::Get, &path, None, &log).await {
                                Ok(v) => history.set(Some((id, Load::Loaded(v["results"].as_array().cloned().unwrap_or_default())))),
                                Err(e) => history.set(Some((id, Load::Failed(e.to_string())))),
                            }
                        });
                    })
                };
                let ondelete = {
                    let (state, conn, reload) = (state.clone(), conn.clone(), reload.clone());
                    Callback::from(move |_| {
                        let confirmed = web_sys::window().and_then(|w| w.confirm_with_message(&format!("Delete import {id} and its run history?")).ok()).unwrap_or(false);
                        if !confirmed {
                            return;
                        }
                        let (state, conn, reload) = (state.clone(), conn.clone(), reload.clone());
                        wasm_bindgen_futures::spawn_local(async move {
                            let log = log_request(&state);
                            let path = format!("{}/{id}", imports_path(&conn));
                            if api::request::<Value>(&conn, Method::Delete, &path, None, &log).await.is_ok() {
                                reload.set(*reload + 1);
                            }
                        });
                    })
                };
                let last = &imp["last_run"];
                let source = &imp["source"];
                html! {
                    <tr id={format!("wh-import-{id}")}>
                        <td data-label="Id">{ id }</td>
                        <td data-label="Name">{ imp["name"].as_str().unwrap_or_default() }</td>
                        <td data-label="Rows are">{ if imp["kind"] == "people" { "user profiles" } else { "events" } }</td>
                        <td data-label="Source">{ match source["type"].as_str() {
                            Some("postgres") => format!("postgres {}:{}/{} {}", source["host"].as_str().unwrap_or_default(), source["port"], source["dbname"].as_str().unwrap_or_default(), source["table"].as_str().unwrap_or_default()),
                            other => format!("{} {} {}", other.unwrap_or_default(), source["path"].as_str().unwrap_or_default(), source["table"].as_str().unwrap_or_default()),
                        } }</td>
                        <td class="last-run" data-label="Last run">{ if last.is_null() { "never synced".to_owned() } else { format!("{} ({})", run_summary(last), fmt_time(&last["finished_at"])) } }</td>
                        <td class="row-actions">
                            <button class="sync-now" onclick={onsync}>{ "Sync now" }</button>
                            <button onclick={onhistory}>{ "History" }</button>
                            <button class="danger" onclick={ondelete}>{ "Delete" }</button>
                        </td>
                    </tr>
                }
            });
            html! {
                <table class="grid cards" id="wh-imports">
                    <thead><tr><th>{ "Id" }</th><th>{ "Name" }</th><th>{ "Rows are" }</th><th>{ "Source" }</th><th>{ "Last run" }</th><th><span class="sr-only">{ "Actions" }</span></th></tr></thead>
                    <tbody>{ for rows }</tbody>
                </table>
            }
        }
    };

    let follow_view = match &*following {
        None => html! {},
        Some(f) => html! {
            <div id="wh-run" class="card" role="status">
                <p>{ format!("Import {}: run ", f.import_id) }<code id="wh-run-id">{ f.run_id.clone() }</code></p>
                if let Some(run) = &f.run {
                    <p id="wh-run-status">{ run_summary(run) }</p>
                    if let Some(err) = run["error"].as_str() { <p class="error">{ err.to_owned() }</p> }
                    <ul>{ for run["rejections"].as_array().into_iter().flatten().take(20).map(|r| html! {
                        <li>{ format!("row {}: {}", r["row"], r["reason"].as_str().unwrap_or_default()) }</li>
                    }) }</ul>
                } else if f.error.is_none() {
                    <p>{ "Queued…" }</p>
                }
                if let Some(e) = &f.error { <p class="error" role="alert">{ e.clone() }</p> }
            </div>
        },
    };

    let history_view = match &*history {
        None => html! {},
        Some((id, load)) => html! {
            <div id="wh-history" class="card">
                <h3>{ format!("Runs of import {id}") }</h3>
                { match load {
                    Load::Idle | Load::Loading => html! { <p>{ "Loading…" }</p> },
                    Load::Failed(m) => html! { <p class="error">{ m.clone() }</p> },
                    Load::Loaded(runs) if runs.is_empty() => html! { <p>{ "No run yet." }</p> },
                    Load::Loaded(runs) => html! {
                        <table class="grid cards">
                            <thead><tr><th>{ "Run" }</th><th>{ "Status" }</th><th>{ "Rows read" }</th><th>{ "Loaded" }</th><th>{ "Rejected" }</th><th>{ "Started" }</th><th>{ "Ended" }</th></tr></thead>
                            <tbody>{ for runs.iter().map(|r| html! {
                                <tr>
                                    <td data-label="Run"><code>{ r["run_id"].as_str().unwrap_or_default().chars().take(8).collect::<String>() }</code></td>
                                    <td data-label="Status">{ r["status"].as_str().unwrap_or_default() }</td>
                                    <td data-label="Rows read">{ r["rows_read"].to_string() }</td>
                                    <td data-label="Loaded">{ r["events_loaded"].to_string() }</td>
                                    <td data-label="Rejected" title={r["rejections"].as_array().into_iter().flatten().take(5).map(|x| format!("row {}: {}", x["row"], x["reason"].as_str().unwrap_or_default())).collect::<Vec<_>>().join("\n")}>{ r["rows_rejected"].to_string() }</td>
                                    <td data-label="Started">{ fmt_time(&r["started_at"]) }</td>
                                    <td data-label="Ended">{ fmt_time(&r["finished_at"]) }</td>
                                </tr>
                            }) }</tbody>
                        </table>
                    },
                } }
            </div>
        },
    };

    let f = &*form;
    let is_events = f.kind == "event_sync";
    html! {
        <section class="card" id="warehouse">
            <h2>{ "Warehouse imports" }</h2>
            { rows }
            { follow_view }
            { history_view }
            <form id="wh-create" onsubmit={oncreate} novalidate=true>
                <h3>{ "New import" }</h3>
                { text_field("wh-name", "Name", &f.name, field(|f, v| f.name = v)) }
                <div class="field">
                    <label for="wh-kind">{ "What the rows are" }</label>
                    <select id="wh-kind" onchange={select(|f, v| f.kind = v)}>
                        <option value="event_sync" selected={f.kind == "event_sync"}>{ "Events" }</option>
                        <option value="people" selected={f.kind == "people"}>{ "User profiles" }</option>
                    </select>
                </div>
                <fieldset>
                    <legend>{ "Source (a file or database the server can read)" }</legend>
                    <div class="field">
                        <label for="wh-source-type">{ "Type" }</label>
                        <select id="wh-source-type" onchange={select(|f, v| f.source_type = v)}>
                            <option value="sqlite" selected={f.source_type == "sqlite"}>{ "SQLite table" }</option>
                            <option value="ndjson" selected={f.source_type == "ndjson"}>{ "NDJSON file" }</option>
                            <option value="csv" selected={f.source_type == "csv"}>{ "CSV file (first line: column names)" }</option>
                            <option value="postgres" selected={f.source_type == "postgres"}>{ "PostgreSQL table" }</option>
                        </select>
                    </div>
                    if f.source_type == "postgres" {
                        { text_field("wh-pg-host", "Host, with :port if not 5432", &f.pg_host, field(|f, v| f.pg_host = v)) }
                        { text_field("wh-pg-user", "User", &f.pg_user, field(|f, v| f.pg_user = v)) }
                        { text_field("wh-pg-dbname", "Database", &f.pg_dbname, field(|f, v| f.pg_dbname = v)) }
                        { text_field("wh-pg-password-env", "Password: name of the server's environment variable holding it (DATADICT_WAREHOUSE_...)", &f.pg_password_env, field(|f, v| f.pg_password_env = v)) }
                        <p class="hint">{ "The password itself is never sent from here nor stored with the import: set it in that variable where the server runs." }</p>
                    } else {
                        { text_field("wh-path", "Path on the server", &f.path, field(|f, v| f.path = v)) }
                        <p class="hint">{ "The path is kept on the server and shown afterwards by file name only." }</p>
                    }
                    if f.source_type == "sqlite" || f.source_type == "postgres" {
                        { text_field("wh-table", "Table", &f.table, field(|f, v| f.table = v)) }
                    }
                </fieldset>
                <fieldset>
                    <legend>{ "Which column holds what" }</legend>
                    if is_events {
                        <div class="field">
                            <label for="wh-event-mode">{ "Event name from" }</label>
                            <select id="wh-event-mode" onchange={select(|f, v| f.event_from_column = v == "column")}>
                                <option value="column" selected={f.event_from_column}>{ "a column" }</option>
                                <option value="constant" selected={!f.event_from_column}>{ "one name for every row" }</option>
                            </select>
                        </div>
                        { text_field("wh-event", if f.event_from_column { "Event name column" } else { "Event name" }, &f.event, field(|f, v| f.event = v)) }
                        { text_field("wh-time", "Time column", &f.time_column, field(|f, v| f.time_column = v)) }
                    }
                    { text_field("wh-user", "User id column (distinct_id)", &f.user_column, field(|f, v| f.user_column = v)) }
                    if is_events {
                        <div class="field">
                            <label for="wh-id-mode">{ "Insert id (what makes a row unique) from" }</label>
                            <select id="wh-id-mode" onchange={select(|f, v| f.id_from_column = v == "column")}>
                                <option value="keys" selected={!f.id_from_column}>{ "key columns (hashed)" }</option>
                                <option value="column" selected={f.id_from_column}>{ "an insert id column" }</option>
                            </select>
                        </div>
                        if f.id_from_column {
                            { text_field("wh-insert-id", "Insert id column", &f.insert_id_column, field(|f, v| f.insert_id_column = v)) }
                        } else {
                            { text_field("wh-keys", "Key columns (comma-separated)", &f.key_columns, field(|f, v| f.key_columns = v)) }
                        }
                    }
                    { text_field("wh-props", "Property columns (comma-separated; empty: every other column)", &f.property_columns, field(|f, v| f.property_columns = v)) }
                </fieldset>
                { error_summary }
                <button type="submit" id="wh-create-button">{ "Create import" }</button>
                if let Some(e) = &*create_error { <p id="wh-create-error" class="error" role="alert"><span class="icon" aria-hidden="true">{ "⚠" }</span>{ e.clone() }</p> }
                if let Some(m) = &*created { <p id="wh-created" class="ok">{ m.clone() }</p> }
            </form>
        </section>
    }
}
