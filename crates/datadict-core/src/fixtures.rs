//! The fixture harness: `tests/data/valid/*.json` must produce no issue and
//! `tests/data/invalid/*.json` exactly their `expected` issues (`"path:code"`, in order). The files
//! are compiled in (see build.rs), so the same list runs natively here and as wasm in browsers
//! through the binding (crates/datadict-wasm/tests/browser.rs), each with its own runner.

use crate::issue::Issue;
use crate::limits::Limits;
use crate::profile::TokenRule;
use crate::time::Date;
use crate::validate::SchemaRules;
use serde::Deserialize;
use serde_json::Value;

/// One fixture file as compiled in.
#[derive(Debug, Clone, Copy)]
pub struct FixtureFile {
    /// `valid/<name>.json` or `invalid/<name>.json`.
    pub name: &'static str,
    pub valid: bool,
    pub text: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/fixtures.rs"));

/// What a fixture file holds.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fixture {
    /// `event`, `event_dictionary` (an event checked against `options.dictionary`),
    /// `schema_entry`, `profile_update`, `migration_request` or `batch_body`.
    pub kind: String,
    pub description: String,
    #[serde(default)]
    pub options: FixtureOptions,
    /// The input as JSON; events are checked on its text.
    #[serde(default)]
    pub input: Option<Value>,
    /// The input as raw text, for inputs that are not JSON.
    #[serde(default)]
    pub input_text: Option<String>,
    /// `"path:code"` of every expected issue, in order (invalid fixtures only).
    #[serde(default)]
    pub expected: Option<Vec<String>>,
}

/// Per-fixture settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FixtureOptions {
    pub now_ms: Option<i64>,
    /// `YYYY-MM-DD`, for migration requests.
    pub today: Option<String>,
    pub limits: Option<Limits>,
    pub namespace: Option<String>,
    pub token_optional: Option<bool>,
    /// The project's schemas, for `event_dictionary` fixtures.
    pub dictionary: Option<Vec<crate::SchemaEntry>>,
}

impl Fixture {
    /// The input as text (the raw text, or the JSON input serialized).
    pub fn text(&self) -> String {
        match (&self.input_text, &self.input) {
            (Some(t), _) => t.clone(),
            (None, Some(v)) => v.to_string(),
            (None, None) => String::new(),
        }
    }
}

/// `"path:code"` of each issue, the form fixtures state expectations in.
pub fn issue_keys(issues: &[Issue]) -> Vec<String> {
    issues.iter().map(|i| format!("{}:{}", i.path, i.code)).collect()
}

/// Runs a fixture through the core directly.
pub fn run_native(f: &Fixture) -> Result<Vec<String>, String> {
    let o = &f.options;
    let limits = o.limits.clone().unwrap_or_default();
    let rules = SchemaRules { namespace: o.namespace.clone().unwrap_or_else(|| crate::DEFAULT_NAMESPACE.to_owned()) };
    let input = || f.input.clone().ok_or_else(|| format!("a `{}` fixture needs `input`", f.kind));
    let issues = match f.kind.as_str() {
        "event" => crate::check_event(f.text().as_bytes(), &limits, o.now_ms.ok_or("an event fixture needs options.nowMs")?).issues,
        "event_dictionary" => {
            let dictionary = crate::Dictionary::new(o.dictionary.as_deref().ok_or("an event_dictionary fixture needs options.dictionary")?, &rules.namespace);
            let text = f.text();
            let checked = crate::check_event(text.as_bytes(), &limits, i64::MAX / 2);
            crate::check_against_dictionary(&checked, &dictionary).issues
        }
        "schema_entry" => crate::validate_schema_entry(&input()?, &rules),
        "profile_update" => {
            let token = if o.token_optional == Some(true) { TokenRule::Optional } else { TokenRule::Required };
            crate::validate_profile_update(&input()?, &limits, token)
        }
        "migration_request" => {
            let today = o.today.as_deref().and_then(Date::parse).ok_or("a migration fixture needs options.today as YYYY-MM-DD")?;
            crate::validate_migration_request(&input()?, today).issues
        }
        "batch_body" => crate::validate_batch_body(&input()?, &rules),
        other => return Err(format!("unknown fixture kind `{other}`")),
    };
    Ok(issue_keys(&issues))
}

/// Runs every fixture with `run` and returns how many passed, or every failure in one message.
pub fn check_all(run: impl Fn(&Fixture) -> Result<Vec<String>, String>) -> Result<usize, String> {
    let mut failures = Vec::new();
    for file in FIXTURES {
        let fixture: Fixture = match serde_json::from_str(file.text) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{}: not a fixture ({e})", file.name));
                continue;
            }
        };
        let expected = match (file.valid, &fixture.expected) {
            (true, None) => Vec::new(),
            (true, Some(_)) => {
                failures.push(format!("{}: a valid fixture must not list `expected`", file.name));
                continue;
            }
            (false, Some(e)) if !e.is_empty() => e.clone(),
            (false, _) => {
                failures.push(format!("{}: an invalid fixture must list its expected issues", file.name));
                continue;
            }
        };
        match run(&fixture) {
            Ok(got) if got == expected => {}
            Ok(got) => failures.push(format!("{} ({}): expected {expected:?}, got {got:?}", file.name, fixture.description)),
            Err(e) => failures.push(format!("{}: {e}", file.name)),
        }
    }
    if failures.is_empty() {
        Ok(FIXTURES.len())
    } else {
        Err(failures.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixture_passes_natively() {
        assert!(FIXTURES.len() >= 40, "the fixture list is generated from tests/data ({} found)", FIXTURES.len());
        assert!(FIXTURES.iter().any(|f| f.valid) && FIXTURES.iter().any(|f| !f.valid));
        match check_all(run_native) {
            Ok(n) => assert_eq!(n, FIXTURES.len()),
            Err(failures) => panic!("fixtures failed:\n{failures}"),
        }
    }

    #[test]
    fn the_harness_notices_a_wrong_expectation() {
        // A runner that reports nothing must fail every invalid fixture.
        let err = check_all(|_| Ok(Vec::new())).unwrap_err();
        let invalid = FIXTURES.iter().filter(|f| !f.valid).count();
        assert_eq!(err.lines().count(), invalid);
    }
}
