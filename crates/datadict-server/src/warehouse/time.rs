//! The time column of a warehouse row, read as milliseconds since the epoch: a number (seconds
//! below 10^11, else milliseconds), a string holding one, a date `YYYY-MM-DD`, or a date and time
//! in ISO 8601 (`T` or a space between them, seconds and fractions optional) in UTC or with an
//! offset (`Z`, `z`, ` UTC`, `+02:00`, `-0500`, `+00`). Kept here, not in the core: `/import`
//! takes numbers only (FACTS.md), so this reading is the warehouse's own.

use datadict_core::time::Date;
use serde_json::Value;

/// The last millisecond of the year 9999, the latest time an event may have.
const MAX_MS: f64 = 253_402_300_799_999.0;

/// The milliseconds of `v`, or why it is not a time (a sentence naming the value as written).
pub fn time_ms(v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(n) => number_ms(n.as_f64().unwrap_or(f64::NAN), &n.to_string()),
        Value::String(s) => {
            let s = s.trim();
            if is_decimal(s) {
                return number_ms(s.parse::<f64>().unwrap_or(f64::NAN), s);
            }
            parse_text(s).ok_or_else(|| format!("holds the text {v}, which is not a time"))
        }
        other => Err(format!("holds {other}, which is not a time")),
    }
}

/// Whether `s` spells a decimal number (`-12`, `1.5`, `1e9`): not `NaN`, `inf` or `infinity`,
/// which Rust's float parser also reads.
fn is_decimal(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    let mantissa = mantissa.strip_prefix(['-', '+']).unwrap_or(mantissa);
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mantissa_ok = (digits(whole) || digits(frac)) && (whole.is_empty() || digits(whole)) && (frac.is_empty() || digits(frac));
    mantissa_ok && exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)))
}

fn number_ms(f: f64, written: &str) -> Result<i64, String> {
    if !f.is_finite() {
        return Err(format!("holds {written}, which is not a time"));
    }
    let ms = if f.abs() < 1e11 { f * 1000.0 } else { f };
    if ms.abs() > MAX_MS {
        // Epochs in finer units than milliseconds are common in warehouses.
        let hint = if f.abs() < 1e17 { "it looks like microseconds: divide it by 1,000" } else { "it looks like nanoseconds: divide it by 1,000,000" };
        return Err(format!("holds {written}, which is after the year 9999 as milliseconds; {hint}"));
    }
    Ok(ms.round() as i64)
}

/// Two ASCII digits as a number.
fn two(b: &[u8]) -> Option<i64> {
    match b {
        [a, c] if a.is_ascii_digit() && c.is_ascii_digit() => Some(i64::from(a - b'0') * 10 + i64::from(c - b'0')),
        _ => None,
    }
}

/// A date, or a date and time with an optional zone, in milliseconds (see the module's text).
fn parse_text(s: &str) -> Option<i64> {
    let date = Date::parse(s.get(..10)?)?.start_ms();
    let rest = &s[10..];
    if rest.is_empty() {
        return Some(date);
    }
    let t = rest.strip_prefix(['T', 't', ' '])?.as_bytes();
    let (h, m) = (two(t.get(0..2)?)?, two(t.get(3..5)?)?);
    if t[2] != b':' || h > 23 || m > 59 {
        return None;
    }
    let mut i = 5;
    let (mut sec, mut millis) = (0, 0);
    if t.get(i) == Some(&b':') {
        sec = two(t.get(i + 1..i + 3)?)?;
        if sec > 60 {
            return None;
        }
        i += 3;
        if matches!(t.get(i), Some(b'.' | b',')) {
            let digits = t[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            // Only the first three digits matter for milliseconds; the rest is truncated.
            millis = t[i + 1..i + 1 + digits.min(3)].iter().fold(0, |acc, c| acc * 10 + i64::from(c - b'0')) * 10i64.pow(3 - digits.min(3) as u32);
            i += 1 + digits;
        }
    }
    let offset_min = zone(std::str::from_utf8(&t[i..]).ok()?)?;
    Some(date + ((h * 60 + m) * 60 + sec) * 1000 + millis - offset_min * 60_000)
}

/// The offset east of UTC, in minutes, of a zone written after a time; `None` for anything else.
fn zone(z: &str) -> Option<i64> {
    match z {
        "" | "Z" | "z" | " UTC" | "UTC" | " Z" => return Some(0),
        _ => {}
    }
    let sign = match z.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let b = &z.as_bytes()[1..];
    let (h, m) = match b.len() {
        2 => (two(b)?, 0),
        4 => (two(&b[..2])?, two(&b[2..])?),
        5 if b[2] == b':' => (two(&b[..2])?, two(&b[3..])?),
        _ => return None,
    };
    (h <= 23 && m <= 59).then_some(sign * (h * 60 + m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(input: Value, expected: Result<i64, &str>) {
        match (time_ms(&input), expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{input}"),
            (Err(got), Err(needle)) => assert!(got.contains(needle), "{input}: {got}"),
            (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn times() {
        const T: i64 = 1_700_000_000_000; // 2023-11-14T22:13:20Z
        check(json!(1_700_000_000), Ok(T));
        check(json!(1_700_000_000_123i64), Ok(T + 123));
        check(json!(1_700_000_000.5), Ok(T + 500));
        check(json!("1700000000"), Ok(T));
        check(json!("2023-11-14 22:13:20"), Ok(T));
        check(json!("2023-11-14T22:13:20Z"), Ok(T));
        check(json!("2023-11-14t22:13:20z"), Ok(T));
        check(json!("2023-11-14 22:13:20 UTC"), Ok(T));
        check(json!("2023-11-14T22:13:20.250+00:00"), Ok(T + 250));
        check(json!("2023-11-14T22:13:20.2509"), Ok(T + 250));
        check(json!("2023-11-15T00:13:20+02:00"), Ok(T));
        check(json!("2023-11-14T17:13:20-0500"), Ok(T));
        check(json!("2023-11-14T22:13:20+0000"), Ok(T));
        check(json!("2023-11-14T23:13:20+01"), Ok(T));
        check(json!("2023-11-14T22:13"), Ok(T - 20_000));
        check(json!("2023-11-14T22:13Z"), Ok(T - 20_000));
        check(json!("2023-11-14"), Ok(1_699_920_000_000));
        check(json!("2023-11-14T22:13:20ZZ"), Err("the text \"2023-11-14T22:13:20ZZ\""));
        check(json!("2023-11-14T22:13:20+2"), Err("not a time"));
        check(json!("2023-11-14T25:13:20"), Err("not a time"));
        check(json!("2023-11-14T22:13:20."), Err("not a time"));
        check(json!("yesterday"), Err("the text \"yesterday\", which is not a time"));
        check(json!("NaN"), Err("the text \"NaN\""));
        check(json!("inf"), Err("the text \"inf\""));
        check(json!("-Infinity"), Err("the text \"-Infinity\""));
        check(json!(1_700_000_000_000_000i64), Err("microseconds"));
        check(json!("1700000000000000000"), Err("nanoseconds"));
        check(json!(true), Err("holds true"));
    }
}
