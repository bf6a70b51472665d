//! User-profile updates (spec §2.9 `$set`; the other operations and the limits come from FACTS.md
//! "Profiles `POST /engage`"): the model and its validation, which reports every issue.

use crate::issue::{child_path, index_path, Issue, IssueCode};
use crate::limits::Limits;
use crate::validate::describe;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// FACTS.md: the operations of a profile update; exactly one per update.
pub const PROFILE_OPERATIONS: [&str; 8] = ["$set", "$set_once", "$add", "$union", "$append", "$remove", "$unset", "$delete"];

/// Optional modifiers the vendor's `/engage` accepts beside the operation (FACTS.md lists the
/// update shape; these keys are part of the same public interface and are not operations).
pub const PROFILE_MODIFIERS: [&str; 4] = ["$ip", "$ignore_time", "$ignore_alias", "$time"];

/// One operation of a profile update.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileOperation {
    /// Spec §2.9: sets properties, the latest value wins.
    Set(Map<String, Value>),
    /// Sets properties only where the profile has none yet.
    SetOnce(Map<String, Value>),
    /// Adds numbers to numeric properties.
    Add(Map<String, Value>),
    /// Merges list values into list properties without duplicates.
    Union(Map<String, Value>),
    /// Appends one value to list properties.
    Append(Map<String, Value>),
    /// Removes one value from list properties.
    Remove(Map<String, Value>),
    /// Removes the named properties.
    Unset(Vec<String>),
    /// Deletes the whole profile.
    Delete,
}

impl ProfileOperation {
    /// The wire key of the operation (`$set`, `$unset`, ...).
    pub fn key(&self) -> &'static str {
        match self {
            Self::Set(_) => "$set",
            Self::SetOnce(_) => "$set_once",
            Self::Add(_) => "$add",
            Self::Union(_) => "$union",
            Self::Append(_) => "$append",
            Self::Remove(_) => "$remove",
            Self::Unset(_) => "$unset",
            Self::Delete => "$delete",
        }
    }
}

/// One profile update: `{"$token": ..., "$distinct_id": ..., <operation>}` (FACTS.md).
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileUpdate {
    /// The project token; `None` when the request is authenticated with a service account.
    pub token: Option<String>,
    pub distinct_id: String,
    pub operation: ProfileOperation,
}

impl ProfileUpdate {
    /// Spec §2.9: the `$set` update of one user.
    pub fn set(distinct_id: impl Into<String>, properties: Map<String, Value>) -> Self {
        Self { token: None, distinct_id: distinct_id.into(), operation: ProfileOperation::Set(properties) }
    }
}

impl Serialize for ProfileUpdate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(token) = &self.token {
            map.serialize_entry("$token", token)?;
        }
        map.serialize_entry("$distinct_id", &self.distinct_id)?;
        let key = self.operation.key();
        match &self.operation {
            ProfileOperation::Set(m)
            | ProfileOperation::SetOnce(m)
            | ProfileOperation::Add(m)
            | ProfileOperation::Union(m)
            | ProfileOperation::Append(m)
            | ProfileOperation::Remove(m) => map.serialize_entry(key, m)?,
            ProfileOperation::Unset(names) => map.serialize_entry(key, names)?,
            ProfileOperation::Delete => map.serialize_entry(key, "")?,
        }
        map.end()
    }
}

/// Whether a profile update must carry `$token` (FACTS.md shows it in every update; a server that
/// authenticates with a service account may not need it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TokenRule {
    #[default]
    Required,
    Optional,
}

/// Validates the text of one profile update, including its size (FACTS.md: 1 MB per update).
pub fn validate_profile_update_json(text: &str, limits: &Limits, token: TokenRule) -> Vec<Issue> {
    check_profile_update(text.as_bytes(), limits, token).issues
}

/// What [`check_profile_update`] found in the bytes of one update.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileCheck {
    /// Every issue; the update may be sent when there is none.
    pub issues: Vec<Issue>,
    /// The update's operation (`$set`, ...) when it has exactly one, to group issues by.
    pub operation: Option<&'static str>,
}

impl ProfileCheck {
    pub fn is_valid(&self) -> bool {
        self.issues.is_empty()
    }
}

/// Checks the bytes of one profile update, as the batcher meets them: its size, its JSON and
/// every rule of [`validate_profile_update`], parsing the update once.
pub fn check_profile_update(bytes: &[u8], limits: &Limits, token: TokenRule) -> ProfileCheck {
    let mut issues = Vec::new();
    if bytes.len() > limits.max_profile_update_bytes {
        issues.push(Issue::new(
            "",
            IssueCode::TooLarge,
            format!("the update is {} bytes; it must be at most {} bytes: split it into several updates", bytes.len(), limits.max_profile_update_bytes),
        ));
    }
    let value = match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => value,
        Err(err) => {
            issues.push(Issue::new("", IssueCode::InvalidJson, format!("the update is not valid JSON ({err}); send one JSON object per update")));
            return ProfileCheck { issues, operation: None };
        }
    };
    issues.extend(validate_profile_update(&value, limits, token));
    let mut ops = PROFILE_OPERATIONS.iter().filter(|op| value.get(**op).is_some());
    let operation = match (ops.next(), ops.next()) {
        (Some(op), None) => Some(*op),
        _ => None,
    };
    ProfileCheck { issues, operation }
}

/// Validates one profile update (FACTS.md `/engage`) and returns every issue found.
pub fn validate_profile_update(value: &Value, limits: &Limits, token: TokenRule) -> Vec<Issue> {
    let mut out = Vec::new();
    let Value::Object(obj) = value else {
        out.push(Issue::new("", IssueCode::WrongType, format!("the update is {}; it must be an object with `$distinct_id` and one operation", describe(value))));
        return out;
    };
    for key in obj.keys() {
        let k = key.as_str();
        if !(PROFILE_OPERATIONS.contains(&k) || PROFILE_MODIFIERS.contains(&k) || k == "$token" || k == "$distinct_id") {
            out.push(Issue::new(
                child_path("", key),
                IssueCode::UnknownField,
                format!("`{key}` is not a field of a profile update; put profile properties inside an operation such as `$set`"),
            ));
        }
    }
    match obj.get("$token") {
        None if token == TokenRule::Required => out.push(Issue::new("$token", IssueCode::MissingField, "`$token` is required; give the project token")),
        None => {}
        Some(Value::String(_)) => {}
        Some(other) => out.push(Issue::new("$token", IssueCode::WrongType, format!("`$token` is {}; it must be a string, the project token", describe(other)))),
    }
    match obj.get("$distinct_id") {
        None => out.push(Issue::new("$distinct_id", IssueCode::MissingField, "`$distinct_id` is required; give the identifier of the user")),
        Some(Value::String(id)) if id.is_empty() || limits.is_forbidden_id(id) => out.push(Issue::new(
            "$distinct_id",
            IssueCode::ForbiddenId,
            format!("`$distinct_id` is {id:?}; a profile needs the user's real identifier, not an empty or placeholder value"),
        )),
        Some(Value::String(_)) => {}
        Some(other) => out.push(Issue::new("$distinct_id", IssueCode::WrongType, format!("`$distinct_id` is {}; it must be a string", describe(other)))),
    }
    let ops: Vec<&str> = PROFILE_OPERATIONS.iter().copied().filter(|op| obj.contains_key(*op)).collect();
    match ops.len() {
        0 => out.push(Issue::new("", IssueCode::MissingOperation, format!("the update has no operation; add one of {}", list(&PROFILE_OPERATIONS)))),
        1 => {}
        _ => out.push(Issue::new("", IssueCode::MultipleOperations, format!("the update has {} operations ({}); send one update per operation", ops.len(), list(&ops)))),
    }
    for op in ops {
        check_operation(op, &obj[op], limits, &mut out);
    }
    out
}

fn check_operation(op: &str, value: &Value, limits: &Limits, out: &mut Vec<Issue>) {
    let path = child_path("", op);
    if op == "$delete" {
        return;
    }
    if op == "$unset" {
        let Value::Array(names) = value else {
            out.push(Issue::new(&path, IssueCode::WrongType, format!("`{op}` is {}; it must be an array of property names", describe(value))));
            return;
        };
        for (i, name) in names.iter().enumerate() {
            if !name.is_string() {
                let p = index_path(&path, i);
                out.push(Issue::new(&p, IssueCode::WrongType, format!("`{p}` is {}; it must be a property name", describe(name))));
            }
        }
        return;
    }
    let Value::Object(props) = value else {
        out.push(Issue::new(&path, IssueCode::WrongType, format!("`{op}` is {}; it must be an object of property names to values", describe(value))));
        return;
    };
    if props.len() > limits.max_profile_properties {
        out.push(Issue::new(
            &path,
            IssueCode::TooManyProperties,
            format!("`{op}` names {} properties; a profile holds at most {}", props.len(), limits.max_profile_properties),
        ));
    }
    for (name, v) in props {
        let p = child_path(&path, name);
        let bad = match op {
            "$add" if !v.is_number() => Some("a number to add"),
            "$union" if !v.is_array() => Some("an array of values to merge in"),
            _ => None,
        };
        if let Some(expected) = bad {
            out.push(Issue::new(&p, IssueCode::WrongType, format!("`{p}` is {}; `{op}` takes {expected}", describe(v))));
        }
    }
}

/// Reads one profile update from its text and checks it (size, JSON and every rule of
/// [`validate_profile_update`]), parsing it once: the typed update, or every issue.
pub fn parse_profile_update(text: &str, limits: &Limits, token: TokenRule) -> Result<ProfileUpdate, Vec<Issue>> {
    let check = check_profile_update(text.as_bytes(), limits, token);
    if !check.is_valid() {
        return Err(check.issues);
    }
    // The check above parsed the same text; parsing again keeps `check_profile_update` free of
    // ownership concerns, and the text is at most one update (1 MB).
    let shape = || vec![Issue::new("", IssueCode::WrongType, "the update does not have the shape of a profile update; send `$distinct_id` and one operation")];
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(text) else { return Err(shape()) };
    let token = match obj.remove("$token") {
        Some(Value::String(t)) => Some(t),
        _ => None,
    };
    let Some(Value::String(distinct_id)) = obj.remove("$distinct_id") else { return Err(shape()) };
    let operation = obj
        .into_iter()
        .find_map(|(key, operand)| ProfileOperation::from_wire(&key, operand))
        .ok_or_else(shape)?;
    Ok(ProfileUpdate { token, distinct_id, operation })
}

impl ProfileOperation {
    /// The operation a wire key and its operand make, or `None` when the key is no operation or
    /// the operand has the wrong shape (which [`validate_profile_update`] reports).
    pub fn from_wire(key: &str, operand: Value) -> Option<Self> {
        match (key, operand) {
            ("$delete", _) => Some(Self::Delete),
            ("$unset", Value::Array(names)) => Some(Self::Unset(
                names.into_iter().filter_map(|n| if let Value::String(s) = n { Some(s) } else { None }).collect(),
            )),
            ("$set", Value::Object(m)) => Some(Self::Set(m)),
            ("$set_once", Value::Object(m)) => Some(Self::SetOnce(m)),
            ("$add", Value::Object(m)) => Some(Self::Add(m)),
            ("$union", Value::Object(m)) => Some(Self::Union(m)),
            ("$append", Value::Object(m)) => Some(Self::Append(m)),
            ("$remove", Value::Object(m)) => Some(Self::Remove(m)),
            _ => None,
        }
    }
}

/// Applies one operation to a stored profile (`None`: no profile) and returns the new profile
/// (`None`: deleted), or why the update cannot be applied. Every way profiles are written (the
/// `/engage` route, warehouse syncs, migrations) goes through here, so the 2,000-property cap of
/// FACTS.md holds for all of them.
pub fn apply(current: Option<&Map<String, Value>>, operation: &ProfileOperation, limits: &Limits) -> Result<Option<Map<String, Value>>, Vec<Issue>> {
    let mut props = current.cloned().unwrap_or_default();
    match operation {
        ProfileOperation::Delete => return Ok(None),
        ProfileOperation::Unset(names) => {
            for name in names {
                props.remove(name);
            }
        }
        ProfileOperation::Set(values) => {
            for (name, value) in values {
                props.insert(name.clone(), value.clone());
            }
        }
        ProfileOperation::SetOnce(values) => {
            for (name, value) in values {
                props.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
        ProfileOperation::Add(values) => {
            for (name, value) in values {
                let sum = add(props.get(name), value);
                props.insert(name.clone(), sum);
            }
        }
        ProfileOperation::Union(values) => {
            for (name, value) in values {
                let mut list = as_list(props.remove(name));
                for item in value.as_array().into_iter().flatten() {
                    if !list.contains(item) {
                        list.push(item.clone());
                    }
                }
                props.insert(name.clone(), Value::Array(list));
            }
        }
        ProfileOperation::Append(values) => {
            for (name, value) in values {
                let mut list = as_list(props.remove(name));
                list.push(value.clone());
                props.insert(name.clone(), Value::Array(list));
            }
        }
        ProfileOperation::Remove(values) => {
            for (name, value) in values {
                if let Some(Value::Array(list)) = props.get_mut(name) {
                    list.retain(|item| item != value);
                }
            }
        }
    }
    let max = limits.max_profile_properties;
    if props.len() > max {
        return Err(vec![Issue::new(
            operation.key(),
            IssueCode::TooManyProperties,
            format!("the profile would hold {} properties; a profile holds at most {max}: unset some first", props.len()),
        )]);
    }
    Ok(Some(props))
}

/// `$add`: integers stay integers while they fit; a missing or non-numeric value counts as 0.
fn add(current: Option<&Value>, by: &Value) -> Value {
    let zero = Value::from(0);
    let current = current.filter(|v| v.is_number()).unwrap_or(&zero);
    if let (Some(a), Some(b)) = (current.as_i64(), by.as_i64()) {
        if let Some(sum) = a.checked_add(b) {
            return Value::from(sum);
        }
    }
    let sum = current.as_f64().unwrap_or(0.0) + by.as_f64().unwrap_or(0.0);
    serde_json::Number::from_f64(sum).map_or(Value::Null, Value::Number)
}

/// A list property's items; a missing or scalar value starts a new list.
fn as_list(value: Option<Value>) -> Vec<Value> {
    match value {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

fn list(items: &[&str]) -> String {
    items.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use IssueCode::*;

    fn check(input: Value, expected: &[(&str, IssueCode)]) {
        let issues = validate_profile_update(&input, &Limits::default(), TokenRule::Required);
        let got: Vec<(&str, IssueCode)> = issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
        assert_eq!(got, expected, "{issues:#?}");
        for issue in &issues {
            assert!(!issue.message.ends_with('.'), "{issue}");
        }
    }

    #[test]
    fn profile_updates() {
        check(json!({"$token": "t", "$distinct_id": "u1", "$set": {"plan": "pro"}}), &[]);
        check(json!({"$token": "t", "$distinct_id": "u1", "$unset": ["a"], "$ip": "1.2.3.4"}), &[]);
        check(json!({"$token": "t", "$distinct_id": "u1", "$delete": ""}), &[]);
        check(json!({"$token": "t", "$distinct_id": "u1", "$add": {"n": 1, "m": "2"}}), &[("$add.m", WrongType)]);
        check(json!({"$token": "t", "$distinct_id": "u1", "$union": {"l": 1}}), &[("$union.l", WrongType)]);
        check(json!({"$token": "t", "$distinct_id": "u1", "$unset": "a"}), &[("$unset", WrongType)]);
        check(json!({"$token": "t", "$distinct_id": "u1", "$unset": ["a", 2]}), &[("$unset[1]", WrongType)]);
        check(json!({"$token": "t", "$distinct_id": "u1", "$set": [1]}), &[("$set", WrongType)]);
        check(json!({"$distinct_id": "u1"}), &[("$token", MissingField), ("", MissingOperation)]);
        check(
            json!({"$token": 1, "$distinct_id": "null", "$set": {}, "$set_once": {}, "plan": "x"}),
            &[("plan", UnknownField), ("$token", WrongType), ("$distinct_id", ForbiddenId), ("", MultipleOperations)],
        );
        check(json!({"$token": "t", "$distinct_id": 5, "$set": {}}), &[("$distinct_id", WrongType)]);
        check(json!({"$token": "t", "$distinct_id": "", "$set": {}}), &[("$distinct_id", ForbiddenId)]);
        check(json!(3), &[("", WrongType)]);
    }

    #[test]
    fn token_can_be_optional_and_limits_apply() {
        let update = json!({"$distinct_id": "u", "$set": {"a": 1, "b": 2, "c": 3}});
        assert!(validate_profile_update(&update, &Limits::default(), TokenRule::Optional).is_empty());
        let small = Limits { max_profile_properties: 2, max_profile_update_bytes: 10, ..Limits::default() };
        let issues = validate_profile_update_json(&update.to_string(), &small, TokenRule::Optional);
        let codes: Vec<IssueCode> = issues.iter().map(|i| i.code).collect();
        assert_eq!(codes, [TooLarge, TooManyProperties]);
        assert_eq!(validate_profile_update_json("{", &small, TokenRule::Optional)[0].code, InvalidJson);
    }

    fn run(start: Value, op: &str, operand: Value) -> Value {
        let start = start.as_object().cloned();
        let operation = ProfileOperation::from_wire(op, operand).expect("a valid operation");
        match apply(start.as_ref(), &operation, &Limits::default()) {
            Ok(Some(p)) => Value::Object(p),
            Ok(None) => Value::Null,
            Err(issues) => Value::String(issues[0].message.clone()),
        }
    }

    #[test]
    fn every_operation_applies() {
        let p = json!({"plan": "free", "n": 1, "tags": ["a"]});
        assert_eq!(run(p.clone(), "$set", json!({"plan": "pro"})), json!({"plan": "pro", "n": 1, "tags": ["a"]}));
        assert_eq!(run(p.clone(), "$set_once", json!({"plan": "pro", "new": 1}))["plan"], "free");
        assert_eq!(run(p.clone(), "$set_once", json!({"new": 1}))["new"], 1);
        assert_eq!(run(p.clone(), "$add", json!({"n": 2, "m": 1.5}))["n"], 3);
        assert_eq!(run(p.clone(), "$add", json!({"m": 1.5}))["m"], 1.5);
        assert_eq!(run(p.clone(), "$union", json!({"tags": ["a", "b", "b"]}))["tags"], json!(["a", "b"]));
        assert_eq!(run(p.clone(), "$append", json!({"tags": "a"}))["tags"], json!(["a", "a"]));
        assert_eq!(run(p.clone(), "$append", json!({"fresh": 1}))["fresh"], json!([1]));
        assert_eq!(run(p.clone(), "$remove", json!({"tags": "a"}))["tags"], json!([]));
        assert_eq!(run(p.clone(), "$unset", json!(["plan", "nope"])), json!({"n": 1, "tags": ["a"]}));
        assert_eq!(run(p.clone(), "$delete", json!("")), Value::Null);
        assert_eq!(run(Value::Null, "$set", json!({"a": 1})), json!({"a": 1}));
    }

    #[test]
    fn apply_keeps_the_property_cap() {
        let small = Limits { max_profile_properties: 2, ..Limits::default() };
        let start = json!({"a": 1, "b": 2});
        let set = ProfileOperation::from_wire("$set", json!({"c": 3})).unwrap();
        let issues = apply(start.as_object(), &set, &small).unwrap_err();
        assert_eq!((issues[0].path.as_str(), issues[0].code), ("$set", TooManyProperties));
        assert!(issues[0].message.contains("a profile holds at most 2"), "{}", issues[0]);
        // Replacing a property does not grow the profile.
        let replace = ProfileOperation::from_wire("$set", json!({"a": 3})).unwrap();
        assert!(apply(start.as_object(), &replace, &small).is_ok());
    }

    #[test]
    fn parsing_gives_the_typed_update_or_every_issue() {
        let update = parse_profile_update(r#"{"$token": "t", "$distinct_id": "u", "$unset": ["a"]}"#, &Limits::default(), TokenRule::Required).unwrap();
        assert_eq!(update.operation, ProfileOperation::Unset(vec!["a".into()]));
        assert_eq!(update.token.as_deref(), Some("t"));
        let issues = parse_profile_update(r#"{"$distinct_id": "u"}"#, &Limits::default(), TokenRule::Required).unwrap_err();
        assert_eq!(issues.len(), 2);
    }

    #[test]
    fn updates_serialize_to_the_wire_shape() {
        let mut props = Map::new();
        props.insert("plan".into(), json!("pro"));
        let mut update = ProfileUpdate::set("u1", props);
        assert_eq!(serde_json::to_value(&update).unwrap(), json!({"$distinct_id": "u1", "$set": {"plan": "pro"}}));
        update.token = Some("t".into());
        update.operation = ProfileOperation::Unset(vec!["a".into()]);
        let value = serde_json::to_value(&update).unwrap();
        assert_eq!(value, json!({"$token": "t", "$distinct_id": "u1", "$unset": ["a"]}));
        assert!(validate_profile_update(&value, &Limits::default(), TokenRule::Required).is_empty());
    }
}
