//! The root component: provides the state, draws the navigation, the current page and the log.

use crate::components::log::LogView;
use crate::pages;
use crate::state::{Action, AppState, Load, Page};
use yew::prelude::*;

/// The state handle every component reaches through context.
pub type StateHandle = UseReducerHandle<AppState>;

#[component]
pub fn App() -> Html {
    let state = use_reducer(AppState::default);
    let page = state.page;
    let connected = state.connection.is_some();
    // The dictionary is read once per connection, here, because both the dictionary and the
    // import screens use it (a load in each would send every request twice).
    {
        let state = state.clone();
        let idle = state.dictionary == Load::Idle;
        use_effect_with((state.connection.clone(), idle), move |(conn, idle)| {
            if conn.is_some() && *idle {
                pages::dictionary::load_dictionary(&state);
            }
        });
    }
    let nav = Page::ALL.iter().map(|&p| {
        let state = state.clone();
        let onclick = Callback::from(move |_| state.dispatch(Action::Navigate(p)));
        // Pages other than settings need a connection first.
        let disabled = p != Page::Settings && !connected;
        html! {
            <button id={format!("nav-{}", p.title().to_lowercase())} class={classes!("nav-item", (p == page).then_some("active"))}
                    aria-current={(p == page).then_some("page")} {disabled} {onclick}>
                { p.title() }
            </button>
        }
    });
    let body = match page {
        Page::Settings => html! { <pages::settings::SettingsPage /> },
        Page::Dictionary => html! { <pages::dictionary::DictionaryPage /> },
        Page::Import => html! {},
        Page::Warehouse => html! { <pages::warehouse::WarehousePage /> },
        Page::Migrate => html! { <pages::migrate::MigratePage /> },
    };
    html! {
        <ContextProvider<StateHandle> context={state.clone()}>
            <header class="top">
                <h1>{ "datadict" }</h1>
                <nav aria-label="Main">{ for nav }</nav>
                <span class="who">{
                    match &state.connection {
                        Some(c) => format!("{} · project {}", c.username, c.project_id),
                        None => "not connected".to_owned(),
                    }
                }</span>
            </header>
            <main id="main">
                { body }
                // The import screen stays mounted once connected, so that an upload keeps running
                // (and its progress stays) while the user looks at another screen.
                if connected {
                    <div hidden={page != Page::Import}><pages::import::ImportPage /></div>
                }
            </main>
            <LogView />
        </ContextProvider<StateHandle>>
    }
}

/// The state handle from context; every page is rendered inside [`App`]'s provider.
#[hook]
pub fn use_app_state() -> StateHandle {
    use_context::<StateHandle>().expect("pages are rendered inside App's state provider")
}
