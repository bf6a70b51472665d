//! The rule of the `datadict violations` CI gate (issue 20): which codes `--fail-on` takes, which
//! of a project's recorded violations and rejected records fail the gate, and how a `since` or
//! `until` value reads (a `YYYY-MM-DD` date, milliseconds since the epoch, or a time before now
//! such as `10m`). Pure functions, so that the npm command line (through the wasm package) and the
//! server's data-quality API read them alike.

use crate::time::Date;
use serde_json::Value;

/// The codes `--fail-on` takes: `any` (any violation or rejected record), `rejected` (any
/// rejected record), or one of the issue codes the core's dictionary check gives.
pub const FAIL_ON: [&str; 9] =
    ["any", "rejected", "no_schema", "unknown_property", "type_mismatch", "hidden_event", "hidden_property", "dropped_event", "dropped_property"];

/// A `--fail-on` value that names no code of [`FAIL_ON`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--fail-on `{0}` is not a code: use {codes} (repeat the flag or separate codes with commas)", codes = FAIL_ON.join(", "))]
pub struct UnknownFailOnCode(pub String);

/// The codes of the `--fail-on` values given (each flag may hold several, separated by commas),
/// each once, in the order first given; `any` when none is given.
pub fn fail_on_codes<S: AsRef<str>>(values: &[S]) -> Result<Vec<String>, UnknownFailOnCode> {
    if values.is_empty() {
        return Ok(vec!["any".to_owned()]);
    }
    let mut codes: Vec<String> = Vec::new();
    for code in values.iter().flat_map(|v| v.as_ref().split(',')).map(str::trim) {
        if !FAIL_ON.contains(&code) {
            return Err(UnknownFailOnCode(code.to_owned()));
        }
        if !codes.iter().any(|c| c == code) {
            codes.push(code.to_owned());
        }
    }
    Ok(codes)
}

/// What of `codes` occurred in a quality summary (the `results` of `GET quality/summary`: its
/// `violations.by_code` counts and `rejected.total`): `(label, count)` pairs, each label once, in
/// the order the codes name them; empty when the gate passes. `any` stands for every violation
/// code that occurred and for `rejected`; a code that did not occur adds nothing.
pub fn gate_hits(summary: &Value, codes: &[String]) -> Vec<(String, i64)> {
    let mut hits: Vec<(String, i64)> = Vec::new();
    let mut hit = |label: &str, n: i64| match hits.iter_mut().find(|(l, _)| l == label) {
        Some(slot) => slot.1 = n,
        None => hits.push((label.to_owned(), n)),
    };
    let by_code = summary["violations"]["by_code"].as_object();
    let count = |code: &str| by_code.and_then(|m| m.get(code)).and_then(Value::as_i64).unwrap_or(0);
    let rejected = summary["rejected"]["total"].as_i64().unwrap_or(0);
    for code in codes {
        match code.as_str() {
            "any" | "rejected" => {
                if code == "any" {
                    for (c, n) in by_code.into_iter().flatten() {
                        if let Some(n) = n.as_i64().filter(|n| *n > 0) {
                            hit(c, n);
                        }
                    }
                }
                if rejected > 0 {
                    hit("rejected", rejected);
                }
            }
            c if count(c) > 0 => hit(c, count(c)),
            _ => {}
        }
    }
    hits
}

/// The instant a `since`/`until` value names, in milliseconds since the epoch: milliseconds given
/// as an integer, the start (UTC) of a `YYYY-MM-DD` date, or a whole number of seconds, minutes,
/// hours or days before `now_ms` (`30s`, `10m`, `2h`, `7d`). `None` for anything else.
pub fn parse_since(raw: &str, now_ms: i64) -> Option<i64> {
    if let Ok(ms) = raw.parse::<i64>() {
        return Some(ms);
    }
    if let Some(date) = Date::parse(raw) {
        return Some(date.start_ms());
    }
    let unit: i64 = match raw.chars().last()? {
        's' => 1_000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        _ => return None,
    };
    // The unit is one ASCII byte. A negative count (`-5m`) would be a time after now.
    let n = raw[..raw.len() - 1].parse::<i64>().ok().filter(|n| *n >= 0)?;
    Some(now_ms.saturating_sub(n.saturating_mul(unit)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(values: &[&str]) -> Vec<String> {
        fail_on_codes(values).unwrap()
    }

    #[test]
    fn fail_on_values_are_split_checked_and_deduplicated() {
        assert_eq!(codes(&[]), ["any"]);
        assert_eq!(codes(&["type_mismatch"]), ["type_mismatch"]);
        assert_eq!(codes(&["unknown_property, type_mismatch", "rejected", "type_mismatch"]), ["unknown_property", "type_mismatch", "rejected"]);
        let e = fail_on_codes(&["no_schema,oops"]).unwrap_err();
        assert_eq!(e, UnknownFailOnCode("oops".into()));
        assert!(e.to_string().starts_with("--fail-on `oops` is not a code: use any, rejected, no_schema,"), "{e}");
        assert!(fail_on_codes(&["a,,b"]).is_err() && fail_on_codes(&[""]).is_err());
    }

    fn summary(by_code: Value, rejected: i64) -> Value {
        json!({"violations": {"total": 0, "by_code": by_code}, "rejected": {"total": rejected, "by_code": {}}})
    }

    fn hits(summary: &Value, values: &[&str]) -> Vec<(String, i64)> {
        gate_hits(summary, &codes(values))
    }

    #[test]
    fn the_gate_fails_on_the_chosen_codes_only() {
        let s = summary(json!({"no_schema": 2, "type_mismatch": 1, "hidden_event": 0}), 3);
        let pair = |l: &str, n: i64| (l.to_owned(), n);
        assert_eq!(hits(&s, &["any"]), [pair("no_schema", 2), pair("type_mismatch", 1), pair("rejected", 3)]);
        assert_eq!(hits(&s, &["rejected"]), [pair("rejected", 3)]);
        assert_eq!(hits(&s, &["type_mismatch", "no_schema"]), [pair("type_mismatch", 1), pair("no_schema", 2)]);
        assert_eq!(hits(&s, &["unknown_property", "hidden_event"]), []);
        assert_eq!(hits(&s, &["type_mismatch", "any"]), [pair("type_mismatch", 1), pair("no_schema", 2), pair("rejected", 3)]);
        let clean = summary(json!({}), 0);
        assert!(hits(&clean, &["any"]).is_empty() && hits(&clean, &["rejected", "no_schema"]).is_empty());
        assert!(gate_hits(&json!({}), &codes(&["any"])).is_empty(), "a summary without counts passes");
    }

    #[test]
    fn since_values_are_dates_milliseconds_or_times_before_now() {
        let now = 1_767_225_600_000;
        assert_eq!(parse_since("1767225600000", now), Some(1_767_225_600_000));
        assert_eq!(parse_since("2026-01-01", now), Some(1_767_225_600_000));
        assert_eq!(parse_since("30s", now), Some(now - 30_000));
        assert_eq!(parse_since("10m", now), Some(now - 600_000));
        assert_eq!(parse_since("2h", now), Some(now - 7_200_000));
        assert_eq!(parse_since("7d", now), Some(now - 7 * 86_400_000));
        assert_eq!(parse_since("0m", now), Some(now));
        for bad in ["", "m", "soon", "-5m", "5 m", "5w", "1.5h", "2026-13-01", "é"] {
            assert_eq!(parse_since(bad, now), None, "{bad}");
        }
    }
}
