//! How one operation changes a stored profile ([`apply`]): the one place every way profiles are
//! written goes through, with the 2,000-property cap and the refusal of an operation that cannot
//! work on what the profile holds.

use super::ProfileOperation;
use crate::issue::{child_path, Issue, IssueCode};
use crate::limits::Limits;
use crate::validate::describe;
use serde_json::{Map, Value};

/// Applies one operation to a stored profile (`None`: no profile) and returns the new profile
/// (`None`: deleted, or still absent), or why the update cannot be applied. Every way profiles
/// are written (the `/engage` route, warehouse syncs, migrations) goes through here, so the
/// 2,000-property cap of FACTS.md holds for all of them.
///
/// An update never destroys a stored value it cannot work on: `$add` to a property that holds
/// something other than a number, `$union`, `$append` or `$remove` on one that holds something
/// other than a list, and an `$add` whose sum is no finite number are refused whole, naming the
/// property, what it holds and what to send instead (the service's libraries document such an
/// update as ignored; a refusal says so where an ignored update would be found missing later).
/// `$unset` and `$remove` on a profile that does not exist make no profile (reference: "If it
/// does not exist, no updates are made").
pub fn apply(current: Option<&Map<String, Value>>, operation: &ProfileOperation, limits: &Limits) -> Result<Option<Map<String, Value>>, Vec<Issue>> {
    if current.is_none() && matches!(operation, ProfileOperation::Unset(_) | ProfileOperation::Remove(_)) {
        return Ok(None);
    }
    let mut props = current.cloned().unwrap_or_default();
    let mut issues = Vec::new();
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
                match add(props.get(name), value) {
                    Ok(sum) => drop(props.insert(name.clone(), sum)),
                    Err(why) => issues.push(cannot_apply(operation, name, why)),
                }
            }
        }
        ProfileOperation::Union(values) => {
            for (name, value) in values {
                match list_entry(&mut props, name) {
                    Ok(list) => {
                        for item in value.as_array().into_iter().flatten() {
                            if !list.contains(item) {
                                list.push(item.clone());
                            }
                        }
                    }
                    Err(why) => issues.push(cannot_apply(operation, name, why)),
                }
            }
        }
        ProfileOperation::Append(values) => {
            for (name, value) in values {
                match list_entry(&mut props, name) {
                    Ok(list) => list.push(value.clone()),
                    Err(why) => issues.push(cannot_apply(operation, name, why)),
                }
            }
        }
        ProfileOperation::Remove(values) => {
            for (name, value) in values {
                match props.get_mut(name) {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(list)) => list.retain(|item| item != value),
                    Some(other) => issues.push(cannot_apply(operation, name, not_a_list(other))),
                }
            }
        }
    }
    if !issues.is_empty() {
        return Err(issues);
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

/// The issue of an operation that cannot work on what the profile holds under `name`.
fn cannot_apply(operation: &ProfileOperation, name: &str, why: String) -> Issue {
    let path = child_path(operation.key(), name);
    Issue::new(&path, IssueCode::WrongType, format!("`{path}`: {why}; the update was not applied"))
}

/// `$add`: integers stay integers while they fit. A missing property counts as 0 (reference),
/// and so does `null`, which holds nothing to lose; a property that holds anything else but a
/// number, or a sum that is no finite number, is refused.
fn add(current: Option<&Value>, by: &Value) -> Result<Value, String> {
    let zero = Value::from(0);
    let current = match current {
        None | Some(Value::Null) => &zero,
        Some(v) if v.is_number() => v,
        Some(other) => {
            return Err(format!(
                "the profile's property is {}, and `$add` adds only to a number; `$set` it to a number first, or `$unset` it",
                describe(other)
            ))
        }
    };
    if let (Some(a), Some(b)) = (current.as_i64(), by.as_i64()) {
        if let Some(sum) = a.checked_add(b) {
            return Ok(Value::from(sum));
        }
    }
    let sum = current.as_f64().unwrap_or(0.0) + by.as_f64().unwrap_or(0.0);
    serde_json::Number::from_f64(sum).map(Value::Number).ok_or_else(|| {
        format!("{current} + {by} is not a finite number, which a profile property cannot hold")
    })
}

/// The list `$union` or `$append` adds to: the property's, or a new one when it is missing or
/// `null`; an error when it holds anything else (which is then left as it is).
fn list_entry<'a>(props: &'a mut Map<String, Value>, name: &str) -> Result<&'a mut Vec<Value>, String> {
    let value = props.entry(name).or_insert(Value::Null);
    if value.is_null() {
        *value = Value::Array(Vec::new());
    }
    match value {
        Value::Array(items) => Ok(items),
        other => Err(not_a_list(other)),
    }
}

fn not_a_list(value: &Value) -> String {
    format!("the profile's property is {}, not a list; `$set` it to a list first, or `$unset` it", describe(value))
}
