//! The datadict web app: a Yew single-page app over the server's API, built with Trunk.
//!
//! It must work in a locked-down browser without developer tools, so every request, error and
//! panic is written to an on-page log ([`state::LogEntry`]), never only to the console.

pub mod api;
pub mod app;
pub mod components;
pub mod model;
pub mod pages;
pub mod reader;
pub mod router;
pub mod state;

/// Mounts the app on `<body>` after installing the panic hook.
pub fn start() {
    install_panic_hook();
    // The app gets its own element: mounted on `<body>` itself, Yew replaced the body's content,
    // `#fatal` included, and a panic then had nowhere to be shown.
    let document = web_sys::window().and_then(|w| w.document()).expect("the app runs in a page");
    let root = document.create_element("div").expect("a div can be created");
    root.set_id("app");
    document.body().expect("the page has a body").append_child(&root).expect("the app root can be added");
    yew::Renderer::<app::App>::with_root(root).render();
}

/// Writes a Rust panic into the `#fatal` box of `index.html`, which lives outside Yew's tree so it
/// still shows when the app itself can no longer render. Text only: `textContent`, never HTML.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = format!("the app crashed: {info}. Copy this text into a bug report, then reload the page");
        if let Some(el) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id("fatal")) {
            el.set_text_content(Some(&message));
            let _ = el.remove_attribute("hidden");
        }
        web_sys::console::error_1(&message.into());
    }));
}

/// Sets a `performance` mark, so that a benchmark (and a curious user's profiler) can measure the
/// app's own work apart from the network; costs next to nothing when nobody reads it.
pub fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(name);
    }
}

/// The size of the app's wasm linear memory in bytes. It only ever grows, so after a run it is
/// that run's peak: the import screen shows it to prove that memory stays flat.
pub fn wasm_memory_bytes() -> f64 {
    use wasm_bindgen::JsCast;
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|m| m.buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length() as f64)
        .unwrap_or(0.0)
}

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
