//! Checks of profile updates against the dictionary's `profile` schemas, with the event check's
//! codes, paths and wording: an update when the dictionary has no schema for its profile
//! (`no_schema`), a property the schema does not define (`unknown_property`), and a value whose
//! JSON type differs from its definition (`type_mismatch`).
//!
//! Which schema: a user profile update is checked against the user-profile schema (FACTS.md:
//! `entityType=profile`, `name=$user`). The dictionary has no entity type for group profiles, so
//! a group profile update with group key K (`$group_key`, such as `company_id`) is checked against
//! the `profile` schema named K: one schema describes every group of that kind, as `$user`
//! describes every user.
//!
//! What each operation is checked for:
//! - `$set`, `$set_once`: each value's JSON type, as an event property's.
//! - `$add`: each value's JSON type (an integer or a number; the rules refuse anything else).
//! - `$union`, `$append`, `$remove`: these treat the property as a list, whatever item they add or
//!   remove, so the definition must be `array`. The items are not checked: a property definition
//!   has no item type.
//! - `$unset`: each name must be in the schema (no type: nothing is stored).
//! - `$delete`: nothing; it names no property, so it gets no `no_schema` note either.
//!
//! A finding's path is the operation and the property (`$set.plan`, `$set["my prop"]`); for
//! `$unset` too (`$unset.plan`, not the name's index), so that a finding reads the same for every
//! operation and a report can group by property.
//!
//! A property marked `hidden` is checked like any other and gets no note of its own: hiding only
//! affects how the property is shown. Profiles cannot be dropped (schema validation refuses it).
//! Without its schema every checked update gets one `no_schema` note, as an event without a
//! schema does.

use super::{type_matches, Dictionary, PropertyRule};
use crate::issue::{child_path, Issue, IssueCode};
use crate::json_schema::json_type_of;
use crate::profile::{ProfileOperation, ProfileTarget};
use crate::schema::PropertyType;
use serde_json::Value;

/// The name of the user-profile schema (FACTS.md).
pub const USER_PROFILE: &str = "$user";

/// The JSON type `operation` gives a property when it carries `value`: a list for `$union`,
/// `$append` and `$remove`, the value's own type otherwise. This is the type checked against the
/// property's definition and the one a report of observed types shows.
pub fn operand_type(operation: &ProfileOperation, value: &Value) -> PropertyType {
    match operation {
        ProfileOperation::Union(_) | ProfileOperation::Append(_) | ProfileOperation::Remove(_) => PropertyType::Array,
        _ => json_type_of(value),
    }
}

/// The name of the `profile` schema that describes `target`'s profile: [`USER_PROFILE`] for a
/// user, the group key for a group.
pub fn profile_schema_name(target: &ProfileTarget) -> &str {
    match target {
        ProfileTarget::User { .. } => USER_PROFILE,
        ProfileTarget::Group { key, .. } => key,
    }
}

/// Checks one profile update's operation on `target` against the dictionary's schema for that
/// profile ([`profile_schema_name`]). Returns every finding, properties in the order of the update.
pub fn check_profile_against_dictionary(target: &ProfileTarget, operation: &ProfileOperation, dictionary: &Dictionary) -> Vec<Issue> {
    let mut out = Vec::new();
    if *operation == ProfileOperation::Delete {
        return out;
    }
    let schema_name = profile_schema_name(target);
    let Some(schema) = dictionary.profiles.get(schema_name) else {
        let message = match target {
            ProfileTarget::User { .. } => {
                format!("user profiles have no schema in the dictionary; add a `profile` schema named `{USER_PROFILE}` to describe their properties")
            }
            ProfileTarget::Group { key, .. } => format!(
                "group profiles of group key `{key}` have no schema in the dictionary; add a `profile` schema named `{key}` to describe their properties"
            ),
        };
        out.push(Issue::new("", IssueCode::NoSchema, message));
        return out;
    };
    let op = operation.key();
    let unknown = |name: &str| {
        Issue::new(
            child_path(op, name),
            IssueCode::UnknownProperty,
            format!("property `{name}` is not in the schema of `{schema_name}`; add it to the schema, or fix its name"),
        )
    };
    let values = match operation {
        ProfileOperation::Set(m)
        | ProfileOperation::SetOnce(m)
        | ProfileOperation::Add(m)
        | ProfileOperation::Union(m)
        | ProfileOperation::Append(m)
        | ProfileOperation::Remove(m) => m,
        ProfileOperation::Unset(names) => {
            out.extend(names.iter().filter(|name| !schema.contains_key(name.as_str())).map(|name| unknown(name)));
            return out;
        }
        ProfileOperation::Delete => return out,
    };
    for (name, value) in values {
        // Profile maps hold defined properties only (no system names).
        let Some(&PropertyRule::Defined { kind: defined, .. }) = schema.get(name) else {
            out.push(unknown(name));
            continue;
        };
        let seen = operand_type(operation, value);
        if type_matches(defined, seen) {
            continue;
        }
        let message = match operation {
            ProfileOperation::Union(_) | ProfileOperation::Append(_) | ProfileOperation::Remove(_) => format!(
                "`{op}` treats property `{name}` as a list (a JSON array); its schema says {defined}: use `$set` for {}, or change the definition", defined.with_article()
            ),
            ProfileOperation::Add(_) if !matches!(defined, PropertyType::Number | PropertyType::Integer) => format!(
                "`{op}` treats property `{name}` as a number; its schema says {defined}: use `$set` for {}, or change the definition", defined.with_article()
            ),
            _ => format!("property `{name}` is a JSON {seen}; its schema says {defined}: send {} or change the definition", defined.with_article()),
        };
        out.push(Issue::new(child_path(op, name), IssueCode::TypeMismatch, message));
    }
    out
}

#[cfg(test)]
mod tests;
