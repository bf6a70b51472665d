//! Calendar arithmetic in UTC without a clock: the core never reads the time, callers pass it in
//! (`now_ms`), so every rule that depends on "now" is deterministic and testable.

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// A calendar date (proleptic Gregorian, UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    pub year: i32,
    pub month: u32,
    pub day: u32,
}

impl Date {
    /// Days since 1970-01-01 (negative before it).
    pub fn days_since_epoch(self) -> i64 {
        // Counting from March 1st puts the leap day last in the year, so a year's length only
        // matters through the closing February.
        let y = i64::from(self.year) - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let mp = if m > 2 { m - 3 } else { m + 9 };
        let doy = (153 * mp + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01.
    pub fn from_days_since_epoch(days: i64) -> Self {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Self { year, month, day }
    }

    /// The date of an instant given in milliseconds since the epoch.
    pub fn from_ms(ms: i64) -> Self {
        Self::from_days_since_epoch(ms.div_euclid(DAY_MS))
    }

    /// Midnight UTC at the start of this date, in milliseconds since the epoch.
    pub fn start_ms(self) -> i64 {
        self.days_since_epoch() * DAY_MS
    }

    /// The date `days` later (or earlier when negative).
    pub fn add_days(self, days: i64) -> Self {
        Self::from_days_since_epoch(self.days_since_epoch() + days)
    }

    /// Parses exactly `YYYY-MM-DD` (spec §4.3) and rejects dates that do not exist (`2025-02-30`).
    pub fn parse(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let digits = |r: std::ops::Range<usize>| -> Option<u32> {
            b[r].iter().try_fold(0u32, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0')))
        };
        let year = digits(0..4)? as i32;
        let month = digits(5..7)?;
        let day = digits(8..10)?;
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        Some(Self { year, month, day })
    }
}

/// Dates travel as `YYYY-MM-DD` strings.
impl serde::Serialize for Date {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Date {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Date::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("{s:?} is not a date written YYYY-MM-DD")))
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// Whether `year` has a February 29th.
pub fn is_leap_year(year: i32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// The number of days of `month` (1–12) in `year`.
pub fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// The first and last instants a message shows as a date: the years 1 to 9999. A time beyond
/// them (a huge number, saturated to `i64`'s range) is described instead: the date of the
/// saturated value (the year 292278994) would be the saturation's, not the sender's.
const FIRST_DATED_MS: i64 = -62_135_596_800_000;
const LAST_DATED_MS: i64 = 253_402_300_799_999;

fn beyond_the_calendar(ms: i64) -> Option<&'static str> {
    if ms < FIRST_DATED_MS {
        Some("before the year 1")
    } else if ms > LAST_DATED_MS {
        Some("after the year 9999")
    } else {
        None
    }
}

/// Formats an instant as `YYYY-MM-DD` for messages (or says it is beyond the years 1 to 9999).
pub fn format_date(ms: i64) -> String {
    match beyond_the_calendar(ms) {
        Some(beyond) => beyond.to_owned(),
        None => {
            // Digit by digit: `format!` took a thousand instructions, and every tracked event's
            // data-quality rows are labelled with their day. The year is 1 to 9999 here.
            let Date { year, month, day } = Date::from_ms(ms);
            let year = year.unsigned_abs();
            let digit = |n: u32| char::from(b'0' + (n % 10) as u8);
            [digit(year / 1000), digit(year / 100), digit(year / 10), digit(year), '-', digit(month / 10), digit(month), '-', digit(day / 10), digit(day)]
                .into_iter()
                .collect()
        }
    }
}

/// Formats an instant as `YYYY-MM-DDTHH:MM:SSZ` for messages (or says it is beyond the years 1
/// to 9999).
pub fn format_datetime(ms: i64) -> String {
    if let Some(beyond) = beyond_the_calendar(ms) {
        return beyond.to_owned();
    }
    let date = Date::from_ms(ms);
    let in_day = ms.rem_euclid(DAY_MS) / 1000;
    format!("{date}T{:02}:{:02}:{:02}Z", in_day / 3600, in_day / 60 % 60, in_day % 60)
}

/// Parses `YYYY-MM-DD HH:MM:SS[.ffffff]` (the source tool's `event_time`, UTC without a zone,
/// FACTS.md) into milliseconds since the epoch. A `T` between date and time is accepted too.
pub fn parse_naive_utc_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.len() < 19 {
        return None;
    }
    let (date, rest) = s.split_at(10);
    let date = Date::parse(date)?;
    let rest = rest.strip_prefix(' ').or_else(|| rest.strip_prefix('T'))?;
    let rb = rest.as_bytes();
    if rb.len() < 8 || rb[2] != b':' || rb[5] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        rb[r].iter().try_fold(0i64, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0')))
    };
    let (h, m, sec) = (num(0..2)?, num(3..5)?, num(6..8)?);
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let mut millis = 0;
    if rb.len() > 8 {
        let frac = rest[8..].strip_prefix('.')?;
        if frac.is_empty() || !frac.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        // Only the first three digits matter for milliseconds; the rest is truncated.
        let padded = format!("{:0<3}", &frac[..frac.len().min(3)]);
        millis = padded.parse::<i64>().ok()?;
    }
    Some(date.start_ms() + ((h * 60 + m) * 60 + sec) * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(date: &str, days: i64) {
        let d = Date::parse(date).unwrap_or_else(|| panic!("{date} should parse"));
        assert_eq!(d.days_since_epoch(), days, "{date}");
        assert_eq!(Date::from_days_since_epoch(days), d, "{days}");
        assert_eq!(d.to_string(), date);
    }

    #[test]
    fn dates_convert_both_ways() {
        check("1970-01-01", 0);
        check("1971-01-01", 365);
        check("2000-02-29", 11_016);
        check("2000-03-01", 11_017);
        check("1969-12-31", -1);
        check("2026-11-22", 20_779);
    }

    #[test]
    fn every_day_over_several_centuries_round_trips() {
        let mut prev = Date::from_days_since_epoch(-150_000);
        for days in -149_999..150_000 {
            let d = Date::from_days_since_epoch(days);
            assert_eq!(d.days_since_epoch(), days);
            assert!(d > prev, "{d} after {prev}");
            prev = d;
        }
    }

    #[test]
    fn invalid_dates_are_rejected() {
        for bad in ["2025-02-29", "2025-13-01", "2025-00-10", "2025-1-01", "20250101", "2025-01-32", "2025-04-31", "abcd-01-01", "2025-01-01 "] {
            assert_eq!(Date::parse(bad), None, "{bad}");
        }
        assert!(Date::parse("2024-02-29").is_some());
    }

    #[test]
    fn naive_times_parse_to_utc_millis() {
        let cases = [
            ("2026-01-02 03:04:05.678000", Some(1_767_323_045_678)),
            ("2026-01-02 03:04:05", Some(1_767_323_045_000)),
            ("2026-01-02T03:04:05.6", Some(1_767_323_045_600)),
            ("2026-01-02 24:00:00", None),
            ("2026-01-02 03:04", None),
            ("2026-01-02 03:04:05.", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_naive_utc_ms(input), want, "{input}");
        }
        assert_eq!(format_datetime(1_767_323_045_678), "2026-01-02T03:04:05Z");
    }

    #[test]
    fn dates_are_written_as_their_display_writes_them() {
        assert_eq!(format_date(1_767_323_045_678), "2026-01-02");
        assert_eq!(format_date(FIRST_DATED_MS), "0001-01-01");
        assert_eq!(format_date(LAST_DATED_MS), "9999-12-31");
        assert_eq!(format_date(FIRST_DATED_MS - 1), "before the year 1");
        assert_eq!(format_date(LAST_DATED_MS + 1), "after the year 9999");
        // Every 37th day from the year 1 to 9999, and its last millisecond.
        let mut ms = FIRST_DATED_MS;
        while ms <= LAST_DATED_MS {
            assert_eq!(format_date(ms), Date::from_ms(ms).to_string());
            assert_eq!(format_date(ms + DAY_MS - 1), Date::from_ms(ms + DAY_MS - 1).to_string());
            ms += 37 * DAY_MS;
        }
    }
}
