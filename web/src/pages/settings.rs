//! Settings and sign-in: API base URL, project id and service-account credentials, held in
//! memory only. "Connect" tests them against the API and explains a 401 or 403 in words.

use crate::api::{self, Connection};
use crate::app::use_app_state;
use crate::components::log::push;
use crate::state::{Action, Level};
use datadict_core::EntityType;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// The page's own origin: the default API base, since the server also serves the app.
fn page_origin() -> String {
    web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default()
}

fn input_value(e: &InputEvent) -> String {
    e.target_unchecked_into::<HtmlInputElement>().value()
}

/// The state of the connection test.
#[derive(Debug, Clone, PartialEq)]
enum Check {
    Idle,
    Checking,
    Failed(String),
}

#[component]
pub fn SettingsPage() -> Html {
    let state = use_app_state();
    let current = state.connection.clone();
    let base_url = use_state(|| current.as_ref().map_or_else(page_origin, |c| c.base_url.clone()));
    let project_id = use_state(|| current.as_ref().map_or_else(String::new, |c| c.project_id.to_string()));
    let username = use_state(|| current.as_ref().map_or_else(String::new, |c| c.username.clone()));
    let secret = use_state(String::new);
    let check = use_state(|| Check::Idle);

    let bind = |handle: &UseStateHandle<String>| {
        let handle = handle.clone();
        Callback::from(move |e: InputEvent| handle.set(input_value(&e)))
    };

    let onsubmit = {
        let (state, check) = (state.clone(), check.clone());
        let (base_url, project_id, username, secret) = (base_url.clone(), project_id.clone(), username.clone(), secret.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let Ok(pid) = project_id.trim().parse::<i64>() else {
                check.set(Check::Failed(format!("`{}` is not a project id: enter the project's number, e.g. 1", *project_id)));
                return;
            };
            let conn = Connection {
                base_url: base_url.trim().trim_end_matches('/').to_owned(),
                project_id: pid,
                username: username.trim().to_owned(),
                secret: (*secret).clone(),
            };
            check.set(Check::Checking);
            let (state, check) = (state.clone(), check.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let log_state = state.clone();
                let log = move |r: api::RequestRecord| {
                    push(&log_state, if r.error.is_some() { Level::Error } else { Level::Info }, r.to_string())
                };
                match api::list_schemas(&conn, EntityType::Event, &log).await {
                    Ok(list) => {
                        push(&state, Level::Info, format!("connected to project {} ({} event schemas)", conn.project_id, list.len()));
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
                <label for="base-url">{ "API base URL" }</label>
                <input id="base-url" type="url" required=true value={(*base_url).clone()} oninput={bind(&base_url)} />
                <label for="project-id">{ "Project id" }</label>
                <input id="project-id" inputmode="numeric" required=true value={(*project_id).clone()} oninput={bind(&project_id)} />
                <label for="username">{ "Service account user name" }</label>
                <input id="username" autocomplete="username" required=true value={(*username).clone()} oninput={bind(&username)} />
                <label for="secret">{ "Service account secret" }</label>
                <input id="secret" type="password" autocomplete="current-password" required=true value={(*secret).clone()} oninput={bind(&secret)} />
                <p class="hint">{ "Credentials stay in this tab's memory and are gone when you close it." }</p>
                <div class="actions">
                    <button id="connect" type="submit" disabled={*check == Check::Checking}>
                        { if *check == Check::Checking { "Connecting…" } else { "Connect" } }
                    </button>
                    if current.is_some() {
                        <button type="button" onclick={ondisconnect}>{ "Disconnect" }</button>
                    }
                </div>
                if let Check::Failed(message) = &*check {
                    <p id="connect-error" class="error" role="alert">{ message.clone() }</p>
                }
            </form>
        </section>
    }
}
