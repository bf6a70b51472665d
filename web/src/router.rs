//! The app's addresses: every screen and every opened entity as a hash route (`#/dictionary/event/Purchase`),
//! parsed and written without the DOM, and kept in step with the browser's history by [`use_hash_history`].
//!
//! Hash routing works under any path prefix of a static host, since the server never sees the part
//! after `#`. The router is written here rather than taken from `yew-router`: the app must stay
//! under its 400 KB gzipped wasm budget, and these few routes need no more than this file.

use crate::state::{use_app_state, Action, Page};
use datadict_core::EntityType;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

/// What the dictionary screen has open beside its table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Panel {
    None,
    /// The detail of the entity with this name.
    Detail(String),
    Edit(String),
    New,
    /// A new schema for an undocumented event, its name filled in.
    Document(String),
    Bulk,
}

/// What the Data screen shows, and which profile or table is open on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataView {
    /// The user-profile lookup, with the `distinct_id` looked up.
    Profiles(Option<String>),
    /// The group profiles, with one open by its `$group_key` and `$group_id`.
    Groups(Option<(String, String)>),
    /// The lookup tables, with one open by its id.
    Tables(Option<String>),
}

/// What the Data quality screen has open beside its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QualityView {
    /// The screen alone.
    Overview,
    /// Schemas drafted from what arrived, in the bulk-upload preview: for every undocumented
    /// event and unknown property, or for one event.
    Draft(Option<String>),
}

/// One address of the app.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Route {
    #[default]
    Settings,
    Dictionary(EntityType, Panel),
    Data(DataView),
    Quality(QualityView),
    Import,
    Warehouse,
    Migrate,
}

impl Route {
    /// The screen this address shows.
    pub fn page(&self) -> Page {
        match self {
            Self::Settings => Page::Settings,
            Self::Dictionary(..) => Page::Dictionary,
            Self::Data(_) => Page::Data,
            Self::Quality(_) => Page::Quality,
            Self::Import => Page::Import,
            Self::Warehouse => Page::Warehouse,
            Self::Migrate => Page::Migrate,
        }
    }

    /// The address of a screen as the menu opens it.
    pub fn of_page(page: Page) -> Self {
        match page {
            Page::Settings => Self::Settings,
            Page::Dictionary => Self::Dictionary(EntityType::Event, Panel::None),
            Page::Data => Self::Data(DataView::Profiles(None)),
            Page::Quality => Self::Quality(QualityView::Overview),
            Page::Import => Self::Import,
            Page::Warehouse => Self::Warehouse,
            Page::Migrate => Self::Migrate,
        }
    }

    /// The hash of this address, `#/...`. Entity names are percent-encoded, `~` included, so that
    /// no name can be read as one of the `~new` and `~bulk` segments.
    pub fn to_hash(&self) -> String {
        match self {
            Self::Settings => "#/settings".into(),
            Self::Import => "#/import".into(),
            Self::Warehouse => "#/warehouse".into(),
            Self::Migrate => "#/migrate".into(),
            Self::Quality(QualityView::Overview) => "#/quality".into(),
            Self::Quality(QualityView::Draft(None)) => "#/quality/draft".into(),
            Self::Quality(QualityView::Draft(Some(event))) => format!("#/quality/draft/{}", encode(event)),
            Self::Data(view) => match view {
                DataView::Profiles(None) => "#/data/profiles".into(),
                DataView::Profiles(Some(id)) => format!("#/data/profiles/{}", encode(id)),
                DataView::Groups(None) => "#/data/groups".into(),
                DataView::Groups(Some((key, id))) => format!("#/data/groups/{}/{}", encode(key), encode(id)),
                DataView::Tables(None) => "#/data/tables".into(),
                DataView::Tables(Some(id)) => format!("#/data/tables/{}", encode(id)),
            },
            Self::Dictionary(t, panel) => {
                let base = format!("#/dictionary/{t}");
                match panel {
                    Panel::None => base,
                    Panel::Detail(name) => format!("{base}/{}", encode(name)),
                    Panel::Edit(name) => format!("{base}/{}/edit", encode(name)),
                    Panel::New => format!("{base}/~new"),
                    Panel::Document(name) => format!("{base}/~new/{}", encode(name)),
                    Panel::Bulk => format!("{base}/~bulk"),
                }
            }
        }
    }

    /// Reads a hash (with or without its `#`). Anything unknown is the settings screen, the one
    /// screen that needs nothing, rather than an error page.
    pub fn parse(hash: &str) -> Self {
        let path = hash.trim_start_matches('#').trim_start_matches('/');
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            ["import"] => Self::Import,
            ["warehouse"] => Self::Warehouse,
            ["migrate"] => Self::Migrate,
            ["quality", "draft"] => Self::Quality(QualityView::Draft(None)),
            ["quality", "draft", event] => Self::Quality(QualityView::Draft(decode(event).filter(|n| !n.is_empty()))),
            ["quality", ..] => Self::Quality(QualityView::Overview),
            ["data", rest @ ..] => {
                let name = |s: &str| decode(s).filter(|n| !n.is_empty());
                Self::Data(match rest {
                    ["groups", key, id] => DataView::Groups(name(key).zip(name(id))),
                    ["groups", ..] => DataView::Groups(None),
                    ["tables", id] => DataView::Tables(name(id)),
                    ["tables", ..] => DataView::Tables(None),
                    ["profiles", id] => DataView::Profiles(name(id)),
                    _ => DataView::Profiles(None),
                })
            }
            ["dictionary", rest @ ..] => {
                let t = rest.first().and_then(|t| t.parse().ok()).unwrap_or(EntityType::Event);
                let name = |s: &str| decode(s).filter(|n| !n.is_empty());
                let panel = match rest.get(1..).unwrap_or_default() {
                    ["~new"] => Panel::New,
                    ["~bulk"] => Panel::Bulk,
                    ["~new", n] => name(n).map_or(Panel::New, Panel::Document),
                    [n, "edit"] => name(n).map_or(Panel::None, Panel::Edit),
                    [n] => name(n).map_or(Panel::None, Panel::Detail),
                    _ => Panel::None,
                };
                Self::Dictionary(t, panel)
            }
            _ => Self::Settings,
        }
    }
}

/// Percent-encodes every byte but ASCII letters, digits, `-`, `_` and `.`.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Reverses [`encode`] (and any other percent-encoding); `None` for a broken escape or bytes that
/// are not UTF-8.
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn location_hash() -> String {
    web_sys::window().and_then(|w| w.location().hash().ok()).unwrap_or_default()
}

/// Keeps the state's route and the address bar in step: the address is read once at start and on
/// every Back or Forward (`popstate`), and each new route is pushed as a history entry. A route
/// equal to the address is never pushed, so Back does not bounce.
#[hook]
pub fn use_hash_history() {
    let state = use_app_state();
    {
        let state = state.clone();
        use_effect_with((), move |_| {
            state.dispatch(Action::Go(Route::parse(&location_hash())));
            let listener = Closure::<dyn Fn()>::new(move || state.dispatch(Action::Go(Route::parse(&location_hash()))));
            let window = web_sys::window();
            if let Some(w) = &window {
                let _ = w.add_event_listener_with_callback("popstate", listener.as_ref().unchecked_ref());
            }
            move || {
                if let Some(w) = window {
                    let _ = w.remove_event_listener_with_callback("popstate", listener.as_ref().unchecked_ref());
                }
            }
        });
    }
    use_effect_with(state.route.clone(), |route| {
        let hash = route.to_hash();
        if Route::parse(&location_hash()) != *route {
            if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
                let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&hash));
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn check(route: Route, hash: &str) {
        assert_eq!(route.to_hash(), hash);
        assert_eq!(Route::parse(hash), route, "{hash}");
    }

    #[wasm_bindgen_test]
    fn every_route_round_trips_through_its_hash() {
        check(Route::Settings, "#/settings");
        check(Route::Import, "#/import");
        check(Route::Warehouse, "#/warehouse");
        check(Route::Migrate, "#/migrate");
        check(Route::Quality(QualityView::Overview), "#/quality");
        check(Route::Quality(QualityView::Draft(None)), "#/quality/draft");
        check(Route::Quality(QualityView::Draft(Some("Sign Up".into()))), "#/quality/draft/Sign%20Up");
        check(Route::Data(DataView::Profiles(None)), "#/data/profiles");
        check(Route::Data(DataView::Profiles(Some("user 1/é".into()))), "#/data/profiles/user%201%2F%C3%A9");
        check(Route::Data(DataView::Groups(None)), "#/data/groups");
        check(Route::Data(DataView::Groups(Some(("Company".into(), "a/b".into())))), "#/data/groups/Company/a%2Fb");
        check(Route::Data(DataView::Tables(None)), "#/data/tables");
        check(Route::Data(DataView::Tables(Some("0b6c-1".into()))), "#/data/tables/0b6c-1");
        check(Route::Dictionary(EntityType::Event, Panel::None), "#/dictionary/event");
        check(Route::Dictionary(EntityType::Profile, Panel::Detail("$user".into())), "#/dictionary/profile/%24user");
        check(Route::Dictionary(EntityType::Event, Panel::Detail("Page View".into())), "#/dictionary/event/Page%20View");
        check(Route::Dictionary(EntityType::Event, Panel::Edit("a/b".into())), "#/dictionary/event/a%2Fb/edit");
        check(Route::Dictionary(EntityType::Event, Panel::New), "#/dictionary/event/~new");
        check(Route::Dictionary(EntityType::Event, Panel::Bulk), "#/dictionary/event/~bulk");
        check(Route::Dictionary(EntityType::Event, Panel::Document("Web Import".into())), "#/dictionary/event/~new/Web%20Import");
        // A name that looks like a keyword is encoded, so it stays a name.
        check(Route::Dictionary(EntityType::Event, Panel::Detail("~new".into())), "#/dictionary/event/%7Enew");
        check(Route::Dictionary(EntityType::Event, Panel::Detail("Käse ✓".into())), "#/dictionary/event/K%C3%A4se%20%E2%9C%93");
    }

    #[wasm_bindgen_test]
    fn unknown_or_broken_addresses_fall_back_to_a_screen() {
        assert_eq!(Route::parse(""), Route::Settings);
        assert_eq!(Route::parse("#/nowhere"), Route::Settings);
        assert_eq!(Route::parse("#/dictionary"), Route::Dictionary(EntityType::Event, Panel::None));
        assert_eq!(Route::parse("#/dictionary/event/%ZZ"), Route::Dictionary(EntityType::Event, Panel::None));
        assert_eq!(Route::parse("#/dictionary/event/%FF"), Route::Dictionary(EntityType::Event, Panel::None));
        assert_eq!(Route::parse("#/data"), Route::Data(DataView::Profiles(None)));
        assert_eq!(Route::parse("#/data/groups/Company"), Route::Data(DataView::Groups(None)));
        assert_eq!(Route::parse("#/data/groups/Company/%ZZ"), Route::Data(DataView::Groups(None)));
        assert_eq!(Route::parse("#/data/tables/a/b"), Route::Data(DataView::Tables(None)));
    }
}
