//! What the dictionary screen shows, computed from the core's entries without the DOM: one
//! [`Row`] per entity (plus "undocumented" rows for events seen without a schema), the search and
//! filters over them, and where a validation issue belongs in the entity form.

use datadict_core::issue::child_path;
use datadict_core::{EntityType, SchemaEntry};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The status an entity shows; dropped wins over hidden (a dropped event is not stored at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    Visible,
    Hidden,
    Dropped,
    /// Seen in the last 30 days (read API) but without a schema.
    Undocumented,
}

impl Status {
    pub const ALL: [Status; 4] = [Status::Visible, Status::Hidden, Status::Dropped, Status::Undocumented];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Visible => "visible",
            Self::Hidden => "hidden",
            Self::Dropped => "dropped",
            Self::Undocumented => "undocumented",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// One line of the dictionary table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub entity_type: EntityType,
    pub name: String,
    /// The display name, falling back to the name (spec §2.5).
    pub display: String,
    pub description: String,
    pub tags: Vec<String>,
    pub contacts: Vec<String>,
    pub team_contacts: Vec<String>,
    pub status: Status,
    pub properties: usize,
    /// 30-day volume; `None` when the read API gave none (unknown, not zero).
    pub volume: Option<i64>,
    /// Lowercased name, display name, description and tags, searched by [`filter_rows`].
    haystack: String,
    /// The lowercased display name, computed once: sorting 5,000 rows would otherwise lowercase
    /// two strings per comparison.
    display_key: String,
}

impl Row {
    /// A key unique within the dictionary, for keyed rendering and selection.
    pub fn key(&self) -> String {
        format!("{}:{}", self.entity_type, self.name)
    }
}

/// Builds the rows of every entity, then one undocumented row per event name that has volume but
/// no schema. `namespace` is the vendor metadata key (FACTS.md).
pub fn build_rows(entries: &[SchemaEntry], volumes: Option<&HashMap<String, i64>>, namespace: &str) -> Vec<Row> {
    let mut rows = Vec::with_capacity(entries.len());
    let mut documented = HashSet::new();
    for entry in entries {
        let meta = entry.schema_json.vendor(namespace);
        let status = if meta.dropped == Some(true) {
            Status::Dropped
        } else if meta.hidden == Some(true) {
            Status::Hidden
        } else {
            Status::Visible
        };
        if entry.entity_type == EntityType::Event {
            documented.insert(entry.name.as_str());
        }
        let display = meta.display_name.filter(|d| !d.is_empty()).unwrap_or_else(|| entry.name.clone());
        let description = entry.schema_json.description.clone().unwrap_or_default();
        let tags = meta.tags.unwrap_or_default();
        let volume = match entry.entity_type {
            EntityType::Event => volumes.map(|v| v.get(&entry.name).copied().unwrap_or(0)),
            EntityType::Profile => None,
        };
        rows.push(Row {
            haystack: haystack(&entry.name, &display, &description, &tags),
            display_key: lowercase(&display),
            entity_type: entry.entity_type,
            name: entry.name.clone(),
            display,
            description,
            tags,
            contacts: meta.contacts.unwrap_or_default(),
            team_contacts: meta.team_contacts.unwrap_or_default(),
            status,
            properties: entry.schema_json.properties.as_ref().map_or(0, |p| p.len()),
            volume,
        });
    }
    if let Some(volumes) = volumes {
        let mut seen: Vec<(&String, &i64)> = volumes.iter().filter(|(name, _)| !documented.contains(name.as_str())).collect();
        datadict_core::order::sort(&mut seen);
        for (name, count) in seen {
            rows.push(Row {
                haystack: haystack(name, name, "", &[]),
                display_key: lowercase(name),
                entity_type: EntityType::Event,
                name: name.clone(),
                display: name.clone(),
                description: String::new(),
                tags: Vec::new(),
                contacts: Vec::new(),
                team_contacts: Vec::new(),
                status: Status::Undocumented,
                properties: 0,
                volume: Some(*count),
            });
        }
    }
    rows
}

/// `s` in lower case, as `str::to_lowercase` would give it: ASCII here, anything else by the
/// browser's `toLowerCase` (the same Unicode mapping), so that the wasm carries no case tables.
pub fn lowercase(s: &str) -> String {
    if s.is_ascii() {
        s.to_ascii_lowercase()
    } else {
        String::from(js_sys::JsString::from(s).to_lower_case())
    }
}

fn haystack(name: &str, display: &str, description: &str, tags: &[String]) -> String {
    let mut text = String::with_capacity(name.len() + display.len() + description.len() + 16);
    for part in [name, display, description].into_iter().chain(tags.iter().map(String::as_str)) {
        text.push_str(&lowercase(part));
        text.push('\n');
    }
    text
}

/// Every tag used by rows of `entity_type`, sorted, for the tag filter.
pub fn all_tags(rows: &[Row], entity_type: EntityType) -> Vec<String> {
    // Inserted, not collected: collecting into a B-tree sorts first, one more copy of the
    // standard sort in the wasm (see `datadict_core::order`).
    let mut tags: BTreeSet<&String> = BTreeSet::new();
    tags.extend(rows.iter().filter(|r| r.entity_type == entity_type).flat_map(|r| r.tags.iter()));
    tags.into_iter().cloned().collect()
}

/// The column the table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Display,
    Name,
    Status,
    Properties,
    Volume,
}

impl SortKey {
    pub const ALL: [SortKey; 5] = [SortKey::Display, SortKey::Name, SortKey::Status, SortKey::Properties, SortKey::Volume];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Display => "display",
            Self::Name => "name",
            Self::Status => "status",
            Self::Properties => "properties",
            Self::Volume => "volume",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Display => "Display name",
            Self::Name => "Name",
            Self::Status => "Status",
            Self::Properties => "Property count",
            Self::Volume => "30-day volume",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// What the user narrowed the table to.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub entity_type: EntityType,
    /// Matched case-insensitively against name, display name, description and tags; every
    /// whitespace-separated word must match.
    pub query: String,
    pub status: Option<Status>,
    pub tag: Option<String>,
    pub sort: SortKey,
    pub descending: bool,
}

impl Default for Filter {
    fn default() -> Self {
        Self { entity_type: EntityType::Event, query: String::new(), status: None, tag: None, sort: SortKey::Display, descending: false }
    }
}

/// The indices of the rows that pass `filter`, in display order.
pub fn filter_rows(rows: &[Row], filter: &Filter) -> Vec<usize> {
    let query = lowercase(&filter.query);
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut out: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.entity_type == filter.entity_type)
        .filter(|(_, r)| filter.status.is_none_or(|s| r.status == s))
        .filter(|(_, r)| filter.tag.as_ref().is_none_or(|t| r.tags.contains(t)))
        .filter(|(_, r)| words.iter().all(|w| r.haystack.contains(w)))
        .map(|(i, _)| i)
        .collect();
    let by = |a: &Row, b: &Row| match filter.sort {
        SortKey::Display => a.display_key.cmp(&b.display_key),
        SortKey::Name => a.name.cmp(&b.name),
        SortKey::Status => a.status.cmp(&b.status),
        SortKey::Properties => a.properties.cmp(&b.properties),
        SortKey::Volume => a.volume.cmp(&b.volume),
    };
    // Ties fall back to the name so that the order is stable across keystrokes.
    datadict_core::order::sort_by(&mut out, &|&a, &b| by(&rows[a], &rows[b]).then_with(|| rows[a].name.cmp(&rows[b].name)));
    if filter.descending {
        out.reverse();
    }
    out
}

/// A field of the entity form, where a validation issue is shown.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Field {
    Name,
    Description,
    DisplayName,
    Tags,
    Contacts,
    TeamContacts,
    Hidden,
    Dropped,
    /// The property with this name (its row in the form).
    Property(String),
    /// Anything else; shown above the form's buttons.
    Form,
}

/// Where an issue found by the core at `path` (the API's dotted path, see
/// `datadict_core::issue::child_path`) belongs in the entity form.
pub fn field_of(path: &str, namespace: &str, property_names: &[String]) -> Field {
    if path == "name" {
        return Field::Name;
    }
    if path == "schemaJson.description" {
        return Field::Description;
    }
    let vendor = child_path("schemaJson.metadata", namespace);
    if let Some(rest) = path.strip_prefix(&vendor) {
        let key = rest.trim_start_matches('.');
        let key = key.split(['.', '[']).next().unwrap_or_default();
        return match key {
            "displayName" => Field::DisplayName,
            "tags" => Field::Tags,
            "contacts" => Field::Contacts,
            "teamContacts" => Field::TeamContacts,
            "hidden" => Field::Hidden,
            "dropped" => Field::Dropped,
            _ => Field::Form,
        };
    }
    for name in property_names {
        let prefix = child_path("schemaJson.properties", name);
        if let Some(rest) = path.strip_prefix(&prefix) {
            if rest.is_empty() || rest.starts_with('.') || rest.starts_with('[') {
                return Field::Property(name.clone());
            }
        }
    }
    Field::Form
}

#[cfg(test)]
mod tests {
    use super::*;
    use datadict_core::DEFAULT_NAMESPACE;
    use serde_json::json;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn entries() -> Vec<SchemaEntry> {
        serde_json::from_value(json!([
            {"entityType": "event", "name": "Purchase", "schemaJson": {"description": "A completed order",
                "properties": {"price": {"type": "number"}, "sku": {"type": "string"}},
                "metadata": {"com.vendor": {"displayName": "Order placed", "tags": ["revenue"]}}}},
            {"entityType": "event", "name": "Debug Ping", "schemaJson": {"metadata": {"com.vendor": {"dropped": true, "hidden": true}}}},
            {"entityType": "event", "name": "Page View", "schemaJson": {"metadata": {"com.vendor": {"hidden": true, "tags": ["web"]}}}},
            {"entityType": "profile", "name": "$user", "schemaJson": {"properties": {"plan": {"type": "string"}}}}
        ]))
        .unwrap()
    }

    fn names(rows: &[Row], filter: &Filter) -> Vec<String> {
        filter_rows(rows, filter).into_iter().map(|i| rows[i].name.clone()).collect()
    }

    /// The browser's mapping agrees with Rust's, ASCII or not.
    #[wasm_bindgen_test]
    fn lowercase_is_rusts_lowercase() {
        for s in ["Order Placed", "ÉTÉ À Paris", "ΣΊΣΥΦΟΣ", "İstanbul", "Straße", ""] {
            assert_eq!(lowercase(s), s.to_lowercase(), "{s}");
        }
    }

    #[wasm_bindgen_test]
    fn rows_show_display_names_status_and_undocumented_events() {
        let volumes = HashMap::from([("Purchase".to_owned(), 7), ("Checkout".to_owned(), 3)]);
        let rows = build_rows(&entries(), Some(&volumes), DEFAULT_NAMESPACE);
        let purchase = rows.iter().find(|r| r.name == "Purchase").unwrap();
        assert_eq!((purchase.display.as_str(), purchase.properties, purchase.volume), ("Order placed", 2, Some(7)));
        assert_eq!(rows.iter().find(|r| r.name == "Debug Ping").unwrap().status, Status::Dropped);
        assert_eq!(rows.iter().find(|r| r.name == "Page View").unwrap().volume, Some(0));
        let checkout = rows.iter().find(|r| r.name == "Checkout").unwrap();
        assert_eq!((checkout.status, checkout.volume), (Status::Undocumented, Some(3)));
        // Without a read API the volume is unknown, not zero, and nothing is "undocumented".
        let rows = build_rows(&entries(), None, DEFAULT_NAMESPACE);
        assert!(rows.iter().all(|r| r.volume.is_none() && r.status != Status::Undocumented));
    }

    #[wasm_bindgen_test]
    fn search_filters_and_sorting() {
        let rows = build_rows(&entries(), None, DEFAULT_NAMESPACE);
        let f = Filter::default();
        assert_eq!(names(&rows, &f), ["Debug Ping", "Purchase", "Page View"]);
        assert_eq!(names(&rows, &Filter { query: "ORDER".into(), ..f.clone() }), ["Purchase"]);
        assert_eq!(names(&rows, &Filter { query: "revenue completed".into(), ..f.clone() }), ["Purchase"]);
        assert_eq!(names(&rows, &Filter { status: Some(Status::Hidden), ..f.clone() }), ["Page View"]);
        assert_eq!(names(&rows, &Filter { tag: Some("web".into()), ..f.clone() }), ["Page View"]);
        assert_eq!(names(&rows, &Filter { sort: SortKey::Name, descending: true, ..f.clone() }), ["Purchase", "Page View", "Debug Ping"]);
        assert_eq!(names(&rows, &Filter { entity_type: EntityType::Profile, ..f }), ["$user"]);
        assert_eq!(all_tags(&rows, EntityType::Event), ["revenue", "web"]);
    }

    #[wasm_bindgen_test]
    fn issues_land_at_their_fields() {
        let props = vec!["price".to_owned(), "odd key".to_owned()];
        let check = |path: &str, expected: Field| assert_eq!(field_of(path, DEFAULT_NAMESPACE, &props), expected, "{path}");
        check("name", Field::Name);
        check("schemaJson.description", Field::Description);
        check(r#"schemaJson.metadata["com.vendor"].contacts[1]"#, Field::Contacts);
        check(r#"schemaJson.metadata["com.vendor"].dropped"#, Field::Dropped);
        check(r#"schemaJson.metadata["com.vendor"].teamContacts"#, Field::TeamContacts);
        check("schemaJson.properties.price.type", Field::Property("price".into()));
        check(r#"schemaJson.properties["odd key"].description"#, Field::Property("odd key".into()));
        check("schemaJson.properties.pricey.type", Field::Form);
        check("schemaJson", Field::Form);
    }
}
