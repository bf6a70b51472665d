//! Validation issues: every rule reports its findings as data, like a compiler's diagnostics.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A stable identifier of a kind of problem; tests and user interfaces match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
    /// A property every imported event must carry (`time`, `distinct_id`, `$insert_id`) is
    /// marked `dropped` in a schema.
    RequiredProperty,
    // Event and profile rules (FACTS.md "Event import" and "Profiles").
    /// A record, an update or a request body is over its byte limit.
    TooLarge,
    /// A request holds more events or updates than allowed.
    TooManyRecords,
    /// An event has too many properties (or a profile update sets too many).
    TooManyProperties,
    /// A property value nests objects or arrays deeper than allowed.
    TooDeep,
    /// A nested object has too many keys.
    TooManyKeys,
    /// An array has too many elements.
    TooManyItems,
    /// A string is longer than the service keeps; it will be truncated (a warning).
    StringTruncated,
    /// `time` is before 1971-01-01.
    TimeTooEarly,
    /// `time` is more than the allowed margin ahead of the receiver's clock.
    TimeInFuture,
    /// `$insert_id` has characters outside `[A-Za-z0-9-]` or is empty.
    InvalidInsertId,
    /// `$insert_id` is longer than allowed.
    InsertIdTooLong,
    /// An id is one of the forbidden placeholder values (`null`, `anonymous`, ...).
    ForbiddenId,
    /// A name or an id (an event name, a user or group id, a group key) holds the character
    /// U+0000, which PostgreSQL's text cannot hold; refused on every store alike.
    NulCharacter,
    /// A profile update names no operation.
    MissingOperation,
    /// A profile update names more than one operation.
    MultipleOperations,
    // Checks of events against the data dictionary.
    /// The event (or user profile update) has no schema in the dictionary.
    NoSchema,
    /// The event (or user profile update) carries a property its schema does not define.
    UnknownProperty,
    /// A property's JSON type differs from its definition.
    TypeMismatch,
    /// The event is marked `dropped`: it is removed at ingestion.
    DroppedEvent,
    /// The property is marked `dropped`: it is removed at ingestion.
    DroppedProperty,
    /// The event is marked `hidden` in the dictionary.
    HiddenEvent,
    /// The property is marked `hidden` in the dictionary.
    HiddenProperty,
    // Migration requests (spec §4.3).
    /// A date is not a real `YYYY-MM-DD` date.
    InvalidDate,
    /// The start date is after the end date, or the range is otherwise unusable.
    InvalidDateRange,
}

impl IssueCode {
    /// Every code, in declaration order (used by tests and by readers of fixture files).
    pub const ALL: [IssueCode; 33] = [
        Self::InvalidJson,
        Self::MissingField,
        Self::UnknownField,
        Self::WrongType,
        Self::InvalidEnum,
        Self::EventsOnly,
        Self::InvalidEmail,
        Self::InvalidName,
        Self::RequiredProperty,
        Self::TooLarge,
        Self::TooManyRecords,
        Self::TooManyProperties,
        Self::TooDeep,
        Self::TooManyKeys,
        Self::TooManyItems,
        Self::StringTruncated,
        Self::TimeTooEarly,
        Self::TimeInFuture,
        Self::InvalidInsertId,
        Self::InsertIdTooLong,
        Self::ForbiddenId,
        Self::NulCharacter,
        Self::MissingOperation,
        Self::MultipleOperations,
        Self::NoSchema,
        Self::UnknownProperty,
        Self::TypeMismatch,
        Self::DroppedEvent,
        Self::DroppedProperty,
        Self::HiddenEvent,
        Self::HiddenProperty,
        Self::InvalidDate,
        Self::InvalidDateRange,
    ];

    /// Parses the wire form (`snake_case`) of a code.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

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
            Self::RequiredProperty => "required_property",
            Self::TooLarge => "too_large",
            Self::TooManyRecords => "too_many_records",
            Self::TooManyProperties => "too_many_properties",
            Self::TooDeep => "too_deep",
            Self::TooManyKeys => "too_many_keys",
            Self::TooManyItems => "too_many_items",
            Self::StringTruncated => "string_truncated",
            Self::TimeTooEarly => "time_too_early",
            Self::TimeInFuture => "time_in_future",
            Self::InvalidInsertId => "invalid_insert_id",
            Self::InsertIdTooLong => "insert_id_too_long",
            Self::ForbiddenId => "forbidden_id",
            Self::NulCharacter => "nul_character",
            Self::MissingOperation => "missing_operation",
            Self::MultipleOperations => "multiple_operations",
            Self::NoSchema => "no_schema",
            Self::UnknownProperty => "unknown_property",
            Self::TypeMismatch => "type_mismatch",
            Self::DroppedEvent => "dropped_event",
            Self::DroppedProperty => "dropped_property",
            Self::HiddenEvent => "hidden_event",
            Self::HiddenProperty => "hidden_property",
            Self::InvalidDate => "invalid_date",
            Self::InvalidDateRange => "invalid_date_range",
        }
    }
}

impl IssueCode {
    /// The code in plain words, for people; shown beside the code, which stays searchable.
    pub fn describe(self) -> &'static str {
        match self {
            Self::InvalidJson => "not valid JSON",
            Self::MissingField => "a required field is missing",
            Self::UnknownField => "a field that is not allowed here",
            Self::WrongType => "a value of the wrong type",
            Self::InvalidEnum => "a value that is not one of the allowed ones",
            Self::EventsOnly => "a field only events may have",
            Self::InvalidEmail => "not an e-mail address",
            Self::InvalidName => "an empty or unusable name",
            Self::RequiredProperty => "a property every event needs, marked dropped",
            Self::TooLarge => "too large",
            Self::TooManyRecords => "too many records in one request",
            Self::TooManyProperties => "too many properties",
            Self::TooDeep => "nested too deeply",
            Self::TooManyKeys => "an object with too many keys",
            Self::TooManyItems => "a list with too many items",
            Self::StringTruncated => "text that will be shortened",
            Self::TimeTooEarly => "a time before 1971",
            Self::TimeInFuture => "a time in the future",
            Self::InvalidInsertId => "an unusable insert id",
            Self::InsertIdTooLong => "an insert id that is too long",
            Self::ForbiddenId => "a placeholder user id such as null or anonymous",
            Self::NulCharacter => "a name or id holding the character U+0000",
            Self::MissingOperation => "no operation",
            Self::MultipleOperations => "more than one operation",
            Self::NoSchema => "an event the dictionary does not describe",
            Self::UnknownProperty => "a property the dictionary does not describe",
            Self::TypeMismatch => "a property of another type than the dictionary says",
            Self::DroppedEvent => "an event the dictionary drops",
            Self::DroppedProperty => "a property the dictionary drops",
            Self::HiddenEvent => "an event the dictionary hides",
            Self::HiddenProperty => "a property the dictionary hides",
            Self::InvalidDate => "not a real date",
            Self::InvalidDateRange => "an unusable date range",
        }
    }

    /// Whether the code is a note rather than an error: the record is still accepted (the
    /// dictionary's findings and text the service shortens), so it is counted apart.
    pub fn is_note(self) -> bool {
        matches!(
            self,
            Self::StringTruncated
                | Self::NoSchema
                | Self::UnknownProperty
                | Self::TypeMismatch
                | Self::DroppedEvent
                | Self::DroppedProperty
                | Self::HiddenEvent
                | Self::HiddenProperty
        )
    }
}

/// `n` and the noun, singular for exactly one: `count(1, "batch", "batches")` is "1 batch".
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
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

/// The issue for a name or id (`path`) that holds U+0000, or `None` when it holds none. Names
/// and ids are stored as text columns, and PostgreSQL's text cannot hold that character, so every
/// store refuses it alike rather than one storing what the other cannot (property values and
/// lookup cells are kept: they are stored inside JSON text, where it is an escape).
pub fn nul_character(path: &str, value: &str) -> Option<Issue> {
    let at = value.find('\0')?;
    Some(Issue::new(
        path,
        IssueCode::NulCharacter,
        format!("`{path}` holds the character U+0000 (NUL) at byte {at}; remove it, names and ids cannot hold it"),
    ))
}

/// Builds the path of an array element: `parent[3]`.
pub fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_words_that_differ_from_the_code() {
        for code in IssueCode::ALL {
            let words = code.describe();
            assert!(!words.is_empty() && words != code.as_str() && !words.ends_with('.'), "{code}: {words}");
        }
        assert!(IssueCode::NoSchema.is_note() && IssueCode::UnknownProperty.is_note());
        assert!(!IssueCode::TimeTooEarly.is_note() && !IssueCode::InvalidJson.is_note());
    }

    #[test]
    fn counts_are_singular_for_one_only() {
        assert_eq!(count(1, "batch", "batches"), "1 batch");
        assert_eq!(count(0, "batch", "batches"), "0 batches");
        assert_eq!(count(2, "problem", "problems"), "2 problems");
    }

    #[test]
    fn child_paths_quote_keys_that_are_not_identifiers() {
        assert_eq!(child_path("", "name"), "name");
        assert_eq!(child_path("schemaJson", "properties"), "schemaJson.properties");
        assert_eq!(child_path("metadata", "com.vendor"), "metadata[\"com.vendor\"]");
        assert_eq!(child_path("p", "$source"), "p.$source");
        assert_eq!(child_path("p", ""), "p[\"\"]");
        assert_eq!(index_path("tags", 2), "tags[2]");
    }

    #[test]
    fn codes_serialize_as_their_wire_names() {
        for code in IssueCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::from(code.as_str()));
            assert_eq!(IssueCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(IssueCode::parse("nope"), None);
    }
}
