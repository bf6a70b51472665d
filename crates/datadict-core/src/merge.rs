//! The replace rule of the schemas API (FACTS.md): what a stored schema becomes when a new one is
//! sent for the same entity. The server applies it on every create-or-replace, and the web app uses
//! it to preview an upload, so both see the same result.

use crate::schema::Schema;
use serde_json::{Map, Value};

/// The replace rule of FACTS.md: the new schema replaces the old one, except that entity-level
/// metadata is merged key by key: a key absent from the new schema keeps its old value, and a key
/// sent as `null` is removed. Property metadata is replaced with the property, and `null` there
/// just means absent.
pub fn merge_schema(old: Option<Schema>, mut new: Schema, namespace: &str) -> Schema {
    let mut merged = old.and_then(|o| o.metadata).unwrap_or_default();
    for (key, value) in new.metadata.take().unwrap_or_default() {
        match value {
            Value::Null => {
                merged.remove(&key);
            }
            Value::Object(fields) if key == namespace => {
                let mut vendor = match merged.remove(&key) {
                    Some(Value::Object(old)) => old,
                    _ => Map::new(),
                };
                for (field, v) in fields {
                    if v.is_null() {
                        vendor.remove(&field);
                    } else {
                        vendor.insert(field, v);
                    }
                }
                merged.insert(key, Value::Object(vendor));
            }
            other => {
                merged.insert(key, other);
            }
        }
    }
    new.metadata = (!merged.is_empty()).then_some(merged);
    if let Some(props) = new.properties.as_mut() {
        for def in props.values_mut() {
            if let Some(meta) = def.metadata.as_mut() {
                meta.retain(|_, v| !v.is_null());
                for v in meta.values_mut() {
                    if let Value::Object(fields) = v {
                        fields.retain(|_, v| !v.is_null());
                    }
                }
            }
        }
    }
    new
}


#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Schema {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn replace_keeps_absent_metadata_and_removes_nulls() {
        let old = schema(json!({"description": "old", "properties": {"a": {"type": "string"}},
            "metadata": {"com.vendor": {"tags": ["x"], "hidden": true, "displayName": "Old"}}}));
        let new = schema(json!({"description": "new",
            "metadata": {"com.vendor": {"hidden": null, "displayName": "New"}}}));
        let merged = merge_schema(Some(old), new, "com.vendor");
        assert_eq!(
            serde_json::to_value(merged).unwrap(),
            json!({"description": "new", "metadata": {"com.vendor": {"tags": ["x"], "displayName": "New"}}})
        );
    }

    #[test]
    fn keys_the_spec_does_not_name_are_replaced_like_the_rest() {
        let old = schema(json!({"x-old": 1, "x-both": "old", "metadata": {"com.vendor": {"hidden": true}}}));
        let new = schema(json!({"x-both": "new", "x-null": null}));
        let merged = merge_schema(Some(old), new, "com.vendor");
        assert_eq!(
            serde_json::to_value(merged).unwrap(),
            json!({"metadata": {"com.vendor": {"hidden": true}}, "x-both": "new", "x-null": null})
        );
    }

    #[test]
    fn a_new_schema_loses_its_nulls() {
        let new = schema(json!({"metadata": {"com.vendor": {"hidden": null}},
            "properties": {"p": {"type": "string", "metadata": {"com.vendor": {"hidden": null}}}}}));
        let merged = merge_schema(None, new, "com.vendor");
        assert_eq!(
            serde_json::to_value(merged).unwrap(),
            json!({"metadata": {"com.vendor": {}}, "properties": {"p": {"type": "string", "metadata": {"com.vendor": {}}}}})
        );
    }
}
