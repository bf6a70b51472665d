//! The panel beside a table where detail and forms open: always inside the viewport (fixed to the
//! right edge on wide screens, the whole screen on narrow ones), focused when it opens, closed by
//! Escape, and giving focus back to what opened it.

use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct SidePanelProps {
    /// Changes whenever the panel shows something else (detail, then its form): focus moves to the
    /// new heading each time.
    pub content_key: String,
    pub label: AttrValue,
    pub onclose: Callback<()>,
    /// The name of the table row this panel is about (its `data-name`): where focus goes back to
    /// when whatever opened the panel is gone or was never focused (a link, Back, a refresh).
    #[prop_or_default]
    pub row: Option<String>,
    pub children: Html,
}

fn document() -> Option<web_sys::Document> {
    web_sys::window().and_then(|w| w.document())
}

fn focus(el: &Element) {
    if let Some(el) = el.dyn_ref::<HtmlElement>() {
        let _ = el.focus();
    }
}

/// The row button of `name` in the dictionary table, found by comparing `data-name` rather than by
/// a selector, which would need the name escaped.
fn row_button(name: &str) -> Option<Element> {
    let rows = document()?.query_selector_all("#schema-list .schema-row").ok()?;
    (0..rows.length())
        .filter_map(|i| rows.item(i)?.dyn_into::<Element>().ok())
        .find(|r| r.get_attribute("data-name").as_deref() == Some(name))
        .and_then(|r| r.query_selector(".open-detail").ok().flatten())
}

#[component]
pub fn SidePanel(props: &SidePanelProps) -> Html {
    let node = use_node_ref();
    // Whatever had focus when the panel opened; focus returns there when it closes.
    let opener = use_mut_ref(|| None::<Element>);
    let row = use_mut_ref(|| None::<String>);
    *row.borrow_mut() = props.row.clone();
    {
        let (opener, row) = (opener.clone(), row.clone());
        use_effect_with((), move |_| {
            let active = document().and_then(|d| d.active_element());
            let body = document().and_then(|d| d.body()).map(Element::from);
            *opener.borrow_mut() = active.filter(|a| Some(a) != body.as_ref());
            move || {
                let target = opener.borrow().clone().filter(|e| e.is_connected());
                let target = target
                    .or_else(|| row.borrow().as_deref().and_then(row_button))
                    .or_else(|| document().and_then(|d| d.get_element_by_id("new-entity")));
                if let Some(el) = target {
                    focus(&el);
                }
            }
        });
    }
    {
        let node = node.clone();
        use_effect_with(props.content_key.clone(), move |_| {
            if let Some(panel) = node.cast::<Element>() {
                // The heading is focused so that a screen reader says what opened; it gets a
                // tabindex from here because the panel's content comes from several components.
                let heading = panel.query_selector("h2").ok().flatten();
                match heading {
                    Some(h) => {
                        let _ = h.set_attribute("tabindex", "-1");
                        focus(&h);
                    }
                    None => focus(&panel),
                }
            }
            crate::mark("dd:panel-rendered");
        });
    }
    let onkeydown = {
        let onclose = props.onclose.clone();
        Callback::from(move |e: KeyboardEvent| {
            if e.key() == "Escape" {
                e.prevent_default();
                onclose.emit(());
            }
        })
    };
    html! {
        <div id="side-panel" class="side-panel" ref={node} role="dialog" aria-modal="false" aria-label={props.label.clone()}
             tabindex="-1" {onkeydown}>
            { props.children.clone() }
        </div>
    }
}
