//! The root component: the state provider around the navigation, the current page and the log
//! drawer; the address bar follows the state through [`crate::router::use_hash_history`].

use crate::components::log::{LogButton, LogView};
use crate::pages;
use crate::state::{use_app_state, Action, AppStateProvider, Load, Page};
use yew::prelude::*;

#[component]
pub fn App() -> Html {
    html! {
        <AppStateProvider>
            <Shell />
        </AppStateProvider>
    }
}

/// Everything on the page, inside the state provider.
#[component]
fn Shell() -> Html {
    let state = use_app_state();
    crate::router::use_hash_history();
    let connected = state.connection.is_some();
    // Without a connection only the settings screen can show anything; the address is kept, and
    // signing in opens it.
    let page = if connected { state.route.page() } else { Page::Settings };
    // After signing in, focus goes to the menu's entry of the screen now shown, so that a keyboard
    // user starts at the menu rather than at the page's top.
    use_effect_with(connected, move |connected| {
        if *connected {
            crate::components::focus_by_id(&format!("nav-{}", page.title().to_ascii_lowercase()));
        }
    });
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
            <button id={format!("nav-{}", p.title().to_ascii_lowercase())} class={classes!("nav-item", (p == page).then_some("active"))}
                    aria-current={(p == page).then_some("page")} {disabled} {onclick}>
                { p.title() }
            </button>
        }
    });
    let body = match page {
        Page::Settings => html! { <pages::settings::SettingsPage /> },
        Page::Dictionary => html! { <pages::dictionary::DictionaryPage /> },
        Page::Data => html! { <pages::data::DataPage /> },
        Page::Quality => html! { <pages::quality::QualityPage /> },
        Page::Import => html! {},
        Page::Warehouse => html! { <pages::warehouse::WarehousePage /> },
        Page::Migrate => html! { <pages::migrate::MigratePage /> },
    };
    let who = match &state.connection {
        Some(c) => format!("{} · project {}", c.username, c.project_id),
        None => "not connected".to_owned(),
    };
    html! {
        <>
            <header class="top">
                <h1>{ "datadict" }</h1>
                <nav aria-label="Main">{ for nav }</nav>
                <span class="who" title={who.clone()}>{ who }</span>
                <LogButton />
            </header>
            <main id="main" class={classes!(state.log_open.then_some("log-open"))}>
                { body }
                // The import screen stays mounted once connected, so that an upload keeps running
                // (and its progress stays) while the user looks at another screen.
                if connected {
                    <div hidden={page != Page::Import}><pages::import::ImportPage /></div>
                }
            </main>
            <LogView />
        </>
    }
}
