//! Tests of the entity form: the draft's round trip through the API shape, issues at their
//! fields, and the mounted form showing the core's error and names as text.

use super::*;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn a_draft_round_trips_through_the_api_shape() {
    let entry: SchemaEntry = serde_json::from_value(json!({
        "entityType": "event", "name": "Purchase",
        "schemaJson": {"description": "d", "properties": {"price": {"type": "number",
            "metadata": {"com.vendor": {"displayName": "Price", "hidden": true}}}},
            "metadata": {"com.vendor": {"$source": "crm", "tags": ["a", "b"], "hidden": false, "dropped": false}},
            "x-owner": {"team": "growth"}}
    }))
    .unwrap();
    let draft = Draft::from_entry(&entry, DEFAULT_NAMESPACE);
    assert_eq!(draft.tags, "a, b");
    let back: SchemaEntry = serde_json::from_value(draft.to_value(EntityType::Event, DEFAULT_NAMESPACE)).unwrap();
    assert_eq!(back, entry);
}

#[wasm_bindgen_test]
fn validation_issues_are_attached_to_their_fields() {
    let draft = Draft {
        name: " ".into(),
        contacts: "ops@example.com, not-an-address".into(),
        properties: vec![
            PropertyDraft { id: 1, name: "".into(), kind: PropertyType::String, description: "".into(), display_name: "".into(), hidden: false, dropped: false },
            PropertyDraft { id: 2, name: "x".into(), kind: PropertyType::String, description: "".into(), display_name: "".into(), hidden: false, dropped: false },
            PropertyDraft { id: 3, name: "x".into(), kind: PropertyType::Number, description: "".into(), display_name: "".into(), hidden: false, dropped: false },
        ],
        ..Draft::default()
    };
    let issues = issues_by_field(&draft, EntityType::Event, DEFAULT_NAMESPACE);
    let fields: Vec<&Field> = issues.iter().map(|(f, _)| f).collect();
    assert!(fields.contains(&&Field::Name), "{issues:?}");
    assert!(fields.contains(&&Field::Contacts), "{issues:?}");
    assert!(fields.contains(&&Field::Property(String::new())), "{issues:?}");
    assert!(fields.contains(&&Field::Property("x".into())), "{issues:?}");
    // A profile cannot be dropped: the core's events-only rule lands at the toggle.
    let profile = Draft { name: "$user".into(), dropped: true, ..Draft::default() };
    let mut value = profile.to_value(EntityType::Profile, DEFAULT_NAMESPACE);
    value["schemaJson"]["metadata"]["com.vendor"]["dropped"] = json!(true);
    let issues = validate_schema_entry(&value, &SchemaRules::default());
    assert!(issues.iter().any(|i| field_of(&i.path, DEFAULT_NAMESPACE, &[]) == Field::Dropped), "{issues:?}");
    // A clean draft has none.
    let ok = Draft { name: "Sign up".into(), ..Draft::default() };
    assert!(issues_by_field(&ok, EntityType::Event, DEFAULT_NAMESPACE).is_empty());
}

/// Mounts the form inside a state provider, as the app does.
#[component]
fn Harness() -> Html {
    let state = use_reducer(crate::state::AppState::default);
    let entry: SchemaEntry = serde_json::from_value(json!({
        "entityType": "event", "name": "<i>Checkout</i>",
        "schemaJson": {"metadata": {"com.vendor": {"contacts": ["nobody"]}}}
    }))
    .unwrap();
    html! {
        <ContextProvider<crate::state::StateHandle> context={state}>
            <EntityForm entity_type={EntityType::Event} initial={Some(entry)} onsaved={Callback::noop()} oncancel={Callback::noop()} />
        </ContextProvider<crate::state::StateHandle>>
    }
}

#[wasm_bindgen_test]
async fn the_form_shows_the_core_error_at_its_field_and_names_as_text() {
    let document = web_sys::window().unwrap().document().unwrap();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    yew::Renderer::<Harness>::with_root(root.clone()).render();
    // Rendering is scheduled: wait for the form to appear (bounded, never a fixed sleep).
    let mut tries = 0;
    while root.query_selector("#entity-contacts-errors").unwrap().is_none() {
        tries += 1;
        assert!(tries < 500, "the form never showed the contact error: {}", root.inner_html());
        yew::platform::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let errors = root.query_selector("#entity-contacts-errors").unwrap().unwrap().text_content().unwrap();
    assert!(errors.contains("`nobody` is not an e-mail address"), "{errors}");
    assert!(root.query_selector("#save-entity").unwrap().unwrap().has_attribute("disabled"));
    // The name is text: no <i> element was made from it.
    assert!(root.query_selector("i").unwrap().is_none());
    assert!(root.text_content().unwrap().contains("<i>Checkout</i>"));
    assert_eq!(root.query_selector_all(".field-errors").unwrap().length(), 1, "only the contacts field has an error");
}
