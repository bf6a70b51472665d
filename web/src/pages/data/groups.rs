//! The group profiles of the Data screen: a page at a time in `$group_key` then `$group_id`
//! order, optionally of one group key, with "Show more" for the next page; a group opens in the
//! side panel with its properties, read again from the server so that an address shows it too.

use super::{field, go, pager, pending, properties_table, read, More, Next};
use crate::api;
use crate::components::side_panel::SidePanel;
use crate::router::DataView;
use crate::state::{use_app_state, Load};
use datadict_core::count;
use serde_json::Value;
use web_sys::HtmlInputElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct GroupListProps {
    /// The group open in the panel: its key and id.
    pub open: Option<(String, String)>,
}

/// The group key of the filter as the server takes it: none for all keys.
fn key_filter(key: &str) -> Option<&str> {
    Some(key).filter(|k| !k.is_empty())
}

/// The list of group profiles. `list` holds the first page's answer with the profiles of the pages
/// after it appended to its `results`, and the last page's `next_after`.
#[component]
pub fn GroupList(props: &GroupListProps) -> Html {
    let state = use_app_state();
    let typed = use_state(String::new);
    // The key the list shows and a reload counter: the list is read again when either changes.
    let shown_key = use_state(String::new);
    let reload = use_state(|| 0u32);
    let list = use_state(|| Load::<Value>::Idle);
    let more = use_state(|| More::Idle);
    {
        let (state, list, more) = (state.clone(), list.clone(), more.clone());
        use_effect_with(
            (state.connection.clone(), (*shown_key).clone(), *reload),
            move |(conn, key, _)| {
                let Some(conn) = conn.clone() else { return };
                more.set(More::Idle);
                let url = api::groups_url(&conn, key_filter(key), None);
                read(&state, conn, url, list, None);
            },
        );
    }
    let show_more = {
        let (state, list, more, shown_key) = (state.clone(), list.clone(), more.clone(), shown_key.clone());
        Callback::from(move |_| {
            let (Some(conn), Load::Loaded(so_far)) = (state.connection.clone(), (*list).clone()) else {
                return;
            };
            let Some(after) = so_far["next_after"].as_str() else {
                return;
            };
            let url = api::groups_url(&conn, key_filter(&shown_key), Some(after));
            let next = Next { more: more.clone(), so_far, rows: "/results" };
            read(&state, conn, url, list.clone(), Some(next));
        })
    };
    let empty: &[Value] = &[];
    let (groups, has_next) = match &*list {
        Load::Loaded(listed) => (listed["results"].as_array().map_or(empty, Vec::as_slice), !listed["next_after"].is_null()),
        _ => (empty, false),
    };
    use_effect_with(groups.len(), |_| super::focus_if_lost("groups-count"));
    let onsubmit = {
        let (typed, shown_key, reload) = (typed.clone(), shown_key.clone(), reload.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            shown_key.set(typed.trim().to_owned());
            reload.set(*reload + 1);
        })
    };
    let oninput = {
        let typed = typed.clone();
        Callback::from(move |e: InputEvent| typed.set(e.target_unchecked_into::<HtmlInputElement>().value()))
    };
    let body = match pending(&list) {
        Err(shown) => shown,
        Ok(_) if groups.is_empty() => html! {
            <p class="hint" id="groups-empty">{ if shown_key.is_empty() {
                "No group profiles yet. A group profile is made by a $set for its $group_key and $group_id sent to /groups.".to_owned()
            } else {
                format!("No group profiles with the group key {}.", *shown_key)
            } }</p>
        },
        Ok(_) => html! {
            <>
                <p class="hint" id="groups-count">{ count(groups.len() as u64, "group", "groups") }{ " shown" }{ if has_next { ", more to show" } else { "" } }</p>
                <table id="group-list" class="schemas cards">
                    <thead><tr><th scope="col">{ "Group key" }</th><th scope="col">{ "Group id" }</th><th scope="col" class="count">{ "Properties" }</th></tr></thead>
                    <tbody>{ for groups.iter().map(|g| {
                        let (key, id) = (field(g, "$group_key"), field(g, "$group_id"));
                        let is_open = props.open.as_ref().is_some_and(|(k, i)| *k == key && *i == id);
                        let label = format!("Properties of {key} {id}");
                        let properties = g["$properties"].as_object().map_or(0, |p| p.len());
                        let onclick = {
                            let (state, target) = (state.clone(), (key.clone(), id.clone()));
                            Callback::from(move |_| go(&state, DataView::Groups(Some(target.clone()))))
                        };
                        html! {
                            <tr class={classes!("group-row", is_open.then_some("open"))}>
                                <td data-label="Group key"><code>{ key }</code></td>
                                <td data-label="Group id"><button class="link open-group" {onclick} aria-label={label}>{ id }</button></td>
                                <td data-label="Properties" class="count">{ properties }</td>
                            </tr>
                        }
                    }) }</tbody>
                </table>
                { pager("groups-more", "Show more", has_next, &more, show_more) }
            </>
        },
    };
    let panel = props.open.clone().map(|(key, id)| {
        let state = state.clone();
        let onclose = Callback::from(move |_| go(&state, DataView::Groups(None)));
        let open_key = format!("{key}\u{0}{id}");
        html! {
            <SidePanel content_key={open_key.clone()} label="Group profile" onclose={onclose.clone()}>
                <GroupDetail key={open_key} group_key={key} group_id={id} {onclose} />
            </SidePanel>
        }
    });
    html! {
        <>
            <form class="toolbar" id="group-filter" {onsubmit}>
                <label for="group-key">{ "Group key" }</label>
                <input id="group-key" type="search" placeholder="all keys, or one such as Company" value={(*typed).clone()} {oninput} autocomplete="off" />
                <button type="submit" id="groups-show">{ "Show" }</button>
            </form>
            { body }
            { for panel }
        </>
    }
}

#[derive(Properties, PartialEq)]
struct GroupDetailProps {
    group_key: String,
    group_id: String,
    onclose: Callback<()>,
}

/// One group profile in the side panel.
#[component]
fn GroupDetail(props: &GroupDetailProps) -> Html {
    let state = use_app_state();
    let group = use_state(|| Load::<Value>::Idle);
    {
        let (state, group) = (state.clone(), group.clone());
        let (key, id) = (props.group_key.clone(), props.group_id.clone());
        use_effect_with(state.connection.clone(), move |conn| {
            let Some(conn) = conn.clone() else { return };
            let url = api::group_url(&conn, &key, &id);
            read(&state, conn, url, group, None);
        });
    }
    let onclose = props.onclose.reform(|_: MouseEvent| ());
    html! {
        <section class="detail" id="group-detail">
            <h2>{ format!("{} {}", props.group_key, props.group_id) }</h2>
            <p class="hint">{ "Group key " }<code>{ props.group_key.clone() }</code>{ ", group id " }<code>{ props.group_id.clone() }</code></p>
            <div class="actions"><button id="close-panel" onclick={onclose}>{ "Close" }</button></div>
            { pending(&group).map_or_else(|shown| shown, |g| properties_table("group-properties", &g["results"]["$properties"])) }
        </section>
    }
}
