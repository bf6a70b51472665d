//! Profile updates (spec §2.9 `$set`; the other operations and the limits come from FACTS.md
//! "Profiles `POST /engage`"): the model and its validation, which reports every issue. User
//! profiles (`/engage`, keyed by `$distinct_id`) and group profiles (`/groups`, keyed by
//! `$group_key` and `$group_id`, reference) are one model: a [`ProfileKind`] says which, and the
//! same parser, checks and [`apply`] serve both.

use crate::issue::{child_path, index_path, nul_character, Issue, IssueCode};
use crate::limits::Limits;
use crate::validate::describe;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// FACTS.md: the operations of a user profile update; exactly one per update.
pub const PROFILE_OPERATIONS: [&str; 8] = ["$set", "$set_once", "$add", "$union", "$append", "$remove", "$unset", "$delete"];

/// Reference (`/groups`, "Batch Update Group Profiles"): the operations of a group profile update.
/// `$append` is not among them.
pub const GROUP_OPERATIONS: [&str; 7] = ["$set", "$set_once", "$add", "$union", "$remove", "$unset", "$delete"];

/// Optional modifiers the vendor's `/engage` accepts beside the operation (FACTS.md lists the
/// update shape; these keys are part of the same public interface and are not operations).
pub const PROFILE_MODIFIERS: [&str; 4] = ["$ip", "$ignore_time", "$ignore_alias", "$time"];

/// The identity fields the service's browser library adds to every user profile update once it
/// knows them (`$device_id` and `$user_id` strings, `$had_persisted_distinct_id` a boolean), for
/// the service's merging of identities. They are accepted with their types checked, and are not
/// profile properties: this server merges no identities, so it does not store them.
pub const PROFILE_IDENTITY_FIELDS: [&str; 3] = ["$device_id", "$user_id", "$had_persisted_distinct_id"];

/// Which profiles an update names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProfileKind {
    /// A user profile (`/engage`), named by `$distinct_id`.
    #[default]
    User,
    /// A group profile (`/groups`), named by `$group_key` (the group's kind, such as `Company`)
    /// and `$group_id`.
    Group,
}

impl ProfileKind {
    /// The operations an update of this kind may carry.
    pub fn operations(self) -> &'static [&'static str] {
        match self {
            Self::User => &PROFILE_OPERATIONS,
            Self::Group => &GROUP_OPERATIONS,
        }
    }

    /// The fields that name the profile.
    pub fn id_fields(self) -> &'static [&'static str] {
        match self {
            Self::User => &["$distinct_id"],
            Self::Group => &["$group_key", "$group_id"],
        }
    }

    /// What one update is called in messages.
    fn update(self) -> &'static str {
        match self {
            Self::User => "profile update",
            Self::Group => "group profile update",
        }
    }
}

/// The profile an update names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProfileTarget {
    User { distinct_id: String },
    Group { key: String, id: String },
}

impl ProfileTarget {
    pub fn kind(&self) -> ProfileKind {
        match self {
            Self::User { .. } => ProfileKind::User,
            Self::Group { .. } => ProfileKind::Group,
        }
    }
}

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

/// One profile update: `{"$token": ..., "$distinct_id": ..., <operation>}` (FACTS.md), or for a
/// group `{"$token": ..., "$group_key": ..., "$group_id": ..., <operation>}` (reference).
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileUpdate {
    /// The project token; `None` when the request is authenticated with a service account.
    pub token: Option<String>,
    pub target: ProfileTarget,
    pub operation: ProfileOperation,
}

impl ProfileUpdate {
    /// Spec §2.9: the `$set` update of one user.
    pub fn set(distinct_id: impl Into<String>, properties: Map<String, Value>) -> Self {
        Self { token: None, target: ProfileTarget::User { distinct_id: distinct_id.into() }, operation: ProfileOperation::Set(properties) }
    }
}

impl Serialize for ProfileUpdate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(token) = &self.token {
            map.serialize_entry("$token", token)?;
        }
        match &self.target {
            ProfileTarget::User { distinct_id } => map.serialize_entry("$distinct_id", distinct_id)?,
            ProfileTarget::Group { key, id } => {
                map.serialize_entry("$group_key", key)?;
                map.serialize_entry("$group_id", id)?;
            }
        }
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

/// Validates the text of one user profile update, including its size (FACTS.md: 1 MB per update).
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

/// Checks the bytes of one user profile update, as the batcher meets them: [`check_update`] of
/// [`ProfileKind::User`].
pub fn check_profile_update(bytes: &[u8], limits: &Limits, token: TokenRule) -> ProfileCheck {
    check_update(bytes, ProfileKind::User, limits, token)
}

/// Checks the bytes of one update of `kind`: its size, its JSON and every rule of
/// [`validate_update`], parsing the update once.
pub fn check_update(bytes: &[u8], kind: ProfileKind, limits: &Limits, token: TokenRule) -> ProfileCheck {
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
    issues.extend(validate_update(&value, kind, limits, token));
    let mut ops = kind.operations().iter().filter(|op| value.get(**op).is_some());
    let operation = match (ops.next(), ops.next()) {
        (Some(op), None) => Some(*op),
        _ => None,
    };
    ProfileCheck { issues, operation }
}

/// Validates one user profile update (FACTS.md `/engage`) and returns every issue found.
pub fn validate_profile_update(value: &Value, limits: &Limits, token: TokenRule) -> Vec<Issue> {
    validate_update(value, ProfileKind::User, limits, token)
}

/// Validates one update of `kind` and returns every issue found: its fields, the identifiers of
/// its profile, and its one operation.
pub fn validate_update(value: &Value, kind: ProfileKind, limits: &Limits, token: TokenRule) -> Vec<Issue> {
    let mut out = Vec::new();
    let what = kind.update();
    let Value::Object(obj) = value else {
        let ids = list(kind.id_fields());
        out.push(Issue::new("", IssueCode::WrongType, format!("the update is {}; it must be an object with {ids} and one operation", describe(value))));
        return out;
    };
    let operations = kind.operations();
    for key in obj.keys() {
        let k = key.as_str();
        if operations.contains(&k) || PROFILE_MODIFIERS.contains(&k) || k == "$token" || kind.id_fields().contains(&k) {
            continue;
        }
        if kind == ProfileKind::User && PROFILE_IDENTITY_FIELDS.contains(&k) {
            out.extend(identity_field(k, &obj[k]));
            continue;
        }
        let message = if PROFILE_OPERATIONS.contains(&k) {
            format!("`{key}` is not an operation of a {what}; use one of {}", list(operations))
        } else {
            format!("`{key}` is not a field of a {what}; put profile properties inside an operation such as `$set`")
        };
        out.push(Issue::new(child_path("", key), IssueCode::UnknownField, message));
    }
    match obj.get("$token") {
        None if token == TokenRule::Required => out.push(Issue::new("$token", IssueCode::MissingField, "`$token` is required; give the project token")),
        None => {}
        Some(Value::String(_)) => {}
        Some(other) => out.push(Issue::new("$token", IssueCode::WrongType, format!("`$token` is {}; it must be a string, the project token", describe(other)))),
    }
    match kind {
        ProfileKind::User => match obj.get("$distinct_id") {
            None => out.push(Issue::new("$distinct_id", IssueCode::MissingField, "`$distinct_id` is required; give the identifier of the user")),
            Some(Value::String(id)) if id.is_empty() || limits.is_forbidden_id(id) => out.push(Issue::new(
                "$distinct_id",
                IssueCode::ForbiddenId,
                format!("`$distinct_id` is {id:?}; a profile needs the user's real identifier, not an empty or placeholder value"),
            )),
            Some(Value::String(id)) => out.extend(nul_character("$distinct_id", id)),
            Some(other) => out.push(Issue::new("$distinct_id", IssueCode::WrongType, format!("`$distinct_id` is {}; it must be a string", describe(other)))),
        },
        ProfileKind::Group => {
            match obj.get("$group_key") {
                None => out.push(Issue::new("$group_key", IssueCode::MissingField, "`$group_key` is required; give the group's kind, such as `Company`")),
                Some(Value::String(key)) if key.trim().is_empty() => {
                    out.push(Issue::new("$group_key", IssueCode::InvalidName, "`$group_key` is empty; give the group's kind, such as `Company`"))
                }
                Some(Value::String(key)) => out.extend(nul_character("$group_key", key)),
                Some(other) => out.push(Issue::new("$group_key", IssueCode::WrongType, format!("`$group_key` is {}; it must be a string", describe(other)))),
            }
            match obj.get("$group_id").map(group_id) {
                None => out.push(Issue::new("$group_id", IssueCode::MissingField, "`$group_id` is required; give the identifier of the group")),
                Some(Some(id)) if id.is_empty() || limits.is_forbidden_id(&id) => out.push(Issue::new(
                    "$group_id",
                    IssueCode::ForbiddenId,
                    format!("`$group_id` is {id:?}; a group profile needs the group's real identifier, not an empty or placeholder value"),
                )),
                Some(Some(id)) => out.extend(nul_character("$group_id", &id)),
                Some(None) => out.push(Issue::new(
                    "$group_id",
                    IssueCode::WrongType,
                    format!("`$group_id` is {}; it must be a string (or an integer)", describe(&obj["$group_id"])),
                )),
            }
        }
    }
    let ops: Vec<&str> = operations.iter().copied().filter(|op| obj.contains_key(*op)).collect();
    match ops.len() {
        0 => out.push(Issue::new("", IssueCode::MissingOperation, format!("the update has no operation; add one of {}", list(operations)))),
        1 => {}
        _ => out.push(Issue::new("", IssueCode::MultipleOperations, format!("the update has {} operations ({}); send one update per operation", ops.len(), list(&ops)))),
    }
    for op in ops {
        check_operation(op, &obj[op], limits, &mut out);
    }
    out
}

/// The issue of an identity field ([`PROFILE_IDENTITY_FIELDS`]) of the wrong type.
fn identity_field(key: &str, value: &Value) -> Option<Issue> {
    let (fits, expected) = match key {
        "$had_persisted_distinct_id" => (value.is_boolean(), "true or false"),
        _ => (value.is_string(), "a string"),
    };
    (!fits).then(|| Issue::new(key, IssueCode::WrongType, format!("`{key}` is {}; it must be {expected}", describe(value))))
}

/// A group id as text: a string as it is, an integer as its digits (tracking libraries pass
/// numeric ids through, and the two name the same group). `None` for any other value.
fn group_id(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
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
        if names.is_empty() {
            out.push(Issue::new(&path, IssueCode::WrongType, format!("`{op}` is an empty array; name at least one property to remove")));
        }
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
    if op == "$union" && props.is_empty() {
        out.push(Issue::new(&path, IssueCode::WrongType, format!("`{op}` is an empty object; name at least one list property and the values to merge in")));
    }
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
            "$union" if v.as_array().is_none_or(|items| items.is_empty()) => Some("a non-empty array of values to merge in"),
            _ => None,
        };
        if let Some(expected) = bad {
            out.push(Issue::new(&p, IssueCode::WrongType, format!("`{p}` is {}; `{op}` takes {expected}", describe(v))));
        }
    }
}

/// Reads one update of `kind` from its text and checks it (size, JSON and every rule of
/// [`validate_update`]), parsing it once: the typed update, or every issue.
pub fn parse_profile_update(text: &str, kind: ProfileKind, limits: &Limits, token: TokenRule) -> Result<ProfileUpdate, Vec<Issue>> {
    let check = check_update(text.as_bytes(), kind, limits, token);
    if !check.is_valid() {
        return Err(check.issues);
    }
    // The check above parsed the same text; parsing again keeps `check_update` free of ownership
    // concerns, and the text is at most one update (1 MB).
    let shape = || {
        let ids = list(kind.id_fields());
        vec![Issue::new("", IssueCode::WrongType, format!("the update does not have the shape of a {}; send {ids} and one operation", kind.update()))]
    };
    let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(text.as_bytes()) else { return Err(shape()) };
    let token = match obj.remove("$token") {
        Some(Value::String(t)) => Some(t),
        _ => None,
    };
    let target = match kind {
        ProfileKind::User => match obj.remove("$distinct_id") {
            Some(Value::String(distinct_id)) => ProfileTarget::User { distinct_id },
            _ => return Err(shape()),
        },
        ProfileKind::Group => match (obj.remove("$group_key"), obj.remove("$group_id").as_ref().and_then(group_id)) {
            (Some(Value::String(key)), Some(id)) => ProfileTarget::Group { key, id },
            _ => return Err(shape()),
        },
    };
    let operation = obj
        .into_iter()
        .filter(|(key, _)| kind.operations().contains(&key.as_str()))
        .find_map(|(key, operand)| ProfileOperation::from_wire(&key, operand))
        .ok_or_else(shape)?;
    Ok(ProfileUpdate { token, target, operation })
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

fn list(items: &[&str]) -> String {
    items.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ")
}

mod apply;
pub use apply::apply;

#[cfg(test)]
mod tests;
