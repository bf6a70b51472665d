//! A diff between two dictionaries, for review before applying one over the other: entities added
//! and removed, and for entities in both, every field that changed (dotted paths into
//! `schemaJson`, as validation issues use).

use crate::issue::child_path;
use crate::schema::{EntityType, SchemaEntry};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// An entity, named by type and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntityKey {
    pub entity_type: EntityType,
    pub name: String,
}

/// One changed field: absent on a side is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// The field's path inside `schemaJson`, e.g. `properties.price.type`.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
}

/// The changes of one entity present in both dictionaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntityChange {
    #[serde(flatten)]
    pub entity: EntityKey,
    pub changes: Vec<FieldChange>,
}

/// What turns `old` into `new`, in type-then-name order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DictionaryDiff {
    pub added: Vec<SchemaEntry>,
    pub removed: Vec<EntityKey>,
    pub changed: Vec<EntityChange>,
}

impl DictionaryDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Compares two dictionaries. Objects are compared key by key (key order does not matter);
/// arrays and scalars as wholes.
pub fn diff_dictionaries(old: &[SchemaEntry], new: &[SchemaEntry]) -> DictionaryDiff {
    // Built by inserting, not by `collect`: collecting into a B-tree sorts first, which puts one
    // more copy of the standard sort into the web app's wasm (see `order`). A later entry with
    // the same key wins either way.
    let index = |entries: &[SchemaEntry]| -> BTreeMap<EntityKey, SchemaEntry> {
        let mut index = BTreeMap::new();
        index.extend(entries.iter().map(|e| (EntityKey { entity_type: e.entity_type, name: e.name.clone() }, e.clone())));
        index
    };
    let (old, new) = (index(old), index(new));
    let mut diff = DictionaryDiff::default();
    for (key, entry) in &new {
        match old.get(key) {
            None => diff.added.push(entry.clone()),
            Some(before) => {
                let mut changes = Vec::new();
                let a = serde_json::to_value(&before.schema_json).expect("a schema serializes");
                let b = serde_json::to_value(&entry.schema_json).expect("a schema serializes");
                diff_values("", Some(&a), Some(&b), &mut changes);
                if !changes.is_empty() {
                    diff.changed.push(EntityChange { entity: key.clone(), changes });
                }
            }
        }
    }
    diff.removed = old.keys().filter(|k| !new.contains_key(*k)).cloned().collect();
    diff
}

fn diff_values(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<FieldChange>) {
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            // Inserted, not collected, for the reason given in `diff_dictionaries`.
            let mut keys = std::collections::BTreeSet::new();
            keys.extend(x.keys().chain(y.keys()));
            for k in keys {
                diff_values(&child_path(path, k), x.get(k), y.get(k), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(FieldChange { path: path.to_owned(), old: a.cloned(), new: b.cloned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(v: Value) -> Vec<SchemaEntry> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn added_removed_and_changed_fields() {
        let old = entries(json!([
            {"entityType": "event", "name": "A", "schemaJson": {"properties": {"p": {"type": "string"}, "q": {"type": "number"}}, "metadata": {"com.vendor": {"tags": ["x"]}}}},
            {"entityType": "event", "name": "Gone", "schemaJson": {}},
            {"entityType": "profile", "name": "$user", "schemaJson": {"description": "same"}}
        ]));
        let new = entries(json!([
            {"entityType": "profile", "name": "$user", "schemaJson": {"description": "same"}},
            {"entityType": "event", "name": "A", "schemaJson": {"description": "new", "properties": {"p": {"type": "integer"}, "r": {"type": "null"}}, "metadata": {"com.vendor": {"tags": ["x", "y"]}}}},
            {"entityType": "event", "name": "New", "schemaJson": {}}
        ]));
        let d = diff_dictionaries(&old, &new);
        assert_eq!(d.added.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["New"]);
        assert_eq!(d.removed, [EntityKey { entity_type: EntityType::Event, name: "Gone".into() }]);
        assert_eq!(d.changed.len(), 1);
        let changes: Vec<(&str, Option<&Value>, Option<&Value>)> = d.changed[0].changes.iter().map(|c| (c.path.as_str(), c.old.as_ref(), c.new.as_ref())).collect();
        assert_eq!(
            changes,
            vec![
                ("description", None, Some(&json!("new"))),
                ("metadata[\"com.vendor\"].tags", Some(&json!(["x"])), Some(&json!(["x", "y"]))),
                ("properties.p.type", Some(&json!("string")), Some(&json!("integer"))),
                ("properties.q", Some(&json!({"type": "number"})), None),
                ("properties.r", None, Some(&json!({"type": "null"}))),
            ]
        );
        assert!(diff_dictionaries(&new, &new).is_empty());
        let wire = serde_json::to_value(&d).unwrap();
        assert_eq!(wire["changed"][0]["entityType"], "event");
        assert_eq!(wire["changed"][0]["changes"][3].get("new"), None);
    }
}
