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
