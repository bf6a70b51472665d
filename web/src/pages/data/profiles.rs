//! The user-profile lookup of the Data screen: a user id typed in, its profile read from the
//! server and shown property by property. The id looked up is the address's, so a refresh or a
//! shared link shows the same profile.

use super::{failed, go, loading, properties_table};
use crate::api;
use crate::components::log::log_request;
use crate::router::DataView;
use crate::state::{use_app_state, Load};
use datadict_core::readback::UserProfile;
use web_sys::HtmlInputElement;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct ProfileLookupProps {
    /// The `distinct_id` of the address, if one was looked up.
    pub id: Option<String>,
}

#[component]
pub fn ProfileLookup(props: &ProfileLookupProps) -> Html {
    let state = use_app_state();
    let typed = use_state(|| props.id.clone().unwrap_or_default());
    let blank = use_state(|| false);
    let profile = use_state(|| Load::<UserProfile>::Idle);
    {
        let (state, profile) = (state.clone(), profile.clone());
        use_effect_with(
            (state.connection.clone(), props.id.clone()),
            move |(conn, id)| {
                let (Some(conn), Some(id)) = (conn.clone(), id.clone()) else {
                    profile.set(Load::Idle);
                    return;
                };
                profile.set(Load::Loading);
                wasm_bindgen_futures::spawn_local(async move {
                    let log = log_request(&state);
                    profile.set(match api::get_profile(&conn, &id, &log).await {
                        Ok(p) => Load::Loaded(p),
                        Err(e) => Load::Failed(e.to_string()),
                    });
                });
            },
        );
    }
    let oninput = {
        let (typed, blank) = (typed.clone(), blank.clone());
        Callback::from(move |e: InputEvent| {
            typed.set(e.target_unchecked_into::<HtmlInputElement>().value());
            blank.set(false);
        })
    };
    let onsubmit = {
        let (state, typed, blank) = (state.clone(), typed.clone(), blank.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let id = typed.trim().to_owned();
            if id.is_empty() {
                blank.set(true);
            } else {
                go(&state, DataView::Profiles(Some(id)));
            }
        })
    };
    let result = match &*profile {
        Load::Idle => html! {},
        Load::Loading => loading(),
        Load::Failed(message) => failed(message),
        Load::Loaded(p) => html! {
            <div id="profile">
                <h3>{ "Profile of " }<code>{ p.distinct_id.clone() }</code></h3>
                { properties_table("profile-properties", &p.properties) }
            </div>
        },
    };
    html! {
        <>
            <form id="profile-lookup" {onsubmit} novalidate=true>
                <div class={classes!("field", blank.then_some("invalid"))}>
                    <label for="profile-id">{ "User id (the distinct_id the events were sent with)" }</label>
                    <input id="profile-id" type="search" value={(*typed).clone()} {oninput} autocomplete="off"
                           aria-invalid={blank.then_some("true")} aria-describedby={blank.then_some("profile-id-error")} />
                    if *blank {
                        <p id="profile-id-error" class="field-error">{ "Type a user id to look up." }</p>
                    }
                </div>
                <div class="actions"><button type="submit" id="profile-go">{ "Look up" }</button></div>
            </form>
            { result }
        </>
    }
}
