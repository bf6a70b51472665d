//! The on-page log: every request, every error, readable and copyable without developer tools.

use crate::app::use_app_state;
use crate::state::{Action, Level, LogEntry};
use yew::prelude::*;

/// Adds a line to the log of `state`.
pub fn push(state: &crate::app::StateHandle, level: Level, text: impl Into<String>) {
    let at_ms = web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now());
    state.dispatch(Action::Log(LogEntry { at_ms, level, text: text.into() }));
}

/// The logger the `api` functions take: each exchange becomes one line, errors in red.
pub fn log_request(state: &crate::app::StateHandle) -> impl Fn(crate::api::RequestRecord) {
    let state = state.clone();
    move |r: crate::api::RequestRecord| push(&state, if r.error.is_some() { Level::Error } else { Level::Info }, r.to_string())
}

fn line(entry: &LogEntry) -> String {
    let level = match entry.level {
        Level::Info => "info ",
        Level::Error => "ERROR",
    };
    format!("{:>9.1}s {level} {}", entry.at_ms / 1000.0, entry.text)
}

#[component]
pub fn LogView() -> Html {
    let state = use_app_state();
    let copied = use_state(|| false);
    let text: String = state.log.iter().map(|e| line(e) + "\n").collect();
    let oncopy = {
        let text = text.clone();
        let copied = copied.clone();
        Callback::from(move |_| {
            if let Some(window) = web_sys::window() {
                let _ = window.navigator().clipboard().write_text(&text);
                copied.set(true);
            }
        })
    };
    let onclear = {
        let state = state.clone();
        Callback::from(move |_| state.dispatch(Action::ClearLog))
    };
    html! {
        <section class="log" aria-label="Log">
            <div class="log-head">
                <h2>{ format!("Log ({} lines)", state.log.len()) }</h2>
                <button id="copy-log" onclick={oncopy}>{ if *copied { "Copied" } else { "Copy log" } }</button>
                <button id="clear-log" onclick={onclear}>{ "Clear" }</button>
            </div>
            <ol id="log-lines" class="log-lines">
                { for state.log.iter().rev().map(|e| html! {
                    <li class={classes!(matches!(e.level, Level::Error).then_some("error"))}>{ line(e) }</li>
                }) }
            </ol>
        </section>
    }
}
