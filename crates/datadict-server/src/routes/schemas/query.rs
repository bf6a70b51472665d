//! The query string of the schemas routes, read strictly. axum's `Query` ignores a parameter it
//! does not know and decodes bytes that are not UTF-8 to U+FFFD, so a misspelled filter
//! (`?entityName=a`) deleted a whole entity type and `?entity_name=%FF` matched a schema named
//! `�`. Here a write route refuses any parameter it does not take, and every route refuses a
//! value that is not UTF-8 once percent-decoded, in the words the path's own refusal uses.

use crate::error::ApiError;
use datadict_core::wire::form::{percent_decode, raw_pairs};

/// What a schemas route may be given in its query string (FACTS.md: only `entity_name`, and only
/// on `/schemas/{entityType}`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Params {
    pub entity_name: Option<String>,
}

/// Whether a route refuses the parameters it does not take. Write routes do, since a filter they
/// ignore widens what they delete or write; reads ignore them, as they always have (a client may
/// add one to defeat a cache), since a wider read loses nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    Refuse,
    Ignore,
}

/// Reads `raw` (the query string without `?`) for a route that takes the parameters `takes`.
pub fn read_params(raw: Option<&str>, takes: &[&str], unknown: Unknown) -> Result<Params, ApiError> {
    let mut params = Params::default();
    let mut strangers: Vec<String> = Vec::new();
    for pair in raw_pairs(raw.unwrap_or_default().as_bytes()) {
        let name = decode(pair.name, "a parameter name")?;
        if !takes.contains(&name.as_str()) {
            if unknown == Unknown::Refuse && !strangers.contains(&name) {
                strangers.push(name);
            }
            continue;
        }
        let value = decode(pair.value, &format!("`{name}`"))?;
        // `entity_name` is the only parameter any schemas route takes.
        if params.entity_name.replace(value).is_some() {
            return Err(unreadable(&format!("duplicate field `{name}`"), "give it once; see the parameters in /openapi.json"));
        }
    }
    if strangers.is_empty() {
        return Ok(params);
    }
    let named = strangers.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ");
    let found = if strangers.len() == 1 { format!("unknown parameter {named}") } else { format!("unknown parameters {named}") };
    let takes = match takes {
        [] => "this route takes no parameters".to_owned(),
        _ => format!("this route takes only {}", takes.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")),
    };
    Err(unreadable(&format!("{found}; {takes}"), "nothing was changed; correct or remove it, and see the parameters in /openapi.json"))
}

/// Percent-decodes a name or value and checks that it is UTF-8; `what` names it in a refusal.
fn decode(encoded: &[u8], what: &str) -> Result<String, ApiError> {
    let bytes = percent_decode(encoded).map_err(|e| {
        unreadable(&format!("bad percent-encoding in {what} at `{}`", e.found), "write a `%` as `%25` and any other byte as `%` and two hex digits")
    })?;
    // Decoded lossily, `%FF` would be U+FFFD and match a name made of it: refused instead, in
    // the words of the path's refusal (`error::ApiPath`, axum's), so that both read alike.
    String::from_utf8(bytes.into_owned())
        .map_err(|_| unreadable(&format!("Invalid UTF-8 in {what}"), "percent-encode each parameter as UTF-8 text"))
}

/// The refusal of a query string: what was found, then what to do.
fn unreadable(why: &str, advice: &str) -> ApiError {
    ApiError::BadRequest(format!("the query string cannot be read ({why}); {advice}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `raw` for a route taking `takes` and compares the name found, or a piece of the
    /// refusal.
    #[track_caller]
    fn check(raw: &str, takes: &[&str], unknown: Unknown, expected: Result<Option<&str>, &str>) {
        match (read_params(Some(raw), takes, unknown), expected) {
            (Ok(params), Ok(name)) => assert_eq!(params.entity_name.as_deref(), name, "{raw}"),
            (Err(e), Err(needle)) => {
                let message = e.to_string();
                assert!(message.contains(needle), "`{needle}` missing from the refusal of {raw:?}: {message}");
                assert!(message.starts_with("the query string cannot be read ("), "{message}");
                assert!(!message.ends_with('.') && !message.ends_with(' '), "{message}");
            }
            (got, want) => panic!("{raw:?}: got {got:?}, want {want:?}"),
        }
    }

    const NAME: &[&str] = &["entity_name"];

    #[test]
    fn names_values_and_refusals() {
        use Unknown::*;
        check("", NAME, Refuse, Ok(None));
        check("entity_name=Sign+Up", NAME, Refuse, Ok(Some("Sign Up")));
        check("entity_name=%24user&", NAME, Refuse, Ok(Some("$user")));
        check("entity%5Fname=%C3%A9", NAME, Refuse, Ok(Some("é")));
        check("entity_name", NAME, Refuse, Ok(Some("")));
        check("entityName=a", NAME, Refuse, Err("(unknown parameter `entityName`; this route takes only `entity_name`); nothing was changed"));
        check("entity_name=%24user", &[], Refuse, Err("unknown parameter `entity_name`; this route takes no parameters"));
        check("a=1&b=2&a=3", &[], Refuse, Err("unknown parameters `a`, `b`;"));
        check("entityName=a&_=1", NAME, Ignore, Ok(None));
        check("entity_name=a&entity_name=b", NAME, Ignore, Err("duplicate field `entity_name`"));
        check("entity_name=%ff", NAME, Ignore, Err("(Invalid UTF-8 in `entity_name`); percent-encode"));
        check("entity_name=%EF%BF%BD", NAME, Refuse, Ok(Some("\u{fffd}")));
        check("%ff=1", NAME, Ignore, Err("Invalid UTF-8 in a parameter name"));
        check("entity_name=50%off", NAME, Ignore, Err("bad percent-encoding in `entity_name` at `%of`"));
    }
}
