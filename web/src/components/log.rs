//! The on-page log: every request, every error, readable and copyable without developer tools.

use crate::state::use_app_state;
use crate::state::{Action, Level, LogEntry};
use yew::prelude::*;

/// Adds a line to the log of `state`.
pub fn push(state: &crate::state::StateHandle, level: Level, text: impl Into<String>) {
    let at_ms = web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now());
    state.dispatch(Action::Log(LogEntry { at_ms, level, text: text.into() }));
}

/// The logger the `api` functions take: each exchange becomes one line, errors in red.
pub fn log_request(state: &crate::state::StateHandle) -> impl Fn(crate::api::RequestRecord) {
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

/// What the copy button did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Copy {
    Idle,
    Copied,
    /// The browser has no clipboard API here (a page served over plain HTTP, or a locked-down
    /// browser): the text is shown selected instead, for Ctrl+C.
    Manual,
}

#[component]
pub fn LogView() -> Html {
    let state = use_app_state();
    let copied = use_state(|| Copy::Idle);
    let text: String = state.log.iter().map(|e| line(e) + "\n").collect();
    let oncopy = {
        let text = text.clone();
        let copied = copied.clone();
        Callback::from(move |_| {
            let Some(window) = web_sys::window() else { return };
            let navigator = window.navigator();
            // `navigator.clipboard` is undefined outside secure contexts; calling into it would throw.
            let has_clipboard = js_sys::Reflect::get(&navigator, &"clipboard".into()).is_ok_and(|v| !v.is_undefined());
            if !has_clipboard {
                copied.set(Copy::Manual);
                return;
            }
            let promise = navigator.clipboard().write_text(&text);
            let copied = copied.clone();
            wasm_bindgen_futures::spawn_local(async move {
                match wasm_bindgen_futures::JsFuture::from(promise).await {
                    Ok(_) => copied.set(Copy::Copied),
                    Err(_) => copied.set(Copy::Manual),
                }
            });
        })
    };
    let onclear = {
        let (state, copied) = (state.clone(), copied.clone());
        Callback::from(move |_| {
            copied.set(Copy::Idle);
            state.dispatch(Action::ClearLog)
        })
    };
    // Selects the fallback text as soon as it is shown, so that Ctrl+C is all that is left to do.
    let onfocus_select = Callback::from(|e: FocusEvent| e.target_unchecked_into::<web_sys::HtmlTextAreaElement>().select());
    html! {
        <section class="log" aria-label="Log">
            <div class="log-head">
                <h2>{ format!("Log ({} lines)", state.log.len()) }</h2>
                <button id="copy-log" onclick={oncopy}>{ if *copied == Copy::Copied { "Copied" } else { "Copy log" } }</button>
                <button id="clear-log" onclick={onclear}>{ "Clear" }</button>
            </div>
            if *copied == Copy::Manual {
                <label for="log-text">{ "This browser does not allow copying from here: click the text, press Ctrl+A, then Ctrl+C." }</label>
                <textarea id="log-text" class="log-text" readonly=true rows="6" value={text.clone()} onfocus={onfocus_select} />
            }
            <ol id="log-lines" class="log-lines">
                { for state.log.iter().rev().map(|e| html! {
                    <li class={classes!(matches!(e.level, Level::Error).then_some("error"))}>{ line(e) }</li>
                }) }
            </ol>
        </section>
    }
}
