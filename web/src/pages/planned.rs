//! The place in the navigation for screens that are specified but not built yet; it says so
//! plainly instead of pretending.

use crate::state::Page;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct PlannedPageProps {
    pub page: Page,
}

#[component]
pub fn PlannedPage(props: &PlannedPageProps) -> Html {
    html! {
        <section class="card">
            <h2>{ props.page.title() }</h2>
            <p>{ "This screen is not built yet. Its place in the navigation is kept so that the layout does not move when it arrives." }</p>
        </section>
    }
}
