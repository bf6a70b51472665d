//! The group profiles of the Data screen: a page at a time in `$group_key` then `$group_id`
//! order, optionally of one group key, with "Show more" for the next page; a group opens in the
//! side panel with its properties, read again from the server so that an address shows it too.

use super::reader::{Kind, Reader, Shown};
use super::{code, field, go, grid, link, pager, pending, properties_table, text, Col, Row, Tab};
use crate::components::side_panel::SidePanel;
use crate::router::DataView;
use datadict_core::count;
use yew::prelude::*;

/// The group list's tab: the filter by group key, the list, and the group open in the side panel
/// (its key and id).
pub(crate) fn group_tab(
    tab: &Tab,
    open: Option<(String, String)>,
    oninput: Callback<InputEvent>,
) -> Html {
    let onsubmit = {
        let (typed, shown_key, reload) =
            (tab.typed.clone(), tab.shown_key.clone(), tab.reload.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            shown_key.set(typed.trim().to_owned());
            reload.set(*reload + 1);
        })
    };
    let panel = open.clone().map(|(key, id)| {
        let state = tab.state.clone();
        let onclose = Callback::from(move |_| go(&state, DataView::Groups(None)));
        let open_key = format!("{key}\u{0}{id}");
        html! {
            <SidePanel content_key={open_key.clone()} label="Group profile" {onclose}>
                <Reader key={open_key} kind={Kind::Group} arg={key} arg2={id} />
            </SidePanel>
        }
    });
    html! {
        <>
            <form class="toolbar" id="group-filter" {onsubmit}>
                <label for="group-key">{ "Group key" }</label>
                <input id="group-key" type="search" placeholder="all keys, or one such as Company" value={(*tab.typed).clone()} {oninput} autocomplete="off" />
                <button type="submit" id="groups-show">{ "Show" }</button>
            </form>
            <Reader kind={Kind::Groups} arg={(*tab.shown_key).clone()} {open} reload={*tab.reload} />
            { for panel }
        </>
    }
}

/// The group profiles read so far: the first page's answer with the profiles of the pages after it
/// appended to its `results`, and the last page's `next_after`.
pub(crate) fn groups_view(shown: &Shown) -> Html {
    let answer = match pending(shown.load) {
        Err(pending) => return pending,
        Ok(answer) => answer,
    };
    let groups = shown.rows;
    if groups.is_empty() {
        let key = &shown.props.arg;
        return html! {
            <p class="hint" id="groups-empty">{ if key.is_empty() {
                "No group profiles yet. A group profile is made by a $set for its $group_key and $group_id sent to /groups.".to_owned()
            } else {
                format!("No group profiles with the group key {key}.")
            } }</p>
        };
    }
    let has_next = !answer["next_after"].is_null();
    let cols = [
        Col::plain("Group key"),
        Col::plain("Group id"),
        Col {
            head: "Properties".into(),
            th: Some("count"),
            td: Some("count"),
        },
    ];
    let rows = groups
        .iter()
        .map(|g| {
            let (key, id) = (field(g, "$group_key"), field(g, "$group_id"));
            let is_open = shown
                .props
                .open
                .as_ref()
                .is_some_and(|(k, i)| *k == key && *i == id);
            let label = format!("Properties of {key} {id}");
            let properties = g["$properties"].as_object().map_or(0, |p| p.len());
            let onclick = {
                let (state, target) = (shown.state.clone(), (key.clone(), id.clone()));
                Callback::from(move |_| go(&state, DataView::Groups(Some(target.clone()))))
            };
            let cells = vec![
                code(key),
                link("link open-group", label, id, onclick),
                text(properties.to_string()),
            ];
            Row {
                class: Some(if is_open {
                    "group-row open"
                } else {
                    "group-row"
                }),
                id: None,
                cells,
            }
        })
        .collect();
    html! {
        <>
            <p class="hint" id="groups-count">{ count(groups.len() as u64, "group", "groups") }{ " shown" }{ if has_next { ", more to show" } else { "" } }</p>
            { grid("group-list", "schemas cards", &cols, rows) }
            { pager("groups-more", "Show more", has_next, shown.more, shown.show_more.clone()) }
        </>
    }
}

/// One group profile in the side panel.
pub(crate) fn group_view(shown: &Shown) -> Html {
    let (key, id) = (&shown.props.arg, &shown.props.arg2);
    let onclose = {
        let state = shown.state.clone();
        Callback::from(move |_: MouseEvent| go(&state, DataView::Groups(None)))
    };
    html! {
        <section class="detail" id="group-detail">
            <h2>{ format!("{key} {id}") }</h2>
            <p class="hint">{ "Group key " }<code>{ key.clone() }</code>{ ", group id " }<code>{ id.clone() }</code></p>
            <div class="actions"><button id="close-panel" onclick={onclose}>{ "Close" }</button></div>
            { pending(shown.load).map_or_else(|pending| pending, |g| properties_table("group-properties", &g["results"]["$properties"])) }
        </section>
    }
}
