//! A whole dictionary in and out: the JSON batch-upload body (FACTS.md) and CSV (one row per
//! entity, then one per property), which round-trips exactly: whatever the columns cannot say
//! (other namespaces, empty strings, unknown keys) travels in a `rest` column of JSON.

use crate::api::BatchUploadRequest;
use crate::csv::{self, CsvError};
use crate::issue::{child_path, index_path, Issue, IssueCode};
use crate::schema::{EntityType, PropertyDef, PropertyType, SchemaEntry};
use crate::validate::{validate_schema_entry, SchemaRules};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The batch-upload body of a whole dictionary (FACTS.md `POST /projects/{id}/schemas`).
pub fn batch_body(entries: &[SchemaEntry], truncate: bool) -> BatchUploadRequest {
    BatchUploadRequest { entries: entries.to_vec(), truncate }
}

/// Validates a batch-upload body: its shape (`entries`, `truncate`, nothing else) and every entry
/// with paths `entries[i]...`.
pub fn validate_batch_body(value: &Value, rules: &SchemaRules) -> Vec<Issue> {
    let mut out = Vec::new();
    let Value::Object(obj) = value else {
        out.push(Issue::new("", IssueCode::WrongType, "the body must be an object `{\"entries\": [...], \"truncate\": false}`"));
        return out;
    };
    for key in obj.keys().filter(|k| *k != "entries" && *k != "truncate") {
        out.push(Issue::new(child_path("", key), IssueCode::UnknownField, format!("`{key}` is not a field of a batch upload; the allowed fields are `entries`, `truncate`")));
    }
    match obj.get("truncate") {
        None | Some(Value::Bool(_)) => {}
        Some(_) => out.push(Issue::new("truncate", IssueCode::WrongType, "`truncate` must be `true` or `false`")),
    }
    match obj.get("entries") {
        None => out.push(Issue::new("entries", IssueCode::MissingField, "`entries` is required; give an array of schema entries (it may be empty)")),
        Some(Value::Array(entries)) => {
            for (i, entry) in entries.iter().enumerate() {
                let prefix = index_path("entries", i);
                for mut issue in validate_schema_entry(entry, rules) {
                    issue.path = if issue.path.is_empty() {
                        prefix.clone()
                    } else if issue.path.starts_with('[') {
                        format!("{prefix}{}", issue.path)
                    } else {
                        format!("{prefix}.{}", issue.path)
                    };
                    out.push(issue);
                }
            }
            out.extend(duplicate_entries(entries, "entries"));
        }
        Some(_) => out.push(Issue::new("entries", IssueCode::WrongType, "`entries` must be an array of schema entries")),
    }
    out
}

/// One issue per entity named by more than one of `entries` (the items of the array at `path`),
/// at the second of them, listing every position, by entity type and name. One upload cannot
/// store two schemas for one entity: the last would replace the others, with the first one's
/// metadata merged in, and each would be counted as added. Entries whose type or name is unusable
/// are left to [`validate_schema_entry`].
pub fn duplicate_entries(entries: &[Value], path: &str) -> Vec<Issue> {
    // Sorted by entity (stably, so each entity's entries are adjacent and in input order): a
    // search per entry would be quadratic in a body of many thousand entries, and the crate's one
    // sort (`order`) is already in the web app's wasm, which is at its size budget.
    let key = |i: usize| entity_key(&entries[i]);
    let order = crate::order::sorted_indices(entries.len(), &|a, b| key(a).cmp(&key(b)));
    let mut out = Vec::new();
    let mut run = 0;
    while run < order.len() {
        let mut end = run + 1;
        while end < order.len() && key(order[end]) == key(order[run]) {
            end += 1;
        }
        if let (Some((kind, name)), true) = (key(order[run]), end - run > 1) {
            let mut places = String::new();
            for (k, i) in order[run..end].iter().enumerate() {
                places.push_str(if k == 0 { "" } else if run + k + 1 == end { " and " } else { ", " });
                places.push_str(&index_path(path, *i));
            }
            out.push(Issue::new(
                format!("{}.name", index_path(path, order[run + 1])),
                IssueCode::InvalidName,
                format!("{kind} `{name}` is given {} times, at {places}; one upload stores one schema per entity: merge them into one entry", end - run),
            ));
        }
        run = end;
    }
    out
}

/// The entity an entry names, when its type and name are usable.
fn entity_key(entry: &Value) -> Option<(&str, &str)> {
    match (entry.get("entityType"), entry.get("name")) {
        (Some(Value::String(kind)), Some(Value::String(name))) if kind.parse::<EntityType>().is_ok() => Some((kind, name)),
        _ => None,
    }
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 13] = [
    "entity_type",
    "entity_name",
    "property",
    "type",
    "description",
    "display_name",
    "hidden",
    "dropped",
    "tags",
    "contacts",
    "team_contacts",
    "source",
    "rest",
];

/// Vendor keys that have their own column: (column, key in the vendor object, kind).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Bool,
    List,
}

const ENTITY_VENDOR: [(&str, &str, Kind); 7] = [
    ("display_name", "displayName", Kind::Text),
    ("hidden", "hidden", Kind::Bool),
    ("dropped", "dropped", Kind::Bool),
    ("tags", "tags", Kind::List),
    ("contacts", "contacts", Kind::List),
    ("team_contacts", "teamContacts", Kind::List),
    ("source", "$source", Kind::Text),
];
const PROPERTY_VENDOR: [(&str, &str, Kind); 3] =
    [("display_name", "displayName", Kind::Text), ("hidden", "hidden", Kind::Bool), ("dropped", "dropped", Kind::Bool)];

/// Writes a dictionary as CSV (RFC 4180 as [`csv`] writes it, `\n` line ends): per entry one row
/// with an empty `property`, then one row per property in name order. Lists are JSON arrays;
/// `rest` holds, as JSON, what the other columns cannot carry. A cell that a spreadsheet would
/// take for a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a
/// leading `'`, which [`dictionary_from_csv`] removes again.
pub fn dictionary_to_csv(entries: &[SchemaEntry], namespace: &str) -> String {
    let mut out = String::new();
    csv::push_record(&mut out, CSV_COLUMNS);
    for entry in entries {
        let mut schema = serde_json::to_value(&entry.schema_json).expect("a schema serializes");
        let obj = schema.as_object_mut().expect("a schema is an object");
        let properties = obj.remove("properties");
        let mut cells = BTreeMap::new();
        take_text(obj, "description", "description", &mut cells);
        take_vendor(obj, namespace, &ENTITY_VENDOR, &mut cells);
        if let Some(Value::Object(p)) = &properties {
            if p.is_empty() {
                obj.insert("properties".into(), Value::Object(Map::new()));
            }
        }
        write_entity_row(&mut out, entry.entity_type, &entry.name, "", None, &mut cells, obj);
        for (name, def) in entry.schema_json.properties.iter().flatten() {
            let mut value = serde_json::to_value(def).expect("a property serializes");
            let obj = value.as_object_mut().expect("a property is an object");
            obj.remove("type");
            let mut cells = BTreeMap::new();
            take_text(obj, "description", "description", &mut cells);
            take_vendor(obj, namespace, &PROPERTY_VENDOR, &mut cells);
            write_entity_row(&mut out, entry.entity_type, &entry.name, name, Some(def.kind), &mut cells, obj);
        }
    }
    out
}

fn write_entity_row(
    out: &mut String,
    entity_type: EntityType,
    name: &str,
    property: &str,
    kind: Option<PropertyType>,
    cells: &mut BTreeMap<&'static str, String>,
    rest: &Map<String, Value>,
) {
    cells.insert("entity_type", entity_type.as_str().to_owned());
    cells.insert("entity_name", name.to_owned());
    cells.insert("property", property.to_owned());
    if let Some(k) = kind {
        cells.insert("type", k.as_str().to_owned());
    }
    if !rest.is_empty() {
        cells.insert("rest", Value::Object(rest.clone()).to_string());
    }
    csv::push_record(out, CSV_COLUMNS.iter().map(|c| defuse(cells.remove(c).unwrap_or_default())));
}

/// What a spreadsheet takes for the start of a formula: a cell starting with one of these could
/// run when the exported file is opened (CSV injection).
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Whether `cell`, past any leading `'`, starts a formula.
fn formula_like(cell: &str) -> bool {
    cell.trim_start_matches('\'').starts_with(FORMULA_STARTS)
}

/// A cell as the export writes it: one `'` before a cell that would start a formula, so that a
/// spreadsheet shows it as text. A cell that already starts with `'`s before such a character
/// gets one more, so that [`plain`] gives back exactly what was written.
fn defuse(cell: String) -> String {
    if formula_like(&cell) {
        format!("'{cell}")
    } else {
        cell
    }
}

/// The reverse of [`defuse`]: one leading `'` removed where `'`s precede a formula's first
/// character; any other cell as it is.
fn plain(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if formula_like(rest) => rest,
        _ => cell,
    }
}

/// Moves a non-empty string field into a column; anything else stays in `rest`.
fn take_text(obj: &mut Map<String, Value>, key: &str, column: &'static str, cells: &mut BTreeMap<&'static str, String>) {
    if matches!(obj.get(key), Some(Value::String(s)) if !s.is_empty()) {
        if let Some(Value::String(s)) = obj.remove(key) {
            cells.insert(column, s);
        }
    }
}

/// Moves the vendor keys that fit their column out of `metadata.<namespace>`; removes the vendor
/// object (and `metadata`) when that emptied them, so the import can recreate them exactly.
fn take_vendor(obj: &mut Map<String, Value>, namespace: &str, keys: &[(&'static str, &str, Kind)], cells: &mut BTreeMap<&'static str, String>) {
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else {
        return;
    };
    let Some(Value::Object(vendor)) = meta.get_mut(namespace) else {
        return;
    };
    let mut took = false;
    for (column, key, kind) in keys {
        let fits = match (kind, vendor.get(*key)) {
            (Kind::Text, Some(Value::String(s))) => !s.is_empty(),
            (Kind::Bool, Some(Value::Bool(_))) => true,
            (Kind::List, Some(Value::Array(items))) => items.iter().all(Value::is_string),
            _ => false,
        };
        if fits {
            let v = vendor.remove(*key).expect("checked above");
            cells.insert(column, match v {
                Value::String(s) => s,
                other => other.to_string(),
            });
            took = true;
        }
    }
    if took && vendor.is_empty() {
        meta.remove(namespace);
        if meta.is_empty() {
            obj.remove("metadata");
        }
    }
}

/// Reads a dictionary from CSV written by [`dictionary_to_csv`] (or by hand in the same columns;
/// the header row names the columns, in any order). One leading `'` before a formula's first
/// character (`'=`, `'+`, `'-`, `'@`, `'` and a tab or carriage return, also after more `'`s) is
/// removed, as the export adds it. Returns every problem found, with paths
/// `rows[<line>].<column>`.
pub fn dictionary_from_csv(text: &str, namespace: &str) -> Result<Vec<SchemaEntry>, Vec<Issue>> {
    let rows = csv::parse(text).map_err(|e| vec![csv_issue(&e)])?;
    let mut issues = Vec::new();
    let Some((csv::Record { fields: header, .. }, body)) = rows.split_first() else {
        return Ok(Vec::new());
    };
    let col = |name: &str| header.iter().position(|h| h.trim() == name);
    for required in ["entity_type", "entity_name", "property"] {
        if col(required).is_none() {
            issues.push(Issue::new("header", IssueCode::MissingField, format!("the header has no `{required}` column; the columns are {}", CSV_COLUMNS.join(", "))));
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    // Per entity, in file order: its key, its row's line, its schema fields, and its properties
    // by name with their rows' lines.
    type Rows = (EntityType, String, u64, Map<String, Value>, BTreeMap<String, (u64, Value)>);
    let mut entries: Vec<Rows> = Vec::new();
    for csv::Record { line, fields: row } in body {
        if row.iter().all(|c| c.is_empty()) {
            continue;
        }
        let cell = |name: &str| col(name).and_then(|i| row.get(i)).map_or("", |c| plain(c));
        let path = |name: &str| format!("rows[{line}].{name}");
        let entity_type = match cell("entity_type").parse::<EntityType>() {
            Ok(t) => t,
            Err(e) => {
                issues.push(Issue::new(path("entity_type"), IssueCode::InvalidEnum, e.to_string()));
                continue;
            }
        };
        let name = cell("entity_name").to_owned();
        let mut obj = match cell("rest") {
            "" => Map::new(),
            text => match serde_json::from_slice::<Value>(text.as_bytes()) {
                Ok(Value::Object(m)) => m,
                _ => {
                    issues.push(Issue::new(path("rest"), IssueCode::InvalidJson, "`rest` must be empty or a JSON object"));
                    continue;
                }
            },
        };
        if !cell("description").is_empty() {
            obj.insert("description".into(), Value::from(cell("description")));
        }
        let property = cell("property");
        let keys: &[(&str, &str, Kind)] = if property.is_empty() { &ENTITY_VENDOR } else { &PROPERTY_VENDOR };
        for (column, key, kind) in keys {
            let text = cell(column);
            if text.is_empty() {
                continue;
            }
            let value = match kind {
                Kind::Text => Value::from(text),
                Kind::Bool => match text.trim().to_ascii_lowercase().as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => {
                        issues.push(Issue::new(path(column), IssueCode::WrongType, format!("`{column}` is {text:?}; write `true`, `false` or leave it empty")));
                        continue;
                    }
                },
                Kind::List => match serde_json::from_slice::<Vec<String>>(text.as_bytes()) {
                    Ok(items) => Value::from(items),
                    Err(_) => {
                        issues.push(Issue::new(path(column), IssueCode::WrongType, format!("`{column}` is {text:?}; write a JSON array of strings such as [\"a\",\"b\"]")));
                        continue;
                    }
                },
            };
            let meta = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(meta) = meta else {
                issues.push(Issue::new(path("rest"), IssueCode::WrongType, "`metadata` in `rest` must be an object"));
                break;
            };
            match meta.entry(namespace).or_insert_with(|| Value::Object(Map::new())) {
                Value::Object(vendor) => {
                    vendor.insert((*key).to_owned(), value);
                }
                _ => {
                    issues.push(Issue::new(path("rest"), IssueCode::WrongType, format!("`metadata.{namespace}` in `rest` must be an object")));
                    break;
                }
            }
        }
        let position = entries.iter().position(|(t, n, _, _, _)| *t == entity_type && *n == name);
        if property.is_empty() {
            match position {
                Some(_) => issues.push(Issue::new(path("entity_name"), IssueCode::InvalidName, format!("{entity_type} `{name}` has two entity rows; keep one"))),
                None => entries.push((entity_type, name, *line, obj, BTreeMap::new())),
            }
            continue;
        }
        let kind = match PropertyType::parse(cell("type")) {
            Some(k) => k,
            None => {
                issues.push(Issue::new(
                    path("type"),
                    IssueCode::InvalidEnum,
                    format!("`type` is {:?}; use one of array, boolean, integer, null, number, object, string", cell("type")),
                ));
                continue;
            }
        };
        obj.insert("type".into(), Value::from(kind.as_str()));
        let Some(i) = position else {
            issues.push(Issue::new(path("entity_name"), IssueCode::MissingField, format!("property `{property}` comes before a row for {entity_type} `{name}`; add the entity row first")));
            continue;
        };
        entries[i].4.insert(property.to_owned(), (*line, Value::Object(obj)));
    }
    let mut out = Vec::with_capacity(entries.len());
    let rules = SchemaRules { namespace: namespace.to_owned() };
    for (entity_type, name, line, mut obj, props) in entries {
        let lines: Vec<(String, u64)> = props.iter().map(|(p, (l, _))| (child_path("schemaJson.properties", p), *l)).collect();
        if !props.is_empty() {
            obj.insert("properties".into(), Value::Object(props.into_iter().map(|(p, (_, def))| (p, def)).collect()));
        }
        let entry = serde_json::json!({"entityType": entity_type.as_str(), "name": name, "schemaJson": obj});
        // The rows are checked by the rules every other way in applies, each issue at its row.
        let found = validate_schema_entry(&entry, &rules);
        if !found.is_empty() {
            issues.extend(found.into_iter().map(|issue| Issue { path: row_path(&issue.path, line, &lines), ..issue }));
            continue;
        }
        match SchemaEntry::from_json(&entry) {
            Ok(entry) => out.push(entry),
            Err(e) => issues.push(Issue::new(format!("{entity_type}.{name}"), IssueCode::WrongType, format!("the rows of {entity_type} `{name}` do not form a schema ({e}); fix the cells named in the message"))),
        }
    }
    if issues.is_empty() {
        Ok(out)
    } else {
        Err(issues)
    }
}

/// The path of an entry's issue in the CSV: the row of the property it concerns, or else the
/// entity's row, then the rest of the path inside that row's schema or property definition
/// (`rows[4].metadata["com.vendor"].dropped`). `properties` pairs each property's path in the
/// entry with its row's line.
fn row_path(path: &str, entity_line: u64, properties: &[(String, u64)]) -> String {
    let inside = |prefix: &str| {
        let rest = path.strip_prefix(prefix)?;
        (rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')).then_some(rest)
    };
    if path == "name" {
        return format!("rows[{entity_line}].entity_name");
    }
    for (prefix, line) in properties {
        if let Some(rest) = inside(prefix) {
            return format!("rows[{line}]{rest}");
        }
    }
    match inside("schemaJson") {
        Some(rest) => format!("rows[{entity_line}]{rest}"),
        None => format!("rows[{entity_line}].{path}"),
    }
}

/// A file that cannot be read as CSV, as an issue at `line <n>`.
fn csv_issue(e: &CsvError) -> Issue {
    let code = match e {
        CsvError::TooLarge { .. } => IssueCode::TooLarge,
        CsvError::Unclosed { .. } | CsvError::AfterQuote { .. } | CsvError::NotUtf8 { .. } => IssueCode::InvalidJson,
    };
    Issue::new(format!("line {}", e.line()), code, e.to_string())
}

/// A property definition with only a type; a convenience for callers building dictionaries.
pub fn property(kind: PropertyType) -> PropertyDef {
    PropertyDef { kind, description: None, metadata: None }
}

#[cfg(test)]
mod tests;
