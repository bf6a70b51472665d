//! The migration request of spec §4.3 (`POST {migrate_url}/<source_tool>`): its model and its
//! validation, which resolves the date range (default: the 30 days up to today) against a `today`
//! the caller supplies.

use crate::issue::{child_path, Issue, IssueCode};
use crate::time::Date;
use crate::validate::describe;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Spec §4.3 / §8: without dates the range is 30 days relative to the present. This
/// implementation reads that as the 30 calendar days ending today, both ends included.
pub const DEFAULT_RANGE_DAYS: i64 = 30;

/// FACTS.md: the source's export interface serves at most 365 days per request.
pub const MAX_RANGE_DAYS: i64 = 365;

/// Spec §4.3: the only `REGION` value the spec gives.
pub const REGIONS: [&str; 1] = ["EU"];

/// Spec §4.3: the source tools the service migrates from (FACTS.md: the documented source).
pub const SOURCE_TOOLS: [&str; 1] = ["amplitude"];

/// Spec §4.3: the JSON body of a migration request, field names as on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationRequest {
    #[serde(rename = "SOURCE_API_KEY")]
    pub source_api_key: String,
    #[serde(rename = "SOURCE_API_SECRET")]
    pub source_api_secret: String,
    #[serde(rename = "TARGET_TOKEN")]
    pub target_token: String,
    #[serde(rename = "START_DATE", default, skip_serializing_if = "Option::is_none")]
    pub start_date: Option<String>,
    #[serde(rename = "END_DATE", default, skip_serializing_if = "Option::is_none")]
    pub end_date: Option<String>,
    #[serde(rename = "DRY_RUN", default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(rename = "REGION", default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// The range a valid request covers, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DateRange {
    pub start: Date,
    pub end: Date,
}

impl DateRange {
    /// The number of days covered.
    pub fn days(&self) -> i64 {
        self.end.days_since_epoch() - self.start.days_since_epoch() + 1
    }
}

/// What validation found: every issue, and the resolved range when the dates are usable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigrationCheck {
    pub issues: Vec<Issue>,
    pub range: Option<DateRange>,
}

const STRINGS: [(&str, &str); 3] = [
    ("SOURCE_API_KEY", "the key of the source tool"),
    ("SOURCE_API_SECRET", "the secret of the source tool"),
    ("TARGET_TOKEN", "the project token of the receiving project"),
];

/// Validates a migration request body (spec §4.3) against `today` (the caller's date) and
/// resolves its range: both dates `YYYY-MM-DD`, start not after end, end not after today, at most
/// 365 days (FACTS.md); a missing start is 29 days before the end, a missing end is today.
pub fn validate_migration_request(value: &Value, today: Date) -> MigrationCheck {
    let mut issues = Vec::new();
    let Value::Object(obj) = value else {
        issues.push(Issue::new("", IssueCode::WrongType, format!("the request is {}; it must be a JSON object", describe(value))));
        return MigrationCheck { issues, range: None };
    };
    const KNOWN: [&str; 7] = ["SOURCE_API_KEY", "SOURCE_API_SECRET", "TARGET_TOKEN", "START_DATE", "END_DATE", "DRY_RUN", "REGION"];
    for key in obj.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
        issues.push(Issue::new(
            child_path("", key),
            IssueCode::UnknownField,
            format!("`{key}` is not a field of a migration request; the fields are {}", KNOWN.map(|k| format!("`{k}`")).join(", ")),
        ));
    }
    for (key, what) in STRINGS {
        match obj.get(key) {
            None => issues.push(Issue::new(key, IssueCode::MissingField, format!("`{key}` is required; give {what}"))),
            Some(Value::String(s)) if s.trim().is_empty() => issues.push(Issue::new(key, IssueCode::InvalidName, format!("`{key}` is empty; give {what}"))),
            Some(Value::String(_)) => {}
            Some(other) => issues.push(Issue::new(key, IssueCode::WrongType, format!("`{key}` is {}; it must be a string, {what}", describe(other)))),
        }
    }
    let mut date = |key: &str| -> Result<Option<Date>, ()> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => match Date::parse(s) {
                Some(d) => Ok(Some(d)),
                None => {
                    issues.push(Issue::new(key, IssueCode::InvalidDate, format!("`{key}` is {s:?}; it must be a real date written YYYY-MM-DD, e.g. 2026-01-31")));
                    Err(())
                }
            },
            Some(other) => {
                issues.push(Issue::new(key, IssueCode::WrongType, format!("`{key}` is {}; it must be a date string YYYY-MM-DD", describe(other))));
                Err(())
            }
        }
    };
    let start = date("START_DATE");
    let end = date("END_DATE");
    match obj.get("DRY_RUN") {
        None | Some(Value::Bool(_)) => {}
        Some(other) => issues.push(Issue::new("DRY_RUN", IssueCode::WrongType, format!("`DRY_RUN` is {}; it must be `true` or `false`", describe(other)))),
    }
    match obj.get("REGION") {
        None => {}
        Some(Value::String(s)) if REGIONS.contains(&s.as_str()) => {}
        Some(Value::String(s)) => issues.push(Issue::new(
            "REGION",
            IssueCode::InvalidEnum,
            format!("`REGION` is {s:?}; the only value is `EU` (pass it when either project uses EU data residency), otherwise leave it out"),
        )),
        Some(other) => issues.push(Issue::new("REGION", IssueCode::WrongType, format!("`REGION` is {}; it must be the string `EU`", describe(other)))),
    }
    let range = match (start, end) {
        (Ok(start), Ok(end)) => {
            let end_given = end.is_some();
            let end = end.unwrap_or(today);
            let start = start.unwrap_or_else(|| end.add_days(-(DEFAULT_RANGE_DAYS - 1)));
            let range = DateRange { start, end };
            let before = issues.len();
            if start > end {
                let path = if end_given { "END_DATE" } else { "START_DATE" };
                issues.push(Issue::new(path, IssueCode::InvalidDateRange, format!("the range starts on {start} and ends on {end}; the start must not be after the end")));
            } else if range.days() > MAX_RANGE_DAYS {
                issues.push(Issue::new(
                    "START_DATE",
                    IssueCode::InvalidDateRange,
                    format!("the range {start} to {end} covers {} days; the source exports at most {MAX_RANGE_DAYS} days per request: split it", range.days()),
                ));
            }
            if end > today {
                issues.push(Issue::new("END_DATE", IssueCode::InvalidDateRange, format!("`END_DATE` {end} is after today ({today}); data from the future cannot be exported")));
            }
            (issues.len() == before).then_some(range)
        }
        _ => None,
    };
    MigrationCheck { issues, range }
}

/// Validates the `<source_tool>` path segment.
pub fn validate_source_tool(tool: &str) -> Option<Issue> {
    (!SOURCE_TOOLS.contains(&tool)).then(|| {
        Issue::new("source_tool", IssueCode::InvalidEnum, format!("`{tool}` is not a supported source tool; use one of {}", SOURCE_TOOLS.map(|t| format!("`{t}`")).join(", ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use IssueCode::*;

    fn today() -> Date {
        Date::parse("2026-03-15").unwrap()
    }

    fn check(extra: Value, expected: &[(&str, IssueCode)], range: Option<(&str, &str)>) {
        let mut body = json!({"SOURCE_API_KEY": "k", "SOURCE_API_SECRET": "s", "TARGET_TOKEN": "t"});
        for (k, v) in extra.as_object().unwrap() {
            if v == &json!("<remove>") {
                body.as_object_mut().unwrap().remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        let result = validate_migration_request(&body, today());
        let got: Vec<(&str, IssueCode)> = result.issues.iter().map(|i| (i.path.as_str(), i.code)).collect();
        assert_eq!(got, expected, "{body}: {:#?}", result.issues);
        let want = range.map(|(s, e)| DateRange { start: Date::parse(s).unwrap(), end: Date::parse(e).unwrap() });
        assert_eq!(result.range, want, "{body}");
        for i in &result.issues {
            assert!(!i.message.ends_with('.'), "{i}");
        }
    }

    #[test]
    fn ranges() {
        check(json!({}), &[], Some(("2026-02-14", "2026-03-15")));
        check(json!({"START_DATE": "2026-01-01", "END_DATE": "2026-01-31"}), &[], Some(("2026-01-01", "2026-01-31")));
        check(json!({"START_DATE": "2026-03-01"}), &[], Some(("2026-03-01", "2026-03-15")));
        check(json!({"END_DATE": "2026-01-30"}), &[], Some(("2026-01-01", "2026-01-30")));
        check(json!({"START_DATE": "2026-03-15", "END_DATE": "2026-03-15"}), &[], Some(("2026-03-15", "2026-03-15")));
        check(json!({"START_DATE": "2026-02-01", "END_DATE": "2026-01-31"}), &[("END_DATE", InvalidDateRange)], None);
        check(json!({"START_DATE": "2026-04-01"}), &[("START_DATE", InvalidDateRange)], None);
        check(json!({"END_DATE": "2026-03-16"}), &[("END_DATE", InvalidDateRange)], None);
        check(json!({"START_DATE": "2025-03-15"}), &[("START_DATE", InvalidDateRange)], None);
        check(json!({"START_DATE": "2025-03-16"}), &[], Some(("2025-03-16", "2026-03-15")));
        check(json!({"START_DATE": "2026-02-30", "END_DATE": "20260301"}), &[("START_DATE", InvalidDate), ("END_DATE", InvalidDate)], None);
        check(json!({"START_DATE": 20260101}), &[("START_DATE", WrongType)], None);
    }

    #[test]
    fn fields() {
        check(json!({"REGION": "EU", "DRY_RUN": true}), &[], Some(("2026-02-14", "2026-03-15")));
        check(json!({"REGION": "eu", "DRY_RUN": "yes"}), &[("DRY_RUN", WrongType), ("REGION", InvalidEnum)], Some(("2026-02-14", "2026-03-15")));
        check(
            json!({"SOURCE_API_KEY": "<remove>", "SOURCE_API_SECRET": " ", "TARGET_TOKEN": 5, "EXTRA": 1}),
            &[("EXTRA", UnknownField), ("SOURCE_API_KEY", MissingField), ("SOURCE_API_SECRET", InvalidName), ("TARGET_TOKEN", WrongType)],
            Some(("2026-02-14", "2026-03-15")),
        );
        assert_eq!(validate_migration_request(&json!([]), today()).issues[0].code, WrongType);
        assert!(validate_source_tool("amplitude").is_none());
        assert_eq!(validate_source_tool("heap").unwrap().code, InvalidEnum);
        let req: MigrationRequest = serde_json::from_value(json!({"SOURCE_API_KEY": "k", "SOURCE_API_SECRET": "s", "TARGET_TOKEN": "t", "REGION": "EU"})).unwrap();
        assert_eq!(req.region.as_deref(), Some("EU"));
        assert_eq!(serde_json::to_value(&req).unwrap()["TARGET_TOKEN"], "t");
    }
}
