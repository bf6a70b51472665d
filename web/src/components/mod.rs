//! Components shared by several pages.

pub mod download;
pub mod entity_form;
pub mod log;
pub mod side_panel;

use yew::{Callback, MouseEvent};

/// Moves keyboard focus to the element with this id, if the page has one.
pub fn focus_by_id(id: &str) {
    use wasm_bindgen::JsCast;
    let el = web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id(id));
    if let Some(el) = el.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let _ = el.focus();
    }
}

/// The click of an error summary's link to the field `id`: focus moves to the field (a plain
/// `#id` link would only scroll to it).
pub fn focus_field(id: &'static str) -> Callback<MouseEvent> {
    Callback::from(move |e: MouseEvent| {
        e.prevent_default();
        focus_by_id(id);
    })
}
