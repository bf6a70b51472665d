//! The app's state: a [`Reducible`] value changed only through [`Action`]s, owned by
//! [`AppStateProvider`] and reached by every component through [`use_app_state`].

use crate::api::Connection;
use crate::router::Route;
use datadict_core::{EntityType, SchemaEntry};
use std::collections::HashMap;
use std::rc::Rc;
use yew::prelude::*;

/// Which screen is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    Settings,
    Dictionary,
    /// User and group profiles and lookup tables, as stored.
    Data,
    /// What the dictionary check on arrival found, and the records the rules refused.
    Quality,
    Import,
    Warehouse,
    Migrate,
}

impl Page {
    pub const ALL: [Page; 7] = [Page::Settings, Page::Dictionary, Page::Data, Page::Quality, Page::Import, Page::Warehouse, Page::Migrate];

    pub fn title(self) -> &'static str {
        match self {
            Self::Settings => "Settings",
            Self::Dictionary => "Dictionary",
            Self::Data => "Data",
            Self::Quality => "Quality",
            Self::Import => "Import",
            Self::Warehouse => "Warehouse",
            Self::Migrate => "Migrate",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Error,
}

/// One line of the on-page log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    /// Milliseconds since the page was opened.
    pub at_ms: f64,
    pub level: Level,
    pub text: String,
}

/// How many log lines are kept; older ones are dropped first.
pub const LOG_CAPACITY: usize = 500;

/// Loading state of a request: explicit, never a pair of booleans.
#[derive(Debug, Clone, PartialEq)]
pub enum Load<T> {
    Idle,
    Loading,
    Loaded(T),
    Failed(String),
}

/// The project's dictionary as last read from the server, shared by the dictionary and import
/// screens. Behind `Rc`s so that a state change elsewhere (a log line) never copies it.
#[derive(Debug, Clone, PartialEq)]
pub struct Dictionary {
    pub entries: Rc<Vec<SchemaEntry>>,
    /// 30-day volume per event name from the read API; `None` when the server has no read API
    /// (the real service does not offer one to this app), so the column says "unknown", not 0.
    pub volumes: Option<Rc<HashMap<String, i64>>>,
    /// The violations of the last 30 days from the server's data-quality summary (`by_event`,
    /// `by_property`), which mark entities and properties; `None` when the server has no such API.
    pub violations: Option<Rc<serde_json::Value>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AppState {
    /// The address shown: the screen and what is open on it. Without a connection the settings
    /// screen is shown whatever the route says, and the route is kept for after signing in.
    pub route: Route,
    /// The settings in use; `None` until the user connects.
    pub connection: Option<Connection>,
    pub dictionary: Load<Dictionary>,
    /// Bumped on every change of `dictionary`, so that views can memoize on a number instead of
    /// comparing thousands of entries (or pointers, which the allocator may reuse).
    pub dictionary_version: u64,
    pub log: Vec<LogEntry>,
    /// Whether the log drawer is open.
    pub log_open: bool,
    /// Errors logged since the drawer was last open: the badge on its button.
    pub unseen_errors: usize,
}

impl Default for AppState {
    fn default() -> Self {
        Self { route: Route::Settings, connection: None, dictionary: Load::Idle, dictionary_version: 0, log: Vec::new(), log_open: false, unseen_errors: 0 }
    }
}

#[derive(Debug, Clone)]
pub enum Action {
    /// Opens a screen from the menu.
    Navigate(Page),
    /// Shows an address: a link inside the app, or Back and Forward.
    Go(Route),
    /// Opens or closes the log drawer; opening it clears the error badge.
    ToggleLog(bool),
    Connect(Connection),
    Disconnect,
    Log(LogEntry),
    ClearLog,
    DictionaryLoading,
    DictionaryLoaded(Dictionary),
    DictionaryFailed(String),
    /// One entity was created or replaced on the server; the copy here follows without a reload.
    EntitySaved(SchemaEntry),
    /// One entity was deleted on the server.
    EntityDeleted(EntityType, String),
}

impl Reducible for AppState {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut next = (*self).clone();
        if !matches!(action, Action::Navigate(_) | Action::Go(_) | Action::ToggleLog(_) | Action::Log(_) | Action::ClearLog) {
            next.dictionary_version += 1;
        }
        match action {
            // The menu's Dictionary keeps the tab in use, and closes what was open beside it.
            Action::Navigate(Page::Dictionary) => {
                let t = match &next.route {
                    Route::Dictionary(t, _) => *t,
                    _ => EntityType::Event,
                };
                next.route = Route::Dictionary(t, crate::router::Panel::None);
            }
            Action::Navigate(page) => next.route = Route::of_page(page),
            Action::Go(route) => next.route = route,
            Action::ToggleLog(open) => {
                next.log_open = open;
                if open {
                    next.unseen_errors = 0;
                }
            }
            // Signing in returns to the address the user came for (a refresh, a shared link);
            // only from the settings screen itself does it go on to the dictionary.
            Action::Connect(connection) => {
                next.connection = Some(connection);
                next.dictionary = Load::Idle;
                if next.route == Route::Settings {
                    next.route = Route::of_page(Page::Dictionary);
                }
            }
            Action::Disconnect => {
                next.connection = None;
                next.dictionary = Load::Idle;
                next.route = Route::Settings;
            }
            Action::Log(entry) => {
                if entry.level == Level::Error && !next.log_open {
                    next.unseen_errors += 1;
                }
                next.log.push(entry);
                if next.log.len() > LOG_CAPACITY {
                    let excess = next.log.len() - LOG_CAPACITY;
                    next.log.drain(..excess);
                }
            }
            Action::ClearLog => next.log.clear(),
            Action::DictionaryLoading => next.dictionary = Load::Loading,
            Action::DictionaryLoaded(dictionary) => next.dictionary = Load::Loaded(dictionary),
            Action::DictionaryFailed(message) => next.dictionary = Load::Failed(message),
            Action::EntitySaved(entry) => {
                if let Load::Loaded(dictionary) = &mut next.dictionary {
                    let mut entries = (*dictionary.entries).clone();
                    match entries.iter_mut().find(|e| e.entity_type == entry.entity_type && e.name == entry.name) {
                        Some(slot) => *slot = entry,
                        None => entries.push(entry),
                    }
                    dictionary.entries = Rc::new(entries);
                }
            }
            Action::EntityDeleted(entity_type, name) => {
                if let Load::Loaded(dictionary) = &mut next.dictionary {
                    let entries = dictionary.entries.iter().filter(|e| !(e.entity_type == entity_type && e.name == name)).cloned().collect();
                    dictionary.entries = Rc::new(entries);
                }
            }
        }
        Rc::new(next)
    }
}

/// The state handle every component reaches through context.
pub type StateHandle = UseReducerHandle<AppState>;

#[derive(Properties, PartialEq)]
pub struct AppStateProviderProps {
    pub children: Html,
}

/// Owns the app's state and provides it to everything rendered inside.
#[component]
pub fn AppStateProvider(props: &AppStateProviderProps) -> Html {
    let state = use_reducer(AppState::default);
    html! {
        <ContextProvider<StateHandle> context={state}>{ props.children.clone() }</ContextProvider<StateHandle>>
    }
}

/// The state handle from context; every component is rendered inside [`AppStateProvider`].
#[hook]
pub fn use_app_state() -> StateHandle {
    use_context::<StateHandle>().expect("components are rendered inside AppStateProvider")
}

#[cfg(test)]
mod tests {
    use super::*;
    use datadict_core::Schema;

    fn entry(i: usize) -> LogEntry {
        LogEntry { at_ms: i as f64, level: Level::Info, text: format!("line {i}") }
    }

    fn conn() -> Connection {
        Connection { base_url: "http://x".into(), import_url: "http://x".into(), project_id: 1, username: "u".into(), secret: "s".into() }
    }

    fn schema_entry(name: &str, description: &str) -> SchemaEntry {
        SchemaEntry {
            entity_type: EntityType::Event,
            name: name.into(),
            schema_json: Schema { description: Some(description.into()), ..Schema::default() },
        }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn connecting_opens_the_dictionary_and_disconnecting_forgets_the_secret() {
        let state = Rc::new(AppState::default()).reduce(Action::Connect(conn()));
        assert_eq!(state.route.page(), Page::Dictionary);
        assert_eq!(state.connection.as_ref(), Some(&conn()));
        let state = state.reduce(Action::Disconnect);
        assert_eq!(state.connection, None);
        assert_eq!(state.route, Route::Settings);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn connecting_returns_to_the_address_of_a_refreshed_page() {
        let wanted = Route::Dictionary(EntityType::Profile, crate::router::Panel::Detail("$user".into()));
        let state = Rc::new(AppState::default()).reduce(Action::Go(wanted.clone())).reduce(Action::Connect(conn()));
        assert_eq!(state.route, wanted);
        // The menu's Dictionary keeps the tab and closes the panel.
        let state = state.reduce(Action::Navigate(Page::Dictionary));
        assert_eq!(state.route, Route::Dictionary(EntityType::Profile, crate::router::Panel::None));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_log_badge_counts_errors_until_the_drawer_is_opened() {
        let error = LogEntry { at_ms: 0.0, level: Level::Error, text: "boom".into() };
        let state = Rc::new(AppState::default()).reduce(Action::Log(error.clone())).reduce(Action::Log(entry(1))).reduce(Action::Log(error.clone()));
        assert_eq!(state.unseen_errors, 2);
        let state = state.reduce(Action::ToggleLog(true));
        assert_eq!(state.unseen_errors, 0);
        // Errors seen in the open drawer are not counted; closing it starts a new count.
        let state = state.reduce(Action::Log(error.clone())).reduce(Action::ToggleLog(false)).reduce(Action::Log(error));
        assert_eq!(state.unseen_errors, 1);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_log_keeps_the_newest_lines() {
        let mut state = Rc::new(AppState::default());
        for i in 0..LOG_CAPACITY + 3 {
            state = state.reduce(Action::Log(entry(i)));
        }
        assert_eq!(state.log.len(), LOG_CAPACITY);
        assert_eq!(state.log[0].text, "line 3");
        assert_eq!(state.reduce(Action::ClearLog).log.len(), 0);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn saved_and_deleted_entities_update_the_loaded_dictionary() {
        let loaded = Dictionary { entries: Rc::new(vec![schema_entry("A", "old")]), volumes: None, violations: None };
        let state = Rc::new(AppState::default()).reduce(Action::DictionaryLoaded(loaded));
        let state = state.reduce(Action::EntitySaved(schema_entry("A", "new")));
        let state = state.reduce(Action::EntitySaved(schema_entry("B", "b")));
        let Load::Loaded(d) = &state.dictionary else { panic!("loaded") };
        let described: Vec<_> = d.entries.iter().map(|e| (e.name.as_str(), e.schema_json.description.as_deref())).collect();
        assert_eq!(described, [("A", Some("new")), ("B", Some("b"))]);
        let state = state.reduce(Action::EntityDeleted(EntityType::Event, "A".into()));
        let Load::Loaded(d) = &state.dictionary else { panic!("loaded") };
        assert_eq!(d.entries.len(), 1);
        assert_eq!(d.entries[0].name, "B");
        // A save before the dictionary is loaded is not invented into a partial dictionary.
        let idle = Rc::new(AppState::default()).reduce(Action::EntitySaved(schema_entry("A", "x")));
        assert_eq!(idle.dictionary, Load::Idle);
    }
}
