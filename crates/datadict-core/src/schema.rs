//! The data-dictionary models of spec §2.1–2.7: entity types, schema entries, schemas,
//! property definitions and the vendor metadata that hangs under a namespace key.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The metadata namespace key of this implementation (spec: `com.vendor`). A caller pointing the
/// tools at a dictionary written under another namespace passes that one instead.
pub const DEFAULT_NAMESPACE: &str = "com.vendor";

/// Spec §2.1: what a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntityType {
    Event,
    Profile,
}

impl EntityType {
    pub const ALL: [EntityType; 2] = [EntityType::Event, EntityType::Profile];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Event => "event",
            Self::Profile => "profile",
        }
    }
}

impl fmt::Display for EntityType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an entity type; its message lists the allowed values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown entity type `{0}`: use `event` or `profile`")]
pub struct UnknownEntityType(pub String);

impl FromStr for EntityType {
    type Err = UnknownEntityType;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "event" => Ok(Self::Event),
            "profile" => Ok(Self::Profile),
            other => Err(UnknownEntityType(other.to_owned())),
        }
    }
}

/// Spec §2.4: the JSON type of a property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PropertyType {
    Array,
    Boolean,
    Integer,
    Null,
    Number,
    Object,
    String,
}

impl PropertyType {
    pub const ALL: [PropertyType; 7] = [
        Self::Array,
        Self::Boolean,
        Self::Integer,
        Self::Null,
        Self::Number,
        Self::Object,
        Self::String,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Array => "array",
            Self::Boolean => "boolean",
            Self::Integer => "integer",
            Self::Null => "null",
            Self::Number => "number",
            Self::Object => "object",
            Self::String => "string",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The type with its article, for messages: "an integer", "a string", "null".
    pub fn with_article(self) -> &'static str {
        match self {
            Self::Array => "an array",
            Self::Boolean => "a boolean",
            Self::Integer => "an integer",
            Self::Null => "null",
            Self::Number => "a number",
            Self::Object => "an object",
            Self::String => "a string",
        }
    }
}

impl fmt::Display for PropertyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Spec §2.4, the fields under `metadata.<namespace>` of a property.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PropertyMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<bool>,
}

/// Spec §2.5, the fields under `metadata.<namespace>` of a schema.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EntityMetadata {
    #[serde(rename = "$source", default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contacts: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_contacts: Option<Vec<String>>,
}

/// Spec §2.4: one value of `properties`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PropertyDef {
    #[serde(rename = "type")]
    pub kind: PropertyType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Kept as raw JSON: the vendor key is chosen by the caller (see [`DEFAULT_NAMESPACE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl PropertyDef {
    /// The vendor metadata under `namespace`, or the defaults when absent or malformed
    /// (validation reports malformed metadata; readers fall back to the defaults).
    pub fn vendor(&self, namespace: &str) -> PropertyMetadata {
        vendor_of(self.metadata.as_ref(), namespace)
    }
}

/// Spec §2.3: the value of `schemaJson`. Unlike an entry (§2.2) and a property definition (§2.4),
/// the spec does not forbid other keys in a schema, so they are kept in `extra` and written back
/// after the known fields: a schema is served back with every key it was sent with.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Schema {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Ordered by name so that listings and exports are deterministic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, PropertyDef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// The keys other than `description`, `properties` and `metadata`, in the order sent. It never
    /// holds one of those three names (they would be written twice).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Written by hand rather than derived: a derived `flatten` buffers every key of every schema in
/// serde's private `Content` before sorting them out, which costs time on large dictionaries and
/// code in the wasm builds; this visitor reads each value once, straight into its field.
impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SchemaVisitor;

        impl<'de> serde::de::Visitor<'de> for SchemaVisitor {
            type Value = Schema;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a schema object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Schema, A::Error> {
                use serde::de::Error;
                let mut schema = Schema::default();
                let (mut description, mut properties, mut metadata) = (false, false, false);
                while let Some(key) = map.next_key::<String>()? {
                    // A known field given twice is refused, as a derived implementation does.
                    let seen = match key.as_str() {
                        "description" => std::mem::replace(&mut description, true),
                        "properties" => std::mem::replace(&mut properties, true),
                        "metadata" => std::mem::replace(&mut metadata, true),
                        _ => false,
                    };
                    if seen {
                        return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                    }
                    match key.as_str() {
                        "description" => schema.description = map.next_value()?,
                        "properties" => schema.properties = map.next_value()?,
                        "metadata" => schema.metadata = map.next_value()?,
                        _ => {
                            let value = map.next_value()?;
                            schema.extra.insert(key, value);
                        }
                    }
                }
                Ok(schema)
            }
        }

        deserializer.deserialize_map(SchemaVisitor)
    }
}

impl Schema {
    pub fn vendor(&self, namespace: &str) -> EntityMetadata {
        vendor_of(self.metadata.as_ref(), namespace)
    }
}

fn vendor_of<T: Default + serde::de::DeserializeOwned>(
    metadata: Option<&Map<String, Value>>,
    namespace: &str,
) -> T {
    metadata
        .and_then(|m| m.get(namespace))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// Spec §2.2: one dictionary entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SchemaEntry {
    pub entity_type: EntityType,
    pub name: String,
    pub schema_json: Schema,
}

impl SchemaEntry {
    /// Reads an entry from a JSON value through its text: the same entry or message as
    /// `serde_json::from_value`, but with the one copy of the entry's deserializer that reads the
    /// server's answers; `from_value` would compile a second one into the web app's wasm.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let text = serde_json::to_vec(value).map_err(|e| e.to_string())?;
        serde_json::from_slice(&text).map_err(|e| {
            // The position is in text the user never saw: the message alone, as `from_value` says it.
            let message = e.to_string();
            match message.rfind(" at line ") {
                Some(at) => message[..at].to_owned(),
                None => message,
            }
        })
    }
}

/// Spec §2.6.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListSchemasResponse {
    pub results: Vec<SchemaEntry>,
    /// Always `ok`.
    pub status: String,
}

impl ListSchemasResponse {
    pub fn ok(results: Vec<SchemaEntry>) -> Self {
        Self { results, status: "ok".to_owned() }
    }
}

/// Spec §2.7: the body of every error answer of the application API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    /// Always `error`.
    pub status: String,
}

impl ErrorBody {
    pub fn new(error: impl Into<String>) -> Self {
        Self { error: error.into(), status: "error".to_owned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entry_round_trips_with_vendor_metadata() {
        let raw = json!({
            "entityType": "event",
            "name": "Purchase",
            "schemaJson": {
                "description": "A completed order",
                "properties": {
                    "price": {"type": "number", "metadata": {"com.vendor": {"displayName": "Price"}}}
                },
                "metadata": {"com.vendor": {"tags": ["revenue"], "hidden": true}}
            }
        });
        let entry: SchemaEntry = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(entry.entity_type, EntityType::Event);
        let meta = entry.schema_json.vendor(DEFAULT_NAMESPACE);
        assert_eq!(meta.tags.as_deref(), Some(&["revenue".to_owned()][..]));
        assert_eq!(meta.hidden, Some(true));
        let price = &entry.schema_json.properties.as_ref().unwrap()["price"];
        assert_eq!(price.kind, PropertyType::Number);
        assert_eq!(price.vendor(DEFAULT_NAMESPACE).display_name.as_deref(), Some("Price"));
        assert_eq!(price.vendor("com.other"), PropertyMetadata::default());
        assert_eq!(serde_json::to_value(&entry).unwrap(), raw);
    }

    #[test]
    fn a_schema_keeps_keys_the_spec_does_not_name() {
        let raw = json!({
            "description": "An order",
            "propertes": {"price": {"type": "number"}},
            "x-owner": null,
            "$comment": [1, 2.5, "x"]
        });
        let schema: Schema = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(schema.description.as_deref(), Some("An order"));
        assert_eq!(schema.properties, None);
        assert_eq!(schema.extra.keys().collect::<Vec<_>>(), ["propertes", "x-owner", "$comment"]);
        assert_eq!(serde_json::to_value(&schema).unwrap(), raw);
        // Through text as well, the way the stores keep a schema.
        let text = serde_json::to_string(&schema).unwrap();
        assert_eq!(serde_json::from_str::<Schema>(&text).unwrap(), schema);
        // A known field given twice is still refused, as it was by the derived implementation.
        let twice = serde_json::from_str::<Schema>(r#"{"description": "a", "description": "b"}"#).unwrap_err();
        assert!(twice.to_string().contains("duplicate field `description`"), "{twice}");
        assert!(serde_json::from_value::<Schema>(json!([])).is_err());
    }

    #[test]
    fn entity_type_parses_only_the_two_values() {
        assert_eq!("event".parse::<EntityType>(), Ok(EntityType::Event));
        assert_eq!("profile".parse::<EntityType>(), Ok(EntityType::Profile));
        let err = "events".parse::<EntityType>().unwrap_err();
        assert_eq!(err.to_string(), "unknown entity type `events`: use `event` or `profile`");
    }
}
