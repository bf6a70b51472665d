//! The on-page log: every request, every error, readable and copyable without developer tools. It
//! is a drawer opened from the header on every screen; the header's button counts the errors
//! logged since the drawer was last open.

use crate::state::use_app_state;
use crate::components::focus_by_id;
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
    // Tenths of a second from integers, for the reason given at `fmt_bytes`.
    let tenths = (entry.at_ms / 100.0).round() as u64;
    format!("{:>7}.{}s {level} {}", tenths / 10, tenths % 10, entry.text)
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

/// The header's button that opens and closes the log, with its badge of new errors.
#[component]
pub fn LogButton() -> Html {
    let state = use_app_state();
    let open = state.log_open;
    let onclick = {
        let state = state.clone();
        Callback::from(move |_| state.dispatch(Action::ToggleLog(!open)))
    };
    let n = state.unseen_errors;
    let label = match n {
        0 => "Log".to_owned(),
        1 => "Log, 1 new error".to_owned(),
        n => format!("Log, {n} new errors"),
    };
    html! {
        <button id="log-toggle" class="log-toggle" aria-expanded={open.to_string()} aria-controls="log" aria-label={label} {onclick}>
            { "Log" }
            if n > 0 {
                <span id="log-badge" class="badge" aria-hidden="true">{ n }</span>
            }
        </button>
    }
}

/// The log drawer: in the page on every screen, shown while open.
#[component]
pub fn LogView() -> Html {
    let state = use_app_state();
    let copied = use_state(|| Copy::Idle);
    let open = state.log_open;
    // Opening moves focus into the drawer; closing it gives focus back to its button.
    let was_open = use_mut_ref(|| false);
    use_effect_with(open, move |open| {
        if *open {
            focus_by_id("log-title");
        } else if *was_open.borrow() {
            focus_by_id("log-toggle");
        }
        *was_open.borrow_mut() = *open;
    });
    let onkeydown = {
        let state = state.clone();
        Callback::from(move |e: KeyboardEvent| {
            if e.key() == "Escape" {
                state.dispatch(Action::ToggleLog(false));
            }
        })
    };
    let onclose = {
        let state = state.clone();
        Callback::from(move |_| state.dispatch(Action::ToggleLog(false)))
    };
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
        <section id="log" class="log" aria-labelledby="log-title" hidden={!open} {onkeydown}>
            <div class="log-head">
                <h2 id="log-title" tabindex="-1">{ match state.log.len() {
                    1 => "Log (1 line)".to_owned(),
                    n => format!("Log ({n} lines)"),
                } }</h2>
                <button id="copy-log" onclick={oncopy}>{ if *copied == Copy::Copied { "Copied" } else { "Copy log" } }</button>
                <button id="clear-log" onclick={onclear}>{ "Clear" }</button>
                <button id="close-log" onclick={onclose}>{ "Close" }</button>
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
