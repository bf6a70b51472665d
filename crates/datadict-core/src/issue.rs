//! Validation issues: every rule reports its findings as data, like a compiler's diagnostics.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A stable identifier of a kind of problem; tests and user interfaces match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueCode {
    /// The input is not JSON at all.
    InvalidJson,
    /// A required field is absent.
    MissingField,
    /// A field is present where the spec allows no additional fields.
    UnknownField,
    /// A value has the wrong JSON type.
    WrongType,
    /// A string is not one of the allowed values.
    InvalidEnum,
    /// A field that only events may carry was set on a profile.
    EventsOnly,
    /// A contact does not look like an e-mail address.
    InvalidEmail,
    /// A name is empty or otherwise unusable.
    InvalidName,
}

impl IssueCode {
    /// The code as it appears on the wire (`snake_case`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid_json",
            Self::MissingField => "missing_field",
            Self::UnknownField => "unknown_field",
            Self::WrongType => "wrong_type",
            Self::InvalidEnum => "invalid_enum",
            Self::EventsOnly => "events_only",
            Self::InvalidEmail => "invalid_email",
            Self::InvalidName => "invalid_name",
        }
    }
}

impl fmt::Display for IssueCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem found in an input: where, what kind, and a message that says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// Where the problem is, in the dotted form the API uses (`schemaJson.properties.price.type`).
    pub path: String,
    /// The kind of problem.
    pub code: IssueCode,
    /// What was found and what is allowed.
    pub message: String,
}

impl Issue {
    pub fn new(path: impl Into<String>, code: IssueCode, message: impl Into<String>) -> Self {
        Self { path: path.into(), code, message: message.into() }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "[{}] {}", self.code, self.message)
        } else {
            write!(f, "{}: [{}] {}", self.path, self.code, self.message)
        }
    }
}

/// Builds the path of a child field: `parent.key`, or `parent["odd key"]` when the key is not a
/// plain identifier, so that every path can be read back unambiguously.
pub fn child_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    match (parent.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{parent}.{key}"),
        (_, false) => format!("{parent}[{}]", serde_json::Value::from(key)),
    }
}

/// Builds the path of an array element: `parent[3]`.
pub fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_paths_quote_keys_that_are_not_identifiers() {
        assert_eq!(child_path("", "name"), "name");
        assert_eq!(child_path("schemaJson", "properties"), "schemaJson.properties");
        assert_eq!(child_path("metadata", "com.vendor"), "metadata[\"com.vendor\"]");
        assert_eq!(child_path("p", "$source"), "p.$source");
        assert_eq!(child_path("p", ""), "p[\"\"]");
        assert_eq!(index_path("tags", 2), "tags[2]");
    }
}
