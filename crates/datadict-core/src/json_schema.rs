//! The draft-07 JSON Schema of one dictionary entry, so that any JSON Schema validator (in CI, in
//! an editor) can check events or profiles against the dictionary without this crate.

use crate::schema::{EntityType, PropertyType, SchemaEntry};
use serde_json::{json, Map, Value};

/// The draft-07 meta-schema URI.
pub const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

/// For an event: the schema of an event record (spec §2.8) whose `event` is the entry's name and
/// whose `properties` carry the required `time`, `distinct_id` and `$insert_id` (FACTS.md rules as
/// far as JSON Schema can say them) plus the defined properties; dropped properties are left out
/// because they never reach the project. For a profile: the schema of the object of profile
/// properties (what a `$set` carries). Additional properties stay allowed in both, as the import
/// allows them.
pub fn entity_json_schema(entry: &SchemaEntry, namespace: &str) -> Value {
    let meta = entry.schema_json.vendor(namespace);
    let mut props = Map::new();
    for (name, def) in entry.schema_json.properties.iter().flatten() {
        let pm = def.vendor(namespace);
        if pm.dropped == Some(true) {
            continue;
        }
        let mut p = Map::new();
        p.insert("type".into(), Value::from(def.kind.as_str()));
        if let Some(t) = &pm.display_name {
            p.insert("title".into(), Value::from(t.as_str()));
        }
        if let Some(d) = &def.description {
            p.insert("description".into(), Value::from(d.as_str()));
        }
        props.insert(name.clone(), Value::Object(p));
    }
    let mut root = Map::new();
    root.insert("$schema".into(), Value::from(DRAFT_07));
    root.insert("title".into(), Value::from(meta.display_name.clone().unwrap_or_else(|| entry.name.clone())));
    if let Some(d) = &entry.schema_json.description {
        root.insert("description".into(), Value::from(d.as_str()));
    }
    match entry.entity_type {
        EntityType::Event => {
            let mut all = Map::new();
            all.insert("time".into(), json!({"type": "number", "description": "seconds or milliseconds since the epoch, not before 1971-01-01"}));
            all.insert("distinct_id".into(), json!({"type": "string"}));
            all.insert("$insert_id".into(), json!({"type": "string", "pattern": "^[A-Za-z0-9-]{1,36}$"}));
            for (k, v) in props {
                all.insert(k, v);
            }
            root.insert("type".into(), Value::from("object"));
            root.insert(
                "properties".into(),
                json!({
                    "event": {"const": entry.name},
                    "properties": {"type": "object", "properties": all, "required": ["time", "distinct_id", "$insert_id"]}
                }),
            );
            root.insert("required".into(), json!(["event", "properties"]));
        }
        EntityType::Profile => {
            root.insert("type".into(), Value::from("object"));
            root.insert("properties".into(), Value::Object(props));
        }
    }
    Value::Object(root)
}

/// The JSON type name a value has in a draft-07 schema (integers are also numbers).
pub fn json_type_of(value: &Value) -> PropertyType {
    match value {
        Value::Null => PropertyType::Null,
        Value::Bool(_) => PropertyType::Boolean,
        Value::Number(n) if n.is_i64() || n.is_u64() => PropertyType::Integer,
        Value::Number(_) => PropertyType::Number,
        Value::String(_) => PropertyType::String,
        Value::Array(_) => PropertyType::Array,
        Value::Object(_) => PropertyType::Object,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_NAMESPACE;

    #[test]
    fn event_and_profile_schemas() {
        let entry: SchemaEntry = serde_json::from_value(json!({"entityType": "event", "name": "Buy", "schemaJson": {
            "description": "an order",
            "properties": {
                "price": {"type": "number", "description": "EUR", "metadata": {"com.vendor": {"displayName": "Price"}}},
                "card": {"type": "string", "metadata": {"com.vendor": {"dropped": true}}}
            },
            "metadata": {"com.vendor": {"displayName": "Purchase"}}
        }}))
        .unwrap();
        let schema = entity_json_schema(&entry, DEFAULT_NAMESPACE);
        assert_eq!(
            schema,
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "title": "Purchase",
                "description": "an order",
                "type": "object",
                "properties": {
                    "event": {"const": "Buy"},
                    "properties": {"type": "object", "properties": {
                        "time": {"type": "number", "description": "seconds or milliseconds since the epoch, not before 1971-01-01"},
                        "distinct_id": {"type": "string"},
                        "$insert_id": {"type": "string", "pattern": "^[A-Za-z0-9-]{1,36}$"},
                        "price": {"type": "number", "title": "Price", "description": "EUR"}
                    }, "required": ["time", "distinct_id", "$insert_id"]}
                },
                "required": ["event", "properties"]
            })
        );
        let profile: SchemaEntry = serde_json::from_value(json!({"entityType": "profile", "name": "$user", "schemaJson": {"properties": {"plan": {"type": "string"}}}})).unwrap();
        assert_eq!(
            entity_json_schema(&profile, DEFAULT_NAMESPACE),
            json!({"$schema": DRAFT_07, "title": "$user", "type": "object", "properties": {"plan": {"type": "string"}}})
        );
        assert_eq!(json_type_of(&json!(1)), PropertyType::Integer);
        assert_eq!(json_type_of(&json!(1.5)), PropertyType::Number);
    }
}
