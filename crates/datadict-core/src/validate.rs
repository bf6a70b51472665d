//! Validation of dictionary entries against spec §2.2–2.5. Every problem is reported, never only
//! the first: a caller gets a list of [`Issue`]s to show beside the fields they concern.

use crate::issue::{child_path, index_path, Issue, IssueCode};
use crate::event::REQUIRED_EVENT_PROPERTIES;
use crate::schema::{EntityType, PropertyType, DEFAULT_NAMESPACE};
use serde_json::{Map, Value};

/// What the schema rules need to know besides the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRules {
    /// The vendor metadata key (spec: `com.vendor`).
    pub namespace: String,
}

impl Default for SchemaRules {
    fn default() -> Self {
        Self { namespace: DEFAULT_NAMESPACE.to_owned() }
    }
}

/// Validates the text of one `SchemaEntry`; undecodable JSON is reported as an issue at the root.
pub fn validate_schema_entry_json(text: &str, rules: &SchemaRules) -> Vec<Issue> {
    match serde_json::from_slice::<Value>(text.as_bytes()) {
        Ok(value) => validate_schema_entry(&value, rules),
        Err(err) => vec![Issue::new(
            "",
            IssueCode::InvalidJson,
            format!("the input is not valid JSON ({err}); send one JSON object"),
        )],
    }
}

/// Validates one `SchemaEntry` (spec §2.2) and returns every issue found, in document order.
pub fn validate_schema_entry(value: &Value, rules: &SchemaRules) -> Vec<Issue> {
    let mut out = Vec::new();
    let Some(obj) = as_object(value, "", "a schema entry", &mut out) else {
        return out;
    };
    reject_unknown(obj, "", &["entityType", "name", "schemaJson"], "a schema entry", &mut out);

    let entity_type = match obj.get("entityType") {
        None => {
            out.push(missing("entityType", "`event` or `profile`"));
            None
        }
        Some(Value::String(s)) => match s.parse::<EntityType>() {
            Ok(t) => Some(t),
            Err(err) => {
                out.push(Issue::new("entityType", IssueCode::InvalidEnum, err.to_string()));
                None
            }
        },
        Some(other) => {
            out.push(wrong_type("entityType", "the string `event` or `profile`", other));
            None
        }
    };

    match obj.get("name") {
        None => out.push(missing("name", "the entity name (for an event, the event name)")),
        Some(Value::String(s)) if s.trim().is_empty() => out.push(Issue::new(
            "name",
            IssueCode::InvalidName,
            format!("`name` is {}; give the entity name (for an event, the event name)", emptiness(s)),
        )),
        Some(Value::String(s)) => out.extend(crate::issue::nul_character("name", s)),
        Some(other) => out.push(wrong_type("name", "a string", other)),
    }

    match obj.get("schemaJson") {
        None => out.push(missing("schemaJson", "a schema object (it may be `{}`)")),
        Some(schema) => validate_schema(schema, "schemaJson", entity_type, rules, &mut out),
    }
    out
}

/// Validates a `Schema` (spec §2.3) found at `path`. `entity_type` is `None` when the entry's own
/// type was unusable; events-only rules are then not checked.
pub fn validate_schema(
    value: &Value,
    path: &str,
    entity_type: Option<EntityType>,
    rules: &SchemaRules,
    out: &mut Vec<Issue>,
) {
    let Some(obj) = as_object(value, path, "a schema", out) else {
        return;
    };
    // The spec allows additional keys in a schema (it is a JSON Schema); only the known ones are
    // checked.
    if let Some(v) = obj.get("description") {
        expect_string(v, &child_path(path, "description"), out);
    }
    if let Some(v) = obj.get("properties") {
        let props_path = child_path(path, "properties");
        if let Some(props) = as_object(v, &props_path, "an object of property definitions", out) {
            for (name, def) in props {
                let p = child_path(&props_path, name);
                if name.trim().is_empty() {
                    out.push(Issue::new(&p, IssueCode::InvalidName, format!("a property name is {}; name every property", emptiness(name))));
                }
                validate_property(name, def, &p, entity_type, rules, out);
            }
        }
    }
    if let Some(meta) = vendor_section(obj, path, rules, out) {
        let (meta, meta_path) = meta;
        reject_unknown(
            meta,
            &meta_path,
            &["$source", "displayName", "tags", "hidden", "dropped", "contacts", "teamContacts"],
            "entity metadata",
            out,
        );
        for (key, v) in meta {
            let p = child_path(&meta_path, key);
            // `null` removes a key when a schema is replaced (FACTS.md), so it is always allowed.
            if v.is_null() {
                continue;
            }
            match key.as_str() {
                "$source" | "displayName" => expect_string(v, &p, out),
                "hidden" => expect_bool(v, &p, out),
                "dropped" => {
                    expect_bool(v, &p, out);
                    events_only(entity_type, v, &p, "an entity", out);
                }
                "tags" | "teamContacts" => expect_string_array(v, &p, out, |_, _, _| {}),
                "contacts" => expect_string_array(v, &p, out, |s, p, out| {
                    if !looks_like_email(s) {
                        out.push(Issue::new(
                            p,
                            IssueCode::InvalidEmail,
                            format!("`{s}` is not an e-mail address; contacts are the e-mail addresses of the people responsible"),
                        ));
                    }
                }),
                _ => {}
            }
        }
    }
}

fn validate_property(
    name: &str,
    value: &Value,
    path: &str,
    entity_type: Option<EntityType>,
    rules: &SchemaRules,
    out: &mut Vec<Issue>,
) {
    let Some(obj) = as_object(value, path, "a property definition", out) else {
        return;
    };
    reject_unknown(obj, path, &["type", "description", "metadata"], "a property definition", out);
    let type_path = child_path(path, "type");
    match obj.get("type") {
        None => out.push(missing(&type_path, type_choices())),
        Some(Value::String(s)) if PropertyType::parse(s).is_some() => {}
        Some(Value::String(s)) => out.push(Issue::new(
            &type_path,
            IssueCode::InvalidEnum,
            format!("unknown property type `{s}`: use {}", type_choices()),
        )),
        Some(other) => out.push(wrong_type(&type_path, type_choices(), other)),
    }
    if let Some(v) = obj.get("description") {
        expect_string(v, &child_path(path, "description"), out);
    }
    if let Some((meta, meta_path)) = vendor_section(obj, path, rules, out) {
        reject_unknown(meta, &meta_path, &["displayName", "hidden", "dropped"], "property metadata", out);
        for (key, v) in meta {
            let p = child_path(&meta_path, key);
            if v.is_null() {
                continue;
            }
            match key.as_str() {
                "displayName" => expect_string(v, &p, out),
                "hidden" => expect_bool(v, &p, out),
                "dropped" => {
                    expect_bool(v, &p, out);
                    events_only(entity_type, v, &p, "a property", out);
                    if v == &Value::Bool(true) && entity_type == Some(EntityType::Event) && REQUIRED_EVENT_PROPERTIES.contains(&name) {
                        out.push(Issue::new(
                            &p,
                            IssueCode::RequiredProperty,
                            format!("`{name}` cannot be dropped: `/import` requires `time`, `distinct_id` and `$insert_id` on every event, so events would be stored without it; remove `dropped` or set it to `false`"),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
}

/// Checks `metadata` of `obj` and returns its vendor object with the vendor object's path.
fn vendor_section<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
    rules: &SchemaRules,
    out: &mut Vec<Issue>,
) -> Option<(&'a Map<String, Value>, String)> {
    let meta_path = child_path(path, "metadata");
    let meta = as_object(obj.get("metadata")?, &meta_path, "an object", out)?;
    let vendor_path = child_path(&meta_path, &rules.namespace);
    let vendor = meta.get(&rules.namespace)?;
    let what = format!("an object of `{}` metadata", rules.namespace);
    as_object(vendor, &vendor_path, &what, out).map(|v| (v, vendor_path))
}

/// How a name that trims to nothing is described: `empty`, or `blank` with what it holds, since
/// "empty" would send someone looking at `" "` for a bug elsewhere.
pub fn emptiness(name: &str) -> &'static str {
    if name.is_empty() {
        "empty"
    } else {
        "blank (whitespace only)"
    }
}

fn type_choices() -> &'static str {
    "one of `array`, `boolean`, `integer`, `null`, `number`, `object`, `string`"
}

fn as_object<'a>(
    value: &'a Value,
    path: &str,
    what: &str,
    out: &mut Vec<Issue>,
) -> Option<&'a Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        other => {
            out.push(wrong_type(path, what, other));
            None
        }
    }
}

fn reject_unknown(
    obj: &Map<String, Value>,
    path: &str,
    allowed: &[&str],
    what: &str,
    out: &mut Vec<Issue>,
) {
    for key in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        let list = allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ");
        out.push(Issue::new(
            child_path(path, key),
            IssueCode::UnknownField,
            format!("`{key}` is not a field of {what}; the allowed fields are {list}"),
        ));
    }
}

fn expect_string(value: &Value, path: &str, out: &mut Vec<Issue>) {
    if !value.is_string() {
        out.push(wrong_type(path, "a string", value));
    }
}

fn expect_bool(value: &Value, path: &str, out: &mut Vec<Issue>) {
    if !value.is_boolean() {
        out.push(wrong_type(path, "`true` or `false`", value));
    }
}

fn expect_string_array(
    value: &Value,
    path: &str,
    out: &mut Vec<Issue>,
    each: impl Fn(&str, &str, &mut Vec<Issue>),
) {
    let Value::Array(items) = value else {
        out.push(wrong_type(path, "an array of strings", value));
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let p = index_path(path, i);
        match item {
            Value::String(s) => each(s, &p, out),
            other => out.push(wrong_type(&p, "a string", other)),
        }
    }
}

/// Refuses `dropped: true` on a profile or its properties. `false` is the default (spec §2.4,
/// §2.5), so a profile may say it, as a tool that writes every field does.
fn events_only(entity_type: Option<EntityType>, value: &Value, path: &str, what: &str, out: &mut Vec<Issue>) {
    if entity_type == Some(EntityType::Profile) && value == &Value::Bool(true) {
        out.push(Issue::new(
            path,
            IssueCode::EventsOnly,
            format!("only events can be dropped at ingestion; remove `dropped: true` from {what} of a profile (`false` is allowed), or use `hidden`"),
        ));
    }
}

/// A deliberately small check: one `@` with text on both sides and a dot in the domain. Full
/// address validation is the mail system's job; this catches names and typos pasted by mistake.
fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && !s.chars().any(char::is_whitespace)
        && domain.split('.').count() >= 2
        && domain.split('.').all(|label| !label.is_empty())
}

fn missing(path: &str, what: &str) -> Issue {
    Issue::new(path, IssueCode::MissingField, format!("`{path}` is required; give {what}"))
}

fn wrong_type(path: &str, expected: &str, found: &Value) -> Issue {
    let where_ = if path.is_empty() { "the input".to_owned() } else { format!("`{path}`") };
    Issue::new(
        path,
        IssueCode::WrongType,
        format!("{where_} is {}; it must be {expected}", describe(found)),
    )
}

/// Names a JSON value's type for a message, with a short excerpt of scalars.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() > 40 => {
            format!("the string \"{}…\"", s.chars().take(40).collect::<String>())
        }
        Value::String(s) => format!("the string {:?}", s),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

#[cfg(test)]
mod tests;
