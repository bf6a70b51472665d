//! The cap on schemas removed by one request (FACTS.md: 3,000 truncations or deletions), and the
//! hint of its refusal: which smaller requests would pass, from the counts the refused delete
//! found, so that the hint never suggests a request that is over the cap too.

use crate::error::ApiError;
use crate::store;
use datadict_core::{count, EntityType};

/// What a delete removed, per entity type (the types it covered, in `EntityType::ALL` order).
pub type Removed = Vec<(EntityType, usize)>;

/// Deletes the schemas of `entity_type` (every type when `None`) named `name` (any when `None`),
/// one statement per type, and says how many of each went.
pub fn delete_counting(conn: &store::Conn<'_>, project_id: i64, entity_type: Option<EntityType>, name: Option<&str>) -> anyhow::Result<Removed> {
    let types = match entity_type {
        Some(t) => vec![t],
        None => EntityType::ALL.to_vec(),
    };
    types.into_iter().map(|t| Ok((t, store::delete_schemas(conn, project_id, Some(t), name)?))).collect()
}

/// How many schemas a delete removed, of every type.
pub fn total(removed: &Removed) -> usize {
    removed.iter().map(|(_, n)| n).sum()
}

/// Refuses a request that removed more schemas than one request may. The answer is 400, not
/// 413: the body is not too large (a DELETE has none, and a `truncate` upload may send a single
/// entry), the request's scope is, and only a narrower request succeeds, which is what a 400 tells
/// a client; a 413 would invite it to send fewer bytes, which changes nothing. `then` is what to
/// do once the smaller deletes are done (a `truncate` upload: upload without it).
pub fn check_deletions(config: &crate::Config, removed: &Removed, then: &str) -> Result<(), ApiError> {
    let total = total(removed);
    match config.schema_deletion_limit {
        Some(max) if total as u64 > max => Err(ApiError::BadRequest(format!(
            "this request would remove {total} schemas, more than the {max} one request may remove; nothing was removed; {}{then}",
            hint(max, removed)
        ))),
        _ => Ok(()),
    }
}

/// Smaller requests that pass under the cap `max`: a whole entity type where it is within the
/// cap; for a type over it on its own, only a higher cap or deletes by name.
fn hint(max: u64, removed: &Removed) -> String {
    let schemas = |t: EntityType, n: usize| count(n as u64, &format!("{t} schema"), &format!("{t} schemas"));
    let (within, over): (Vec<_>, Vec<_>) = removed.iter().filter(|(_, n)| *n > 0).partition(|(_, n)| *n as u64 <= max);
    let by_type = |(t, n): &(EntityType, usize)| format!("`DELETE .../schemas/{t}` for the {}", schemas(*t, *n));
    if over.is_empty() {
        let steps: Vec<String> = within.iter().map(by_type).collect();
        return format!("delete one entity type at a time: {}", steps.join(", then "));
    }
    let over_names: Vec<String> = over.iter().map(|(t, n)| format!("the {}", schemas(*t, *n))).collect();
    let by_name: Vec<String> = over.iter().map(|(t, _)| format!("`DELETE .../schemas/{t}/{{name}}`")).collect();
    // A type over the cap holds two schemas or more (a cap of 0 is no cap), hence the plural.
    let mut text = format!(
        "{} are over the cap on their own: raise the server's `--schema-deletion-limit` (0 removes the cap), or delete by name ({})",
        over_names.join(" and "),
        by_name.join(", "),
    );
    if !within.is_empty() {
        let steps: Vec<String> = within.iter().map(by_type).collect();
        text.push_str(&format!(", and use {}", steps.join(" and ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use EntityType::{Event, Profile};

    #[track_caller]
    fn check(max: u64, removed: &[(EntityType, usize)], expected: &str) {
        assert_eq!(hint(max, &removed.to_vec()), expected);
    }

    #[test]
    fn hints_name_only_requests_within_the_cap() {
        check(3, &[(Event, 3), (Profile, 1)], "delete one entity type at a time: `DELETE .../schemas/event` for the 3 event schemas, then `DELETE .../schemas/profile` for the 1 profile schema");
        check(3, &[(Event, 4), (Profile, 0)], "the 4 event schemas are over the cap on their own: raise the server's `--schema-deletion-limit` (0 removes the cap), or delete by name (`DELETE .../schemas/event/{name}`)");
        check(3, &[(Event, 4), (Profile, 1)], "the 4 event schemas are over the cap on their own: raise the server's `--schema-deletion-limit` (0 removes the cap), or delete by name (`DELETE .../schemas/event/{name}`), and use `DELETE .../schemas/profile` for the 1 profile schema");
        check(1, &[(Event, 2), (Profile, 2)], "the 2 event schemas and the 2 profile schemas are over the cap on their own: raise the server's `--schema-deletion-limit` (0 removes the cap), or delete by name (`DELETE .../schemas/event/{name}`, `DELETE .../schemas/profile/{name}`)");
        check(3, &[(Event, 4)], "the 4 event schemas are over the cap on their own: raise the server's `--schema-deletion-limit` (0 removes the cap), or delete by name (`DELETE .../schemas/event/{name}`)");
    }
}
