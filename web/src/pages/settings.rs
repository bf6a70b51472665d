//! Settings and sign-in: region preset with editable base URLs, project id and service-account
//! credentials. Held in memory; "remember on this device" is an explicit opt-in that writes them to
//! `localStorage`. Without it, what is not secret (region, URLs, project id, user name) is kept for
//! this tab in `sessionStorage`, so that after a refresh only the secret is asked for.
//! "Test connection" and "Connect" explain a 401 or 403 in words.

use crate::api::{self, Connection};
use crate::state::use_app_state;
use crate::components::log::{log_request, push};
use crate::state::{Action, Level};
use datadict_core::{EntityType, Region};
use serde::{Deserialize, Serialize};
use web_sys::{HtmlInputElement, HtmlSelectElement};
use yew::prelude::*;

/// The `localStorage` key of a remembered connection.
const STORAGE_KEY: &str = "datadict.connection";
/// The `sessionStorage` key of this tab's settings, the secret left out.
const SESSION_KEY: &str = "datadict.settings";

/// The page's own origin: the default API base, since the server also serves the app.
fn page_origin() -> String {
    web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default()
}

fn input_value(e: &InputEvent) -> String {
    e.target_unchecked_into::<HtmlInputElement>().value()
}

/// Spec §4.1: the API exists in a default region and in EU and India data-residency regions, at
/// the same paths on different hosts (the core's `Region`). The app knows one host, the one that
/// serves it (a datadict server answers for every region at its own origin), so choosing a region
/// fills an empty URL with it and never empties what was typed.
const REGIONS: [(Region, &str, &str); 3] =
    [(Region::Default, "default", "Default"), (Region::Eu, "eu", "EU data residency"), (Region::India, "in", "India data residency")];

/// What "remember on this device" stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Remembered {
    region: Region,
    base_url: String,
    import_url: String,
    project_id: String,
    username: String,
    secret: String,
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

fn remembered() -> Option<Remembered> {
    storage().and_then(|s| s.get_item(STORAGE_KEY).ok().flatten()).and_then(|t| serde_json::from_slice(t.as_bytes()).ok())
}

fn session_storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.session_storage().ok().flatten())
}

/// This tab's settings from an earlier sign-in, with an empty secret (it is never stored there).
fn this_tab() -> Option<Remembered> {
    session_storage().and_then(|s| s.get_item(SESSION_KEY).ok().flatten()).and_then(|t| serde_json::from_slice(t.as_bytes()).ok())
}

/// Keeps the settings for this tab, without the secret.
fn keep_for_this_tab(r: &Remembered) {
    let r = Remembered { secret: String::new(), ..r.clone() };
    if let (Some(s), Ok(text)) = (session_storage(), serde_json::to_string(&r)) {
        let _ = s.set_item(SESSION_KEY, &text);
    }
}

fn forget() {
    if let Some(s) = storage() {
        let _ = s.remove_item(STORAGE_KEY);
    }
}

/// The state of a connection check.
#[derive(Debug, Clone, PartialEq)]
enum Check {
    Idle,
    Checking,
    Passed(String),
    Failed(String),
}

#[component]
pub fn SettingsPage() -> Html {
    let state = use_app_state();
    let current = state.connection.clone();
    let remember_on = use_memo((), |_| remembered().is_some());
    let saved = use_memo((), |_| remembered().or_else(this_tab));
    let init = |f: fn(&Connection) -> String, g: fn(&Remembered) -> String, default: fn() -> String| match (&current, &*saved) {
        (Some(c), _) => f(c),
        (None, Some(r)) => g(r),
        (None, None) => default(),
    };
    let region = use_state(|| (*saved).as_ref().map_or(Region::Default, |r| r.region));
    let base_url = use_state(|| init(|c| c.base_url.clone(), |r| r.base_url.clone(), page_origin));
    let import_url = use_state(|| init(|c| c.import_url.clone(), |r| r.import_url.clone(), page_origin));
    let project_id = use_state(|| init(|c| c.project_id.to_string(), |r| r.project_id.clone(), String::new));
    let username = use_state(|| init(|c| c.username.clone(), |r| r.username.clone(), String::new));
    let secret = use_state(|| init(|c| c.secret.clone(), |r| r.secret.clone(), String::new));
    let remember = use_state(|| *remember_on);
    // After a refresh everything but the secret is filled in: the cursor waits there.
    let secret_ref = use_node_ref();
    {
        let (secret_ref, ask_secret) = (secret_ref.clone(), current.is_none() && (*saved).as_ref().is_some_and(|r| r.secret.is_empty()));
        use_effect_with((), move |_| {
            if ask_secret {
                if let Some(el) = secret_ref.cast::<HtmlInputElement>() {
                    let _ = el.focus();
                }
            }
        });
    }
    let check = use_state(|| Check::Idle);
    let test = use_state(|| Check::Idle);

    // A test's answer is about the values tested: it goes once they change.
    let bind = |handle: &UseStateHandle<String>| {
        let (handle, test) = (handle.clone(), test.clone());
        Callback::from(move |e: InputEvent| {
            handle.set(input_value(&e));
            test.set(Check::Idle);
        })
    };
    let onregion = {
        let (region, base_url, import_url) = (region.clone(), base_url.clone(), import_url.clone());
        Callback::from(move |e: Event| {
            let r = e.target_unchecked_into::<HtmlSelectElement>().value().parse().unwrap_or_default();
            region.set(r);
            for field in [&base_url, &import_url] {
                if field.trim().is_empty() {
                    field.set(page_origin());
                }
            }
        })
    };
    let onremember = {
        let remember = remember.clone();
        Callback::from(move |e: Event| {
            let on = e.target_unchecked_into::<HtmlInputElement>().checked();
            if !on {
                forget();
            }
            remember.set(on);
        })
    };

    // Builds the connection from the form, or says what is wrong with it.
    let build = {
        let (base_url, import_url, project_id, username, secret) =
            (base_url.clone(), import_url.clone(), project_id.clone(), username.clone(), secret.clone());
        move || -> Result<Connection, String> {
            let pid = project_id.trim().parse::<u64>().ok().filter(|p| *p > 0).ok_or_else(|| {
                format!("`{}` is not a project id: enter the project's number, e.g. 1", *project_id)
            })?;
            if base_url.trim().is_empty() {
                return Err("the API base URL is empty: enter the host of your region, e.g. https://api.example.com".into());
            }
            let import = if import_url.trim().is_empty() { base_url.trim() } else { import_url.trim() };
            for (what, url) in [("API base URL", base_url.trim()), ("import base URL", import)] {
                let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
                if !matches!(scheme.as_deref(), Some("http" | "https")) {
                    return Err(format!("the {what} `{url}` does not start with http:// or https://; enter the server's address, e.g. https://api.example.com"));
                }
            }
            Ok(Connection {
                base_url: base_url.trim().trim_end_matches('/').to_owned(),
                import_url: import.trim_end_matches('/').to_owned(),
                project_id: pid,
                username: username.trim().to_owned(),
                secret: (*secret).clone(),
            })
        }
    };

    let ontest = {
        let (state, test, build, check) = (state.clone(), test.clone(), build.clone(), check.clone());
        Callback::from(move |_| {
            // One answer on the page at a time: a connect's error is older than this test.
            check.set(Check::Idle);
            let conn = match build() {
                Ok(c) => c,
                Err(m) => return test.set(Check::Failed(m)),
            };
            test.set(Check::Checking);
            let (state, test) = (state.clone(), test.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                match api::list_schemas(&conn, EntityType::Event, &log).await {
                    Ok(list) => test.set(Check::Passed(format!(
                        "the connection works: project {} answers with {} event schemas",
                        conn.project_id,
                        list.len()
                    ))),
                    Err(err) => test.set(Check::Failed(err.to_string())),
                }
            });
        })
    };

    let onsubmit = {
        let (state, check, build, remember, region, test) = (state.clone(), check.clone(), build.clone(), remember.clone(), region.clone(), test.clone());
        let project_id = project_id.clone();
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            test.set(Check::Idle);
            let conn = match build() {
                Ok(c) => c,
                Err(m) => return check.set(Check::Failed(m)),
            };
            check.set(Check::Checking);
            let (state, check, remember, region, project_id) = (state.clone(), check.clone(), *remember, *region, (*project_id).clone());
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                match api::list_schemas(&conn, EntityType::Event, &log).await {
                    Ok(list) => {
                        push(&state, Level::Info, format!("connected to project {} ({} event schemas)", conn.project_id, list.len()));
                        let r = Remembered {
                            region,
                            base_url: conn.base_url.clone(),
                            import_url: conn.import_url.clone(),
                            project_id,
                            username: conn.username.clone(),
                            secret: conn.secret.clone(),
                        };
                        keep_for_this_tab(&r);
                        if remember {
                            if let (Some(s), Ok(text)) = (storage(), serde_json::to_string(&r)) {
                                if s.set_item(STORAGE_KEY, &text).is_err() {
                                    push(&state, Level::Error, "this browser refused to remember the connection (storage is blocked or full)");
                                }
                            }
                        } else {
                            forget();
                        }
                        check.set(Check::Idle);
                        state.dispatch(Action::Connect(conn));
                    }
                    Err(err) => check.set(Check::Failed(err.to_string())),
                }
            });
        })
    };

    let ondisconnect = {
        let state = state.clone();
        Callback::from(move |_| state.dispatch(Action::Disconnect))
    };

    html! {
        <section class="card narrow">
            <h2>{ "Connect to a project" }</h2>
            <form {onsubmit}>
                <label for="region">{ "Region" }</label>
                <select id="region" onchange={onregion}>
                    { for REGIONS.iter().map(|(r, value, label)| html! { <option value={*value} selected={*region == *r}>{ *label }</option> }) }
                </select>
                <label for="base-url">{ "API base URL (schemas, read API)" }</label>
                <input id="base-url" type="url" required=true placeholder="https://your-region-host" value={(*base_url).clone()} oninput={bind(&base_url)} />
                <label for="import-url">{ "Import base URL (/import)" }</label>
                <input id="import-url" type="url" placeholder="the API base URL when empty" value={(*import_url).clone()} oninput={bind(&import_url)} />
                <label for="project-id">{ "Project id" }</label>
                <input id="project-id" inputmode="numeric" required=true value={(*project_id).clone()} oninput={bind(&project_id)} />
                <label for="username">{ "Service account user name" }</label>
                <input id="username" autocomplete="username" required=true value={(*username).clone()} oninput={bind(&username)} />
                <label for="secret">{ "Service account secret" }</label>
                <input id="secret" ref={secret_ref} type="password" autocomplete="current-password" required=true value={(*secret).clone()} oninput={bind(&secret)} />
                <label class="check">
                    <input id="remember" type="checkbox" checked={*remember} onchange={onremember} aria-describedby="remember-warning" />
                    { " Remember on this device" }
                </label>
                if *remember {
                    <p id="remember-warning" class="warn-box">{ "The secret will be stored unencrypted in this browser's local storage: anyone who uses this browser profile can read it. Leave this off on a shared computer. Unticking it forgets the stored copy." }</p>
                } else {
                    <p id="remember-warning" class="hint">{ "The secret stays in this tab's memory and is asked for again after a reload; the other fields are kept until you close the tab." }</p>
                }
                <div class="actions">
                    <button id="connect" type="submit" disabled={*check == Check::Checking}>
                        { if *check == Check::Checking { "Connecting…" } else { "Connect" } }
                    </button>
                    <button id="test-connection" type="button" onclick={ontest} disabled={*test == Check::Checking}>
                        { if *test == Check::Checking { "Testing…" } else { "Test connection" } }
                    </button>
                    if current.is_some() {
                        <button type="button" onclick={ondisconnect}>{ "Disconnect" }</button>
                    }
                </div>
                if let Check::Failed(message) = &*check {
                    <p id="connect-error" class="error" role="alert">{ message.clone() }</p>
                }
                { match &*test {
                    Check::Passed(m) => html! { <p id="test-result" class="ok" role="status">{ m.clone() }</p> },
                    Check::Failed(m) => html! { <p id="test-result" class="error" role="alert">{ m.clone() }</p> },
                    _ => html! {},
                } }
            </form>
        </section>
    }
}
