//! The user-profile lookup of the Data screen: a user id typed in, its profile read from the
//! server and shown property by property. The id looked up is the address's, so a refresh or a
//! shared link shows the same profile.

use super::reader::{Kind, Reader, Shown};
use super::{field, go, pending, properties_table};
use crate::router::DataView;
use crate::state::{use_app_state, Load};
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
            if let Some(id) = props.id.clone() {
                <Reader kind={Kind::Profile} arg={id} />
            }
        </>
    }
}

/// The profile read, under the form.
pub(crate) fn profile_view(shown: &Shown) -> Html {
    match (shown.load, pending(shown.load)) {
        (Load::Idle, _) => html! {},
        (_, Err(pending)) => pending,
        (_, Ok(answer)) => {
            let p = &answer["results"];
            html! {
                <div id="profile">
                    <h3>{ "Profile of " }<code>{ field(p, "$distinct_id") }</code></h3>
                    { properties_table("profile-properties", &p["$properties"]) }
                </div>
            }
        }
    }
}
