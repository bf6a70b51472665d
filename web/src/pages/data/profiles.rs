//! The user-profile lookup of the Data screen: a user id typed in, its profile read from the
//! server and shown property by property. The id looked up is the address's, so a refresh or a
//! shared link shows the same profile.

use super::reader::{Kind, Reader, Shown};
use super::{field, go, pending, properties_table, Tab};
use crate::router::DataView;
use crate::state::Load;
use yew::prelude::*;

/// The user profile's tab: the form, and the profile of the address's user id if there is one.
pub(crate) fn profile_tab(tab: &Tab, id: Option<String>, oninput: Callback<InputEvent>) -> Html {
    let blank = *tab.blank;
    let onsubmit = {
        let (state, typed, blank) = (tab.state.clone(), tab.typed.clone(), tab.blank.clone());
        Callback::from(move |e: SubmitEvent| {
            e.prevent_default();
            let id = typed.trim().to_owned();
            if id.is_empty() {
                blank.set(true);
                // The answer of the id looked up before (a 404, say) is not this empty field's.
                go(&state, DataView::Profiles(None));
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
                    <input id="profile-id" type="search" value={(*tab.typed).clone()} {oninput} autocomplete="off"
                           aria-invalid={blank.then_some("true")} aria-describedby={blank.then_some("profile-id-error")} />
                    if blank {
                        <p id="profile-id-error" class="field-error">{ "Type a user id to look up." }</p>
                    }
                </div>
                <div class="actions"><button type="submit" id="profile-go">{ "Look up" }</button></div>
            </form>
            if let Some(id) = id {
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
