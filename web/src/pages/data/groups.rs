//! The group profiles of the Data screen: a page at a time in `$group_key` then `$group_id`
//! order, optionally of one group key, with "Show more" for the next page; a group opens in the
//! side panel with its properties, read again from the server so that an address shows it too.

use super::{failed, go, loading, properties_table, More};
use crate::api;
use crate::components::log::log_request;
use crate::components::side_panel::SidePanel;
use crate::router::DataView;
use crate::state::{use_app_state, Load};
use datadict_core::count;
use datadict_core::readback::GroupProfile;
use web_sys::HtmlInputElement;
use yew::prelude::*;

/// The pages read so far.
#[derive(Debug, Clone, PartialEq)]
struct Listed {
    groups: Vec<GroupProfile>,
    /// The cursor of the next page; `None` once the last was read.
    next_after: Option<String>,
}

#[derive(Properties, PartialEq)]
pub struct GroupListProps {
    /// The group open in the panel: its key and id.
    pub open: Option<(String, String)>,
}

#[component]
pub fn GroupList(props: &GroupListProps) -> Html {
    let state = use_app_state();
    let typed = use_state(String::new);
    // The key the list shows and a reload counter: the list is read again when either changes.
    let shown_key = use_state(String::new);
    let reload = use_state(|| 0u32);
    let list = use_state(|| Load::<Listed>::Idle);
    let more = use_state(|| More::Idle);
    {
        let (state, list, more) = (state.clone(), list.clone(), more.clone());
        use_effect_with(
            (state.connection.clone(), (*shown_key).clone(), *reload),
            move |(conn, key, _)| {
                let Some(conn) = conn.clone() else { return };
                let key = key.clone();
                list.set(Load::Loading);
                more.set(More::Idle);
                wasm_bindgen_futures::spawn_local(async move {
                    let log = log_request(&state);
                    let key = Some(key.as_str()).filter(|k| !k.is_empty());
                    list.set(match api::list_groups(&conn, key, None, &log).await {
                        Ok(page) => Load::Loaded(Listed {
                            groups: page.results,
                            next_after: page.next_after,
                        }),
                        Err(e) => Load::Failed(e.to_string()),
                    });
                });
            },
        );
    }
    let show_more = {
        let (state, list, more, shown_key) =
            (state.clone(), list.clone(), more.clone(), shown_key.clone());
        Callback::from(move |_| {
            let (Some(conn), Load::Loaded(listed)) = (state.connection.clone(), (*list).clone())
            else {
                return;
            };
            let Some(after) = listed.next_after.clone() else {
                return;
            };
            let (state, list, more, key) = (
                state.clone(),
                list.clone(),
                more.clone(),
                (*shown_key).clone(),
            );
            more.set(More::Loading);
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                let key = Some(key.as_str()).filter(|k| !k.is_empty());
                match api::list_groups(&conn, key, Some(&after), &log).await {
                    Ok(page) => {
                        let mut groups = listed.groups;
                        groups.extend(page.results);
                        list.set(Load::Loaded(Listed {
                            groups,
                            next_after: page.next_after,
                        }));
                        more.set(More::Idle);
                    }
                    Err(e) => more.set(More::Failed(e.to_string())),
                }
            });
        })
    };
    {
        let shown = match &*list {
            Load::Loaded(listed) => listed.groups.len(),
            _ => 0,
        };
        use_effect_with(shown, |_| super::focus_if_lost("groups-count"));
    }
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
        Callback::from(move |e: InputEvent| {
            typed.set(e.target_unchecked_into::<HtmlInputElement>().value())
        })
    };
    let open = |g: &GroupProfile| {
        let state = state.clone();
        let target = (g.group_key.clone(), g.group_id.clone());
        Callback::from(move |_| go(&state, DataView::Groups(Some(target.clone()))))
    };
    let body = match &*list {
        Load::Idle | Load::Loading => loading(),
        Load::Failed(message) => failed(message),
        Load::Loaded(listed) if listed.groups.is_empty() => html! {
            <p class="hint" id="groups-empty">{ if shown_key.is_empty() {
                "No group profiles yet. A group profile is made by a $set for its $group_key and $group_id sent to /groups.".to_owned()
            } else {
                format!("No group profiles with the group key {}.", *shown_key)
            } }</p>
        },
        Load::Loaded(listed) => html! {
            <>
                <p class="hint" id="groups-count">{ format!("{} shown{}", count(listed.groups.len() as u64, "group", "groups"),
                    if listed.next_after.is_some() { ", more to show" } else { "" }) }</p>
                <table id="group-list" class="schemas cards">
                    <thead><tr><th scope="col">{ "Group key" }</th><th scope="col">{ "Group id" }</th><th scope="col" class="count">{ "Properties" }</th></tr></thead>
                    <tbody>{ for listed.groups.iter().map(|g| {
                        let is_open = props.open.as_ref().is_some_and(|(k, i)| *k == g.group_key && *i == g.group_id);
                        html! {
                            <tr class={classes!("group-row", is_open.then_some("open"))}>
                                <td data-label="Group key"><code>{ g.group_key.clone() }</code></td>
                                <td data-label="Group id"><button class="link open-group" onclick={open(g)}
                                    aria-label={format!("Properties of {} {}", g.group_key, g.group_id)}>{ g.group_id.clone() }</button></td>
                                <td data-label="Properties" class="count">{ g.properties.len() }</td>
                            </tr>
                        }
                    }) }</tbody>
                </table>
                if listed.next_after.is_some() {
                    <div class="actions">
                        <button id="groups-more" onclick={show_more} disabled={*more == More::Loading}>{ "Show more" }</button>
                    </div>
                }
                { match &*more {
                    More::Idle => html! {},
                    More::Loading => loading(),
                    More::Failed(message) => failed(message),
                } }
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
    let group = use_state(|| Load::<GroupProfile>::Idle);
    {
        let (state, group) = (state.clone(), group.clone());
        let (key, id) = (props.group_key.clone(), props.group_id.clone());
        use_effect_with(state.connection.clone(), move |conn| {
            let Some(conn) = conn.clone() else { return };
            group.set(Load::Loading);
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                group.set(match api::get_group(&conn, &key, &id, &log).await {
                    Ok(g) => Load::Loaded(g),
                    Err(e) => Load::Failed(e.to_string()),
                });
            });
        });
    }
    let onclose = props.onclose.reform(|_: MouseEvent| ());
    html! {
        <section class="detail" id="group-detail">
            <h2>{ format!("{} {}", props.group_key, props.group_id) }</h2>
            <p class="hint">{ "Group key " }<code>{ props.group_key.clone() }</code>{ ", group id " }<code>{ props.group_id.clone() }</code></p>
            <div class="actions"><button id="close-panel" onclick={onclose}>{ "Close" }</button></div>
            { match &*group {
                Load::Idle | Load::Loading => loading(),
                Load::Failed(message) => failed(message),
                Load::Loaded(g) => properties_table("group-properties", &g.properties),
            } }
        </section>
    }
}
