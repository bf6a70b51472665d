//! The app's state: a [`Reducible`] value changed only through [`Action`]s, shared by context.

use crate::api::Connection;
use std::rc::Rc;
use yew::Reducible;

/// Which screen is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    Settings,
    Dictionary,
    Import,
    Warehouse,
    Migrate,
}

impl Page {
    pub const ALL: [Page; 5] = [Page::Settings, Page::Dictionary, Page::Import, Page::Warehouse, Page::Migrate];

    pub fn title(self) -> &'static str {
        match self {
            Self::Settings => "Settings",
            Self::Dictionary => "Dictionary",
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

#[derive(Debug, Clone, PartialEq)]
pub struct AppState {
    pub page: Page,
    /// The settings in use; `None` until the user connects. Held in memory only.
    pub connection: Option<Connection>,
    pub log: Vec<LogEntry>,
}

impl Default for AppState {
    fn default() -> Self {
        Self { page: Page::Settings, connection: None, log: Vec::new() }
    }
}

#[derive(Debug, Clone)]
pub enum Action {
    Navigate(Page),
    Connect(Connection),
    Disconnect,
    Log(LogEntry),
    ClearLog,
}

impl Reducible for AppState {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut next = (*self).clone();
        match action {
            Action::Navigate(page) => next.page = page,
            Action::Connect(connection) => {
                next.connection = Some(connection);
                next.page = Page::Dictionary;
            }
            Action::Disconnect => {
                next.connection = None;
                next.page = Page::Settings;
            }
            Action::Log(entry) => {
                next.log.push(entry);
                if next.log.len() > LOG_CAPACITY {
                    let excess = next.log.len() - LOG_CAPACITY;
                    next.log.drain(..excess);
                }
            }
            Action::ClearLog => next.log.clear(),
        }
        Rc::new(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> LogEntry {
        LogEntry { at_ms: i as f64, level: Level::Info, text: format!("line {i}") }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn connecting_opens_the_dictionary_and_disconnecting_forgets_the_secret() {
        let conn = Connection { base_url: "http://x".into(), project_id: 1, username: "u".into(), secret: "s".into() };
        let state = Rc::new(AppState::default()).reduce(Action::Connect(conn.clone()));
        assert_eq!(state.page, Page::Dictionary);
        assert_eq!(state.connection.as_ref(), Some(&conn));
        let state = state.reduce(Action::Disconnect);
        assert_eq!(state.connection, None);
        assert_eq!(state.page, Page::Settings);
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
}
